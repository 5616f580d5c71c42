package node

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
)

// TestSequencerCrash: four members multicast total and safe messages
// without pause at 10 % loss, and the coordinator (the sequencer) crashes
// among them. The ledger checks total order and safe delivery after every
// step; the survivors agree on a view and deliver everything they send in
// it. Across the seeds, the flush must have ordered messages that the
// sequencer never recorded, or the test would not exercise that path.
func TestSequencerCrash(t *testing.T) {
	sequencerCrash(t, 50, "the sequencer", func(t *testing.T, seed int64, w *sim.World, l *vsLedger) []uint64 {
		n := 0
		send := func() {
			for _, id := range ids(4) {
				w.Do(id, func(m sim.Machine) {
					c := coreOf(m)
					for k := range 3 {
						order := []wire.Order{wire.Total, wire.Safe, wire.FIFO}[k]
						n++
						if _, err := l.multicast(c, id, c.inc, fmt.Appendf(nil, "message %d", n), order); err != nil {
							return
						}
					}
				})
			}
		}
		run := func(d time.Duration) {
			for end := w.Elapsed() + d; w.Elapsed() < end; {
				send()
				if err := w.RunFor(time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
		}
		run(50 * time.Millisecond)
		victim := viewOf(w, 1).Coordinator()
		w.Crash(victim)
		rest := slices.DeleteFunc(ids(4), func(id uint64) bool { return id == victim })
		run(testSuspect + 50*time.Millisecond) // the survivors keep sending through the view change
		return rest
	})
}

// sequencerCrash runs body for n seeds, each in a world of four members at
// 10 % loss whose ledger checks view synchrony, total order and safe
// delivery after every step. body crashes a sequencer and returns the
// survivors; they must agree on a view, and across the seeds the flush
// must have ordered messages that no record numbered, or the test would
// not exercise that path.
func sequencerCrash(t *testing.T, n int, victim string, body func(t *testing.T, seed int64, w *sim.World, l *vsLedger) []uint64) {
	seeds := testutil.Seeds(t, n)
	var unrecorded uint64
	testutil.ForSeeds(t, len(seeds), func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.1, Jitter: 100 * time.Microsecond})
		l := newVSLedger()
		w.Check("view synchrony", l.check)
		addMembers(w, ids(4)...)
		settleViews(t, w, 3*time.Second, ids(4))
		rest := body(t, seed, w, l)
		settleViews(t, w, 3*time.Second, rest)
		for _, id := range rest {
			unrecorded += core(w, id).MembershipStats().Unrecorded
		}
	})
	t.Logf("messages ordered by the flush, without a record, summed over survivors and seeds: %d", unrecorded)
	if len(seeds) > 1 && unrecorded == 0 {
		t.Errorf("no survivor ever ordered a message without a record: the crash never caught %s with work", victim)
	}
}

// TestMovedSequencerCrash: four members at 10 % loss; one that is not the
// coordinator sends total, safe and FIFO messages alone until the order
// moves to it, the others join in now and then (the order may move
// back), and then that member, the sequencer by now, crashes mid-stream.
// The ledger checks total order and safe delivery after every step; the
// survivors agree on a view and deliver everything they send in it. Every
// seed must have moved the order, and across the seeds the flush must
// have ordered messages that the moved sequencer never recorded.
func TestMovedSequencerCrash(t *testing.T) {
	sequencerCrash(t, 30, "the moved sequencer", func(t *testing.T, seed int64, w *sim.World, l *vsLedger) []uint64 {
		sender := viewOf(w, 1).Members[2].ID
		var taken []membership.Event // OrderTaken events at the sender
		l.onEvent = func(id uint64, ev membership.Event) {
			if ev.Kind == membership.OrderTaken && id == sender {
				taken = append(taken, ev)
			}
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 2))
		n := 0
		send := func(id uint64, orders ...wire.Order) {
			w.Do(id, func(m sim.Machine) {
				c := coreOf(m)
				for _, order := range orders {
					n++
					if _, err := l.multicast(c, id, c.inc, fmt.Appendf(nil, "message %d", n), order); err != nil {
						return
					}
				}
			})
		}
		run := func(d time.Duration, others bool) {
			for end := w.Elapsed() + d; w.Elapsed() < end; {
				send(sender, wire.Total, wire.Total, wire.Safe, wire.FIFO)
				if others && rng.IntN(4) == 0 {
					send(ids(4)[rng.IntN(4)], wire.Total, wire.Safe)
				}
				if err := w.RunFor(time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
		}
		run(60*time.Millisecond, false)
		run(60*time.Millisecond, true)
		run(60*time.Millisecond, false)
		if moves := core(w, sender).MembershipStats().SequencerMoves; moves == 0 {
			t.Fatalf("node %d sent alone for 120 ms and the order never moved to it", sender)
		}
		for _, id := range ids(4) { // status's sequencer names it at every member
			if got := core(w, id).Sequencer(); got != sender {
				t.Fatalf("node %d sent alone for the last 60 ms, and node %d says node %d orders", sender, id, got)
			}
		}
		if len(taken) == 0 || taken[0].Member != viewOf(w, sender).Coordinator() || taken[0].GSeq < 2 {
			t.Fatalf("node %d took the order, and its first OrderTaken event was %+v (want the coordinator %d handing it on from a number past 1)",
				sender, taken, viewOf(w, sender).Coordinator())
		}
		w.Crash(sender)
		rest := slices.DeleteFunc(ids(4), func(id uint64) bool { return id == sender })
		run2 := func(d time.Duration) {
			for end := w.Elapsed() + d; w.Elapsed() < end; {
				send(rest[rng.IntN(len(rest))], wire.Total, wire.Safe, wire.FIFO)
				if err := w.RunFor(time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
		}
		run2(testSuspect + 50*time.Millisecond) // the survivors keep sending through the view change
		return rest
	})
}
