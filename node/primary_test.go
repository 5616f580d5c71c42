package node

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/mutex"
)

// primaryChain checks, after every step, that there are never two primary
// views at once (docs/design.md, "Primary views"): any two primary views
// installed at live nodes share a member (by incarnation), unless one of
// them lost a member to a crash, which leaves it unable to flush, order
// or grant (a stale view, which its other members leave within the
// suspect timeout). Two sides of a partition that both made a primary
// view would share none. And every node's primary views follow each
// other by rising generations.
type primaryChain struct {
	last map[[2]uint64]uint64
	seen int // primary views installed, counted once per node
}

func newPrimaryChain() *primaryChain { return &primaryChain{last: map[[2]uint64]uint64{}} }

func (p *primaryChain) check(w *sim.World) error {
	var views []membership.View
	var at []uint64
	for _, id := range w.IDs() {
		if !w.Alive(id) {
			continue
		}
		c := core(w, id)
		gen := c.membership.Primary()
		v := c.View()
		if gen == 0 || len(v.Members) == 0 {
			continue
		}
		if !v.Primary {
			return fmt.Errorf("node %d: view %v has generation %d and is not marked primary", id, v, gen)
		}
		life := [2]uint64{id, c.inc}
		switch last := p.last[life]; {
		case gen < last:
			return fmt.Errorf("node %d installed primary generation %d after %d: %v", id, gen, last, v)
		case gen > last:
			p.last[life] = gen
			p.seen++
		}
		if allAlive(w, v) {
			views, at = append(views, v), append(at, id)
		}
	}
	for i := range views {
		for j := range i {
			a, b := views[i], views[j]
			if a.ID != b.ID && !slices.ContainsFunc(a.Members, func(x wire.Member) bool { return slices.Contains(b.Members, x) }) {
				return fmt.Errorf("two primary views at once with no member in common: %v at node %d, %v at node %d", a, at[i], b, at[j])
			}
		}
	}
	return nil
}

// allAlive reports whether every member of v runs, in the incarnation v
// has, with v installed and sending in it: a member that crashed, moved
// to another view, or takes part in a flush (which holds its sends; it
// may already have confirmed the cut of a newer primary view) leaves v
// unable to flush or order, and its remaining members leave it within the
// suspect timeout.
func allAlive(w *sim.World, v membership.View) bool {
	return whole(w, v) && !slices.ContainsFunc(v.Members, func(x wire.Member) bool { return !core(w, x.ID).Sending() })
}

// TestPrimaryViewsUnderFaults runs the membership schedules of
// TestViewSynchronyUnderFaults (joins aside: the quorum expects the nodes
// started) with each quorum policy: partitions and heals, crashes and
// restarts, graceful leaves, stalls, loss up to 20 %, and crashes in the
// middle of flushes. After every step the primary views form one chain;
// at the end a view of every node is primary, and its members deliver in
// it. 300 seeds per policy; HUDDLE_TEST_SOAK=1 runs ten times as many.
// The two policies run in parallel (the simulator is one goroutine).
func TestPrimaryViewsUnderFaults(t *testing.T) {
	t.Parallel()
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for _, policy := range []string{membership.QuorumMajority, membership.QuorumStatic} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			runs, compared := 0, 0
			testutil.ForSeeds(t, seeds, func(t *testing.T, seed int64) {
				s := newScheduleQ(t, seed, policy)
				p := newPrimaryChain()
				s.w.Check("one primary chain", p.check)
				s.run()
				runs++
				if p.seen > 1 {
					compared++
				}
			})
			// A run whose nodes leave before they are ever together has no
			// primary view; most runs must have several to compare.
			if compared < runs/2 {
				t.Errorf("only %d of %d runs installed more than one primary view: the check compared too little", compared, runs)
			}
		})
	}
}

// quorumCores adds nodes with quorum policy q.
func quorumCores(w *sim.World, q membership.Quorum, ids ...uint64) {
	addCores(w, func(o *CoreOptions) { o.Membership.Quorum = q }, ids...)
}

// primaryOf reports node id's view and whether it is primary.
func primaryOf(w *sim.World, id uint64) (membership.View, bool) {
	v := viewOf(w, id)
	return v, v.Primary
}

