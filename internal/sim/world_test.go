package sim_test

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// faulty has every fault on, so that determinism covers all draws.
func faulty(seed int64) sim.Options {
	return sim.Options{
		Seed: seed, Jitter: time.Millisecond, Loss: 0.1, SenderLoss: 0.05,
		Dup: 0.05, Reorder: 0.05, ReorderDelay: 3 * time.Millisecond,
	}
}

// script runs a fixed schedule of faults on 6 toys.
func script(t testing.TB, seed int64) *sim.World {
	w := newWorld(faulty(seed), 6, 10*time.Millisecond)
	run(t, w, 100*time.Millisecond)
	w.Partition([]uint64{1, 2, 3}, []uint64{4, 5})
	run(t, w, 100*time.Millisecond)
	w.Heal()
	w.Crash(3)
	w.Stall(2, 30*time.Millisecond)
	run(t, w, 100*time.Millisecond)
	w.Restart(3)
	w.SetLinkLoss(1, 4, 1)
	run(t, w, 100*time.Millisecond)
	return w
}

func TestSameSeedSameRun(t *testing.T) {
	testutil.ForSeeds(t, 20, func(t *testing.T, seed int64) {
		a, b := script(t, seed), script(t, seed)
		if a.Trace() != b.Trace() {
			t.Fatalf("traces differ:\n%s\n---\n%s", a.Trace(), b.Trace())
		}
		if a.Stats() != b.Stats() {
			t.Fatalf("stats differ: %+v vs %+v", a.Stats(), b.Stats())
		}
		if dump(a) != dump(b) {
			t.Fatal("received datagrams differ")
		}
	})
}

func TestDifferentSeedsDiffer(t *testing.T) {
	if a, b := script(t, 1), script(t, 2); dump(a) == dump(b) {
		t.Fatal("seeds 1 and 2 gave the same run")
	}
}

func TestLossRate(t *testing.T) {
	testutil.ForSeeds(t, 3, func(t *testing.T, seed int64) {
		w := newWorld(sim.Options{Seed: seed, Loss: 0.2}, 16, 10*time.Millisecond)
		run(t, w, 2*time.Second)
		st := w.Stats()
		if rate := float64(st.Dropped.Loss) / float64(st.Copies); math.Abs(rate-0.2) > 0.02 {
			t.Fatalf("loss rate %.3f, want 0.2 (%+v)", rate, st)
		}
		// Whatever is not delivered or dropped is in flight: one period's
		// worth at most.
		if inFlight := int64(st.Copies) - int64(st.Delivered+st.Dropped.Total()); inFlight < 0 || inFlight > 16*15 {
			t.Fatalf("stats do not add up: %+v", st)
		}
	})
}

func TestSenderLossHitsAllReceivers(t *testing.T) {
	testutil.ForSeeds(t, 3, func(t *testing.T, seed int64) {
		const nodes = 8
		w := newWorld(sim.Options{Seed: seed, SenderLoss: 0.3}, nodes, 10*time.Millisecond)
		run(t, w, 2*time.Second)
		muteAll(t, w, 10*time.Millisecond)
		seen := receipts(w)
		for r, n := range seen {
			if n != nodes-1 {
				t.Fatalf("%+v reached %d of %d receivers", r, n, nodes-1)
			}
		}
		sent := w.Stats().Sent
		if rate := 1 - float64(len(seen))/float64(sent); math.Abs(rate-0.3) > 0.05 {
			t.Fatalf("sender loss rate %.3f of %d, want 0.3", rate, sent)
		}
	})
}

func TestPartitionAndHeal(t *testing.T) {
	w := newWorld(sim.Options{Seed: 1}, 5, 10*time.Millisecond)
	run(t, w, 50*time.Millisecond)
	w.Partition([]uint64{1, 2}, []uint64{3}) // 4 and 5 are unlisted: one group
	cut := w.Now().Add(time.Millisecond)     // later receipts were sent after the cut
	run(t, w, 200*time.Millisecond)
	healed := w.Now()
	w.Heal()
	run(t, w, 200*time.Millisecond)

	group := map[uint64]int{1: 1, 2: 1, 3: 2, 4: 0, 5: 0}
	var across, after int
	for _, id := range w.IDs() {
		for _, r := range toyOf(w, id).got {
			switch {
			case r.at.Before(cut):
			case r.at.Before(healed) && group[r.from] != group[id]:
				across++
			case !r.at.Before(healed) && group[r.from] != group[id]:
				after++
			}
		}
	}
	if across != 0 || after == 0 {
		t.Fatalf("%d datagrams crossed the partition, %d after healing", across, after)
	}
	if got := countFrom(toyOf(w, 4).got, 5, healed); got == 0 {
		t.Fatal("unlisted nodes 4 and 5 were cut off from each other")
	}
}

