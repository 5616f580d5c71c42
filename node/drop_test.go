package node

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// addDroppers adds nodes whose built-in drop discards a rate of what they
// receive, on a network that itself loses nothing.
func addDroppers(w *sim.World, rate float64, ids ...uint64) {
	addDropRule(w, Drop{Rate: rate}, testSuspect, ids...)
}

// addDropRule adds nodes whose built-in drop has rule d, with the suspect
// timeout suspect.
func addDropRule(w *sim.World, d Drop, suspect time.Duration, ids ...uint64) {
	for _, id := range ids {
		w.Add(id, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			return newSimCore(NewCore(CoreOptions{Group: "huddle", Seed: uint64(seed), Drop: d, Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: id, Inc: inc, DatagramSize: 1400, Heartbeat: testHeartbeat, SuspectTimeout: suspect, Window: 256}}}, w.Now()))
		})
	}
}

// TestBuiltInDropIsLoss: the built-in drop looks like loss to the
// protocol. With 10 % of every node's datagrams dropped on a lossless
// network, the group forms, every message of every order reaches every
// member once, in order and in view (the virtual synchrony checks run
// after every step), the losses are repaired with NACKs, and each node
// counts about a tenth of what it received as injected_drops. The same
// holds with the drops in bursts of 4 datagrams, which lose runs of a
// sender's messages at once.
func TestBuiltInDropIsLoss(t *testing.T) {
	t.Run("independent", func(t *testing.T) { checkDropIsLoss(t, 6, 0) })
	t.Run("bursts", func(t *testing.T) { checkDropIsLoss(t, 4, 4) })
}

