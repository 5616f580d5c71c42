package node

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
)

// TestSequencerCrash: four members multicast total and safe messages
// without pause at 10 % loss, and the coordinator (the sequencer) crashes
// among them. The ledger checks total order and safe delivery after every
// step; the survivors agree on a view and deliver everything they send in
// it. Across the seeds, the flush must have ordered messages that the
// sequencer never recorded, or the test would not exercise that path.
func TestSequencerCrash(t *testing.T) {
	seeds := testutil.Seeds(t, 50)
	var unrecorded uint64
	testutil.ForSeeds(t, len(seeds), func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: 0.1, Jitter: 100 * time.Microsecond})
		l := newVSLedger()
		w.Check("view synchrony", l.check)
		addMembers(w, ids(4)...)
		settleViews(t, w, 3*time.Second, ids(4))
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
		settleViews(t, w, 3*time.Second, rest)
		for _, id := range rest {
			unrecorded += core(w, id).MembershipStats().Unrecorded
		}
	})
	t.Logf("messages ordered by the flush, without a record, summed over survivors and seeds: %d", unrecorded)
	if len(seeds) > 1 && unrecorded == 0 {
		t.Error("no survivor ever ordered a message without a record: the crash never caught the sequencer with work")
	}
}
