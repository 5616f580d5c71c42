package multicast

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Options configures an Engine. New fills zero fields with the Default
// constants.
type Options struct {
	Self           uint64        // this node's ID
	Inc            uint64        // this node's incarnation
	Group          uint32        // wire.GroupHash of the group name
	Heartbeat      time.Duration // session message interval
	SuspectTimeout time.Duration // silence after which a peer is lost
	DatagramSize   int           // largest datagram, bytes (default DefaultDatagramSize)
	Window         int           // most unstable own messages (default DefaultWindow)
	// BulkSize is the largest datagram a busy sender packs its messages
	// into while no member asks it for repairs (lossy); 0, or no more
	// than DatagramSize, packs every datagram to DatagramSize. Every
	// message still fits a datagram of DatagramSize (fragmentSize), so
	// that a repair does, and the receivers must read datagrams of
	// BulkSize. See packSize.
	BulkSize int
	// WindowBytes bounds the payload bytes of the unstable own messages
	// too (0: no bound), shared as Window is: a sender's window must fit
	// the receivers' socket buffers, or a receiver descheduled for a few
	// milliseconds drops what the window let through. The node sets three
	// quarters of the receive buffer the kernel granted it, assuming its
	// peers got the same (Linux sizes the buffer at twice the request, and
	// counts a datagram at about twice its payload).
	WindowBytes int
	MaxMessage  int // largest message, reassembled, bytes (default DefaultMaxMessage)

	// Directed is for a transport that sends each datagram to each
	// member apart (unicast): a NACK goes to the source alone while the
	// source is live, and the source's repair to the member that asked
	// (wire.Envelope.To), instead of to the whole group; the others
	// never hear them, so a member that lost a message asks for it
	// itself, without waiting for a slot that only suppression needs.
	Directed bool
	// FanOutBytes, with Directed, bounds the payload bytes of the
	// unstable own messages times the destinations each goes to (the
	// other members): every copy waits in this node's socket send
	// buffer, and a full one would park the node's loop. The node sets
	// WindowBytes of the send buffer the kernel granted; 0: no bound.
	FanOutBytes int

	// SRM timer constants (Floyd et al. 1997 §III): requests wait
	// uniform [C1·d, (C1+C2)·d], repairs [D1·d, (D1+D2)·d]. When all four
	// are zero: DefaultC1, DefaultC2, DefaultD1, DefaultD2.
	C1, C2, D1, D2 float64
	// MinDelay is the floor on the one-way delay d used in those timers
	// (default DefaultMinDelay). On a LAN the measured delay is tens of
	// microseconds, close to the time a host takes to process a datagram,
	// so timers spread by the raw delay fire together and suppress
	// nothing; the floor spreads them by more than that processing time.
	MinDelay time.Duration

	Rand *rand.Rand // timer randomness; seeded by the caller
}

// Defaults for zero Options fields. The configuration's profiles
// (config.LAN) start from the same values.
const (
	// DefaultDatagramSize fits an Ethernet MTU of 1500 with IP and UDP
	// headers (and a VLAN tag) to spare, so a lost packet loses one
	// datagram.
	DefaultDatagramSize = 1400
	// DefaultWindow bounds the retransmission buffer to about 4 MB of
	// 1000-byte messages.
	DefaultWindow = 4096
	// DefaultMaxMessage is 1 MiB.
	DefaultMaxMessage = 1 << 20
	// DefaultC1, DefaultC2, DefaultD1 and DefaultD2 are the SRM timer
	// constants. The paper's C1=2 only delays recovery on a LAN, where
	// the spread C2·MinDelay does the suppressing; D1 and D2 are the
	// paper's.
	DefaultC1 = 1
	DefaultC2 = 3
	DefaultD1 = 1
	DefaultD2 = 1
	// DefaultMinDelay is the floor on the one-way delay the SRM timers
	// scale with.
	DefaultMinDelay = 500 * time.Microsecond
)

// WindowBytes is the bound on a sender's unstable payload
// (Options.WindowBytes) for receive buffers of buf bytes: three quarters
// of it. Linux sizes a buffer at twice the request and counts a datagram
// at about twice its payload, so such a window fills at most about 85 %
// of a receiver's socket; half cost 15–25 % of the throughput at 5 % loss.
func WindowBytes(buf int) int { return buf * 3 / 4 }

// Errors of Multicast.
var (
	ErrWindowFull = errors.New("multicast: send window full")
	ErrTooLarge   = errors.New("multicast: message larger than the maximum message size")
)

