package node

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
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
	MaxMessage     int
	C1, C2, D1, D2 float64
	MinDelay       time.Duration
	JoinTimeout    time.Duration
	Settings       []membership.Setting // protocol settings every member must share
	Seed           uint64               // seeds the protocol's randomness (timer jitter)
	Election       ElectionOptions
	// Quorum is the lock's expected cluster size N (mutex.quorum); 0 = off.
	// With it, the lock is granted and kept only while the view has more
	// than N/2 members and this node heard, within the suspect timeout,
	// from a majority of N of them, itself included (the lease); a node
	// whose view lost a member, or that had no view, neither replies nor
	// enters for 1.5 suspect timeouts (the quarantine). See mutex.Options.
	Quorum int
	Drop   Drop // built-in fault injection; Drop.Seed 0 derives the drop's seed from Seed
}

// CoreOptionsFrom takes a Core's options from a node's configuration.
func CoreOptionsFrom(c config.Config, inc, seed uint64) CoreOptions {
	return CoreOptions{
		ID: c.ID, Inc: inc, Group: c.Group, DatagramSize: c.DatagramSize,
		Heartbeat: c.Heartbeat.D(), SuspectTimeout: c.SuspectTimeout.D(),
		Window: c.SendWindow, MaxMessage: c.MaxMessageSize,
		C1: c.SRM.C1, C2: c.SRM.C2, D1: c.SRM.D1, D2: c.SRM.D2, MinDelay: c.SRM.MinDelay.D(),
		JoinTimeout: c.JoinTimeout.D(), Settings: Settings(c), Seed: seed,
		Election: ElectionOptions{Algorithm: election.Algorithm(c.Election.Algorithm), Every: c.Election.Every.D(), Count: c.Election.Count},
		Quorum:   c.Mutex.Quorum,
		Drop:     Drop{Rate: c.Drop.Rate, From: c.Drop.From, Seed: c.Drop.Seed},
	}
}

// Settings lists the settings every member of a group must share, by
// their configuration keys: a joiner that differs is refused, naming the
// first that does. Datagram size and the largest message decide what a
// member can receive; the heartbeat and the suspect timeout decide
// whether members suspect each other falsely.
func Settings(c config.Config) []membership.Setting {
	return []membership.Setting{
		{Name: "datagram_size", Value: strconv.Itoa(c.DatagramSize)},
		{Name: "max_message_size", Value: strconv.Itoa(c.MaxMessageSize)},
		{Name: "heartbeat", Value: c.Heartbeat.D().String()},
		{Name: "suspect_timeout", Value: c.SuspectTimeout.D().String()},
		{Name: "election.algorithm", Value: c.Election.Algorithm},
		{Name: "mutex.quorum", Value: strconv.Itoa(c.Mutex.Quorum)},
	}
}

// Core is one node's protocol stack as a deterministic state machine over
// datagrams: it decodes what arrives, filters what is not for it, steps the
// protocol engines, and encodes what they want sent. The runtime loop (Run)
// drives it with a socket and the wall clock; the simulator drives the very
// same Core with a virtual network and clock.
type Core struct {
	opt     CoreOptions
	group   uint32
	dec     *wire.Decoder
	enc     *wire.Encoder
	env     *wire.Envelope
	m       *membership.Machine
	mc      *multicast.Engine // m's
	el      elect             // the leader election, on the election service
	mu      lockPart          // the Ricart–Agrawala lock, on the mutex service
	drop    *dropper          // built-in fault injection
	now     time.Time         // of the current step
	leaving bool              // Leave was called
	ctlOut  [][]byte          // NACKs and repairs of this turn
	outbox  [][]byte          // everything else
	all     [][]byte          // both, for TakeOutbox
	bufs    [][]byte          // datagram buffers, reused from turn to turn
	used    int               // of bufs, since the last TakeOutbox
	stats   CoreStats
}

var _ sim.Machine = (*Core)(nil)

// CoreStats counts datagrams at the node's edge.
type CoreStats struct {
	DatagramsIn   uint64
	DatagramsOut  uint64
	BytesIn       uint64
	BytesOut      uint64
	Malformed     uint64 // undecodable datagrams
	NotHuddle     uint64 // wrong magic or wire version
	UnknownKind   uint64 // a kind this version does not know
	ForeignGroup  uint64 // another group sharing the address
	OwnEcho       uint64 // our own datagrams looped back
	EncodeErrors  uint64
	OversizedSent uint64 // datagrams over DatagramSize: none should be (every kind is sized to fit); counted, still sent
	InjectedDrops uint64 // datagrams the built-in fault injection dropped (Drop)
	ProtocolMsgs  uint64 // deliveries taken by the node's own protocols (election, lock), of the engine's
}

// NewCore returns a Core whose first timer is due at now.
func NewCore(o CoreOptions, now time.Time) *Core {
	c := &Core{
		opt:   o,
		group: wire.GroupHash(o.Group),
		dec:   wire.NewDecoder(),
		enc:   wire.NewEncoder(),
		env:   wire.NewEnvelope(o.DatagramSize),
	}
	c.dec.Filter(c.group, o.ID, o.Inc)
	c.drop = newDropper(o.Drop, o.Seed)
	c.m = membership.New(membership.Options{
		Engine: multicast.Options{
			Self: o.ID, Inc: o.Inc, Group: c.group,
			Heartbeat: o.Heartbeat, SuspectTimeout: o.SuspectTimeout,
			DatagramSize: o.DatagramSize, Window: o.Window, MaxMessage: o.MaxMessage,
			C1: o.C1, C2: o.C2, D1: o.D1, D2: o.D2, MinDelay: o.MinDelay,
			Rand: rand.New(rand.NewPCG(o.Seed, o.ID)),
		},
		JoinTimeout: o.JoinTimeout, Settings: o.Settings, Claim: c.claim,
	}, now)
	c.el = newElect(o.ID, o.Election, o.Heartbeat, o.SuspectTimeout, now)
	c.newLockPart(o.Quorum, o.SuspectTimeout)
	c.mc = c.m.Engine()
	return c
}

