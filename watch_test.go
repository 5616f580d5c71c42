package huddle_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
)

// TestProbe has a node ask its group over a lossy network: every member
// answers with its own ID, its incarnation in the view, the asker's view
// and its role (one coordinator, the view's first); a member that hears
// nothing is reported silent while the others answer.
func TestProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gs, ss := joinAll(t, ctx, huddle.NewNetwork(0.05), 3, "app")
	for i := range 20 {
		if _, err := ss[i%3].Multicast(ctx, []byte("x"), huddle.Total); err != nil {
			t.Fatal(err)
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	res, err := gs[1].Probe(pctx)
	pcancel()
	if err != nil {
		t.Fatal(err)
	}
	view := gs[1].View()
	if res.View != view.ID.String() || res.Asker != 2 || len(res.Members) != 3 || len(res.Silent()) != 0 {
		t.Fatalf("probe of view %v: %+v", view, res)
	}
	for i, m := range res.Members {
		info := m.Info
		if !m.Answered || info == nil || info.ID != m.ID || m.ID != view.Members[i].ID || info.Incarnation != view.Members[i].Inc ||
			info.View != res.View || info.State != huddle.StateMember || info.Delivered == 0 || info.Lock != "released" {
			t.Errorf("row %d: %+v (info %+v), view %v", i, m, info, view)
			continue
		}
		if coord := info.Role == "coordinator" || info.Role == "coordinator+leader"; coord != (i == 0) {
			t.Errorf("node %d has role %q at place %d of the view", m.ID, info.Role, i)
		}
	}
	// Node 3 drops all it receives: it never hears the question.
	if _, err := gs[2].SetDrop(ctx, huddle.Drop{Rate: 1}); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel = context.WithTimeout(ctx, 100*time.Millisecond)
	res, err = gs[0].Probe(pctx)
	pcancel()
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Silent(); len(s) != 1 || s[0] != 3 || len(res.Members) != 3 {
		t.Fatalf("with node 3 deaf: silent %v in %+v", s, res)
	}
	st, err := gs[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := st.Counters.Get("probe_bad"); v != uint64(0) {
		t.Errorf("probe_bad %v on the asker, want 0", v)
	}
}

// TestWatch follows one node's watcher through a delivery, an election,
// the lock and a join, in the order they happened; a watcher nobody reads
// drops and counts what does not fit, without slowing the node; leaving
// closes every watcher.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	net := huddle.NewNetwork(0)
	gs, _ := joinAll(t, ctx, net, 2, "app")
	w := gs[0].Watch("chat")
	unread := gs[0].Watch("bulk")
	next := func(event string) huddle.WatchEvent {
		t.Helper()
		for {
			select {
			case ev := <-w.C():
				if ev.Snapshot { // TestWatchBeginsWithTheState
					continue
				}
				if ev.Event == event {
					return ev
				}
				if ev.Event != logs.LeaderChanged && ev.Event != logs.ViewInstalled && ev.Event != logs.MemberSuspected {
					t.Fatalf("watched %s (%+v) while waiting for %s", ev.Event, ev, event)
				}
			case <-ctx.Done():
				t.Fatalf("no %s watched", event)
			}
		}
	}
	if _, err := gs[1].Service("chat").Multicast(ctx, []byte("hi"), huddle.Total); err != nil {
		t.Fatal(err)
	}
	if ev := next(logs.Deliver); ev.Service != "chat" || ev.From != 2 || ev.Order != "total" || ev.GSeq == 0 || string(ev.Payload) != "hi" {
		t.Errorf("deliver %+v", ev)
	}
	if _, err := gs[0].Elect(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := next(logs.LeaderChanged); ev.Leader != 2 {
		t.Errorf("leader.changed %+v, want leader 2 (the highest ID)", ev)
	}
	if err := gs[0].Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := gs[0].Unlock(); err != nil {
		t.Fatal(err)
	}
	next(logs.MutexRequested)
	if ev := next(logs.MutexAcquired); ev.Node != 1 {
		t.Errorf("mutex.acquired %+v", ev)
	}
	if ev := next(logs.MutexReleased); ev.Node != 1 || ev.Lost {
		t.Errorf("mutex.released %+v", ev)
	}
	cfg := config.Local()
	cfg.ID = 3
	third, err := net.Join(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Leave(context.Background())
	for {
		ev := next(logs.ViewInstalled)
		if len(ev.Members) == 3 {
			if len(ev.Joined) != 1 || ev.Joined[0] != 3 {
				t.Errorf("view.installed %+v, want node 3 joined", ev)
			}
			break
		}
	}

	// 3000 messages on the service the unread watcher follows: it keeps
	// WatchBuffer of them and counts the rest, and the node delivers all
	// of them to its reader meanwhile.
	bulk := gs[0].Service("bulk").Events()
	const many = 3000
	go func() {
		for range many {
			if _, err := gs[1].Service("bulk").Multicast(ctx, []byte("b"), huddle.FIFO); err != nil {
				return
			}
		}
	}()
	for got := 0; got < many; {
		select {
		case ev := <-bulk:
			if ev.Kind == huddle.Delivered {
				got++
			}
		case <-ctx.Done():
			t.Fatalf("the reader got %d of %d messages while a watcher was not read", got, many)
		}
	}
	if n, d := len(unread.C()), unread.Dropped(); n != huddle.WatchBuffer || uint64(n)+d < many {
		t.Errorf("the unread watcher holds %d and dropped %d, want %d held and at least %d in all", n, d, huddle.WatchBuffer, many)
	}
	w.Close()
	if _, ok := <-drain(w.C()); ok {
		t.Error("a closed watcher's channel is open")
	}
	gs[0].Leave(ctx)
	if _, ok := <-drain(unread.C()); ok {
		t.Error("the node left, and its watcher's channel is open")
	}
	if _, ok := <-gs[0].Watch().C(); ok {
		t.Error("a watcher of a node that left is open")
	}
}

// TestWatchBeginsWithTheState: a watcher's first events, marked as a
// snapshot, are the node's view, its leader and its part in the lock as
// the watch begins; the changes follow, unmarked, none missed.
func TestWatchBeginsWithTheState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gs, _ := joinAll(t, ctx, huddle.NewNetwork(0), 2, "app")
	for {
		if leader, _, err := gs[0].Leader(ctx); err != nil || leader == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := gs[0].Lock(ctx); err != nil {
		t.Fatal(err)
	}
	view := gs[0].View()
	next := func(w *huddle.Watcher) huddle.WatchEvent {
		t.Helper()
		select {
		case ev := <-w.C():
			return ev
		case <-ctx.Done():
			t.Fatal("no event")
		}
		return huddle.WatchEvent{}
	}
	holder, other := gs[0].Watch(), gs[1].Watch()
	defer holder.Close()
	defer other.Close()
	_, round, _ := gs[0].Leader(ctx)
	primary := true
	for _, want := range []huddle.WatchEvent{
		{Event: logs.ViewInstalled, View: view.ID.String(), Members: view.IDs(), Primary: &primary},
		{Event: logs.LeaderChanged, View: view.ID.String(), Leader: 2, Round: round},
		{Event: logs.MutexAcquired, View: view.ID.String(), Node: 1},
	} {
		ev := next(holder)
		want.Time, want.Snapshot = ev.Time, true
		if !reflect.DeepEqual(ev, want) {
			t.Errorf("watching node 1: %+v, want %+v", ev, want)
		}
	}
	for _, want := range []string{logs.ViewInstalled, logs.LeaderChanged, logs.MutexReleased} {
		if ev := next(other); ev.Event != want || !ev.Snapshot || (want == logs.MutexReleased && ev.Node != 2) {
			t.Errorf("watching node 2: %+v, want a snapshot's %s", ev, want)
		}
	}
	if err := gs[0].Unlock(); err != nil {
		t.Fatal(err)
	}
	if ev := next(holder); ev.Event != logs.MutexReleased || ev.Snapshot || ev.Node != 1 {
		t.Errorf("after the unlock: %+v, want mutex.released, a change", ev)
	}
}

// drain reads c until it is closed, and returns it.
func drain(c <-chan huddle.WatchEvent) <-chan huddle.WatchEvent {
	for range c {
	}
	return c
}