// Engine is the multicast layer's protocol core: a deterministic state
// machine with no goroutines, sockets or clock of its own. The membership
// layer that owns it (membership.Machine, in the node's Core or the
// simulator) feeds it with Step, Tick and Multicast, packs each turn's
// messages with Pack, and takes what it produced with Ready.
//
// It implements SRM (Floyd et al. 1997) for a LAN group: per-sender
// sequence numbers, exactly-once FIFO delivery per sender, gap detection
// from data, NACKs and session messages, multicast NACKs with randomized
// and suppressed request timers, repairs by any holder with randomized and
// suppressed repair timers, stability from the session messages' receive
// reports, a send window, fragmentation and batching.
type Engine struct {
	opt           Options
	peers         map[uint64]*peer
	streams       map[uint64]*stream // by source ID; not our own
	own           *stream            // what we send
	timers        timerHeap
	nextSession   time.Time
	stretch       int                    // peers are lost after stretch+1 suspect timeouts of silence (Stretch)
	probeAt       time.Time              // a session message announcing the tail of what was just sent; zero for none
	probeAfter    time.Duration          // how long after the last data (probeDelay, at each heartbeat)
	lastNow       time.Time              // of the last Step or Tick
	fullSince     time.Time              // since when the send window has been full; zero when it is not
	lagReported   bool                   // the laggards of this full window were reported
	senders       int                    // members sending now, this one included: they share the window
	sendq         []sendItem             // own messages (fragments) to transmit at the next flush
	tail          tail                   // the last datagram that packing sendq will fill
	lossAt        time.Time              // when a member last asked for a repair of our own data (cut)
	quiet         int                    // heartbeats a lossy period lasts after lossAt (lossy); 0: cutQuiet
	batchBuf      []wire.Data            // backing array of the batches packed from sendq
	sortedStreams []uint64               // the streams' sources in order (streamIDs); nil: to be sorted again
	earlyAt       time.Time              // when the last early acknowledgement went (ackEarly)
	stabilityAt   time.Time              // when the streams' stable points last moved (updateStability)
	stabilityDue  bool                   // in a large group: a session message came since, and they wait for Tick
	view          wire.ViewID            // this node's view, stamped on what it sends
	members       map[uint64]uint64      // the view's members and their incarnations; nil: every live peer counts for stability
	absent        map[uint64]*peer       // members lost but not yet excluded: their last reports still count for stability
	expected      map[uint64]expectation // nodes a flush in progress proposes: admitted as members are (Expect)
	expireAt      time.Time              // when the first expectation runs out; zero for none
	strangers     strangers              // nodes outside the view: only heard (strangers.go)
	seenLimit     limiter                // of strangers' PeerSeen events
	out           []wire.Envelope
	events        []Event
	deliveries    []Delivery
	ready         Ready // handed out by the last Ready; its slices are reused
	stats         Stats
}

// EventKind says what happened.
type EventKind uint8

// Event kinds.
const (
	PeerSeen      EventKind = iota + 1 // first datagram from a peer (or from its new incarnation)
	PeerLost                           // a peer stayed silent for the suspect timeout
	PeerConflict                       // another live node uses this node's ID
	StreamSkipped                      // messages of a source were lost for good (Skipped of them)
	PeerLagging                        // a live peer has held our send window full for a suspect timeout (Behind messages)
)

// Event is something the node should know about (and log).
type Event struct {
	Kind      EventKind
	Peer      uint64
	Inc       uint64
	Addr      netip.AddrPort
	Restarted bool          // PeerSeen: it replaces an older incarnation
	Silent    time.Duration // PeerLost: how long it was silent
	From      uint64        // StreamSkipped: first seq lost
	Skipped   uint64        // StreamSkipped: how many
	Behind    uint64        // PeerLagging: how many of our messages it has not reported
	Held      time.Duration // PeerLagging: how long the window has been full
}

// Delivery is one message delivered to the layer above, in its source's
// order, exactly once. Payload and Service stay valid until the Engine
// drops the message, which it may do at the next call: copy them to keep them.
type Delivery struct {
	Source  uint64
	Inc     uint64
	Seq     uint64      // of the message's first fragment
	End     uint64      // of its last fragment (Seq when it is not fragmented)
	View    wire.ViewID // the view its source sent it in
	Order   wire.Order
	Dest    uint64
	Service []byte
	Payload []byte
}

