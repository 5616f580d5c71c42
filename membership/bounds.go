package membership

import (
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Membership messages act by role, within bounds (docs/design.md,
// "Membership messages act by role, within bounds"). Without a key any
// host on the LAN can send datagrams in any node's name; these rules keep
// what such datagrams can do to a member bounded, and cost honest traffic
// nothing.

const (
	// timeSkew bounds how far ahead of this node's clock (in
	// microseconds since 1970, or its own incarnation when that is later:
	// the simulator numbers incarnations 1, 2, 3 ...) an epoch or an
	// incarnation may be. An incarnation is a start time in microseconds;
	// an epoch counts view changes, and no group makes one per
	// microsecond, so an honest epoch stays far below the clock. A forged
	// one can push the group's epochs up to the clock, not past it: they
	// never come near 2^64, and no +1 on one wraps.
	timeSkew = uint64(10 * time.Minute / time.Microsecond)
	// maxStrangers bounds what heard keeps of nodes outside the view
	// (joiners, other partitions, and anything forged): the oldest goes
	// first. A group's members are never evicted.
	maxStrangers = 1024
	// maxJoiners bounds the join requests the coordinator holds at once;
	// more than fit a view commit are refused anyway.
	maxJoiners = 64
	// maxOffs bounds the nodes held out of merges and admissions.
	maxOffs = 1024
	// maxHoldOff is the longest a node that does not answer is held off,
	// in suspect timeouts (the hold starts at two and doubles).
	maxHoldOff = 64
	// admitHoldMax bounds how many times the blocked time of a failed
	// admission the coordinator then admits nobody: the hold doubles with
	// each failure in a row from the second on, up to this.
	admitHoldMax = 16
	// mergeHoldMax bounds, in suspect timeouts, how long a node takes no
	// flush led from outside its view after such flushes failed in a row.
	mergeHoldMax = 16
	// limitBurst is how many events about nodes outside the view (joiners
	// refused, peers seen or lost) are handed out per suspect timeout; the
	// rest are counted (EventsSuppressed).
	limitBurst = 16
	// conflictDatagrams is how many session messages of an older
	// incarnation of this node's ID, over at least a suspect timeout, prove
	// that another live node uses it.
	conflictDatagrams = 3
)

// timeLimit is the highest epoch or incarnation this node accepts now.
func (m *Machine) timeLimit(now time.Time) uint64 {
	return max(uint64(max(now.UnixMicro(), 0)), m.inc) + timeSkew
}

// nextEpoch is the epoch of a view this node makes now (a flush, a view
// of its own): one past the highest it knows.
func (m *Machine) nextEpoch() uint64 { return max(m.maxEpoch, m.view.ID.Epoch) + 1 }

// hear records a datagram's sender and its view, and reports false for a
// datagram to ignore: an incarnation beyond the bound, or older than one
// heard lately. A newer incarnation of a member is kept aside
// (restarts): the member's own stays what this node hears of it until a
// view replaces it, as the engine keeps its stream (pinned).
func (m *Machine) hear(now time.Time, src netip.AddrPort, h *wire.Header) bool {
	if h.Inc > m.timeLimit(now) {
		m.stats.IncRefused++
		return false
	}
	m.maxEpoch = max(m.maxEpoch, h.View.Epoch)
	if i := m.view.Inc(h.From); i != 0 && h.Inc > i {
		m.restarts[h.From] = heard{inc: h.Inc, view: h.View, at: now, addr: src}
		return true
	}
	p, ok := m.heard[h.From]
	if ok && h.Inc < p.inc && p.view != (wire.ViewID{}) && now.Sub(p.at) < m.opt.Engine.SuspectTimeout {
		// An older incarnation while the newer one is alive in a view: a
		// stale datagram, or a second node with the same ID. A newer one
		// that is only joining does not silence the older: it may be a
		// second node with the ID, which stops only once it has heard the
		// older for a suspect timeout (onConflict), or a forgery, and the
		// older may be a coordinator others need to hear (its refusal).
		m.stats.StaleMembership++
		return false
	}
	if !ok {
		p.seq = m.admit(h.From)
	}
	m.heard[h.From] = heard{inc: h.Inc, view: h.View, at: now, addr: src, seq: p.seq}
	return true
}

// admit makes room in heard for a node not heard before, and returns its
// place in the eviction order: when heard holds maxStrangers nodes
// besides the view's members, the one outside the view heard first goes.
func (m *Machine) admit(id uint64) uint64 {
	if m.view.Has(id) {
		return 0
	}
	for len(m.heard) >= len(m.view.Members)+maxStrangers && len(m.strangers) > 0 {
		old := m.strangers[0]
		m.strangers = m.strangers[1:]
		if m.queued(old) {
			m.forgetHeard(old.id)
			m.stats.HeardEvicted++
		}
	}
	return m.queue(id)
}

// queue puts node id last in the eviction order.
func (m *Machine) queue(id uint64) uint64 {
	m.nextSeq++
	m.strangers = append(m.strangers, stranger{id, m.nextSeq})
	if len(m.strangers) > 2*(maxStrangers+len(m.view.Members)) {
		m.compactStrangers()
	}
	return m.nextSeq
}

// queued reports whether a place in the eviction order is still its
// node's: the node is in heard from then on, and outside the view.
func (m *Machine) queued(s stranger) bool {
	h, ok := m.heard[s.id]
	return ok && h.seq == s.seq && !m.view.Has(s.id)
}

// forgetHeard drops what this node knows of a node outside its view.
func (m *Machine) forgetHeard(id uint64) {
	delete(m.heard, id)
	delete(m.foreign, id)
}

// compactStrangers drops the places no longer their nodes' from the
// eviction order.
func (m *Machine) compactStrangers() {
	m.strangers = slices.DeleteFunc(m.strangers, func(s stranger) bool { return !m.queued(s) })
}

// strangersAfterView puts the members a new view dropped into the
// eviction order: they are nodes outside the view now.
func (m *Machine) strangersAfterView(prior View) {
	for _, x := range prior.Members {
		if h, ok := m.heard[x.ID]; ok && !m.view.Has(x.ID) {
			h.seq = m.queue(x.ID)
			m.heard[x.ID] = h
		}
	}
	for id, r := range m.restarts {
		if m.view.HasInc(id, r.inc) {
			m.heard[id] = r // the restarted incarnation is the member now
		}
		if m.view.Inc(id) >= r.inc {
			delete(m.restarts, id)
		}
	}
	m.compactStrangers()
}

// heardLately reports whether incarnation inc of node id was heard within
// the suspect timeout.
func (m *Machine) heardLately(now time.Time, id, inc uint64) bool {
	for _, h := range []heard{m.heard[id], m.restarts[id]} {
		if h.inc == inc && !h.at.IsZero() && now.Sub(h.at) <= m.opt.Engine.SuspectTimeout {
			return true
		}
	}
	return false
}

// tickPrune forgets, once per suspect timeout, the nodes outside the view
// not heard for two suspect timeouts, the hold-offs that ended, and the
// join requests not repeated for a suspect timeout.
func (m *Machine) tickPrune(now time.Time) {
	if now.Before(m.pruneAt) {
		return
	}
	st := m.opt.Engine.SuspectTimeout
	m.pruneAt = now.Add(st)
	for id, h := range m.heard {
		if !m.view.Has(id) && now.Sub(h.at) > 2*st {
			m.forgetHeard(id)
		}
	}
	for id, r := range m.restarts {
		if !m.view.Has(id) || now.Sub(r.at) > 2*st {
			delete(m.restarts, id)
		}
	}
	for id, o := range m.offs {
		// A node that did not answer is remembered past its hold, so
		// that the next hold doubles; the others go when it ends.
		if end := o.until; o.fails == 0 && !now.Before(end) || now.Sub(end) > maxHoldOff*st {
			delete(m.offs, id)
		}
	}
	for id, j := range m.joiners {
		if now.Sub(j.at) > st {
			delete(m.joiners, id)
		}
	}
	m.compactStrangers()
	if m.admitFails > 0 && now.Sub(m.admitFailAt) > maxHoldOff*st {
		m.admitFails = 0 // long quiet: start counting afresh
	}
	if m.mergeFails > 0 && now.Sub(m.mergeFailAt) > maxHoldOff*st {
		m.mergeFails = 0
	}
}

// hold keeps node id (incarnation inc) out of merges and admissions for d;
// grow doubles d for each time in a row it did not answer.
func (m *Machine) hold(now time.Time, id, inc uint64, d time.Duration, grow bool) {
	o, ok := m.offs[id]
	if !ok && len(m.offs) >= maxOffs {
		m.evictOff()
	}
	if o.inc != inc {
		o = holdOff{inc: inc}
	}
	if grow {
		if o.fails < 32 {
			o.fails++
		}
		for i := uint8(1); i < o.fails && d < maxHoldOff*m.opt.Engine.SuspectTimeout; i++ {
			d *= 2
		}
		d = min(d, maxHoldOff*m.opt.Engine.SuspectTimeout)
	}
	o.until = maxTime(o.until, now.Add(d))
	m.offs[id] = o
}

// evictOff drops the hold-off that ends first (the lowest ID among equals).
func (m *Machine) evictOff() {
	var victim uint64
	var at time.Time
	first := true
	for id, o := range m.offs {
		if first || o.until.Before(at) || o.until.Equal(at) && id < victim {
			victim, at, first = id, o.until, false
		}
	}
	delete(m.offs, victim)
}

// heldOff reports whether node id is held out of merges now.
func (m *Machine) heldOff(now time.Time, id uint64) bool {
	return now.Before(m.offs[id].until)
}

// joinHeldOff reports whether a join request of incarnation inc of node id
// waits: the incarnation did not answer an admission lately.
func (m *Machine) joinHeldOff(now time.Time, id, inc uint64) bool {
	o, ok := m.offs[id]
	return ok && o.fails > 0 && inc <= o.inc && now.Before(o.until)
}

// admitFailed notes that a node to admit or merge did not answer this
// view change. From the second such failure in a row, the coordinator
// admits and merges nobody for as long as the view change has held sends
// so far, doubled for each further failure (up to admitHoldMax times):
// joins that never complete then keep sends blocked for at most about a
// 1/(1+admitHoldMax) of the time in the long run.
func (m *Machine) admitFailed(now time.Time) {
	if !m.changeFails {
		m.admitFails++ // once per view change
	}
	m.changeFails = true
	m.admitFailAt = now
	if m.admitFails < 2 {
		return
	}
	blocked := now.Sub(m.changeFrom)
	if m.changeFrom.IsZero() || blocked < m.flushTimeout() {
		blocked = m.flushTimeout()
	}
	f := time.Duration(min(1<<min(m.admitFails-2, 30), admitHoldMax))
	m.admitHold = maxTime(m.admitHold, now.Add(blocked*f))
}

// mergeFailed notes that this node's part in flush p ended without a
// view. When p was led by a node outside this node's view (a merge, or a
// forgery: any ID may claim to lead one) and had no commit yet, it
// counts: from the second such failure in a row, this node takes no flush
// led from outside its view for as long as p held its sends (at least a
// flush timeout), doubled for each further failure up to admitHoldMax
// times, and at most mergeHoldMax suspect timeouts. Fresh forged IDs
// that propose merges and never commit then hold sends a bounded share
// of the time; this node's own coordinator still leads merges.
func (m *Machine) mergeFailed(now time.Time, p *participation) {
	if !p.outsider || p.commit != nil {
		return
	}
	m.mergeFails++
	m.mergeFailAt = now
	if m.mergeFails < 2 {
		return
	}
	blocked := max(now.Sub(p.since), m.flushTimeout())
	f := time.Duration(min(1<<min(m.mergeFails-2, 30), admitHoldMax))
	d := min(blocked*f, mergeHoldMax*m.opt.Engine.SuspectTimeout)
	m.mergeHold = maxTime(m.mergeHold, now.Add(d))
}

// admitted notes a view change that took in nodes from outside the view,
// all of which answered.
func (m *Machine) admitted() {
	if !m.changeFails {
		m.admitFails = 0
	}
}

// mayInitiate reports whether node from (incarnation inc, in view fv) may
// lead a flush that proposes members to this node: a member in this
// node's view (its coordinator, or a younger member taking over: the
// members older than it are not proposed, since it acts only when it
// suspects them all); a node of another view leading a merge; or, to a
// joiner that asked, a node in a view admitting it. The initiator leads
// its proposal.
func (m *Machine) mayInitiate(from, inc uint64, fv wire.ViewID, members []wire.Member) bool {
	if len(members) == 0 || members[0] != (wire.Member{ID: from, Inc: inc}) || fv == (wire.ViewID{}) {
		return false
	}
	if m.state == joining {
		return m.asked
	}
	if !m.view.HasInc(from, inc) || fv != m.view.ID {
		return true // a merge (a member that went on to another view leads one too)
	}
	for _, x := range m.view.Members {
		if x.ID == from {
			return true
		}
		if slices.Contains(members, x) {
			return false // an older member it does not suspect: it does not act
		}
	}
	return false
}

// cutFits reports whether the cuts of a flush are ones it can have fixed
// for this node: a member reported its prior view, so the cut of that
// view is there and names every member of it, and nobody holds more of
// this node's stream than it sent.
func (m *Machine) cutFits(cuts []wire.ViewCut, prior wire.ViewID, priorInc uint64) bool {
	if prior == (wire.ViewID{}) {
		return true // a joiner: it had no view to flush
	}
	c, ok := cutOf(cuts, prior, priorInc)
	if !ok {
		return false
	}
	for _, x := range m.view.Members {
		if !slices.ContainsFunc(c, func(k wire.Cut) bool { return k.ID == x.ID }) {
			return false
		}
	}
	return seqOf(c, m.self) <= m.engine.Received(m.self, m.inc)
}

// commitFits reports whether a commit is the one of the flush this node
// takes part in: the members proposed, each of this node's view or heard
// lately (a node that never asked to join, or never spoke, is not
// admitted), and a cut this node can take.
func (m *Machine) commitFits(now time.Time, p *participation, c *wire.ViewCommit) bool {
	if len(c.Members) != len(p.members) {
		return false
	}
	for i, x := range c.Members {
		if p.members[i] != (wire.Member{ID: x.ID, Inc: x.Inc}) {
			return false
		}
		if x.ID != m.self && !m.view.HasInc(x.ID, x.Inc) && !m.heardLately(now, x.ID, x.Inc) {
			return false
		}
	}
	return p.hasCut || m.cutFits(c.Cuts, p.prior, p.priorInc)
}

// onConflict takes a datagram carrying this node's ID from another
// incarnation. An older incarnation that keeps sending session messages
// from one address, conflictDatagrams of them over at least a suspect
// timeout and none a suspect timeout apart, is another live node with
// this ID: this one, the newer, stops (refusal "id"). A single datagram,
// or a newer incarnation, stops nothing.
func (m *Machine) onConflict(now time.Time, src netip.AddrPort, env *wire.Envelope) {
	m.stats.IDConflicts++
	if env.Inc >= m.inc || env.Kind != wire.KindSession {
		return
	}
	st := m.opt.Engine.SuspectTimeout
	c := &m.conflict
	if c.inc != env.Inc || c.addr != src || now.Sub(c.last) > st {
		*c = idConflict{inc: env.Inc, addr: src, since: now}
	}
	c.last = now
	c.n++
	if c.n >= conflictDatagrams && now.Sub(c.since) >= st && m.state != gone {
		m.state = gone
		m.emit(Event{Kind: Refused, Member: m.self, Setting: "id", Ours: itoa(m.inc), Theirs: itoa(env.Inc), Addr: src})
	}
}

// conflicted reports whether an older incarnation of this node's ID was
// heard within the suspect timeout: a joiner waits before it asks.
func (m *Machine) conflicted(now time.Time) bool {
	return m.conflict.n > 0 && now.Sub(m.conflict.last) <= m.opt.Engine.SuspectTimeout
}

// tickUnheard suspects the members not heard at all since the view was
// installed, for a suspect timeout (not counting this node's pauses), and
// unknown to the engine: the engine loses only peers it once heard, so a
// member that never spoke (a phantom a forged commit listed, or a node
// that died as it was admitted) would hold total and safe delivery for
// ever.
func (m *Machine) tickUnheard(now time.Time) {
	if m.state != member && m.state != leaving || now.Sub(m.quietFrom) < m.opt.Engine.SuspectTimeout {
		return
	}
	for _, x := range m.view.Members {
		if x.ID == m.self || m.suspects[x.ID] == x.Inc {
			continue
		}
		if h := m.heard[x.ID]; h.inc == x.Inc && !h.at.Before(m.viewAt) {
			continue
		}
		if m.engine.Holds(x.ID, x.ID, x.Inc) != 0 {
			continue // a live peer: the engine loses it in time
		}
		m.suspect(now, x.ID, x.Inc, now.Sub(m.viewAt))
	}
}

// mayReport reports whether an event about node id may be handed out: it
// is about a member, or, about a node outside the view, one of at most
// limitBurst per suspect timeout; the rest are counted.
func (m *Machine) mayReport(now time.Time, id uint64) bool {
	if m.view.Has(id) {
		return true
	}
	l := &m.outsiders
	if l.at.IsZero() || now.Sub(l.at) >= m.opt.Engine.SuspectTimeout {
		l.at, l.n = now, 0
	}
	if l.n < limitBurst {
		l.n++
		return true
	}
	m.stats.EventsSuppressed++
	return false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