// settlePrimary runs the world until every node of group is in one view
// of exactly group, marked primary as want, and reports how long it took.
func settlePrimary(t *testing.T, w *sim.World, group []uint64, want bool) time.Duration {
	t.Helper()
	start := w.Elapsed()
	var last error
	err := w.RunUntil(func() bool {
		if last = agreed(w, group); last != nil {
			return false
		}
		if v, p := primaryOf(w, group[0]); p != want {
			last = fmt.Errorf("view %v primary %v, want %v", v, p, want)
			return false
		}
		return true
	}, 3*time.Second)
	if err != nil {
		t.Fatalf("seed %d: %v (%v)\n%s", w.Seed(), last, err, w.Trace())
	}
	return w.Elapsed() - start
}

// TestPrimarySplit: five nodes with quorum majority split 3|2. The
// majority's view is primary and the minority's is not, which the
// minority knows within the suspect timeout (and the flush); there total
// and safe sends fail with ErrNotPrimary and FIFO ones go. Healed, the
// group is one primary view again. Then the group shrinks one crash at a
// time down to one node, every view primary (a majority of the one
// before, the last by the tie-breaker: the lowest ID); with quorum
// static, two of five are not primary.
func TestPrimarySplit(t *testing.T) {
	testutil.ForSeeds(t, 10, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.05, Jitter: 100 * time.Microsecond})
		chain := newPrimaryChain()
		w.Check("one primary chain", chain.check)
		quorumCores(w, membership.Quorum{Policy: membership.QuorumMajority, Expected: 5}, ids(5)...)
		settlePrimary(t, w, ids(5), true)
		w.Partition([]uint64{1, 2, 3}, []uint64{4, 5})
		d := settlePrimary(t, w, []uint64{4, 5}, false)
		if d > 2*testSuspect {
			t.Errorf("the minority knew it was not primary after %v, more than the suspect timeout %v and a flush's", d, testSuspect)
		}
		settlePrimary(t, w, []uint64{1, 2, 3}, true)
		w.Do(4, func(m sim.Machine) {
			c := coreOf(m)
			for _, o := range []wire.Order{wire.Total, wire.Safe} {
				if _, err := c.Multicast([]byte("app"), []byte("x"), o, 0); !errors.Is(err, membership.ErrNotPrimary) {
					t.Errorf("a %v send outside the primary component: %v, want ErrNotPrimary", o, err)
				}
			}
			if _, err := c.Multicast([]byte("app"), []byte("x"), wire.FIFO, 0); err != nil {
				t.Errorf("a FIFO send outside the primary component: %v", err)
			}
		})
		w.Heal()
		settlePrimary(t, w, ids(5), true)
		for _, n := range []int{4, 3, 2, 1} {
			w.Crash(uint64(n + 1))
			settlePrimary(t, w, ids(n), true)
		}
		if chain.seen < 5*2 {
			t.Errorf("%d primary installs seen, want at least 10", chain.seen)
		}
	})
	t.Run("static", func(t *testing.T) {
		w := sim.New(sim.Options{Seed: 1, Loss: 0.05})
		w.Check("one primary chain", newPrimaryChain().check)
		quorumCores(w, membership.Quorum{Policy: membership.QuorumStatic, Expected: 5}, ids(5)...)
		settlePrimary(t, w, ids(5), true)
		w.Crash(5)
		w.Crash(4)
		settlePrimary(t, w, ids(3), true)
		w.Crash(3)
		settlePrimary(t, w, ids(2), false)
	})
}

