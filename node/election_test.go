package node

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// addElectors adds nodes running the given election algorithm.
func addElectors(w *sim.World, alg election.Algorithm, ids ...uint64) {
	addElectorsWith(w, func(o *CoreOptions) { o.Election.Algorithm = alg }, ids...)
}

// addElectorsWith adds nodes whose election options set sets.
func addElectorsWith(w *sim.World, set func(*CoreOptions), ids ...uint64) {
	for _, id := range ids {
		w.Add(id, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			o := CoreOptions{Group: "huddle", Seed: uint64(seed), Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: id, Inc: inc, DatagramSize: 1400, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect, Window: 256}}}
			set(&o)
			return newSimCore(NewCore(o, w.Now()))
		})
	}
}

// oneLeader reports whether every live node of group knows the same
// leader, elected in the same round, and it is the highest ID of group.
func oneLeader(w *sim.World, group []uint64) error {
	want := slices.Max(group)
	var round uint64
	for i, id := range group {
		l, r := core(w, id).Leader()
		if l != want {
			return fmt.Errorf("node %d knows leader %d (round %d), want %d", id, l, r, want)
		}
		if i == 0 {
			round = r
		} else if r != round {
			return fmt.Errorf("node %d knows the leader from round %d, node %d from round %d", id, r, group[0], round)
		}
	}
	return nil
}

// TestElectionsInTheGroup runs both algorithms in the real node core over
// the simulated network, under loss, through start-up, crashes of the
// leader (and of the next in line during the election that follows),
// joins and a partition with its merge. After each settles: exactly one
// leader, the highest ID of the view, known to every member, and the
// view-synchrony ledger holds throughout.
func TestElectionsInTheGroup(t *testing.T) {
	for _, v := range []struct {
		name string
		set  func(*CoreOptions)
	}{
		{"ring", func(o *CoreOptions) { o.Election.Algorithm = election.Ring }},
		{"bully", func(o *CoreOptions) { o.Election.Algorithm = election.Bully }},
		// The ring in join order, each hop held 2 ms: the views' order
		// (oldest first) changes with every crash, rejoin and merge.
		{"ring/join", func(o *CoreOptions) {
			o.Election = election.Options{Algorithm: election.Ring, Order: election.JoinOrder, HopDelay: 2 * time.Millisecond}
		}},
		{"bully/hop", func(o *CoreOptions) {
			o.Election = election.Options{Algorithm: election.Bully, HopDelay: 2 * time.Millisecond}
		}},
	} {
		t.Run(v.name, func(t *testing.T) {
			testutil.ForSeeds(t, 100, func(t *testing.T, seed int64) {
				w := sim.New(sim.Options{Seed: seed, Loss: 0.05, Jitter: 100 * time.Microsecond})
				l := newVSLedger()
				w.Check("view synchrony", l.check)
				addElectorsWith(w, v.set, ids(5)...)
				group := ids(5)
				settle := func(what string) {
					t.Helper()
					settleViews(t, w, 3*time.Second, group)
					var last error
					if err := w.RunUntil(func() bool { last = oneLeader(w, group); return last == nil }, 3*time.Second); err != nil {
						t.Fatalf("%s: no single leader: %v (%v)\n%s", what, last, err, w.Trace())
					}
				}
				settle("start-up")
				// The leader crashes; a moment later, so does the next in line.
				w.Crash(5)
				group = ids(4)
				if err := w.RunFor(testSuspect + 5*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				w.Crash(4)
				group = ids(3)
				settle("two crashes")
				// Both come back: a higher node joins and takes over.
				w.Restart(4)
				w.Restart(5)
				group = ids(5)
				settle("rejoin")
				// A partition elects a leader on each side; the merge, one.
				w.Partition([]uint64{1, 2}, []uint64{3, 4, 5})
				group = []uint64{1, 2}
				settle("minority side")
				w.Heal()
				group = ids(5)
				settle("merge")
				// An election on request changes nothing but the round.
				_, before := core(w, 2).Leader()
				w.Do(2, func(m sim.Machine) { coreOf(m).StartElection(w.Now()) })
				if err := w.RunUntil(func() bool { _, r := core(w, 2).Leader(); return r > before && oneLeader(w, group) == nil }, 3*time.Second); err != nil {
					t.Fatalf("elect on request: %v; %v\n%s", err, oneLeader(w, group), w.Trace())
				}
			})
		})
	}
}
