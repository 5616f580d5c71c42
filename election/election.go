package election

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// Algorithm names an election algorithm, spelled as config's
// election.algorithm.
type Algorithm string

// The algorithms.
const (
	Ring  Algorithm = "ring"  // Chang and Roberts 1979: candidates go round a ring of the view's members
	Bully Algorithm = "bully" // Garcia-Molina 1982: ELECTION to the higher members, the highest alive bullies the rest
)

// Defaults for zero Options fields.
const (
	// DefaultAlgorithm is the algorithm of an empty Options.Algorithm,
	// and the configuration's default (election.algorithm).
	DefaultAlgorithm = Ring
	// DefaultAnswerTimeout is how long a bully initiator waits for an
	// ANSWER from a higher member before it declares itself.
	DefaultAnswerTimeout = 200 * time.Millisecond
	// DefaultCoordinatorTimeout is how long a bully member that got an
	// ANSWER waits for the COORDINATOR before it starts again. It is also
	// the longest a member without a leader waits for one to be announced
	// (see Options).
	DefaultCoordinatorTimeout = 500 * time.Millisecond
)

// Bounds on rounds (docs/design.md, "Leader election"). Nothing wraps:
// a round never reaches MaxRound, and a message of a round more than
// RoundBound above this node's, or at MaxRound or above, is ignored and
// counted (Stats.OutOfBound).
//
// Honest rounds fit: a round is one more than the highest a node knew
// (Start, a view change, a timeout), so the highest round in a group is
// at most the number of rounds begun along one causal chain of the
// group's whole history. Every node starts at round 0 (a joiner, a
// restarted node), and two nodes' rounds can be as far apart as that
// number, no further. A round takes at least a view change, a request or
// a timeout, a millisecond or more; at 10 000 rounds a second, 2^48 takes
// 890 years. MaxRound leaves room for arithmetic that cannot overflow: a
// member that holds the group's key and sends bad rounds needs 2^14
// (16 384) messages to exhaust the rounds, after which this node starts
// no round (Stats.Exhausted) and keeps the leader it knows.
const (
	RoundBound = 1 << 48
	MaxRound   = 1 << 62
)

// Options configures a Machine.
type Options struct {
	// Self is this node's ID, not 0 (0 means "no leader").
	Self uint64
	// Algorithm is Ring or Bully; empty is DefaultAlgorithm. Every member of
	// a group must use the same one: each ignores the other's messages.
	Algorithm Algorithm
	// AnswerTimeout (bully) is how long an initiator waits for an ANSWER
	// from a higher member before it declares itself; it must exceed a
	// round trip to the slowest higher member. Default
	// DefaultAnswerTimeout.
	AnswerTimeout time.Duration
	// CoordinatorTimeout (bully) is how long a node that got an ANSWER
	// waits for the COORDINATOR before it starts a new round; it must
	// exceed the higher member's own election (AnswerTimeout and two
	// message delays). Default DefaultCoordinatorTimeout.
	//
	// A member that knows no leader and expects one to be announced (a
	// joiner, or a member whose leader left while a higher member takes
	// over) waits CoordinatorTimeout (bully) or max(AnswerTimeout,
	// CoordinatorTimeout) (ring) before it starts an election itself.
	CoordinatorTimeout time.Duration
	// Order (ring) is the order of the ring through the view's members:
	// Ascending (by ID, the default), Descending, or Join (the order in
	// which they joined: the view's order, oldest first, as ring_voting
	// places its workers). The highest ID wins whatever the order; the
	// order decides the messages (Chang–Roberts' best, worst and average
	// cases). Every member of a group must use the same one.
	Order RingOrder
	// HopDelay holds each message this node sends for this long before it
	// goes out, so that a round can be watched by eye (ring_voting's
	// --worker-sleep). The bully timeouts must allow for it (the node
	// derives its defaults so), and a member waiting for a leader waits
	// two hops more per member.
	HopDelay time.Duration
}

