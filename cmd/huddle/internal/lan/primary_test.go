package lan_test

import (
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
)

// localSuspect is the local profile's suspect timeout, which the LAN
// tests' nodes run with.
const localSuspect = 150 * time.Millisecond

// TestPrimaryPartition: five real nodes with quorum majority, sending in
// total order, are cut 3|2. The minority's next view is not primary, and
// it knows within the suspect timeout and a flush; the majority's is.
// Healed, the group is one primary view again; the logs pass every check.
func TestPrimaryPartition(t *testing.T) {
	g := startGroup(t, lan.Options{Hosts: 5}, "--quorum", "majority", "--quorum-expected", "5",
		"--send-rate", "100", "--send-size", "200", "--send-order", "total", "--trace-deliveries")
	all := []int{1, 2, 3, 4, 5}
	wantPrimary := func(what string, views map[int]logcheck.View, want bool) {
		t.Helper()
		for h, v := range views {
			if v.Primary != want {
				t.Errorf("%s: node %d's view %s is primary %v, want %v", what, h, v.ID, v.Primary, want)
			}
		}
	}
	wantPrimary("group formed", g.waitViews("group formed", all, ids(all...)), true)
	time.Sleep(500 * time.Millisecond)

	cut := time.Now()
	if err := g.l.Cut([]int{1, 2, 3}, []int{4, 5}); err != nil {
		t.Fatal(err)
	}
	minority := g.waitViews("minority {4,5}", []int{4, 5}, ids(4, 5))
	majority := g.waitViews("majority {1,2,3}", []int{1, 2, 3}, ids(1, 2, 3))
	wantPrimary("minority", minority, false)
	wantPrimary("majority", majority, true)
	knew := g.installedAfter("cut 3|2, the minority learns it is not primary", cut, minority)
	g.installedAfter("cut 3|2, the majority's primary view", cut, majority)
	if limit := localSuspect + 300*time.Millisecond; knew > limit {
		t.Errorf("the minority knew it was not primary %v after the cut, over the suspect timeout %v and a flush (%v in all)", knew, localSuspect, limit)
	}
	time.Sleep(500 * time.Millisecond) // the majority orders on; the minority's total sends fail

	heal := time.Now()
	if err := g.l.Heal(); err != nil {
		t.Fatal(err)
	}
	views := g.waitViews("healed", all, ids(all...))
	wantPrimary("healed", views, true)
	g.installedAfter("heal", heal, views)
	time.Sleep(500 * time.Millisecond)

	g.stop(all)
	r := g.check(true)
	g.wantDeliveries(r)
}

// TestReplicatedStoreOnTheLAN: four real nodes keep huddle run's
// replicated key-value store (quorum majority over 4) and put to it at
// 5 % loss, while node 2 is killed and restarted (it takes the store
// anew) and the LAN is cut 2|2 and healed (the side without node 1, the
// tie breaker, is not primary, and takes the primary's store at the
// merge). The logs pass every check, the state check among them: every
// store installed is the one its provider took at the view's cut, and the
// members of every view that are not behind held one store at its cut.
func TestReplicatedStoreOnTheLAN(t *testing.T) {
	g := startGroup(t, lan.Options{Hosts: 4, Loss: 0.05}, "--kv-keys", "200", "--kv-rate", "50",
		"--quorum", "majority", "--quorum-expected", "4", "--trace-deliveries")
	all := []int{1, 2, 3, 4}
	g.waitViews("group formed", all, ids(all...))
	time.Sleep(time.Second)
	g.kill(2)
	g.waitViews("node 2 killed", []int{1, 3, 4}, ids(1, 3, 4))
	g.startNode(2)
	g.waitViews("node 2 restarted", all, ids(all...))
	time.Sleep(time.Second)
	if err := g.l.Cut([]int{1, 2}, []int{3, 4}); err != nil {
		t.Fatal(err)
	}
	g.waitViews("side {1,2}", []int{1, 2}, ids(1, 2))
	g.waitViews("side {3,4}", []int{3, 4}, ids(3, 4))
	time.Sleep(time.Second)
	if err := g.l.Heal(); err != nil {
		t.Fatal(err)
	}
	g.waitViews("healed", all, ids(all...))
	time.Sleep(time.Second)
	g.stop(all)
	r := g.check(true)
	res := r.CheckState()
	var transfers, installed int
	for _, l := range r.Lives {
		for _, e := range l.States {
			if e.Event == "state.installed" {
				installed++
			}
		}
	}
	for _, c := range res.Compared {
		if c.What == "state transfers" {
			transfers = c.N
		}
	}
	// The first view's joiners, node 2's restart and the side {3,4} at
	// the merge each take the store.
	if installed < 3 || transfers < 3 {
		t.Errorf("%d stores installed, %d compared with their providers': want the restart and the merge among them", installed, transfers)
	}
}
