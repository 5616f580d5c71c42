package node

import (
	"cmp"
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/seal"
	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/mutex"
)

// CoreOptions configures a Core. Zero SRM fields take the multicast
// package's defaults.
type CoreOptions struct {
	ID             uint64
	Inc            uint64
	Group          string
	DatagramSize   int
	Heartbeat      time.Duration
	SuspectTimeout time.Duration
	Window         int
	WindowBytes    int // multicast.Options.WindowBytes
	MaxMessage     int
	C1, C2, D1, D2 float64
	MinDelay       time.Duration
	JoinTimeout    time.Duration
	Settings       []membership.Setting // protocol settings every member must share
	Seed           uint64               // seeds the protocol's randomness (timer jitter)
	Election       election.Algorithm   // "" = election.DefaultAlgorithm
	// RingOrder, HopDelay and the bully timeouts configure the election
	// (election.Options); zero timeouts are derived from the heartbeat
	// and the suspect timeout (config.Election.Timeouts).
	RingOrder          election.RingOrder
	HopDelay           time.Duration
	AnswerTimeout      time.Duration
	CoordinatorTimeout time.Duration
	// Quorum is the lock's expected cluster size N (mutex.quorum); 0 = off.
	// With it, the lock is granted and kept only while the view has more
	// than N/2 members and this node heard, within the suspect timeout,
	// from a majority of N of them, itself included (the lease); a node
	// whose view lost a member, or that had no view, neither replies nor
	// enters for 1.5 suspect timeouts (the quarantine). See mutex.Options.
	Quorum int
	// Lock is the lock's algorithm (mutex.algorithm): "" or
	// mutex.RicartAgrawala, mutex.Central or mutex.TokenRing.
	Lock mutex.Algorithm
	Drop Drop // built-in fault injection; Drop.Seed 0 derives the drop's seed from Seed
	// Keys seal every datagram (AES-256-GCM): the first seals, every one
	// opens; none: datagrams in the clear. Each datagram's payload then
	// shrinks by seal.Overhead to stay within DatagramSize.
	Keys []seal.Key
	// Salt is where the sealer draws its start's salt; nil:
	// crypto/rand. The simulator passes a seeded source.
	Salt io.Reader
	// Trace reports every message of the election and the lock, sent
	// and received, as a TraceEvent (log level trace).
	Trace bool
	// MessageSize bounds a membership message (and so the view's size);
	// 0: what wire.MaxChunks pieces carry (wire.ChunkedMax). Tests set
	// it to make a group full.
	MessageSize int
}

// CoreOptionsFrom takes a Core's options from a node's configuration.
func CoreOptionsFrom(c config.Config, inc, seed uint64) CoreOptions {
	return CoreOptions{
		ID: c.ID, Inc: inc, Group: c.Group, DatagramSize: c.DatagramSize,
		Heartbeat: c.Heartbeat.D(), SuspectTimeout: c.SuspectTimeout.D(),
		Window: c.SendWindow, WindowBytes: windowBytes(c.RecvBuffer), MaxMessage: c.MaxMessageSize,
		C1: c.SRM.C1, C2: c.SRM.C2, D1: c.SRM.D1, D2: c.SRM.D2, MinDelay: c.SRM.MinDelay.D(),
		JoinTimeout: c.JoinTimeout.D(), Settings: Settings(c), Seed: seed,
		Election: election.Algorithm(c.Election.Algorithm), RingOrder: election.RingOrder(c.Election.RingOrder),
		HopDelay: c.Election.HopDelay.D(), AnswerTimeout: c.Election.AnswerTimeout.D(), CoordinatorTimeout: c.Election.CoordinatorTimeout.D(),
		Quorum: c.Mutex.Quorum, Lock: mutex.Algorithm(c.Mutex.Algorithm),
		Drop: Drop{Rate: c.Drop.Rate, From: c.Drop.From, Seed: c.Drop.Seed, Burst: c.Drop.Burst},
	}
}

// windowBytes is the bound on a sender's unstable payload
// (multicast.Options.WindowBytes) for receive buffers of buf bytes:
// three quarters of it. Linux sizes a buffer at twice the request and
// counts a datagram at about twice its payload, so such a window fills at
// most about 85 % of a receiver's socket; half cost 15–25 % of the
// throughput at 5 % loss.
func windowBytes(buf int) int { return buf * 3 / 4 }