// RingOrder is the order of the ring, spelled as config's
// election.ring_order.
type RingOrder string

// The ring orders.
const (
	Ascending  RingOrder = "ascending"  // by ID, increasing (the default)
	Descending RingOrder = "descending" // by ID, decreasing
	JoinOrder  RingOrder = "join"       // the view's order: the order the members joined
)

// ErrOptions is wrapped by the errors of Options.Validate.
var ErrOptions = errors.New("election: invalid options")

// Validate reports the first field of o that is out of range.
func (o Options) Validate() error {
	switch {
	case o.Self == 0:
		return fmt.Errorf("%w: Self is 0, which means no leader", ErrOptions)
	case o.Algorithm != "" && o.Algorithm != Ring && o.Algorithm != Bully:
		return fmt.Errorf("%w: Algorithm %q is not %q or %q", ErrOptions, o.Algorithm, Ring, Bully)
	case o.AnswerTimeout < 0:
		return fmt.Errorf("%w: AnswerTimeout %v is negative", ErrOptions, o.AnswerTimeout)
	case o.CoordinatorTimeout < 0:
		return fmt.Errorf("%w: CoordinatorTimeout %v is negative", ErrOptions, o.CoordinatorTimeout)
	case o.Order != "" && o.Order != Ascending && o.Order != Descending && o.Order != JoinOrder:
		return fmt.Errorf("%w: Order %q is not %q, %q or %q", ErrOptions, o.Order, Ascending, Descending, JoinOrder)
	case o.HopDelay < 0:
		return fmt.Errorf("%w: HopDelay %v is negative", ErrOptions, o.HopDelay)
	}
	return nil
}

// Timeouts returns the bully timeouts of a node with this heartbeat and
// suspect timeout: o's, or for those left at 0 the ones derived from them
// and the hop delay. A higher member that is in the view answers within a
// few one-way delays and a repair or two (two heartbeats); one that
// crashed is excluded within the suspect timeout, and the view change
// restarts the election.
func (o Options) Timeouts(heartbeat, suspect time.Duration) (answer, coordinator time.Duration) {
	hops := 2 * o.HopDelay
	answer, coordinator = o.AnswerTimeout, o.CoordinatorTimeout
	if answer == 0 {
		answer = 2*heartbeat + hops
	}
	if coordinator == 0 {
		coordinator = suspect + answer + hops
	}
	return answer, coordinator
}

// Message is an election message to send: Payload to the member To,
// addressed and reliable (the group's Send); To 0 (only the leader's
// RESULT of a round's accounting) goes to every other member.
type Message struct {
	To      uint64
	Payload []byte
}

// EventKind says what happened.
type EventKind uint8

// Event kinds, in the order they happen in a round.
const (
	Started       EventKind = iota + 1 // this node began a round (Initiator)
	Won                                // this node won the round (Leader = this node)
	LeaderChanged                      // this node learned the round's leader (Leader, Duration)
	Done                               // the round is over here (Leader, Duration, Sent)
	// Round (at the leader): every member told the leader what it sent
	// in the round; Sent is the round's messages across the group.
	Round
)