// countFrom counts receipts from one node before a time.
func countFrom(got []rec, from uint64, before time.Time) int {
	n := 0
	for _, r := range got {
		if r.from == from && r.at.Before(before) {
			n++
		}
	}
	return n
}

func TestLinkLoss(t *testing.T) {
	w := newWorld(sim.Options{Seed: 1}, 3, 10*time.Millisecond)
	w.SetLinkLoss(1, 2, 1)
	run(t, w, 200*time.Millisecond)
	end := w.Now()
	if n := countFrom(toyOf(w, 2).got, 1, end); n != 0 {
		t.Fatalf("n2 got %d datagrams over the blocked link from n1", n)
	}
	if countFrom(toyOf(w, 1).got, 2, end) == 0 || countFrom(toyOf(w, 3).got, 1, end) == 0 {
		t.Fatal("blocking 1->2 blocked other links")
	}
	if got := w.Stats().Dropped.Link; got == 0 {
		t.Fatal("no link drops counted")
	}
}

func TestSetLossMidRun(t *testing.T) {
	w := newWorld(sim.Options{Seed: 1}, 3, 10*time.Millisecond)
	w.SetLoss(1)
	run(t, w, 100*time.Millisecond)
	if d := w.Stats().Delivered; d != 0 {
		t.Fatalf("%d delivered with loss 1", d)
	}
	w.SetLoss(0)
	w.SetSenderLoss(1)
	run(t, w, 100*time.Millisecond)
	w.SetSenderLoss(0)
	run(t, w, 100*time.Millisecond)
	st := w.Stats()
	if st.Delivered == 0 || st.Dropped.Loss == 0 || st.Dropped.SenderLoss == 0 {
		t.Fatalf("stats %+v: want loss, sender loss and deliveries", st)
	}
}

func TestCrashAndRestart(t *testing.T) {
	w := newWorld(sim.Options{Seed: 1}, 3, 10*time.Millisecond)
	run(t, w, 100*time.Millisecond)
	w.Crash(2)
	old, crashed := toyOf(w, 2), w.Now()
	ticks, got := old.ticks, len(old.got)
	run(t, w, 200*time.Millisecond)
	if w.Alive(2) || old.ticks != ticks || len(old.got) != got {
		t.Fatalf("crashed node still runs: alive %v, ticks %d->%d, got %d->%d",
			w.Alive(2), ticks, old.ticks, got, len(old.got))
	}
	if n := countFrom(toyOf(w, 1).got, 2, w.Now()) - countFrom(toyOf(w, 1).got, 2, crashed.Add(time.Millisecond)); n != 0 {
		t.Fatalf("n1 heard %d datagrams from crashed n2", n)
	}

	w.Restart(2)
	run(t, w, 100*time.Millisecond)
	fresh := toyOf(w, 2)
	if fresh == old || fresh.inc != 2 || len(fresh.got) == 0 || fresh.counter == 0 {
		t.Fatalf("restart: incarnation %d, got %d, sent %d", fresh.inc, len(fresh.got), fresh.counter)
	}
	for _, r := range toyOf(w, 1).got {
		if r.from == 2 && r.inc == 2 {
			return
		}
	}
	t.Fatal("n1 never heard incarnation 2 of n2")
}