// Settings lists the settings every member of a group must share, by
// their configuration keys: a joiner that differs is refused, naming the
// first that does. Datagram size and the largest message decide what a
// member can receive; the heartbeat and the suspect timeout decide
// whether members suspect each other falsely.
func Settings(c config.Config) []membership.Setting {
	ss := []membership.Setting{
		{Name: "datagram_size", Value: strconv.Itoa(c.DatagramSize)},
		{Name: "max_message_size", Value: strconv.Itoa(c.MaxMessageSize)},
		{Name: "heartbeat", Value: c.Heartbeat.D().String()},
		{Name: "suspect_timeout", Value: c.SuspectTimeout.D().String()},
		{Name: "election.algorithm", Value: c.Election.Algorithm},
		{Name: "mutex.quorum", Value: strconv.Itoa(c.Mutex.Quorum)},
	}
	// Settings added later go in only when they differ from what nodes
	// did before them, so that a node of an earlier release, which sends
	// none, still joins a group that keeps the old behaviour (a rolling
	// upgrade); one that differs is refused, naming the setting.
	if o := c.Election.RingOrder; o != "" && o != string(election.Ascending) {
		ss = append(ss, membership.Setting{Name: "election.ring_order", Value: o})
	}
	if a := c.Mutex.Algorithm; a != "" && a != string(mutex.RicartAgrawala) {
		ss = append(ss, membership.Setting{Name: "mutex.algorithm", Value: a})
	}
	return ss
}

// Core is one node's protocol stack as a deterministic state machine over
// datagrams. It decodes what arrives, steps the membership layer (which
// owns the reliable multicast engine), and routes what the layer hands
// back, in one place (route): messages of the election's and the lock's
// services to those machines, views to them and to the application, the
// rest to the application. What each machine wants sent goes down as
// multicasts; what the Core wants sent is encoded into datagrams. No
// machine calls another: each hands back what it produced (Ready), and
// the Core passes it on as input to the next.
//
// The runtime loop (Run) drives a Core with sockets and the wall clock;
// the simulator drives the very same Core with a virtual network and
// clock.
type Core struct {
	opt        CoreOptions
	group      uint32
	dec        *wire.Decoder
	enc        *wire.Encoder
	env        *wire.Envelope
	membership *membership.Machine
	engine     *multicast.Engine // the membership layer's, for its counters and peers
	election   electionPart      // the leader election, on the election service
	lock       lockPart          // the lock (mutex.algorithm), on the mutex service
	probe      probePart         // the group probe's messages, on the probe service
	drop       *dropper          // built-in fault injection
	seal       sealing           // datagram sealing with the group key
	started    time.Time         // when the Core was made
	leaving    bool              // Leave was called
	view       viewKey           // the view the election and the lock were told of last
	lastInput  time.Time         // the time of the latest input (a step, a tick, a request)
	events     []Event           // since the last Ready, in order
	ready      []Event           // handed out by the last Ready
	out        outbox            // datagrams since the last TakeOutboxes
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

var _ sim.Machine = (*Core)(nil)

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
	OversizedSent uint64 // datagrams over DatagramSize: none should be (every kind is sized to fit); counted, still sent
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
	MembershipEvent   EventKind = iota + 1
	ElectionEvent               // the election's (Election)
	LockEvent                   // the lock's (Lock)
	SecurityEventKind           // a datagram unusable because of the key (Security)
	VersionEvent                // the group heard in another wire version (Version)
	ProbeEvent                  // a probe message from another member (Probe)
	TraceEvent                  // with CoreOptions.Trace: a message of the election or the lock, sent or received (Trace)
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
	Probe      ProbeSeen
	Trace      ProtocolMessage
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
	c := &Core{
		opt:       o,
		group:     wire.GroupHash(o.Group),
		dec:       wire.NewDecoder(),
		enc:       wire.NewEncoder(),
		env:       wire.NewEnvelope(o.DatagramSize),
		lastInput: now,
		started:   now,
	}
	if len(o.Keys) > 0 {
		sealer, err := seal.NewSealer(o.Keys, o.ID, o.Inc, o.Salt)
		if err != nil {
			panic(err) // keys from a validated configuration; randomness from the system
		}
		c.seal.sealer = sealer
	}
	room := c.room() // what the protocol may fill
	c.dec.Filter(c.group, o.ID, o.Inc)
	c.drop = newDropper(o.Drop, o.Seed)
	c.membership = membership.New(membership.Options{
		Engine: multicast.Options{
			Self: o.ID, Inc: o.Inc, Group: c.group,
			Heartbeat: o.Heartbeat, SuspectTimeout: o.SuspectTimeout,
			DatagramSize: room, Window: o.Window, WindowBytes: o.WindowBytes, MaxMessage: o.MaxMessage,
			C1: o.C1, C2: o.C2, D1: o.D1, D2: o.D2, MinDelay: o.MinDelay,
			Rand: rand.New(rand.NewPCG(o.Seed, o.ID)),
		},
		JoinTimeout: o.JoinTimeout, Settings: o.Settings,
		MessageSize: cmp.Or(o.MessageSize, wire.ChunkedMax(room)),
	}, now)
	c.engine = c.membership.Engine()
	c.election = newElectionPart(o)
	c.lock = newLockPart(o.ID, o.Lock, o.Quorum, o.SuspectTimeout)
	return c
}

