package node

import (
	"context"
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

// ElectionOptions configures the election a Core runs.
type ElectionOptions struct {
	Algorithm election.Algorithm // "" = ring
	Every     time.Duration      // start an election this often; 0 = only when needed or asked
	Count     int                // stop the periodic ones after this many; 0 = no limit
}

// maxElectionQueue bounds the election messages waiting for a view change
// or the send window: far more than one round of the largest group sends.
const maxElectionQueue = 4096

// elect is the election's part of a Core: the machine, and what it waits
// to send.
type elect struct {
	m        *election.Machine
	queue    []election.Message
	events   []election.Event
	view     wire.ViewID // the view the machine last heard of
	viewInc  uint64      // its coordinator's incarnation
	periodAt time.Time   // the next periodic election; zero = none
	started  int         // periodic elections started
	dropped  uint64      // messages dropped: the queue was full, or a send failed for good
}

// newElect makes the election machine of a node with the given timers.
func newElect(self uint64, o ElectionOptions, heartbeat, suspect time.Duration, now time.Time) elect {
	alg := o.Algorithm
	if alg == "" {
		alg = election.Ring
	}
	// A higher member that is in the view answers within a few one-way
	// delays and a repair or two; one that crashed is excluded within the
	// suspect timeout, and the view change restarts the election.
	answer := 2 * heartbeat
	e := elect{m: election.New(election.Options{Self: self, Algorithm: alg,
		AnswerTimeout: answer, CoordinatorTimeout: suspect + answer})}
	if o.Every > 0 {
		e.periodAt = now.Add(o.Every)
	}
	return e
}

// claim takes the election's and the lock's messages out of the
// deliveries (Options.Claim).
func (c *Core) claim(d *membership.Delivery) bool {
	switch string(d.Service) {
	case ElectionService:
		c.syncView(c.now) // a message of a view just installed: the machine must know the view first
		c.el.m.Receive(c.now, d.Source, d.Payload)
	case MutexService:
		if d.Source != c.opt.ID { // not its own multicast request
			c.syncView(c.now)
			c.mu.m.Receive(c.now, d.Source, d.Payload)
		}
	default:
		return false
	}
	c.stats.ProtocolMsgs++
	return true
}

// syncView tells the election and the lock of the installed view, once.
func (c *Core) syncView(now time.Time) {
	e := &c.el
	id, inc := c.m.ViewKey() // on every datagram: no copy of the view unless it changed
	if inc == 0 || id == e.view && inc == e.viewInc {
		return
	}
	e.view, e.viewInc = id, inc
	e.queue = e.queue[:0] // messages for the old view's members and round
	ids := c.m.View().IDs()
	e.m.SetView(now, id.String(), ids)
	c.mu.setView(now, id, ids)
}

// electionStep runs the election after the layers below moved: it tells
// the machine of a new view, starts the periodic elections, and sends
// what the machine wants sent.
func (c *Core) electionStep(now time.Time) {
	e := &c.el
	c.syncView(now)
	if o := c.opt.Election; !e.periodAt.IsZero() && !now.Before(e.periodAt) {
		e.periodAt = now.Add(o.Every)
		if e.m.Start(now) {
			e.started++
		}
		if o.Count > 0 && e.started >= o.Count {
			e.periodAt = time.Time{}
		}
	}
	for _, msg := range e.m.TakeOutput() {
		if len(e.queue) >= maxElectionQueue {
			e.dropped++
			continue
		}
		e.queue = append(e.queue, msg)
	}
	e.events = append(e.events, e.m.TakeEvents()...)
	c.sendElection()
}

// sendElection sends the queued election messages.
func (c *Core) sendElection() {
	e := &c.el
	n, dropped := c.sendAddressed(electionService, len(e.queue), func(i int) (uint64, []byte) { return e.queue[i].To, e.queue[i].Payload })
	e.dropped += dropped
	e.queue = append(e.queue[:0], e.queue[n:]...)
}

// sendAddressed sends the first n queued messages of a node protocol on
// its service, each addressed to its member, in order, and returns how
// many it took off the queue (and how many of those failed for good).
// While a view change holds sends, or the window is full, the rest wait
// for a later step.
func (c *Core) sendAddressed(service []byte, n int, at func(i int) (to uint64, payload []byte)) (taken int, dropped uint64) {
	for ; taken < n; taken++ {
		to, p := at(taken)
		_, err := c.m.Multicast(service, p, wire.FIFO, to)
		if errors.Is(err, membership.ErrBlocked) || errors.Is(err, multicast.ErrWindowFull) || errors.Is(err, membership.ErrNotInView) {
			break
		}
		if err != nil {
			dropped++
		}
	}
	return taken, dropped
}

// StartElection starts an election now, as `huddle elect` asks; false when
// this node already takes part in one, or has no view yet.
func (c *Core) StartElection(now time.Time) bool {
	c.now = now
	ok := c.el.m.Start(now)
	c.electionStep(now)
	return ok
}

// Leader returns the leader this node knows (0 = none yet) and the round
// of the election that chose it.
func (c *Core) Leader() (leader, round uint64) { return c.el.m.Leader() }

// TakeElectionEvents returns the election's events since the last call.
func (c *Core) TakeElectionEvents() []election.Event {
	ev := c.el.events
	c.el.events = nil
	return ev
}

// ElectionStats returns the election's counters and the messages the node
// dropped for it.
func (c *Core) ElectionStats() (election.Stats, uint64) { return c.el.m.Stats(), c.el.dropped }

// electionDeadline is when the election needs the clock next.
func (c *Core) electionDeadline() time.Time {
	d := c.el.m.NextDeadline()
	if p := c.el.periodAt; !p.IsZero() && (d.IsZero() || p.Before(d)) {
		d = p
	}
	return d
}

// logElection logs one election event: election.started at an initiator,
// election.won at the winner, leader.changed and election.done at every
// node (done's sent, summed over the nodes' logs, is the round's count).
func (r *Node) logElection(ev election.Event) {
	e := r.log.Info().Str("algorithm", string(ev.Algorithm)).Uint64("round", ev.Round).Str("view", ev.View)
	switch ev.Kind {
	case election.Started:
		e.Str("event", "election.started").Uint64("initiator", ev.Initiator).Msg("election started")
	case election.Won:
		e.Str("event", "election.won").Uint64("leader", ev.Leader).Msg("elected leader")
	case election.LeaderChanged:
		e.Str("event", "leader.changed").Uint64("leader", ev.Leader).
			Float64("duration_ms", float64(ev.Duration.Microseconds())/1000).Msgf("leader %d", ev.Leader)
	case election.Done:
		if ev.Late {
			e.Str("event", "election.done").Uint64("leader", ev.Leader).Int("sent", ev.Sent).Bool("late", true).
				Msg("election message sent after the round was over here")
			return
		}
		e.Str("event", "election.done").Uint64("leader", ev.Leader).Int("sent", ev.Sent).
			Float64("duration_ms", float64(ev.Duration.Microseconds())/1000).Msg("election done")
	}
}

// ElectResult is what Elect reports: whether this node started an
// election (false while it takes part in one already, or before its first
// view), and the leader it knew when it did.
type ElectResult struct {
	Started   bool   `json:"started"`
	Algorithm string `json:"algorithm"`
	Leader    uint64 `json:"leader"`       // the leader before this election; 0 = none
	Round     uint64 `json:"leader_round"` // the round that chose it
}

// Elect starts an election from this node, as `huddle elect` does.
func (r *Node) Elect(ctx context.Context) (ElectResult, error) {
	res := ElectResult{Algorithm: r.o.Config.Election.Algorithm}
	err := r.Do(ctx, func(c *Core) {
		res.Leader, res.Round = c.Leader()
		res.Started = c.StartElection(time.Now())
	})
	return res, err
}
