package node

import (
	"net/netip"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/wire"
)

// BenchmarkCoreSend is the sender's protocol cost per 1000-byte message:
// Multicast, packing and encoding (no socket).
func BenchmarkCoreSend(b *testing.B) {
	c := NewCore(CoreOptions{ID: 1, Inc: 1, Group: "huddle", DatagramSize: 1400, Heartbeat: time.Second,
		SuspectTimeout: 10 * time.Second, Window: 1 << 20}, sim.Epoch)
	payload := make([]byte, 1000)
	b.SetBytes(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Multicast(nil, payload, wire.FIFO, 0); err != nil {
			b.Fatal(err)
		}
		c.TakeOutbox()
	}
}

// BenchmarkCoreReceive is a receiver's protocol cost per 1000-byte
// message: decoding, sequencing, storing and delivering (no socket).
func BenchmarkCoreReceive(b *testing.B) {
	// The source's session message every 256 messages lets the receiver
	// free what it delivered, as on a network.
	src := NewCore(CoreOptions{ID: 1, Inc: 1, Group: "huddle", DatagramSize: 1400, Heartbeat: time.Millisecond,
		SuspectTimeout: time.Hour, Window: 1 << 20}, sim.Epoch)
	const n = 1 << 16
	payload := make([]byte, 1000)
	datagrams := make([][]byte, 0, n)
	now := sim.Epoch
	for i := range n {
		src.Multicast(nil, payload, wire.FIFO, 0)
		if i%256 == 0 {
			now = now.Add(time.Millisecond)
			src.Tick(now)
		}
		for _, d := range src.TakeOutbox() {
			datagrams = append(datagrams, append([]byte(nil), d...))
		}
	}
	from := netip.MustParseAddrPort("10.0.0.1:7468")
	newReceiver := func() *Core {
		return NewCore(CoreOptions{ID: 2, Inc: 1, Group: "huddle", DatagramSize: 1400, Heartbeat: time.Hour,
			SuspectTimeout: time.Hour}, sim.Epoch)
	}
	c := newReceiver()
	b.SetBytes(1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(datagrams) {
			b.StopTimer()
			c, i = newReceiver(), 0
			b.StartTimer()
		}
		c.Receive(sim.Epoch, from, datagrams[i])
		c.TakeDeliveries()
		i++
	}
}
