package election

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/testutil/msgnet"
	"github.com/huddle-lan/huddle/internal/testutil/script"
)

// TestRandomViews runs seeded histories of starts, crashes, joins,
// restarts, partitions and merges over a network with random delays (FIFO
// per sender), where a view change delivers or drops what is in flight
// among its members. After the network drains and the timers fire, every
// group must have exactly one leader, the highest ID of its view, known to
// every member from the same round. `-seed=S` replays one seed;
// HUDDLE_TEST_SOAK multiplies the seeds.
func TestRandomViews(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Bully} {
		t.Run(string(alg), func(t *testing.T) {
			testutil.ForSeeds(t, 500, func(t *testing.T, seed int64) {
				h := newHistory(t, alg, seed)
				h.run(20 + h.rng.IntN(40))
				if h.rng.IntN(2) == 0 {
					h.mergeAll()
				}
				h.l.Drain()
				for _, g := range h.groups {
					h.checkGroup(g)
				}
			})
		})
	}
}

// history is one randomized run: the groups are the current views, a
// partition of the live nodes.
type history struct {
	t      *testing.T
	rng    *rand.Rand
	l      *lan
	groups [][]uint64
	nextID uint64
	dead   []uint64
}

func newHistory(t *testing.T, alg Algorithm, seed int64) *history {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	opt := Options{Algorithm: alg, AnswerTimeout: 20 * time.Millisecond, CoordinatorTimeout: 50 * time.Millisecond,
		Order: []RingOrder{Ascending, Descending, JoinOrder}[rng.IntN(3)]}
	l := newLAN(t, opt, 0)
	l.Rng = rng
	if opt.Order == JoinOrder {
		l.Order = func(g []uint64) []uint64 { // a view's own order, the same for all its members
			o := slices.Clone(g)
			rng.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
			return o
		}
	}
	l.Delay = func(_, _ uint64) time.Duration { return time.Duration(100+rng.IntN(2900)) * time.Microsecond }
	h := &history{t: t, rng: rng, l: l, nextID: 1}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s, ring order %s; the last steps:\n%s", alg, opt.Order, l.Tail())
		}
	})
	n := 1 + rng.IntN(6)
	var first []uint64
	for range n {
		first = append(first, h.newID())
	}
	switch rng.IntN(3) {
	case 0: // one group
		h.form(first)
	case 1: // each alone
		for _, id := range first {
			h.form([]uint64{id})
		}
	default: // two
		k := 1 + rng.IntN(n)
		h.form(first[:k])
		if k < n {
			h.form(first[k:])
		}
	}
	return h
}

// newID returns an ID not in use: new, or a crashed node's (a restart).
func (h *history) newID() uint64 {
	if len(h.dead) > 0 && h.rng.IntN(2) == 0 {
		i := h.rng.IntN(len(h.dead))
		id := h.dead[i]
		h.dead = slices.Delete(h.dead, i, i+1)
		return id
	}
	id := h.nextID + uint64(h.rng.IntN(5))
	h.nextID = id + 1
	return id
}

// form makes a new group of fresh nodes.
func (h *history) form(ids []uint64) {
	h.l.add(ids...)
	h.groups = append(h.groups, slices.Clone(ids))
	h.l.Install(ids...)
}

func (h *history) run(steps int) {
	for range steps {
		h.l.Run(script.Gap(h.rng))
		switch op := h.rng.IntN(10); {
		case op < 3:
			h.starts()
		case op < 5:
			h.crash()
		case op < 7:
			h.join()
		case op < 8:
			h.partition()
		default:
			h.merge()
		}
	}
}

// starts calls Start at one to three live nodes at the same instant.
func (h *history) starts() {
	ids := h.l.IDs()
	for range 1 + h.rng.IntN(3) {
		h.l.start(ids[h.rng.IntN(len(ids))])
	}
}

func (h *history) crash() {
	if len(h.l.Nodes) < 2 {
		return
	}
	gi := h.rng.IntN(len(h.groups))
	g := h.groups[gi]
	id := g[h.rng.IntN(len(g))]
	h.l.Crash(id)
	h.dead = append(h.dead, id)
	g = slices.DeleteFunc(g, func(x uint64) bool { return x == id })
	if len(g) == 0 {
		h.groups = slices.Delete(h.groups, gi, gi+1)
		return
	}
	h.groups[gi] = g
	h.l.Install(g...)
}

// join adds a fresh node: to a group, or alone (a view of its own).
func (h *history) join() {
	if len(h.l.Nodes) >= 12 {
		return
	}
	id := h.newID()
	h.l.add(id)
	if len(h.groups) == 0 || h.rng.IntN(4) == 0 {
		h.groups = append(h.groups, []uint64{id})
		h.l.Install(id)
		return
	}
	gi := h.rng.IntN(len(h.groups))
	h.groups[gi] = append(h.groups[gi], id)
	h.l.Install(h.groups[gi]...)
}

func (h *history) partition() {
	groups, a, b, ok := msgnet.Split(h.rng, h.groups, h.rng.IntN(len(h.groups)))
	if !ok {
		return
	}
	h.groups = groups
	h.l.Install(a...)
	h.l.Install(b...)
}

func (h *history) merge() {
	if len(h.groups) < 2 {
		return
	}
	i, j := msgnet.PickTwo(h.rng, len(h.groups))
	g := append(slices.Clone(h.groups[i]), h.groups[j]...)
	h.groups[i] = g
	h.groups = slices.Delete(h.groups, j, j+1)
	h.l.Install(g...)
}

func (h *history) mergeAll() {
	for len(h.groups) > 1 {
		g := append(h.groups[0], h.groups[1]...)
		h.groups = append([][]uint64{g}, h.groups[2:]...)
		h.l.Install(g...)
	}
}

// checkGroup checks the end state of one view: one leader, its highest
// member, known to all from the same round, and nothing pending.
func (h *history) checkGroup(g []uint64) {
	t := h.t
	top := slices.Max(g)
	_, round := h.l.Nodes[g[0]].M.Leader()
	for _, id := range g {
		m := h.l.Nodes[id].M
		ld, r := m.Leader()
		if ld != top || r != round {
			t.Errorf("view %v: node %d has leader %d round %d; want %d, and node %d's round %d", g, id, ld, r, top, g[0], round)
		}
		if m.busy() || !m.NextDeadline().IsZero() {
			t.Errorf("node %d: state %d, deadline %v after the drain", id, m.state, m.NextDeadline())
		}
	}
	if round == 0 && len(g) > 0 {
		t.Errorf("view %v: no leader", g)
	}
}
