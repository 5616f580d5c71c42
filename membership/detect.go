package membership

import (
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
)

// Failure detection: the engine's events, suspicions and their reports to
// the coordinator (docs/design.md, "Failure detection").

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
		if !m.coord.isLeaving(ev.Peer) && m.suspects[ev.Peer] == ev.Inc {
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
	if p := m.participant; p != nil && p.id.Initiator == id {
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
		if m.coord.isLeaving(id) {
			continue
		}
		m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindLeave},
			Leave: wire.Leave{Member: id, MemberInc: m.view.Inc(id), Reason: wire.LeaveSuspect}})
		m.reportAt = now.Add(4 * m.retry())
	}
}

// tickUnheard suspects the members not heard at all since the view was
// installed, for a suspect timeout (not counting this node's pauses), and
// unknown to the engine: the engine loses only peers it once heard, so a
// member that never spoke (a phantom a forged commit listed, or a node
// that died as it was admitted) would hold total and safe delivery for
// ever.
func (m *Machine) tickUnheard(now time.Time) {
	if m.state != member && m.state != leaving || now.Sub(m.quietFrom) < m.suspectTimeout() {
		return
	}
	for _, x := range m.view.Members {
		if x.ID == m.self || m.suspects[x.ID] == x.Inc {
			continue
		}
		if h := m.heard.get(x.ID); h.inc == x.Inc && !h.at.Before(m.viewAt) {
			continue
		}
		if m.engine.Holds(x.ID, x.ID, x.Inc) != 0 {
			continue // a live peer: the engine loses it in time
		}
		m.suspect(now, x.ID, x.Inc, now.Sub(m.viewAt))
	}
}
