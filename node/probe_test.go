package node

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/huddle-lan/huddle/internal/wire"
)

// TestProbeInput: a member's probe messages are input like any other. A
// malformed one, one too long, an answer nobody asked for and a second
// answer are dropped and counted (probe_bad), never believed; a question
// gets exactly one answer, addressed to the asker; a probe counts what it
// got and stops waiting at its context's end; more than maxProbes at once
// are refused.
func TestProbeInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, ctx, stop := runNodes(3, nil)
		time.Sleep(time.Second) // one view of the three
		counter := func(n *Node, name string) uint64 {
			t.Helper()
			st, err := n.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := st.Counters.Get(name)
			return v.(uint64)
		}
		res, err := nodes[0].Probe(ctx)
		if err != nil || len(res.Members) != 3 || len(res.Silent()) != 0 {
			t.Fatalf("probe: %+v, %v", res, err)
		}
		for _, n := range nodes[1:] {
			if got := counter(n, "probes_answered"); got != 1 {
				t.Errorf("node %d answered %d probes, want 1", n.o.Config.ID, got)
			}
		}

		// Node 3, a member, sends node 1 what no honest member sends.
		answer, _ := msgpack.Marshal(probeMsg{Op: probeAnswer, ID: 99, Info: &ProbeInfo{ID: 3}})
		unknown, _ := msgpack.Marshal(probeMsg{Op: 7, ID: 1})
		for _, p := range [][]byte{[]byte("\xc1 not msgpack"), make([]byte, maxProbePayload+1), answer, unknown} {
			if _, err := nodes[2].Send(ctx, probeService, p, wire.FIFO, 1); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
		if got := counter(nodes[0], "probe_bad"); got != 4 {
			t.Errorf("probe_bad %d at node 1, want 4", got)
		}

		// A probe that ends before node 3 can answer: node 3's loop is
		// busy in a call that waits for the probe to end.
		hold := make(chan struct{})
		go nodes[2].Do(ctx, func(*Core) { <-hold })
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		res, err = nodes[0].Probe(pctx)
		pcancel()
		close(hold)
		if err != nil || len(res.Silent()) != 1 || res.Silent()[0] != 3 {
			t.Errorf("probe with node 3 busy: %+v, %v", res, err)
		}
		time.Sleep(100 * time.Millisecond) // its late answer arrives: unasked now
		if got := counter(nodes[0], "probe_bad"); got != 5 {
			t.Errorf("probe_bad %d at node 1 after a late answer, want 5", got)
		}

		// maxProbes waiting at once, then one more.
		hold = make(chan struct{})
		for _, n := range nodes[1:] {
			go n.Do(ctx, func(*Core) { <-hold })
		}
		waiting := make(chan error, maxProbes)
		pctx, pcancel = context.WithCancel(ctx)
		for range maxProbes {
			go func() { _, err := nodes[0].Probe(pctx); waiting <- err }()
		}
		synctest.Wait()
		if _, err := nodes[0].Probe(ctx); err != ErrProbeBusy {
			t.Errorf("probe %d: %v, want ErrProbeBusy", maxProbes+1, err)
		}
		pcancel()
		close(hold)
		for range maxProbes {
			if err := <-waiting; err != nil {
				t.Errorf("a probe ended by its context: %v", err)
			}
		}
		stop()
	})
}
