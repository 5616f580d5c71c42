package node

import (
	"cmp"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/seal"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/mutex"
)

// CoreOptions configures a Core: each protocol machine's own options,
// passed on whole, and what is the node's.
type CoreOptions struct {
	// Group is the group's name; its hash (wire.GroupHash) travels in
	// every datagram and goes into Membership.Engine.Group.
	Group string
	// Membership configures the membership layer and, in it (Engine),
	// the reliable multicast engine: this node's ID (Engine.Self) and
	// incarnation (Engine.Inc), the timers, the window, the datagram
	// size. The Core sets Engine.Group from Group and Engine.Rand from
	// Seed; a datagram's payload shrinks by seal.Overhead with Keys; a
	// MessageSize of 0 is what wire.MaxChunks pieces carry
	// (wire.ChunkedMax). Zero SRM fields take the multicast package's
	// defaults.
	Membership membership.Options
	// Election configures the leader election; its Self is
	// Membership.Engine.Self, and bully timeouts left at 0 are derived
	// from the heartbeat and the suspect timeout (Options.Timeouts).
	Election election.Options
	// Lock configures the lock (mutex.algorithm, mutex.quorum); its Self
	// is Membership.Engine.Self, and a Lease of 0 is the suspect timeout.
	Lock mutex.Options
	// Seed seeds the protocol's randomness (timer jitter).
	Seed uint64
	// Drop is the built-in fault injection; Drop.Seed 0 derives the
	// drop's seed from Seed.
	Drop Drop
	// Keys seal every datagram (AES-256-GCM): the first seals, every one
	// opens; none: datagrams in the clear.
	Keys []seal.Key
	// Salt is where the sealer draws its start's salt; nil:
	// crypto/rand. The simulator passes a seeded source.
	Salt io.Reader
	// Trace reports every message of the election and the lock, sent
	// and received, as a TraceEvent (log level trace).
	Trace bool
	// TraceSends reports every message Multicast sends as a SentEvent
	// (trace_deliveries), in order with the views and deliveries.
	TraceSends bool
	// Addr is this node's own address, as a probe's answer gives it.
	Addr string
	// State configures state transfer: the replicated services.
	State StateOptions
}

// CoreOptionsFrom takes a Core's options from a node's configuration:
// each machine's from config (Config.Membership, Election.Options,
// Mutex.Options), and this start's incarnation and seed.
func CoreOptionsFrom(c config.Config, inc, seed uint64) CoreOptions {
	o := CoreOptions{Group: c.Group, Membership: c.Membership(), Election: c.Election.Options(), Lock: c.LockOptions(), Seed: seed,
		Drop: Drop{Rate: c.Drop.Rate, From: c.Drop.From, Seed: c.Drop.Seed, Burst: c.Drop.Burst}, TraceSends: c.TraceDeliveries,
		State: StateOptions{MaxSize: int64(c.StateMaxSize)}}
	o.Membership.Engine.Self, o.Membership.Engine.Inc = c.ID, inc
	return o
}

// Core is one node's protocol stack as a deterministic state machine over
// datagrams. It decodes what arrives, steps the membership layer (which
// owns the reliable multicast engine), and routes what the layer hands
// back, in one place (route): messages of the election's, the lock's and
// the probe's services to those parts, views to them and to the
// application, the rest to the application. What each part wants sent
// goes down as multicasts; what the Core wants sent is encoded into
// datagrams. No machine calls another: each hands back what it produced,
// and the Core passes it on as input to the next.
//
// Inputs are Receive, Tick and the requests (Multicast, Leave,
// StartElection, LockRequest, LockRelease, Probe...); each routes what it
// caused before it returns. The one output is Ready: the datagrams to
// send and the events, in the order they happened, since the last Ready.
//
// The runtime loop (Run) drives a Core with sockets and the wall clock;
// the simulator drives the very same Core with a virtual network and
// clock.
type Core struct {
	opt        CoreOptions
	self, inc  uint64 // Membership.Engine.Self and Inc
	size       int    // Membership.Engine.DatagramSize: the largest datagram
	bulk       int    // Membership.Engine.BulkSize: the largest data datagram, when larger
	group      uint32
	dec        *wire.Decoder
	enc        *wire.Encoder
	env        *wire.Envelope
	membership *membership.Machine
	engine     *multicast.Engine // the membership layer's, for its counters and peers
	election   electionPart      // the leader election, on the election service
	lock       lockPart          // the lock (mutex.algorithm), on the mutex service
	probe      probePart         // the group probe, on the probe service
	state      statePart         // state transfer, on the state service
	drop       *dropper          // built-in fault injection
	seal       sealing           // datagram sealing with the group key
	paths      pathNotes         // path notes in, for the runtime (Ready.Paths)
	started    time.Time         // when the Core was made
	leaving    bool              // Leave was called
	view       viewKey           // the view the election and the lock were told of last
	lastInput  time.Time         // the time of the latest input (a step, a tick, a request)
	events     []Event           // since the last Ready, in order
	ready      []Event           // handed out by the last Ready
	out        outbox            // datagrams since the last Ready
	chunks     assembler         // pieces of large membership messages (chunks.go)
	chunkBuf   []byte            // a large message's encoding, before it goes in pieces
	chunkMsg   uint64            // large messages sent in pieces
	version    otherVersion      // datagrams of this group in another wire version
	stats      CoreStats
}