// Receive implements sim.Machine: one datagram arrived at now from src.
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
	if len(c.membership.View().Members) > 1 || now.Sub(c.started) < c.opt.JoinTimeout {
		if !v.reported {
			v.reported = true
			c.events = append(c.events, Event{Kind: VersionEvent, Version: VersionSeen{Version: v.version, From: v.from, Addr: v.at}})
		}
		return
	}
	v.refused = true
	c.events = append(c.events, Event{Kind: MembershipEvent, Membership: membership.Event{Kind: membership.Refused,
		Member: c.opt.ID, Setting: "wire_version", Ours: strconv.Itoa(wire.Version), Theirs: strconv.Itoa(int(v.version)), Addr: v.at}})
}

// Tick implements sim.Machine.
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

// NextDeadline implements sim.Machine.
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
// go, in their order, to the node's own protocols (the election's and the
// lock's services, and the views they run in) and to the application.
// What the protocols then want sent goes down as multicasts.
func (c *Core) route(now time.Time) {
	rd := c.membership.Ready()
	c.encode(rd.Envelopes)
	for i := range rd.Events {
		ev := &rd.Events[i]
		switch ev.Kind {
		case membership.Delivered:
			if c.protocolMessage(now, &ev.Delivery) {
				c.stats.ProtocolMsgs++
				continue
			}
			if ev.Delivery.Source != c.opt.ID {
				c.stats.AppDelivered++
			}
		case membership.ViewInstalled:
			c.viewChanged(now, ev.View)
		}
		c.events = append(c.events, Event{Kind: MembershipEvent, Membership: *ev})
	}
	c.protocolsStep()
}

// protocolMessage gives a delivery of the election's or the lock's service
// to its machine, and reports whether it was one.
func (c *Core) protocolMessage(now time.Time, d *membership.Delivery) bool {
	switch string(d.Service) {
	case ElectionService:
		if d.Source != c.opt.ID { // the leader's own multicast RESULT comes back: not an input
			c.trace(ElectionService, false, d.Source, c.opt.ID, d.Payload)
			c.election.m.Receive(now, d.Source, d.Payload)
		}
	case MutexService:
		if d.Source != c.opt.ID || c.lock.m.OwnMessages() { // Ricart–Agrawala's own multicast request comes back: not an input
			c.trace(MutexService, false, d.Source, c.opt.ID, d.Payload)
			c.lock.m.Receive(now, d.Source, d.Payload)
		}
	case ProbeService:
		c.probeMessage(d)
	default:
		return false
	}
	return true
}

// viewChanged tells the election and the lock of a view installed now.
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
	c.lock.setView(now, v.ID, ids, c.membership)
	c.probe.out.clear()
}

// heard tells the lock, in quorum mode, that a datagram of node id was
// taken just now (the lease counts on it).
func (c *Core) heard(id uint64) {
	if c.lock.quorum > 0 {
		c.lock.heard(id, c.membership)
	}
}

// protocolsStep takes what the election and the lock produced: their
// events go to the application's stream, their messages down as
// multicasts on their services.
func (c *Core) protocolsStep() {
	rd := c.election.m.Ready()
	for _, ev := range rd.Events {
		c.events = append(c.events, Event{Kind: ElectionEvent, Election: ev})
	}
	for _, msg := range rd.Messages {
		c.trace(ElectionService, true, c.opt.ID, msg.To, msg.Payload)
		c.election.out.add(msg.To, msg.Payload)
	}
	lr := c.lock.m.Ready()
	for _, ev := range lr.Events {
		c.events = append(c.events, Event{Kind: LockEvent, Lock: ev})
	}
	for _, msg := range lr.Messages {
		c.trace(MutexService, true, c.opt.ID, msg.To, msg.Payload)
		c.lock.out.addOrdered(msg.To, msg.Payload, msg.Total)
	}
	c.election.out.send(c.membership, electionService)
	c.lock.out.send(c.membership, mutexService)
	c.probe.out.send(c.membership, probeService)
}

