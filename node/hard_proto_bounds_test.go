package node

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/mutex"
)

// Issue 14, bounded arithmetic: a member's message with a Lamport time or
// an election round near 2^64 (a forged one, or one a buggy or hostile
// member sends) made the clocks wrap. These tests send such messages
// through a member's own Core, as a member that holds the group's key
// would, and check that the group still works. Each attack succeeds on
// the arithmetic before the bounds (mutex and election test that with
// their unbounded machines: TestForgedClockDoesNotStarve,
// TestForgedRoundDoesNotBreakTheElection).

// sendAs has node from multicast payload on service, addressed to dest (0:
// every other member), as its own protocols would.
func sendAs(t *testing.T, w *sim.World, from uint64, service string, dest uint64, payload []byte) {
	t.Helper()
	w.Do(from, func(m sim.Machine) {
		if _, err := coreOf(m).Multicast([]byte(service), payload, wire.FIFO, dest); err != nil {
			t.Fatalf("node %d cannot send on %s: %v", from, service, err)
		}
	})
}

// TestForgedLockRequestDoesNotStarve: member 2 multicasts a lock request
// with Lamport time 2^64−2. Before the bounds, the other members' clocks
// wrapped and their next requests carried timestamp 0, which every member
// drops as malformed: the lock starved. Now the request is ignored and
// counted (lock_bad), and every member still gets the lock in turn.
func TestForgedLockRequestDoesNotStarve(t *testing.T) {
	w := sim.New(sim.Options{Seed: 3, Jitter: 50 * time.Microsecond})
	group := ids(4)
	addLockers(w, 0, group...)
	w.Check("one holder", oneHolder(0))
	settleViews(t, w, 3*time.Second, group)
	forged := wire.NewEncoder().AppendUints(nil, 1, math.MaxUint64-1) // [REQUEST, ts]
	sendAs(t, w, 2, MutexService, 0, forged)
	if err := w.RunFor(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{1, 3, 4} {
		ls, _ := core(w, id).MutexStats()
		if ls.OutOfBound != 1 {
			t.Errorf("node %d: %d lock messages out of bound, want the forged request", id, ls.OutOfBound)
		}
		if c := core(w, id).lock.m.(*mutex.RA).Clock(); c > mutex.ClockBound {
			t.Errorf("node %d: Lamport clock %d after the forged request", id, c)
		}
	}
	for round := range 2 {
		for _, id := range group {
			if err := takeLock(w, id); err != nil {
				t.Fatalf("round %d: %v\n%s", round, err, w.Trace())
			}
		}
	}
}

// takeLock has node id request the lock, waits until it holds it (at most
// a second), and releases it.
func takeLock(w *sim.World, id uint64) error {
	w.Do(id, func(m sim.Machine) { coreOf(m).LockRequest(w.Now()) })
	if err := w.RunUntil(func() bool { return core(w, id).LockState() == mutex.Held }, time.Second); err != nil {
		return fmt.Errorf("node %d never got the lock: %v", id, err)
	}
	w.Do(id, func(m sim.Machine) { coreOf(m).LockRelease(w.Now()) })
	return nil
}

// TestForgedElectionRoundIsIgnored: member 2 sends every other member an
// ELECTION of round 2^64−1 in its own name. Before the bounds, the next
// round wrapped to 0, whose messages every member drops as malformed: no
// election ended again. Now the message is ignored and counted
// (election_bad), and elections go on: after an election on request, and
// after the leader crashes, one leader, the highest ID, from one round.
func TestForgedElectionRoundIsIgnored(t *testing.T) {
	for _, alg := range []election.Algorithm{election.Ring, election.Bully} {
		t.Run(string(alg), func(t *testing.T) {
			w := sim.New(sim.Options{Seed: 5, Jitter: 50 * time.Microsecond})
			group := ids(4)
			addElectors(w, alg, group...)
			settleViews(t, w, 3*time.Second, group)
			settleLeader := func(what string, group []uint64) {
				t.Helper()
				var last error
				if err := w.RunUntil(func() bool { last = oneLeader(w, group); return last == nil }, 3*time.Second); err != nil {
					t.Fatalf("%s: no single leader: %v (%v)\n%s", what, last, err, w.Trace())
				}
			}
			settleLeader("start-up", group)
			forged := wire.NewEncoder().AppendUints(nil, 1, math.MaxUint64, 2) // [ELECTION, round, candidate]
			for _, to := range []uint64{1, 3, 4} {
				sendAs(t, w, 2, ElectionService, to, forged)
			}
			if err := w.RunFor(50 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			for _, id := range []uint64{1, 3, 4} {
				es, _ := core(w, id).ElectionStats()
				if es.OutOfBound != 1 {
					t.Errorf("node %d: %d election messages out of bound, want the forged one", id, es.OutOfBound)
				}
			}
			_, before := core(w, 1).Leader()
			w.Do(1, func(m sim.Machine) { coreOf(m).StartElection(w.Now()) })
			if err := w.RunUntil(func() bool { _, r := core(w, 1).Leader(); return r > before && oneLeader(w, group) == nil }, 3*time.Second); err != nil {
				t.Fatalf("elect on request after the forged round: %v; %v\n%s", err, oneLeader(w, group), w.Trace())
			}
			w.Crash(4)
			settleViews(t, w, 3*time.Second, ids(3))
			settleLeader("the leader crashed", ids(3))
			if _, r := core(w, 1).Leader(); r > election.RoundBound {
				t.Fatalf("round %d", r)
			}
		})
	}
}
