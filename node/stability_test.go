package node

import (
	"testing"
	"time"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/sim"
)

// TestRestartedSourceStaysRepairable: a member that has not heard a
// restarted member's new incarnation yet keeps the others from freeing its
// messages, so that when the restarted member is cut off, a survivor that
// missed one of them still gets it from another, and the flush that
// excludes it ends. Seed 261 of TestElectionsInTheGroup's bully/hop
// found it: node 2 counted node 4's third message stable while node 1,
// which still reported node 4's older incarnation, lacked it; after the
// partition node 1's flush waited for it for ever.
func TestRestartedSourceStaysRepairable(t *testing.T) {
	w := sim.New(sim.Options{Seed: 261, Loss: 0.05, Jitter: 100 * time.Microsecond})
	l := newVSLedger()
	w.Check("view synchrony", l.check)
	addElectorsWith(w, func(o *CoreOptions) {
		o.Election = election.Options{Algorithm: election.Bully, HopDelay: 2 * time.Millisecond}
	}, ids(5)...)
	group := ids(5)
	settle := func() {
		t.Helper()
		settleViews(t, w, 3*time.Second, group)
		if err := w.RunUntil(func() bool { return oneLeader(w, group) == nil }, 3*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	settle()
	w.Crash(5)
	if err := w.RunFor(testSuspect + 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	w.Crash(4)
	group = ids(3)
	settle()
	w.Restart(4)
	w.Restart(5)
	group = ids(5)
	settle()
	w.Partition([]uint64{1, 2}, []uint64{3, 4, 5})
	group = []uint64{1, 2}
	settle()
}