// New returns an Engine that sends its first session message at now.
func New(opt Options, now time.Time) *Engine {
	opt = withDefaults(opt)
	e := &Engine{opt: opt, peers: make(map[uint64]*peer), streams: make(map[uint64]*stream), absent: make(map[uint64]*peer),
		expected: make(map[uint64]expectation), nextSession: now, lastNow: now}
	e.probeAfter = e.probeDelay() // no peers yet: the floor
	e.own = newStream(opt.Self, opt.Inc, 1, e.ringSize())
	return e
}

func withDefaults(o Options) Options {
	if o.C1 == 0 && o.C2 == 0 && o.D1 == 0 && o.D2 == 0 {
		o.C1, o.C2, o.D1, o.D2 = DefaultC1, DefaultC2, DefaultD1, DefaultD2
	}
	if o.DatagramSize == 0 {
		o.DatagramSize = DefaultDatagramSize
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.MaxMessage == 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.MinDelay == 0 {
		o.MinDelay = DefaultMinDelay
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(o.Self, o.Inc))
	}
	return o
}

// ringSize is the number of messages a stream may hold: the window plus
// room for messages that arrive before the stability that frees their slots.
func (e *Engine) ringSize() int { return 2 * e.opt.Window }

// Step processes one decoded datagram that arrived at now from src. The
// datagram's group and sender have been checked by the caller: it is for this
// group and not this node's own echo. env must not be kept after Step returns.
func (e *Engine) Step(now time.Time, src netip.AddrPort, env *wire.Envelope) {
	e.lastNow = now
	if env.From == e.opt.Self {
		e.conflict(src, env.Inc)
		return
	}
	p, ok := e.hear(now, src, &env.Header)
	if !ok {
		return
	}
	switch env.Kind {
	case wire.KindSession:
		e.stats.SessionsRecv++
		e.onSession(now, p, &env.Session, env.View)
	case wire.KindData:
		e.onData(now, p, &env.Data, env.View)
		e.ackEarly(now, p.id)
	case wire.KindBatch:
		for i := range env.Batch {
			e.onData(now, p, &env.Batch[i], env.View)
		}
		e.ackEarly(now, p.id)
	case wire.KindNack:
		e.onNack(now, p, &env.Nack)
	case wire.KindRepair:
		e.onRepair(now, p, &env.Repair)
	default:
		e.stats.Unhandled++
	}
}

// Tick advances time: it fires due SRM timers, sends the session message
// when due and declares silent peers lost.
func (e *Engine) Tick(now time.Time) {
	e.lastNow = now
	e.fireTimers(now)
	if e.stabilityDue && !now.Before(e.stabilityNext()) {
		e.updateStability(now)
	}
	e.countSenders(now)
	e.refreshOwn()
	e.checkLagging(now)
	switch {
	case !now.Before(e.nextSession):
		e.packData() // the session message announces what was queued before it
		e.sendSession(now)
		e.nextSession = now.Add(e.jitter(e.opt.Heartbeat))
		e.probeAt, e.probeAfter = time.Time{}, e.probeDelay()
	case !e.probeAt.IsZero() && !now.Before(e.probeAt):
		e.packData()
		e.sendSession(now)
		e.probeAt = time.Time{}
		e.stats.TailProbes++
	}
	e.expirePeers(now)
}

// probe schedules a session message shortly after data went out, unless
// more data follows first: it announces this node's last message, so that
// a receiver that lost it finds the gap within a few one-way delays rather
// than at the next heartbeat (a node that sends one message and then waits
// for an answer, as the lock and the elections do, would otherwise stall
// the group for a heartbeat at every loss). Under steady traffic the later
// data reveal a gap and the probe never fires. It runs with every batch
// sent, so the delay is the one probeDelay worked out at the last
// heartbeat.
func (e *Engine) probe() {
	if len(e.peers) == 0 && e.strangers.len() == 0 {
		return // nobody to tell
	}
	e.probeAt = e.lastNow.Add(e.probeAfter)
}

// probeDelay is two of the largest one-way delays to the peers (at least
// MinDelay each), at most half a heartbeat: long enough for the data to
// arrive first.
func (e *Engine) probeDelay() time.Duration {
	d := e.opt.MinDelay
	for id := range e.peers {
		d = max(d, e.delay(id))
	}
	return min(2*d, e.opt.Heartbeat/2)
}