// otherVersion is what a node heard of its group in another wire version.
type otherVersion struct {
	count    uint64 // datagrams
	version  uint8  // the last one's version
	from     uint64 // and sender
	at       netip.AddrPort
	refused  bool // this node refused itself for it
	reported bool // the warning was handed out
}

// versionMismatchAfter is how many datagrams of its group in another wire
// version a node alone in its view takes as proof that the group speaks
// that version.
const versionMismatchAfter = 3

// viewKey identifies a view: its ID and its coordinator's incarnation (a
// coordinator that restarts counts its epochs afresh).
type viewKey struct {
	id  wire.ViewID
	inc uint64
}

// CoreStats counts datagrams at the node's edge.
type CoreStats struct {
	DatagramsIn   uint64
	DatagramsOut  uint64
	BytesIn       uint64
	BytesOut      uint64
	Malformed     uint64 // undecodable datagrams
	NotHuddle     uint64 // wrong magic or wire version
	OtherVersion  uint64 // of those, huddle datagrams of this group in another wire version
	UnknownKind   uint64 // a kind this version does not know
	ForeignGroup  uint64 // another group sharing the address
	OwnEcho       uint64 // our own datagrams looped back
	EncodeErrors  uint64
	OversizedSent uint64 // datagrams over DatagramSize (a batch: over BulkSize): none should be (every kind is sized to fit); counted, still sent
	InjectedDrops uint64 // datagrams the built-in fault injection dropped (Drop)
	SealedDropped uint64 // sealed datagrams, which a node without a key cannot open
	SealMismatch  uint64 // opened datagrams whose inner sender is not the one the seal names
	ChunksSent    uint64 // pieces of large membership messages sent (chunks.go)
	ChunksRecv    uint64 // pieces received
	ChunkedRecv   uint64 // large messages put together from their pieces
	ChunksDropped uint64 // pieces dropped: stale, duplicate, inconsistent, or evicted unfinished
	ProtocolMsgs  uint64 // deliveries taken by the node's own protocols (election, lock), of the engine's
	AppDelivered  uint64 // messages of other nodes handed to the application (every service but the election's and the lock's)
}

// EventKind says which layer an Event comes from.
type EventKind uint8

// Event kinds.
const (
	// MembershipEvent: a view installed, a message delivered to the
	// application (its Kind is membership.Delivered), a suspicion, a
	// refusal, an event of the multicast engine.
	MembershipEvent    EventKind = iota + 1
	ElectionEvent                // the election's (Election)
	LockEvent                    // the lock's (Lock)
	SecurityEventKind            // a datagram unusable because of the key (Security)
	VersionEvent                 // the group heard in another wire version (Version)
	ProbeDoneEvent               // every member answered a probe of this node's (ProbeID)
	TraceEvent                   // with CoreOptions.Trace: a message of the election or the lock, sent or received (Trace)
	SentEvent                    // with CoreOptions.TraceSends: a message Multicast sent (Sent)
	StateTransferEvent           // a state transfer's (State)
)

