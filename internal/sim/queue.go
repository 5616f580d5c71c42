package sim

import "time"

type eventKind uint8

const (
	evDeliver eventKind = iota // a datagram copy arrives at to
	evTimer                    // to's armed timer fires
)

// event is one scheduled happening. Events are stored by value in the heap
// so that scheduling one costs no allocation.
type event struct {
	at   time.Duration // virtual time since Epoch
	seq  uint64        // insertion order, breaks ties in at
	to   *node
	from *node  // sender of a delivery
	data []byte // delivery payload, shared read-only by all its copies
	gen  uint64 // timer generation, or the receiver's incarnation at send
	kind eventKind
}

// eventQueue is a binary min-heap ordered by (at, seq). Ties go to the
// earlier insertion, which is what makes a run a function of its seed.
// It is hand-written rather than container/heap to avoid boxing each event
// in an interface.
type eventQueue struct {
	items []event
	seq   uint64
}

func (q *eventQueue) len() int { return len(q.items) }

func (q *eventQueue) less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (q *eventQueue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.items = append(q.items, e)
	q.up(len(q.items) - 1)
}

// peek returns the next event; the queue must not be empty.
func (q *eventQueue) peek() *event { return &q.items[0] }

// pop removes and returns the next event; the queue must not be empty.
func (q *eventQueue) pop() event {
	last := len(q.items) - 1
	e := q.items[0]
	q.items[0] = q.items[last]
	q.items[last] = event{} // let the payload be collected
	q.items = q.items[:last]
	if last > 0 {
		q.down(0)
	}
	return e
}

func (q *eventQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *eventQueue) down(i int) {
	n := len(q.items)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && q.less(c+1, c) {
			c++
		}
		if !q.less(c, i) {
			return
		}
		q.items[i], q.items[c] = q.items[c], q.items[i]
		i = c
	}
}
