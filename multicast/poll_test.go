package multicast_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/multicast"
)

// TestPoller: TryReadBatch returns at once with nothing when nothing has
// arrived and with what has; Wake ends a ReadBatch that waits, with no
// datagram and no error; a Wake that found no reader waiting ends the
// next wait or poll the same way, and leaves no deadline behind.
func TestPoller(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	defer goleak.VerifyNone(t)
	a, b := open(t, opts("lo")), open(t, opts("lo"))
	pkts := packets(4, 2048)
	if n, err := b.TryReadBatch(pkts); n != 0 || err != nil {
		t.Fatalf("TryReadBatch with nothing sent: %d, %v; want 0, nil", n, err)
	}
	if err := a.WriteBatch([][]byte{datagram(1), datagram(2)}); err != nil {
		t.Fatal(err)
	}
	got := 0
	for end := time.Now().Add(watchdog); got < 2 && time.Now().Before(end); {
		n, err := b.TryReadBatch(pkts[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if got != 2 || string(pkts[1].Buf[:pkts[1].N]) != string(datagram(2)) {
		t.Fatalf("polled %d datagrams, want 2", got)
	}

	done := make(chan int)
	go func() {
		n, err := b.ReadBatch(pkts)
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	if !waitBlocked("multicast.(*Conn).ReadBatch", watchdog) {
		t.Fatal("the reader never blocked in ReadBatch")
	}
	b.Wake()
	select {
	case n := <-done:
		if n != 0 {
			t.Fatalf("a woken ReadBatch read %d datagrams", n)
		}
	case <-time.After(watchdog):
		t.Fatal("Wake did not end ReadBatch")
	}

	b.Wake() // nobody waits: the next poll ends at once, without error
	if n, err := b.TryReadBatch(pkts); n != 0 || err != nil {
		t.Fatalf("TryReadBatch after a Wake: %d, %v; want 0, nil", n, err)
	}
	if err := a.WriteBatch([][]byte{datagram(3)}); err != nil {
		t.Fatal(err)
	}
	if r := read(t, b, 1, 2048); string(r[0].data) != string(datagram(3)) {
		t.Fatalf("read %q after the Wake, want datagram 3", r[0].data)
	}
	var _ multicast.Poller = b
	var _ multicast.Poller = (*multicast.Unicast)(nil)
}