// VersionSeen is a node of this group heard in another wire version.
type VersionSeen struct {
	Version uint8          // its wire version
	From    uint64         // its ID
	Addr    netip.AddrPort // its address
}

// Event is something the Core reports, in the order it happened: a view
// installed, a message for the application, an election round won...
type Event struct {
	Kind       EventKind
	Membership membership.Event
	Election   election.Event
	Lock       mutex.Event
	Security   SecurityEvent
	Version    VersionSeen
	ProbeID    uint64 // ProbeDoneEvent: the probe (Core.Probe)
	Trace      ProtocolMessage
	Sent       SentMessage
	State      StateEvent
}

// SentMessage is a message Multicast sent, as the log's send event shows
// it: the view it was sent in, its sequence number, order, service,
// addressee (0: every member), length and CRC-32.
type SentMessage struct {
	View    wire.ViewID
	Seq     uint64
	Order   wire.Order
	Service string
	To      uint64
	Len     int
	CRC     uint32
}

// ProtocolMessage is one message of the election or the lock, as the
// trace log shows it.
type ProtocolMessage struct {
	Service  string // ElectionService or MutexService
	Sent     bool   // sent by this node; else received
	From, To uint64 // To 0: every other member
	Payload  []byte // the message's own copy
}

// NewCore returns a Core whose first timer is due at now.
func NewCore(o CoreOptions, now time.Time) *Core {
	eng := &o.Membership.Engine
	c := &Core{
		opt:       o,
		self:      eng.Self,
		inc:       eng.Inc,
		size:      eng.DatagramSize,
		bulk:      max(eng.DatagramSize, eng.BulkSize),
		group:     wire.GroupHash(o.Group),
		dec:       wire.NewDecoder(),
		enc:       wire.NewEncoder(),
		env:       wire.NewEnvelope(max(eng.DatagramSize, eng.BulkSize)),
		lastInput: now,
		started:   now,
	}
	if len(o.Keys) > 0 {
		sealer, err := seal.NewSealer(o.Keys, c.self, c.inc, o.Salt)
		if err != nil {
			panic(err) // keys from a validated configuration; randomness from the system
		}
		c.seal.sealer = sealer
	}
	c.dec.Filter(c.group, c.self, c.inc)
	c.drop = newDropper(o.Drop, o.Seed)
	c.membership = membership.New(c.membershipOptions(), now)
	c.engine = c.membership.Engine()
	c.election = newElectionPart(o)
	c.lock = newLockPart(o)
	c.state = newStatePart(o.State)
	return c
}

// membershipOptions completes the membership layer's options with what
// is the Core's: the group's hash, the randomness, and the room a datagram
// leaves under a seal.
func (c *Core) membershipOptions() membership.Options {
	mo := c.opt.Membership
	room := c.room()
	mo.Engine.Group, mo.Engine.DatagramSize = c.group, room
	if c.bulk > c.size {
		mo.Engine.BulkSize = c.bulk - (c.size - room) // less the seal's overhead too
	}
	mo.Engine.Rand = rand.New(rand.NewPCG(c.opt.Seed, c.self))
	mo.MessageSize = cmp.Or(mo.MessageSize, wire.ChunkedMax(room))
	mo.Replicated = len(c.opt.State.Services) > 0
	return mo
}

// Receive is one datagram that arrived at now from src.
func (c *Core) Receive(now time.Time, src netip.AddrPort, data []byte) {
	c.stats.DatagramsIn++
	c.stats.BytesIn += uint64(len(data))
	data, sealed, ok := c.openSealed(now, src, data)
	if !ok {
		return
	}
	if err := c.dec.Decode(data, c.env); err != nil {
		c.countDecodeError(err)
		c.noteVersion(src, err)
		return
	}
	if c.seal.sealer != nil && (c.env.From != sealed.From || c.env.Inc != sealed.Inc) {
		c.stats.SealMismatch++ // a key holder speaking for another node
		return
	}
	if c.drop.hit(c.env.From) {
		c.stats.InjectedDrops++
		return
	}
	if c.env.Kind == wire.KindChunk && !c.assemble(now) {
		return
	}
	if c.env.Kind == wire.KindPath {
		c.pathIn(src)
		return
	}
	c.lastInput = now
	c.membership.Step(now, src, c.env)
	c.heard(c.env.From)
	c.route(now)
}