func checkDropIsLoss(t *testing.T, seeds int, burst float64) {
	testutil.ForSeeds(t, seeds, func(t *testing.T, seed int64) {
		const rate, n, perSender = 0.1, 4, 150
		w := sim.New(sim.Options{Seed: seed, Jitter: 100 * time.Microsecond})
		l := newVSLedger()
		w.Check("view synchrony", l.check)
		// Bursts count datagrams, not time: once the traffic stops, a
		// node hears only heartbeats (about 150 a second), and a burst of
		// 22 drops, one in 400 of mean length 4, silences its peers for
		// the 150 ms suspect timeout. With bursts the test allows 400 ms,
		// which takes a burst of 60 (one in 30 million).
		suspect := testSuspect
		if burst > 1 {
			suspect = 400 * time.Millisecond
		}
		addDropRule(w, Drop{Rate: rate, Burst: burst}, suspect, ids(n)...)
		settleViews(t, w, 5*time.Second, ids(n))
		var keys []msgKey
		sent := 0
		for step := 0; sent < n*perSender; step++ {
			for _, id := range ids(n) {
				w.Do(id, func(m sim.Machine) {
					c := coreOf(m)
					p := binary.BigEndian.AppendUint64(nil, uint64(step))
					if k, err := l.multicast(c, id, c.inc, p, orders[step%len(orders)]); err == nil {
						keys = append(keys, k)
						sent++
					}
				})
			}
			if err := w.RunFor(2 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if step > 10_000 {
				t.Fatalf("only %d of %d messages sent", sent, n*perSender)
			}
		}
		if err := w.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		if err := agreed(w, ids(n)); err != nil {
			t.Fatalf("the drop split the group: %v\n%s", err, w.Trace())
		}
		for _, id := range ids(n) {
			lf := l.life(id, core(w, id).inc)
			for _, k := range keys {
				if !lf.seen[k] {
					t.Fatalf("node %d never delivered %v", id, k)
				}
			}
		}
		for _, id := range ids(n) {
			cs, ms := core(w, id).Stats()
			in := float64(cs.DatagramsIn - cs.OwnEcho)
			got := float64(cs.InjectedDrops) / in
			t.Logf("node %d: %d of %d datagrams dropped (%.3f), %d NACKs, %d repairs", id, cs.InjectedDrops, cs.DatagramsIn, got, ms.NacksSent, ms.RepairsSent)
			if tol := 6 * dropSpread(rate, burst, in); math.Abs(got-rate) > tol {
				t.Errorf("node %d dropped %.3f of its datagrams, want %.2f ± %.3f (six standard deviations)", id, got, rate, tol)
			}
			if ms.NacksSent == 0 {
				t.Errorf("node %d sent no NACK: the drop did not look like loss", id)
			}
		}
	})
}

// dropSpread is the standard deviation of the share of n datagrams a drop
// of rate p discards: sqrt(p(1-p)/n) for independent drops; for bursts of
// mean length b (a two-state Markov chain), that times the variance's
// inflation by the chain's correlation ρ = 1 - 1/b - p/(b(1-p)),
// sqrt((1+ρ)/(1-ρ)).
func dropSpread(p, b, n float64) float64 {
	s := math.Sqrt(p * (1 - p) / n)
	if b > 1 {
		rho := 1 - 1/b - p/(b*(1-p))
		s *= math.Sqrt((1 + rho) / (1 - rho))
	}
	return s
}

// TestBuiltInDropCutsAndHeals: a rule of rate 1 from the other side's
// nodes, set on a running group, partitions it as a cut in the network
// would: each side installs a view of its own; with the rules off, the
// sides merge again.
func TestBuiltInDropCutsAndHeals(t *testing.T) {
	w := sim.New(sim.Options{Seed: 1})
	l := newVSLedger()
	w.Check("view synchrony", l.check)
	addDroppers(w, 0, ids(4)...)
	settleViews(t, w, 2*time.Second, ids(4))
	a, b := []uint64{1, 2}, []uint64{3, 4}
	cut := func(side, other []uint64, rate float64) {
		for _, id := range side {
			w.Do(id, func(m sim.Machine) { coreOf(m).SetDrop(Drop{Rate: rate, From: other}) })
		}
	}
	cut(a, b, 1)
	cut(b, a, 1)
	settleViews(t, w, 2*time.Second, a)
	settleViews(t, w, 2*time.Second, b)
	for _, id := range a {
		if cs, _ := core(w, id).Stats(); cs.InjectedDrops == 0 {
			t.Errorf("node %d counted no injected drop", id)
		}
		if d := core(w, id).Drop(); d.Rate != 1 || len(d.From) != 2 {
			t.Errorf("node %d reports the rule %+v", id, d)
		}
	}
	cut(a, b, 0)
	cut(b, a, 0)
	settleViews(t, w, 5*time.Second, ids(4))
}

// TestBuiltInDropFromOneSender drops only what one sender sends: the
// others' datagrams all arrive, and the seed makes the choice repeatable.
func TestBuiltInDropFromOneSender(t *testing.T) {
	run := func() (drops uint64) {
		w := sim.New(sim.Options{Seed: 3})
		addDroppers(w, 0, ids(3)...)
		settleViews(t, w, 2*time.Second, ids(3))
		w.Do(3, func(m sim.Machine) { coreOf(m).SetDrop(Drop{Rate: 0.5, From: []uint64{2}, Seed: 7}) })
		before, _ := core(w, 3).Stats()
		if err := w.RunFor(500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		after, _ := core(w, 3).Stats()
		drops = after.InjectedDrops - before.InjectedDrops
		if drops == 0 {
			t.Fatal("node 3 dropped nothing from node 2")
		}
		// Node 3 hears node 1's heartbeats whole: roughly half of node
		// 2's are missing, none of node 1's.
		in := after.DatagramsIn - before.DatagramsIn
		if drops*3 > in {
			t.Errorf("node 3 dropped %d of %d datagrams: more than half of one sender's", drops, in)
		}
		if err := agreed(w, ids(3)); err != nil {
			t.Errorf("half of one sender's heartbeats lost split the group: %v", err)
		}
		return drops
	}
	if a, b := run(), run(); a != b {
		t.Errorf("the same seed dropped %d, then %d datagrams", a, b)
	}
}

// TestDropperIndependentUnchanged: Burst 0 and 1 drop exactly as the
// dropper always has, one draw of the seeded source per datagram, so that
// a seed repeats the runs made before bursts existed.
func TestDropperIndependentUnchanged(t *testing.T) {
	for _, burst := range []float64{0, 1} {
		x := newDropper(Drop{Rate: 0.3, Burst: burst}, 42)
		want := rand.New(rand.NewPCG(42, dropSalt))
		for i := range 10_000 {
			if got, w := x.hit(1), want.Float64() < 0.3; got != w {
				t.Fatalf("burst %v: datagram %d: dropped %v, want %v", burst, i, got, w)
			}
		}
	}
}

// TestDropperBursts: with a fixed seed and Burst 4 at rate 0.2, the
// dropper drops 20 % of 200 000 datagrams in runs of 4 on average (about
// 10 000 bursts: a standard error near 1 %), where independent drops at
// that rate make runs of 1.25; the rule applies to its senders only, and
// setting a rule anew ends a burst.
func TestDropperBursts(t *testing.T) {
	x := newDropper(Drop{Rate: 0.2, Burst: 4, From: []uint64{2}}, 5)
	var n, dropped, bursts int
	inBurst := false
	for range 200_000 {
		if x.hit(1) {
			t.Fatal("a datagram from sender 1, whom the rule does not name, was dropped")
		}
		d := x.hit(2)
		n++
		if d {
			dropped++
			if !inBurst {
				bursts++
			}
		}
		inBurst = d
	}
	rate, mean := float64(dropped)/float64(n), float64(dropped)/float64(bursts)
	t.Logf("dropped %d of %d (%.4f) in %d bursts of %.2f on average", dropped, n, rate, bursts, mean)
	if rate < 0.19 || rate > 0.21 {
		t.Errorf("dropped %.4f of the datagrams, want 0.2 ± 0.01", rate)
	}
	if mean < 3.8 || mean > 4.2 {
		t.Errorf("bursts of %.2f datagrams on average, want 4 ± 0.2", mean)
	}
	for !x.bad {
		x.hit(2)
	}
	x.set(Drop{Rate: 0.2, Burst: 4})
	if x.hit(2) {
		t.Error("the first datagram after a new rule was dropped: the burst went on")
	}
}