func (k EventKind) String() string {
	switch k {
	case Started:
		return logs.ElectionStarted
	case Won:
		return logs.ElectionWon
	case LeaderChanged:
		return logs.LeaderChanged
	case Done:
		return logs.ElectionDone
	case Round:
		return logs.ElectionRound
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is something the node should log (docs/logs.md).
type Event struct {
	Kind      EventKind
	Algorithm Algorithm
	Round     uint64
	View      string
	Initiator uint64 // Started: this node
	Leader    uint64 // Won, LeaderChanged, Done
	// Duration (LeaderChanged, Done) runs from when this node began to
	// take part in the round (started it, got its first message of it,
	// or began to wait for a leader to be announced) to now.
	Duration time.Duration
	// Sent (Done) is the election messages this node sent in the round
	// until then. A member whose round is over may still send some (bully
	// answers the ELECTIONs of the round that arrive later; a member tells
	// a late candidate who leads): each such message gets a Done of its
	// own with Late set and Sent 1. So the Sent of all Done events add up
	// to the round's messages.
	Sent int
	Late bool // Done: a message sent after this node's round was over
}

// Stats are a Machine's counters since New.
type Stats struct {
	Started   uint64 // rounds this node began: Start, a view change, a timeout
	Completed uint64 // rounds finished here (Done)
	Won       uint64 // rounds this node won
	Sent      Counts // messages sent, by kind
	Received  Counts // messages received that decoded, by kind
	Stale     uint64 // messages of an older round, or of a round already over here, ignored
	Malformed uint64 // payloads that do not decode, or that the algorithm does not use
	Foreign   uint64 // messages from, or naming, a node outside the view (or this node itself)
	Ignored   uint64 // messages of the round that do not fit this node's state
	// OutOfBound counts messages ignored for their round: more than
	// RoundBound above this node's, or at MaxRound or above.
	OutOfBound uint64
	// Exhausted counts rounds not begun because the next would be
	// MaxRound (never honestly: see RoundBound).
	Exhausted uint64
	// Accounting and AccountingRecv count the TALLY and RESULT messages
	// sent and received (the rounds' accounting; not in Sent and
	// Received, which are the algorithms' messages).
	Accounting     uint64
	AccountingRecv uint64
}

// Counts are message counters by kind.
type Counts struct {
	Election    uint64 // ring and bully
	Elected     uint64 // ring
	Answer      uint64 // bully
	Coordinator uint64 // bully
}

// Total is the sum over the kinds.
func (c Counts) Total() uint64 { return c.Election + c.Elected + c.Answer + c.Coordinator }

func (c *Counts) add(k kind) {
	switch k {
	case kindElection:
		c.Election++
	case kindElected:
		c.Elected++
	case kindAnswer:
		c.Answer++
	case kindCoordinator:
		c.Coordinator++
	}
}

// state is this node's part in the round it knows (Machine.round).
type state uint8

const (
	idle      state = iota // no part yet: none started, or only heard of it
	candidate              // ring: a participant (passed an ELECTION on); bully: its ELECTIONs are out, no ANSWER yet
	waiting                // bully: a higher member answered; waiting for its COORDINATOR
	elected                // ring: won; its ELECTED goes round
	done                   // the round is over here (Done emitted)
)

// Machine is one node's leader election, a deterministic state machine:
// no goroutines, clock, sockets or randomness. The node's Core (in the
// node loop or the simulator) feeds it views (SetView), messages
// (Receive), time (Tick) and requests (Start), and takes what it produced
// (Ready, NextDeadline).
//
// Every message carries its round. A node keeps the highest round it
// knows; a message of a higher round makes it join that round and forget
// the old one, leader included (a sitting leader steps down and takes
// part); a message of an older round is ignored. A node starts round
// (highest known)+1, so nodes that start together from the same state run
// one election.
type Machine struct {
	self      uint64
	algorithm Algorithm
	order     RingOrder
	hopDelay  time.Duration

	answerTimeout time.Duration
	coordTimeout  time.Duration
	waitTimeout   time.Duration // how long a member without a leader waits for one to be announced

	hold func(now time.Time)                           // begins this node's own election in the round: holdRing or holdBully
	step func(now time.Time, from uint64, msg message) // a message of the round: stepRing or stepBully

	hasView bool
	view    string
	members []uint64 // ascending
	ring    []uint64 // ring: the members in the ring's order

	now  time.Time // the time of the input being handled (held messages' clock)
	held []heldMessage

	round  uint64    // the highest round known
	state  state     // this node's part in round
	ranOwn bool      // bully: this node held its own election in round
	since  time.Time // when this node began to take part in round
	sent   int       // messages this node sent in round

	leader      uint64
	leaderRound uint64

	// The round's accounting (TALLY, RESULT): the members that told the
	// leader their count in the round tallyRound and the sum so far (at
	// the leader), and the last total learned.
	tallyRound uint64
	tallied    []uint64
	tallySum   int
	total      int    // the round totalRound's messages across the group, from the leader
	totalRound uint64 // 0: none known

	toldAt time.Time // bully: when this node's winning COORDINATORs went out (or out again)
	told   []uint64  // bully: to whom
	heard  []uint64  // ring: members whose ELECTIONs came since this node's last Done (see tellHeard)

	answerAt time.Time // bully, candidate: no ANSWER by then → win
	coordAt  time.Time // bully, waiting: no COORDINATOR by then → start again
	waitAt   time.Time // no leader known: none announced by then → start
	waitFrom time.Time // when the wait began

	// unbounded, set only by tests, takes any round and lets it wrap:
	// the arithmetic before the bounds.
	unbounded bool

	out    []Message
	events []Event
	arena  []byte // payloads of out; handed over with them
	codec  codec
	stats  Stats
}

// New returns a Machine without a view. It panics if o does not Validate:
// options come from a validated configuration.
func New(o Options) *Machine {
	if err := o.Validate(); err != nil {
		panic(err)
	}
	m := &Machine{self: o.Self, algorithm: o.Algorithm, order: o.Order, hopDelay: o.HopDelay,
		answerTimeout: orDefault(o.AnswerTimeout, DefaultAnswerTimeout),
		coordTimeout:  orDefault(o.CoordinatorTimeout, DefaultCoordinatorTimeout)}
	if m.algorithm == "" {
		m.algorithm = DefaultAlgorithm
	}
	if m.algorithm == Bully {
		m.hold, m.step, m.waitTimeout = m.holdBully, m.stepBully, m.coordTimeout
	} else {
		m.hold, m.step, m.waitTimeout = m.holdRing, m.stepRing, max(m.answerTimeout, m.coordTimeout)
	}
	return m
}

// orDefault returns d, or def when d is zero (an Options field left out).
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Start starts an election now, as `huddle elect` or a periodic election
// does: a new round, (highest known)+1. It is a no-op that returns false
// while this node takes part in an unfinished round, or has no view, or
// when the rounds are exhausted (see RoundBound).
func (m *Machine) Start(now time.Time) bool {
	m.now = now
	if !m.hasView || m.busy() {
		return false
	}
	return m.begin(now)
}

// Receive handles one election message that member from sent to this
// node. Messages arrive reliably and in FIFO order per sender, and may be
// lost only when the sender or receiver crashes or the view changes.
// Nothing in payload can make it panic: junk is counted and dropped.
func (m *Machine) Receive(now time.Time, from uint64, payload []byte) {
	m.now = now
	msg, err := m.codec.decode(payload)
	if err == nil && msg.kind >= kindTally {
		m.account(from, msg)
		return
	}
	if err != nil || !m.uses(msg, from) {
		m.stats.Malformed++
		return
	}
	m.stats.Received.add(msg.kind)
	if !m.hasView || from == m.self || !m.isMember(from) || !m.isMember(msg.id) {
		m.stats.Foreign++
		return
	}
	if !m.fits(msg.round) {
		m.stats.OutOfBound++
		return
	}
	switch {
	case msg.round < m.round:
		m.stats.Stale++
		if msg.kind == kindElection {
			m.tellStraggler(from)
		}
		return
	case msg.round > m.round:
		m.enter(now, msg.round)
	}
	m.step(now, from, msg)
	if m.state == idle && m.leader == 0 {
		m.wait(now) // heard of a round it has no part in: expect its result
	}
}

// fits reports whether round r is within the bounds: at most RoundBound
// above this node's round, and below MaxRound. An older round always
// fits: it is only counted as stale.
func (m *Machine) fits(r uint64) bool {
	return m.unbounded || r <= m.round || r < MaxRound && r-m.round <= RoundBound
}

// uses reports whether msg is one of this algorithm's messages. A bully
// message names its sender; a ring message may name another member, the
// candidate or leader it passes on.
func (m *Machine) uses(msg message, from uint64) bool {
	if m.algorithm == Bully {
		return msg.kind != kindElected && msg.id == from
	}
	return msg.kind == kindElection || msg.kind == kindElected
}

// heldMessage is a message held for the hop delay.
type heldMessage struct {
	due time.Time
	msg Message
}

// Tick runs the timers due at now, and lets the messages held for the
// hop delay go.
func (m *Machine) Tick(now time.Time) {
	m.now = now
	n := 0
	for ; n < len(m.held) && due(m.held[n].due, now); n++ {
		m.out = append(m.out, m.held[n].msg)
	}
	m.held = append(m.held[:0], m.held[n:]...)
	if due(m.answerAt, now) {
		m.answerAt = time.Time{}
		if m.state == candidate {
			m.winBully(now) // Garcia-Molina 1982: no higher member answered
		}
	}
	if due(m.coordAt, now) {
		m.coordAt = time.Time{}
		if m.state == waiting {
			m.begin(now) // the member that answered failed before it announced itself
		}
	}
	if due(m.waitAt, now) {
		m.waitAt = time.Time{}
		if m.hasView && m.leader == 0 && !m.busy() {
			m.begin(now)
		}
	}
}

func due(at, now time.Time) bool { return !at.IsZero() && !now.Before(at) }

// NextDeadline is when Tick has something to do; zero when nothing.
func (m *Machine) NextDeadline() time.Time {
	var next time.Time
	var first time.Time
	if len(m.held) > 0 {
		first = m.held[0].due
	}
	for _, t := range []time.Time{m.answerAt, m.coordAt, m.waitAt, first} {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// Ready is what a Machine produced since the last call to Ready: the
// messages to send, in order, and the events, in order. The caller owns
// them: a message may wait for a view change or the send window.
type Ready struct {
	Messages []Message
	Events   []Event
}

// Ready returns what the machine produced since the last call.
func (m *Machine) Ready() Ready {
	rd := Ready{Messages: m.out, Events: m.events}
	m.out, m.arena, m.events = nil, nil, nil
	return rd
}

// Leader returns the current leader (0 when none is known) and the round
// that elected it.
func (m *Machine) Leader() (leader, round uint64) { return m.leader, m.leaderRound }

// Stats returns the counters.
func (m *Machine) Stats() Stats { return m.stats }

// busy reports whether this node takes part in an unfinished round.
func (m *Machine) busy() bool {
	return m.state == candidate || m.state == waiting || m.state == elected
}

// enter makes round r this node's round, with no part in it yet: the old
// round's state and leader are forgotten.
func (m *Machine) enter(now time.Time, r uint64) {
	m.round, m.state, m.ranOwn, m.sent = r, idle, false, 0
	m.leader, m.leaderRound = 0, 0
	m.since = now
	if !m.waitAt.IsZero() {
		m.since = m.waitFrom // it has waited for this round's result
	}
	m.answerAt, m.coordAt, m.waitAt = time.Time{}, time.Time{}, time.Time{}
}

// begin starts a new round with this node's own election in it, and
// reports whether it did: not when the rounds are exhausted (the next
// would be MaxRound, which members ignore).
func (m *Machine) begin(now time.Time) bool {
	if m.round >= MaxRound-1 && !m.unbounded {
		m.stats.Exhausted++
		return false
	}
	m.enter(now, m.round+1)
	m.stats.Started++
	m.emit(Event{Kind: Started, Initiator: m.self})
	m.hold(now)
	return true
}

// wait arms the wait for a leader to be announced, unless armed.
func (m *Machine) wait(now time.Time) {
	if m.waitAt.IsZero() {
		m.waitFrom, m.waitAt = now, now.Add(m.waitTimeout+2*time.Duration(len(m.members))*m.hopDelay)
	}
}

// win makes this node the round's leader.
func (m *Machine) win(now time.Time) {
	m.stats.Won++
	m.emit(Event{Kind: Won, Leader: m.self})
	m.lead(now, m.self)
}

// lead records l as the round's leader.
func (m *Machine) lead(now time.Time, l uint64) {
	m.leader, m.leaderRound = l, m.round
	m.emit(Event{Kind: LeaderChanged, Leader: l, Duration: now.Sub(m.since)})
}

// complete ends the round here, and accounts for it: a member tells the
// leader what it sent (TALLY); the leader counts its own.
func (m *Machine) complete(now time.Time) {
	m.state = done
	m.answerAt, m.coordAt, m.waitAt = time.Time{}, time.Time{}, time.Time{}
	m.stats.Completed++
	m.emit(Event{Kind: Done, Leader: m.leader, Duration: now.Sub(m.since), Sent: m.sent})
	switch {
	case m.leader == m.self:
		m.tally(m.self, m.sent)
	case m.leader != 0 && m.isMember(m.leader):
		m.sendAccount(m.leader, kindTally, uint64(m.sent))
	}
}

// account handles a TALLY (at the leader of its round) or a RESULT (from
// the leader). Members' counts of the round this node won add up to the
// round's total once every member of the view told it.
func (m *Machine) account(from uint64, msg message) {
	m.stats.AccountingRecv++
	switch {
	case !m.hasView || !m.isMember(from) || from == m.self:
		m.stats.Foreign++
	case msg.round != m.round:
		m.stats.Stale++ // another round's: a view change or a new round began since
	case msg.kind == kindResult && from == m.leader:
		m.total, m.totalRound = int(min(msg.id, 1<<31)), msg.round
	case msg.kind == kindTally && m.leader == m.self:
		m.tally(from, int(min(msg.id, 1<<31)))
	default:
		m.stats.Ignored++
	}
}

// tally adds member id's count of the current round, once; with every
// member's in, the round's total is known: a Round event, and a RESULT to
// every member.
func (m *Machine) tally(id uint64, sent int) {
	if m.tallyRound != m.round {
		m.tallyRound, m.tallied, m.tallySum = m.round, m.tallied[:0], 0
	}
	if slices.Contains(m.tallied, id) {
		m.stats.Stale++
		return
	}
	m.tallied = append(m.tallied, id)
	m.tallySum += sent
	if len(m.tallied) == len(m.members) && m.leader == m.self && m.state == done {
		m.total, m.totalRound = m.tallySum, m.round
		m.emit(Event{Kind: Round, Leader: m.self, Sent: m.tallySum})
		if len(m.members) > 1 {
			m.sendAccount(0, kindResult, uint64(m.tallySum))
		}
	}
}

// RoundTotal returns the messages of round across the group, as its
// leader counted them, and whether it is known here.
func (m *Machine) RoundTotal(round uint64) (int, bool) {
	return m.total, round != 0 && round == m.totalRound
}

// sendAccount queues an accounting message [k, round, n] to member to (0:
// every other member); not one of the algorithm's messages.
func (m *Machine) sendAccount(to uint64, k kind, n uint64) {
	start := len(m.arena)
	m.arena = m.codec.append(m.arena, message{kind: k, round: m.round, id: n})
	m.queue(Message{To: to, Payload: m.arena[start:len(m.arena):len(m.arena)]})
	m.stats.Accounting++
}

// queue hands msg over with the next Ready, or after the hop delay.
func (m *Machine) queue(msg Message) {
	if m.hopDelay > 0 {
		msg.Payload = slices.Clone(msg.Payload) // the arena goes with Ready; this one waits
		m.held = append(m.held, heldMessage{m.now.Add(m.hopDelay), msg})
		return
	}
	m.out = append(m.out, msg)
}

// adoptLate handles the leader named by a message of a round already
// over here: a copy of the one it knows, or a higher one (a member that
// had lost its leader to a view change, or two results of one round
// number from groups that merged), which the highest-wins rule prefers.
func (m *Machine) adoptLate(now time.Time, l uint64) {
	switch {
	case l == m.leader:
		m.stats.Stale++
	case l > m.leader && l >= m.self:
		m.leader, m.leaderRound = l, m.round
		m.emit(Event{Kind: LeaderChanged, Leader: l, Duration: now.Sub(m.since)})
	default:
		m.stats.Ignored++
	}
}

// goodLeader reports whether this node knows a leader that the view
// keeps as its highest member.
func (m *Machine) goodLeader() bool {
	return m.leader != 0 && len(m.members) > 0 && m.leader == m.members[len(m.members)-1]
}

// tellStraggler answers an ELECTION of an older round, or of a round over
// here, from a member that missed its result (a joiner whose announcement
// was lost in a view change, one side of a merge whose rounds lag): it
// gets the leader's announcement of this node's round, which a message of
// a newer round makes it accept. Only a node whose round is over with a
// good leader answers; in bully, only the leader, since a bully ELECTION
// reaches every higher member. A ring node that cannot answer yet answers
// when a round ends here (tellHeard): a ring straggler has no timer, and
// its ELECTION went to this node only. (A bully straggler times out into
// a round of its own, and the next COORDINATOR, which goes to every
// member, puts it right.)
func (m *Machine) tellStraggler(to uint64) {
	if m.state != done || !m.goodLeader() {
		m.hear(to)
		return
	}
	if m.algorithm == Bully {
		if m.leader == m.self {
			m.send(to, kindCoordinator, m.self)
		}
		return
	}
	m.send(to, kindElected, m.leader)
}

// hear notes, in ring, that an ELECTION came from member id.
func (m *Machine) hear(id uint64) {
	if m.algorithm == Ring && !slices.Contains(m.heard, id) {
		m.heard = append(m.heard, id)
	}
}

// tellHeard tells the members whose ELECTIONs came since the last Done,
// but via, the member this node learned the leader from, who the leader
// is. In Chang–Roberts a member learns the result from the ELECTED that
// its predecessor passes on, its only sender, so this sends nothing. But a
// member that learned it otherwise (from a member that knew it already, to
// which its ELECTION went when its round number matched a finished one)
// may have swallowed the candidacy of its predecessor, which no ELECTED
// will pass now: it is told, and tells its own in turn.
func (m *Machine) tellHeard(via uint64) {
	heard := m.heard
	m.heard = nil
	for _, id := range heard {
		if id != via && id != m.self && m.isMember(id) {
			m.tellStraggler(id)
		}
	}
}

func (m *Machine) emit(e Event) {
	e.Algorithm, e.Round, e.View = m.algorithm, m.round, m.view
	m.events = append(m.events, e)
}

// send queues the message [k, round, id] to member to.
func (m *Machine) send(to uint64, k kind, id uint64) {
	if to == m.self || to == 0 {
		panic(fmt.Sprintf("election: node %d sends %v to %d", m.self, k, to))
	}
	start := len(m.arena)
	m.arena = m.codec.append(m.arena, message{kind: k, round: m.round, id: id})
	m.queue(Message{To: to, Payload: m.arena[start:len(m.arena):len(m.arena)]})
	m.sent++
	m.stats.Sent.add(k)
	if m.state == done {
		m.emit(Event{Kind: Done, Late: true, Leader: m.leader, Sent: 1})
	}
}

func (m *Machine) isMember(id uint64) bool {
	_, ok := slices.BinarySearch(m.members, id)
	return ok
}
