package membership

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
)

// fits reports whether the commit of a view of these members would fit
// the largest membership message (Options.MessageSize): it lists every member and where its stream starts, and the cut
// of each prior view (priors of them). Sequence numbers are bounded by
// what each member holds now plus a window it might still send.
func (m *Machine) fits(members []wire.Member, priors int) bool {
	bound := func(x wire.Member) uint64 {
		return m.engine.Received(x.ID, x.Inc) + uint64(m.engine.Options().Window) + 1
	}
	c := wire.ViewCommit{Epoch: m.maxEpoch + 2, Attempt: wire.MaxAttempt}
	var cut []wire.Cut
	for _, x := range members {
		c.Members = append(c.Members, wire.ViewMember{ID: x.ID, Inc: x.Inc, Next: bound(x)})
		cut = append(cut, wire.Cut{ID: x.ID, Seq: bound(x)})
	}
	for range max(priors, 1) {
		c.Cuts = append(c.Cuts, wire.ViewCut{View: wire.ViewID{Epoch: m.maxEpoch + 1, Coord: ^uint64(0)}, Inc: ^uint64(0), Cuts: cut})
	}
	env := wire.Envelope{Header: wire.Header{Group: ^uint32(0), From: m.self, Inc: m.inc, Kind: wire.KindView,
		View: wire.ViewID{Epoch: m.maxEpoch + 1, Coord: m.self}}, Commit: c}
	n, err := wire.EncodedSize(&env)
	return err == nil && n <= cmp.Or(m.opt.MessageSize, m.engine.Options().DatagramSize)
}

// acting reports whether this node coordinates its view now: it is the
// oldest member not suspected of having crashed or left.
func (m *Machine) acting() bool {
	if m.state != member {
		return false
	}
	for _, x := range m.view.Members {
		if x.ID == m.self {
			return true
		}
		if m.suspects[x.ID] != x.Inc {
			return false
		}
	}
	return false
}

// tickCoordinator starts a view change when one is due: members to
// exclude (suspected or leaving), joiners to admit, other views to merge.
// Changes that arrive together share one view change: the flush starts a
// retry interval after the first of them.
func (m *Machine) tickCoordinator(now time.Time) {
	if !m.acting() || m.initiation != nil || m.participation != nil {
		m.changeAt = time.Time{} // looked at again once the flush is over
		return
	}
	members, left, ok := m.proposal(now)
	if !ok {
		m.changeAt = time.Time{}
		return
	}
	if m.changeAt.IsZero() {
		m.changeAt = now.Add(m.retry() / 2)
	}
	if now.Before(m.changeAt) {
		return
	}
	m.changeAt = time.Time{}
	m.startFlush(now, members, left)
}

// proposal is the next view's members, oldest first, and the graceful
// leavers it drops; ok is false when nothing changes.
func (m *Machine) proposal(now time.Time) (members []wire.Member, left []uint64, ok bool) {
	changed := false
	for _, x := range m.view.Members {
		suspect := m.suspects[x.ID] == x.Inc
		_, excl := m.excluded[x.ID]
		if j, replaced := m.joiners[x.ID]; replaced && j.inc != x.Inc {
			excl = true // restarted: its new incarnation joins below
		}
		switch {
		case x.ID == m.self:
			members = append(members, x)
		case suspect || excl:
			changed = true
			if _, l := m.leavers[x.ID]; l {
				left = append(left, x.ID)
			}
		default:
			members = append(members, x)
		}
	}
	priors := map[wire.ViewID]bool{m.view.ID: true}
	var merge []uint64
	if !now.Before(m.admitHold) {
		merge = m.mergeable(now) // admissions failed in a row: nobody is merged for a while
	}
	for _, id := range merge {
		h := m.heard[id]
		x := wire.Member{ID: id, Inc: h.inc}
		was := priors[h.view]
		priors[h.view] = true
		if !m.fits(append(members, x), len(priors)) {
			if !was {
				delete(priors, h.view)
			}
			break
		}
		members = append(members, x)
		changed = true
	}
	if now.Before(m.admitHold) {
		return members, left, changed // nor does a joiner come in
	}
	for _, id := range sortedKeys(m.joiners) {
		m.tickWork++
		j := m.joiners[id]
		x := wire.Member{ID: id, Inc: j.inc}
		if now.Sub(j.at) > m.opt.Engine.SuspectTimeout {
			delete(m.joiners, id) // it stopped asking
			continue
		}
		if containsMember(members, id) {
			continue
		}
		if !m.fits(append(members, x), len(priors)) {
			m.refuse(id, x.Inc, "members", itoa(uint64(len(members))), "one more")
			delete(m.joiners, id)
			continue
		}
		members = append(members, x)
		changed = true
	}
	return members, left, changed
}

