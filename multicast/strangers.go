package multicast

import (
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Who the engine keeps state for. Any host on the LAN can send datagrams
// to the group, and without a key nothing proves who sent them, so the
// engine keeps the state that costs memory and work (streams, gaps, their
// timers, NACK and repair state, receive reports, round-trip times) only
// for the nodes membership vouches for: the view's members (SetMembers)
// and the nodes a flush in progress proposes (Expect). Every other node
// is a stranger: it is heard (PeerSeen, so that membership can admit or
// merge it), and kept in a table of fixed size with its incarnation,
// address and when it was last heard, nothing more. Without a view (the
// engine alone, SetMembers never called or called with nil) every node is
// admitted.

// Bounds on what strangers and forged incarnations can cost.
const (
	// MaxStrangers is how many non-members the engine remembers at once
	// (each costs about a hundred bytes); the one heard least recently
	// makes room for a new one.
	MaxStrangers = 1024
	// maxExpected is how many proposed nodes the engine expects at once;
	// more are not expected (they join the usual way, at the view).
	maxExpected = 1024
	// expectFor is how long, in suspect timeouts, an expectation lasts
	// after the last Expect that named it, unless a view settles it
	// first.
	expectFor = 2
	// MaxIncSkew bounds incarnations: they are microseconds since the
	// Unix epoch at a node's start, so one beyond the receiver's clock by
	// more than this is forged, or from a clock too far off to trust. It
	// is never taken, so that no datagram can claim an incarnation newer
	// than every restart of its node to come.
	MaxIncSkew = 10 * time.Minute
	// seenBurst and seenRate limit the PeerSeen events of strangers
	// (each is a log line): a burst of seenBurst, then seenRate per
	// second. The rest are counted (PeersUnannounced).
	seenBurst = 64
	seenRate  = 4
)

// stranger is what the engine keeps of a node outside the view: enough to
// say it is there. Strangers are listed oldest heard first.
type stranger struct {
	id, inc    uint64
	addr       netip.AddrPort
	lastHeard  time.Time
	announced  bool // its PeerSeen was reported (not held back by the rate limit)
	prev, next *stranger
}

// strangers is the table of non-members: a map, and a list by the time each
// was last heard, oldest first, so that eviction and expiry take the head.
type strangers struct {
	byID       map[uint64]*stranger
	head, tail *stranger
}

func (t *strangers) len() int { return len(t.byID) }

func (t *strangers) get(id uint64) *stranger { return t.byID[id] }

func (t *strangers) unlink(s *stranger) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		t.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		t.tail = s.prev
	}
	s.prev, s.next = nil, nil
}

func (t *strangers) push(s *stranger) {
	s.prev, s.next = t.tail, nil
	if t.tail != nil {
		t.tail.next = s
	} else {
		t.head = s
	}
	t.tail = s
}

// touch marks s heard at now: it moves to the end of the list.
func (t *strangers) touch(s *stranger, now time.Time) {
	s.lastHeard = now
	t.unlink(s)
	t.push(s)
}

// insertBefore links s in the list just before p.
func (t *strangers) insertBefore(s, p *stranger) {
	s.prev, s.next = p.prev, p
	if p.prev != nil {
		p.prev.next = s
	} else {
		t.head = s
	}
	p.prev = s
}

func (t *strangers) add(s *stranger) {
	if t.byID == nil {
		t.byID = map[uint64]*stranger{}
	}
	t.byID[s.id] = s
	t.push(s)
}

func (t *strangers) remove(s *stranger) {
	t.unlink(s)
	delete(t.byID, s.id)
}

// limiter is a token bucket: of events (one token each), or of bytes.
type limiter struct {
	tokens float64
	at     time.Time
}

// allow takes one token if there is one (see take).
func (l *limiter) allow(now time.Time, rate, burst float64) bool { return l.take(now, rate, burst, 1) }

// take takes n tokens if there are as many, refilling rate per second up
// to burst since the last call; a bucket never used starts full.
func (l *limiter) take(now time.Time, rate, burst, n float64) bool {
	if l.at.IsZero() {
		l.tokens = burst
	} else if dt := now.Sub(l.at); dt > 0 {
		l.tokens = min(burst, l.tokens+rate*dt.Seconds())
	}
	if now.After(l.at) {
		l.at = now
	}
	if l.tokens < n {
		return false
	}
	l.tokens -= n
	return true
}

