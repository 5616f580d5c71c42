package node

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/mutex"
)

var debugLock = false

// addLockers adds nodes whose lock has the given quorum (0: off).
func addLockers(w *sim.World, quorum int, ids ...uint64) {
	addLocks(w, mutex.RicartAgrawala, quorum, ids...)
}

// addLocks adds nodes whose lock runs algorithm alg, with the given quorum
// (0: off; Ricart–Agrawala only).
func addLocks(w *sim.World, alg mutex.Algorithm, quorum int, ids ...uint64) {
	addCores(w, func(o *CoreOptions) { o.Lock = mutex.Options{Quorum: quorum, Algorithm: alg} }, ids...)
}

// oneHolder is the lock's safety, checked after every step of simulated
// time. With a quorum: no two live nodes hold the lock, whatever their
// views. Without: no node acquires the lock in a view while another
// member of that view holds it, that is, two live members of one view
// hold it only if neither acquired it there: they got it on the two sides
// of a partition, which only the quorum prevents, and the view is the
// merge of those sides.
func oneHolder(quorum int) func(w *sim.World) error {
	return func(w *sim.World) error {
		holders := map[string][]uint64{} // by view
		var all []string
		for _, id := range w.IDs() {
			if !w.Alive(id) {
				continue
			}
			c := core(w, id)
			if c.LockState() != mutex.Held {
				continue
			}
			v := c.View()
			key := fmt.Sprintf("%v@%d", v.ID, v.Members[0].Inc)
			holders[key] = append(holders[key], id)
			all = append(all, fmt.Sprintf("%d in %v (acquired in %s)", id, v, c.LockHeldView()))
		}
		if quorum > 0 && len(all) > 1 {
			return fmt.Errorf("with a quorum of %d, two nodes hold the lock: %v", quorum, all)
		}
		for _, hs := range holders {
			for _, id := range hs {
				c := core(w, id)
				if len(hs) > 1 && c.LockHeldView() == c.View().ID.String() {
					return fmt.Errorf("node %d acquired the lock in its view while another member held it: %v", id, all)
				}
			}
		}
		return nil
	}
}