// mergeable lists the nodes this coordinator should merge into its view:
// heard lately (and since this view was installed: a node it just
// excluded still echoes the old view), in another view, not refused
// lately, and of a view this coordinator leads the merge with. The larger
// view leads, as far as this node can tell from what it hears (how many
// nodes claim each view); between equals, the newer view. So a member cut
// off alone, whose own view is newer, is merged back by the group rather
// than taking it over. Should the other side not lead either (each
// counts differently), this one leads after a few suspect timeouts.
func (m *Machine) mergeable(now time.Time) []uint64 {
	claims := map[wire.ViewID]int{}
	fresh := func(h heard) bool {
		return h.view != (wire.ViewID{}) && now.Sub(h.at) <= m.opt.Engine.SuspectTimeout && h.at.After(m.viewAt)
	}
	var cands []uint64
	for id, h := range m.heard {
		m.tickWork++
		if !fresh(h) {
			delete(m.foreign, id)
			continue
		}
		claims[h.view]++
		// A node that is not a member but claims this view's ID is in
		// another view of the same ID: a restarted coordinator's.
		if m.view.HasInc(id, h.inc) || m.heldOff(now, id) {
			delete(m.foreign, id)
			continue
		}
		cands = append(cands, id)
	}
	slices.Sort(cands)
	var ids []uint64
	for _, id := range cands {
		h := m.heard[id]
		if _, ok := m.foreign[id]; !ok {
			m.foreign[id] = now
		}
		ours, theirs := len(m.view.Members), claims[h.view]
		lead := ours > theirs || ours == theirs && h.view.Less(m.view.ID) ||
			now.Sub(m.foreign[id]) >= mergeWait*m.opt.Engine.SuspectTimeout
		if lead {
			ids = append(ids, id)
		}
	}
	return ids
}

// mergeWait is how many suspect timeouts a coordinator waits for the
// other side to lead a merge before it leads it itself.
const mergeWait = 4

// tickStale notices that the group went on without this node: a member
// of its view is heard in a newer view while this node takes part in no
// flush (a flush it was in would have installed that view here too). The
// node was excluded, or missed a commit and gave its flush up; it
// secedes and is merged back.
func (m *Machine) tickStale(now time.Time) {
	if m.state != member || m.participation != nil {
		return
	}
	for _, x := range m.view.Members {
		if h, ok := m.heard[x.ID]; ok && x.ID != m.self && h.inc == x.Inc && m.view.ID.Less(h.view) && h.at.After(m.viewAt) {
			m.emit(Event{Kind: Excluded, Member: x.ID, View: m.view.clone()})
			m.secede(now)
			return
		}
	}
}

// forgetSettled drops the pending changes a new view has made.
func (m *Machine) forgetSettled() {
	for id, j := range m.joiners {
		if m.view.HasInc(id, j.inc) {
			delete(m.joiners, id)
		}
	}
	for id, o := range m.offs {
		if m.view.HasInc(id, o.inc) {
			delete(m.offs, id) // it is in: it answered
		}
	}
	for id := range m.excluded {
		if !m.view.HasInc(id, m.excluded[id]) {
			delete(m.excluded, id)
		}
	}
	for id, inc := range m.leavers {
		if !m.view.HasInc(id, inc) {
			delete(m.leavers, id)
		}
	}
}

