package membership

import (
	"cmp"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// participation is this node's part in a flush (its own or another's).
type participation struct {
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
}

// initiation is a flush this node runs as its initiator.
type initiation struct {
	id       flushID
	members  []wire.Member // proposal, this node first
	left     []uint64      // graceful leavers this change excludes
	phase    wire.FlushPhase
	states   map[uint64]wire.FlushOK
	dones    map[uint64]bool
	cuts     []wire.ViewCut
	phaseAt  time.Time
	resendAt time.Time
	cutFails map[uint64]int // attempts in which a member did not confirm the cut
}

// retry is the interval at which flush messages, join requests and
// reminders are resent until answered: a fifth of a heartbeat, so that a
// lost datagram costs a view change a few milliseconds on a LAN.
func (m *Machine) retry() time.Duration {
	return max(m.opt.Engine.Heartbeat/5, time.Millisecond)
}

// flushTimeout is how long an initiator waits for every proposed member
// to answer one phase before it excludes the silent ones and restarts.
func (m *Machine) flushTimeout() time.Duration { return m.opt.Engine.SuspectTimeout / 2 }

func (m *Machine) flushDeadline() time.Time {
	var d time.Time
	early := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if r := m.initiation; r != nil {
		early(r.resendAt)
		// The phase's timeout matters only while members are silent: it
		// is when tickFlush restarts without them. Past it with nobody
		// silent, tickFlush has nothing to do, and a deadline at it would
		// call Tick at the same instant for ever (a livelock the fuzzer
		// found with a forged datagram: FuzzCoreInGroup/3e82bed7a0e61c86).
		// NextDeadline runs every turn of the loop: no list is built here.
		if slices.ContainsFunc(r.members, func(x wire.Member) bool { return m.isSilent(x.ID) }) {
			early(r.phaseAt.Add(m.flushTimeout()))
		}
	}
	if p := m.participation; p != nil {
		if p.done {
			early(p.resendAt)
		}
		if p.id.Initiator != m.self {
			early(p.heardAt.Add(m.opt.Engine.SuspectTimeout))
		}
	}
	return d
}

// startFlush begins a view change as its initiator.
func (m *Machine) startFlush(now time.Time, members []wire.Member, left []uint64) {
	epoch := m.nextEpoch()
	m.initiation = &initiation{id: flushID{Epoch: epoch, Attempt: 1, Initiator: m.self}, members: members, left: left, cutFails: map[uint64]int{}}
	m.beginAttempt(now)
}

// restart runs the flush again without the members that did not answer.
func (m *Machine) restart(now time.Time, silent []uint64) {
	r := m.initiation
	failed := false
	for _, x := range r.members {
		if !m.view.Has(x.ID) && slices.Contains(silent, x.ID) {
			// A node to merge or admit that does not answer: leave it
			// alone for a while rather than fail every flush on it, the
			// longer the more often it does not answer.
			failed = true // forged join requests and views cost every member a flush
			delete(m.joiners, x.ID)
			m.hold(now, x.ID, x.Inc, 2*m.opt.Engine.SuspectTimeout, true)
		}
	}
	if failed {
		m.admitFailed(now)
	}
	if r.id.Attempt >= wire.MaxAttempt {
		// Attempts are bounded (a participant takes no more): give the
		// flush up; the next one starts at a new epoch.
		if p := m.participation; p != nil && p.id == r.id {
			m.abandon()
		}
		m.initiation = nil
		return
	}
	r.members = slices.DeleteFunc(r.members, func(x wire.Member) bool { return x.ID != m.self && slices.Contains(silent, x.ID) })
	r.id.Attempt++
	m.stats.FlushRestarts++
	m.beginAttempt(now)
}

func (m *Machine) beginAttempt(now time.Time) {
	r := m.initiation
	r.phase, r.cuts = wire.FlushState, nil
	r.states, r.dones = map[uint64]wire.FlushOK{}, map[uint64]bool{}
	r.phaseAt = now
	m.stats.FlushesStarted++
	if m.changeFrom.IsZero() {
		m.changeFrom = now
	}
	ids := make([]uint64, len(r.members))
	for i, x := range r.members {
		ids[i] = x.ID
	}
	m.emit(Event{Kind: FlushStarted, Epoch: r.id.Epoch, Attempt: r.id.Attempt, Proposed: ids, View: m.view.clone()})
	m.sendFlush(now)
}

func (m *Machine) sendFlush(now time.Time) {
	r := m.initiation
	f := wire.Flush{Epoch: r.id.Epoch, Attempt: r.id.Attempt, Phase: r.phase, Members: r.members}
	if r.phase == wire.FlushCut {
		f.Cuts = r.cuts
	}
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlush}, Flush: f})
	r.resendAt = now.Add(m.retry())
}

