package node

import (
	"cmp"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/mutex"
)

// MutexService is the group service the lock's messages travel on.
const MutexService = "mutex"

var mutexService = []byte(MutexService)

// lockPart is the lock's part of a Core: Ricart–Agrawala, the central
// server or the token ring (mutex.algorithm).
type lockPart struct {
	m          mutex.Lock
	leased     bool // quorum mode: the lock needs the times members were heard
	out        outQueue
	view, prev wire.ViewID // the installed view, and the one before it (zero: none)
	heardAt    []time.Time // setView's scratch
}

// newLockPart makes the lock of a node from its options. With a quorum
// it is leased on the suspect timeout (unless Lock.Lease says otherwise):
// a member whose datagrams stopped carrying this node's view (the
// installed one or the one before) for that long no longer counts toward
// the holder's majority.
func newLockPart(o CoreOptions) lockPart {
	lo := o.Lock
	lo.Self = o.Membership.Engine.Self
	lo.Lease = cmp.Or(lo.Lease, o.Membership.Engine.SuspectTimeout)
	return lockPart{m: mutex.NewLock(lo), leased: lo.Quorum > 0 || lo.ViewLease}
}

// inView is when this node last heard member id in its view, or in the
// view before it, from what the membership layer heard of it; zero if its
// last datagram carried another view.
func (l *lockPart) inView(id uint64, m *membership.Machine) time.Time {
	v, at := m.Heard(id)
	if v == (wire.ViewID{}) || v != l.view && v != l.prev {
		return time.Time{}
	}
	return at
}

// heard tells the lock what the membership layer heard of id last.
func (l *lockPart) heard(id uint64, m *membership.Machine) { l.m.Heard(id, l.inView(id, m)) }

// setView tells the lock of the view installed now, and when each of its
// members was last heard in it or the one before.
func (l *lockPart) setView(now time.Time, id wire.ViewID, members []uint64, primary bool, m *membership.Machine) {
	l.prev, l.view = l.view, id
	l.out.clear() // the lock sends a pending request again
	l.m.SetPrimary(now, primary)
	var heard []time.Time
	if l.leased {
		heard = l.heardAt[:0]
		for _, member := range members {
			heard = append(heard, l.inView(member, m))
		}
		l.heardAt = heard
	}
	l.m.SetView(now, id.String(), members, heard)
}

// LockRequest asks for the lock now; false when this node already wants
// or holds it, or is leaving.
func (c *Core) LockRequest(now time.Time) bool {
	if c.leaving {
		return false
	}
	c.lastInput = now
	c.route(now)
	ok := c.lock.m.Request(now)
	c.protocolsStep()
	return ok
}

// LockRelease releases the lock, or withdraws the request for it; false
// when this node neither holds nor wants it.
func (c *Core) LockRelease(now time.Time) bool {
	c.lastInput = now
	c.route(now)
	ok := c.lock.m.Release(now)
	c.protocolsStep()
	return ok
}

// LockHeldView is the view this node acquired the lock in, "" unless it
// holds it.
func (c *Core) LockHeldView() string { return c.lock.m.HeldView() }

// LockState is this node's relation to the lock.
func (c *Core) LockState() mutex.State { return c.lock.m.State() }

// MutexStats returns the lock's counters and the messages the node
// dropped for it.
func (c *Core) MutexStats() (mutex.Stats, uint64) { return c.lock.m.Stats(), c.lock.out.dropped }
