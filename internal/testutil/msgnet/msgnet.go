// Package msgnet is the message network of the small group protocols'
// tests (election, mutex): messages between node IDs in virtual time, in
// FIFO order per sender and receiver, and what becomes of the messages in
// flight when a view changes or a node crashes.
package msgnet

import (
	"cmp"
	"container/heap"
	"math/rand/v2"
	"slices"
	"time"
)

// Msg is a message in flight.
type Msg struct {
	At       time.Time // arrival
	Seq      uint64    // sending order, network-wide
	From, To uint64
	Payload  []byte
}

// Net holds the messages in flight, by arrival then sending order.
type Net struct {
	q    queue
	seq  uint64
	last map[[2]uint64]time.Time // latest arrival per sender and receiver
}

// Send puts a message from→to on the network, arriving at at or, to keep
// FIFO order per sender and receiver, after the last one sent before it.
func (n *Net) Send(at time.Time, from, to uint64, payload []byte) {
	if n.last == nil {
		n.last = map[[2]uint64]time.Time{}
	}
	pair := [2]uint64{from, to}
	at = later(at, n.last[pair])
	n.last[pair] = at
	n.seq++
	heap.Push(&n.q, Msg{At: at, Seq: n.seq, From: from, To: to, Payload: payload})
}

// Requeue puts m back, after everything sent so far.
func (n *Net) Requeue(m Msg) {
	n.seq++
	m.Seq = n.seq
	heap.Push(&n.q, m)
}

// Len is the number of messages in flight.
func (n *Net) Len() int { return len(n.q) }

// Next returns the arrival of the next message; false when none is in
// flight.
func (n *Net) Next() (time.Time, bool) {
	if len(n.q) == 0 {
		return time.Time{}, false
	}
	return n.q[0].At, true
}

// Pop takes the next message off the network.
func (n *Net) Pop() Msg { return heap.Pop(&n.q).(Msg) }

// Sorted returns the messages in flight in order.
func (n *Net) Sorted() []Msg {
	ms := slices.Clone([]Msg(n.q))
	slices.SortFunc(ms, func(a, b Msg) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	return ms
}

// Filter keeps the messages for which keep is true.
func (n *Net) Filter(keep func(Msg) bool) {
	var q queue
	for _, m := range n.Sorted() {
		if keep(m) {
			q = append(q, m)
		}
	}
	n.q = q
	heap.Init(&n.q)
}

// Settle decides the fate of the messages in flight from or to the nodes
// in touched, whose view is about to change, and returns how many it
// dropped. Per sender and receiver, in FIFO order: when both stay
// together, all are delivered before the install (virtual synchrony), or
// all held and delivered after it (a loop that queued its sends through
// the flush), or a prefix is delivered and the rest lost; otherwise (a
// crash, a partition) a prefix is delivered and the rest lost. Messages
// between nodes not in one view (sameView) are lost. Without rng, all
// are lost. deliver hands a message to its receiver, which may send more.
func (n *Net) Settle(rng *rand.Rand, touched map[uint64]bool, sameView, together func(a, b uint64) bool, deliver func(Msg)) (dropped int) {
	held := map[uint64]bool{} // by seq
	touches := func(m Msg) bool { return (touched[m.From] || touched[m.To]) && !held[m.Seq] }
	for pass := 0; pass < 3 && rng != nil; pass++ {
		pairs := map[[2]uint64][]Msg{}
		var keys [][2]uint64
		for _, m := range n.Sorted() {
			if touches(m) {
				k := [2]uint64{m.From, m.To}
				if pairs[k] == nil {
					keys = append(keys, k)
				}
				pairs[k] = append(pairs[k], m)
			}
		}
		now := map[uint64]bool{} // by seq: delivered now; the rest of the touched are lost
		for _, k := range keys {
			ms := pairs[k]
			count := 0
			switch r := rng.IntN(3); {
			case !sameView(k[0], k[1]):
			case together(k[0], k[1]) && r == 0:
				count = len(ms)
			case together(k[0], k[1]) && r == 1:
				for _, m := range ms {
					held[m.Seq] = true
				}
				continue
			default:
				count = rng.IntN(len(ms) + 1)
			}
			for _, m := range ms[:count] {
				now[m.Seq] = true
			}
		}
		var out []Msg
		n.Filter(func(m Msg) bool {
			if !touches(m) {
				return true
			}
			if now[m.Seq] {
				out = append(out, m)
			} else {
				dropped++
			}
			return false
		})
		for _, m := range out {
			deliver(m)
		}
	}
	n.Filter(func(m Msg) bool {
		if touches(m) {
			dropped++
			return false
		}
		return true
	})
	return dropped
}

// Order is the order in which k members install a view: random with rng,
// else as given.
func Order(rng *rand.Rand, k int) []int {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	if rng != nil {
		rng.Shuffle(k, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	return idx
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// queue is a heap of messages by arrival, then by sending order.
type queue []Msg

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].At.Equal(q[j].At) {
		return q[i].At.Before(q[j].At)
	}
	return q[i].Seq < q[j].Seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(Msg)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// Split splits groups[gi] in two at a random point of a shuffle (the
// random histories' partition): it stores the first part in groups[gi],
// appends the second, and returns both; ok is false, changing nothing,
// for a group of one.
func Split(rng *rand.Rand, groups [][]uint64, gi int) (out [][]uint64, a, b []uint64, ok bool) {
	g := groups[gi]
	if len(g) < 2 {
		return groups, nil, nil, false
	}
	rng.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
	k := 1 + rng.IntN(len(g)-1)
	a, b = slices.Clone(g[:k]), slices.Clone(g[k:])
	groups[gi] = a
	return append(groups, b), a, b, true
}

// PickTwo picks two different indices below n, which is at least 2.
func PickTwo(rng *rand.Rand, n int) (i, j int) {
	i = rng.IntN(n)
	if j = rng.IntN(n - 1); j >= i {
		j++
	}
	return i, j
}