// Paused tells the engine that this node could not observe the network for
// d just now: its loop was blocked (a send waiting for buffer space, a
// stop signal, the scheduler). Silence during d says nothing about the
// peers, so their suspect clocks are moved on by d: a node must not declare
// others lost for its own stall.
func (e *Engine) Paused(now time.Time, d time.Duration) {
	for _, p := range e.peers {
		if t := p.lastHeard.Add(d); t.Before(now) {
			p.lastHeard = t
		} else {
			p.lastHeard = now
		}
	}
	// The same for strangers, which keeps their list in order.
	for s := e.strangers.head; s != nil; s = s.next {
		if t := s.lastHeard.Add(d); t.Before(now) {
			s.lastHeard = t
		} else {
			s.lastHeard = now
		}
	}
}

// Stretch makes this node wait k+1 suspect timeouts of silence before it
// loses a peer: a node that finds itself starved (its own loop late, again
// and again) suspects less readily, in proportion to how starved it is,
// since the silence it sees may be its own lateness (local health,
// docs/design.md). 0 is the suspect timeout itself.
func (e *Engine) Stretch(k int) { e.stretch = max(k, 0) }

// lossTimeout is the silence after which a peer is lost: the suspect
// timeout, stretched.
func (e *Engine) lossTimeout() time.Duration {
	return e.opt.SuspectTimeout * time.Duration(1+e.stretch)
}

// NextDeadline is when Tick must next be called.
func (e *Engine) NextDeadline() time.Time {
	d := e.nextSession
	if !e.probeAt.IsZero() && e.probeAt.Before(d) {
		d = e.probeAt
	}
	if t := e.timers.next(); !t.IsZero() && t.Before(d) {
		d = t
	}
	if t := e.stabilityNext(); e.stabilityDue && t.Before(d) {
		d = t
	}
	for _, p := range e.peers {
		if t := p.lastHeard.Add(e.lossTimeout()); t.Before(d) {
			d = t
		}
	}
	if s := e.strangers.head; s != nil {
		if t := s.lastHeard.Add(e.opt.SuspectTimeout); t.Before(d) {
			d = t
		}
	}
	return d
}

// Ready is what an Engine produced since the last call to Ready: the
// envelopes to multicast (NACKs, repairs, session messages, and the data
// packed so far, in order), what happened, and the messages delivered, in
// delivery order. It stays valid until the next call into the Engine.
type Ready struct {
	Envelopes  []wire.Envelope
	Events     []Event
	Deliveries []Delivery
}

// Ready returns what the engine produced since the last call (see Ready).
// Data multicast since the last Pack is not in it yet.
func (e *Engine) Ready() Ready {
	e.ready.Envelopes, e.out = e.out, e.ready.Envelopes[:0]
	e.ready.Events, e.events = e.events, e.ready.Events[:0]
	e.ready.Deliveries, e.deliveries = e.deliveries, e.ready.Deliveries[:0]
	return e.ready
}

// Pack packs the data multicast since the last Pack into as few datagrams
// as fit, after the NACKs and repairs already queued: the next Ready
// hands them out. Call it once per turn of the node's loop, so that the
// messages of a turn share datagrams (batching without added delay).
func (e *Engine) Pack() { e.packData() }

// Options returns the engine's options, defaults filled in.
func (e *Engine) Options() Options { return e.opt }

// Peers returns the IDs of the live peers, members or not, in increasing
// order.
func (e *Engine) Peers() []uint64 {
	ids := e.peerIDs()
	for s := e.strangers.head; s != nil; s = s.next {
		ids = append(ids, s.id)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// RTT returns the smoothed round-trip time to a peer, and false while it is
// not known yet.
func (e *Engine) RTT(id uint64) (time.Duration, bool) {
	p, ok := e.peers[id]
	if !ok || p.rtt == 0 {
		return 0, false
	}
	return p.rtt, true
}

// header returns a header for an envelope from this node.
func (e *Engine) header(k wire.Kind) wire.Header {
	return wire.Header{Group: e.opt.Group, From: e.opt.Self, Inc: e.opt.Inc, Kind: k, View: e.view}
}

// conflict reports a datagram that carries this node's ID from another
// incarnation: another live node uses the same ID. Membership refuses the
// later one; this layer can only say so.
func (e *Engine) conflict(src netip.AddrPort, inc uint64) {
	e.events = append(e.events, Event{Kind: PeerConflict, Peer: e.opt.Self, Inc: inc, Addr: src})
}

// jitter spreads d uniformly over [0.9·d, 1.1·d] so that members started
// together do not send their session messages in lock step.
func (e *Engine) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - d/10 + time.Duration(e.opt.Rand.Int64N(int64(d/5)+1))
}

// uniform returns a duration uniform in [lo, hi].
func (e *Engine) uniform(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(e.opt.Rand.Int64N(int64(hi-lo)+1))
}