// SetDrop replaces the built-in fault injection's rule (see Drop).
func (c *Core) SetDrop(d Drop) { c.drop.set(d) }

// Drop returns the built-in fault injection's rule.
func (c *Core) Drop() Drop { return c.drop.rule }

func (c *Core) countDecodeError(err error) {
	switch {
	case err == wire.ErrOwnEcho:
		c.stats.OwnEcho++
	case err == wire.ErrForeignGroup:
		c.stats.ForeignGroup++
	case errors.Is(err, wire.ErrNotHuddle):
		c.stats.NotHuddle++
	case errors.Is(err, wire.ErrUnknownKind):
		c.stats.UnknownKind++
	default:
		c.stats.Malformed++
	}
}

// noteVersion counts a datagram of this group in another wire version.
func (c *Core) noteVersion(src netip.AddrPort, err error) {
	var ve *wire.VersionError
	if !errors.As(err, &ve) || ve.Group != c.group {
		return
	}
	v := &c.version
	v.count++
	v.version, v.from, v.at = ve.Version, ve.From, src
	c.stats.OtherVersion++
}

// checkVersionRefusal: a node alone in its view (or still joining) past
// the join timeout that hears its group only in another wire version
// refuses itself, as a joiner with another key does: it cannot join, and
// the message names both versions. A member of a larger view reports it
// once (OtherVersion) and goes on: its group is there.
func (c *Core) checkVersionRefusal(now time.Time) {
	v := &c.version
	if v.refused || v.count < versionMismatchAfter {
		return
	}
	if len(c.membership.View().Members) > 1 || now.Sub(c.started) < c.opt.Membership.JoinTimeout {
		if !v.reported {
			v.reported = true
			c.events = append(c.events, Event{Kind: VersionEvent, Version: VersionSeen{Version: v.version, From: v.from, Addr: v.at}})
		}
		return
	}
	v.refused = true
	c.events = append(c.events, Event{Kind: MembershipEvent, Membership: membership.Event{Kind: membership.Refused,
		Member: c.self, Setting: "wire_version", Ours: strconv.Itoa(wire.Version), Theirs: strconv.Itoa(int(v.version)), Addr: v.at}})
}

// Tick tells the Core that time has advanced to now.
func (c *Core) Tick(now time.Time) {
	c.lastInput = now
	c.membership.Tick(now)
	c.checkKeyRefusal(now)
	c.checkVersionRefusal(now)
	c.route(now)
	c.election.m.Tick(now)
	c.lock.m.Tick(now)
	c.protocolsStep()
}

// NextDeadline is the earliest time the Core wants Tick called; the zero
// Time means no timer is armed.
func (c *Core) NextDeadline() time.Time {
	d := c.membership.NextDeadline()
	for _, e := range [...]time.Time{c.election.m.NextDeadline(), c.lock.m.NextDeadline()} {
		if !e.IsZero() && !d.IsZero() && e.Before(d) {
			d = e
		}
	}
	return d
}

// route hands on what the membership layer produced since the last call:
// its envelopes are encoded into datagrams, and its deliveries and events
// go, in their order, to the node's own protocols (the election's, the
// lock's and the probe's services, and the views they run in) and to the
// application. What the protocols then want sent goes down as multicasts.
// Every input ends with it.
func (c *Core) route(now time.Time) {
	rd := c.membership.Ready()
	c.encode(rd.Envelopes)
	for i := range rd.Events {
		ev := &rd.Events[i]
		switch ev.Kind {
		case membership.Delivered:
			if c.protocolMessage(now, &ev.Delivery) {
				if ev.Delivery.Source != c.self {
					c.stats.ProtocolMsgs++ // of the engine's deliveries (msgs_delivered), which own messages are not
				}
				continue
			}
			if ev.Delivery.Source != c.self {
				c.stats.AppDelivered++
			}
			if c.stateHold(&ev.Delivery) {
				continue
			}
		case membership.ViewInstalled:
			c.viewChanged(now, ev.View)
		}
		c.events = append(c.events, Event{Kind: MembershipEvent, Membership: *ev})
		if ev.Kind == membership.ViewInstalled {
			c.stateView(now, ev.View)
		}
	}
	c.protocolsStep()
}