// onJoin takes a join request. The acting coordinator checks the joiner's
// settings and admits it with the next view change; a joiner whose
// settings differ, or that would not fit, is refused.
//
// A join request of a member's newer incarnation says the member
// restarted, and its old incarnation is suspected at once, unless that
// one spoke within half a heartbeat: a restarted node listens a heartbeat
// before it asks, so the request is forged (or the old one lives on) and
// waits. A node that did not answer its last admission is held off
// (hold), and at most maxJoiners requests wait at once.
func (m *Machine) onJoin(now time.Time, env *wire.Envelope) {
	if old := m.view.Inc(env.From); old != 0 && old < env.Inc {
		if h := m.heard[env.From]; h.inc == old && now.Sub(h.at) < m.opt.Engine.Heartbeat/2 {
			m.stats.JoinsHeldOff++
			return
		}
		m.suspect(now, env.From, old, 0) // it restarted: the old incarnation is gone
	}
	if !m.acting() || m.view.HasInc(env.From, env.Inc) {
		return
	}
	if _, pending := m.joiners[env.From]; m.joinHeldOff(now, env.From, env.Inc) || !pending && len(m.joiners) >= maxJoiners {
		m.stats.JoinsHeldOff++
		return
	}
	if name, ours, theirs, differ := m.compare(env.Join.Settings); differ {
		m.refuse(env.From, env.Inc, name, ours, theirs)
		return
	}
	m.joiners[env.From] = joiner{inc: env.Inc, at: now} // proposal refuses it if the view would not fit a datagram
}

// compare returns the first protocol setting in which a joiner differs.
func (m *Machine) compare(theirs []wire.Setting) (name, ours, their string, differ bool) {
	for _, s := range m.opt.Settings {
		v, ok := "", false
		for _, t := range theirs {
			if string(t.Name) == s.Name {
				v, ok = string(t.Value), true
				break
			}
		}
		if !ok || v != s.Value {
			return s.Name, s.Value, v, true
		}
	}
	for _, t := range theirs {
		if !slices.ContainsFunc(m.opt.Settings, func(s Setting) bool { return s.Name == string(t.Name) }) {
			return string(t.Name), "", string(t.Value), true
		}
	}
	return "", "", "", false
}

// refuse refuses a joiner, at most limitBurst joiners per suspect timeout
// (a refused joiner asks again and is refused then).
func (m *Machine) refuse(id, inc uint64, setting, ours, theirs string) {
	if !m.mayReport(m.now, id) {
		return
	}
	m.stats.JoinsRefused++
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindRefuse}, Refuse: wire.Refuse{
		Target: id, TargetInc: inc, Setting: []byte(setting), Ours: []byte(ours), Theirs: []byte(theirs)}})
	m.emit(Event{Kind: Refused, Member: id, Setting: setting, Ours: ours, Theirs: theirs})
}

// onRefuse takes a coordinator's refusal of this node: it stops. Only a
// joiner that asked is refused, only by the coordinator of a view (the
// node that refuses is the view's first), and only for a setting this
// joiner has as the refusal says (or for a full group).
func (m *Machine) onRefuse(now time.Time, env *wire.Envelope) {
	r := &env.Refuse
	if r.Target != m.self || r.TargetInc != m.inc || m.state != joining {
		return
	}
	if !m.asked || env.View == (wire.ViewID{}) || env.View.Coord != env.From || !m.refusalFits(r) {
		m.stats.RoleRefused++
		return
	}
	m.state = gone
	m.emit(Event{Kind: Refused, Member: m.self, Setting: string(r.Setting), Ours: string(r.Theirs),
		Theirs: string(r.Ours), Addr: m.heard[env.From].addr})
}

