package multicast

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// newDirected is newEngine with Options.Directed: the transport sends to
// each member apart.
func newDirected(self uint64, fanOutBytes int) *Engine {
	return New(Options{Self: self, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 1024,
		Directed: true, FanOutBytes: fanOutBytes, Rand: rand.New(rand.NewPCG(1, self))}, t0)
}

func nackFrom(from, inc, source, sourceInc, seq, attempt uint64) *wire.Envelope {
	env := &wire.Envelope{Header: wire.Header{Group: 7, From: from, Inc: inc, Kind: wire.KindNack}}
	env.Nack = wire.Nack{Source: source, SourceInc: sourceInc, Attempt: attempt, Ranges: []wire.SeqRange{{First: seq, Last: seq}}}
	return env
}

// TestDirectedRepairGoesToTheRequester: with Directed, the source answers
// each member's request with a repair to that member alone, at once, and
// a second member's request of the same round is answered too (its own
// repair; with multicast the first repair answered both, and the second
// request is held down).
func TestDirectedRepairGoesToTheRequester(t *testing.T) {
	addr3 := netip.MustParseAddrPort("10.0.0.3:7468")
	repairs := func(e *Engine) []uint64 {
		var to []uint64
		for _, o := range e.TakeOutput() {
			if o.Kind == wire.KindRepair {
				to = append(to, o.To)
			}
		}
		return to
	}
	for _, directed := range []bool{true, false} {
		e := newDirected(1, 0)
		e.opt.Directed = directed
		e.Multicast(nil, []byte("m"), wire.FIFO, 0)
		e.Step(t0, addr2, session(2, 5, t0))
		e.Step(t0, addr3, session(3, 6, t0))
		e.TakeOutput()
		e.Step(t0, addr2, nackFrom(2, 5, 1, 100, 1, 0))
		first := repairs(e)
		e.Step(t0.Add(time.Millisecond), addr3, nackFrom(3, 6, 1, 100, 1, 0))
		second := repairs(e)
		switch {
		case directed && (len(first) != 1 || first[0] != 2 || len(second) != 1 || second[0] != 3):
			t.Fatalf("directed: repairs to %v, then %v; want [2] then [3]", first, second)
		case !directed && (len(first) != 1 || first[0] != 0 || len(second) != 0):
			t.Fatalf("multicast: repairs to %v, then %v; want [0] (the group), then none (held down)", first, second)
		}
	}
}

// TestDirectedRequestGoesToTheSource: with Directed, a member's NACK goes
// to the live source alone, and soon: nobody else hears it, so there is
// no slot to wait for (with seven members that may ask, most messages'
// slot for this node is a later one). Without Directed it goes to the
// group.
func TestDirectedRequestGoesToTheSource(t *testing.T) {
	for _, directed := range []bool{true, false} {
		late := 0
		for gap := uint64(2); gap <= 9; gap++ {
			e := newDirected(1, 0)
			e.opt.Directed = directed
			for id := uint64(3); id <= 8; id++ {
				e.Step(t0, addr2, session(id, 1, t0))
			}
			e.Step(t0, addr2, data(2, 5, gap-1))
			e.Step(t0, addr2, data(2, 5, gap+1))
			var to []uint64
			var at time.Time
			for now := t0; now.Before(t0.Add(20*time.Millisecond)) && len(to) == 0; now = now.Add(10 * time.Microsecond) {
				e.Tick(now)
				for _, o := range e.TakeOutput() {
					if o.Kind == wire.KindNack {
						to, at = append(to, o.To), now
					}
				}
			}
			if len(to) == 0 {
				t.Fatalf("directed %v: no NACK for gap %d", directed, gap)
			}
			want := uint64(0)
			if directed {
				want = 2
			}
			if to[0] != want {
				t.Fatalf("directed %v: the NACK for gap %d went to %d, want %d (0: the group)", directed, gap, to[0], want)
			}
			// C1·min_delay is 500 µs; the first slot's timer fires
			// within an eighth of a slot (27 µs here) of it.
			if at.Sub(t0) > 550*time.Microsecond {
				late++
			}
		}
		if directed && late > 0 {
			t.Fatalf("directed: %d of 8 NACKs went later than 550µs after the gap, want none (no slot to wait for)", late)
		}
		if !directed && late == 0 {
			t.Fatal("multicast: every NACK went in the first slot; the test cannot tell slots from none")
		}
	}
}

