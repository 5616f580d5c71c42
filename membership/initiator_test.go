package membership

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// The initiator on its own: node 1 proposing [1 2 3 4], where 1 and 2
// were in view 4.1, 3 in view 3.3, and 4 joins.

var (
	viewA = wire.ViewID{Epoch: 4, Coord: 1}
	viewB = wire.ViewID{Epoch: 3, Coord: 3}
)

func testInitiator() *initiator {
	r := newInitiator(flushID{Epoch: 5, Attempt: 1, Initiator: 1},
		[]wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 1}, {ID: 3, Inc: 1}, {ID: 4, Inc: 1}}, []uint64{5, 2})
	r.begin(t0)
	return r
}

func report(prior wire.ViewID, sent uint64, has ...wire.Cut) *wire.FlushOK {
	return &wire.FlushOK{Epoch: 5, Attempt: 1, Initiator: 1, Phase: wire.FlushState, Prior: prior, PriorInc: 1, Settings: 7, Sent: sent, Has: has}
}

// reports are the four participants' reports: 1 and 2 hold view A's
// streams differently, 3 reports view B, 4 no view.
func reports() map[uint64]*wire.FlushOK {
	return map[uint64]*wire.FlushOK{
		1: report(viewA, 5, wire.Cut{ID: 1, Seq: 5}, wire.Cut{ID: 2, Seq: 2}),
		2: report(viewA, 3, wire.Cut{ID: 2, Seq: 3}, wire.Cut{ID: 1, Seq: 4}),
		3: report(viewB, 9, wire.Cut{ID: 3, Seq: 9}),
		4: report(wire.ViewID{}, 0),
	}
}

func TestInitiatorGathersReports(t *testing.T) {
	r := testInitiator()
	confirm := &wire.FlushOK{Epoch: 5, Attempt: 1, Initiator: 1, Phase: wire.FlushCut}
	if r.answer(2, 1, confirm) || r.answer(9, 1, report(viewA, 1)) || r.answer(2, 7, report(viewA, 1)) {
		t.Fatal("an answer of the other phase, or from a node not proposed, counted")
	}
	rs := reports()
	for _, id := range []uint64{1, 2, 3, 4} {
		if done := r.answer(id, 1, rs[id]); done != (id == 4) {
			t.Fatalf("answer of %d: phase complete %v", id, done)
		}
		if got := fmt.Sprint(r.silent()); id == 2 && got != "[3 4]" {
			t.Fatalf("silent %s after 1 and 2 reported", got)
		}
	}
	rs[1].Has[0].Seq = 99 // the initiator keeps its own copy
	r.fixCut(t0.Add(time.Millisecond), Quorum{}, true)
	want := []wire.ViewCut{
		{View: viewB, Inc: 1, Cuts: []wire.Cut{{ID: 3, Seq: 9}}},
		{View: viewA, Inc: 1, Cuts: []wire.Cut{{ID: 1, Seq: 5}, {ID: 2, Seq: 3}}},
	}
	if fmt.Sprint(r.cuts) != fmt.Sprint(want) || r.phase != wire.FlushCut {
		t.Fatalf("cuts %v, want %v (each prior view's, the most any member holds, by view)", r.cuts, want)
	}
	if f := r.flush(t0, time.Millisecond); f.Phase != wire.FlushCut || fmt.Sprint(f.Cuts) != fmt.Sprint(want) {
		t.Fatalf("the cut phase's flush: %+v", f)
	}
	for _, id := range []uint64{4, 3, 2, 1} {
		if done := r.answer(id, 1, confirm); done != (id == 1) {
			t.Fatalf("confirmation of %d: phase complete %v", id, done)
		}
	}
	c := r.commit()
	if fmt.Sprint(c.Members) != "[{1 1 6} {2 1 4} {3 1 10} {4 1 1}]" || !slices.Equal(c.Left, []uint64{5}) {
		t.Fatalf("commit members %v (each starting after what it sent), left %v (leavers not proposed)", c.Members, c.Left)
	}
}

