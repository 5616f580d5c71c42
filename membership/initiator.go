package membership

import (
	"cmp"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// initiator is a flush this node runs as its initiator (docs/design.md,
// "The flush"): the proposal, the phase it is in, the participants'
// reports and confirmations, and the cuts it fixes from the reports. It
// builds the messages the Machine sends (flush, commit) and says when a
// phase is complete or overdue; the Machine sends, and restarts or gives
// the flush up.
type initiator struct {
	id       flushID
	members  []wire.Member // proposal, this node first
	left     []uint64      // graceful leavers this change excludes
	phase    wire.FlushPhase
	states   map[uint64]wire.FlushOK // phase 1: each participant's report
	dones    map[uint64]bool         // phase 2: who holds the cut
	cuts     []wire.ViewCut          // one per prior view among the participants
	phaseAt  time.Time
	resendAt time.Time
	cutFails map[uint64]int // attempts in which a member did not confirm the cut
	primary  uint64         // the proposal's generation as the primary component, fixed with the cut (0: not primary)
	behind   []uint64       // the members whose replicated state is not the group's, fixed with the cut
}

func newInitiator(id flushID, members []wire.Member, left []uint64) *initiator {
	return &initiator{id: id, members: members, left: left, cutFails: map[uint64]int{}}
}

// begin starts an attempt at now: phase 1, no answers yet.
func (r *initiator) begin(now time.Time) {
	r.phase, r.cuts = wire.FlushState, nil
	r.states, r.dones = map[uint64]wire.FlushOK{}, map[uint64]bool{}
	r.phaseAt = now
}

// flush is the flush message of this phase, sent at now and resent after
// retry until answered.
func (r *initiator) flush(now time.Time, retry time.Duration) wire.Flush {
	f := wire.Flush{Epoch: r.id.Epoch, Attempt: r.id.Attempt, Phase: r.phase, Members: r.members}
	if r.phase == wire.FlushCut {
		f.Cuts, f.Primary = r.cuts, r.primary
	}
	r.resendAt = now.Add(retry)
	return f
}

// answer takes a participant's answer to this attempt and reports whether
// it completes the phase: every proposed member reported (phase 1) or
// holds the cut (phase 2). Answers of another phase, or from a node not
// proposed, count for nothing.
func (r *initiator) answer(from, inc uint64, ok *wire.FlushOK) bool {
	if !slices.Contains(r.members, wire.Member{ID: from, Inc: inc}) || ok.Phase != r.phase {
		return false
	}
	if ok.Phase == wire.FlushState {
		c := *ok
		c.Has = slices.Clone(ok.Has)
		c.Known = cloneKnown(ok.Known)
		r.states[from] = c
		return len(r.states) == len(r.members)
	}
	r.dones[from] = true
	return len(r.dones) == len(r.members)
}

// odd lists, in order, the participants whose settings hash differs from
// this node's.
func (r *initiator) odd(settings uint32) []uint64 {
	var ids []uint64
	for id, s := range r.states {
		if s.Settings != settings {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// fixCut fixes the cuts from every participant's report, and whether the
// proposal will be primary from what they know, and enters phase 2 at now.
// fromPrimary says whether the initiator's view, the one the graceful
// leavers leave, is primary: only then does the quorum's reference go
// without them. A member leaving a view that is not primary may have come
// into it from a newer primary view than its other members know of (the
// other side of a partition, merged since), and its report went with it:
// counting it out of the older reference the others know would let a
// minority of that older view call itself primary beside the newer one.
func (r *initiator) fixCut(now time.Time, q Quorum, fromPrimary bool) {
	r.cuts = sortedCuts(gatherCuts(r.states))
	reports := make([]wire.Known, 0, len(r.states))
	for _, x := range r.members {
		reports = append(reports, r.states[x.ID].Known)
	}
	left := r.left
	if !fromPrimary {
		left = nil
	}
	r.primary = q.decide(r.members, reports, left)
	r.behind = behindOf(r.members, r.states, !q.On())
	r.phase, r.phaseAt = wire.FlushCut, now
}

// priorView is a prior view among a flush's participants: its ID and its
// coordinator's incarnation, since a coordinator that restarted counts
// epochs afresh.
type priorView struct {
	id  wire.ViewID
	inc uint64
}

// gatherCuts computes, for each prior view among the reports, the cut:
// for each sender, the most any participant of that view holds. Joiners
// had no view to flush.
func gatherCuts(states map[uint64]wire.FlushOK) map[priorView]map[uint64]uint64 {
	byView := map[priorView]map[uint64]uint64{}
	for _, s := range states {
		if s.Prior == (wire.ViewID{}) {
			continue
		}
		k := priorView{s.Prior, s.PriorInc}
		cut := byView[k]
		if cut == nil {
			cut = map[uint64]uint64{}
			byView[k] = cut
		}
		for _, h := range s.Has {
			cut[h.ID] = max(cut[h.ID], h.Seq)
		}
	}
	return byView
}

// sortedCuts lists the cuts by view, then by the coordinator's
// incarnation, each by sender.
func sortedCuts(byView map[priorView]map[uint64]uint64) []wire.ViewCut {
	var cuts []wire.ViewCut
	for v, cut := range byView {
		vc := wire.ViewCut{View: v.id, Inc: v.inc}
		for id, seq := range cut {
			vc.Cuts = append(vc.Cuts, wire.Cut{ID: id, Seq: seq})
		}
		slices.SortFunc(vc.Cuts, func(a, b wire.Cut) int { return cmp.Compare(a.ID, b.ID) })
		cuts = append(cuts, vc)
	}
	slices.SortFunc(cuts, func(a, b wire.ViewCut) int {
		switch {
		case a.View.Less(b.View):
			return -1
		case b.View.Less(a.View):
			return 1
		}
		return cmp.Compare(a.Inc, b.Inc)
	})
	return cuts
}

// commit is the view commit, once every participant holds the cut: each
// member's stream begins after the last it reported sending.
func (r *initiator) commit() wire.ViewCommit {
	c := wire.ViewCommit{Epoch: r.id.Epoch, Attempt: r.id.Attempt, Cuts: r.cuts, Primary: r.primary, Behind: r.behind}
	for _, x := range r.members {
		c.Members = append(c.Members, wire.ViewMember{ID: x.ID, Inc: x.Inc, Next: r.states[x.ID].Sent + 1})
	}
	for _, id := range r.left {
		if !containsMember(r.members, id) {
			c.Left = append(c.Left, id)
		}
	}
	return c
}

// silent lists the proposed members that have not answered this phase.
func (r *initiator) silent() []uint64 {
	var out []uint64
	for _, x := range r.members {
		if r.isSilent(x.ID) {
			out = append(out, x.ID)
		}
	}
	return out
}

// isSilent says whether proposed member id has not answered this phase.
func (r *initiator) isSilent(id uint64) bool {
	_, stated := r.states[id]
	return r.phase == wire.FlushState && !stated || r.phase == wire.FlushCut && !r.dones[id]
}

// overdue reports whether the phase, at now, has waited timeout for
// members that stay silent, and which members the new attempt then leaves
// out: in phase 1 the silent ones. In phase 2 a member that does not
// confirm may be alive but unable to get the cut (its only holder may have
// crashed since): a new attempt asks everyone again, the new cut is what
// those alive hold, and whoever does not answer that is left out. A member
// that fails to confirm twice is left out too (overdue counts the
// failures): the flush must end.
func (r *initiator) overdue(now time.Time, timeout time.Duration) (without []uint64, restart bool) {
	silent := r.silent()
	if len(silent) == 0 || now.Before(r.phaseAt.Add(timeout)) {
		return nil, false
	}
	if r.phase == wire.FlushState {
		return silent, true
	}
	for _, id := range silent {
		if r.cutFails[id]++; r.cutFails[id] >= 2 {
			without = append(without, id)
		}
	}
	return without, true
}

// next makes the flush its next attempt without the members silent
// (never this node, self); false when attempts are used up (a participant
// takes no more than wire.MaxAttempt).
func (r *initiator) next(self uint64, silent []uint64) bool {
	if r.id.Attempt >= wire.MaxAttempt {
		return false
	}
	r.members = slices.DeleteFunc(r.members, func(x wire.Member) bool { return x.ID != self && slices.Contains(silent, x.ID) })
	r.id.Attempt++
	return true
}

// deadline is when the flush needs a tick: its next resend, and the
// phase's timeout while members are silent.
func (r *initiator) deadline(timeout time.Duration) time.Time {
	// The phase's timeout matters only while members are silent: it is
	// when the flush restarts without them. Past it with nobody silent,
	// there is nothing to do, and a deadline at it would call Tick at the
	// same instant for ever (a livelock the fuzzer found with a forged
	// datagram: FuzzCoreInGroup/3e82bed7a0e61c86). NextDeadline runs
	// every turn of the loop: no list is built here.
	if t := r.phaseAt.Add(timeout); t.Before(r.resendAt) && slices.ContainsFunc(r.members, func(x wire.Member) bool { return r.isSilent(x.ID) }) {
		return t
	}
	return r.resendAt
}

// The Machine's side: starting, answering and ending the flush it runs.

// flushTimeout is how long an initiator waits for every proposed member
// to answer one phase before it excludes the silent ones and restarts.
func (m *Machine) flushTimeout() time.Duration { return m.opt.Engine.SuspectTimeout / 2 }

// startFlush begins a view change as its initiator.
func (m *Machine) startFlush(now time.Time, members []wire.Member, left []uint64) {
	m.initiator = newInitiator(flushID{Epoch: m.nextEpoch(), Attempt: 1, Initiator: m.self}, members, left)
	m.beginAttempt(now)
}

func (m *Machine) beginAttempt(now time.Time) {
	r := m.initiator
	r.begin(now)
	m.stats.FlushesStarted++
	if m.changeFrom.IsZero() {
		m.changeFrom = now
	}
	m.emit(Event{Kind: FlushStarted, Epoch: r.id.Epoch, Attempt: r.id.Attempt, Proposed: memberIDs(r.members), View: m.view.clone()})
	m.sendFlush(now)
}

func (m *Machine) sendFlush(now time.Time) {
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlush}, Flush: m.initiator.flush(now, m.retry())})
}

// restart runs the flush again without the members that did not answer;
// it gives the flush up after its last attempt (the next one starts at a
// new epoch).
func (m *Machine) restart(now time.Time, silent []uint64) {
	r := m.initiator
	m.holdOffSilent(now, r.members, silent)
	if m.unchanged(r, silent) {
		m.endUnchanged(silent)
		return
	}
	if !r.next(m.self, silent) {
		if p := m.participant; p != nil && p.id == r.id {
			m.abandon()
		}
		m.initiator = nil
		return
	}
	m.stats.FlushRestarts++
	m.beginAttempt(now)
}

// unchanged reports whether flush r, without the members silent, would
// install a view of the very members this node's view has, in their
// order and incarnations, and nobody leaving: only nodes it was to take
// in (merge or admit) failed to answer. Such a view changes nothing but
// its ID, and costs every member a flush: it is not installed (docs/
// design.md, "Flushes that change nothing").
func (m *Machine) unchanged(r *initiator, silent []uint64) bool {
	if len(r.left) > 0 {
		return false
	}
	i := 0
	for _, x := range r.members {
		if x.ID != m.self && slices.Contains(silent, x.ID) {
			continue
		}
		if i >= len(m.view.Members) || m.view.Members[i] != x {
			return false
		}
		i++
	}
	return i == len(m.view.Members)
}

// endUnchanged ends the flush this node runs without a view: it tells
// the participants (flush-end), who go on in their view as when they
// abandon a flush, and does so itself. silent are the nodes to take in
// that did not answer; they are held off already (holdOffSilent).
func (m *Machine) endUnchanged(silent []uint64) {
	r := m.initiator
	m.stats.FlushesUnchanged++
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlushEnd}, FlushEnd: wire.FlushEnd{Epoch: r.id.Epoch, Attempt: r.id.Attempt}})
	last := m.out[len(m.out)-1] // a copy: m.out is reused
	m.lastEnd = &last
	m.emit(Event{Kind: FlushUnchanged, Epoch: r.id.Epoch, Attempt: r.id.Attempt, Proposed: slices.Clone(silent), View: m.view.clone()})
	m.initiator = nil
	m.coord.installed(false) // the view change is over: the next one's failure counts anew
	if p := m.participant; p != nil && p.id == r.id {
		m.abandon()
	}
}

