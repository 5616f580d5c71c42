package node

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/mutex"
)

// MutexService is the group service the lock's messages travel on.
const MutexService = "mutex"

var mutexService = []byte(MutexService)

// Errors of Lock and Unlock.
var (
	ErrLockBusy = errors.New("node: this node already wants or holds the lock")
	ErrNotHeld  = errors.New("node: this node neither holds nor wants the lock")
	// ErrLockLost: the lock was taken away while this node held it, in
	// quorum mode (its view lost the majority, or the lease ran out), or
	// because this node left the view. Another node may have held it
	// since.
	ErrLockLost = errors.New("node: the lock was taken away while this node held it")
)

// lockPart is the Ricart–Agrawala lock's part of a Core.
type lockPart struct {
	m          *mutex.Machine
	queue      []mutex.Message
	events     []mutex.Event
	view, prev wire.ViewID // the installed view, and the one before it (zero: none)
	dropped    uint64
}

// newLockPart makes the lock of node self. With a quorum it is leased on
// the suspect timeout: a member whose datagrams stopped carrying this
// node's view (the installed one or the one before) for that long no
// longer counts toward the holder's majority.
func (c *Core) newLockPart(quorum int, suspect time.Duration) {
	c.mu.m = mutex.New(mutex.Options{Self: c.opt.ID, Quorum: quorum, Lease: suspect, Heard: c.heardInView})
}

// heardInView is when this node last heard member id in its view, or in
// the view before it (the lock's Options.Heard).
func (c *Core) heardInView(id uint64) time.Time {
	v, at := c.m.Heard(id)
	if v == (wire.ViewID{}) || v != c.mu.view && v != c.mu.prev {
		return time.Time{}
	}
	return at
}

// setView tells the lock of the view installed now (syncView calls it).
func (l *lockPart) setView(now time.Time, id wire.ViewID, members []uint64) {
	l.prev, l.view = l.view, id
	l.queue = l.queue[:0] // the lock sends a pending request again
	l.m.SetView(now, id.String(), members)
}

// lockStep sends what the lock machine wants sent and takes its events.
//
// The lock must know the installed view first: Receive and Tick sync it
// (electionStep), and so do LockRequest and LockRelease.
func (c *Core) lockStep() {
	l := &c.mu
	for _, msg := range l.m.TakeOutput() {
		if len(l.queue) >= maxElectionQueue {
			l.dropped++
			continue
		}
		l.queue = append(l.queue, msg)
	}
	l.events = append(l.events, l.m.TakeEvents()...)
	n, dropped := c.sendAddressed(mutexService, len(l.queue), func(i int) (uint64, []byte) { return l.queue[i].To, l.queue[i].Payload })
	l.dropped += dropped
	l.queue = append(l.queue[:0], l.queue[n:]...)
}

// LockRequest asks for the lock now; false when this node already wants
// or holds it.
func (c *Core) LockRequest(now time.Time) bool {
	if c.leaving {
		return false
	}
	c.now = now
	c.syncView(now)
	ok := c.mu.m.Request(now)
	c.lockStep()
	return ok
}

// LockRelease releases the lock, or withdraws the request for it; false
// when this node neither holds nor wants it.
func (c *Core) LockRelease(now time.Time) bool {
	c.now = now
	c.syncView(now)
	ok := c.mu.m.Release(now)
	c.lockStep()
	return ok
}

// LockHeldView is the view this node acquired the lock in, "" unless it
// holds it.
func (c *Core) LockHeldView() string { return c.mu.m.HeldView() }

// LockState is this node's relation to the lock.
func (c *Core) LockState() mutex.State { return c.mu.m.State() }

// TakeMutexEvents returns the lock's events since the last call.
func (c *Core) TakeMutexEvents() []mutex.Event {
	ev := c.mu.events
	c.mu.events = nil
	return ev
}

// MutexStats returns the lock's counters and the messages the node
// dropped for it.
func (c *Core) MutexStats() (mutex.Stats, uint64) { return c.mu.m.Stats(), c.mu.dropped }

// Lock acquires the group's lock (Ricart–Agrawala): it returns once this
// node holds it, or with ctx's error, the request withdrawn (the replies
// this node deferred meanwhile are sent all the same). ErrLockBusy when
// this node already wants or holds it.
func (r *Node) Lock(ctx context.Context) error {
	ok, err := r.TryLock(ctx)
	if err == nil && !ok {
		err = ctx.Err()
	}
	return err
}

