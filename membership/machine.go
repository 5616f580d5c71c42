package membership

import (
	"errors"
	"hash/fnv"
	"net/netip"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
)

// Options configures a Machine.
type Options struct {
	Engine multicast.Options // the reliable multicast layer underneath (Self, Inc, Group, timers)
	// JoinTimeout is how long a joining node waits for a coordinator to
	// admit it before it forms a view of its own.
	JoinTimeout time.Duration
	// Settings are the protocol-relevant settings every member must share
	// (datagram size, message size, timers, election algorithm, lock
	// quorum: config.Config.GroupSettings lists them): a joiner
	// whose settings differ from the coordinator's is refused, naming the
	// first that differs.
	Settings []Setting
	// MessageSize is the largest membership message (a flush, its reply,
	// a view commit) the node below can carry, in bytes: a view lists only
	// as many members as its commit fits. 0: one datagram
	// (Engine.DatagramSize). The node carries larger ones in pieces
	// (wire.KindChunk).
	MessageSize int
	// Quorum decides which views are primary (off: all of them).
	Quorum Quorum
	// FixedSequencer keeps total order's sequencer on each view's
	// coordinator. By default the order moves to a member whose ordered
	// messages the sequencer took MoveAfter times in a row, over MoveTurns
	// records (docs/design.md,
	// "The sequencer moves"). Every member of a group must agree
	// (config's sequencer, a group setting).
	FixedSequencer bool
	// Replicated says the node keeps replicated state (state transfer,
	// docs/design.md "State transfer"): it starts behind the group, until
	// SetCurrent.
	Replicated bool
}

// Setting is one protocol-relevant setting, by its configuration key.
type Setting struct{ Name, Value string }

// Errors of Multicast and of a refused node.
var (
	ErrNotInView  = errors.New("membership: not in a view")
	ErrBlocked    = errors.New("membership: sending is blocked while the view changes")
	ErrLeft       = errors.New("membership: left the group")
	ErrRefused    = errors.New("membership: refused by the group")
	ErrOrder      = errors.New("membership: the order must be FIFO, Total, Safe or Causal, and FIFO for an addressed message")
	ErrNotPrimary = errors.New("membership: the view is not the primary component")
)

// EventKind says what happened.
type EventKind uint8

// Event kinds.
const (
	ViewInstalled  EventKind = iota + 1 // a new view (View, Prior, Joined, Left, Crashed, Flush)
	FlushStarted                        // this node started a flush as its initiator (Flush ID, Proposed)
	Suspected                           // a member was suspected (Member, Silent)
	Refused                             // this node was refused (Setting, Ours, Theirs, Addr), or refused a joiner (Member)
	LeaveDone                           // a graceful leave completed: a view without this node exists (or the leave timed out)
	Excluded                            // this node learned that the group went on without it; it rejoins
	Engine                              // an event of the multicast layer (Multicast)
	Delivered                           // a message delivered to this node (Delivery)
	FlushUnchanged                      // this node ended its flush without a view: it would have installed the members the view has (Flush ID, Proposed: those that did not answer)
	Health                              // this node found itself starved (Starved true, Silent: the pause), or ran freely again for a suspect timeout (Starved false)
	OrderTaken                          // this node orders the view's total and safe messages from now on: the sequencer (Member) handed it the order, from number GSeq
)

