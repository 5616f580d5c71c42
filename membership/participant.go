package membership

import (
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// participant is this node's part in a flush, its own or another's
// (docs/design.md, "The flush"): what it reported, the cut of its prior
// view it takes, the commit, and the messages of its view it holds back
// meanwhile, past its report, until the cut decides them. It builds the
// answers the Machine sends (report, confirmation) and hands back the
// messages the cut releases; the Machine fetches up to the cut, installs
// the view, or gives the flush up.
type participant struct {
	id       flushID
	members  []wire.Member // the proposed view
	prior    wire.ViewID   // this node's view when it joined the flush
	priorInc uint64        // and its coordinator's incarnation
	report   wire.FlushOK  // what it reported, resent when asked again
	reported bool
	hasCut   bool
	cut      []wire.Cut // of its prior view: deliver up to here, then install
	done     bool       // it holds the cut and said so
	commit   *wire.ViewCommit
	heardAt  time.Time // last message of the initiator
	resendAt time.Time // when done, the next reminder (the commit may be lost)
	since    time.Time // when this node joined this attempt
	outsider bool      // led by a node outside this node's view (a merge)
	// initiatorInc is the initiator's incarnation: only it may end the
	// flush without a view (onFlushEnd).
	initiatorInc uint64
	held         []Delivery // messages of the prior view past the report: the cut decides
}

// newParticipant joins flush id, proposing members, at now, from view
// prior (its coordinator's incarnation priorInc). It takes over what a
// flush it gave up for this one held back (old, if any): the new cut
// decides those messages.
func newParticipant(id flushID, members []wire.Member, prior wire.ViewID, priorInc uint64, now time.Time, outsider bool, old *participant) *participant {
	p := &participant{id: id, members: members, prior: prior, priorInc: priorInc, heardAt: now, since: now, outsider: outsider}
	if old != nil {
		p.held = old.held
	}
	return p
}

// makeReport is this node's report to the flush, which stops its sends:
// for each member of its prior view, how far it holds that member's
// stream in order (has), and what it sent. Every message it delivered is
// within the report, and the cut will be at least the report: what it
// delivers in this view stays a prefix of what every member that installs
// the next view delivers.
func (p *participant) makeReport(settings uint32, sent uint64, has []wire.Cut, k wire.Known) wire.FlushOK {
	p.report = wire.FlushOK{Epoch: p.id.Epoch, Attempt: p.id.Attempt, Initiator: p.id.Initiator, Phase: wire.FlushState,
		Prior: p.prior, PriorInc: p.priorInc, Settings: settings, Sent: sent, Has: has, Known: cloneKnown(k)}
	p.reported = true
	return p.report
}

// heardFrom notes a message of the initiator at now.
func (p *participant) heardFrom(now time.Time) { p.heardAt = now }

// hold keeps d, a message of the prior view, once this node has reported:
// only the cut decides what the view delivers. It reports false when d
// may be delivered now: before the report, or within the cut.
func (p *participant) hold(d Delivery) bool {
	if !p.reported || p.hasCut && d.End <= seqOf(p.cut, d.Source) {
		return false
	}
	p.held = append(p.held, cloneDelivery(d))
	return true
}

// takeCut learns the cut of this node's prior view from the flush's cuts,
// and hands back the held messages it covers, in the order they arrived.
func (p *participant) takeCut(cuts []wire.ViewCut) (covered []Delivery) {
	c, _ := cutOf(cuts, p.prior, p.priorInc)
	p.cut, p.hasCut = slices.Clone(c), true
	keep := p.held[:0]
	for _, d := range p.held {
		if d.End <= seqOf(p.cut, d.Source) {
			covered = append(covered, d)
		} else {
			keep = append(keep, d)
		}
	}
	clear(p.held[len(keep):])
	p.held = keep
	return covered
}

// complete notes that this node holds the whole cut; it reports whether
// that is news (the confirmation goes out then).
func (p *participant) complete() bool {
	news := !p.done
	p.done = true
	return news
}

// confirmation is this node's word that it holds the cut, sent at now and
// resent after retry until the commit comes.
func (p *participant) confirmation(now time.Time, retry time.Duration, settings uint32) wire.FlushOK {
	p.resendAt = now.Add(retry)
	return wire.FlushOK{Epoch: p.id.Epoch, Attempt: p.id.Attempt, Initiator: p.id.Initiator,
		Phase: wire.FlushCut, Prior: p.prior, PriorInc: p.priorInc, Settings: settings, Sent: p.report.Sent}
}

// accept keeps its own copy of the flush's commit.
func (p *participant) accept(c *wire.ViewCommit) {
	p.commit = &wire.ViewCommit{Epoch: c.Epoch, Attempt: c.Attempt,
		Members: slices.Clone(c.Members), Left: slices.Clone(c.Left), Cuts: cloneCuts(c.Cuts), Primary: c.Primary, Behind: slices.Clone(c.Behind)}
}

// expired reports whether this node gives the flush up at now: its
// initiator, another node, went quiet for st; or this attempt has run
// longer than any initiator runs one (it restarts after half a suspect
// timeout per phase), which only a forged flush kept alive does.
func (p *participant) expired(now time.Time, self uint64, st time.Duration) bool {
	return p.id.Initiator != self && (!now.Before(p.heardAt.Add(st)) ||
		p.commit == nil && !now.Before(p.since.Add(2*st)))
}

// resendDue reports whether the confirmation is due again at now.
func (p *participant) resendDue(now time.Time) bool { return p.done && !now.Before(p.resendAt) }

// deadline is when the flush needs a tick: the confirmation's next
// resend, and when another initiator has been quiet too long.
func (p *participant) deadline(self uint64, st time.Duration) time.Time {
	var d time.Time
	if p.done {
		d = p.resendAt
	}
	if p.id.Initiator != self {
		d = earliest(d, p.heardAt.Add(st))
	}
	return d
}

// cloneKnown returns a copy of k that shares nothing with it.
func cloneKnown(k wire.Known) wire.Known {
	c := wire.Known{Last: k.Last, Attempts: make([]wire.PrimaryView, len(k.Attempts)), Behind: k.Behind}
	c.Last.Members = slices.Clone(k.Last.Members)
	for i, a := range k.Attempts {
		c.Attempts[i] = a
		c.Attempts[i].Members = slices.Clone(a.Members)
	}
	return c
}

func cloneCuts(cs []wire.ViewCut) []wire.ViewCut {
	out := make([]wire.ViewCut, len(cs))
	for i, c := range cs {
		out[i] = wire.ViewCut{View: c.View, Inc: c.Inc, Cuts: slices.Clone(c.Cuts)}
	}
	return out
}

// The Machine's side: which flushes it takes part in, and what it does
// for the one it is in.

// onFlush takes an initiator's flush message: a proposal (stop sending,
// report) or the cut (fetch up to it, confirm). The initiator must be one
// that may lead a flush here (mayInitiate), the epoch within the bound,
// and a cut one this node can take (cutFits).
func (m *Machine) onFlush(now time.Time, from, fromInc uint64, fromView wire.ViewID, f *wire.Flush) {
	if !m.flushFor(now, from, fromInc, fromView, f) {
		return
	}
	m.maxEpoch = max(m.maxEpoch, f.Epoch)
	id := flushID{Epoch: f.Epoch, Attempt: f.Attempt, Initiator: from}
	p := m.participant
	switch {
	case p != nil && id.less(p.id), m.dropped != nil && !m.dropped.less(id):
		// An older flush, or one this node gave up: it may have sent and
		// delivered since its report, which that flush still counts on.
		m.stats.StaleMembership++
	case p != nil && id == p.id:
		m.again(now, f)
	case f.Phase == wire.FlushCut && !m.cutFits(f.Cuts, m.view.ID, m.coordInc()):
		m.stats.BadFlushes++
	default:
		m.takePart(now, id, from, fromInc, f)
	}
}

// flushFor reports whether a flush message is for this node, for a view
// newer than its own, within the bounds, and from a node that may lead
// one to it.
func (m *Machine) flushFor(now time.Time, from, fromInc uint64, fromView wire.ViewID, f *wire.Flush) bool {
	if !m.proposed(f.Members) || !m.view.ID.Less(wire.ViewID{Epoch: f.Epoch, Coord: from}) {
		return false // not for this node, or for a view no newer than its own
	}
	if f.Epoch > m.timeLimit(now) || f.Attempt == 0 || f.Attempt > wire.MaxAttempt {
		m.stats.EpochRefused++
		return false
	}
	if from != m.self && !m.mayInitiate(from, fromInc, fromView, f.Members) {
		m.stats.RoleRefused++
		return false
	}
	if fromView.Less(m.view.ID) && m.view.Has(from) {
		// A member of this node's view that is behind it (it was cut off
		// and does not know it yet) must not pull it back: it secedes
		// when it notices, and is merged in.
		m.stats.StaleMembership++
		return false
	}
	return true
}

// proposed reports whether this incarnation of this node is in members.
func (m *Machine) proposed(members []wire.Member) bool {
	for _, x := range members {
		if x.ID == m.self {
			return x.Inc == m.inc
		}
	}
	return false
}

// again answers a repeated message of the flush this node is in: the
// initiator is missing its answer.
func (m *Machine) again(now time.Time, f *wire.Flush) {
	p := m.participant
	if f.Phase == wire.FlushCut && !p.hasCut && !m.cutFits(f.Cuts, p.prior, p.priorInc) {
		m.stats.BadFlushes++
		return
	}
	p.heardFrom(now)
	switch {
	case f.Phase == wire.FlushState && !p.hasCut:
		m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlushOK}, FlushOK: p.report})
	case f.Phase == wire.FlushCut && !p.hasCut:
		m.takeCut(now, f.Cuts, f.Primary)
	case f.Phase == wire.FlushCut && p.done:
		m.sendDone(now)
	}
}

