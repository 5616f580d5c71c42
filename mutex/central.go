package mutex

import (
	"slices"
	"time"
)

// The central server (the lecture's "zentrale Lösung"): the view's
// coordinator grants the lock to one requester at a time, in the order of
// the requests. REQUEST, GRANT and RELEASE: 3 messages per entry.
//
// Over a group the server's queue is not the coordinator's alone. Every
// message is multicast in total order to every member, the sender
// included, and every member applies them alike, so every member holds
// the same queue and knows the holder. When the view changes, so may the
// coordinator: each member then multicasts its own part (STATE: released,
// wanted or held, with its request's number), and every member, the new
// coordinator among them, rebuilds the queue from those, in their total
// order. The coordinator grants only once every member's STATE is in, and
// never while someone holds the lock. A holder keeps the lock through view
// changes; a holder that crashed or left frees it with the view that drops
// it. Two sides of a partition grant independently (as Ricart–Agrawala
// does without a quorum); after they merge both holders keep the lock
// until they release it, and nothing more is granted meanwhile.
//
// Messages, [kind, a, b] in msgpack:
//
//	REQUEST [11, request, 0]   the sender wants the lock (its request's number)
//	GRANT   [12, member, request] the coordinator grants member's request
//	RELEASE [13, request, 0]   the sender releases, or withdraws, its request
//	STATE   [14, state, request] the sender's part, at the start of a view
const (
	kindCRequest kind = 11
	kindGrant    kind = 12
	kindRelease  kind = 13
	kindCState   kind = 14
)

// entry is one member's request.
type entry struct{ id, req uint64 }

// centralServer is one node's part of the central server lock.
type centralServer struct {
	replicated
	queue    []entry // requests waiting, in total order; at most one per member
	holders  []entry // who holds the lock: one, or after a merge more
	granting entry   // the coordinator's GRANT sent and not yet delivered
}

func newCentral(self uint64) *centralServer {
	return &centralServer{replicated: replicated{self: self}}
}

// SetView implements Lock: the rebuilt state starts over from the members'
// STATE messages, this node's first.
func (c *centralServer) SetView(now time.Time, view string, members []uint64, _ []time.Time) {
	c.queue, c.holders, c.granting = c.queue[:0], c.holders[:0], entry{}
	if c.setView(now, view, members) {
		c.send(kindCState, uint64(c.state), c.req)
		if c.state == Wanted {
			c.msgs++
		}
	}
}

// Request implements Lock.
func (c *centralServer) Request(now time.Time) bool {
	if !c.beginRequest(now) {
		return false
	}
	if c.hasView {
		c.send(kindCRequest, c.req, 0)
		c.msgs++
	}
	return true
}

// Release implements Lock.
func (c *centralServer) Release(now time.Time) bool {
	if c.state == Released {
		return false
	}
	if c.hasView {
		c.send(kindRelease, c.req, 0)
		c.msgs++
	}
	c.leave(now, false)
	return true
}

// Receive implements Lock: one message, delivered in total order (this
// node's own too).
func (c *centralServer) Receive(now time.Time, from uint64, payload []byte) {
	k, a, b, ok := c.input(from, payload, kindCRequest, kindCState)
	if !ok {
		return
	}
	switch k {
	case kindCState:
		switch {
		case a > uint64(Held):
			c.stats.Malformed++
		case !c.know(from):
			c.stats.Stale++ // a second STATE in this view
		case State(a) == Held:
			c.holders = append(c.holders, entry{from, b})
		case State(a) == Wanted:
			c.queue = append(c.queue, entry{from, b})
		}
	case kindCRequest:
		if c.has(from) || !slices.Contains(c.known, from) {
			c.stats.Stale++ // one request at a time; its STATE comes first
			break
		}
		c.queue = append(c.queue, entry{from, a})
	case kindGrant:
		c.onGrant(now, from, entry{a, b})
	case kindRelease:
		e := entry{from, a}
		if i := slices.Index(c.holders, e); i >= 0 {
			c.holders = slices.Delete(c.holders, i, i+1)
		} else if i := slices.Index(c.queue, e); i >= 0 {
			c.queue = slices.Delete(c.queue, i, i+1) // withdrawn
		} else {
			c.stats.Stale++
		}
	}
	c.grant()
}

// onGrant applies a GRANT: the request leaves the queue and holds the
// lock; this node enters if it is its own pending request.
func (c *centralServer) onGrant(now time.Time, from uint64, e entry) {
	if c.granting == e {
		c.granting = entry{}
	}
	i := slices.Index(c.queue, e)
	if from != c.members[0] || i < 0 || len(c.holders) > 0 || !c.ready() {
		// Withdrawn meanwhile, or not the coordinator's, or sent before
		// every STATE was in (a holder's may still come): the coordinator
		// grants only once they all are, and so later in total order.
		c.stats.Stale++
		return
	}
	c.queue = slices.Delete(c.queue, i, i+1)
	c.holders = append(c.holders, e)
	if e.id == c.self && c.state == Wanted && e.req == c.req {
		c.msgs++
		c.enter(now)
	}
}

// grant: the coordinator grants the first request waiting, once every
// member's STATE is in and nobody holds the lock, in the primary
// component only.
func (c *centralServer) grant() {
	if !c.ready() || c.notPrimary || c.self != c.members[0] || len(c.holders) > 0 || len(c.queue) == 0 || c.granting != (entry{}) {
		return
	}
	c.granting = c.queue[0]
	c.send(kindGrant, c.granting.id, c.granting.req)
}

// has reports whether member id has a request waiting or holds the lock.
func (c *centralServer) has(id uint64) bool {
	is := func(e entry) bool { return e.id == id }
	return slices.ContainsFunc(c.queue, is) || slices.ContainsFunc(c.holders, is)
}