// Event is something the node should know about and log.
type Event struct {
	Kind      EventKind
	View      View
	Prior     wire.ViewID
	Joined    []uint64
	Left      []uint64
	Crashed   []uint64
	Flush     time.Duration // ViewInstalled: from the start of the view change to the install
	Primary   uint64        // ViewInstalled: the view's generation as the primary component, 0 when it is not primary
	Epoch     uint64        // FlushStarted, FlushUnchanged
	Attempt   uint64        // FlushStarted, FlushUnchanged
	Proposed  []uint64      // FlushStarted; FlushUnchanged: the nodes to take in that did not answer
	Member    uint64
	GSeq      uint64 // OrderTaken: the first total-order number this node gives
	Silent    time.Duration
	Setting   string
	Ours      string
	Theirs    string
	Addr      netip.AddrPort
	Multicast multicast.Event
	// Starved (a Health event) says this node is starved now; false: it
	// has run freely again for a suspect timeout. Stretch is its health
	// level then: it suspects a member after Stretch+1 suspect timeouts.
	Starved bool
	Stretch int
	// InView (an Engine event of kind StreamSkipped) says the messages
	// skipped reach into the sender's stream within this node's view: a
	// loss the view cannot make good (the node secedes). Without it, they
	// were sent before this node could need them.
	InView bool
	// Delivery is the message of a Delivered event.
	Delivery Delivery
}

// Ready is what a Machine produced since the last call to Ready: the
// envelopes to multicast (the membership layer's, then the engine's), and
// everything it delivered and reported, in the order it happened, so that
// a caller hands out views and messages in their order. It stays valid
// until the next call into the Machine.
type Ready struct {
	Envelopes []wire.Envelope
	Events    []Event
}

// Delivery is a message delivered in a view.
type Delivery struct {
	multicast.Delivery
	GSeq uint64 // total and safe messages: the position in the view's total order, from 1
	// Final marks a delivery at the view's end, by the flush, rather than
	// by its order record (total, safe) or on arrival (FIFO): ordered
	// messages the sequencer did not record, safe messages not yet known
	// to be held everywhere, and what waited behind them. Members that
	// install the same next view deliver them alike.
	Final bool

	causes []uint64 // a causal message's: its sender's counts, by member index (causal.go)
	bad    bool     // a causal message whose header was malformed: passed, never delivered
}

// state is where this node stands in the group.
type state uint8

const (
	joining state = iota // no view yet: asking to be admitted
	member               // in a view
	leaving              // asked to leave; waits for a view without it
	gone                 // left or refused: does nothing more
)