// onFlush takes an initiator's flush message: a proposal (stop sending,
// report) or the cut (fetch up to it, confirm). The initiator must be one
// that may lead a flush here (mayInitiate), the epoch within the bound,
// and a cut one this node can take (cutFits).
func (m *Machine) onFlush(now time.Time, from, fromInc uint64, fromView wire.ViewID, f *wire.Flush) {
	id := flushID{Epoch: f.Epoch, Attempt: f.Attempt, Initiator: from}
	if !m.proposed(f.Members) || !m.view.ID.Less(wire.ViewID{Epoch: f.Epoch, Coord: from}) {
		return // not for this node, or for a view no newer than its own
	}
	if f.Epoch > m.timeLimit(now) || f.Attempt == 0 || f.Attempt > wire.MaxAttempt {
		m.stats.EpochRefused++
		return
	}
	if from != m.self && !m.mayInitiate(from, fromInc, fromView, f.Members) {
		m.stats.RoleRefused++
		return
	}
	if fromView.Less(m.view.ID) && m.view.Has(from) {
		// A member of this node's view that is behind it (it was cut off
		// and does not know it yet) must not pull it back: it secedes
		// when it notices, and is merged in.
		m.stats.StaleMembership++
		return
	}
	m.maxEpoch = max(m.maxEpoch, f.Epoch)
	p := m.participation
	switch {
	case p != nil && id.less(p.id), m.dropped != nil && !m.dropped.less(id):
		// An older flush, or one this node gave up: it may have sent and
		// delivered since its report, which that flush still counts on.
		m.stats.StaleMembership++
		return
	case p != nil && id == p.id:
		if f.Phase == wire.FlushCut && !p.hasCut && !m.cutFits(f.Cuts, p.prior, p.priorInc) {
			m.stats.BadFlushes++
			return
		}
		p.heardAt = now
		m.again(now, f)
		return
	case f.Phase == wire.FlushCut && !m.cutFits(f.Cuts, m.view.ID, m.coordInc()):
		m.stats.BadFlushes++
		return
	}
	outsider := from != m.self && m.state != joining && !m.view.HasInc(from, fromInc)
	if outsider && now.Before(m.mergeHold) {
		m.stats.RoleRefused++ // merges led from outside failed in a row: none for a while
		return
	}
	if p != nil {
		m.mergeFailed(now, p) // superseded
	}
	if r := m.initiation; r != nil && r.id != id {
		m.initiation = nil // a higher flush that includes this node wins
	}
	if m.changeFrom.IsZero() {
		m.changeFrom = now
	}
	m.participation = &participation{id: id, members: slices.Clone(f.Members), prior: m.view.ID, priorInc: m.coordInc(), heardAt: now, since: now, outsider: outsider}
	m.engine.Expect(now, f.Members) // the multicast layer keeps state for the proposed nodes until the view
	m.sendReport()
	if f.Phase == wire.FlushCut {
		m.takeCut(now, f.Cuts)
	}
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

// again answers a repeated flush message: the initiator is missing our
// answer to it.
func (m *Machine) again(now time.Time, f *wire.Flush) {
	p := m.participation
	switch {
	case f.Phase == wire.FlushState && !p.hasCut:
		m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlushOK}, FlushOK: p.report})
	case f.Phase == wire.FlushCut && !p.hasCut:
		m.takeCut(now, f.Cuts)
	case f.Phase == wire.FlushCut && p.done:
		m.sendDone(now)
	}
}

