package mutex

import (
	"math"
	"testing"
)

// TestClockBounds: a request more than ClockBound above this node's clock,
// or at MaxClock, and a reply to a timestamp this node's clock never
// reached, are ignored and counted; the clock stays put and nothing is
// sent. A request just within the bound is taken.
func TestClockBounds(t *testing.T) {
	m := NewRA(Options{Self: 1})
	m.SetView(t0, "1.1", []uint64{1, 2, 3}, nil)
	for _, p := range [][]byte{
		payload(kindRequest, ClockBound+1),
		payload(kindRequest, math.MaxUint64-1),
		payload(kindRequest, MaxClock),
		payload(kindReply, 1),
		payload(kindReply, math.MaxUint64),
	} {
		m.Receive(t0, 2, p)
	}
	if s := m.Stats(); s.OutOfBound != 5 || m.Clock() != 0 || len(m.TakeOutput()) != 0 {
		t.Fatalf("stats %+v, clock %d: want 5 out of bound, the clock at 0, nothing sent", s, m.Clock())
	}
	m.Receive(t0, 2, payload(kindRequest, ClockBound))
	if out := m.TakeOutput(); m.Clock() != ClockBound+1 || len(out) != 1 {
		t.Fatalf("a request just within the bound: clock %d, sent %v", m.Clock(), out)
	}
	m.Receive(t0, 3, payload(kindRequest, 2*ClockBound+1)) // within the bound of the clock now
	if m.Clock() != 2*ClockBound+2 || m.Stats().OutOfBound != 5 {
		t.Fatalf("clock %d, stats %+v", m.Clock(), m.Stats())
	}
}

// TestClockExhausted: a clock that reached MaxClock, one jump of at most
// ClockBound at a time, refuses requests instead of wrapping, and still
// answers the requests it may answer.
func TestClockExhausted(t *testing.T) {
	m := NewRA(Options{Self: 1})
	m.SetView(t0, "1.1", []uint64{1, 2}, nil)
	jumps := 0
	for m.Clock() < MaxClock-1 {
		m.Receive(t0, 2, payload(kindRequest, min(m.Clock()+ClockBound, MaxClock-1)))
		jumps++
	}
	if jumps < MaxClock/(ClockBound+1) {
		t.Fatalf("the clock was exhausted in %d messages", jumps)
	}
	m.TakeOutput()
	if m.Request(t0) || m.State() != Released || m.Stats().Exhausted != 1 || m.Clock() > MaxClock {
		t.Fatalf("an exhausted clock requests: state %v, clock %d, stats %+v", m.State(), m.Clock(), m.Stats())
	}
	m.Receive(t0, 2, payload(kindRequest, MaxClock-1))
	if out := m.TakeOutput(); len(out) != 1 || m.Clock() != MaxClock {
		t.Fatalf("sent %v, clock %d: want a reply, the clock at MaxClock", out, m.Clock())
	}
	t.Logf("exhausted after %d requests, each at most ClockBound ahead", jumps)
}

// starvedByForgedClock runs the attack of issue 14 on a group of three
// over the test network: a member's request with timestamp 2^64−2 (forged,
// or sent by a buggy or hostile member) reaches the other two. Then each
// node asks for the lock in turn, and the function returns those that
// never got it.
func starvedByForgedClock(t *testing.T, unbounded bool) []uint64 {
	l := group(t, Options{}, 3)
	for _, id := range l.IDs() {
		l.Nodes[id].M.unbounded = unbounded
	}
	for _, id := range []uint64{1, 3} {
		l.Nodes[id].M.Receive(l.Now, 2, payload(kindRequest, math.MaxUint64-1))
		l.Collect(id)
	}
	l.drain()
	var starved []uint64
	for _, id := range l.IDs() {
		l.request(id)
		l.drain()
		if l.Nodes[id].M.State() != Held {
			starved = append(starved, id)
		}
		l.release(id)
		l.drain()
	}
	return starved
}

// TestForgedClockDoesNotStarve: with the bounds, the forged timestamp is
// ignored (counted) and every member gets the lock; with the arithmetic
// before them (unbounded), the clocks wrap and the lock starves: the
// attack this test guards against still works there.
func TestForgedClockDoesNotStarve(t *testing.T) {
	if starved := starvedByForgedClock(t, false); len(starved) != 0 {
		t.Fatalf("with the bounds, nodes %v never got the lock", starved)
	}
	if starved := starvedByForgedClock(t, true); len(starved) == 0 {
		t.Fatal("without the bounds every node got the lock: the test no longer shows the attack")
	} else {
		t.Logf("without the bounds, nodes %v starve", starved)
	}
}
