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
		c := countViews(w)
		views := c.views
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
				t.Errorf("seed %d: node %d installed %d views in 20 s beside a node that cannot hear the group, want 0:\n%s", seed, id, views[id], strings.Join(c.log, "\n"))
			}
		}
		if c.unchanged == 0 {
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
		t.Logf("seed %d: %d merge attempts in 20 s ended without a view; after the heal, at most %d views per member to take node 5 in", seed, c.unchanged, heal)
	})
}

// TestStarvedMemberCostsTwoViews: a member gets 10 ms of every 210 (a
// host starved of CPU, as by a cgroup quota of about 5 %) for 10 s. The
// others exclude it: one view. It notices its own pauses (the simulator
// tells the Core of a call a heartbeat past its deadline, as the node's
// loop does), and while starved it takes no part in merges led from
// outside its view and leads none itself; the group's attempts to take it
// back end without a view. Once it runs freely again, one view takes it
// back. Before, the group installed a view at each attempt, and the
// starved node led merges of the group that took it in only to exclude
// it again.
func TestStarvedMemberCostsTwoViews(t *testing.T) {
	testutil.ForSeeds(t, 4, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.01, Jitter: 100 * time.Microsecond})
		c := countViews(w)
		views := c.views
		group := ids(4)
		addMembers(w, group...)
		settleViews(t, w, 3*time.Second, group)
		clear(views)
		c.log = nil
		v := viewOf(w, 1)
		starved := v.Members[1].ID // not the coordinator
		var healthy []uint64
		for _, id := range group {
			if id != starved {
				healthy = append(healthy, id)
			}
		}
		for range 10 * time.Second / (210 * time.Millisecond) {
			w.Stall(starved, 200*time.Millisecond)
			if err := w.RunFor(210 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		settleViews(t, w, 10*time.Second, group)
		for _, id := range healthy {
			if views[id] > 2 {
				t.Errorf("seed %d: node %d installed %d views while node %d was starved and after, want at most 2 (its exclusion, its return):\n%s", seed, id, views[id], starved, strings.Join(c.log, "\n"))
			}
		}
		if c.starved == 0 {
			t.Errorf("seed %d: node %d never found itself starved", seed, starved)
		}
		t.Logf("seed %d: node %d starved %d times; views at the others: %v", seed, starved, c.starved, views)
	})
}

// viewCounts is what countViews saw: views installed per node (with a
// line for each), flushes ended unchanged, and starved episodes.
type viewCounts struct {
	views              map[uint64]int
	log                []string
	unchanged, starved int
}

// countViews registers a view-synchrony ledger on w that counts views.
func countViews(w *sim.World) *viewCounts {
	c := &viewCounts{views: map[uint64]int{}}
	l := newVSLedger()
	l.onEvent = func(id uint64, ev membership.Event) {
		switch {
		case ev.Kind == membership.ViewInstalled:
			c.views[id]++
			c.log = append(c.log, fmt.Sprintf("%v n%d installs %v", w.Elapsed(), id, ev.View))
		case ev.Kind == membership.FlushUnchanged:
			c.unchanged++
		case ev.Kind == membership.Health && ev.Starved:
			c.starved++
		}
	}
	w.Check("view synchrony", l.check)
	return c
}
