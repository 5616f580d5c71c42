package membership

import (
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Joining: a new node asks to be admitted until a flush takes it in, or
// founds a view of its own (docs/design.md, "Join").

// tickJoin asks to be admitted until a flush takes this node in; after
// the join timeout with no answer, it forms a view of its own (others
// heard later are merged).
func (m *Machine) tickJoin(now time.Time) {
	if m.state != joining {
		m.joinAt = time.Time{}
		return
	}
	st := m.opt.Engine.SuspectTimeout
	if m.participant != nil || m.conflicted(now) || now.Sub(m.askedAt) < st && now.Sub(m.startedAt) < 3*m.opt.JoinTimeout+2*st {
		// A flush is taking this node in, or a coordinator asked it for
		// proof lately and is about to (as long as a coordinator's crash
		// and the admission after it take); or another node seems to use
		// its ID (onConflict decides), and asking could displace it.
		m.joinAt = now.Add(2 * m.retry())
		return
	}
	if waited := now.Sub(m.startedAt); waited >= m.opt.JoinTimeout && (waited >= 3*m.opt.JoinTimeout || !m.deferFounding(now)) {
		m.joinAt = time.Time{}
		m.changeFrom = time.Time{}
		m.installAlone(now, Event{Joined: []uint64{m.self}})
		return
	}
	if !now.Before(m.joinAt) {
		m.sendJoin(now)
	}
}

// sendJoin asks to be admitted, with this node's settings.
func (m *Machine) sendJoin(now time.Time) {
	j := wire.Join{}
	for _, s := range m.opt.Settings {
		j.Settings = append(j.Settings, wire.Setting{Name: []byte(s.Name), Value: []byte(s.Value)})
	}
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindJoin}, Join: j})
	m.asked = true
	m.joinAt = now.Add(2 * m.retry())
}

// deferFounding reports whether this joiner should let another node found
// the group: nodes started together would otherwise each found their own
// and merge at once. The joiner with the highest ID founds it and admits
// the others in one view change; a joiner that hears a group keeps asking
// it. Either way, after three join timeouts it founds its own.
func (m *Machine) deferFounding(now time.Time) bool {
	for id, h := range m.heard.nodes {
		if now.Sub(h.at) > m.opt.Engine.SuspectTimeout {
			continue
		}
		if h.view != (wire.ViewID{}) || id > m.self {
			return true
		}
	}
	return false
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
		Theirs: string(r.Ours), Addr: m.heard.get(env.From).addr})
}

// refusalFits reports whether a refusal names a setting this node has, with
// the value it has (the coordinator quotes the joiner's), or one it does
// not send (quoted as empty: a setting sent only when it is not what
// releases before it did, such as sequencer), or a full group.
func (m *Machine) refusalFits(r *wire.Refuse) bool {
	if string(r.Setting) == "members" {
		return true
	}
	mine := "" // a setting this node does not send is quoted as empty
	for _, s := range m.opt.Settings {
		if s.Name == string(r.Setting) {
			mine = s.Value
		}
	}
	return mine == string(r.Theirs) && mine != string(r.Ours)
}