// TestLockInTheGroup runs Ricart–Agrawala in the node core: five members
// take the lock in turn (think, request, hold, release) at 5 % loss while
// members crash (holders and waiters alike) and come back, and a
// partition splits the group, with and without a quorum. The safety check
// runs after every step; at the end, with the faults over, every member
// that asks gets the lock.
func TestLockInTheGroup(t *testing.T) {
	for _, v := range []struct {
		alg    mutex.Algorithm
		quorum int
	}{{mutex.RicartAgrawala, 0}, {mutex.RicartAgrawala, 5}, {mutex.Central, 0}, {mutex.TokenRing, 0}} {
		quorum := v.quorum
		t.Run(fmt.Sprintf("%s/quorum=%d", v.alg, quorum), func(t *testing.T) {
			testutil.ForSeeds(t, 20, func(t *testing.T, seed int64) {
				w := sim.New(sim.Options{Seed: seed, Loss: 0.05, Jitter: 100 * time.Microsecond})
				w.Check("one holder", oneHolder(quorum))
				addLocks(w, v.alg, quorum, ids(5)...)
				settleViews(t, w, 3*time.Second, ids(5))
				r := rand.New(rand.NewPCG(uint64(seed), 7))
				got := map[uint64]int{}
				// use makes each live node request the lock now and then,
				// and release it a little after it got it.
				use := func() {
					for _, id := range ids(5) {
						if !w.Alive(id) {
							continue
						}
						w.Do(id, func(m sim.Machine) {
							c := coreOf(m)
							for _, ev := range c.TakeMutexEvents() {
								if ev.Kind == mutex.Acquired {
									got[id]++
								}
								if debugLock {
									t.Logf("t=%v node %d %v clock %d view %s lost %v msgs %d peer %d", w.Elapsed(), id, ev.Kind, ev.Clock, ev.View, ev.Lost, ev.Messages, ev.Peer)
								}
							}
							switch {
							case c.LockState() == mutex.Released && r.IntN(4) == 0:
								c.LockRequest(w.Now())
							case c.LockState() == mutex.Held && r.IntN(2) == 0:
								c.LockRelease(w.Now())
							}
						})
					}
				}
				run := func(d time.Duration) {
					for end := w.Elapsed() + d; w.Elapsed() < end; {
						use()
						if err := w.RunFor(5 * time.Millisecond); err != nil {
							t.Fatal(err)
						}
					}
				}
				run(300 * time.Millisecond)
				holder := uint64(0)
				for _, id := range ids(5) {
					if core(w, id).LockState() == mutex.Held {
						holder = id
					}
				}
				victim := holder
				if victim == 0 {
					victim = uint64(1 + r.IntN(5))
				}
				w.Crash(victim) // a holder (or a waiter) dies
				run(400 * time.Millisecond)
				w.Restart(victim)
				run(300 * time.Millisecond)
				w.Partition([]uint64{1, 2}, []uint64{3, 4, 5})
				run(500 * time.Millisecond)
				w.Heal()
				run(600 * time.Millisecond)
				settleViews(t, w, 3*time.Second, ids(5))
				// Liveness: every member asks once more and gets it.
				for _, id := range ids(5) {
					w.Do(id, func(m sim.Machine) {
						c := coreOf(m)
						if c.LockState() == mutex.Held {
							c.LockRelease(w.Now())
						}
					})
				}
				want := map[uint64]bool{}
				for _, id := range ids(5) {
					want[id] = true
				}
				deadline := w.Elapsed() + 5*time.Second
				for len(want) > 0 && w.Elapsed() < deadline {
					for id := range want {
						w.Do(id, func(m sim.Machine) {
							c := coreOf(m)
							for _, ev := range c.TakeMutexEvents() {
								if ev.Kind == mutex.Acquired {
									delete(want, id)
									c.LockRelease(w.Now())
								}
							}
							if want[id] && c.LockState() == mutex.Released {
								c.LockRequest(w.Now())
							}
						})
					}
					if err := w.RunFor(5 * time.Millisecond); err != nil {
						t.Fatal(err)
					}
				}
				if len(want) > 0 {
					t.Fatalf("after the faults, nodes %v never got the lock\n%s", want, w.Trace())
				}
				if len(got) == 0 {
					t.Fatal("nobody got the lock during the faults: the test exercised nothing")
				}
			})
		})
	}
}

// TestLockMessagesPerEntry: 2(n−1) messages per entry in a quiet group.
func TestLockMessagesPerEntry(t *testing.T) {
	for _, n := range []int{1, 3, 5, 8} {
		w := sim.New(sim.Options{Seed: 1})
		addLockers(w, 0, ids(n)...)
		settleViews(t, w, 3*time.Second, ids(n))
		if err := w.RunFor(300 * time.Millisecond); err != nil { // the election settles
			t.Fatal(err)
		}
		w.Do(1, func(m sim.Machine) { coreOf(m).LockRequest(w.Now()) })
		if err := w.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		var acquired *mutex.Event
		for _, ev := range core(w, 1).TakeMutexEvents() {
			if ev.Kind == mutex.Acquired {
				acquired = &ev
			}
		}
		datagrams := n // the request in one multicast, n−1 replies
		if n <= 2 {
			datagrams = 2 * (n - 1)
		}
		if acquired == nil || acquired.Messages != 2*(n-1) || acquired.Datagrams != datagrams {
			t.Errorf("n=%d: acquired %+v, want %d messages, %d datagrams", n, acquired, 2*(n-1), datagrams)
		}
	}
}

