package node

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

const testJoin = 60 * time.Millisecond

func addMembers(w *sim.World, ids ...uint64) { addCores(w, nil, ids...) }

// addCores adds nodes with the tests' options, changed by set (if not nil).
func addCores(w *sim.World, set func(o *CoreOptions), ids ...uint64) {
	for _, id := range ids {
		w.Add(id, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			o := CoreOptions{Group: "huddle", Seed: uint64(seed), Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: id, Inc: inc, DatagramSize: 1400, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect, Window: 256}}}
			if set != nil {
				set(&o)
			}
			return newSimCore(NewCore(o, w.Now()))
		})
	}
}

// viewOf returns node id's installed view.
func viewOf(w *sim.World, id uint64) membership.View { return core(w, id).View() }

// agreed reports whether every node of group is alive and installed one
// view whose members are exactly the group.
func agreed(w *sim.World, group []uint64) error {
	want := slices.Clone(group)
	slices.Sort(want)
	var first membership.View
	for i, id := range group {
		if !w.Alive(id) {
			return fmt.Errorf("node %d is down", id)
		}
		v := viewOf(w, id)
		got := v.IDs()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("node %d is in %v, want members %v", id, v, want)
		}
		if i == 0 {
			first = v
		} else if v.ID != first.ID {
			return fmt.Errorf("node %d is in %v, node %d in %v", id, v, group[0], first)
		}
	}
	return nil
}

// settleViews runs the world until the group agrees on one view, or fails.
func settleViews(t *testing.T, w *sim.World, limit time.Duration, group []uint64) time.Duration {
	t.Helper()
	start := w.Elapsed()
	var last error
	err := w.RunUntil(func() bool { last = agreed(w, group); return last == nil }, limit)
	if err != nil {
		t.Fatalf("seed %d: no agreement on a view of %v within %v: %v (%v)\n%s", w.Seed(), group, limit, last, err, w.Trace())
	}
	return w.Elapsed() - start
}

func TestGroupForms(t *testing.T) {
	w := sim.New(sim.Options{Seed: 1})
	l := newVSLedger()
	w.Check("view synchrony", l.check)
	addMembers(w, ids(5)...)
	d := settleViews(t, w, 2*time.Second, ids(5))
	t.Logf("5 nodes started together agree on %v after %v", viewOf(w, 1), d)
}

// TestCrashIsExcludedInTimeUnderLoss: at 20 % loss, a crashed member, and
// then a crashed coordinator, are excluded within the suspect timeout and
// a little flush time (guarantee 7), and the survivors agree.
func TestCrashIsExcludedInTimeUnderLoss(t *testing.T) {
	testutil.ForSeeds(t, 20, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.2, Jitter: 100 * time.Microsecond})
		l := newVSLedger()
		w.Check("view synchrony", l.check)
		addMembers(w, ids(5)...)
		settleViews(t, w, 3*time.Second, ids(5))
		if err := w.RunFor(200 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		rest := ids(5)
		for _, victim := range []uint64{3, viewOf(w, 1).Coordinator()} {
			w.Crash(victim)
			rest = slices.DeleteFunc(rest, func(id uint64) bool { return id == victim })
			d := settleViews(t, w, 3*time.Second, rest)
			if limit := testSuspect + 100*time.Millisecond; d > limit {
				t.Fatalf("crash of %d: the survivors agreed after %v, want within %v", victim, d, limit)
			}
		}
	})
}

func TestCrashIsExcluded(t *testing.T) {
	w := sim.New(sim.Options{Seed: 2})
	l := newVSLedger()
	w.Check("view synchrony", l.check)
	addMembers(w, ids(4)...)
	settleViews(t, w, 2*time.Second, ids(4))
	for _, victim := range []uint64{2, 4} { // a member, then the coordinator
		w.Crash(victim)
		rest := slices.DeleteFunc(ids(4), func(id uint64) bool { return !w.Alive(id) })
		d := settleViews(t, w, 2*time.Second, rest)
		t.Logf("crash of %d: %v after %v", victim, viewOf(w, rest[0]), d)
	}
}

// TestFullGroupRefusesJoiners: with a small bound on membership messages
// (one 250-byte datagram here) a view commit lists only so many members; the coordinator refuses the joiners past that,
// and the others form one view.
func TestFullGroupRefusesJoiners(t *testing.T) {
	w := sim.New(sim.Options{Seed: 9})
	l := newVSLedger()
	refused := map[uint64]string{}
	l.onEvent = func(id uint64, ev membership.Event) {
		if ev.Kind == membership.Refused && ev.Member == id {
			refused[id] = ev.Setting
		}
	}
	w.Check("view synchrony", l.check)
	for _, id := range ids(16) {
		w.Add(id, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			// Incarnations as large as real ones (start times in ns).
			return newSimCore(NewCore(CoreOptions{Group: "huddle", Seed: uint64(seed), Membership: membership.Options{JoinTimeout: testJoin, MessageSize: 250, Engine: multicast.Options{Self: id, Inc: 1_763_800_000_000_000_000 + inc, DatagramSize: 250, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect}}}, w.Now()))
		})
	}
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	var in []uint64
	for _, id := range ids(16) {
		if core(w, id).Left() {
			if refused[id] != "members" {
				t.Fatalf("node %d stopped without a refusal for a full group: %q", id, refused[id])
			}
			continue
		}
		in = append(in, id)
	}
	if len(refused) == 0 || len(in) < 2 {
		t.Fatalf("%d refused, %d in: want a full group and refused joiners", len(refused), len(in))
	}
	settleViews(t, w, time.Second, in)
	t.Logf("with 250-byte datagrams: %d members, %d refused", len(in), len(refused))
}