// Machine is one node's membership layer, with the reliable multicast
// engine it drives: a deterministic state machine like the engine (no
// goroutines, sockets or clock of its own). The node's Core (in the node
// loop or the simulator) feeds it datagrams (Step), time (Tick) and local
// requests (Multicast, Leave), and takes what it produced (Ready).
//
// Views change by a flush (virtual synchrony, Birman and Joseph 1987):
// the initiator proposes the next members; each one stops sending and
// reports how far it holds each sender of its view; the initiator fixes
// the cut (the most any of them holds) and sends it; each one fetches what
// it misses up to the cut, from any holder, and confirms; the initiator
// commits the view, and every member delivers exactly the cut in the old
// view before it installs the new one. Joins, leaves, crashes, merges of
// partitions and coordinator take-overs are all this one protocol; a
// participant of a merge reports its own view and gets that view's cut.
type Machine struct {
	opt    Options
	self   uint64
	inc    uint64
	engine *multicast.Engine

	causalBuf []byte // a causal message's header and payload, as sent

	state     state
	view      View
	starts    map[uint64]uint64 // where each member's stream begins in the view
	viewAt    time.Time         // when the view was installed
	broken    map[uint64]bool   // members whose stream lost messages in this view: nothing more of them is delivered in it
	startedAt time.Time         // of this node: the join timeout runs from here
	joinAt    time.Time         // next join request
	maxEpoch  uint64            // highest epoch heard of anywhere (within timeLimit)
	asked     bool              // joining: a join request went out
	heard     heardTable        // what this node last heard from each node
	conflict  idConflict        // an older incarnation of this node's ID heard lately
	suspects  map[uint64]uint64 // members of the view suspected: id → the incarnation suspected
	reportAt  time.Time         // next time suspicions are reported to the coordinator
	leaveAt   time.Time         // leaving: when to resend the request
	leaveBy   time.Time         // leaving: when to give up waiting
	settings  uint32            // hash of opt.Settings
	quietFrom time.Time         // the installed view's start, moved on by this node's pauses: members unheard since are suspected
	health    health            // this node's own pauses: is it starved (local health)
	answers   limiter           // questions for proof answered lately
	askedAt   time.Time         // joining: when a coordinator last asked this node for proof
	pruneAt   time.Time         // next time stale entries of heard, hold-offs and joiners go
	outsiders limiter           // events about nodes outside the view (refusals, peers seen and lost)
	primary   uint64            // the installed view's generation as the primary component, 0: not primary
	known     known             // what this node knows of the primary component
	behind    bool              // its replicated state is not the group's yet (Options.Replicated)

	// The roles, each a type that owns its state, in a file of its own
	// with the Machine's side of it: the coordinator (every member keeps
	// its state, since any may take over), the initiator of the flush
	// this node runs, and its part in a flush (its own included); the
	// orderer and the heard table below. They are handed what they need
	// (the view, the time, the engine behind a one-method interface) and
	// hand back what they decided or delivered; none calls the Machine,
	// which routes between them, sends and emits the events.
	coord       coordinator
	initiator   *initiator     // the flush this node initiates, if any
	participant *participant   // the flush this node takes part in, if any
	dropped     *flushID       // the last flush this node gave up: it takes no part in it, or older ones, again
	merges      streak         // flushes led from outside this node's view that it took part in and that ended without a view
	lastCommit  *wire.Envelope // of the last flush this node initiated: resent to members that missed it
	lastEnd     *wire.Envelope // of the last flush this node ended without a view: resent to members that missed it
	changeFrom  time.Time      // when the current view change began here

	orderer   orderer         // total and safe delivery in the installed view
	future    []Delivery      // deliveries of a view not installed yet
	taken     limiter         // OrderTaken events: one a second
	now       time.Time       // of the last Step or Tick
	out       []wire.Envelope // membership messages to multicast
	engineOut []wire.Envelope // the engine's envelopes, taken after each of its steps
	selfq     []wire.Envelope // membership messages to this node itself
	events    []Event         // deliveries and events since the last Ready, in order
	ready     Ready           // handed out by the last Ready; reused
	stats     Stats
}

// Stats counts the membership layer's work.
type Stats struct {
	ViewsInstalled   uint64
	FlushesStarted   uint64 // as initiator, counting restarts
	FlushRestarts    uint64 // flushes restarted without members that did not answer
	FlushesUnchanged uint64 // flushes this node ended without a view, as initiator: only the nodes to take in had not answered, and the rest is the view
	ProofsAsked      uint64 // questions for proof asked, as coordinator, of nodes to take in (A merge waits for proof)
	ProofsGiven      uint64 // questions that named this node, answered
	ProofsDropped    uint64 // questions that named this node beyond limitBurst a heartbeat, not answered
	Proofs           uint64 // answers in time to this node's questions
	ProofsFailed     uint64 // answers to this node's questions too late, or from a node starved while this one is not
	Starved          uint64 // times this node found itself starved (local health)
	HealthLevel      uint64 // now: how starved (0 to 8): it suspects a member after HealthLevel+1 suspect timeouts
	Suspicions       uint64
	WrongView        uint64 // messages of another view, not delivered
	FutureDropped    uint64 // messages of a later view dropped: the buffer was full, or that view never came
	BeyondCut        uint64 // messages past a flush's cut, never delivered
	JoinsRefused     uint64
	MembershipMsgs   uint64 // membership datagrams received
	StaleMembership  uint64 // membership datagrams of old flushes or incarnations
	RecordsSent      uint64 // order records sent as the sequencer
	RecordsReceived  uint64 // order records taken (the sequencer's own included)
	BadRecords       uint64 // order records not from the view's sequencer, out of turn, or malformed
	SequencerMoves   uint64 // records taken that hand the order to another member (the sequencer moves)
	OrderedDelivered uint64 // total and safe messages delivered
	Unrecorded       uint64 // of those, delivered at a view's end without a record, by (source, seq)
	Unheld           uint64 // recorded messages past a view's cut, which no member delivers
	ForOthers        uint64 // other members' messages addressed to another member (Send), not delivered here
	CausalDelivered  uint64 // causal messages delivered
	CausalWaited     uint64 // of those, held on arrival until their causes were delivered
	CausalDropped    uint64 // messages dropped at a view's end behind a causal one whose causes were not in the cut
	BadCausal        uint64 // causal messages with a malformed header: passed, not delivered

	// Hostile or malformed input, ignored (docs/design.md, "Membership
	// messages act by role, within bounds").
	RoleRefused      uint64 // membership messages not from the role that may send them: a flush or commit from a node that may not lead one here, a suspicion from a non-member, a leave for another node, a refusal not from a coordinator or not about this node's settings
	EpochRefused     uint64 // datagrams and flushes whose epoch is beyond the bound, or whose attempt is out of range
	IncRefused       uint64 // datagrams whose incarnation is beyond the bound (a start time in the future)
	BadFlushes       uint64 // cuts and commits inconsistent with the flush: a cut without this node's view or beyond its own stream, a commit listing other members than proposed, or a member this node has not heard lately
	HeardEvicted     uint64 // nodes outside the view forgotten to keep heard within its cap
	JoinsHeldOff     uint64 // join requests not acted on: held off after a failed admission, over the cap of pending joins, or a restart while the old incarnation is alive
	IDConflicts      uint64 // datagrams carrying this node's ID from another incarnation
	EventsSuppressed uint64 // events not handed out over their rate limits: about nodes outside the view, and OrderTaken
	FlushesAbandoned uint64 // flushes this node gave up as a participant: the initiator went quiet, was suspected, ran one attempt too long, or ended it without a view
}