// protocolMessage gives a delivery of the election's, the lock's or the
// probe's service to its part, and reports whether it was one.
func (c *Core) protocolMessage(now time.Time, d *membership.Delivery) bool {
	switch string(d.Service) {
	case ElectionService:
		if d.Source != c.self { // the leader's own multicast RESULT comes back: not an input
			c.trace(ElectionService, false, d.Source, c.self, d.Payload)
			c.election.m.Receive(now, d.Source, d.Payload)
		}
	case MutexService:
		if d.Source != c.self || c.lock.m.OwnMessages() { // Ricart–Agrawala's own multicast request comes back: not an input
			c.trace(MutexService, false, d.Source, c.self, d.Payload)
			c.lock.m.Receive(now, d.Source, d.Payload)
		}
	case ProbeService:
		if d.Source != c.self { // the node's own question comes back: not an input
			c.probeMessage(now, d.Source, d.Payload)
		}
	case StateService:
		c.statePieceIn(now, d)
	default:
		return false
	}
	return true
}

// viewChanged tells the election, the lock and the probe of a view
// installed now.
func (c *Core) viewChanged(now time.Time, v membership.View) {
	k := viewKey{v.ID, 0}
	if len(v.Members) > 0 {
		k.inc = v.Members[0].Inc
	}
	if k == c.view {
		return
	}
	c.view = k
	ids := v.IDs()
	c.election.setView(now, v.ID, ids)
	c.lock.setView(now, v.ID, ids, v.Primary, c.membership)
	c.probe.out.clear()
}

// heard tells the lock, in quorum mode, that a datagram of node id was
// taken just now (the lease counts on it).
func (c *Core) heard(id uint64) {
	if c.lock.leased {
		c.lock.heard(id, c.membership)
	}
}

// protocolsStep takes what the election and the lock produced: their
// events go to the application's stream, their messages down as
// multicasts on their services, with the probe's.
func (c *Core) protocolsStep() {
	rd := c.election.m.Ready()
	for _, ev := range rd.Events {
		c.events = append(c.events, Event{Kind: ElectionEvent, Election: ev})
	}
	for _, msg := range rd.Messages {
		c.trace(ElectionService, true, c.self, msg.To, msg.Payload)
		c.election.out.add(msg.To, msg.Payload)
	}
	lr := c.lock.m.Ready()
	for _, ev := range lr.Events {
		c.events = append(c.events, Event{Kind: LockEvent, Lock: ev})
	}
	for _, msg := range lr.Messages {
		c.trace(MutexService, true, c.self, msg.To, msg.Payload)
		c.lock.out.addOrdered(msg.To, msg.Payload, msg.Total)
	}
	c.election.out.send(c.membership, electionService)
	c.lock.out.send(c.membership, mutexService)
	c.probe.out.send(c.membership, probeService)
	c.stateSend(c.lastInput)
}

// trace reports a message of the election or the lock, with trace on.
func (c *Core) trace(service string, sent bool, from, to uint64, payload []byte) {
	if c.opt.Trace {
		c.events = append(c.events, Event{Kind: TraceEvent, Trace: ProtocolMessage{Service: service, Sent: sent,
			From: from, To: to, Payload: append([]byte(nil), payload...)}})
	}
}

// Ready is everything a Core produced since the last Ready, in one value.
// It stays valid until the next call into the Core: the datagrams'
// buffers and the deliveries' bytes are reused.
type Ready struct {
	// Repair is the repair traffic (NACKs and repairs), which the node
	// may send on a socket of its own.
	Repair [][]byte
	// RepairTo says whom each datagram of Repair is for: RepairTo[i] is
	// the ID of the one node Repair[i] goes to (a NACK to its source, a
	// repair to the member that asked, with the unicast transport), or 0
	// for the whole group.
	RepairTo []uint64
	// Data is every other datagram, in order: data and session messages
	// must stay in order with each other (a session message announces
	// the data sent before it).
	Data [][]byte
	// DataTo says whom each datagram of Data is for, as RepairTo does
	// (an early acknowledgement to its source alone, with the unicast
	// transport); nil when every one is for the whole group.
	DataTo []uint64
	// Events are what happened, in order: views, the application's
	// messages, suspicions, the election's and the lock's events,
	// finished probes...
	Events []Event
	// Paths are the path notes that arrived since the last Ready: nodes
	// that asked this one to send to them by unicast too, or no longer
	// (the per-peer fallback; the runtime acts on them).
	Paths []PathNote
	// Beacon is the last session, join or merge datagram of Data, nil if
	// none: what tells a node that has not heard this one yet that it
	// exists (the unicast transport sends it to listed peers outside the
	// view). Like Data, it is valid until the next Ready.
	Beacon []byte
}