// TestFanOutBoundsTheWindow: with Directed and FanOutBytes, the unstable
// payload times the destinations fits FanOutBytes (less the sequencer's
// eighth): three destinations take a third of the window one takes. Each
// message goes in a turn of its own, uncut: one fragment each.
func TestFanOutBoundsTheWindow(t *testing.T) {
	fill := func(peers int, directed bool) int {
		e := newDirected(1, 64000)
		e.opt.Directed = directed
		for id := range peers {
			e.Step(t0, addr2, session(uint64(id)+2, 1, t0)) // live peers that report nothing of ours
		}
		n := 0
		for ; n < 2000; n++ {
			if _, err := e.Multicast(nil, make([]byte, 1000), wire.FIFO, 0); err != nil {
				break
			}
			e.Pack()
		}
		return n
	}
	if n := fill(1, true); n != 56 {
		t.Fatalf("one destination: %d messages of 1000 bytes fit, want 56 (64000 bytes less the eighth)", n)
	}
	if n := fill(3, true); n != 18 {
		t.Fatalf("three destinations: %d fit, want 18 (64000/3 bytes less the eighth)", n)
	}
	if n := fill(3, false); n != 896 {
		t.Fatalf("multicast: %d fit, want the 896 the count allows (FanOutBytes is the unicast transport's)", n)
	}
}

// TestDirectedEarlyAck: with Directed, an early acknowledgement goes to
// the source alone and reports its stream only; the heartbeat's session
// message still goes to the group with every report.
func TestDirectedEarlyAck(t *testing.T) {
	addr3 := netip.MustParseAddrPort("10.0.0.3:7468")
	for _, directed := range []bool{true, false} {
		e := New(Options{Self: 1, Inc: 1, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 1024, WindowBytes: 400000,
			Directed: directed}, t0)
		e.Step(t0, addr2, session(2, 5, t0))
		e.Step(t0, addr3, session(3, 6, t0))
		e.Step(t0, addr3, data(3, 6, 1)) // a report of 3's stream too
		e.Tick(t0)
		e.TakeOutput()
		var acks []wire.Envelope
		var seq uint64
		for seq = 1; seq <= 100 && len(acks) == 0; seq++ { // a quarter of the share (see TestEarlyAck), shared by 3
			d := data(2, 5, seq)
			d.Data.Payload = make([]byte, 1000)
			e.Step(t0, addr2, d)
			acks = append(acks, e.TakeOutput()...)
		}
		seq--
		if len(acks) != 1 || acks[0].Kind != wire.KindSession {
			t.Fatalf("directed %v: sent %+v, want one session message", directed, acks)
		}
		a := acks[0]
		switch {
		case directed && (a.To != 2 || len(a.Session.Peers) != 1 || a.Session.Peers[0].ID != 2 || a.Session.Peers[0].Seq != seq):
			t.Fatalf("directed: the early ack went to %d reporting %+v, want to 2 reporting 2's stream at %d alone", a.To, a.Session.Peers, seq)
		case !directed && (a.To != 0 || len(a.Session.Peers) != 2):
			t.Fatalf("multicast: the early ack went to %d reporting %+v, want to the group reporting both streams", a.To, a.Session.Peers)
		}
		e.Tick(t0.Add(hb * 12 / 10)) // the heartbeat is jittered by a tenth
		var beat []wire.Envelope
		for _, o := range e.TakeOutput() {
			if o.Kind == wire.KindSession {
				beat = append(beat, o)
			}
		}
		if len(beat) != 1 || beat[0].To != 0 || len(beat[0].Session.Peers) != 2 {
			t.Fatalf("directed %v: the heartbeat sent %+v, want one session message to the group reporting both streams", directed, beat)
		}
	}
}
