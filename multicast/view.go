package multicast

import (
	"net/netip"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// What the membership layer tells this layer about views. Without a view
// (a node running this layer alone), every live peer is a receiver, and
// nothing is stamped with a view.

// SetView stamps what this node sends from now on with view v. Messages
// queued before are packed first, so that they go out stamped with the
// view they were sent in.
func (e *Engine) SetView(v wire.ViewID) {
	e.packData()
	e.view = v
}

// View returns the view this node stamps on what it sends.
func (e *Engine) View() wire.ViewID { return e.view }

// SetMembers makes stability and flow control follow the view's members:
// a message is stable once every live member holds it, and peers outside
// the view (joiners, other partitions) no longer count. nil goes back to
// every live peer.
// A member's incarnation is the view's: datagrams of a newer one wait
// (dropped) until a view holds it, since the old one's stream may still be
// needed by a flush.
//
// The engine keeps state only for the members (and the nodes a flush
// expects, until a view settles them: this one does): the others become
// strangers, which are only heard, and their streams are dropped (a
// source that left the view: membership forgets it too). A stranger that
// becomes a member is a live peer at once, as it was last heard.
func (e *Engine) SetMembers(members []wire.Member) {
	if members == nil {
		e.members = nil
		clear(e.absent)
		clear(e.expected)
		e.expireAt = time.Time{}
		for s := e.strangers.head; s != nil; s = e.strangers.head {
			e.strangers.remove(s)
			if e.peers[s.id] == nil {
				e.peers[s.id] = e.newPeer(s.id, s.inc, s.addr, s.lastHeard)
			}
		}
		return
	}
	e.members = make(map[uint64]uint64, len(members))
	for _, x := range members {
		e.members[x.ID] = x.Inc
	}
	clear(e.expected) // the view settles them
	e.expireAt = time.Time{}
	for id, p := range e.absent {
		if e.members[id] != p.inc {
			delete(e.absent, id) // excluded: it holds nothing back any more
		}
	}
	restarted := map[uint64]bool{}
	for _, id := range e.peerIDs() {
		if p := e.peers[id]; !e.member(id, p.inc) {
			restarted[id] = p.inc < e.members[id]
			e.demote(p)
		}
	}
	for _, id := range e.streamIDs() {
		if st := e.streams[id]; !e.member(id, st.inc) {
			delete(e.streams, id) // it left the view: what it sent no member delivers now
			e.streamsChanged()
		}
	}
	for _, x := range members {
		if e.peers[x.ID] != nil || e.absent[x.ID] != nil || e.promote(x.ID, x.Inc) || e.lastNow.IsZero() {
			continue
		}
		// A member never heard in this incarnation (a restarted node,
		// whose new incarnation was held back until the view took it in,
		// or one this node missed) is presumed live from now: it holds
		// stability back until it reports, and is lost (and suspected)
		// if it stays silent.
		if s := e.strangers.get(x.ID); s != nil {
			e.strangers.remove(s)
		}
		p := e.newPeer(x.ID, x.Inc, netip.AddrPort{}, e.lastNow)
		p.presumed, p.restarted = true, restarted[x.ID]
		e.peers[x.ID] = p
	}
}

// receiver reports whether peer id counts for stability.
func (e *Engine) receiver(id uint64) bool {
	if e.members == nil {
		return true
	}
	_, ok := e.members[id]
	return ok
}

// Received returns how far this node holds source src's incarnation inc
// in order (for its own stream: the last sequence number it sent); 0 when
// it holds nothing of it.
func (e *Engine) Received(src, inc uint64) uint64 {
	if st := e.lookup(src, inc); st != nil {
		return st.received()
	}
	return 0
}

// Want makes this node fetch source src's messages up to seq: a flush's
// cut, which another member holds. It requests them even when the source
// is lost (any holder answers then: see onRequest), and reports whether it
// already holds them all.
func (e *Engine) Want(now time.Time, src, inc, seq uint64) bool {
	st := e.lookup(src, inc)
	if st == nil {
		return seq == 0
	}
	if st.received() >= seq {
		return true
	}
	st.lostAt = time.Time{} // requests for a lost source resume
	st.high = max(st.high, seq)
	e.openGaps(now, st)
	return false
}

// Start makes source src's stream (incarnation inc) begin at next for this
// node: a view it joins begins there, and what came before is not its to
// receive. Messages held below next are delivered first (the layer above
// discards what is not of its view); nothing is reported as lost.
func (e *Engine) Start(now time.Time, src, inc, next uint64) {
	if src == e.opt.Self {
		return
	}
	st := e.streamFor(src, inc, next)
	if st != nil && st.unplaced && st.next > next {
		st = e.replace(now, st, next)
	}
	if st == nil {
		return
	}
	st.unplaced = false
	if st.next < next {
		e.skip(now, st, next, true) // what it skips was never this node's to receive
	}
	e.deliver(st)
}

// replace begins unplaced stream st again at next, where the view says it
// begins, before the message its first data held: the messages it holds
// are taken again, and those before them are asked for.
func (e *Engine) replace(now time.Time, st *stream, next uint64) *stream {
	nst := newStream(st.src, st.inc, next, e.ringSize())
	nst.c2, nst.dataAt = st.c2, st.dataAt
	e.streams[st.src] = nst
	e.streamsChanged()
	for s := st.next; s <= st.high; s++ {
		if en := st.ring.get(s); en != nil && en.have {
			e.receive(now, nst, &en.data, en.view, false)
		}
	}
	e.detect(now, nst, st.high)
	return nst
}

// Forget drops source src's stream of incarnation inc: its source left
// the view, and what this node has not delivered of it by now no member
// will deliver.
func (e *Engine) Forget(src, inc uint64) {
	if st := e.streams[src]; st != nil && st.inc == inc {
		delete(e.streams, src)
		e.streamsChanged()
	}
}

// Holds returns how far member id last reported holding source src's
// incarnation inc in order (its session messages say): what safe delivery
// waits for. A source holds its own stream; a member never heard, lost, or
// reporting another incarnation of src holds nothing.
func (e *Engine) Holds(id, src, inc uint64) uint64 {
	if id == e.opt.Self {
		return e.Received(src, inc)
	}
	p := e.peers[id]
	if p == nil {
		return 0
	}
	if id == src {
		if p.inc != inc {
			return 0
		}
		return MaxHeld
	}
	if r, ok := p.reports[src]; ok && r.inc == inc {
		return r.seq
	}
	return 0
}

// MaxHeld is what Holds reports for a source's own stream.
const MaxHeld = ^uint64(0)

// Report sends a session message now, besides the periodic ones: members
// waiting to deliver a safe message learn at once that this node holds it.
func (e *Engine) Report(now time.Time) { e.sendSession(now) }