// sendReport stops this node's sends and reports, for each member of its
// view, how far it holds that member's stream in order (for itself: what
// it sent). Every message it delivered is within the report, and the cut
// will be at least the report: what it delivers in this view stays a
// prefix of what every member that installs the next view delivers.
func (m *Machine) sendReport() {
	p := m.participation
	sent := m.engine.Received(m.self, m.inc)
	ok := wire.FlushOK{Epoch: p.id.Epoch, Attempt: p.id.Attempt, Initiator: p.id.Initiator,
		Phase: wire.FlushState, Prior: m.view.ID, PriorInc: p.priorInc, Settings: m.settings, Sent: sent}
	for _, x := range m.view.Members {
		ok.Has = append(ok.Has, wire.Cut{ID: x.ID, Seq: m.engine.Received(x.ID, x.Inc)})
	}
	p.report, p.reported = ok, true
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlushOK}, FlushOK: ok})
}

// takeCut learns the cut of this node's view and starts fetching what it
// misses up to it, from whoever holds it.
func (m *Machine) takeCut(now time.Time, cuts []wire.ViewCut) {
	p := m.participation
	c, _ := cutOf(cuts, p.prior, p.priorInc)
	p.cut, p.hasCut = slices.Clone(c), true
	m.releaseCut()
	m.fetch(now)
}

// fetch asks the engine for the cut and reports whether it holds it all.
func (m *Machine) fetch(now time.Time) bool {
	all := true
	for _, c := range m.participation.cut {
		if inc := m.view.Inc(c.ID); inc != 0 && !m.engine.Want(now, c.ID, inc, c.Seq) {
			all = false
		}
	}
	return all
}

func (m *Machine) sendDone(now time.Time) {
	p := m.participation
	ok := wire.FlushOK{Epoch: p.id.Epoch, Attempt: p.id.Attempt, Initiator: p.id.Initiator,
		Phase: wire.FlushCut, Prior: m.view.ID, PriorInc: p.priorInc, Settings: m.settings, Sent: p.report.Sent}
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindFlushOK}, FlushOK: ok})
	p.resendAt = now.Add(m.retry())
}

// progress moves this node's flush on when the data it waited for has
// arrived: it confirms the cut, or installs the committed view.
func (m *Machine) progress(now time.Time) {
	p := m.participation
	if p == nil || !p.hasCut {
		return
	}
	if !m.fetch(now) {
		return
	}
	if !p.done {
		p.done = true
		m.sendDone(now)
	}
	if p.commit != nil {
		m.install(now, p.commit, p.id.Initiator)
	}
}