// TryLock is Lock that reports a ctx ending before the lock was granted
// as false, not as an error.
func (r *Node) TryLock(ctx context.Context) (bool, error) {
	got := make(chan struct{}, 1)
	var ok, leaving bool
	if err := r.Do(ctx, func(c *Core) {
		if leaving = c.leaving; leaving {
			return
		}
		if ok = c.LockRequest(time.Now()); ok {
			r.lockWaiter, r.lockLost = got, false
		}
	}); err != nil {
		return false, err
	}
	switch {
	case leaving:
		return false, membership.ErrLeft
	case !ok:
		return false, ErrLockBusy
	}
	select {
	case <-got:
		return true, nil
	case <-r.stopped:
		return false, ErrStopped
	case <-ctx.Done():
		held := false
		err := r.Do(context.Background(), func(c *Core) {
			if r.lockWaiter == got {
				r.lockWaiter = nil
			}
			if held = c.LockState() == mutex.Held && len(got) > 0; !held {
				c.LockRelease(time.Now()) // withdraw
			}
		})
		if held {
			return true, nil // granted as ctx ended: it holds the lock
		}
		return false, err
	}
}

// Unlock releases the lock this node holds: ErrLockLost if it was taken
// away since it was granted, ErrNotHeld if this node neither holds nor
// wants it.
func (r *Node) Unlock(ctx context.Context) error {
	var ok, lost bool
	if err := r.Do(ctx, func(c *Core) {
		ok = c.LockRelease(time.Now())
		lost, r.lockLost = r.lockLost && !ok, false
	}); err != nil {
		return err
	}
	switch {
	case lost:
		return ErrLockLost
	case !ok:
		return ErrNotHeld
	}
	return nil
}

// handleMutex logs the lock's events and wakes a Lock call waiting for it.
func (r *Node) handleMutex(ev mutex.Event) {
	e := r.log.Info().Uint64("clock", ev.Clock).Str("view", ev.View)
	switch ev.Kind {
	case mutex.Requested:
		e.Str("event", "mutex.requested").Msg("lock requested")
	case mutex.Acquired:
		e.Str("event", "mutex.acquired").Float64("wait_ms", ms(ev.Wait)).Int("messages", ev.Messages).
			Int("datagrams", ev.Datagrams).Msg("lock acquired")
		if r.lockWaiter != nil {
			r.lockWaiter <- struct{}{}
			r.lockWaiter = nil
		}
		r.lockWork.acquired(time.Now())
	case mutex.Exited:
		if ev.Lost {
			r.lockLost = true
			r.log.Warn().Uint64("clock", ev.Clock).Str("view", ev.View).Str("event", "mutex.released").Float64("held_ms", ms(ev.Held)).
				Bool("lost", true).Msg("lock lost: the view no longer has the quorum, or no longer holds this node")
		} else {
			e.Str("event", "mutex.released").Float64("held_ms", ms(ev.Held)).Msg("lock released")
		}
		r.lockWork.released(time.Now())
	case mutex.Withdrawn:
		e.Str("event", "mutex.withdrawn").Float64("wait_ms", ms(ev.Wait)).Msg("lock request withdrawn")
	case mutex.Deferred:
		r.log.Debug().Uint64("clock", ev.Clock).Str("view", ev.View).Str("event", "mutex.deferred").Uint64("peer", ev.Peer).
			Msg("reply deferred")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// lockWorkload uses the lock for experiments, as the seed program
// dist_sync did: think a while (a random time in [lo, hi]), request the
// lock, hold it for hold, release it, and again.
type lockWorkload struct {
	on           bool
	lo, hi, hold time.Duration
	rng          *rand.Rand
	st           mutex.State // Released: thinking; Wanted; Held
	next         time.Time   // when to request (thinking) or release (held); zero while waiting
}

func newLockWorkload(m config.Mutex, seed uint64, start time.Time) *lockWorkload {
	lo, hi, on, _ := m.ThinkRange()
	w := &lockWorkload{on: on, lo: lo, hi: hi, hold: m.Hold.D(), rng: rand.New(rand.NewPCG(seed, 0x6c6f636b))}
	if on {
		w.next = start.Add(w.think())
	}
	return w
}

func (w *lockWorkload) think() time.Duration {
	if w.hi <= w.lo {
		return w.lo
	}
	return w.lo + time.Duration(w.rng.Int64N(int64(w.hi-w.lo)+1))
}

func (w *lockWorkload) acquired(now time.Time) {
	if w.on && w.st == mutex.Wanted {
		w.st, w.next = mutex.Held, now.Add(w.hold)
	}
}

func (w *lockWorkload) released(now time.Time) {
	if w.on && w.st != mutex.Released {
		w.st, w.next = mutex.Released, now.Add(w.think())
	}
}

// step requests or releases the lock when it is time.
func (w *lockWorkload) step(now time.Time, c *Core) {
	if !w.on || w.next.IsZero() || now.Before(w.next) {
		return
	}
	switch w.st {
	case mutex.Released:
		w.next = time.Time{}
		if c.LockRequest(now) {
			w.st = mutex.Wanted
		} else {
			w.next = now.Add(w.think()) // someone else (huddle lock) uses it: think again
		}
	case mutex.Held:
		c.LockRelease(now)
	}
}
