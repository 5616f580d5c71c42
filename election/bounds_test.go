package election

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

// TestRoundBounds: a message of a round more than RoundBound above this
// node's, or at MaxRound, is ignored and counted: the node stays in its
// round and sends nothing. One just within the bound is taken.
func TestRoundBounds(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Bully} {
		m := New(Options{Self: 1, Algorithm: alg})
		m.SetView(t0, "1.1", []uint64{1, 2, 3})
		m.TakeOutput()
		var c codec
		for _, r := range []uint64{RoundBound + 1, MaxRound, math.MaxUint64} {
			m.Receive(t0, 2, c.append(nil, message{kindElection, r, 2}))
		}
		if s := m.Stats(); s.OutOfBound != 3 || m.round != 0 || len(m.TakeOutput()) != 0 {
			t.Fatalf("%s: stats %+v, round %d: want 3 out of bound, round 0, nothing sent", alg, s, m.round)
		}
		m.Receive(t0, 2, c.append(nil, message{kindElection, RoundBound, 2}))
		if m.round != RoundBound {
			t.Fatalf("%s: a round just within the bound: round %d", alg, m.round)
		}
	}
}

// TestRoundsExhausted: rounds pushed to MaxRound−1, one jump of at most
// RoundBound at a time, begin no more: Start refuses and counts, instead
// of wrapping to round 0, which every member would drop as malformed.
func TestRoundsExhausted(t *testing.T) {
	m := New(Options{Self: 1, Algorithm: Bully})
	m.SetView(t0, "1.1", []uint64{1, 2})
	var c codec
	jumps := 0
	for m.round < MaxRound-1 {
		m.Receive(t0, 2, c.append(nil, message{kindCoordinator, min(m.round+RoundBound, MaxRound-1), 2}))
		jumps++
	}
	if jumps < MaxRound/(RoundBound+1) {
		t.Fatalf("the rounds were exhausted in %d messages", jumps)
	}
	if ld, _ := m.Leader(); ld != 2 {
		t.Fatalf("leader %d, want 2", ld)
	}
	m.TakeOutput()
	if m.Start(t0) || m.round != MaxRound-1 || m.Stats().Exhausted != 1 || len(m.TakeOutput()) != 0 {
		t.Fatalf("exhausted rounds: round %d, stats %+v", m.round, m.Stats())
	}
}

// electionAfterForgedRound runs the attack of issue 14 on a group of
// three over the test network: once a leader is elected, the other two
// get an ELECTION of round 2^64−1 in the name of member 2 (forged, or sent
// by a buggy or hostile member). Then node 1 starts an election, and the
// function reports whether the three agree on the highest as leader, from
// one round, with no round running.
func electionAfterForgedRound(t *testing.T, alg Algorithm, unbounded bool) error {
	l := newLAN(t, Options{Algorithm: alg, AnswerTimeout: 2 * time.Millisecond, CoordinatorTimeout: 5 * time.Millisecond}, time.Millisecond)
	group := []uint64{1, 2, 3}
	l.add(group...)
	for _, id := range group {
		l.Nodes[id].M.unbounded = unbounded
	}
	l.Install(group...)
	l.Drain()
	var c codec
	forged := c.append(nil, message{kindElection, math.MaxUint64, 2})
	for _, id := range []uint64{1, 3} {
		l.Nodes[id].M.Receive(l.Now, 2, forged)
		l.Collect(id)
	}
	l.Run(100 * time.Millisecond)
	l.start(1)
	l.Run(100 * time.Millisecond)
	var round uint64
	for i, id := range group {
		m := l.Nodes[id].M
		ld, r := m.Leader()
		if ld != slices.Max(group) || m.busy() || i > 0 && r != round {
			return fmt.Errorf("node %d: leader %d of round %d (node 1: round %d), state %d", id, ld, r, round, m.state)
		}
		round = r
	}
	return nil
}

// TestForgedRoundDoesNotBreakTheElection: with the bounds, the forged
// round is ignored (counted) and the group elects as before; with the
// arithmetic before them (unbounded), the next round wraps to 0 and the
// election never ends: the attack this test guards against still works
// there.
func TestForgedRoundDoesNotBreakTheElection(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Bully} {
		if err := electionAfterForgedRound(t, alg, false); err != nil {
			t.Errorf("%s, with the bounds: %v", alg, err)
		}
		if err := electionAfterForgedRound(t, alg, true); err == nil {
			t.Errorf("%s, without the bounds, the group still elects: the test no longer shows the attack", alg)
		} else {
			t.Logf("%s, without the bounds: %v", alg, err)
		}
	}
}
