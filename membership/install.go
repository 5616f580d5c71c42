package membership

import (
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Installing views: the commit of a flush, a view of its own when a
// joiner founds the group, and secession when the group went on without
// this node (docs/design.md, "Commit and install", "Exclusion and
// merge-back").

// install delivers what is left of the old view up to the cut and
// installs the committed view.
func (m *Machine) install(now time.Time, c *wire.ViewCommit, coord uint64) {
	prior, p := m.view, m.participant
	if p.outsider {
		m.merges.reset() // a merge led from outside went through
	}
	m.stats.BeyondCut += uint64(len(p.held)) // past the cut: of a member that crashed or was cut off before anyone else got them
	next := View{ID: wire.ViewID{Epoch: c.Epoch, Coord: coord}}
	for _, x := range c.Members {
		next.Members = append(next.Members, wire.Member{ID: x.ID, Inc: x.Inc})
	}
	ev := m.changes(now, prior, next, c.Left)
	m.setPrimary(c.Primary, &next, &ev)
	next.Behind, ev.View.Behind = slices.Clone(c.Behind), slices.Clone(c.Behind)
	m.behind = m.opt.Replicated && (m.behind || slices.Contains(c.Behind, m.self))
	m.setView(now, next, c.Members, prior)
	m.coord.installed(coord == m.self && len(ev.Joined) > 0)
	if !m.changeFrom.IsZero() {
		ev.Flush = now.Sub(m.changeFrom)
	}
	m.changeFrom = time.Time{}
	m.participant = nil
	m.emit(ev)
	m.releaseFuture()
}

// changes is the event of installing next after prior: who joined, who
// left (those the commit lists as leaving gracefully: they are held out
// of merges while on their way out) and who crashed.
func (m *Machine) changes(now time.Time, prior, next View, left []uint64) Event {
	ev := Event{Kind: ViewInstalled, View: next.clone(), Prior: prior.ID}
	for _, x := range next.Members {
		if !prior.HasInc(x.ID, x.Inc) {
			ev.Joined = append(ev.Joined, x.ID)
		}
	}
	for _, x := range prior.Members {
		switch {
		case next.HasInc(x.ID, x.Inc):
		case slices.Contains(left, x.ID):
			ev.Left = append(ev.Left, x.ID)
			m.coord.leftGracefully(now, x)
		default:
			ev.Crashed = append(ev.Crashed, x.ID)
		}
	}
	return ev
}

// setView makes v this node's view, here, in the orderer and in the
// engine; starts says where each member's stream begins in it.
func (m *Machine) setView(now time.Time, v View, starts []wire.ViewMember, prior View) {
	m.orderer.end() // the old view ends here
	m.view, m.viewAt, m.quietFrom = v, now, now
	m.orderer.setView(v.Members)
	m.maxEpoch = max(m.maxEpoch, v.ID.Epoch)
	if m.state == joining {
		m.state = member
	}
	m.stats.ViewsInstalled++
	m.setEngineView(now, v, starts, prior)
	clear(m.starts)
	clear(m.broken)
	for _, x := range starts {
		m.starts[x.ID] = x.Next
	}
	for id, inc := range m.suspects {
		if !v.HasInc(id, inc) {
			delete(m.suspects, id) // settled, or suspected of an incarnation the view replaced
		}
	}
	m.heard.afterView(prior, v)
	m.coord.settle(now, v)
}

// setPrimary marks v, the view about to be installed, primary (gen, its
// generation) or not (gen 0), in ev too.
func (m *Machine) setPrimary(gen uint64, v *View, ev *Event) {
	v.Primary = gen > 0
	m.primary, ev.Primary, ev.View.Primary = gen, gen, gen > 0
	m.known.installed(gen, *v)
}

// setEngineView tells the engine: the view it stamps on what it sends, the
// members stability counts, the streams of members that left (forgotten),
// and where each member's stream begins.
func (m *Machine) setEngineView(now time.Time, v View, starts []wire.ViewMember, prior View) {
	m.engine.SetView(v.ID)
	others := []wire.Member{}
	for _, x := range v.Members {
		if x.ID != m.self {
			others = append(others, x)
		}
	}
	m.engine.SetMembers(others)
	for _, x := range prior.Members {
		if x.ID != m.self && !v.HasInc(x.ID, x.Inc) {
			m.engine.Forget(x.ID, x.Inc)
		}
	}
	for _, x := range starts {
		m.engine.Start(now, x.ID, x.Inc, x.Next)
	}
}

// installAlone installs a view of this node alone, with a new epoch:
// founding the group, or seceding from it.
func (m *Machine) installAlone(now time.Time, ev Event) {
	prior := m.view
	v := View{ID: wire.ViewID{Epoch: m.nextEpoch(), Coord: m.self}, Members: []wire.Member{{ID: m.self, Inc: m.inc}}}
	m.setPrimary(m.opt.Quorum.decide([]wire.Member{{ID: m.self, Inc: m.inc}}, []wire.Known{m.known.wire(m.opt.Quorum, m.behind)}, nil), &v, &ev)
	if m.behind { // alone: its state becomes the group's (View.Provider)
		v.Behind, ev.View.Behind = []uint64{m.self}, []uint64{m.self}
	}
	ev.Kind, ev.View = ViewInstalled, v.clone()
	m.setView(now, v, []wire.ViewMember{{ID: m.self, Inc: m.inc, Next: m.engine.Received(m.self, m.inc) + 1}}, prior)
	m.emit(ev)
	m.releaseFuture()
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
	if m.participant != nil {
		m.abandon()
	}
	m.initiator = nil
	ev := Event{Prior: m.view.ID}
	for _, x := range m.view.Members {
		if x.ID != m.self {
			ev.Crashed = append(ev.Crashed, x.ID)
		}
	}
	m.installAlone(now, ev)
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

// tickStale notices that the group went on without this node: a member
// of its view is heard in a newer view while this node takes part in no
// flush (a flush it was in would have installed that view here too). The
// node was excluded, or missed a commit and gave its flush up; it
// secedes and is merged back.
func (m *Machine) tickStale(now time.Time) {
	if m.state != member || m.participant != nil {
		return
	}
	for _, x := range m.view.Members {
		if h, ok := m.heard.nodes[x.ID]; ok && x.ID != m.self && h.inc == x.Inc && m.view.ID.Less(h.view) && h.at.After(m.viewAt) {
			m.emit(Event{Kind: Excluded, Member: x.ID, View: m.view.clone()})
			m.secede(now)
			return
		}
	}
}
