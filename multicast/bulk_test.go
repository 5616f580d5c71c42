package multicast

import (
	"net/netip"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

const bulkSize = 65000

// bulkEngine is node id of a group of nodes 1 and 2 that packs bulk
// datagrams, having heard the other's session message.
func bulkEngine(id uint64, bulk int) *Engine {
	e := New(Options{Self: id, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, BulkSize: bulk}, t0)
	e.SetMembers([]wire.Member{{ID: 1, Inc: 100}, {ID: 2, Inc: 100}})
	other := addr2
	if id == 2 {
		other = netip.MustParseAddrPort("10.0.0.1:7468")
	}
	e.Step(t0, other, session(3-id, 100, t0))
	return e
}

// lens is the datagrams' lengths.
func lens(dgs [][]byte) []int {
	ls := make([]int, len(dgs))
	for i, d := range dgs {
		ls[i] = len(d)
	}
	return ls
}

// maxLen is the length of the longest datagram.
func maxLen(dgs [][]byte) (n int) {
	for _, d := range dgs {
		n = max(n, len(d))
	}
	return n
}

// TestBulkPacksWhileLossless: with BulkSize, a turn's messages go in
// datagrams of up to BulkSize while no member has asked for a repair, and
// of datagram_size for cutQuiet heartbeats after a member has; every
// message (fragment) stays small enough for a datagram of datagram_size,
// so that it can be repaired in one. Without BulkSize nothing changes.
func TestBulkPacksWhileLossless(t *testing.T) {
	e := bulkEngine(1, bulkSize)
	dgs, out := turn(t, e, wire.FIFO, payloads(100, 1000)...)
	if len(dgs) != 2 || maxLen(dgs) > bulkSize || len(dgs[0]) < bulkSize-1100 {
		t.Fatalf("100 messages of 1000 bytes in bulk: %d datagrams, the longest %d bytes; want 2, the first nearly %d", len(dgs), maxLen(dgs), bulkSize)
	}
	for _, env := range out {
		for _, d := range env.Batch {
			if len(d.Payload) > e.fragmentSize(0) {
				t.Fatalf("a fragment of %d bytes in a bulk datagram, more than a datagram of %d holds as a repair", len(d.Payload), DefaultDatagramSize)
			}
		}
	}
	e.Step(t0, addr2, nackEnv(2, 100, 1, 100, 0, wire.SeqRange{First: 1, Last: 1}))
	if dgs, _ := turn(t, e, wire.FIFO, payloads(100, 1000)...); maxLen(dgs) > DefaultDatagramSize || len(dgs) < 70 {
		t.Fatalf("after a member's request: %d datagrams, the longest %d bytes; want datagram_size (%d) at most", len(dgs), maxLen(dgs), DefaultDatagramSize)
	}
	now := t0.Add(cutQuiet * hb)
	e.Step(now, addr2, session(2, 100, now))
	if dgs, _ := turn(t, e, wire.FIFO, payloads(100, 1000)...); len(dgs) != 2 {
		t.Fatalf("after the quiet: %d datagrams, want 2 in bulk again", len(dgs))
	}
	// Messages smaller than an eighth of a datagram are not packed in bulk:
	// there, a datagram of datagram_size holds enough of them, and bulk
	// cost 100-byte messages 8 % of their throughput. One ends the bulk
	// datagram it follows.
	if dgs, _ := turn(t, e, wire.FIFO, payloads(500, 100)...); maxLen(dgs) > DefaultDatagramSize || len(dgs) < 30 {
		t.Fatalf("500 messages of 100 bytes: %d datagrams, the longest %d bytes; want datagram_size (%d) at most", len(dgs), maxLen(dgs), DefaultDatagramSize)
	}
	mixed := append(payloads(30, 1000), payloads(20, 100)...)
	if dgs, out := turn(t, e, wire.FIFO, append(mixed, payloads(30, 1000)...)...); len(dgs) < 3 || len(dgs[0]) < 29*1000 || len(out[1].Batch) == 0 || len(dgs[1]) > DefaultDatagramSize {
		t.Fatalf("30 large, 20 small, 30 large messages: %d datagrams of %v bytes; want the large ones first in bulk, the small ones in datagrams of datagram_size", len(dgs), lens(dgs))
	}
	if dgs, _ := turn(t, bulkEngine(1, 0), wire.FIFO, payloads(100, 1000)...); maxLen(dgs) != DefaultDatagramSize {
		t.Fatalf("without BulkSize: the longest datagram is %d bytes, want %d", maxLen(dgs), DefaultDatagramSize)
	}
}

// TestBulkDatagramLostAndRepaired: a bulk datagram of 60 messages is lost
// to the only receiver (as it is when one of its IP fragments is); the
// receiver asks, the source repairs every message in datagrams of
// datagram_size, and the receiver delivers all of them, in order.
func TestBulkDatagramLostAndRepaired(t *testing.T) {
	s, r := bulkEngine(1, bulkSize), bulkEngine(2, bulkSize)
	addr1 := netip.MustParseAddrPort("10.0.0.1:7468")
	ps := payloads(120, 1000)
	_, out := turn(t, s, wire.FIFO, ps...)
	if len(out) != 2 {
		t.Fatalf("120 messages went in %d datagrams, want 2", len(out))
	}
	r.Step(t0, addr1, &out[1]) // the first is lost
	longest := 0
	enc := wire.NewEncoder()
	repairUntilDelivered(t, s, r, ps, func(env wire.Envelope) {
		if env.Kind == wire.KindRepair {
			b, err := enc.Append(nil, &env)
			if err != nil {
				t.Fatal(err)
			}
			longest = max(longest, len(b))
		}
	})
	if st := s.Stats(); st.RepairsSent < uint64(len(out[0].Batch)) || longest > DefaultDatagramSize {
		t.Fatalf("the source sent %d repairs, the longest %d bytes; want the %d messages of the lost datagram, each within %d", st.RepairsSent, longest, len(out[0].Batch), DefaultDatagramSize)
	}
}

// TestLossyPeriodBacksOff: a request that starts a lossy period within one
// quiet period after the last one ended doubles the period (bulk
// datagrams that keep being lost, as where IP fragments do not pass, are
// tried ever more rarely), up to maxQuiet; one after a longer calm sets it
// back to cutQuiet; requests within a period only extend it.
func TestLossyPeriodBacksOff(t *testing.T) {
	e := bulkEngine(1, bulkSize)
	now := t0
	ask := func(after time.Duration) {
		now = now.Add(after)
		e.Step(now, addr2, nackEnv(2, 100, 1, 100, 0, wire.SeqRange{First: 1, Last: 1}))
	}
	ask(0)
	for _, want := range []int{cutQuiet, 2 * cutQuiet, 4 * cutQuiet, 8 * cutQuiet} {
		if got := e.quietFor(); got != time.Duration(want)*hb {
			t.Fatalf("quiet period %v, want %d heartbeats", got, want)
		}
		ask(e.quietFor() / 2) // within the period: it only goes on
		if e.quietFor() != time.Duration(want)*hb || !e.lossy() {
			t.Fatalf("a request within the period changed it to %v (lossy %v)", e.quietFor(), e.lossy())
		}
		ask(e.quietFor() + hb) // soon after it ended: doubles
	}
	for range 20 {
		ask(e.quietFor() + hb)
	}
	if e.quietFor() != maxQuiet*hb {
		t.Fatalf("after many short calms the period is %v, want the most, %d heartbeats", e.quietFor(), maxQuiet)
	}
	ask(2*e.quietFor() + hb)
	if e.quietFor() != cutQuiet*hb {
		t.Fatalf("after a long calm the period is %v, want %d heartbeats again", e.quietFor(), cutQuiet)
	}
}