// onFlushOK takes a participant's answer to this node's flush.
func (m *Machine) onFlushOK(now time.Time, from, inc uint64, ok *wire.FlushOK) {
	if ok.Initiator != m.self {
		return
	}
	id := flushID{Epoch: ok.Epoch, Attempt: ok.Attempt, Initiator: ok.Initiator}
	r := m.initiation
	if r == nil || r.id != id {
		m.resendCommit(id, ok.Phase)
		return
	}
	if !slices.Contains(r.members, wire.Member{ID: from, Inc: inc}) {
		return
	}
	switch {
	case ok.Phase == wire.FlushState && r.phase == wire.FlushState:
		c := *ok
		c.Has = slices.Clone(ok.Has)
		r.states[from] = c
		if len(r.states) == len(r.members) {
			m.fixCut(now)
		}
	case ok.Phase == wire.FlushCut && r.phase == wire.FlushCut:
		r.dones[from] = true
		if len(r.dones) == len(r.members) {
			m.commit()
		}
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

// fixCut computes, from every participant's report, the cut of each prior
// view among them: for each sender, the most any member of that view
// holds. Participants whose settings differ from this node's are left
// out of the view (and of merges for a while).
func (m *Machine) fixCut(now time.Time) {
	r := m.initiation
	var odd []uint64
	for id, s := range r.states {
		if s.Settings != m.settings {
			odd = append(odd, id)
			m.hold(now, id, incOf(r.members, id), mergeBackoff*m.opt.Engine.SuspectTimeout, false)
			if m.mayReport(now, id) {
				m.emit(Event{Kind: Refused, Member: id, Setting: "settings"})
			}
		}
	}
	if len(odd) > 0 {
		slices.Sort(odd)
		m.restart(now, odd)
		return
	}
	// Prior views are told apart by their coordinator's incarnation too:
	// a coordinator that restarted counts epochs afresh.
	type priorView struct {
		id  wire.ViewID
		inc uint64
	}
	byView := map[priorView]map[uint64]uint64{}
	for _, s := range r.states {
		if s.Prior == (wire.ViewID{}) {
			continue // a joiner: it had no view to flush
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
	r.cuts = r.cuts[:0]
	for v, cut := range byView {
		vc := wire.ViewCut{View: v.id, Inc: v.inc}
		for id, seq := range cut {
			vc.Cuts = append(vc.Cuts, wire.Cut{ID: id, Seq: seq})
		}
		slices.SortFunc(vc.Cuts, func(a, b wire.Cut) int { return cmp.Compare(a.ID, b.ID) })
		r.cuts = append(r.cuts, vc)
	}
	slices.SortFunc(r.cuts, func(a, b wire.ViewCut) int {
		switch {
		case a.View.Less(b.View):
			return -1
		case b.View.Less(a.View):
			return 1
		}
		return cmp.Compare(a.Inc, b.Inc)
	})
	r.phase, r.phaseAt = wire.FlushCut, now
	m.sendFlush(now)
}

// commit ends the flush: every participant holds the cut, and the view is
// installed, here first.
func (m *Machine) commit() {
	r := m.initiation
	c := wire.ViewCommit{Epoch: r.id.Epoch, Attempt: r.id.Attempt, Cuts: r.cuts}
	for _, x := range r.members {
		c.Members = append(c.Members, wire.ViewMember{ID: x.ID, Inc: x.Inc, Next: r.states[x.ID].Sent + 1})
	}
	for _, id := range r.left {
		if !containsMember(r.members, id) {
			c.Left = append(c.Left, id)
		}
	}
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindView}, Commit: c})
	last := m.out[len(m.out)-1] // a copy: m.out is reused
	m.lastCommit = &last
	m.initiation = nil
}

// onCommit takes the initiator's commit of the flush this node is in: it
// must list the members proposed, each of this node's view or heard
// lately, and a cut this node can take (commitFits).
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
	p := m.participation
	if p == nil || p.id != id || p.commit != nil {
		return
	}
	if !m.commitFits(now, p, c) {
		m.stats.BadFlushes++ // a resent commit is looked at again
		return
	}
	p.commit = &wire.ViewCommit{Epoch: c.Epoch, Attempt: c.Attempt,
		Members: slices.Clone(c.Members), Left: slices.Clone(c.Left), Cuts: cloneCuts(c.Cuts)}
	if !p.hasCut {
		m.takeCut(now, p.commit.Cuts)
	}
	m.progress(now)
}

func (m *Machine) committed(c *wire.ViewCommit) bool {
	for _, x := range c.Members {
		if x.ID == m.self {
			return x.Inc == m.inc
		}
	}
	return false
}

// excludedBy notices a view of this node's group that goes on without
// it: it left (done), or it was excluded (it secedes, and is merged back).
func (m *Machine) excludedBy(now time.Time, from, fromInc uint64, c *wire.ViewCommit) {
	if (m.state != member && m.state != leaving) || !m.view.ID.Less(wire.ViewID{Epoch: c.Epoch, Coord: from}) {
		return
	}
	if !m.view.HasInc(from, fromInc) {
		if m.view.Has(from) {
			m.stats.RoleRefused++ // another incarnation of a member speaks for the view
		}
		return
	}
	if m.state == leaving {
		m.finishLeave(now)
		return
	}
	m.emit(Event{Kind: Excluded, Member: from, View: m.view.clone()})
	m.secede(now)
}

