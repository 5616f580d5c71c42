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
// hears it. It founds a view of its own, which the group's coordinator
// would merge. Once, each attempt installed a view of the same four
// members; then each ended without a view (docs/design.md, "Flushes that
// change nothing") but still held the group's sends for a flush timeout.
// Now the coordinator asks node 5 for proof first ("A merge waits for
// proof"), gets no answer, and starts no flush at all. When the cut
// heals, node 5 answers and one view takes it in. The ledger's check
// fails any view with the very members of the one before.
func TestDeafNodeCostsNoViews(t *testing.T) {
	testutil.ForSeeds(t, 4, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.02, Jitter: 100 * time.Microsecond})
		l := newVSLedger()
		views := map[uint64]int{}
		flushes := 0
		var log []string
		l.onEvent = func(id uint64, ev membership.Event) {
			switch ev.Kind {
			case membership.ViewInstalled:
				views[id]++
				log = append(log, fmt.Sprintf("%v n%d installs %v", w.Elapsed(), id, ev.View))
			case membership.FlushStarted:
				if id != 5 {
					flushes++
					log = append(log, fmt.Sprintf("%v n%d starts a flush proposing %v", w.Elapsed(), id, ev.Proposed))
				}
			}
		}
		w.Check("view synchrony", l.check)
		group := ids(4)
		addMembers(w, group...)
		settleViews(t, w, 3*time.Second, group)
		clear(views)
		flushes, log = 0, nil
		coord := viewOf(w, 1).Members[0].ID
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
		if flushes != 0 {
			t.Errorf("seed %d: the group started %d flushes for a node that cannot hear it, want 0:\n%s", seed, flushes, strings.Join(log, "\n"))
		}
		if asked := core(w, coord).membership.Stats().ProofsAsked; asked == 0 {
			t.Errorf("seed %d: the coordinator (node %d) never asked node 5 for proof: the test no longer exercises what it should", seed, coord)
		}
		for _, from := range group {
			w.SetLinkLoss(from, 5, 0)
		}
		clear(views)
		settleViews(t, w, 3*time.Second, ids(5))
		for _, id := range group {
			if views[id] != 1 {
				t.Errorf("seed %d: node %d installed %d views to take node 5 in once the cut healed, want 1:\n%s", seed, id, views[id], strings.Join(log, "\n"))
			}
		}
	})
}

// TestStarvedMemberCostsTwoViews: a member gets 10 ms of every 210 (a
// host starved of CPU, as by a cgroup quota of about 5 %), then 10 ms of
// every 60, a second each, for 10 s. The others exclude it: one view. It notices its own pauses (the simulator
// tells the Core of a call a heartbeat past its deadline, as the node's
// loop does) and finds itself starved; it says so when the coordinator
// asks it for proof, so it is not merged back while starved, and it leads
// no merge by waiting. Once it runs freely again, one view takes it back.
// Before, the group merged it back and excluded it again, over and over.
func TestStarvedMemberCostsTwoViews(t *testing.T) {
	testutil.ForSeeds(t, 4, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.01, Jitter: 100 * time.Microsecond})
		views, starvedAt := map[uint64]int{}, 0
		var log []string
		l := newVSLedger()
		l.onEvent = func(id uint64, ev membership.Event) {
			switch {
			case ev.Kind == membership.ViewInstalled:
				views[id]++
				log = append(log, fmt.Sprintf("%v n%d installs %v", w.Elapsed(), id, ev.View))
			case ev.Kind == membership.Health && ev.Starved:
				starvedAt++
			}
		}
		w.Check("view synchrony", l.check)
		group := ids(4)
		addMembers(w, group...)
		settleViews(t, w, 3*time.Second, group)
		clear(views)
		log = nil
		starved := viewOf(w, 1).Members[1].ID // not the coordinator
		var healthy []uint64
		for _, id := range group {
			if id != starved {
				healthy = append(healthy, id)
			}
		}
		// Seconds when it gets 10 ms of every 210, and seconds of 10 ms
		// of every 60: then it answers in time, but is still starved.
		for i := range 10 * time.Second / (210 * time.Millisecond) {
			stall := 200 * time.Millisecond
			if i/5%2 == 1 {
				stall = 50 * time.Millisecond
			}
			for at := time.Duration(0); at < 210*time.Millisecond; at += stall + 10*time.Millisecond {
				w.Stall(starved, stall)
				if err := w.RunFor(stall + 10*time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
		}
		settleViews(t, w, 10*time.Second, group)
		for _, id := range healthy {
			if views[id] > 2 {
				t.Errorf("seed %d: node %d installed %d views while node %d was starved and after, want at most 2 (its exclusion, its return):\n%s", seed, id, views[id], starved, strings.Join(log, "\n"))
			}
		}
		if starvedAt == 0 {
			t.Errorf("seed %d: node %d never found itself starved", seed, starved)
		}
		t.Logf("seed %d: node %d found itself starved %d times; views at the others: %v", seed, starved, starvedAt, views)
	})
}

