package workload_test

import (
	"context"
	"encoding/binary"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/workload"
	"github.com/huddle-lan/huddle/config"
)

// TestWorkloads runs the three workloads of `huddle run` as clients of
// three nodes on a lossy in-process network, in virtual time: node 1's
// 200 messages at 500/s in total order reach the others in order, with
// the numbers the traffic gives them; node 1 starts exactly the 3
// elections of election.count, one every interval; and every node takes
// the lock again and again, never two at once.
func TestWorkloads(t *testing.T) {
	workload.NoPacer() // virtual time
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		net := huddle.NewNetwork(0.05)
		var gs []*huddle.Group
		var reads []<-chan huddle.Event
		var cfgs []config.Config
		for id := uint64(1); id <= 3; id++ {
			cfg := config.Local()
			cfg.ID = id
			cfg.Mutex.Think, cfg.Mutex.Hold = "50ms-150ms", config.Duration(20*time.Millisecond)
			if id == 1 {
				cfg.SendRate, cfg.SendCount, cfg.SendSize, cfg.SendOrder = 500, 200, 100, "total"
				cfg.Election.Every, cfg.Election.Count = config.Duration(300*time.Millisecond), 3
			}
			g, err := net.Join(ctx, cfg, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			reads = append(reads, g.Service("").Events())
			gs, cfgs = append(gs, g), append(cfgs, cfg)
		}
		// The receivers first: a message reaches the members of the
		// view it is sent in.
		for _, r := range reads {
			for ev := range r {
				if ev.Kind == huddle.ViewChanged && len(ev.View.Members) == 3 {
					break
				}
			}
		}
		start := time.Now()
		for i, g := range gs {
			go workload.Run(ctx, g, cfgs[i], start)
		}
		got := make([][]uint64, 3)
		for i, r := range reads {
			go func() {
				for ev := range r {
					if ev.Kind == huddle.Delivered && ev.Message.From.ID == 1 {
						got[i] = append(got[i], binary.BigEndian.Uint64(ev.Message.Payload))
					}
				}
			}()
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		for i, g := range gs {
			st, err := g.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := st.Counters.Get("lock_entries")
			started, _ := st.Counters.Get("elections_started")
			if entries.(uint64) < 3 {
				t.Errorf("node %d entered the lock %v times in 3 s, want several", i+1, entries)
			}
			if i == 0 && started.(uint64) < 3 {
				t.Errorf("node 1 started %v elections, want the 3 of election.count (and any at start-up)", started)
			}
		}
		cancel()
		for _, g := range gs {
			<-g.Done()
		}
		synctest.Wait()
		for i := 1; i < 3; i++ {
			if len(got[i]) != 200 {
				t.Fatalf("node %d delivered %d of node 1's 200 messages", i+1, len(got[i]))
			}
			for n, v := range got[i] {
				if v != uint64(n+1) {
					t.Fatalf("node %d delivered message %d as number %d: not in order, or not the traffic's", i+1, n+1, v)
				}
			}
		}
	})
}
