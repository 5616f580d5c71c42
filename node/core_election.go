package node

import (
	"errors"
	"time"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// ElectionService is the group service the election's messages travel on.
const ElectionService = "election"

var electionService = []byte(ElectionService)

// maxProtocolQueue bounds the election's (and the lock's) messages waiting
// for a view change or the send window: far more than one round of the
// largest group sends.
const maxProtocolQueue = 4096

// electionPart is the election's part of a Core: the machine, and the
// messages it waits to send.
type electionPart struct {
	m   *election.Machine
	out outQueue
}

// outQueue holds a node protocol's messages until the view and the send
// window let them go.
type outQueue struct {
	msgs    []queued
	dropped uint64 // messages dropped: the queue was full, or a send failed for good
}

// queued is a message to member to (0: to every other member), in FIFO
// order, or with total in total order to every member, the sender
// included.
type queued struct {
	to      uint64
	payload []byte
	total   bool
}

// add queues a message, as far as the queue takes it.
func (q *outQueue) add(to uint64, payload []byte) { q.addOrdered(to, payload, false) }

// addOrdered is add of a message that goes in total order when total.
func (q *outQueue) addOrdered(to uint64, payload []byte, total bool) {
	if len(q.msgs) >= maxProtocolQueue {
		q.dropped++
		return
	}
	q.msgs = append(q.msgs, queued{to, payload, total})
}

// clear drops what waits: a view change makes the protocol send anew.
func (q *outQueue) clear() { q.msgs = q.msgs[:0] }

// send multicasts the queued messages on the service, each addressed to
// its member, in order, as far as the view and the window let it now;
// while a view change holds sends, or the window is full, the rest wait
// for a later step.
func (q *outQueue) send(m *membership.Machine, service []byte) {
	n := 0
	for ; n < len(q.msgs); n++ {
		order := wire.FIFO
		if q.msgs[n].total {
			order = wire.Total
		}
		_, err := m.Multicast(service, q.msgs[n].payload, order, q.msgs[n].to)
		if errors.Is(err, membership.ErrBlocked) || errors.Is(err, multicast.ErrWindowFull) || errors.Is(err, membership.ErrNotInView) {
			break
		}
		if err != nil {
			q.dropped++
		}
	}
	q.msgs = append(q.msgs[:0], q.msgs[n:]...)
}

// newElectionPart makes the election machine of a node from its options;
// bully timeouts left at 0 are derived from the heartbeat and the suspect
// timeout (election.Options.Timeouts).
func newElectionPart(o CoreOptions) electionPart {
	eo, eng := o.Election, o.Membership.Engine
	eo.Self = eng.Self
	eo.AnswerTimeout, eo.CoordinatorTimeout = eo.Timeouts(eng.Heartbeat, eng.SuspectTimeout)
	return electionPart{m: election.New(eo)}
}

// setView tells the election of the view installed now; the messages
// queued for the old view's members and round are dropped.
func (e *electionPart) setView(now time.Time, id wire.ViewID, members []uint64) {
	e.out.clear()
	e.m.SetView(now, id.String(), members)
}

// StartElection starts an election now, as `huddle elect` asks; false when
// this node already takes part in one, or has no view yet.
func (c *Core) StartElection(now time.Time) bool {
	c.lastInput = now
	c.route(now)
	ok := c.election.m.Start(now)
	c.protocolsStep()
	return ok
}

// Leader returns the leader this node knows (0 = none yet) and the round
// of the election that chose it.
func (c *Core) Leader() (leader, round uint64) { return c.election.m.Leader() }

// ElectionStats returns the election's counters and the messages the node
// dropped for it.
func (c *Core) ElectionStats() (election.Stats, uint64) {
	return c.election.m.Stats(), c.election.out.dropped
}
