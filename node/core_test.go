package node

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

const (
	testHeartbeat = 20 * time.Millisecond
	testSuspect   = 150 * time.Millisecond
)

func addNodes(w *sim.World, ids ...uint64) {
	for _, id := range ids {
		w.Add(id, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			return newSimCore(NewCore(CoreOptions{Group: "huddle", Seed: uint64(seed), Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: id, Inc: inc, DatagramSize: 1400, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect}}}, w.Now()))
		})
	}
}

func core(w *sim.World, id uint64) *Core { return coreOf(w.Machine(id)) }

// expectPeers checks that every live node in each group hears exactly the
// other members of its group.
func expectPeers(w *sim.World, groups ...[]uint64) error {
	for _, g := range groups {
		for _, id := range g {
			if !w.Alive(id) {
				continue
			}
			var want []uint64
			for _, o := range g {
				if o != id && w.Alive(o) {
					want = append(want, o)
				}
			}
			if got := core(w, id).Peers(); !slices.Equal(got, want) {
				return fmt.Errorf("node %d hears %v, want %v", id, got, want)
			}
		}
	}
	return nil
}

func ids(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// TestPeersFollowFaults runs groups of 2–16 nodes through loss, a crash, a
// restart, a partition and its healing, and checks after each phase that
// every node hears exactly the nodes it can reach. The timings leave room:
// loss is at most 20 %, so a suspect timeout of 7 heartbeats sees a false
// loss with probability about 0.2^7 per interval, which the seeds below
// never hit; a failing seed prints how to replay it.
func TestPeersFollowFaults(t *testing.T) {
	testutil.ForSeeds(t, 40, func(t *testing.T, seed int64) {
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		n := 2 + r.IntN(15)
		loss := r.Float64() * 0.1
		w := sim.New(sim.Options{Seed: seed, Loss: loss, Jitter: time.Millisecond, Dup: 0.01, Reorder: 0.01})
		all := ids(n)
		addNodes(w, all...)
		settle := func(what string, groups ...[]uint64) {
			t.Helper()
			if err := w.RunFor(testSuspect + 4*testHeartbeat); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if err := expectPeers(w, groups...); err != nil {
				t.Fatalf("n=%d loss=%.2f, %s: %v\n%s", n, loss, what, err, w.Trace())
			}
		}
		settle("start", all)

		victim := all[r.IntN(n)]
		w.Crash(victim)
		settle(fmt.Sprintf("crash of %d", victim), all)

		w.Restart(victim)
		settle(fmt.Sprintf("restart of %d", victim), all)

		if n >= 2 {
			cut := 1 + r.IntN(n-1)
			a, b := all[:cut], all[cut:]
			w.Partition(a, b)
			settle("partition", a, b)
			w.Heal()
			settle("heal", all)
		}
		for _, id := range all {
			cs, _ := core(w, id).Stats()
			if cs.Malformed+cs.NotHuddle+cs.UnknownKind+cs.ForeignGroup+cs.EncodeErrors+cs.OversizedSent != 0 {
				t.Fatalf("node %d counted bad datagrams on a clean network: %+v", id, cs)
			}
		}
	})
}

// TestRestartReplacesTheOldIncarnation restarts a member before anyone
// suspects it: its new incarnation asks to join, and the coordinator
// replaces the old one in one view change, without waiting for the
// suspect timeout.
func TestRestartReplacesTheOldIncarnation(t *testing.T) {
	w := sim.New(sim.Options{Seed: 1})
	addNodes(w, 1, 2)
	settleViews(t, w, time.Second, ids(2))
	core(w, 1).TakeEvents()
	w.Crash(2)
	w.Restart(2)
	start := w.Elapsed()
	if err := w.RunUntil(func() bool { return viewOf(w, 1).HasInc(2, 2) && viewOf(w, 2).HasInc(1, 1) }, time.Second); err != nil {
		t.Fatalf("the restarted node is not in node 1's view: %v; %v", viewOf(w, 1), err)
	}
	if d := w.Elapsed() - start; d >= testSuspect {
		t.Fatalf("the restart took %v to replace the old incarnation, not under the suspect timeout %v", d, testSuspect)
	}
	var installs []membership.Event
	for _, ev := range core(w, 1).TakeEvents() {
		if ev.Kind == membership.ViewInstalled {
			installs = append(installs, ev)
		}
	}
	if len(installs) != 1 || !slices.Equal(installs[0].Crashed, []uint64{2}) || !slices.Equal(installs[0].Joined, []uint64{2}) {
		t.Fatalf("view changes at node 1: %+v; want one, with 2 crashed and 2 joined", installs)
	}
}

func TestBadDatagramsAreDroppedAndCounted(t *testing.T) {
	c := NewCore(CoreOptions{Group: "huddle", Membership: membership.Options{Engine: multicast.Options{Self: 1, Inc: 1, DatagramSize: 1400, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect}}}, sim.Epoch)
	enc := wire.NewEncoder()
	foreign := &wire.Envelope{Header: wire.Header{Group: wire.GroupHash("other"), From: 2, Inc: 1, Kind: wire.KindSession}}
	own := &wire.Envelope{Header: wire.Header{Group: wire.GroupHash("huddle"), From: 1, Inc: 1, Kind: wire.KindSession}}
	fb, _ := enc.Append(nil, foreign)
	ob, _ := enc.Append(nil, own)
	src := netip.MustParseAddrPort("10.0.0.9:7468")
	for _, d := range [][]byte{nil, []byte("garbage"), {0x97, 0xcd, 0x12, 0x34, 1, 1, 1, 1, 1, 1}, fb, ob} {
		c.Receive(sim.Epoch, src, d)
	}
	cs, ms := c.Stats()
	if cs.DatagramsIn != 5 || cs.Malformed != 2 || cs.NotHuddle != 1 || cs.ForeignGroup != 1 || cs.OwnEcho != 1 {
		t.Fatalf("counters %+v, want 5 in: 2 malformed, 1 not huddle, 1 foreign group, 1 own echo", cs)
	}
	if c.drain(); ms.Peers != 0 || len(c.TakeEvents()) != 0 {
		t.Fatal("a bad datagram made a peer appear")
	}
}