// New returns a joining Machine: it asks to be admitted at once, after it
// has listened for a heartbeat (to hear a node that uses its ID).
func New(opt Options, now time.Time) *Machine {
	eo := opt.Engine
	m := &Machine{
		opt: opt, self: eo.Self, inc: eo.Inc,
		engine:    multicast.New(eo, now),
		startedAt: now, joinAt: now.Add(eo.Heartbeat),
		heard:  newHeardTable(eo.SuspectTimeout),
		starts: map[uint64]uint64{}, broken: map[uint64]bool{}, suspects: map[uint64]uint64{},
		settings: hashSettings(opt.Settings), behind: opt.Replicated,
		coord: newCoordinator(eo.Self, eo.SuspectTimeout, eo.Heartbeat*3/2, opt.Settings),
	}
	m.orderer = newOrderer(m.self, m.engine, &m.stats)
	if !opt.FixedSequencer {
		m.orderer.moveAfter, m.orderer.moveTurns = MoveAfter, MoveTurns
	}
	m.engine.SetMembers([]wire.Member{}) // no view: what it receives stays unstable until one counts who holds it
	return m
}

func hashSettings(ss []Setting) uint32 {
	h := fnv.New32a()
	for _, s := range ss {
		h.Write([]byte(s.Name))
		h.Write([]byte{0})
		h.Write([]byte(s.Value))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

// coordInc is the incarnation of the view's coordinator, 0 without a view.
func (m *Machine) coordInc() uint64 {
	if len(m.view.Members) == 0 {
		return 0
	}
	return m.view.Members[0].Inc
}

// Engine returns the multicast engine underneath (for its counters).
func (m *Machine) Engine() *multicast.Engine { return m.engine }

// View returns the installed view; its ID is zero before the first.
func (m *Machine) View() View { return m.view.clone() }

// Sequencer returns the member that orders total and safe messages in
// this node's view: the coordinator as a view starts, or the member the
// order moved to (sequencer = "moving"); 0 before the first view.
func (m *Machine) Sequencer() uint64 { return m.orderer.sequencerID() }

// ViewKey identifies the installed view without copying it: its ID and
// its coordinator's incarnation (zero before the first view). Callers
// that poll for a view change on every step use it.
func (m *Machine) ViewKey() (wire.ViewID, uint64) { return m.view.ID, m.coordInc() }

// Heard returns what this node last heard from node id: the view its
// datagram carried (its sender's installed view) and when it arrived;
// zero if never. For a member, that is its incarnation in the view (a
// newer one, restarted or forged, does not count until a view holds it).
// The lock's quorum mode leases on it.
func (m *Machine) Heard(id uint64) (wire.ViewID, time.Time) {
	h := m.heard.get(id)
	return h.view, h.at
}

// PeerAddrs appends to dst the nodes this node knows of, and returns it
// with the version of that set: the members of its view, and the nodes
// outside it heard within two suspect timeouts (at most maxStrangers of
// them), each at the address its last authenticated datagram came from
// (a member not heard yet has none). The transports send to them; the
// set is the same until the version changes. The order is not defined.
func (m *Machine) PeerAddrs(dst []PeerAddr) ([]PeerAddr, uint64) {
	return m.heard.peers(dst, m.view, m.self), m.heard.version
}

// PeersVersion is the version PeerAddrs would return: it changes when the
// set of addresses may have.
func (m *Machine) PeersVersion() uint64 { return m.heard.version }

// Primary returns the installed view's generation as the primary
// component (docs/design.md, "Primary views"), 0 when it is not primary.
// Without a quorum policy every view is primary.
func (m *Machine) Primary() uint64 { return m.primary }

// SetCurrent tells the machine that the node's replicated state is the
// group's as of view v: a state transfer in v finished (or this node's
// state was declared the group's there). Its next flush reports say so.
// Of a view older than the installed one it says nothing: that view's
// commit may have found this node behind again (the caller learns of it
// when it takes the view).
func (m *Machine) SetCurrent(v wire.ViewID) {
	if v == m.view.ID {
		m.behind = false
	}
}

// Behind reports whether the node's replicated state is not the group's.
func (m *Machine) Behind() bool { return m.behind }

// Left reports whether the node is done: it left, or was refused.
func (m *Machine) Left() bool { return m.state == gone }

// Stats returns the membership counters.
func (m *Machine) Stats() Stats {
	s := m.stats
	s.HealthLevel = uint64(m.health.level)
	return s
}

// Multicast sends a message to the view, in the order asked for; dest,
// when not 0, addresses it to one member (FIFO only). It fails with
// ErrNotInView before the first view, ErrBlocked while a view change is
// flushing (the caller waits and tries again, as for
// multicast.ErrWindowFull), ErrLeft once the node left, and ErrOrder for
// an order it cannot send.
func (m *Machine) Multicast(service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	if order > wire.Causal || order == wire.Record || dest != 0 && order != wire.FIFO {
		return 0, ErrOrder
	}
	return m.multicast(service, payload, order, dest)
}

func (m *Machine) multicast(service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	switch {
	case m.state == gone || m.state == leaving:
		return 0, ErrLeft
	case m.state == joining:
		return 0, ErrNotInView
	case m.participant != nil:
		return 0, ErrBlocked
	}
	if order == wire.Causal {
		m.causalBuf = append(m.orderer.causalHeader(m.causalBuf[:0]), payload...)
		payload = m.causalBuf
	}
	seq, err := m.engine.Multicast(service, payload, order, dest)
	if err != nil {
		return 0, err
	}
	if order == wire.Causal {
		m.orderer.causalSent()
	}
	// A member delivers its own messages too, in the view it sent them in
	// and in its own order: within the view's cut (its report covers all
	// it sent), so virtual synchrony holds for them as for any other.
	d := Delivery{Delivery: multicast.Delivery{Source: m.self, Inc: m.inc, Seq: seq, End: m.engine.Received(m.self, m.inc),
		View: m.view.ID, Order: order, Dest: dest, Service: service, Payload: payload}}
	if svc, p, ok := m.engine.Own(seq); ok {
		d.Service, d.Payload = svc, p // the engine's copy: no other
	} else {
		d = cloneDelivery(d)
	}
	m.hand(d)
	return seq, nil
}

// Fits reports whether a message of these sizes and order would fit the
// send window now (see multicast.Engine.Fits): a causal message counts
// the causal header Multicast would add to its payload.
func (m *Machine) Fits(serviceLen, payloadLen int, order wire.Order, dest uint64) bool {
	if m.state != member || m.participant != nil {
		return false
	}
	if order == wire.Causal {
		m.causalBuf = m.orderer.causalHeader(m.causalBuf[:0])
		payloadLen += len(m.causalBuf)
	}
	return m.engine.Fits(serviceLen, payloadLen, order, dest)
}

// Sending reports whether Multicast may succeed now (a view is installed
// and no flush holds sends).
func (m *Machine) Sending() bool { return m.state == member && m.participant == nil }

// Step processes one decoded datagram that arrived at now from src; its
// group has been checked. env must not be kept after Step returns.
func (m *Machine) Step(now time.Time, src netip.AddrPort, env *wire.Envelope) {
	m.now = now
	if m.state == gone {
		return // a node that left or was refused is silent
	}
	if env.View.Epoch > m.timeLimit(now) {
		m.stats.EpochRefused++ // a view no honest node can be in yet: forged, or a bug
		return
	}
	if env.From == m.self {
		m.engine.Step(now, src, env) // another node with this ID: the engine reports it
		m.onConflict(now, src, env)
		m.afterStep(now)
		return
	}
	if !m.hear(now, src, &env.Header) {
		return
	}
	switch env.Kind {
	case wire.KindJoin, wire.KindLeave, wire.KindFlush, wire.KindFlushOK, wire.KindView, wire.KindRefuse, wire.KindFlushEnd, wire.KindProof:
		m.stats.MembershipMsgs++
		if m.state != gone {
			m.dispatch(now, env)
		}
	default:
		m.engine.Step(now, src, env)
	}
	m.afterStep(now)
}

func (m *Machine) dispatch(now time.Time, env *wire.Envelope) {
	switch env.Kind {
	case wire.KindJoin:
		m.onJoin(now, env)
	case wire.KindLeave:
		m.onLeave(now, env)
	case wire.KindFlush:
		m.onFlush(now, env.From, env.Inc, env.View, &env.Flush)
	case wire.KindFlushOK:
		m.onFlushOK(now, env.From, env.Inc, &env.FlushOK)
	case wire.KindView:
		m.onCommit(now, env.From, env.Inc, &env.Commit)
	case wire.KindRefuse:
		m.onRefuse(now, env)
	case wire.KindFlushEnd:
		m.onFlushEnd(env.From, env.Inc, &env.FlushEnd)
	case wire.KindProof:
		m.onProof(now, env)
	}
}

// Tick advances time.
func (m *Machine) Tick(now time.Time) {
	m.now = now
	if m.state == gone {
		return
	}
	m.engine.Tick(now)
	m.tickJoin(now)
	m.tickLeave(now)
	m.tickSuspicions(now)
	m.tickUnheard(now)
	m.tickInitiator(now)
	m.tickParticipant(now)
	m.tickStale(now)
	m.tickHealth(now)
	m.tickPrune(now)
	m.tickCoordinator(now)
	m.afterStep(now)
}

// NextDeadline is when Tick must next be called; zero once the node left
// (it has nothing more to do).
func (m *Machine) NextDeadline() time.Time {
	if m.state == gone {
		return time.Time{} // silent for good: no deadline
	}
	d := m.engine.NextDeadline()
	for _, t := range []time.Time{m.joinAt, m.leaveAt, m.reportAt, m.coord.changeAt, m.flushDeadline(), m.orderer.safeDeadline(), m.recordDeadline(), m.health.deadline(m.opt.Engine.SuspectTimeout)} {
		if !t.IsZero() && t.Before(d) {
			d = t
		}
	}
	return d
}

// flushDeadline is when the flush this node runs or takes part in needs a
// tick; zero without one.
func (m *Machine) flushDeadline() time.Time {
	var d time.Time
	if r := m.initiator; r != nil {
		d = r.deadline(m.flushTimeout())
	}
	if p := m.participant; p != nil {
		d = earliest(d, p.deadline(m.self, m.opt.Engine.SuspectTimeout))
	}
	return d
}

// earliest returns the earlier of a and b that is not zero; zero if both
// are.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// retry is the interval at which flush messages, join requests and
// reminders are resent until answered: a fifth of a heartbeat, so that a
// lost datagram costs a view change a few milliseconds on a LAN.
func (m *Machine) retry() time.Duration {
	return max(m.opt.Engine.Heartbeat/5, time.Millisecond)
}

// Paused tells the machine that the node could not observe the network
// for d (see multicast.Engine.Paused).
func (m *Machine) Paused(now time.Time, d time.Duration) {
	m.engine.Paused(now, d)
	if m.health.paused(now, d, m.opt.Engine.SuspectTimeout) {
		m.stats.Starved++
		m.emit(Event{Kind: Health, Starved: true, Silent: d, View: m.view.clone(), Stretch: m.health.level})
	}
	m.engine.Stretch(m.health.level)
	if t := m.quietFrom.Add(d); t.Before(now) {
		m.quietFrom = t
	} else {
		m.quietFrom = now
	}
}

// Ready returns what the machine produced since the last call (see
// Ready); it stays valid until the next call into the Machine.
func (m *Machine) Ready() Ready {
	m.takeEngine(m.now)
	m.events = m.orderer.take(m.events)
	m.ready.Envelopes = append(append(m.ready.Envelopes[:0], m.out...), m.engineOut...)
	m.out, m.engineOut = m.out[:0], m.engineOut[:0]
	m.ready.Events, m.events = m.events, m.ready.Events[:0]
	return m.ready
}

// Pack queues what a turn of the node's loop brought, for the next Ready:
// the sequencer's order record for it, and the data multicast in it,
// packed into as few datagrams as fit (batching without added delay).
// Call it once per turn, before taking the turn's datagrams.
func (m *Machine) Pack() {
	m.sendRecords()
	m.engine.Pack()
}

// send queues a membership message to the group; flush messages also go
// to this node itself (it takes part in its own flush).
func (m *Machine) send(env wire.Envelope) {
	env.Header = wire.Header{Group: m.opt.Engine.Group, From: m.self, Inc: m.inc, Kind: env.Kind, View: m.view.ID}
	m.out = append(m.out, env)
	switch env.Kind {
	case wire.KindFlush, wire.KindFlushOK, wire.KindView:
		m.selfq = append(m.selfq, env)
	}
}

// afterStep runs what a step set in motion: the engine's events and
// deliveries, the messages to this node itself, and the flush's progress.
func (m *Machine) afterStep(now time.Time) {
	for range 16 { // a flush of one takes a few rounds through here
		m.takeEngine(now)
		if m.state != gone {
			m.progress(now)
		}
		if len(m.selfq) == 0 {
			m.orderer.pump(false) // reports may have made a safe message deliverable, and so a causal one behind it
			if m.orderer.safeReportDue(now) {
				m.engine.Report(now)
			}
			return
		}
		q := m.selfq
		m.selfq = nil
		for i := range q {
			if m.state != gone {
				m.dispatch(now, &q[i])
			}
		}
	}
}

// takeEngine handles what the engine reported and delivered.
func (m *Machine) takeEngine(now time.Time) {
	e := m.engine.Ready()
	m.engineOut = append(m.engineOut, e.Envelopes...)
	for _, ev := range e.Events {
		m.onEngineEvent(now, ev)
	}
	for _, d := range e.Deliveries {
		m.fromEngine(Delivery{Delivery: d})
	}
}

// emit hands out ev after what the orderer delivered so far: views and
// messages reach the caller in the order they happened.
func (m *Machine) emit(ev Event) {
	m.events = append(m.orderer.take(m.events), ev)
}
