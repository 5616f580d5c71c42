package election

import (
	"slices"
	"time"
)

// Chang and Roberts, "An improved algorithm for decentralized
// extrema-finding in circular configurations of processes", CACM 22(5),
// 1979. The ring is the view's members by ID (increasing, or decreasing),
// or in the order they joined (Options.Order); a message goes to the next member, wrapping
// round. A candidate's ELECTION travels until a higher member swallows it;
// only the highest comes back to its sender, which is then elected and
// sends ELECTED round once.
//
// Messages, with one initiator: 2n when it is the highest (n ELECTION, n
// ELECTED), 3n−1 when it follows the highest on the ring. With every
// member starting at once: 2n−1 ELECTION when IDs increase along the ring,
// n(n+1)/2 when they decrease, and n ELECTED.

// holdRing begins this node's candidacy.
func (m *Machine) holdRing(now time.Time) {
	if len(m.members) == 1 {
		m.win(now)
		m.complete(now)
		return
	}
	m.state = candidate
	m.send(m.next(), kindElection, m.self)
}

func (m *Machine) stepRing(now time.Time, from uint64, msg message) {
	if msg.kind == kindElection {
		m.ringElection(now, from, msg.id)
		return
	}
	m.ringElected(now, from, msg.id)
}

// ringElection handles an ELECTION naming candidate c.
func (m *Machine) ringElection(now time.Time, from, c uint64) {
	if m.state != done {
		m.hear(from)
	}
	switch {
	case m.state == done:
		m.stats.Stale++ // the round is over here: the sender missed its end
		m.tellStraggler(from)
	case c > m.self && m.state != elected:
		m.state = candidate // a higher candidate: pass it on
		m.send(m.next(), kindElection, c)
	case c < m.self:
		if m.state == idle { // a lower candidate wakes this node: it stands instead
			m.state = candidate
			m.send(m.next(), kindElection, m.self)
		} // a participant swallows it: that candidacy cannot win
	case c == m.self && m.state == candidate:
		m.state = elected // its own candidacy went round: no member is higher
		m.win(now)
		m.send(m.next(), kindElected, m.self)
	default:
		m.stats.Ignored++
	}
}

// ringElected handles an ELECTED naming leader l, from member from.
func (m *Machine) ringElected(now time.Time, from, l uint64) {
	switch {
	case l == m.self && m.state == elected:
		m.complete(now) // its ELECTED went round: everyone knows
		m.tellHeard(from)
	case m.state == done:
		m.adoptLate(now, l)
	case l <= m.self:
		m.stats.Ignored++ // a leader lower than this node missed it; a wait or a view change settles it
	case m.state == candidate:
		m.lead(now, l)
		m.send(m.next(), kindElected, l)
		m.complete(now)
		m.tellHeard(from)
	case m.state == idle:
		m.lead(now, l) // an announcement: to a joiner, or to a straggler
		m.complete(now)
		m.tellHeard(from)
	default:
		m.stats.Ignored++
	}
}

// next is the member after this one on the ring.
func (m *Machine) next() uint64 {
	i := slices.Index(m.ring, m.self)
	return m.ring[(i+1)%len(m.ring)]
}
