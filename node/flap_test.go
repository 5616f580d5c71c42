package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/membership"
)

// TestDeafNodeCostsNoViews: node 5 starts beside a group of four and
// cannot hear it (a switch that does not forward the group's multicast
// to its port, as when IGMP snooping lost its querier), while the group
// hears it. It founds a view of its own, and the group's coordinator
// keeps trying to merge it; it never answers. Each attempt used to end
// in a view of the same four members; now each ends without a view
// (docs/design.md, "Flushes that change nothing"), and the ledger's
// check fails any view with the very members of the one before. When
// the cut heals, one view takes node 5 in, once its hold-off (doubled for
// each failed attempt, up to 64 suspect timeouts) ends.
func TestDeafNodeCostsNoViews(t *testing.T) {
	testutil.ForSeeds(t, 4, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.02, Jitter: 100 * time.Microsecond})
		l := newVSLedger()
		views := map[uint64]int{}
		unchanged := 0
		var log []string
		l.onEvent = func(id uint64, ev membership.Event) {
			switch ev.Kind {
			case membership.ViewInstalled:
				views[id]++
				log = append(log, fmt.Sprintf("%v n%d installs %v", w.Elapsed(), id, ev.View))
			case membership.FlushUnchanged:
				unchanged++
			}
		}
		w.Check("view synchrony", l.check)
		group := ids(4)
		addMembers(w, group...)
		settleViews(t, w, 3*time.Second, group)
		clear(views)
		for _, from := range group {
			w.SetLinkLoss(from, 5, 1)
		}
		addMembers(w, 5)
		if err := w.RunFor(20 * time.Second); err != nil {
			t.Fatal(err)
		}
		for _, id := range group {
			if views[id] != 0 {
				t.Errorf("seed %d: node %d installed %d views in 20 s beside a node that cannot hear the group, want 0:\n%s", seed, id, views[id], strings.Join(log, "\n"))
			}
		}
		if unchanged == 0 {
			t.Errorf("seed %d: no merge attempt ended unchanged: the test no longer exercises what it should", seed)
		}
		for _, from := range group {
			w.SetLinkLoss(from, 5, 0)
		}
		clear(views)
		settleViews(t, w, 64*testSuspect+2*time.Second, ids(5))
		// Taking it in may cost more than one view: its hold-off keeps
		// the group's coordinator from merging it, and it leads a merge
		// of its own that not every member joins (issue: a merge waits
		// for proof). Only agreement is asserted here.
		heal := 0
		for _, id := range group {
			heal = max(heal, views[id])
		}
		t.Logf("seed %d: %d merge attempts in 20 s ended without a view; after the heal, at most %d views per member to take node 5 in", seed, unchanged, heal)
	})
}
