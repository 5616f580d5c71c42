package huddle_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
)

// TestLockMutualExclusion has three nodes on a lossy in-process network
// take the group's lock 20 times each, all at once, with and without a
// quorum: an application-side counter of the goroutines inside the
// critical section never exceeds one, and every Lock is granted.
func TestLockMutualExclusion(t *testing.T) {
	for _, quorum := range []int{0, 3} {
		t.Run(fmt.Sprintf("quorum=%d", quorum), func(t *testing.T) { testMutualExclusion(t, quorum) })
	}
}

func testMutualExclusion(t *testing.T, quorum int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	gs, _ := joinAll(t, ctx, huddle.NewNetwork(0.05), 3, "app", func(c *config.Config) { c.Mutex.Quorum = quorum })
	const per = 20
	var inside, most, entries atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, len(gs))
	for i, g := range gs {
		wg.Go(func() {
			for range per {
				if err := g.Lock(ctx); err != nil {
					errs <- fmt.Errorf("node %d: Lock: %w", i+1, err)
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				entries.Add(1)
				time.Sleep(500 * time.Microsecond)
				inside.Add(-1)
				if err := g.Unlock(); err != nil {
					errs <- fmt.Errorf("node %d: Unlock: %w", i+1, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if most.Load() != 1 || entries.Load() != per*int32(len(gs)) {
		t.Errorf("%d entries, up to %d inside at once; want %d, and 1", entries.Load(), most.Load(), per*len(gs))
	}
}

// TestLockErrors: Unlock without the lock, Lock while holding it, a Lock
// whose context ends while another node holds (its request is withdrawn,
// and does not hold up the next node), and Lock after Leave.
func TestLockErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gs, _ := joinAll(t, ctx, huddle.NewNetwork(0), 3, "app")
	if err := gs[0].Unlock(); !errors.Is(err, huddle.ErrNotHeld) {
		t.Errorf("Unlock without the lock: %v, want ErrNotHeld", err)
	}
	if err := gs[0].Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := gs[0].Lock(ctx); !errors.Is(err, huddle.ErrLockBusy) {
		t.Errorf("Lock while holding: %v, want ErrLockBusy", err)
	}
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if ok, err := gs[1].TryLock(short); ok || err != nil {
		t.Errorf("TryLock while node 1 holds: %v, %v; want false, nil", ok, err)
	}
	short, stop = context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if err := gs[1].Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock while node 1 holds: %v, want the deadline", err)
	}
	got := make(chan error, 1)
	before := deferred(t, ctx, gs[0])
	go func() { got <- gs[2].Lock(ctx) }()
	// Unlock only once node 3's request reached node 1, which defers it:
	// the release must answer it.
	for deferred(t, ctx, gs[0]) == before {
		time.Sleep(time.Millisecond)
	}
	if err := gs[0].Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("node 3: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("node 3 never got the lock: node 2's withdrawn request holds it up")
	}
	if err := gs[2].Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := gs[1].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := gs[1].Lock(ctx); !errors.Is(err, huddle.ErrClosed) {
		t.Errorf("Lock after Leave: %v, want ErrClosed", err)
	}
	if err := gs[1].Unlock(); !errors.Is(err, huddle.ErrClosed) {
		t.Errorf("Unlock after Leave: %v, want ErrClosed", err)
	}
}

// The group's lock: Ricart–Agrawala over the view. Lock returns once this
// node holds it; the others wait until Unlock.
func ExampleGroup_Lock() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	net := huddle.NewNetwork(0)
	var groups []*huddle.Group
	for _, id := range []uint64{1, 2} {
		cfg := config.Local()
		cfg.ID = id
		g, err := net.Join(ctx, cfg, zerolog.Nop())
		if err != nil {
			fmt.Println("join:", err)
			return
		}
		defer g.Leave(ctx)
		groups = append(groups, g)
		waitForMembers(g.Service("app"), int(id))
	}
	waitForMembers(groups[0].Service("app"), 2)
	if err := groups[0].Lock(ctx); err != nil {
		fmt.Println("lock:", err)
		return
	}
	fmt.Println("node 1 holds the lock")
	wait, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	ok, _ := groups[1].TryLock(wait)
	fmt.Println("node 2 got it meanwhile:", ok)
	groups[0].Unlock()
	if err := groups[1].Lock(ctx); err == nil {
		fmt.Println("node 2 holds the lock")
	}
	// Output:
	// node 1 holds the lock
	// node 2 got it meanwhile: false
	// node 2 holds the lock
}

// TestLockLostWithTheQuorum: with mutex.quorum 3, a holder left alone
// loses the lock, and Unlock says so.
func TestLockLostWithTheQuorum(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gs, ss := joinAll(t, ctx, huddle.NewNetwork(0), 3, "app", func(c *config.Config) { c.Mutex.Quorum = 3 })
	if err := gs[0].Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, g := range gs[1:] {
		if err := g.Leave(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitForMembers(ss[0], 1)
	if err := gs[0].Unlock(); !errors.Is(err, huddle.ErrLockLost) {
		t.Errorf("Unlock alone, below the quorum: %v, want ErrLockLost", err)
	}
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if ok, err := gs[0].TryLock(short); ok || err != nil {
		t.Errorf("TryLock alone, below the quorum: %v, %v; want false, nil", ok, err)
	}
}

// deferred returns the requests g's node deferred so far (lock_deferred).
func deferred(t *testing.T, ctx context.Context, g *huddle.Group) uint64 {
	t.Helper()
	st, err := g.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Counters {
		if c.Name == "lock_deferred" {
			return c.Value.(uint64)
		}
	}
	t.Fatal("no counter lock_deferred")
	return 0
}