// refusalFits reports whether a refusal names a setting this node has, with
// the value it has (the coordinator quotes the joiner's), or a full group.
func (m *Machine) refusalFits(r *wire.Refuse) bool {
	if string(r.Setting) == "members" {
		return true
	}
	mine, has := "", false
	for _, s := range m.opt.Settings {
		if s.Name == string(r.Setting) {
			mine, has = s.Value, true
		}
	}
	return has && mine == string(r.Theirs) && mine != string(r.Ours)
}

// onLeave takes a member's leave request, or a member's report that it
// suspects another. A leave speaks for its sender only; a suspicion
// counts only from a member of this node's view.
func (m *Machine) onLeave(now time.Time, env *wire.Envelope) {
	l := &env.Leave
	if !m.view.HasInc(l.Member, l.MemberInc) || l.Member == m.self {
		return
	}
	if !m.view.HasInc(env.From, env.Inc) || l.Reason == wire.LeaveGraceful && (l.Member != env.From || l.MemberInc != env.Inc) {
		m.stats.RoleRefused++
		return
	}
	if l.Reason == wire.LeaveGraceful {
		m.leavers[l.Member] = l.MemberInc
		m.suspects[l.Member] = l.MemberInc // gone at once: no timeout to wait for
		return
	}
	m.excluded[l.Member] = l.MemberInc
}

// Leave starts a graceful leave: the node asks to be excluded and stops
// sending; Left reports when a view without it exists (or after a suspect
// timeout, when nobody answers).
func (m *Machine) Leave(now time.Time) {
	switch m.state {
	case gone, leaving:
		return
	case joining:
		m.finishLeave(now)
		return
	}
	if len(m.view.Members) == 1 {
		m.finishLeave(now)
		return
	}
	m.state = leaving
	m.leaveBy = now.Add(m.opt.Engine.SuspectTimeout)
	m.sendLeave(now)
}

func (m *Machine) sendLeave(now time.Time) {
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindLeave},
		Leave: wire.Leave{Member: m.self, MemberInc: m.inc, Reason: wire.LeaveGraceful}})
	m.leaveAt = now.Add(m.retry())
}

func (m *Machine) tickLeave(now time.Time) {
	if m.state != leaving {
		m.leaveAt = time.Time{}
		return
	}
	if !now.Before(m.leaveBy) {
		m.finishLeave(now)
		return
	}
	if !now.Before(m.leaveAt) {
		m.sendLeave(now)
	}
}

func (m *Machine) finishLeave(now time.Time) {
	m.state = gone
	m.leaveAt, m.joinAt, m.reportAt, m.changeAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	m.initiation, m.participation = nil, nil
	m.emit(Event{Kind: LeaveDone, View: m.view.clone()})
}

// tickJoin asks to be admitted until a flush takes this node in; after
// the join timeout with no answer, it forms a view of its own (others
// heard later are merged).
func (m *Machine) tickJoin(now time.Time) {
	if m.state != joining {
		m.joinAt = time.Time{}
		return
	}
	if m.participation != nil || m.conflicted(now) {
		// A flush is taking this node in; or another node seems to use
		// its ID (onConflict decides), and asking could displace it.
		m.joinAt = now.Add(2 * m.retry())
		return
	}
	if waited := now.Sub(m.startedAt); waited >= m.opt.JoinTimeout && (waited >= 3*m.opt.JoinTimeout || !m.deferFounding(now)) {
		m.joinAt = time.Time{}
		m.changeFrom = time.Time{}
		self := []wire.ViewMember{{ID: m.self, Inc: m.inc, Next: m.engine.Received(m.self, m.inc) + 1}}
		v := View{ID: wire.ViewID{Epoch: m.nextEpoch(), Coord: m.self}, Members: []wire.Member{{ID: m.self, Inc: m.inc}}}
		m.setView(now, v, self, View{})
		m.emit(Event{Kind: ViewInstalled, View: v.clone(), Joined: []uint64{m.self}})
		m.releaseFuture()
		return
	}
	if !now.Before(m.joinAt) {
		j := wire.Join{}
		for _, s := range m.opt.Settings {
			j.Settings = append(j.Settings, wire.Setting{Name: []byte(s.Name), Value: []byte(s.Value)})
		}
		m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindJoin}, Join: j})
		m.asked = true
		m.joinAt = now.Add(2 * m.retry())
	}
}

