package multicast

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Options configures an Engine.
type Options struct {
	Self           uint64        // this node's ID
	Inc            uint64        // this node's incarnation
	Group          uint32        // wire.GroupHash of the group name
	Heartbeat      time.Duration // session message interval
	SuspectTimeout time.Duration // silence after which a peer is lost
	Rand           *rand.Rand    // jitter source; seeded by the caller
}

// Engine is the multicast layer's protocol core: a deterministic state
// machine with no goroutines, sockets or clock of its own. The node loop (or
// the simulator) feeds it with Step and Tick and takes what it produced with
// TakeOutput and TakeEvents.
//
// At this stage it runs the session protocol: periodic session messages that
// are heartbeats, carry receive state, and measure round-trip times; the
// peers it hears; and the peers that fall silent.
type Engine struct {
	opt         Options
	peers       map[uint64]*peer
	nextSession time.Time
	out         []wire.Envelope
	events      []Event
	stats       Stats
}

// EventKind says what happened.
type EventKind uint8

// Event kinds.
const (
	PeerSeen     EventKind = iota + 1 // first datagram from a peer (or from its new incarnation)
	PeerLost                          // a peer stayed silent for the suspect timeout
	PeerConflict                      // another live node uses this node's ID
)

// Event is something the node should know about (and log).
type Event struct {
	Kind      EventKind
	Peer      uint64
	Inc       uint64
	Addr      netip.AddrPort
	Restarted bool          // PeerSeen: it replaces an older incarnation
	Silent    time.Duration // PeerLost: how long it was silent
}

// Stats are the engine's counters.
type Stats struct {
	SessionsSent uint64
	SessionsRecv uint64
	StaleInc     uint64 // datagrams from an older incarnation of a peer, ignored
	Unhandled    uint64 // datagrams of kinds this layer does not handle yet
	Peers        int    // peers currently live
}

// New returns an Engine that sends its first session message at now.
func New(opt Options, now time.Time) *Engine {
	return &Engine{opt: opt, peers: make(map[uint64]*peer), nextSession: now}
}

// Step processes one decoded datagram that arrived at now from src. The
// datagram's group and sender have been checked by the caller: it is for this
// group and not this node's own echo. env must not be kept after Step returns.
func (e *Engine) Step(now time.Time, src netip.AddrPort, env *wire.Envelope) {
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
		e.onSession(now, p, &env.Session)
	default:
		e.stats.Unhandled++
	}
}

// Tick advances time: it sends the session message when due and declares
// silent peers lost.
func (e *Engine) Tick(now time.Time) {
	if !now.Before(e.nextSession) {
		e.sendSession(now)
		e.nextSession = now.Add(e.jitter(e.opt.Heartbeat))
	}
	e.expirePeers(now)
}

// NextDeadline is when Tick must next be called.
func (e *Engine) NextDeadline() time.Time {
	d := e.nextSession
	for _, p := range e.peers {
		if t := p.lastHeard.Add(e.opt.SuspectTimeout); t.Before(d) {
			d = t
		}
	}
	return d
}

// TakeOutput returns the envelopes to multicast, in order. They stay valid
// until the next call into the Engine.
func (e *Engine) TakeOutput() []wire.Envelope {
	out := e.out
	e.out = e.out[:0]
	return out
}

// TakeEvents returns what happened since the last call.
func (e *Engine) TakeEvents() []Event {
	ev := e.events
	e.events = nil
	return ev
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	s := e.stats
	s.Peers = len(e.peers)
	return s
}

// Peers returns the IDs of the live peers, in increasing order.
func (e *Engine) Peers() []uint64 { return e.peerIDs() }

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
	return wire.Header{Group: e.opt.Group, From: e.opt.Self, Inc: e.opt.Inc, Kind: k}
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
	if e.opt.Rand == nil || d <= 0 {
		return d
	}
	return d - d/10 + time.Duration(e.opt.Rand.Int64N(int64(d/5)+1))
}
