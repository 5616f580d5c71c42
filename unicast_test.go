package huddle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// unicastConfig is node id's configuration in a unicast group on this
// host's loopback: each node listens on 127.0.0.<id> and lists the
// others' addresses (and its own, which it skips).
func unicastConfig(id, n int) config.Config {
	cfg := config.Local()
	cfg.ID = uint64(id)
	cfg.Iface = "lo"
	cfg.Transport = "unicast"
	cfg.Listen = fmt.Sprintf("127.0.0.%d:7468", id)
	for p := 1; p <= n; p++ {
		cfg.Peers = append(cfg.Peers, fmt.Sprintf("127.0.0.%d:7468", p))
	}
	return cfg
}

// TestUnicastGroup runs three nodes with the unicast transport on real
// sockets (in a private network namespace, on loopback, where no
// multicast is joined): they find each other from the peers list, agree
// on one total order, and a node that leaves and comes back is excluded
// and merged back.
func TestUnicastGroup(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 3
	start := func(id int) (*huddle.Group, *huddle.Service) {
		g, err := huddle.Start(ctx, unicastConfig(id, n), zerolog.Nop())
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		t.Cleanup(func() { g.Leave(context.Background()) })
		return g, g.Service("app")
	}
	var gs []*huddle.Group
	var ss []*huddle.Service
	for id := 1; id <= n; id++ {
		g, s := start(id)
		gs, ss = append(gs, g), append(ss, s)
	}
	for _, s := range ss {
		waitForMembers(s, n)
	}
	st, err := gs[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := st.Counters.Get("unicast_dests"); v != uint64(n-1) {
		t.Errorf("node 1 sends to %v destinations, want %d", v, n-1)
	}
	const per = 50
	for i := range per {
		for k, s := range ss {
			if _, err := s.Multicast(ctx, []byte(fmt.Sprintf("%d from %d", i, k+1)), huddle.Total); err != nil {
				t.Fatal(err)
			}
		}
	}
	var first string
	for k, s := range ss {
		order := ""
		for got := 0; got < n*per; {
			ev := <-s.Events()
			if ev.Kind != huddle.Delivered {
				t.Fatalf("node %d: view change %v during the run", k+1, ev.View)
			}
			order += fmt.Sprintf("%d:%s ", ev.Message.GSeq, ev.Message.Payload)
			got++
		}
		if k == 0 {
			first = order
		} else if order != first {
			t.Fatalf("node %d delivered another total order than node 1:\n%s\n%s", k+1, first, order)
		}
	}

	// Node 3 leaves: the others install a view of two; it comes back
	// (a new incarnation, the same address) and is admitted again.
	gs[2].Leave(ctx)
	waitForMembers(ss[0], n-1)
	_, s3 := start(3)
	for _, s := range []*huddle.Service{ss[0], ss[1], s3} {
		waitForMembers(s, n)
	}
}
