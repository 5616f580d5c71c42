package node

import (
	"net/netip"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// BenchmarkCoreSend is the sender's protocol cost per 1000-byte message:
// Multicast, packing and encoding (no socket).
func BenchmarkCoreSend(b *testing.B) {
	c := NewCore(CoreOptions{Group: "huddle", Membership: membership.Options{Engine: multicast.Options{Self: 1, Inc: 1, DatagramSize: 1400, Heartbeat: time.Second, SuspectTimeout: 10 * time.Second, Window: 1 << 20}}}, sim.Epoch)
	// Alone, it founds its view once the join timeout has passed.
	now := sim.Epoch
	for ; !c.Sending(); now = now.Add(10 * time.Millisecond) {
		if now.Sub(sim.Epoch) > time.Minute {
			b.Fatal("no view of its own after a minute")
		}
		c.Tick(now)
		c.Ready()
	}
	payload := make([]byte, 1000)
	b.SetBytes(1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := c.Multicast(nil, payload, wire.FIFO, 0); err != nil {
			b.Fatal(err)
		}
		c.Ready() // the datagrams, and its own copies, as the node's loop takes them
		if i++; i%256 == 0 {
			now = now.Add(time.Millisecond)
			c.Tick(now) // alone, its messages are stable at once: the window frees
			c.Ready()
		}
	}
}

// BenchmarkCoreReceive is a receiver's protocol cost per 1000-byte
// message: decoding, sequencing, storing and delivering (no socket). The
// source and the receiver form a view in the simulator first, then the
// receiver takes the source's datagrams directly; the source's session
// message every 256 messages lets the receiver free what it delivered, as
// on a network.
func BenchmarkCoreReceive(b *testing.B) {
	w := sim.New(sim.Options{Seed: 1})
	for _, id := range []uint64{1, 2} {
		w.Add(id, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			return newSimCore(NewCore(CoreOptions{Group: "huddle", Seed: uint64(seed), Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: id, Inc: inc, DatagramSize: 1400, Heartbeat: time.Millisecond, SuspectTimeout: time.Hour, Window: 1 << 16}}}, w.Now()))
		})
	}
	if err := w.RunUntil(func() bool { return agreed(w, []uint64{1, 2}) == nil }, 5*time.Second); err != nil {
		b.Fatal(err)
	}
	if err := w.RunFor(100 * time.Millisecond); err != nil {
		b.Fatal(err)
	}
	src, c := core(w, 1), core(w, 2)
	from := netip.MustParseAddrPort("10.0.0.1:7468")
	now := w.Now()
	payload := make([]byte, 1000)
	var datagrams [][]byte
	// more makes the source's next 4096 messages into datagrams.
	back := netip.MustParseAddrPort("10.0.0.2:7468")
	more := func() {
		// The receiver's session message frees the source's window.
		now = now.Add(time.Millisecond)
		c.Tick(now)
		for _, d := range c.Ready().Data {
			src.Receive(now, back, d)
		}
		src.Ready()
		datagrams = datagrams[:0]
		for i := range 4096 {
			if _, err := src.Multicast(nil, payload, wire.FIFO, 0); err != nil {
				b.Fatalf("message %d of a batch: %v", i, err)
			}
			if i%256 == 255 {
				now = now.Add(time.Millisecond)
				src.Tick(now)
			}
			for _, d := range src.Ready().Data {
				datagrams = append(datagrams, append([]byte(nil), d...)) // the outbox's buffers are reused
			}
		}
	}
	got := 0
	b.SetBytes(1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(datagrams) {
			b.StopTimer()
			more()
			i = 0
			b.StartTimer()
		}
		c.Receive(now, from, datagrams[i])
		for _, ev := range c.Ready().Events { // as the node's loop takes them
			if ev.Kind == MembershipEvent && ev.Membership.Kind == membership.Delivered {
				got++
			}
		}
		i++
	}
	if got == 0 {
		b.Fatal("nothing delivered: the benchmark measures nothing")
	}
}
