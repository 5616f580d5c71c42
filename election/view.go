package election

import (
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/idset"
)

// SetView tells the machine the membership view installed now: its ID
// (e.g. "3.1") and its members, in any order. The view may start an
// election (see electOnView). The same view again changes nothing. A view
// without this node leaves the machine without a view: it abandons any
// round and forgets its leader.
func (m *Machine) SetView(now time.Time, view string, members []uint64) {
	m.now = now
	prev, first := m.members, !m.hasView
	ms := idset.Of(members)
	if m.hasView && view == m.view && slices.Equal(ms, m.members) {
		return // the view again: nothing changed
	}
	m.view = view
	m.held = nil // for the old view's round: a new one begins, or none
	if _, ok := slices.BinarySearch(ms, m.self); !ok {
		m.hasView, m.members, m.ring = false, nil, nil
		if m.busy() {
			m.state = idle
		}
		m.leader, m.leaderRound = 0, 0
		m.answerAt, m.coordAt, m.waitAt = time.Time{}, time.Time{}, time.Time{}
		return
	}
	m.hasView, m.members, m.ring = true, ms, ringOf(m.order, ms, members)
	m.heard = nil // their senders restart in this view, as they take part in unfinished rounds
	m.electOnView(now, prev, first)
}

// electOnView decides what a view just installed asks of this node: the
// triggers of docs/design.md, "Leader election" ("a group without a leader, a merge of
// two groups with two leaders, the leader leaving the view"). Every
// member of the view runs it on the same view, so they decide alike:
//
//  1. An election in progress here restarts in the new view, in a new
//     round: messages of the old one are now ignored, and the ring
//     changed.
//  2. A member alone wins at once (0 messages).
//  3. A joiner (its first view, with others in it) waits for the leader
//     to announce itself; it must not start an election while the group
//     has a good leader. After the wait timeout it starts one itself.
//  4. A good leader (in the view, and its highest member) stays; the
//     leader itself announces itself to the members that joined (an
//     ELECTED or COORDINATOR of its round, which they accept without a
//     new round). A bully leader that won less than CoordinatorTimeout
//     ago sends its COORDINATOR again to the members it told then: the
//     view change may have lost some. (A ring leader need not: it
//     finished its round when its ELECTED came back, past every member;
//     and a member that knows no leader heals itself, see tellStraggler.)
//  5. A leader in the view but not its highest (a higher member joined,
//     or two groups merged) is replaced: every member starts, as one
//     election if they share the round.
//  6. No leader known, or the leader left: only the highest of the
//     members that were in the previous view too starts (in bully it
//     wins at once, n−2 COORDINATORs in a view of n−1: Garcia-Molina's
//     best case; in ring it is the best initiator, 2n messages). The
//     others wait for its result; if it fails, the next view change
//     decides again, and the wait timeout is the last resort.
func (m *Machine) electOnView(now time.Time, prev []uint64, first bool) {
	top := m.members[len(m.members)-1]
	switch {
	case m.busy():
		m.begin(now)
	case len(m.members) == 1:
		if m.leader != m.self {
			m.begin(now)
		}
	case first:
		m.wait(now)
	case m.leader != 0 && m.leader == top:
		if m.leader == m.self {
			m.announce(now, prev)
		}
	case m.leader != 0 && m.isMember(m.leader):
		m.begin(now)
	default:
		m.leader, m.leaderRound = 0, 0
		if m.self == highestOfBoth(m.members, prev) {
			m.begin(now)
		} else {
			m.wait(now)
		}
	}
}

// announce tells the members not in prev that this node leads. In bully,
// it also tells again the members its winning COORDINATOR went to less
// than CoordinatorTimeout ago: messages are lost only in view changes, and
// one sent longer ago than the algorithm's own bound on a delivery
// (Garcia-Molina's model is synchronous) was not in flight when this one
// began. It remembers them as told now, for a burst of view changes.
func (m *Machine) announce(now time.Time, prev []uint64) {
	k := kindElected
	var again []uint64
	if m.algorithm == Bully {
		k = kindCoordinator
		if !m.toldAt.IsZero() && now.Sub(m.toldAt) < m.coordTimeout {
			m.told = slices.DeleteFunc(m.told, func(id uint64) bool { return !m.isMember(id) })
			again, m.toldAt = m.told, now
		}
	}
	for _, id := range m.members {
		_, old := slices.BinarySearch(prev, id)
		told := slices.Contains(again, id)
		if id != m.self && (!old || told) {
			m.send(id, k, m.self)
		}
	}
}

// highestOfBoth returns the highest ID in both sorted lists, 0 if none.
func highestOfBoth(a, b []uint64) uint64 {
	for i := len(a) - 1; i >= 0; i-- {
		if _, ok := slices.BinarySearch(b, a[i]); ok {
			return a[i]
		}
	}
	return 0
}

// ringOf returns the ring of a view: its members (ms, ascending) in the
// order's order; for Join, the order of members as the view gives them
// (oldest first), each once.
func ringOf(order RingOrder, ms, members []uint64) []uint64 {
	switch order {
	case Descending:
		r := slices.Clone(ms)
		slices.Reverse(r)
		return r
	case JoinOrder:
		return idset.InOrder(members)
	}
	return ms
}
