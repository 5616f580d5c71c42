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

// idConflict is the evidence that another live node uses this node's ID:
// session messages of one older incarnation from one address.
type idConflict struct {
	inc         uint64
	addr        netip.AddrPort
	since, last time.Time
	n           int
}

// limiter lets through at most a burst of events per period.
type limiter struct {
	at time.Time
	n  int
}

// allow reports whether one more event may go through at now: at most
// burst in each period.
func (l *limiter) allow(now time.Time, period time.Duration, burst int) bool {
	if l.at.IsZero() || now.Sub(l.at) >= period {
		l.at, l.n = now, 0
	}
	if l.n >= burst {
		return false
	}
	l.n++
	return true
}

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
// heard lately (heardTable.hear).
func (m *Machine) hear(now time.Time, src netip.AddrPort, h *wire.Header) bool {
	if h.Inc > m.timeLimit(now) {
		m.stats.IncRefused++
		return false
	}
	m.maxEpoch = max(m.maxEpoch, h.View.Epoch)
	fresh, evicted := m.heard.hear(now, h.From, heard{inc: h.Inc, view: h.View, at: now, addr: src}, m.view)
	if !fresh {
		m.stats.StaleMembership++
	}
	m.stats.HeardEvicted += uint64(len(evicted))
	m.forget(evicted)
	return fresh
}

// forget drops what the coordinator keeps of nodes no longer heard.
func (m *Machine) forget(ids []uint64) {
	for _, id := range ids {
		m.coord.forget(id)
	}
}

// tickPrune forgets, once per suspect timeout, the nodes outside the view
// not heard for two suspect timeouts, the hold-offs that ended, the join
// requests not repeated for a suspect timeout, and failures in a row
// after a long quiet.
func (m *Machine) tickPrune(now time.Time) {
	if now.Before(m.pruneAt) {
		return
	}
	st := m.opt.Engine.SuspectTimeout
	m.pruneAt = now.Add(st)
	m.forget(m.heard.prune(now, m.view))
	m.coord.prune(now)
	m.merges.expire(now, maxHoldOff*st)
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
func (m *Machine) commitFits(now time.Time, p *participant, c *wire.ViewCommit) bool {
	if len(c.Members) != len(p.members) {
		return false
	}
	for i, x := range c.Members {
		if p.members[i] != (wire.Member{ID: x.ID, Inc: x.Inc}) {
			return false
		}
		if x.ID != m.self && !m.view.HasInc(x.ID, x.Inc) && !m.heard.lately(now, x.ID, x.Inc) {
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

// mayReport reports whether an event about node id may be handed out: it
// is about a member, or, about a node outside the view, one of at most
// limitBurst per suspect timeout; the rest are counted.
func (m *Machine) mayReport(now time.Time, id uint64) bool {
	if m.view.Has(id) {
		return true
	}
	if m.outsiders.allow(now, m.opt.Engine.SuspectTimeout, limitBurst) {
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
