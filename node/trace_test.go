package node

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/internal/logs"
)

// TestTraceLog: at log level trace every message of the election and the
// lock is logged where it is sent and where it is received, with sender,
// receiver and content, so that each node's sent lines match its
// counters and every message sent is received (the network here loses
// nothing); at debug the effective configuration is logged at start,
// without the group key.
func TestTraceLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bufs := map[uint64]func() []logs.Event{}
		nodes, ctx, stop := runNodes(3, func(id uint64) Options {
			c := testConfig(id)
			c.Log.Level = "trace"
			c.Security.Key = "a passphrase of sixteen bytes or more"
			keys, err := c.Security.Keys()
			if err != nil {
				t.Fatal(err)
			}
			log := &bytes.Buffer{}
			bufs[id] = func() []logs.Event { return events(t, log) }
			return Options{Config: c, Keys: keys, Log: zerolog.New(log).Level(zerolog.TraceLevel).With().Uint64(logs.NodeKey, id).Logger()}
		})
		time.Sleep(time.Second) // one view of the three; its election
		n := nodes[1]
		if _, err := n.Elect(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := n.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := n.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		counters := map[uint64]Counters{}
		for i, node := range nodes {
			st, err := node.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			counters[uint64(i+1)] = st.Counters
		}
		stop()
		for _, svc := range []struct{ event, counter, kind string }{
			{logs.ElectionMessage, "election_msgs_sent", "ELECTION"}, {logs.MutexMessage, "lock_msgs_sent", "REQUEST"}} {
			sent, received := 0, 0
			for id := uint64(1); id <= 3; id++ {
				mine := 0
				for _, e := range find(bufs[id](), svc.event) {
					content := str(e, logs.ContentKey)
					if e.Level != "trace" || !strings.Contains(content, " ") || strings.HasPrefix(content, "malformed") {
						t.Errorf("node %d: %s line %+v", id, svc.event, e)
					}
					switch str(e, logs.DirKey) {
					case "sent":
						if num(e, logs.FromKey) != id {
							t.Errorf("node %d logged a message sent from %d", id, num(e, logs.FromKey))
						}
						// The rounds' accounting (TALLY, RESULT) is traced
						// but is in no election count.
						accounting := strings.HasPrefix(content, "TALLY") || strings.HasPrefix(content, "RESULT")
						switch {
						case accounting && num(e, logs.ToKey) == 0:
							sent += 2
						case accounting:
							sent++
						case num(e, logs.ToKey) == 0:
							sent += 2 // to every other member
							mine += 2 // counted once per member, as the counter does
						default:
							sent++
							mine++
						}
					case "received":
						if num(e, logs.ToKey) != id {
							t.Errorf("node %d logged a message received for %d", id, num(e, logs.ToKey))
						}
						received++
					default:
						t.Errorf("node %d: %s without dir: %+v", id, svc.event, e)
					}
				}
				if v, _ := counters[id].Get(svc.counter); v != uint64(mine) {
					t.Errorf("node %d: %d %s sent in the trace, %s %v", id, mine, svc.event, svc.counter, v)
				}
			}
			if sent == 0 || sent != received {
				t.Errorf("%s: %d sent, %d received", svc.event, sent, received)
			}
		}
		for id := uint64(1); id <= 3; id++ {
			cfgs := find(bufs[id](), logs.NodeConfig)
			if len(cfgs) != 1 || cfgs[0].Level != "debug" {
				t.Fatalf("node %d: %d node.config lines", id, len(cfgs))
			}
			raw := cfgs[0].String()
			for _, want := range []string{`"heartbeat":"20ms"`, `"election.ring_order":"ascending"`, `"security.key":"(set)"`, `"log.level":"trace"`} {
				if !strings.Contains(raw, want) {
					t.Errorf("node %d: node.config has no %s: %s", id, want, raw)
				}
			}
			if strings.Contains(raw, "passphrase") {
				t.Errorf("node %d: node.config shows the key: %s", id, raw)
			}
		}
	})
}