// secede ends this node's view without a flush, when the group went on
// without it: it was excluded (it was frozen, or cut off), or a member's
// stream broke off (that member dropped messages this node never got,
// having stopped counting it). The node installs a view of its own, which
// nobody else installs, so what it delivered in the old view binds no
// one; the group's coordinator hears it and merges it back in (the larger
// view leads a merge).
func (m *Machine) secede(now time.Time) {
	if m.state != member {
		return
	}
	if m.participation != nil {
		m.abandon()
	}
	m.initiation = nil
	prior := m.view
	v := View{ID: wire.ViewID{Epoch: m.nextEpoch(), Coord: m.self}, Members: []wire.Member{{ID: m.self, Inc: m.inc}}}
	ev := Event{Kind: ViewInstalled, View: v.clone(), Prior: prior.ID}
	for _, x := range prior.Members {
		if x.ID != m.self {
			ev.Crashed = append(ev.Crashed, x.ID)
		}
	}
	m.setView(now, v, []wire.ViewMember{{ID: m.self, Inc: m.inc, Next: m.engine.Received(m.self, m.inc) + 1}}, prior)
	m.emit(ev)
	m.releaseFuture()
}

func cloneCuts(cs []wire.ViewCut) []wire.ViewCut {
	out := make([]wire.ViewCut, len(cs))
	for i, c := range cs {
		out[i] = wire.ViewCut{View: c.View, Inc: c.Inc, Cuts: slices.Clone(c.Cuts)}
	}
	return out
}

// install delivers what is left of the old view up to the cut and
// installs the committed view.
func (m *Machine) install(now time.Time, c *wire.ViewCommit, coord uint64) {
	prior := m.view
	if p := m.participation; p != nil && p.outsider {
		m.mergeFails = 0 // a merge led from outside went through
	}
	m.dropBeyondCut()
	next := View{ID: wire.ViewID{Epoch: c.Epoch, Coord: coord}}
	for _, x := range c.Members {
		next.Members = append(next.Members, wire.Member{ID: x.ID, Inc: x.Inc})
	}
	ev := Event{Kind: ViewInstalled, View: next.clone(), Prior: prior.ID}
	for _, x := range next.Members {
		if !prior.HasInc(x.ID, x.Inc) {
			ev.Joined = append(ev.Joined, x.ID)
		}
	}
	for _, x := range prior.Members {
		if next.HasInc(x.ID, x.Inc) {
			continue
		}
		if slices.Contains(c.Left, x.ID) {
			ev.Left = append(ev.Left, x.ID)
			m.hold(now, x.ID, x.Inc, 2*m.opt.Engine.SuspectTimeout, false) // it is on its way out
		} else {
			ev.Crashed = append(ev.Crashed, x.ID)
		}
	}
	m.setView(now, next, c.Members, prior)
	if coord == m.self && len(ev.Joined) > 0 {
		m.admitted()
	}
	m.changeFails = false
	if !m.changeFrom.IsZero() {
		ev.Flush = now.Sub(m.changeFrom)
	}
	m.changeFrom = time.Time{}
	m.participation = nil
	m.emit(ev)
	m.releaseFuture()
}