// future reports whether incarnation inc is further ahead of the clock
// than MaxIncSkew (a clock before 1970 bounds nothing).
func future(now time.Time, inc uint64) bool {
	lim := now.Add(MaxIncSkew).UnixMicro()
	return lim > 0 && inc > uint64(lim)
}

// admittedInc returns the incarnation of id the engine keeps state for,
// and false when id is neither a member of the view nor expected. The
// view's incarnation comes first: a member's new incarnation waits until
// membership has flushed the old one out of the view, since the old one's
// stream may still be needed by a flush.
func (e *Engine) admittedInc(id uint64) (uint64, bool) {
	if inc, ok := e.members[id]; ok {
		return inc, true
	}
	if x, ok := e.expected[id]; ok {
		return x.inc, true
	}
	return 0, false
}

// admitted reports whether the engine keeps state for incarnation inc of
// node id: every node without a view, else the members and the expected.
func (e *Engine) admitted(id, inc uint64) bool {
	if e.members == nil {
		return true
	}
	a, ok := e.admittedInc(id)
	return ok && a == inc
}

// member reports whether incarnation inc of node id is a member of the
// view (without a view, every node is).
func (e *Engine) member(id, inc uint64) bool {
	if e.members == nil {
		return true
	}
	m, ok := e.members[id]
	return ok && m == inc
}

// expectation is a node a flush in progress proposes, until when.
type expectation struct {
	inc   uint64
	until time.Time
}

// Expect makes the engine keep state for the nodes a flush in progress
// proposes, as for the view's members, until a view settles them
// (SetMembers) or two suspect timeouts after the last Expect that named
// them: a node joining or merging may send in the new view before this
// node installs it, and its messages are then kept until the view is
// installed. The membership layer calls it with the proposal's members
// when it takes part in a flush. A node takes part in one flush at a
// time: the nodes an earlier call expected that this one does not name
// are expected no more, so that flushes, forged or not, cannot pile up
// expectations. Incarnations further ahead of now than MaxIncSkew are not
// expected; beyond maxExpected nodes, no more are.
func (e *Engine) Expect(now time.Time, members []wire.Member) {
	if e.members == nil {
		return // no view: every node is admitted already
	}
	named := make(map[uint64]bool, len(members))
	for _, x := range members {
		named[x.ID] = true
	}
	for _, id := range sortedKeys(e.expected) {
		if x := e.expected[id]; !named[id] {
			delete(e.expected, id)
			e.unexpect(id, x.inc)
		}
	}
	until := now.Add(expectFor * e.opt.SuspectTimeout)
	for _, x := range members {
		if x.ID == e.opt.Self {
			continue
		}
		if future(now, x.Inc) {
			e.stats.FutureInc++
			continue
		}
		if old, ok := e.expected[x.ID]; !ok && len(e.expected) >= maxExpected {
			continue
		} else if ok && old.inc != x.Inc {
			e.unexpect(x.ID, old.inc)
		}
		e.expected[x.ID] = expectation{inc: x.Inc, until: until}
		if e.expireAt.IsZero() || until.Before(e.expireAt) {
			e.expireAt = until
		}
		if e.member(x.ID, x.Inc) || !e.admitted(x.ID, x.Inc) {
			continue // a member already; or the view holds another incarnation, which comes first
		}
		e.promote(x.ID, x.Inc)
	}
}

// expireExpected drops the expectations that ran out.
func (e *Engine) expireExpected(now time.Time) {
	if e.expireAt.IsZero() || now.Before(e.expireAt) {
		return
	}
	e.expireAt = time.Time{}
	for _, id := range sortedKeys(e.expected) {
		x := e.expected[id]
		if now.Before(x.until) {
			if e.expireAt.IsZero() || x.until.Before(e.expireAt) {
				e.expireAt = x.until
			}
			continue
		}
		delete(e.expected, id)
		e.unexpect(id, x.inc)
	}
}