// holdOffSilent leaves alone for a while the nodes to merge or admit
// that did not answer, rather than fail every flush on them (forged join
// requests and views would cost every member a flush), and notes a failed
// admission.
func (m *Machine) holdOffSilent(now time.Time, members []wire.Member, silent []uint64) {
	failed := false
	for _, x := range members {
		if !m.view.Has(x.ID) && slices.Contains(silent, x.ID) {
			failed = true
			m.coord.unanswered(now, x)
		}
	}
	if failed {
		m.coord.admitFailed(now, m.blocked(now))
	}
}

// blocked is how long the view change under way has held sends here, at
// least a flush timeout.
func (m *Machine) blocked(now time.Time) time.Duration {
	if b := now.Sub(m.changeFrom); !m.changeFrom.IsZero() && b >= m.flushTimeout() {
		return b
	}
	return m.flushTimeout()
}

// onFlushOK takes a participant's answer to this node's flush.
func (m *Machine) onFlushOK(now time.Time, from, inc uint64, ok *wire.FlushOK) {
	if ok.Initiator != m.self {
		return
	}
	id := flushID{Epoch: ok.Epoch, Attempt: ok.Attempt, Initiator: ok.Initiator}
	r := m.initiator
	if r == nil || r.id != id {
		m.resendCommit(id, ok.Phase)
		m.resendEnd(id)
		return
	}
	if !r.answer(from, inc, ok) {
		return
	}
	if r.phase == wire.FlushState {
		m.fixCut(now)
	} else {
		m.commit()
	}
}

