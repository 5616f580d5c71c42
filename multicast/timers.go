package multicast

import (
	"container/heap"
	"time"
)

// timerKind says what a timer is for.
type timerKind uint8

const (
	requestTimer timerKind = iota + 1 // send a NACK for a gap (SRM request timer)
	repairTimer                       // send a repair someone asked for
)

// timer is one armed SRM timer. Timers are never removed from the heap:
// cancelling or re-arming bumps the generation in the gap or repair record,
// and a timer whose generation no longer matches is skipped when it fires.
type timer struct {
	at   time.Time
	kind timerKind
	src  uint64
	inc  uint64
	seq  uint64
	gen  uint32
	n    uint64 // insertion order: equal deadlines fire in arming order
}

type timerHeap struct {
	items []timer
	n     uint64
}

func (h *timerHeap) Len() int { return len(h.items) }
func (h *timerHeap) Less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.n < b.n
}
func (h *timerHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *timerHeap) Push(x any)    { h.items = append(h.items, x.(timer)) }
func (h *timerHeap) Pop() any {
	t := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return t
}

func (h *timerHeap) arm(t timer) {
	h.n++
	t.n = h.n
	heap.Push(h, t)
}

// next is the earliest deadline, or the zero Time.
func (h *timerHeap) next() time.Time {
	if len(h.items) == 0 {
		return time.Time{}
	}
	return h.items[0].at
}

// popDue removes and returns the earliest timer if it is due at now.
func (h *timerHeap) popDue(now time.Time) (timer, bool) {
	if len(h.items) == 0 || h.items[0].at.After(now) {
		return timer{}, false
	}
	return heap.Pop(h).(timer), true
}