// TestLockMessagesPerEntryByAlgorithm: the central server takes 3
// messages per entry in the real node core, REQUEST and GRANT before the
// entry and RELEASE after it, whoever asks; the token ring takes the
// token's passes from where it is parked (0 at the coordinator, which
// holds the first view's token) plus the WANT that wakes it.
func TestLockMessagesPerEntryByAlgorithm(t *testing.T) {
	entry := func(w *sim.World, id uint64) (acquired, exited *mutex.Event) {
		t.Helper()
		w.Do(id, func(m sim.Machine) { coreOf(m).LockRequest(w.Now()) })
		if err := w.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		w.Do(id, func(m sim.Machine) { coreOf(m).LockRelease(w.Now()) })
		if err := w.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		for _, ev := range core(w, id).TakeMutexEvents() {
			switch ev.Kind {
			case mutex.Acquired:
				acquired = &ev
			case mutex.Exited:
				exited = &ev
			}
		}
		if acquired == nil || exited == nil {
			t.Fatalf("node %d: acquired %+v, exited %+v", id, acquired, exited)
		}
		return acquired, exited
	}
	for _, n := range []int{1, 3, 5, 8} {
		w := sim.New(sim.Options{Seed: 1})
		addLocks(w, mutex.Central, 0, ids(n)...)
		settleViews(t, w, 3*time.Second, ids(n))
		for _, id := range []uint64{1, uint64(n)} {
			a, e := entry(w, id)
			if a.Messages != 2 || a.Datagrams != 2 || e.Messages != 3 {
				t.Errorf("central, n=%d, node %d: %d messages (%d datagrams) at the grant, %d with the release; want 2 and 3", n, id, a.Messages, a.Datagrams, e.Messages)
			}
		}
	}
	w := sim.New(sim.Options{Seed: 1})
	addLocks(w, mutex.TokenRing, 0, ids(5)...)
	settleViews(t, w, 3*time.Second, ids(5))
	coord := core(w, 1).View().Members[0].ID
	for _, hops := range []uint64{0, 0, 3, 4, 1} { // from where the token is parked, up the ring of IDs
		id := (coord+hops-1)%5 + 1
		want := int(hops)
		if hops > 0 {
			want++ // the WANT
		}
		if a, _ := entry(w, id); a.Messages != want {
			t.Errorf("token, node %d, %d passes from the token: %d messages, want %d", id, hops, a.Messages, want)
		}
		coord = id
	}
}

// TestLeaveReleasesTheLock: a holder that leaves releases the lock first
// (logged as a release, not a loss), its deferred reply goes out before
// the leave, and it takes no new request.
func TestLeaveReleasesTheLock(t *testing.T) {
	w := sim.New(sim.Options{Seed: 1})
	addLockers(w, 0, ids(3)...)
	settleViews(t, w, 3*time.Second, ids(3))
	w.Do(1, func(m sim.Machine) { coreOf(m).LockRequest(w.Now()) })
	if err := w.RunFor(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	w.Do(2, func(m sim.Machine) { coreOf(m).LockRequest(w.Now()) })
	if err := w.RunFor(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if a, b := core(w, 1).LockState(), core(w, 2).LockState(); a != mutex.Held || b != mutex.Wanted {
		t.Fatalf("node 1 %v, node 2 %v; want held and wanted", a, b)
	}
	w.Do(1, func(m sim.Machine) {
		c := coreOf(m)
		c.Leave(w.Now())
		if c.LockState() != mutex.Released || c.LockRequest(w.Now()) {
			t.Errorf("a leaving node is %v and takes requests", c.LockState())
		}
	})
	var exited *mutex.Event
	for _, ev := range core(w, 1).TakeMutexEvents() {
		if ev.Kind == mutex.Exited {
			exited = &ev
		}
	}
	if exited == nil || exited.Lost {
		t.Errorf("node 1 left holding the lock: %+v, want a release", exited)
	}
	if err := w.RunFor(20 * time.Millisecond); err != nil { // less than the leave takes
		t.Fatal(err)
	}
	if st := core(w, 2).LockState(); st != mutex.Held {
		t.Errorf("node 2 is %v 20 ms after node 1 left holding; want held (the reply went out with the leave)", st)
	}
}