// trace reports a message of the election or the lock, with trace on.
func (c *Core) trace(service string, sent bool, from, to uint64, payload []byte) {
	if c.opt.Trace {
		c.events = append(c.events, Event{Kind: TraceEvent, Trace: ProtocolMessage{Service: service, Sent: sent,
			From: from, To: to, Payload: append([]byte(nil), payload...)}})
	}
}

// Ready returns what the Core reported since the last call, in the order
// it happened: views, the application's messages, suspicions, the
// election's and the lock's events. It stays valid until the next call to
// Ready; the deliveries' bytes, until the next call into the Core.
func (c *Core) Ready() []Event {
	c.ready, c.events = c.events, c.ready[:0]
	return c.ready
}

// TakeOutbox implements sim.Machine: the datagrams to multicast, in order.
// Everything queued since the last call is packed now, so messages sent in
// one turn of the loop share datagrams (batching without added delay). The
// datagrams stay valid until the next call into the Core: their buffers
// are reused.
func (c *Core) TakeOutbox() [][]byte {
	ctl, data := c.TakeOutboxes()
	c.out.all = append(append(c.out.all[:0], ctl...), data...)
	return c.out.all
}

// TakeOutboxes is TakeOutbox split in two: the repair traffic (NACKs and
// repairs), which the node may send on a socket of its own, and the rest
// (data and session messages, which must stay in order with each other:
// a session message announces the data sent before it).
func (c *Core) TakeOutboxes() (ctl, data [][]byte) {
	c.membership.Pack()
	c.route(c.lastInput) // what packing brought: records, data, and own deliveries
	c.out.taken = true
	return c.out.ctl, c.out.data
}

// Multicast sends a message to the view (see membership.Machine.Multicast):
// it fails with multicast.ErrWindowFull while the send window is full, and
// with membership.ErrBlocked or ErrNotInView while there is no view to send in.
func (c *Core) Multicast(service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	seq, err := c.membership.Multicast(service, payload, order, dest)
	c.route(c.lastInput) // this node's own delivery of it
	return seq, err
}

// Paused tells the core that the node could not observe the network for d
// (see multicast.Engine.Paused).
func (c *Core) Paused(now time.Time, d time.Duration) { c.membership.Paused(now, d) }

// Fits reports whether a message of these sizes can be sent now.
func (c *Core) Fits(serviceLen, payloadLen int) bool {
	return c.membership.Fits(serviceLen, payloadLen)
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

// MembershipStats returns the membership layer's counters.
func (c *Core) MembershipStats() membership.Stats { return c.membership.Stats() }

// Peers returns the IDs of the peers this node hears, in increasing order.
func (c *Core) Peers() []uint64 { return c.engine.Peers() }

// Stats returns the node-edge counters and the multicast engine's.
func (c *Core) Stats() (CoreStats, multicast.Stats) { return c.stats, c.engine.Stats() }

// outbox holds the datagrams encoded since the last TakeOutboxes, in
// buffers reused from turn to turn.
type outbox struct {
	ctl   [][]byte // NACKs and repairs
	data  [][]byte // everything else
	all   [][]byte // both, for TakeOutbox
	bufs  [][]byte // datagram buffers
	used  int      // of bufs, since the last take
	taken bool     // the caller took them: the next encode starts afresh
}

// encode encodes envelopes into datagrams.
func (c *Core) encode(envs []wire.Envelope) {
	o := &c.out
	if o.taken {
		o.ctl, o.data, o.used, o.taken = o.ctl[:0], o.data[:0], 0, false
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
	b, err := c.encodeOne(o.buffer(c.opt.DatagramSize), env)
	if err != nil {
		c.stats.EncodeErrors++
		return
	}
	if len(b) > c.opt.DatagramSize {
		c.stats.OversizedSent++
	}
	c.stats.DatagramsOut++
	c.stats.BytesOut += uint64(len(b))
	if env.Kind == wire.KindNack || env.Kind == wire.KindRepair {
		o.ctl = append(o.ctl, b)
	} else {
		o.data = append(o.data, b)
	}
	o.bufs[o.used-1] = b // keep it if encoding grew it
}

// room is what an envelope may take of a datagram: all of it, less the
// seal's overhead with a key.
func (c *Core) room() int {
	if c.seal.sealer != nil {
		return c.opt.DatagramSize - seal.Overhead
	}
	return c.opt.DatagramSize
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