// unexpect drops what the engine kept for incarnation inc of id while it
// was expected, unless it is a member.
func (e *Engine) unexpect(id, inc uint64) {
	if e.member(id, inc) {
		return
	}
	if p := e.peers[id]; p != nil && p.inc == inc {
		e.demote(p)
	}
	if st := e.streams[id]; st != nil && st.inc == inc {
		delete(e.streams, id) // never a member: none of its messages are this node's to deliver
		e.streamsChanged()
	}
}

// promote makes a stranger an admitted peer, keeping when it was last
// heard: a member that counts for stability from the moment it is one. It
// reports false when there is no such stranger.
func (e *Engine) promote(id, inc uint64) bool {
	s := e.strangers.get(id)
	if s == nil || s.inc != inc || e.peers[id] != nil {
		return false
	}
	e.strangers.remove(s)
	e.peers[id] = e.newPeer(id, inc, s.addr, s.lastHeard)
	if !s.announced {
		e.events = append(e.events, Event{Kind: PeerSeen, Peer: id, Inc: inc, Addr: s.addr})
	}
	return true
}

// demote makes a peer that is no longer admitted a stranger: only when it
// was last heard is kept.
func (e *Engine) demote(p *peer) {
	delete(e.peers, p.id)
	if s := e.strangers.get(p.id); s != nil {
		e.strangers.remove(s)
	}
	e.addStranger(&stranger{id: p.id, inc: p.inc, addr: p.addr, lastHeard: p.lastHeard, announced: true})
}

// addStranger puts s in the table, making room by forgetting the stranger
// heard least recently when it is full.
func (e *Engine) addStranger(s *stranger) {
	if e.strangers.len() >= MaxStrangers {
		e.strangers.remove(e.strangers.head)
		e.stats.PeersEvicted++
	}
	e.strangers.add(s)
	// The list stays in order of lastHeard: a demoted peer may have been
	// heard before the newest stranger.
	for p := s.prev; p != nil && p.lastHeard.After(s.lastHeard); p = s.prev {
		e.strangers.unlink(s)
		e.strangers.insertBefore(s, p)
	}
}

// hearStranger takes a datagram from a node outside the view: it is heard,
// and nothing else. Data, repairs and NACKs from it are dropped and
// counted.
func (e *Engine) hearStranger(now time.Time, src netip.AddrPort, h *wire.Header) {
	s := e.strangers.get(h.From)
	switch {
	case s != nil && h.Inc < s.inc:
		e.stats.StaleInc++
		return
	case (s == nil || h.Inc > s.inc) && future(now, h.Inc):
		e.stats.FutureInc++
		return
	case s == nil:
		s = &stranger{id: h.From, inc: h.Inc, addr: src, lastHeard: now}
		e.addStranger(s)
		e.announce(now, s, false)
	case h.Inc > s.inc:
		s.inc, s.addr, s.announced = h.Inc, src, false
		e.announce(now, s, true)
	}
	e.strangers.touch(s, now)
	switch h.Kind {
	case wire.KindData, wire.KindBatch, wire.KindRepair:
		e.stats.ForeignData++
	case wire.KindNack:
		e.stats.NackRefused++
	}
}

// announce reports a stranger seen, within the rate limit.
func (e *Engine) announce(now time.Time, s *stranger, restarted bool) {
	if !e.seenLimit.allow(now, seenRate, seenBurst) {
		e.stats.PeersUnannounced++
		return
	}
	s.announced = true
	e.events = append(e.events, Event{Kind: PeerSeen, Peer: s.id, Inc: s.inc, Addr: s.addr, Restarted: restarted})
}

// expireStrangers forgets the strangers silent for the suspect timeout,
// reporting those whose PeerSeen was reported as lost.
func (e *Engine) expireStrangers(now time.Time) {
	for s := e.strangers.head; s != nil && now.Sub(s.lastHeard) >= e.opt.SuspectTimeout; s = e.strangers.head {
		e.strangers.remove(s)
		if s.announced {
			e.events = append(e.events, Event{Kind: PeerLost, Peer: s.id, Inc: s.inc, Addr: s.addr, Silent: now.Sub(s.lastHeard)})
		}
	}
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
