package mutex

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/testutil/msgnet"
	"github.com/huddle-lan/huddle/internal/testutil/script"
)

// TestRandomHistories runs seeded histories of requests, releases,
// withdrawals, crashes (of holders and waiters too), joins (also while
// requests are pending), partitions and, in quorum mode, merges, over a
// network with random delays (FIFO per sender) where a view change
// delivers, holds or drops what is in flight. After every delivery no two
// members of a view hold the lock; in quorum mode, after every step no two
// nodes hold it at all (within a step, a partition's two sides install
// their views one after the other, and the minority's holder learns that
// it lost the lock only with its own view). At the end, with the failures
// over (in quorum mode: the crashed nodes restarted and the partitions
// healed), every request is granted or was withdrawn. `-seed=S` replays
// one seed; HUDDLE_TEST_SOAK multiplies the seeds.
func TestRandomHistories(t *testing.T) {
	for _, quorum := range []bool{false, true} {
		name := "plain"
		if quorum {
			name = "quorum"
		}
		t.Run(name, func(t *testing.T) {
			testutil.ForSeeds(t, 400, func(t *testing.T, seed int64) {
				h := newHistory(t, quorum, seed)
				h.run(30 + h.rng.IntN(60))
				h.heal()
				releaseAll(t, h.l)
				h.checkGranted()
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
	quorum bool
	groups [][]uint64
	nextID uint64
	dead   []uint64 // crashed, or (quorum) not started yet
}

func newHistory(t *testing.T, quorum bool, seed int64) *history {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x3a7e))
	var opt Options
	n := 1 + rng.IntN(7)
	h := &history{t: t, rng: rng, quorum: quorum, nextID: 1}
	if quorum {
		// The cluster is IDs 1..N; some start later, as joins.
		opt.Quorum = n + rng.IntN(3)
		for id := n + 1; id <= opt.Quorum; id++ {
			h.dead = append(h.dead, uint64(id))
		}
	}
	l := newLAN(t, opt, 0)
	l.Rng, l.global = rng, quorum
	l.Delay = func(_, _ uint64) time.Duration { return time.Duration(100+rng.IntN(2900)) * time.Microsecond }
	h.l = l
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("quorum %d; the last steps:\n%s", opt.Quorum, l.Tail())
		}
	})
	first := ids(n)
	h.nextID = uint64(max(n, opt.Quorum) + 1)
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

// form makes a new group of fresh nodes.
func (h *history) form(ids []uint64) {
	h.l.add(ids...)
	h.groups = append(h.groups, slices.Clone(ids))
	h.l.install(ids...)
}

func (h *history) run(steps int) {
	for range steps {
		h.l.Run(script.Gap(h.rng))
		switch op := h.rng.IntN(20); {
		case op < 6:
			h.requests()
		case op < 10:
			h.release()
		case op < 13:
			h.crash()
		case op < 15:
			h.join()
		case op < 17:
			h.partition()
		case op < 19:
			h.merge()
		}
		if err := h.l.safe(h.quorum); err != nil {
			h.t.Fatalf("%v\n%s", err, h.l.Tail())
		}
	}
}

// requests calls Request at one to three live nodes at the same instant.
func (h *history) requests() {
	ids := h.l.IDs()
	for range 1 + h.rng.IntN(3) {
		h.l.request(ids[h.rng.IntN(len(ids))])
	}
}

// release releases a holder, or withdraws a waiter's request.
func (h *history) release() {
	var busy []uint64
	for _, id := range h.l.IDs() {
		if h.l.Nodes[id].M.State() != Released {
			busy = append(busy, id)
		}
	}
	if hs := h.l.holders(); len(hs) > 0 && h.rng.IntN(3) > 0 {
		busy = hs
	}
	if len(busy) > 0 {
		h.l.release(busy[h.rng.IntN(len(busy))])
	}
}

// crash stops a live node, a holder or a waiter more often than not, and
// installs its group's next view.
func (h *history) crash() {
	if len(h.l.Nodes) < 2 {
		return
	}
	var id uint64
	var busy []uint64
	for _, id := range h.l.IDs() {
		if h.l.Nodes[id].M.State() != Released {
			busy = append(busy, id)
		}
	}
	if len(busy) > 0 && h.rng.IntN(3) > 0 {
		id = busy[h.rng.IntN(len(busy))]
	} else {
		ids := h.l.IDs()
		id = ids[h.rng.IntN(len(ids))]
	}
	h.l.Crash(id)
	h.dead = append(h.dead, id)
	gi := h.groupOf(id)
	g := slices.DeleteFunc(h.groups[gi], func(x uint64) bool { return x == id })
	if len(g) == 0 {
		h.groups = slices.Delete(h.groups, gi, gi+1)
		return
	}
	h.groups[gi] = g
	h.l.install(g...)
}

func (h *history) groupOf(id uint64) int {
	for i, g := range h.groups {
		if slices.Contains(g, id) {
			return i
		}
	}
	h.t.Fatalf("node %d in no group %v", id, h.groups)
	return -1
}

// newID returns an ID not in use: a crashed node's (a restart) or, without
// a quorum, a new one.
func (h *history) newID() (uint64, bool) {
	if len(h.dead) > 0 && (h.quorum || h.rng.IntN(2) == 0) {
		i := h.rng.IntN(len(h.dead))
		id := h.dead[i]
		h.dead = slices.Delete(h.dead, i, i+1)
		return id, true
	}
	if h.quorum {
		return 0, false
	}
	id := h.nextID + uint64(h.rng.IntN(5))
	h.nextID = id + 1
	return id, true
}

// join adds a fresh node: to a group, preferably one with a pending
// request, or alone.
func (h *history) join() {
	if len(h.l.Nodes) >= 12 {
		return
	}
	id, ok := h.newID()
	if !ok {
		return
	}
	h.l.add(id)
	if len(h.groups) == 0 || h.rng.IntN(5) == 0 {
		h.groups = append(h.groups, []uint64{id})
		h.l.install(id)
		return
	}
	gi := h.rng.IntN(len(h.groups))
	for i, g := range h.groups {
		if slices.ContainsFunc(g, func(x uint64) bool { return h.l.Nodes[x].M.State() == Wanted }) && h.rng.IntN(2) == 0 {
			gi = i
		}
	}
	h.groups[gi] = append(h.groups[gi], id)
	h.l.install(h.groups[gi]...)
}

func (h *history) partition() {
	groups, a, b, ok := msgnet.Split(h.rng, h.groups, h.rng.IntN(len(h.groups)))
	if !ok {
		return
	}
	h.groups = groups
	h.l.install(a...)
	h.l.install(b...)
}

// merge joins two groups into one. Without a quorum, only when one side
// neither holds nor wants the lock: two sides that each granted it (also
// while the merge settles what is in flight) would merge into a view with
// two holders, which only the quorum mode prevents.
func (h *history) merge() {
	if len(h.groups) < 2 {
		return
	}
	i, j := msgnet.PickTwo(h.rng, len(h.groups))
	busy := func(g []uint64) bool {
		return slices.ContainsFunc(g, func(x uint64) bool { return h.l.Nodes[x].M.State() != Released })
	}
	if !h.quorum && busy(h.groups[i]) && busy(h.groups[j]) {
		return
	}
	g := append(slices.Clone(h.groups[i]), h.groups[j]...)
	h.groups[i] = g
	h.groups = slices.Delete(h.groups, j, j+1)
	h.l.install(g...)
}

// heal ends the failures. In quorum mode the crashed nodes restart and
// all groups merge, so that a majority exists; without, each group goes
// on alone.
func (h *history) heal() {
	if !h.quorum {
		return
	}
	for len(h.dead) > 0 {
		h.join()
	}
	for len(h.groups) > 1 {
		g := append(h.groups[0], h.groups[1]...)
		h.groups = append([][]uint64{g}, h.groups[2:]...)
		h.l.install(g...)
		if err := h.l.safe(true); err != nil {
			h.t.Fatalf("%v\n%s", err, h.l.Tail())
		}
	}
}

// checkGranted checks that every live node's every request was granted or
// withdrawn, and that nothing is left deferred.
func (h *history) checkGranted() {
	for _, id := range h.l.IDs() {
		n := h.l.Nodes[id]
		count := map[EventKind]int{}
		for _, e := range n.Events {
			count[e.Kind]++
		}
		if count[Requested] != count[Acquired]+count[Withdrawn] || count[Acquired] != count[Exited] {
			h.t.Errorf("node %d: events %v", id, count)
		}
		if len(n.M.deferred) > 0 || len(n.M.needed) > 0 {
			h.t.Errorf("node %d: deferred %v, needed %v at the end", id, n.M.deferred, n.M.needed)
		}
	}
}
