package election

import (
	"slices"
	"time"
)

// Garcia-Molina, "Elections in a distributed computing system", IEEE
// Trans. Computers C-31(1), 1982: the Bully algorithm. A node holds an
// election by sending ELECTION to every higher member of the view. A
// higher member that gets one sends ANSWER and holds its own election in
// the same round (once per round). A node that no higher member answers
// within AnswerTimeout wins, and tells every other member with a
// COORDINATOR; a node that was answered waits CoordinatorTimeout for that
// COORDINATOR, or starts a new round.
//
// Messages, in a view of n: when the highest member starts (or the
// second-highest after the highest left), n−1 COORDINATOR and nothing
// else. When the lowest starts with everyone alive, every member k of the
// n (by rank, from 1) sends ELECTION to the n−k above it and each answers:
// n(n−1)/2 ELECTION, n(n−1)/2 ANSWER and n−1 COORDINATOR, n²−1 in all.

// holdBully holds this node's own election in the round.
func (m *Machine) holdBully(now time.Time) {
	m.ranOwn = true
	i := len(m.members)
	for i > 0 && m.members[i-1] > m.self {
		i--
	}
	if i == len(m.members) {
		m.winBully(now)
		return
	}
	m.state = candidate
	for _, id := range m.members[i:] {
		m.send(id, kindElection, m.self)
	}
	m.answerAt = now.Add(m.answerTimeout)
}

// winBully makes this node the leader and tells every other member. It
// remembers whom it told, and when: a view change soon after may lose the
// COORDINATOR of a member that had no part in the round (one below every
// initiator), which would keep the same leader from an older round (see
// announce).
func (m *Machine) winBully(now time.Time) {
	m.win(now)
	m.toldAt, m.told = now, m.told[:0]
	for _, id := range m.members {
		if id != m.self {
			m.send(id, kindCoordinator, m.self)
			m.told = append(m.told, id)
		}
	}
	m.complete(now)
}

func (m *Machine) stepBully(now time.Time, from uint64, msg message) {
	switch msg.kind {
	case kindElection:
		m.bullyElection(now, from)
	case kindAnswer:
		m.bullyAnswer(now, from)
	case kindCoordinator:
		m.bullyCoordinator(now, from)
	}
}

// bullyElection handles an ELECTION from a lower member: an ANSWER, and
// this node's own election in the round unless it held one (a sitting
// leader too: the message's newer round made it step down). A node whose
// round is over only answers: the sender gets the COORDINATOR the winner
// sent to all. If this node is that winner and did not send it to the
// sender (a joiner whose announcement a view change lost, now electing
// in a round of the same number), it sends it now.
func (m *Machine) bullyElection(now time.Time, from uint64) {
	if from > m.self {
		m.stats.Ignored++ // ELECTION goes up only: the views disagree
		return
	}
	m.send(from, kindAnswer, m.self)
	switch {
	case m.state == done && m.leader == m.self && !slices.Contains(m.told, from):
		m.send(from, kindCoordinator, m.self)
		m.told = append(m.told, from)
	case !m.ranOwn && m.state != done:
		m.holdBully(now)
	}
}

// bullyAnswer handles an ANSWER: a higher member is alive and takes over.
func (m *Machine) bullyAnswer(now time.Time, from uint64) {
	switch {
	case from < m.self:
		m.stats.Ignored++
	case m.state == candidate:
		m.state, m.answerAt, m.coordAt = waiting, time.Time{}, now.Add(m.coordTimeout)
	} // later answers change nothing
}

// bullyCoordinator handles the COORDINATOR of leader l.
func (m *Machine) bullyCoordinator(now time.Time, l uint64) {
	switch {
	case m.state == done:
		m.adoptLate(now, l)
	case l < m.self:
		// A lower member claims the round without having heard from this
		// node. Garcia-Molina's rule: the higher one bullies it, unless
		// its own election is running already.
		m.stats.Ignored++
		if !m.busy() {
			m.begin(now)
		}
	default:
		m.lead(now, l)
		m.complete(now)
	}
}