// TestRestartLoopCostsBoundedViews: a member crashes and restarts every
// 2 s for a minute (a service in a crash loop under a supervisor). Each
// new incarnation is admitted at a bounded rate (docs/design.md, "A merge
// waits for proof"): after n restarts in a row, 2^n suspect timeouts
// after the last one entered, up to 64. Each admission costs at most two
// views (it enters; it dies and is excluded), so the healthy members
// install at most 2·(7 + 60 s / 64 suspect timeouts) views in the
// minute: 7 admissions before the wait reaches its longest, then one per
// longest wait. Before, every restart cost two views: 60 a minute.
func TestRestartLoopCostsBoundedViews(t *testing.T) {
	testutil.ForSeeds(t, 4, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.01, Jitter: 100 * time.Microsecond})
		views := map[uint64]int{}
		var log []string
		l := newVSLedger()
		l.onEvent = func(id uint64, ev membership.Event) {
			if ev.Kind == membership.ViewInstalled {
				views[id]++
				log = append(log, fmt.Sprintf("%v n%d installs %v", w.Elapsed(), id, ev.View))
			}
		}
		w.Check("view synchrony", l.check)
		group := ids(4)
		addMembers(w, group...)
		settleViews(t, w, 3*time.Second, group)
		clear(views)
		log = nil
		loop := viewOf(w, 1).Members[3].ID // the youngest: never the coordinator
		for range 30 {
			w.Crash(loop)
			if err := w.RunFor(time.Second); err != nil {
				t.Fatal(err)
			}
			w.Restart(loop)
			if err := w.RunFor(time.Second); err != nil {
				t.Fatal(err)
			}
		}
		bound := 2 * (7 + int(time.Minute/(64*testSuspect)))
		for _, id := range group {
			if id != loop && views[id] > bound {
				t.Errorf("seed %d: node %d installed %d views in a minute beside a node restarting every 2 s, want at most %d:\n%s", seed, id, views[id], bound, strings.Join(log, "\n"))
			}
		}
		settleViews(t, w, 64*testSuspect+3*time.Second, group) // it gets in once it stops restarting
		t.Logf("seed %d: views at each member in the minute: %v (bound %d)", seed, views, bound)
	})
}

// TestBriefStallsCostNoSuspicion: a member that runs in short bursts, as
// one held to a few per cent of a CPU that keeps up with its traffic, or
// one among busy loops competing for the cores (stalled 30 ms of every
// 60, for 10 s), is never suspected and never suspects: no view changes.
// Its own pauses hold back its suspicions; the others hear it at least
// every 60 ms, far within the suspect timeout.
func TestBriefStallsCostNoSuspicion(t *testing.T) {
	testutil.ForSeeds(t, 4, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.01, Jitter: 100 * time.Microsecond})
		views, suspicions := 0, 0
		var log []string
		l := newVSLedger()
		l.onEvent = func(id uint64, ev membership.Event) {
			switch ev.Kind {
			case membership.ViewInstalled:
				views++
			case membership.Suspected:
				suspicions++
				log = append(log, fmt.Sprintf("%v n%d suspects n%d, silent %v", w.Elapsed(), id, ev.Member, ev.Silent))
			}
		}
		w.Check("view synchrony", l.check)
		group := ids(4)
		addMembers(w, group...)
		settleViews(t, w, 3*time.Second, group)
		views, suspicions, log = 0, 0, nil
		slow := viewOf(w, 1).Members[0].ID // the coordinator
		for range 10 * time.Second / (60 * time.Millisecond) {
			w.Stall(slow, 30*time.Millisecond)
			if err := w.RunFor(60 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if views != 0 || suspicions != 0 {
			t.Errorf("seed %d: %d views and %d suspicions while node %d ran in bursts, want none:\n%s", seed, views, suspicions, slow, strings.Join(log, "\n"))
		}
	})
}