// Receive implements sim.Machine: one datagram arrived at now from src.
func (c *Core) Receive(now time.Time, src netip.AddrPort, data []byte) {
	c.stats.DatagramsIn++
	c.stats.BytesIn += uint64(len(data))
	if err := c.dec.Decode(data, c.env); err != nil {
		c.countDecodeError(err)
		return
	}
	if c.drop.hit(c.env.From) {
		c.stats.InjectedDrops++
		return
	}
	c.now = now
	c.m.Step(now, src, c.env)
	c.electionStep(now)
	c.lockStep()
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

// Tick implements sim.Machine.
func (c *Core) Tick(now time.Time) {
	c.now = now
	c.m.Tick(now)
	c.el.m.Tick(now)
	c.syncView(now)
	c.mu.m.Tick(now)
	c.electionStep(now)
	c.lockStep()
}

// NextDeadline implements sim.Machine.
func (c *Core) NextDeadline() time.Time {
	d := c.m.NextDeadline()
	for _, e := range [...]time.Time{c.electionDeadline(), c.mu.m.NextDeadline()} {
		if !e.IsZero() && !d.IsZero() && e.Before(d) {
			d = e
		}
	}
	return d
}

// TakeOutbox implements sim.Machine: the datagrams to multicast, in order.
// Everything queued since the last call is packed now, so messages sent in
// one turn of the loop share datagrams (batching without added delay). The
// datagrams stay valid until the next call into the Core: their buffers
// are reused.
func (c *Core) TakeOutbox() [][]byte {
	ctl, data := c.TakeOutboxes()
	c.all = append(append(c.all[:0], ctl...), data...)
	return c.all
}

// TakeOutboxes is TakeOutbox split in two: the repair traffic (NACKs and
// repairs), which the node may send on a socket of its own, and the rest
// (data and session messages, which must stay in order with each other:
// a session message announces the data sent before it).
func (c *Core) TakeOutboxes() (ctl, data [][]byte) {
	c.ctlOut, c.outbox, c.used = c.ctlOut[:0], c.outbox[:0], 0
	c.flush()
	return c.ctlOut, c.outbox
}

// Multicast sends a message to the view (see membership.Machine.Multicast):
// it fails with multicast.ErrWindowFull while the send window is full, and
// with membership.ErrBlocked or ErrNotInView while there is no view to send in.
func (c *Core) Multicast(service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	return c.m.Multicast(service, payload, order, dest)
}

// Paused tells the core that the node could not observe the network for d
// (see multicast.Engine.Paused).
func (c *Core) Paused(now time.Time, d time.Duration) { c.m.Paused(now, d) }

// Fits reports whether a message of these sizes can be sent now.
func (c *Core) Fits(serviceLen, payloadLen int) bool { return c.m.Fits(serviceLen, payloadLen) }

// Sending reports whether the node is in a view that takes messages now.
func (c *Core) Sending() bool { return c.m.Sending() }

// Leave starts a graceful leave (see membership.Machine.Leave).
//
// The lock goes first: a holder releases it and a waiter withdraws (both
// logged), and their deferred replies go out before the leave, so that
// the lock is free before the group lets this node go; it takes no new
// request after.
func (c *Core) Leave(now time.Time) {
	c.now, c.leaving = now, true
	c.syncView(now)
	c.mu.m.Release(now)
	c.lockStep()
	c.m.Leave(now)
}

// Left reports whether the node left the group (or was refused).
func (c *Core) Left() bool { return c.m.Left() }

// View returns the installed view.
func (c *Core) View() membership.View { return c.m.View() }

// TakeDeliveries returns the messages delivered since the last call; their
// bytes stay valid until the next call into the Core.
func (c *Core) TakeDeliveries() []membership.Delivery { return c.m.TakeDeliveries() }

// TakeEvents returns what the protocol layers reported since the last call.
func (c *Core) TakeEvents() []membership.Event { return c.m.TakeEvents() }

// MembershipStats returns the membership layer's counters.
func (c *Core) MembershipStats() membership.Stats { return c.m.Stats() }

// Peers returns the IDs of the peers this node hears, in increasing order.
func (c *Core) Peers() []uint64 { return c.mc.Peers() }

// Stats returns the node-edge counters and the multicast engine's.
func (c *Core) Stats() (CoreStats, multicast.Stats) { return c.stats, c.mc.Stats() }

// flush encodes what the engines produced into datagrams.
func (c *Core) flush() {
	for _, env := range c.m.TakeOutput() {
		b, err := c.enc.Append(c.buffer(), &env)
		if err != nil {
			c.stats.EncodeErrors++
			continue
		}
		if len(b) > c.opt.DatagramSize {
			c.stats.OversizedSent++
		}
		c.stats.DatagramsOut++
		c.stats.BytesOut += uint64(len(b))
		if env.Kind == wire.KindNack || env.Kind == wire.KindRepair {
			c.ctlOut = append(c.ctlOut, b)
		} else {
			c.outbox = append(c.outbox, b)
		}
		c.bufs[c.used-1] = b // keep it if encoding grew it
	}
}

// buffer returns an empty datagram buffer, reusing those of earlier turns.
func (c *Core) buffer() []byte {
	if c.used == len(c.bufs) {
		c.bufs = append(c.bufs, make([]byte, 0, c.opt.DatagramSize))
	}
	c.used++
	return c.bufs[c.used-1][:0]
}
