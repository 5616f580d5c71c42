package membership

import (
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Leaving gracefully, and the leave messages of others: a member's leave,
// or its report that it suspects another (docs/design.md, "Leave",
// "Failure detection").

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
	m.leaveAt, m.joinAt, m.reportAt = time.Time{}, time.Time{}, time.Time{}
	m.coord.idle()
	m.initiator, m.participant = nil, nil
	m.emit(Event{Kind: LeaveDone, View: m.view.clone()})
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
		m.coord.leaving(l.Member, l.MemberInc)
		m.suspects[l.Member] = l.MemberInc // gone at once: no timeout to wait for
		return
	}
	m.coord.exclude(now, l.Member, l.MemberInc, env.From)
}
