package huddle_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
)

// joinAll joins nodes 1..n on net, their configuration changed by edit,
// and waits until every one of them has the view of all n on service
// name.
func joinAll(t *testing.T, ctx context.Context, net *huddle.Network, n int, name string, edit ...func(*config.Config)) ([]*huddle.Group, []*huddle.Service) {
	t.Helper()
	var gs []*huddle.Group
	var ss []*huddle.Service
	for id := 1; id <= n; id++ {
		cfg := config.Local()
		cfg.ID = uint64(id)
		for _, e := range edit {
			e(&cfg)
		}
		g, err := net.Join(ctx, cfg, zerolog.Nop())
		if err != nil {
			t.Fatalf("node %d: join: %v", id, err)
		}
		t.Cleanup(func() { g.Leave(context.Background()) })
		gs = append(gs, g)
		ss = append(ss, g.Service(name))
	}
	for _, s := range ss {
		waitForMembers(s, n)
	}
	return gs, ss
}

// TestServicesAndOrders has three nodes on a lossy in-process network
// multicast in every order on two services: each service delivers only
// its own messages, every node delivers all of them, and the total and
// safe ones in one order everywhere.
func TestServicesAndOrders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gs, apps := joinAll(t, ctx, huddle.NewNetwork(0.05), 3, "app")
	var others []*huddle.Service
	for _, g := range gs {
		s := g.Service("other")
		s.Events() // read it from now on: a service nobody reads gets nothing
		others = append(others, s)
	}
	const per = 30
	orders := []huddle.Order{huddle.FIFO, huddle.Total, huddle.Safe}
	for i := range per {
		for n, s := range apps {
			if _, err := s.Multicast(ctx, []byte(fmt.Sprintf("app %d from %d", i, n+1)), orders[(i+n)%3]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := others[0].Multicast(ctx, []byte("other"), huddle.Total); err != nil {
			t.Fatal(err)
		}
	}
	var sequences []string
	for n, s := range apps {
		got, ordered := 0, ""
		for got < 3*per {
			ev := <-s.Events()
			if ev.Kind != huddle.Delivered {
				t.Fatalf("node %d: view change %v during the run", n+1, ev.View)
			}
			m := ev.Message
			if !bytes.HasPrefix(m.Payload, []byte("app ")) {
				t.Fatalf("node %d: service app delivered %q", n+1, m.Payload)
			}
			if (m.GSeq != 0) != (m.Order != huddle.FIFO) {
				t.Fatalf("node %d: %v message with gseq %d", n+1, m.Order, m.GSeq)
			}
			if m.Order != huddle.FIFO {
				ordered += fmt.Sprintf("%d:%s ", m.GSeq, m.Payload)
			}
			got++
		}
		sequences = append(sequences, ordered)
	}
	for n := 1; n < len(sequences); n++ {
		if sequences[n] != sequences[0] {
			t.Errorf("total order differs between node 1 and node %d:\n%s\n%s", n+1, sequences[0], sequences[n])
		}
	}
	for n, s := range others {
		for got := 0; got < per; {
			ev := <-s.Events()
			if ev.Kind == huddle.ViewChanged {
				continue // the view when it was opened
			}
			if string(ev.Message.Payload) != "other" {
				t.Fatalf("node %d: service other got %+v", n+1, ev)
			}
			got++
		}
	}
}

func TestGroupErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	net := huddle.NewNetwork(0)
	gs, ss := joinAll(t, ctx, net, 2, "s")
	big := make([]byte, config.Local().MaxMessageSize+1)
	if _, err := ss[0].Multicast(ctx, big, huddle.FIFO); !errors.Is(err, huddle.ErrTooLarge) {
		t.Errorf("oversized payload: %v, want ErrTooLarge", err)
	}
	for _, name := range []string{"election", "mutex"} {
		g := gs[0]
		if _, err := g.Service(name).Multicast(ctx, []byte("x"), huddle.FIFO); !errors.Is(err, huddle.ErrReserved) {
			t.Errorf("a multicast on the node's own service %q: %v, want ErrReserved", name, err)
		}
		if _, _, err := g.Service(name).MulticastBatch(ctx, [][]byte{[]byte("x")}, huddle.FIFO); !errors.Is(err, huddle.ErrReserved) {
			t.Errorf("a batch on %q: %v, want ErrReserved", name, err)
		}
	}
	if _, err := ss[0].Multicast(ctx, []byte("x"), huddle.Order(7)); err == nil {
		t.Error("order 7 accepted")
	}
	if n := gs[1].Undeliverable(); n != 0 {
		t.Errorf("undeliverable %d before any traffic", n)
	}
	if _, err := gs[0].Service("unopened").Multicast(ctx, []byte("x"), huddle.FIFO); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for gs[1].Undeliverable() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if gs[1].Undeliverable() != 1 {
		t.Errorf("undeliverable = %d, want 1 (a message for a service node 2 never opened)", gs[1].Undeliverable())
	}
	if err := gs[0].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ss[0].Multicast(ctx, []byte("x"), huddle.FIFO); !errors.Is(err, huddle.ErrClosed) {
		t.Errorf("multicast after Leave: %v, want ErrClosed", err)
	}
	for range ss[0].Events() { // closed after Leave
	}
	if !errors.Is(gs[0].Err(), huddle.ErrClosed) {
		t.Errorf("Err() after Leave = %v", gs[0].Err())
	}
	// The survivor sees the leaver go.
	for ev := range ss[1].Events() {
		if ev.Kind == huddle.ViewChanged && len(ev.View.Members) == 1 {
			break
		}
	}
	// A second node with a live node's ID is refused.
	cfg := config.Local()
	cfg.ID = 2
	if _, err := net.Join(ctx, cfg, zerolog.Nop()); !errors.Is(err, huddle.ErrRefused) {
		t.Errorf("join with a taken ID: %v, want ErrRefused", err)
	}
}

// TestSlowReaderStaysBounded has a node that reads none of its events:
// the senders' Multicast calls wait (backpressure) or the reader is
// excluded, but nothing queues without bound, and the senders' contexts
// end their waits.
func TestSlowReaderStaysBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, ss := joinAll(t, ctx, huddle.NewNetwork(0), 2, "s")
	payload := make([]byte, 1000)
	short, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	sent := 0
	for ; sent < 1<<20; sent++ {
		if _, err := ss[0].Multicast(short, payload, huddle.FIFO); err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("after %d messages: %v", sent, err)
			}
			break
		}
	}
	if sent >= 1<<20 {
		t.Fatalf("sent %d messages to a member that reads nothing without waiting", sent)
	}
	t.Logf("%d messages before the sender waited out its context", sent)
}
