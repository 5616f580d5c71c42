package membership

import (
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// The heard table on its own, for a node in view 4.1[1 2].

var heardView = View{ID: wire.ViewID{Epoch: 4, Coord: 1}, Members: []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 1}}}

func heardAt(at time.Time, inc uint64, v wire.ViewID) heard { return heard{inc: inc, view: v, at: at} }

func TestHeardTableIncarnations(t *testing.T) {
	other := wire.ViewID{Epoch: 9, Coord: 5}
	for _, tc := range []struct {
		name  string
		first heard // of node 5
		then  heard
		after time.Duration
		want  bool // the second is taken
	}{
		{"newer", heardAt(t0, 3, other), heardAt(t0, 4, other), 0, true},
		{"older while the newer is in a view", heardAt(t0, 3, other), heardAt(t0, 2, other), 0, false},
		{"older after a suspect timeout", heardAt(t0, 3, other), heardAt(t0, 2, other), testST, true},
		{"older while the newer only joins", heardAt(t0, 3, wire.ViewID{}), heardAt(t0, 2, other), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newHeardTable(testST)
			tb.hear(t0, 5, tc.first, heardView)
			now := t0.Add(tc.after)
			tc.then.at = now
			fresh, _ := tb.hear(now, 5, tc.then, heardView)
			if got := tb.get(5); fresh != tc.want || (got.inc == tc.then.inc) != tc.want {
				t.Fatalf("taken %v, holds %+v; want %v", fresh, tb.get(5), tc.want)
			}
		})
	}
}

// A member's newer incarnation is kept aside until a view holds it.
func TestHeardTableRestart(t *testing.T) {
	tb := newHeardTable(testST)
	tb.hear(t0, 2, heardAt(t0, 1, heardView.ID), heardView)
	if fresh, _ := tb.hear(t0, 2, heardAt(t0, 7, wire.ViewID{}), heardView); !fresh || tb.get(2).inc != 1 {
		t.Fatalf("a member's restart replaced it: %+v", tb.get(2))
	}
	if !tb.lately(t0.Add(testST), 2, 7) || tb.lately(t0.Add(testST+1), 2, 7) {
		t.Fatal("the restarted incarnation counts as heard for a suspect timeout")
	}
	next := View{ID: wire.ViewID{Epoch: 5, Coord: 1}, Members: []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 7}}}
	tb.afterView(heardView, next)
	if tb.get(2).inc != 7 || len(tb.restarts) != 0 {
		t.Fatalf("after the view that holds it: %+v, restarts %v", tb.get(2), tb.restarts)
	}
}

// Beyond maxStrangers nodes outside the view, the one heard first goes;
// members never do, nor does a node heard again since (its place in the
// order moved on).
func TestHeardTableEvicts(t *testing.T) {
	tb := newHeardTable(testST)
	for _, id := range []uint64{1, 2} {
		tb.hear(t0, id, heardAt(t0, 1, heardView.ID), heardView)
	}
	var evicted []uint64
	for id := range uint64(maxStrangers + 3) {
		_, ev := tb.hear(t0, 100+id, heardAt(t0, 1, wire.ViewID{}), heardView)
		evicted = append(evicted, ev...)
	}
	if !slices.Equal(evicted, []uint64{100, 101, 102}) || len(tb.nodes) != 2+maxStrangers {
		t.Fatalf("evicted %v, holds %d; want the first three strangers gone, %d held", evicted, len(tb.nodes), 2+maxStrangers)
	}
	// A member dropped by a view is a stranger now, last in the order.
	next := View{ID: wire.ViewID{Epoch: 5, Coord: 1}, Members: []wire.Member{{ID: 1, Inc: 1}}}
	tb.afterView(heardView, next)
	_, ev := tb.hear(t0, 5000, heardAt(t0, 1, wire.ViewID{}), next)
	if !slices.Equal(ev, []uint64{103, 104}) {
		t.Fatalf("evicted %v, want the two heard first", ev)
	}
}

func TestHeardTablePrune(t *testing.T) {
	tb := newHeardTable(testST)
	tb.hear(t0, 1, heardAt(t0, 1, heardView.ID), heardView)
	tb.hear(t0, 9, heardAt(t0, 1, wire.ViewID{}), heardView)
	tb.hear(t0.Add(testST), 8, heardAt(t0.Add(testST), 1, wire.ViewID{}), heardView)
	if got := tb.prune(t0.Add(2*testST+1), heardView); !slices.Equal(got, []uint64{9}) || len(tb.nodes) != 2 {
		t.Fatalf("forgot %v, holds %v; want only the stranger silent two suspect timeouts", got, tb.nodes)
	}
}