// takePart joins flush id, a higher one than any this node is in: it
// stops sending and reports. A flush led from outside its view is not
// taken while merges led from outside failed in a row (merges).
func (m *Machine) takePart(now time.Time, id flushID, from, fromInc uint64, f *wire.Flush) {
	outsider := from != m.self && m.state != joining && !m.view.HasInc(from, fromInc)
	if outsider && (m.merges.held(now) || m.restarting(now, f.Members)) {
		m.stats.RoleRefused++
		return
	}
	old := m.participant
	if old != nil {
		m.mergeFailed(now, old) // superseded
	}
	if r := m.initiator; r != nil && r.id != id {
		m.initiator = nil // a higher flush that includes this node wins
	}
	if m.changeFrom.IsZero() {
		m.changeFrom = now
	}
	m.participant = newParticipant(id, slices.Clone(f.Members), m.view.ID, m.coordInc(), now, outsider, old)
	m.participant.initiatorInc = fromInc
	m.engine.Expect(now, f.Members) // the multicast layer keeps state for the proposed nodes until the view
	m.sendReport()
	if f.Phase == wire.FlushCut {
		m.takeCut(now, f.Cuts, f.Primary)
	}
}

// sendReport stops this node's sends and reports how far it holds each
// member of its view, in order (for itself: what it sent).
func (m *Machine) sendReport() {
	var has []wire.Cut
	for _, x := range m.view.Members {
		has = append(has, wire.Cut{ID: x.ID, Seq: m.engine.Received(x.ID, x.Inc)})
	}
	ok := m.participant.makeReport(m.settings, m.engine.Received(m.self, m.inc), has, m.known.wire(m.opt.Quorum, m.behind))
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlushOK}, FlushOK: ok})
}

