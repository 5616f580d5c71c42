package membership

import (
	"math"
	"time"
)

// Backoffs keep what fails from failing again at once (docs/design.md,
// "Hold-offs that grow" and "Merges led from outside, rationed"): a
// node held off, and a kind of view change that failed in a row.

// holdOff keeps a node out of merges and admissions until a time: one
// that did not answer a flush that would have taken it in (fails counts
// those in a row: the hold doubles), left gracefully, or has other
// settings.
type holdOff struct {
	until time.Time
	inc   uint64 // the incarnation held off; a newer one is not
	fails uint8
}

// holdOffs are the nodes held out of merges and admissions, at most
// maxOffs of them. Holds are in suspect timeouts (st).
type holdOffs struct {
	offs map[uint64]holdOff
	st   time.Duration
}

func newHoldOffs(st time.Duration) holdOffs {
	return holdOffs{offs: map[uint64]holdOff{}, st: st}
}

// hold keeps node id (incarnation inc) out of merges and admissions for d;
// grow doubles d for each time in a row it did not answer, up to
// maxHoldOff suspect timeouts.
func (h *holdOffs) hold(now time.Time, id, inc uint64, d time.Duration, grow bool) {
	o, ok := h.offs[id]
	if !ok && len(h.offs) >= maxOffs {
		h.evict()
	}
	if o.inc != inc {
		o = holdOff{inc: inc}
	}
	if grow {
		if o.fails < 32 {
			o.fails++
		}
		for i := uint8(1); i < o.fails && d < maxHoldOff*h.st; i++ {
			d *= 2
		}
		d = min(d, maxHoldOff*h.st)
	}
	o.until = maxTime(o.until, now.Add(d))
	h.offs[id] = o
}

// evict drops the hold-off that ends first (the lowest ID among equals).
func (h *holdOffs) evict() {
	var victim uint64
	var at time.Time
	first := true
	for id, o := range h.offs {
		if first || o.until.Before(at) || o.until.Equal(at) && id < victim {
			victim, at, first = id, o.until, false
		}
	}
	delete(h.offs, victim)
}

// heldOff reports whether node id is held out of merges now.
func (h *holdOffs) heldOff(now time.Time, id uint64) bool {
	return now.Before(h.offs[id].until)
}

// release ends node id's hold now; what it failed is remembered, so that
// a next hold doubles.
func (h *holdOffs) release(now time.Time, id uint64) {
	if o, ok := h.offs[id]; ok {
		o.until = now
		h.offs[id] = o
	}
}

// joinHeldOff reports whether a join request of incarnation inc of node id
// waits: the incarnation did not answer an admission lately.
func (h *holdOffs) joinHeldOff(now time.Time, id, inc uint64) bool {
	o, ok := h.offs[id]
	return ok && o.fails > 0 && inc <= o.inc && now.Before(o.until)
}

// settle forgets the holds of the nodes view v holds: they answered.
func (h *holdOffs) settle(v View) {
	for id, o := range h.offs {
		if v.HasInc(id, o.inc) {
			delete(h.offs, id)
		}
	}
}

// prune forgets the hold-offs that ended. A node that did not answer is
// remembered past its hold, so that the next hold doubles; the others go
// when it ends.
func (h *holdOffs) prune(now time.Time) {
	for id, o := range h.offs {
		if end := o.until; o.fails == 0 && !now.Before(end) || now.Sub(end) > maxHoldOff*h.st {
			delete(h.offs, id)
		}
	}
}

// streak counts failures of one kind in a row: admissions in which a node
// did not answer (the coordinator's), or merges led from outside the view
// that ended without one (a member's). From the second failure in a row,
// it holds that kind off for as long as the failed one blocked sends,
// doubled for each further failure up to admitHoldMax times: failures
// that never end then block sends a bounded share of the time, about
// 1/(1+admitHoldMax) in the long run.
type streak struct {
	fails int       // in a row
	last  time.Time // the last
	until time.Time // nothing of the kind before then
}

// noLimit is the longest hold of a streak without a limit of its own.
const noLimit = time.Duration(math.MaxInt64)

// fail notes a failure at now that blocked sends for blocked, held off at
// most for most; count is false when it belongs to a failure already
// counted (one view change counts once).
func (s *streak) fail(now time.Time, count bool, blocked, most time.Duration) {
	if count {
		s.fails++
	}
	s.last = now
	if s.fails < 2 {
		return
	}
	f := time.Duration(min(1<<min(s.fails-2, 30), admitHoldMax))
	s.until = maxTime(s.until, now.Add(min(blocked*f, most)))
}

// reset starts counting afresh: the kind went through.
func (s *streak) reset() { s.fails = 0 }

// held reports whether the kind is held off at now.
func (s *streak) held(now time.Time) bool { return now.Before(s.until) }

// expire starts counting afresh after a long quiet: no failure for after.
func (s *streak) expire(now time.Time, after time.Duration) {
	if s.fails > 0 && now.Sub(s.last) > after {
		s.fails = 0
	}
}
