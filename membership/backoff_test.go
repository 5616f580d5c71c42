package membership

import (
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

const testST = 150 * time.Millisecond // the suspect timeout of the unit tests

var t0 = time.Unix(1_800_000_000, 0)

// A node that does not answer is held off two suspect timeouts, doubling
// for each time in a row, up to maxHoldOff; a hold that does not grow
// never shortens one that did; a new incarnation starts afresh.
func TestHoldOffsGrow(t *testing.T) {
	h := newHoldOffs(testST)
	for i, want := range []time.Duration{2, 4, 8, 16, 32, 64, 64, 64} {
		h.hold(t0, 7, 1, 2*testST, true)
		if got := h.offs[7].until.Sub(t0); got != want*testST {
			t.Fatalf("hold %d: %v, want %d suspect timeouts", i+1, got, want)
		}
	}
	h.hold(t0, 7, 1, testST, false)
	if got := h.offs[7].until.Sub(t0); got != maxHoldOff*testST {
		t.Fatalf("a shorter hold shortened it to %v", got)
	}
	h.hold(t0, 7, 2, 2*testST, true)
	if o := h.offs[7]; o.fails != 1 || o.until.Sub(t0) != 2*testST {
		t.Fatalf("a new incarnation: %+v, want one failure, held two suspect timeouts", o)
	}
}

func TestHoldOffsJoin(t *testing.T) {
	h := newHoldOffs(testST)
	h.hold(t0, 1, 5, testST, false) // left gracefully: not a failure
	h.hold(t0, 2, 5, testST, true)  // did not answer
	for _, tc := range []struct {
		id, inc uint64
		at      time.Duration
		want    bool
	}{
		{1, 5, 0, false},          // held out of merges, but may join
		{2, 5, 0, true},           // did not answer its admission
		{2, 4, 0, true},           // an older incarnation neither
		{2, 6, 0, false},          // a newer one restarted: it may
		{2, 5, 2 * testST, false}, // the hold is over
	} {
		if got := h.joinHeldOff(t0.Add(tc.at), tc.id, tc.inc); got != tc.want {
			t.Errorf("joinHeldOff(%d, inc %d, +%v) = %v, want %v", tc.id, tc.inc, tc.at, got, tc.want)
		}
	}
	if !h.heldOff(t0, 1) || h.heldOff(t0.Add(testST), 1) {
		t.Error("a graceful leaver is held off until its hold ends")
	}
}

// At maxOffs the hold that ends first goes, the lowest ID among equals.
func TestHoldOffsEvict(t *testing.T) {
	h := newHoldOffs(testST)
	for id := range uint64(maxOffs) {
		h.hold(t0, id+10, 1, time.Duration(id%3+1)*time.Second, false)
	}
	h.hold(t0, 1, 1, time.Second, false)
	if _, ok := h.offs[10]; ok || len(h.offs) != maxOffs {
		t.Fatalf("%d held off, node 10 still there: want the first of those that end first evicted", len(h.offs))
	}
}

// A hold that ended goes at once, unless the node did not answer: then it
// is remembered maxHoldOff suspect timeouts past it, so the next doubles.
func TestHoldOffsPrune(t *testing.T) {
	h := newHoldOffs(testST)
	h.hold(t0, 1, 1, testST, false)
	h.hold(t0, 2, 1, testST, true)
	h.hold(t0, 3, 1, testST, false)
	h.settle(View{Members: []wire.Member{{ID: 3, Inc: 1}}})
	h.prune(t0.Add(2 * testST))
	if _, ok := h.offs[1]; ok || len(h.offs) != 1 {
		t.Fatalf("after the holds ended: %v, want only node 2's", h.offs)
	}
	h.prune(t0.Add((2 + maxHoldOff + 1) * testST))
	if len(h.offs) != 0 {
		t.Fatalf("long after: %v", h.offs)
	}
}

func TestStreak(t *testing.T) {
	var s streak
	blocked := 100 * time.Millisecond
	s.fail(t0, true, blocked, noLimit)
	if s.held(t0) {
		t.Fatal("held after one failure")
	}
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 16} {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		s.fail(now, true, blocked, noLimit)
		if got := s.until.Sub(now); got != want*blocked {
			t.Fatalf("failure %d in a row: held %v, want %d×%v", i+2, got, want, blocked)
		}
	}
	fails := s.fails
	s.fail(t0.Add(time.Second), false, time.Hour, 3*time.Second)
	if s.fails != fails || s.until != t0.Add(4*time.Second) {
		t.Fatalf("a failure not counted again: %d in a row, until %v; want %d, the limit", s.fails, s.until.Sub(t0), fails)
	}
	s.expire(t0.Add(2*time.Second+1), time.Second)
	if s.fails != 0 || !s.held(t0.Add(3*time.Second)) {
		t.Fatalf("after a quiet: %d in a row, held %v; want 0 and the hold kept", s.fails, s.held(t0.Add(3*time.Second)))
	}
}
