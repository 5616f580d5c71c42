package memnet_test

import (
	"encoding/binary"
	"errors"
	"math"
	"net"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/multicast/memnet"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func packets(n, size int) []multicast.Packet {
	pkts := make([]multicast.Packet, n)
	for i := range pkts {
		pkts[i].Buf = make([]byte, size)
	}
	return pkts
}

func closeAll(t testing.TB, eps ...multicast.Transport) {
	for _, e := range eps {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestNetConcurrentExchange runs on the real clock, with writers and
// readers racing, for the race detector's sake.
func TestNetConcurrentExchange(t *testing.T) {
	const nodes, perNode = 4, 100
	n := memnet.New(netmodel.Options{Seed: 1, Jitter: 50 * time.Microsecond})
	eps := make([]multicast.Transport, nodes)
	for i := range eps {
		eps[i] = n.Endpoint(netmodel.Addr(uint64(i + 1)))
	}
	var readers, writers sync.WaitGroup
	got := make([]map[[2]uint64]bool, nodes)
	for i, e := range eps {
		got[i] = make(map[[2]uint64]bool)
		readers.Go(func() { readAll(t, e, got[i], (nodes-1)*perNode) })
		writers.Go(func() { writeCounters(t, e, uint64(i), perNode) })
	}
	writers.Wait()
	readers.Wait()
	closeAll(t, eps...)
	for i := range got {
		if len(got[i]) != (nodes-1)*perNode || got[i][[2]uint64{uint64(i), 1}] {
			t.Errorf("endpoint %d got %d distinct datagrams (own included: %v)", i, len(got[i]), got[i][[2]uint64{uint64(i), 1}])
		}
	}
}

// writeCounters writes (from, 1..count) in batches of 10.
func writeCounters(t testing.TB, e multicast.Transport, from uint64, count int) {
	var batch [][]byte
	for c := range uint64(count) {
		batch = append(batch, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, from), c+1))
		if len(batch) == 10 {
			if err := e.WriteBatch(batch); err != nil {
				t.Error(err)
			}
			batch = batch[:0] // reused: the net must have copied
		}
	}
}

func readAll(t testing.TB, e multicast.Transport, got map[[2]uint64]bool, want int) {
	pkts := packets(8, 64)
	for len(got) < want {
		n, err := e.ReadBatch(pkts)
		if err != nil {
			t.Error(err)
			return
		}
		for _, p := range pkts[:n] {
			got[[2]uint64{binary.BigEndian.Uint64(p.Buf), binary.BigEndian.Uint64(p.Buf[8:p.N])}] = true
		}
	}
}

func TestNetDelayIsVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(netmodel.Options{Delay: 5 * time.Millisecond})
		a, b := n.Endpoint(netmodel.Addr(1)), n.Endpoint(netmodel.Addr(2))
		defer closeAll(t, a, b)
		start := time.Now()
		if err := a.WriteBatch([][]byte{[]byte("hello")}); err != nil {
			t.Fatal(err)
		}
		pkts := packets(4, 64)
		k, err := b.ReadBatch(pkts)
		if err != nil || k != 1 || string(pkts[0].Buf[:pkts[0].N]) != "hello" || pkts[0].Src != a.LocalAddr() {
			t.Fatalf("ReadBatch = %d, %v, %+v", k, err, pkts[0])
		}
		if d := time.Since(start); d != 5*time.Millisecond {
			t.Fatalf("arrived after %v, want 5ms", d)
		}
		if st := n.Stats(); st.Copies != 1 || st.Delivered != 1 {
			t.Fatalf("stats %+v: want one copy, not one to the sender", st)
		}
	})
}

func TestNetLoss(t *testing.T) {
	testutil.ForSeeds(t, 3, func(t *testing.T, seed int64) {
		synctest.Test(t, func(t *testing.T) {
			const sent = 2000
			n := memnet.New(netmodel.Options{Seed: seed, Loss: 0.3})
			n.SetQueueLen(sent)
			a, b := n.Endpoint(netmodel.Addr(1)), n.Endpoint(netmodel.Addr(2))
			defer closeAll(t, a, b)
			writeCounters(t, a, 1, sent)
			time.Sleep(time.Second)
			st := n.Stats()
			if st.Delivered+st.Dropped.Loss != sent || math.Abs(float64(st.Dropped.Loss)/sent-0.3) > 0.05 {
				t.Fatalf("stats %+v: want about 30%% of %d lost", st, sent)
			}
		})
	})
}

func TestNetOverflowAndTruncation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(netmodel.Options{})
		n.SetQueueLen(4)
		a, b := n.Endpoint(netmodel.Addr(1)), n.Endpoint(netmodel.Addr(2))
		defer closeAll(t, a, b)
		big := make([]byte, 10)
		if err := a.WriteBatch([][]byte{big, big, big, big, big, big}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		if st := n.Stats(); st.Delivered != 4 || st.Dropped.Overflow != 2 {
			t.Fatalf("stats %+v: want 4 queued, 2 overflowed", st)
		}
		pkts := packets(3, 4)
		if k, err := b.ReadBatch(pkts); err != nil || k != 3 || pkts[0].N != 5 {
			t.Fatalf("ReadBatch = %d, %v, N %d: want 3 truncated (N 5)", k, err, pkts[0].N)
		}
	})
}

func TestNetCloseUnblocksRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(netmodel.Options{})
		e := n.Endpoint(netmodel.Addr(1))
		done := make(chan error)
		go func() {
			_, err := e.ReadBatch(packets(1, 64))
			done <- err
		}()
		synctest.Wait() // the reader is blocked
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("ReadBatch after Close = %v, want net.ErrClosed", err)
		}
		if err := e.WriteBatch([][]byte{{1}}); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("WriteBatch after Close = %v", err)
		}
		closeAll(t, n.Endpoint(netmodel.Addr(1))) // a restarted node reopens its address
	})
}

func TestNetPartitionAndHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(netmodel.Options{})
		addrs := []netip.AddrPort{netmodel.Addr(1), netmodel.Addr(2), netmodel.Addr(3)}
		a, b, c := n.Endpoint(addrs[0]), n.Endpoint(addrs[1]), n.Endpoint(addrs[2])
		defer closeAll(t, a, b, c)
		n.Partition([]netip.AddrPort{addrs[0]}, []netip.AddrPort{addrs[1], addrs[2]})
		write(t, a, b)
		if st := n.Stats(); st.Dropped.Partition != 3 || st.Delivered != 1 {
			t.Fatalf("partitioned: %+v, want 3 copies cut, b->c delivered", st)
		}
		n.Heal()
		n.SetSenderLoss(1)
		write(t, a)
		n.SetSenderLoss(0)
		n.SetLinkLoss(addrs[0], addrs[1], 1)
		write(t, a)
		if st := n.Stats(); st.Dropped.SenderLoss != 2 || st.Dropped.Link != 1 || st.Delivered != 2 {
			t.Fatalf("healed: %+v, want 2 sender-lost, 1 link-dropped, a->c delivered", st)
		}
	})
}

// write sends one datagram from each endpoint and lets it land.
func write(t testing.TB, eps ...multicast.Transport) {
	for _, e := range eps {
		if err := e.WriteBatch([][]byte{{1}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Millisecond)
}