// Prior views are told apart by their coordinator's incarnation too: a
// coordinator that restarted counts epochs afresh.
func TestInitiatorCutsByIncarnation(t *testing.T) {
	a, b := report(viewA, 1, wire.Cut{ID: 1, Seq: 1}), report(viewA, 1, wire.Cut{ID: 1, Seq: 8})
	b.PriorInc = 2
	got := sortedCuts(gatherCuts(map[uint64]wire.FlushOK{1: *a, 2: *b}))
	if len(got) != 2 || got[0].Inc != 1 || got[0].Cuts[0].Seq != 1 || got[1].Cuts[0].Seq != 8 {
		t.Fatalf("cuts %v, want one per incarnation", got)
	}
}

func TestInitiatorOdd(t *testing.T) {
	r := testInitiator()
	rs := reports()
	rs[3].Settings, rs[2].Settings = 8, 9
	for id, ok := range rs {
		r.answer(id, 1, ok)
	}
	if got := fmt.Sprint(r.odd(7)); got != "[2 3]" {
		t.Fatalf("odd %s, want [2 3]", got)
	}
}

// Phase 1 restarts without the silent after the timeout; phase 2 asks
// everyone again, and leaves out only those that failed to confirm twice.
func TestInitiatorOverdue(t *testing.T) {
	timeout := 75 * time.Millisecond
	r := testInitiator()
	r.answer(1, 1, reports()[1])
	if _, restart := r.overdue(t0.Add(timeout-1), timeout); restart {
		t.Fatal("restarted before the timeout")
	}
	if without, restart := r.overdue(t0.Add(timeout), timeout); !restart || fmt.Sprint(without) != "[2 3 4]" {
		t.Fatalf("phase 1: restart %v without %v", restart, without)
	}
	for _, cutFails := range [][]uint64{nil, {3}} {
		r = testInitiator()
		for id, ok := range reports() {
			r.answer(id, 1, ok)
		}
		r.fixCut(t0, Quorum{}, true)
		r.answer(1, 1, &wire.FlushOK{Epoch: 5, Attempt: 1, Initiator: 1, Phase: wire.FlushCut})
		r.answer(2, 1, &wire.FlushOK{Epoch: 5, Attempt: 1, Initiator: 1, Phase: wire.FlushCut})
		for _, id := range cutFails {
			r.cutFails[id] = 1
		}
		if without, restart := r.overdue(t0.Add(timeout), timeout); !restart || !slices.Equal(without, cutFails) {
			t.Fatalf("phase 2 with %v failed before: restart %v without %v", cutFails, restart, without)
		}
	}
}

func TestInitiatorNext(t *testing.T) {
	r := testInitiator()
	if !r.next(1, []uint64{1, 3}) || ids(r.members) != "[1 2 4]" || r.id.Attempt != 2 {
		t.Fatalf("next attempt %d of %s, want 2 of [1 2 4] (never without this node)", r.id.Attempt, ids(r.members))
	}
	r.id.Attempt = wire.MaxAttempt
	if r.next(1, nil) {
		t.Fatal("an attempt after the last")
	}
}

// The phase's timeout is a deadline only while members are silent.
func TestInitiatorDeadline(t *testing.T) {
	timeout, retry := 75*time.Millisecond, 100*time.Millisecond
	r := testInitiator()
	r.flush(t0, retry)
	if got := r.deadline(timeout); got != t0.Add(timeout) {
		t.Fatalf("deadline +%v with members silent, want the timeout", got.Sub(t0))
	}
	for id, ok := range reports() {
		r.answer(id, 1, ok)
	}
	if got := r.deadline(timeout); got != t0.Add(retry) {
		t.Fatalf("deadline +%v with everyone answered, want the resend", got.Sub(t0))
	}
}