// resendCommit answers a participant that confirmed a flush this node has
// committed already: the commit did not reach it.
func (m *Machine) resendCommit(id flushID, phase wire.FlushPhase) {
	c := m.lastCommit
	if c == nil || phase != wire.FlushCut || c.Commit.Epoch != id.Epoch || c.Commit.Attempt != id.Attempt {
		return
	}
	m.out = append(m.out, *c)
}

// resendEnd answers a participant of a flush this node ended without a
// view: the flush-end did not reach it.
func (m *Machine) resendEnd(id flushID) {
	if e := m.lastEnd; e != nil && e.FlushEnd.Epoch == id.Epoch && e.FlushEnd.Attempt == id.Attempt {
		m.out = append(m.out, *e)
	}
}

// fixCut sends the cut once every participant reported. Participants
// whose settings differ from this node's are left out of the view, and of
// merges for a while, and the flush restarts without them.
func (m *Machine) fixCut(now time.Time) {
	r := m.initiator
	if odd := r.odd(m.settings); len(odd) > 0 {
		for _, id := range odd {
			m.coord.oddSettings(now, id, incOf(r.members, id))
			if m.mayReport(now, id) {
				m.emit(Event{Kind: Refused, Member: id, Setting: "settings"})
			}
		}
		m.restart(now, odd)
		return
	}
	r.fixCut(now, m.opt.Quorum, m.primary != 0)
	m.sendFlush(now)
}

// commit ends the flush: every participant holds the cut, and the view is
// installed, here first.
func (m *Machine) commit() {
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindView}, Commit: m.initiator.commit()})
	last := m.out[len(m.out)-1] // a copy: m.out is reused
	m.lastCommit = &last
	m.initiator = nil
}

// tickInitiator resends the flush nobody answered, and restarts it
// without the members that stay silent.
func (m *Machine) tickInitiator(now time.Time) {
	r := m.initiator
	if r == nil {
		return
	}
	if without, restart := r.overdue(now, m.flushTimeout()); restart {
		m.restart(now, without)
		return
	}
	if !now.Before(r.resendAt) {
		m.sendFlush(now)
	}
}