func TestInFlightAcrossCrash(t *testing.T) {
	w := newWorld(sim.Options{Seed: 1, Delay: 50 * time.Millisecond}, 3, 0)
	send := func(m sim.Machine) { m.(*toy).send() }
	w.Do(2, send)
	w.Crash(2) // its datagram is on the wire already
	w.Do(1, send)
	w.Restart(3) // the new incarnation must not get what was sent to the old
	run(t, w, 100*time.Millisecond)
	if got := toyOf(w, 1).got; len(got) != 1 || got[0].from != 2 {
		t.Fatalf("n1 got %+v, want n2's datagram sent before its crash", got)
	}
	if got := toyOf(w, 3).got; len(got) != 0 {
		t.Fatalf("restarted n3 got %+v, sent to its previous incarnation", got)
	}
	if st := w.Stats(); st.Dropped.Crashed != 2 {
		t.Fatalf("crashed drops %d, want 2 (both copies to n3): %+v", st.Dropped.Crashed, st)
	}
	if w.Do(2, send) {
		t.Fatal("Do ran on a crashed node")
	}
}

func TestStallQueuesThenDelivers(t *testing.T) {
	w := newWorld(sim.Options{Seed: 1}, 3, 10*time.Millisecond)
	run(t, w, 100*time.Millisecond)
	n3 := toyOf(w, 3)
	w.Stall(3, 200*time.Millisecond)
	resume := w.Now().Add(200 * time.Millisecond)
	ticks, got := n3.ticks, len(n3.got)
	run(t, w, 199*time.Millisecond)
	if n3.ticks != ticks || len(n3.got) != got {
		t.Fatalf("stalled node ran: ticks %d->%d, got %d->%d", ticks, n3.ticks, got, len(n3.got))
	}
	run(t, w, time.Millisecond)
	if len(n3.got) < got+30 || !n3.got[got].at.Equal(resume) {
		t.Fatalf("after the stall: got %d->%d, first at %v want %v", got, len(n3.got), n3.got[got].at, resume)
	}
	muteAll(t, w, 10*time.Millisecond)
	for _, from := range []uint64{1, 2} {
		if n, want := countFrom(n3.got, from, w.Now()), int(toyOf(w, from).counter); n != want {
			t.Fatalf("n3 got %d of n%d's %d datagrams", n, from, want)
		}
	}
	assertFIFO(t, n3.got)
}

// assertFIFO fails if some sender's datagrams arrived out of order.
func assertFIFO(t testing.TB, got []rec) {
	t.Helper()
	if n := outOfOrder(got); n != 0 {
		t.Fatalf("%d datagrams arrived out of order", n)
	}
}

func outOfOrder(got []rec) int {
	last, n := map[uint64]uint64{}, 0
	for _, r := range got {
		if r.n < last[r.from] {
			n++
		}
		last[r.from] = max(last[r.from], r.n)
	}
	return n
}

func TestDuplication(t *testing.T) {
	testutil.ForSeeds(t, 3, func(t *testing.T, seed int64) {
		w := newWorld(sim.Options{Seed: seed, Dup: 0.2}, 4, 10*time.Millisecond)
		run(t, w, time.Second)
		muteAll(t, w, 10*time.Millisecond)
		dups := 0
		for _, n := range receipts(w) {
			dups += n - 3
		}
		st := w.Stats()
		if dups == 0 || uint64(dups) != st.Duplicated {
			t.Fatalf("%d duplicates received, %d counted", dups, st.Duplicated)
		}
		if rate := float64(st.Duplicated) / float64(st.Copies); math.Abs(rate-0.2) > 0.05 {
			t.Fatalf("dup rate %.3f, want 0.2", rate)
		}
	})
}

func TestReordering(t *testing.T) {
	testutil.ForSeeds(t, 3, func(t *testing.T, seed int64) {
		fifo := newWorld(sim.Options{Seed: seed}, 4, 10*time.Millisecond)
		run(t, fifo, time.Second)
		assertFIFO(t, toyOf(fifo, 1).got)

		opts := sim.Options{Seed: seed, Reorder: 0.1, ReorderDelay: 25 * time.Millisecond}
		w := newWorld(opts, 4, 10*time.Millisecond)
		run(t, w, time.Second)
		if outOfOrder(toyOf(w, 1).got) == 0 || w.Stats().Reordered == 0 {
			t.Fatalf("no reordering observed: %+v", w.Stats())
		}
	})
}