// TestPrimaryFirstStart: nodes that start apart make a primary view once
// every expected node is together with quorum majority, and with quorum
// static once a majority is (all of them with WaitForAll). A restarted
// node alone, which knows nothing, is not primary while the group goes on
// elsewhere.
func TestPrimaryFirstStart(t *testing.T) {
	for _, c := range []struct {
		q        membership.Quorum
		majority bool // is 3 of 5 at first start primary
	}{
		{membership.Quorum{Policy: membership.QuorumMajority, Expected: 5}, false},
		{membership.Quorum{Policy: membership.QuorumStatic, Expected: 5}, true},
		{membership.Quorum{Policy: membership.QuorumStatic, Expected: 5, WaitForAll: true}, false},
	} {
		t.Run(fmt.Sprintf("%s/wait_for_all=%v", c.q.Policy, c.q.WaitForAll), func(t *testing.T) {
			w := sim.New(sim.Options{Seed: 1})
			w.Check("one primary chain", newPrimaryChain().check)
			w.Partition([]uint64{1, 2}, []uint64{3, 4, 5})
			quorumCores(w, c.q, ids(5)...)
			settlePrimary(t, w, []uint64{1, 2}, false)
			settlePrimary(t, w, []uint64{3, 4, 5}, c.majority)
			w.Heal()
			settlePrimary(t, w, ids(5), true)
			w.Partition([]uint64{1}, []uint64{2, 3, 4, 5})
			w.Crash(1)
			w.Restart(1)
			settlePrimary(t, w, []uint64{1}, false)
			settlePrimary(t, w, []uint64{2, 3, 4, 5}, true)
		})
	}
}

// TestLockOutsideThePrimary: Ricart–Agrawala with quorum majority (the
// lease counts a majority of the view): with the group split 3|2 under
// loss and the nodes asking for the lock all along, no two nodes anywhere
// hold it at once, the minority never gets it, and after the heal every
// node does.
func TestLockOutsideThePrimary(t *testing.T) {
	testutil.ForSeeds(t, 10, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.05, Jitter: 100 * time.Microsecond})
		w.Check("one holder", oneHolder(5))
		addCores(w, func(o *CoreOptions) {
			o.Membership.Quorum = membership.Quorum{Policy: membership.QuorumMajority, Expected: 5}
			o.Lock = mutex.Options{ViewLease: true}
		}, ids(5)...)
		settlePrimary(t, w, ids(5), true)
		got := map[uint64]int{}
		split := false
		use := func() {
			for _, id := range ids(5) {
				w.Do(id, func(m sim.Machine) {
					c := coreOf(m)
					for _, ev := range c.TakeMutexEvents() {
						if ev.Kind != mutex.Acquired {
							continue
						}
						got[id]++
						if split && id >= 4 && !c.View().Primary {
							t.Errorf("node %d got the lock outside the primary component, in %v", id, c.View())
						}
					}
					switch c.LockState() {
					case mutex.Released:
						c.LockRequest(w.Now())
					case mutex.Held:
						c.LockRelease(w.Now())
					}
				})
			}
		}
		run := func(d time.Duration) {
			for end := w.Elapsed() + d; w.Elapsed() < end; {
				use()
				if err := w.RunFor(3 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
		}
		run(200 * time.Millisecond)
		w.Partition([]uint64{1, 2, 3}, []uint64{4, 5})
		split = true
		run(800 * time.Millisecond)
		before := got[1] + got[2] + got[3]
		run(300 * time.Millisecond)
		if got[1]+got[2]+got[3] == before {
			t.Errorf("the majority side got the lock no more: %v", got)
		}
		w.Heal()
		split = false
		clear(got)
		run(1500 * time.Millisecond)
		for _, id := range ids(5) {
			if got[id] == 0 {
				t.Errorf("after the heal node %d never got the lock: %v", id, got)
			}
		}
	})
}

// TestPrimaryLeaverFromAnotherSide replays the schedule that found a
// member leaving a view that is not primary counted out of the older
// primary view its other members knew: 6 nodes, 5 leaves (127 ms), the
// partition [1 3 6] | [2 4] (238 ms) makes [1 3 6] primary, the partition
// [1 2 4] | [3 6] (420 ms) makes [3 6] primary, and when 1 leaves [1 2 4]
// (752 ms) the reference of 2 and 4, the five-node view without 1, was
// split evenly, and the tie made [2 4] primary beside [6 3]. Now graceful
// leavers come out of the reference only when the view they leave is
// primary (initiator.fixCut).
func TestPrimaryLeaverFromAnotherSide(t *testing.T) {
	s := newScheduleQ(t, 1496000257, membership.QuorumMajority)
	p := newPrimaryChain()
	s.w.Check("one primary chain", p.check)
	s.run()
	if p.seen < 2 {
		t.Fatalf("the schedule installed %d primary views: it no longer plays the case (%s)", p.seen, s)
	}
}