// takeCut learns the cut of this node's view, delivers the held messages
// it covers, and starts fetching what it misses up to it, from whoever
// holds it. With the cut comes the proposal's generation as the primary
// component (0: not primary): the attempt is recorded before this node
// confirms the cut, since the initiator may commit it once it has.
func (m *Machine) takeCut(now time.Time, cuts []wire.ViewCut, primary uint64) {
	p := m.participant
	m.known.attempt(primary, wire.ViewID{Epoch: p.id.Epoch, Coord: p.id.Initiator}, incOf(p.members, p.id.Initiator), p.members)
	for _, d := range m.participant.takeCut(cuts) {
		m.hand(d)
	}
	m.fetch(now)
}

// fetch asks the engine for the cut and reports whether it holds it all.
func (m *Machine) fetch(now time.Time) bool {
	all := true
	for _, c := range m.participant.cut {
		if inc := m.view.Inc(c.ID); inc != 0 && !m.engine.Want(now, c.ID, inc, c.Seq) {
			all = false
		}
	}
	return all
}

func (m *Machine) sendDone(now time.Time) {
	ok := m.participant.confirmation(now, m.retry(), m.settings)
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlushOK}, FlushOK: ok})
}

// progress moves this node's flush on when the data it waited for has
// arrived: it confirms the cut, or installs the committed view.
func (m *Machine) progress(now time.Time) {
	p := m.participant
	if p == nil || !p.hasCut || !m.fetch(now) {
		return
	}
	if p.complete() {
		m.sendDone(now)
	}
	if p.commit != nil {
		m.install(now, p.commit, p.id.Initiator)
	}
}