// Ready hands back what the Core produced since the last call. What was
// multicast since then is packed now (the sequencer's order record, then
// the data), so that messages sent in one turn of the loop share
// datagrams: batching without added delay.
func (c *Core) Ready() Ready {
	c.membership.Pack()
	c.route(c.lastInput) // what packing brought: records, data, and own deliveries
	c.ready, c.events = c.events, c.ready[:0]
	rd := Ready{Repair: c.out.repair, RepairTo: c.out.repairTo, Data: c.out.data, Events: c.ready, Beacon: c.out.beacon, Paths: c.paths.in}
	if len(c.out.dataTo) > 0 {
		rd.DataTo = c.out.dataTo
	}
	c.paths.in, c.paths.spare = c.paths.spare[:0], c.paths.in
	c.out.taken = true
	return rd
}

// PeerAddrs appends to dst the nodes this node knows of, with their
// addresses, and returns it with the set's version
// (membership.Machine.PeerAddrs).
func (c *Core) PeerAddrs(dst []membership.PeerAddr) ([]membership.PeerAddr, uint64) {
	return c.membership.PeerAddrs(dst)
}

// PeersVersion changes when PeerAddrs' set may have.
func (c *Core) PeersVersion() uint64 { return c.membership.PeersVersion() }

// Multicast sends a message to the view (see membership.Machine.Multicast):
// it fails with multicast.ErrWindowFull while the send window is full, and
// with membership.ErrBlocked or ErrNotInView while there is no view to send in.
// Total and safe messages need the primary component: in a view that is
// not primary they fail with membership.ErrNotPrimary. FIFO and causal
// messages need no sequencer, and go in any view.
func (c *Core) Multicast(service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	if order != wire.FIFO && order != wire.Causal && c.membership.Sending() && c.membership.Primary() == 0 {
		return 0, membership.ErrNotPrimary
	}
	var view wire.ViewID
	if c.opt.TraceSends {
		view = c.membership.View().ID // View copies the members: only when logged
	}
	seq, err := c.membership.Multicast(service, payload, order, dest)
	if err == nil && c.opt.TraceSends {
		c.events = append(c.events, Event{Kind: SentEvent, Sent: SentMessage{View: view, Seq: seq, Order: order,
			Service: string(service), To: dest, Len: len(payload), CRC: crc32.ChecksumIEEE(payload)}})
	}
	c.route(c.lastInput) // this node's own delivery of it
	return seq, err
}

// Paused tells the core that the node could not observe the network for d
// (see multicast.Engine.Paused).
func (c *Core) Paused(now time.Time, d time.Duration) { c.membership.Paused(now, d) }

// Fits reports whether a message of these sizes, order and destination
// can be sent now (a causal message carries a header too).
func (c *Core) Fits(serviceLen, payloadLen int, order wire.Order, dest uint64) bool {
	return c.membership.Fits(serviceLen, payloadLen, order, dest)
}

// Sending reports whether the node is in a view that takes messages now.
func (c *Core) Sending() bool { return c.membership.Sending() }

// Leave starts a graceful leave (see membership.Machine.Leave).
//
// The lock goes first: a holder releases it and a waiter withdraws (both
// logged), and their deferred replies go out before the leave, so that
// the lock is free before the group lets this node go; it takes no new
// request after.
func (c *Core) Leave(now time.Time) {
	c.lastInput, c.leaving = now, true
	c.route(now)
	c.lock.m.Release(now)
	c.protocolsStep()
	c.membership.Leave(now)
	c.route(now)
}

// Left reports whether the node left the group (or was refused).
func (c *Core) Left() bool { return c.membership.Left() || c.seal.refused || c.version.refused }