// deferFounding reports whether this joiner should let another node found
// the group: nodes started together would otherwise each found their own
// and merge at once. The joiner with the highest ID founds it and admits
// the others in one view change; a joiner that hears a group keeps asking
// it. Either way, after three join timeouts it founds its own.
func (m *Machine) deferFounding(now time.Time) bool {
	for id, h := range m.heard {
		if now.Sub(h.at) > m.opt.Engine.SuspectTimeout {
			continue
		}
		if h.view != (wire.ViewID{}) || id > m.self {
			return true
		}
	}
	return false
}

// onEngineEvent turns what the multicast layer noticed into membership:
// a member silent for the suspect timeout, or holding the send window
// full as long, is suspected. (Another live node with this node's ID is
// a conflict, which the later of the two loses: onConflict weighs the
// evidence.) The engine's events about nodes outside the view are handed
// out at most limitBurst per suspect timeout.
func (m *Machine) onEngineEvent(now time.Time, ev multicast.Event) {
	// Messages of a member lost for good within the view: the member went
	// on without this node. (Losses before the member's start in the view
	// are not the view's: a joiner hears of what was sent before it came.)
	start, ok := m.starts[ev.Peer]
	inView := ev.Kind == multicast.StreamSkipped && ok && m.view.HasInc(ev.Peer, ev.Inc) && ev.From+ev.Skipped > start
	if ev.Peer == m.self || m.mayReport(now, ev.Peer) {
		m.emit(Event{Kind: Engine, Multicast: ev, InView: inView})
	}
	switch ev.Kind {
	case multicast.PeerLost, multicast.PeerLagging:
		m.suspect(now, ev.Peer, ev.Inc, ev.Silent)
	case multicast.PeerSeen:
		if _, leaving := m.leavers[ev.Peer]; !leaving && m.suspects[ev.Peer] == ev.Inc {
			delete(m.suspects, ev.Peer) // it was only quiet; a flush may exclude it anyway
		}
	case multicast.StreamSkipped:
		if inView {
			m.broken[ev.Peer] = true
			if m.state == member {
				m.emit(Event{Kind: Excluded, Member: ev.Peer, View: m.view.clone()})
				m.secede(now)
			}
		}
	}
}

func (m *Machine) suspect(now time.Time, id, inc uint64, silent time.Duration) {
	if m.state == gone || !m.view.HasInc(id, inc) || id == m.self {
		return
	}
	if m.suspects[id] == inc {
		return
	}
	m.suspects[id] = inc
	m.stats.Suspicions++
	m.emit(Event{Kind: Suspected, Member: id, Silent: silent, View: m.view.clone()})
	if p := m.participation; p != nil && p.id.Initiator == id {
		m.abandon() // its initiator is gone: whoever coordinates now flushes
	}
	m.reportAt = now
}

// tickSuspicions reports this node's suspicions to the acting
// coordinator until a view settles them.
func (m *Machine) tickSuspicions(now time.Time) {
	if m.reportAt.IsZero() || now.Before(m.reportAt) {
		return
	}
	m.reportAt = time.Time{}
	if m.state != member || m.acting() {
		return
	}
	for _, id := range sortedKeys(m.suspects) {
		if _, l := m.leavers[id]; l {
			continue
		}
		m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindLeave},
			Leave: wire.Leave{Member: id, MemberInc: m.view.Inc(id), Reason: wire.LeaveSuspect}})
		m.reportAt = now.Add(4 * m.retry())
	}
}

func sortedKeys[V any](mp map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(mp))
	for id := range mp {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, cmp.Compare)
	return ids
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