// onCommit takes the initiator's commit of the flush this node is in: it
// must list the members proposed, each of this node's view or heard
// lately, and a cut this node can take (commitFits). A commit without
// this node tells it the group went on without it (excludedBy).
func (m *Machine) onCommit(now time.Time, from, fromInc uint64, c *wire.ViewCommit) {
	id := flushID{Epoch: c.Epoch, Attempt: c.Attempt, Initiator: from}
	if c.Epoch > m.timeLimit(now) {
		m.stats.EpochRefused++
		return
	}
	if !m.committed(c) {
		m.excludedBy(now, from, fromInc, c)
		return
	}
	p := m.participant
	if p == nil || p.id != id || p.commit != nil {
		return
	}
	if !m.commitFits(now, p, c) {
		m.stats.BadFlushes++ // a resent commit is looked at again
		return
	}
	p.accept(c)
	if !p.hasCut {
		m.takeCut(now, p.commit.Cuts, p.commit.Primary)
	}
	m.progress(now)
}

// committed reports whether this incarnation of this node is a member of
// the committed view.
func (m *Machine) committed(c *wire.ViewCommit) bool {
	for _, x := range c.Members {
		if x.ID == m.self {
			return x.Inc == m.inc
		}
	}
	return false
}

// abandon gives up a flush whose initiator is gone without committing: the
// view goes on (a new flush, by whoever coordinates now, will follow).
// What was held for the cut is delivered: nobody installed a next view
// from this flush, so nobody delivered a cut this node must match.
//
// A joiner remembers nothing: it has sent and delivered nothing since its
// report, which stays true.
func (m *Machine) abandon() {
	p := m.participant
	m.participant = nil
	m.stats.FlushesAbandoned++
	m.mergeFailed(m.now, p)
	if m.state != joining {
		m.dropped = &p.id
	}
	if m.initiator != nil && m.initiator.id == p.id {
		m.initiator = nil
	}
	for _, d := range p.held {
		m.hand(d)
	}
	m.changeFrom = time.Time{}
}

// onFlushEnd takes the end of a flush without a view, from its initiator
// (from, inc): a participant of that very attempt, before its commit,
// abandons it and goes on in its view. Anything else is stale.
func (m *Machine) onFlushEnd(from, inc uint64, e *wire.FlushEnd) {
	p := m.participant
	if p == nil || p.commit != nil || p.id != (flushID{Epoch: e.Epoch, Attempt: e.Attempt, Initiator: from}) || p.initiatorInc != inc {
		m.stats.StaleMembership++
		return
	}
	m.abandon()
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
func (m *Machine) mergeFailed(now time.Time, p *participant) {
	if !p.outsider || p.commit != nil {
		return
	}
	blocked := max(now.Sub(p.since), m.flushTimeout())
	m.merges.fail(now, true, blocked, mergeHoldMax*m.opt.Engine.SuspectTimeout)
}

// tickParticipant gives up a flush whose initiator went quiet, and
// reminds the initiator that this node holds the cut.
func (m *Machine) tickParticipant(now time.Time) {
	p := m.participant
	if p == nil {
		return
	}
	if p.expired(now, m.self, m.opt.Engine.SuspectTimeout) {
		m.abandon()
		return
	}
	if p.resendDue(now) {
		m.sendDone(now)
	}
}

// restarting reports whether a merge of members would take in a node
// that keeps restarting before its turn (coordinator.restarting): a node
// that restarted founds a view of its own, and would otherwise lead a
// merge of the group by waiting, past the bounded rate of its admissions.
func (m *Machine) restarting(now time.Time, members []wire.Member) bool {
	for _, x := range members {
		if !m.view.HasInc(x.ID, x.Inc) && m.coord.restarting(now, x) {
			return true
		}
	}
	return false
}
