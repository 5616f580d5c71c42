package node

import (
	"context"
	"errors"
	"time"

	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/mutex"
)

// Errors of Lock and Unlock.
var (
	ErrLockBusy = errors.New("node: this node already wants or holds the lock")
	ErrNotHeld  = errors.New("node: this node neither holds nor wants the lock")
	// ErrLockLost: the lock was taken away while this node held it, in
	// quorum mode (its view lost the majority, or the lease ran out), or
	// because this node left the view. Another node may have held it
	// since.
	ErrLockLost = errors.New("node: the lock was taken away while this node held it")
	// ErrLockExhausted: this node's Lamport clock reached its bound
	// (2^62), which only a member sending forged timestamps can cause;
	// the lock grants nothing more here (see docs/security.md).
	ErrLockExhausted = errors.New("node: the lock's clock is exhausted: a member sent forged timestamps")
)

// ElectResult is what Elect reports: whether this node started an
// election (false while it takes part in one already, or before its first
// view), and the leader it knew when it did.
type ElectResult struct {
	Started   bool   `json:"started"`
	Algorithm string `json:"algorithm"`
	Leader    uint64 `json:"leader"`       // the leader before this election; 0 = none
	Round     uint64 `json:"leader_round"` // the round that chose it
}

// Elect starts an election from this node, as `huddle elect` does.
func (n *Node) Elect(ctx context.Context) (ElectResult, error) {
	res := ElectResult{Algorithm: n.o.Config.Election.Algorithm}
	err := n.Do(ctx, func(c *Core) {
		res.Leader, res.Round = c.Leader()
		res.Started = c.StartElection(time.Now())
	})
	return res, err
}

// Leader returns the leader this node knows (0: none yet) and the round
// of the election that chose it.
func (n *Node) Leader(ctx context.Context) (leader, round uint64, err error) {
	err = n.Do(ctx, func(c *Core) { leader, round = c.Leader() })
	return leader, round, err
}

// Lock acquires the group's lock (mutex.algorithm: Ricart–Agrawala, the
// central server or the token ring): it returns once this
// node holds it, or with ctx's error, the request withdrawn (the replies
// this node deferred meanwhile are sent all the same). ErrLockBusy when
// this node already wants or holds it.
func (n *Node) Lock(ctx context.Context) error {
	ok, err := n.TryLock(ctx)
	if err == nil && !ok {
		err = ctx.Err()
	}
	return err
}

// TryLock is Lock that reports a ctx ending before the lock was granted
// as false, not as an error.
func (n *Node) TryLock(ctx context.Context) (bool, error) {
	got := make(chan struct{}, 1)
	var ok, leaving, busy bool
	if err := n.Do(ctx, func(c *Core) {
		if leaving = c.Leaving(); leaving {
			return
		}
		if ok = c.LockRequest(time.Now()); ok {
			n.lockWaiter, n.lockLost = got, false
		}
		busy = c.LockState() != mutex.Released
	}); err != nil {
		return false, err
	}
	switch {
	case leaving:
		return false, membership.ErrLeft
	case !ok && busy:
		return false, ErrLockBusy
	case !ok:
		return false, ErrLockExhausted
	}
	select {
	case <-got:
		return true, nil
	case <-n.stopped:
		return false, ErrStopped
	case <-ctx.Done():
		held := false
		err := n.Do(context.Background(), func(c *Core) {
			if n.lockWaiter == got {
				n.lockWaiter = nil
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
func (n *Node) Unlock(ctx context.Context) error {
	var ok, lost bool
	if err := n.Do(ctx, func(c *Core) {
		ok = c.LockRelease(time.Now())
		lost, n.lockLost = n.lockLost && !ok, false
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
