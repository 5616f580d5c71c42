package node

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/mutex"
)

// largeGroup is the size of TestLargeGroup's group.
const largeGroup = 128

// realInc makes simulated incarnations as large as real ones (start times
// in microseconds), which is what sizes a view commit.
const realInc = 1_763_800_000_000_000

// addLarge adds nodes as addMembers does, with real-sized incarnations,
// datagrams of size bytes, and the Bully election.
func addLarge(w *sim.World, size int, ids ...uint64) {
	for _, id := range ids {
		w.Add(id, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			return newSimCore(NewCore(CoreOptions{Group: "huddle", Seed: uint64(seed), Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: id, Inc: realInc + inc, DatagramSize: size, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect, Window: 256}}, Election: election.Options{Algorithm: election.Bully}}, w.Now()))
		})
	}
}

// settleEvery is settleViews for large groups: it checks every 5 ms of
// simulated time rather than before every step (a step of 128 nodes is
// cheap; checking 128 views after each is not), and so does the
// view-synchrony ledger l, which takes the events the nodes logged since.
func settleEvery(t *testing.T, w *sim.World, l *vsLedger, limit time.Duration, group []uint64, cond func() error) time.Duration {
	t.Helper()
	start := w.Elapsed()
	last := fmt.Errorf("not checked")
	for w.Elapsed()-start < limit {
		if err := w.RunFor(5 * time.Millisecond); err != nil {
			t.Fatalf("seed %d: %v", w.Seed(), err)
		}
		if err := l.check(w); err != nil {
			t.Fatalf("seed %d: view synchrony: %v", w.Seed(), err)
		}
		if last = agreed(w, group); last == nil && cond != nil {
			last = cond()
		}
		if last == nil {
			return w.Elapsed() - start
		}
	}
	t.Fatalf("seed %d: no agreement on a view of %d members within %v: %v", w.Seed(), len(group), limit, last)
	return 0
}

// TestLargeGroup: a group of 128 members, whose flushes and view commits
// take several datagrams each (wire.KindChunk), forms, excludes a crashed
// member and then its crashed coordinator in about a suspect timeout,
// elects one leader (Bully) and grants the lock, with the
// view-synchrony ledger and the lock's safety checked throughout.
// (Partitions and merges of large groups: TestLargeGroupMerge.)
func TestLargeGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("128 simulated nodes: about a minute; skipped with -short")
	}
	testutil.ForSeeds(t, 1, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Jitter: 50 * time.Microsecond})
		l := newVSLedger() // checked every 5 ms (settleEvery)
		wall := time.Now()
		group := ids(largeGroup)
		addLarge(w, 1400, group...)
		d := settleEvery(t, w, l, 5*time.Second, group, nil)
		var chunked uint64
		for _, id := range group {
			cs, _ := core(w, id).Stats()
			chunked += cs.ChunkedRecv
		}
		if chunked == 0 {
			t.Fatalf("the view of %d formed with no message in pieces: the test no longer tests them", largeGroup)
		}
		t.Logf("%d nodes agree after %v; %d messages in pieces received (wall %v)", largeGroup, d, chunked, time.Since(wall))

		for _, victim := range []uint64{77, viewOf(w, 1).Coordinator()} {
			if err := l.check(w); err != nil {
				t.Fatal(err)
			}
			w.Crash(victim)
			group = slices.DeleteFunc(group, func(id uint64) bool { return id == victim })
			d := settleEvery(t, w, l, 3*time.Second, group, nil)
			if limit := testSuspect + 150*time.Millisecond; d > limit {
				t.Fatalf("crash of %d: the %d survivors agreed after %v, want within %v", victim, len(group), d, limit)
			}
			t.Logf("crash of %d: %d survivors agree after %v (wall %v)", victim, len(group), d, time.Since(wall))
		}

		d = settleEvery(t, w, l, 3*time.Second, group, func() error { return oneLeader(w, group) })
		t.Logf("one leader, node %d, after %v more (wall %v)", slices.Max(group), d, time.Since(wall))

		// The lock: a request needs the consent of all 125 others.
		const asker = 40
		w.Do(asker, func(m sim.Machine) { coreOf(m).LockRequest(w.Now()) })
		asked := w.Elapsed()
		held := false
		for end := w.Elapsed() + 2*time.Second; !held && w.Elapsed() < end; {
			if err := w.RunFor(5 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if err := oneHolder(0)(w); err != nil {
				t.Fatal(err)
			}
			held = core(w, asker).LockState() == mutex.Held
		}
		if !held {
			t.Fatalf("node %d did not get the lock within 2s", asker)
		}
		t.Logf("node %d got the lock after %v (wall %v)", asker, w.Elapsed()-asked, time.Since(wall))
	})
}

// TestLargeGroupMerge: a group of 32, whose view commits also take
// several datagrams, splits in halves, each side forms its view, and
// they merge into one view with one leader when the cut heals.
func TestLargeGroupMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("32 simulated nodes through a partition; skipped with -short")
	}
	testutil.ForSeeds(t, 1, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Jitter: 50 * time.Microsecond})
		l := newVSLedger()
		group := ids(32)
		addLarge(w, 512, group...) // the least datagram_size: a view of 32 takes several

		settleEvery(t, w, l, 5*time.Second, group, nil)
		half := len(group) / 2
		a, b := slices.Clone(group[:half]), slices.Clone(group[half:])
		w.Partition(a, b)
		settleEvery(t, w, l, 3*time.Second, a, nil)
		settleEvery(t, w, l, 3*time.Second, b, nil)
		w.Heal()
		d := settleEvery(t, w, l, 5*time.Second, group, func() error { return oneLeader(w, group) })
		var chunked uint64
		for _, id := range group {
			cs, _ := core(w, id).Stats()
			chunked += cs.ChunkedRecv
		}
		if chunked == 0 {
			t.Fatal("no message in pieces: the test no longer tests them")
		}
		t.Logf("partition %d/%d and merge: one view and one leader after %v; %d messages in pieces", len(a), len(b), d, chunked)
	})
}