// setView makes v this node's view, here and in the engine.
func (m *Machine) setView(now time.Time, v View, starts []wire.ViewMember, prior View) {
	m.orderer.end() // the old view ends here
	m.view, m.viewAt, m.quietFrom = v, now, now
	m.orderer.setView(v.Members)
	m.maxEpoch = max(m.maxEpoch, v.ID.Epoch)
	if m.state == joining {
		m.state = member
	}
	m.stats.ViewsInstalled++
	m.engine.SetView(v.ID)
	others := []wire.Member{}
	for _, x := range v.Members {
		if x.ID != m.self {
			others = append(others, x)
		}
	}
	m.engine.SetMembers(others)
	clear(m.starts)
	clear(m.broken)
	for _, x := range starts {
		m.starts[x.ID] = x.Next
	}
	for _, x := range prior.Members {
		if x.ID != m.self && !v.HasInc(x.ID, x.Inc) {
			m.engine.Forget(x.ID, x.Inc)
		}
	}
	for _, x := range starts {
		m.engine.Start(now, x.ID, x.Inc, x.Next)
	}
	for id, inc := range m.suspects {
		if !v.HasInc(id, inc) {
			delete(m.suspects, id) // settled, or suspected of an incarnation the view replaced
		}
	}
	m.strangersAfterView(prior)
	m.forgetSettled()
}

// tickFlush resends flush messages nobody answered, excludes members that
// stay silent, and abandons a flush whose initiator went quiet.
func (m *Machine) tickFlush(now time.Time) {
	if r := m.initiation; r != nil {
		silent := m.silent()
		switch {
		case len(silent) > 0 && !now.Before(r.phaseAt.Add(m.flushTimeout())) && r.phase == wire.FlushState:
			m.restart(now, silent)
		case len(silent) > 0 && !now.Before(r.phaseAt.Add(m.flushTimeout())):
			// Members that do not confirm the cut may be alive but unable
			// to get it: its only holder may have crashed since. A new
			// attempt asks everyone again; the new cut is what those alive
			// hold, and whoever does not answer that is excluded. A member
			// that fails to confirm twice is excluded too: the flush must
			// end.
			var again []uint64
			for _, id := range silent {
				if r.cutFails[id]++; r.cutFails[id] >= 2 {
					again = append(again, id)
				}
			}
			m.restart(now, again)
		case !now.Before(r.resendAt):
			m.sendFlush(now)
		}
	}
	p := m.participation
	if p == nil {
		return
	}
	if p.id.Initiator != m.self && (!now.Before(p.heardAt.Add(m.opt.Engine.SuspectTimeout)) ||
		p.commit == nil && !now.Before(p.since.Add(2*m.opt.Engine.SuspectTimeout))) {
		// The initiator went quiet; or this attempt has run longer than
		// any initiator runs one (it restarts after half a suspect timeout
		// per phase), which only a forged flush kept alive does.
		m.abandon()
		return
	}
	if p.done && !now.Before(p.resendAt) {
		m.sendDone(now)
	}
}

// silent lists the proposed members that have not answered this phase.
func (m *Machine) silent() []uint64 {
	var out []uint64
	for _, x := range m.initiation.members {
		if m.isSilent(x.ID) {
			out = append(out, x.ID)
		}
	}
	return out
}

// isSilent says whether proposed member id has not answered this phase.
func (m *Machine) isSilent(id uint64) bool {
	r := m.initiation
	_, stated := r.states[id]
	return r.phase == wire.FlushState && !stated || r.phase == wire.FlushCut && !r.dones[id]
}

// abandon gives up a flush whose initiator is gone without committing: the
// view goes on (a new flush, by whoever coordinates now, will follow).
// What was held for the cut is delivered: nobody installed a next view
// from this flush, so nobody delivered a cut this node must match.
//
// A joiner remembers nothing: it has sent and delivered nothing since its
// report, which stays true.
func (m *Machine) abandon() {
	p := m.participation
	m.participation = nil
	m.stats.FlushesAbandoned++
	m.mergeFailed(m.now, p)
	if m.state != joining {
		m.dropped = &p.id
	}
	if m.initiation != nil && m.initiation.id == p.id {
		m.initiation = nil
	}
	for _, d := range m.pending {
		m.hand(d)
	}
	clear(m.pending)
	m.pending = m.pending[:0]
	m.changeFrom = time.Time{}
}

// mergeBackoff is how many suspect timeouts a node that could not be
// merged (its settings differ) is left alone.
const mergeBackoff = 20