func TestFailingCheckStopsRun(t *testing.T) {
	const seed = 42
	w := newWorld(sim.Options{Seed: seed}, 3, 10*time.Millisecond)
	w.Check("counter below 5", func(w *sim.World) error {
		if toyOf(w, 1).counter >= 5 {
			return errors.New("n1 counted to 5")
		}
		return nil
	})
	err := w.RunFor(10 * time.Second)
	var re *sim.RunError
	if !errors.As(err, &re) || re.Seed != seed || re.Invariant != "counter below 5" {
		t.Fatalf("RunFor = %v, want a RunError for the check", err)
	}
	for _, want := range []string{"seed 42", `"counter below 5"`, "n1 counted to 5", "n1 send 1 datagrams", "recv 24B from n", " tick"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	stopped := w.Now()
	if w.Step() || w.RunFor(time.Second) != err || !w.Now().Equal(stopped) {
		t.Fatal("the world ran on after a failed check")
	}
	if stopped.Sub(sim.Epoch) > 100*time.Millisecond {
		t.Fatalf("stopped late, at %v", stopped.Sub(sim.Epoch))
	}
}

func TestRunUntil(t *testing.T) {
	w := newWorld(sim.Options{Seed: 1}, 2, 10*time.Millisecond)
	if err := w.RunUntil(func() bool { return toyOf(w, 2).counter >= 3 }, time.Second); err != nil {
		t.Fatal(err)
	}
	if c := toyOf(w, 2).counter; c != 3 {
		t.Fatalf("RunUntil went on to counter %d", c)
	}
	start := w.Now()
	err := w.RunUntil(func() bool { return false }, 50*time.Millisecond)
	if !errors.Is(err, sim.ErrTimeout) || !w.Now().Equal(start.Add(50*time.Millisecond)) {
		t.Fatalf("RunUntil = %v at +%v, want ErrTimeout at +50ms", err, w.Now().Sub(start))
	}
}

// stuck always wants a tick in the past.
type stuck struct{}

func (stuck) Receive(time.Time, netip.AddrPort, []byte) {}
func (stuck) Tick(time.Time)                            {}
func (stuck) NextDeadline() time.Time                   { return sim.Epoch }
func (stuck) TakeOutbox() [][]byte                      { return nil }

func TestLivelock(t *testing.T) {
	w := sim.New(sim.Options{})
	w.Add(1, func(uint64, uint64, int64, netip.AddrPort) sim.Machine { return stuck{} })
	if err := w.RunFor(time.Second); !errors.Is(err, sim.ErrLivelock) {
		t.Fatalf("RunFor = %v, want ErrLivelock", err)
	}
}

func TestTraceFormat(t *testing.T) {
	w := newWorld(sim.Options{Seed: 1, Delay: 300 * time.Microsecond}, 2, 0)
	w.Do(1, func(m sim.Machine) { m.(*toy).send() })
	w.SetLinkLoss(1, 2, 1)
	w.Do(1, func(m sim.Machine) { m.(*toy).send() })
	run(t, w, time.Millisecond)
	want := `t=0.000ms n1 start (incarnation 1)
t=0.000ms n2 start (incarnation 1)
t=0.000ms n1 do
t=0.000ms n1 send 1 datagrams
t=0.000ms link n1->n2 loss 1
t=0.000ms n1 do
t=0.000ms n1 send 1 datagrams
t=0.000ms drop n1->n2 (link)
t=0.300ms n2 recv 24B from n1
`
	if got := w.Trace(); got != want {
		t.Fatalf("trace:\n%s\nwant:\n%s", got, want)
	}
}

func TestIDs(t *testing.T) {
	w := newWorld(sim.Options{}, 3, 0)
	if got := fmt.Sprint(w.IDs()); got != "[1 2 3]" {
		t.Errorf("IDs = %s", got)
	}
}

// TestSpeed guards the budget that makes thousands of seeds affordable:
// 16 nodes for 3 simulated seconds with faults.
func TestSpeed(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing only means something without -race")
	}
	start := time.Now()
	opts := faulty(1)
	w := newWorld(opts, 16, 20*time.Millisecond)
	run(t, w, 3*time.Second)
	if d := time.Since(start); d > 500*time.Millisecond { // about 15 ms today
		t.Fatalf("3 s of 16 nodes took %v (%d copies)", d, w.Stats().Copies)
	}
}

func BenchmarkWorld16Nodes3s(b *testing.B) {
	for i := range b.N {
		w := newWorld(faulty(int64(i)), 16, 20*time.Millisecond)
		run(b, w, 3*time.Second)
	}
}