// Leaving reports whether Leave was called.
func (c *Core) Leaving() bool { return c.leaving }

// View returns the installed view.
func (c *Core) View() membership.View { return c.membership.View() }

// Sequencer returns the member that orders total and safe messages in the
// installed view (0 before the first view).
func (c *Core) Sequencer() uint64 { return c.membership.Sequencer() }

// MembershipStats returns the membership layer's counters.
func (c *Core) MembershipStats() membership.Stats { return c.membership.Stats() }

// Peers returns the IDs of the peers this node hears, in increasing order.
func (c *Core) Peers() []uint64 { return c.engine.Peers() }

// Stats returns the node-edge counters and the multicast engine's.
func (c *Core) Stats() (CoreStats, multicast.Stats) { return c.stats, c.engine.Stats() }

// outbox holds the datagrams encoded since the last Ready, in buffers
// reused from turn to turn.
type outbox struct {
	repair [][]byte // NACKs and repairs
	// repairTo is the node each of repair is for, 0 for the group
	repairTo []uint64
	data     [][]byte // everything else
	// dataTo is the node each of data is for, 0 for the group; empty
	// in a turn without a datagram for one node
	dataTo []uint64
	bufs   [][]byte // datagram buffers
	used   int      // of bufs, since the last take
	taken  bool     // Ready handed them out: the next encode starts afresh
	beacon []byte   // the last session, join or merge datagram of data
}

// encode encodes envelopes into datagrams.
func (c *Core) encode(envs []wire.Envelope) {
	o := &c.out
	if o.taken {
		o.repair, o.repairTo, o.data, o.used, o.taken, o.beacon = o.repair[:0], o.repairTo[:0], o.data[:0], 0, false, nil
		o.dataTo = o.dataTo[:0]
	}
	for i := range envs {
		env := &envs[i]
		if chunkable(env.Kind) {
			if n, err := wire.EncodedSize(env); err == nil && n > c.room() {
				c.emitChunks(env)
				continue
			}
		}
		c.emit(env)
	}
}

// emit encodes env into one datagram.
func (c *Core) emit(env *wire.Envelope) {
	o := &c.out
	b, err := c.encodeOne(o.buffer(c.size), env)
	if err != nil {
		c.stats.EncodeErrors++
		return
	}
	if len(b) > c.size && (env.Kind != wire.KindBatch || len(b) > c.bulk) {
		c.stats.OversizedSent++
	}
	c.stats.DatagramsOut++
	c.stats.BytesOut += uint64(len(b))
	switch env.Kind {
	case wire.KindNack, wire.KindRepair:
		o.repair = append(o.repair, b)
		o.repairTo = append(o.repairTo, env.To)
	case wire.KindSession, wire.KindJoin, wire.KindMerge:
		if env.To == 0 {
			o.beacon = b
		}
		fallthrough
	default:
		if env.To != 0 || len(o.dataTo) > 0 {
			// The turn's first datagram for one node: the ones before
			// it were for the group.
			o.dataTo = append(o.dataTo, make([]uint64, len(o.data)-len(o.dataTo))...)
			o.dataTo = append(o.dataTo, env.To)
		}
		o.data = append(o.data, b)
	}
	o.bufs[o.used-1] = b // keep it if encoding grew it
}

// room is what an envelope may take of a datagram: all of it, less the
// seal's overhead with a key.
func (c *Core) room() int {
	if c.seal.sealer != nil {
		return c.size - seal.Overhead
	}
	return c.size
}

// encodeOne encodes env into buf, and seals it with a key.
func (c *Core) encodeOne(buf []byte, env *wire.Envelope) ([]byte, error) {
	if c.seal.sealer == nil {
		return c.enc.Append(buf, env)
	}
	plain, err := c.enc.Append(c.seal.scratch[:0], env)
	if err != nil {
		return nil, err
	}
	c.seal.scratch = plain[:0]
	return c.seal.sealer.Seal(buf, plain), nil
}

// buffer returns an empty datagram buffer, reusing those of earlier turns.
func (o *outbox) buffer(size int) []byte {
	if o.used == len(o.bufs) {
		o.bufs = append(o.bufs, make([]byte, 0, size))
	}
	o.used++
	return o.bufs[o.used-1][:0]
}
