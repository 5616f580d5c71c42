package mutex

import (
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/idset"
)

// SetView tells the machine the membership view installed now: its ID
// (e.g. "3.1") and its members, in any order. The same view again changes
// nothing. Ricart–Agrawala 1981 assume a fixed group; over views this
// machine keeps its rules as follows:
//
//   - A member that left no longer has to reply, and its deferred request
//     is dropped (it is gone; should it come back, it asks again).
//   - A pending request goes to every member that joined, and their
//     replies are needed too: a joiner knows nothing of it, and one that
//     asks with a lower timestamp would otherwise be granted by all while
//     this node, granted by the old members, enters as well.
//   - A pending request goes again to every old member whose reply is
//     still needed: a view change may have lost the request or the reply.
//     A second reply to it is counted as Stale.
//   - With a quorum, a holder whose view falls below the majority loses
//     the lock (Exited, Lost), and nothing is granted until the majority is
//     back.
//   - A view without this node leaves the machine without a view: a holder
//     loses the lock, a pending request waits and goes to every member of
//     the next view, deferred requests are dropped.
//   - With a quorum, a view that lost a member of the one before, or the
//     first view after none, starts a quarantine (see Options.Quorum).
//
// The view may grant a pending request at once (its last missing members
// left, or the quorum came back with no reply missing).
func (m *RA) SetView(now time.Time, view string, members []uint64, heard []time.Time) {
	m.setHeard(members, heard)
	ms := idset.Of(members)
	if m.hasView && view == m.view && slices.Equal(ms, m.members) {
		return // the view again: nothing changed
	}
	prev, had := m.members, m.hasView
	m.view = view
	if _, ok := slices.BinarySearch(ms, m.self); !ok {
		m.hasView, m.members = false, nil
		m.deferred, m.needed = nil, nil
		if m.state == Held {
			m.lose(now)
		}
		return
	}
	if m.leased && (!had || slices.ContainsFunc(prev, func(id uint64) bool { _, ok := slices.BinarySearch(ms, id); return !ok })) {
		m.quiet = now.Add(m.lease + m.lease/2)
		m.stats.Quarantines++
	}
	m.hasView, m.members = true, ms
	m.deferred = slices.DeleteFunc(m.deferred, func(r request) bool { return !m.isMember(r.peer) })
	m.needed = slices.DeleteFunc(m.needed, func(id uint64) bool { return !m.isMember(id) })
	switch {
	case m.state == Held && !m.quorate(now):
		m.lose(now) // the other side may hold a majority now
	case m.state == Wanted:
		m.ask(m.toAsk(prev))
		m.tryEnter(now)
	}
}

// SetPrimary implements Lock: outside the primary component nothing is
// granted, and a holder loses the lock.
func (m *RA) SetPrimary(now time.Time, primary bool) {
	m.notPrimary = !primary
	if !primary && m.state == Held {
		m.lose(now)
	}
}

// toAsk returns the members a pending request goes to on a view change:
// the joiners (members not in prev) and the members still needed.
func (m *RA) toAsk(prev []uint64) []uint64 {
	var ids []uint64
	for _, id := range m.others() {
		_, old := slices.BinarySearch(prev, id)
		_, needed := slices.BinarySearch(m.needed, id)
		if needed || (!old && !m.naiveJoin) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Heard tells the machine, in quorum mode, when this node last heard
// member id in its view: the arrival of id's last datagram if it carried
// this node's installed view or the one before it (members move to a new
// view one by one), zero if it carried another. The node calls it for
// every datagram it takes from a member; the lease counts on it. Without a
// quorum, and for nodes outside the view, it does nothing.
func (m *RA) Heard(id uint64, at time.Time) {
	if !m.leased || id == m.self || !m.isMember(id) {
		return
	}
	if at.IsZero() {
		delete(m.heard, id)
		return
	}
	m.heard[id] = at
}

// setHeard replaces what was heard by the times given for the members of a
// new view (heard[i] for members[i]; zero or missing: not heard in it).
func (m *RA) setHeard(members []uint64, heard []time.Time) {
	if !m.leased {
		return
	}
	clear(m.heard)
	for i, id := range members {
		if i < len(heard) && !heard[i].IsZero() && id != m.self {
			m.heard[id] = heard[i]
		}
	}
}
