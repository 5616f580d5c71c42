// Package netmodel is the fault model of huddle's in-memory networks: the
// simulator's World (internal/sim) and the real-time network of the node
// runtime (multicast/memnet). Both carry each copy of a datagram through
// the same Model, so that both misbehave the same way: delay and jitter,
// loss per receiver (independent, or in bursts: Gilbert) and at the
// sender, duplication, reordering, partitions and per-link loss. Each counts what happened to the copies
// in the same Stats, and names its hosts by the same addresses (Addr).
//
// A Model holds no random source of its own: the caller passes one to each
// draw, so that the simulator can share one seeded source among the
// network and its machines and replay a run from its seed.
package netmodel

import (
	"math/rand/v2"
	"net/netip"
	"time"
)

// Options describe the simulated network. The zero value is a perfect LAN
// with DefaultDelay one-way delay. Probabilities are in [0, 1]; values
// outside are clamped in effect (≤0 never, ≥1 always).
type Options struct {
	// Seed feeds the one random source of the run (NewRand): the same Seed
	// (and the same calls) replays the same run.
	Seed int64
	// Delay is the base one-way delay of every datagram; zero means
	// DefaultDelay.
	Delay time.Duration
	// Jitter is added to Delay, uniform in [0, Jitter). Jitter alone can
	// already reorder datagrams sent close together.
	Jitter time.Duration
	// Loss drops each copy of a datagram independently per receiver, as a
	// lossy NIC or a full receive buffer would.
	Loss float64
	// Burst, when above 1, makes Loss come in bursts of that mean length
	// at each receiver: every receiver has a Gilbert chain of its own
	// (NewGilbert(Loss, Burst)), which each copy sent to it moves. 0 or 1:
	// independent losses. A Burst that BurstProblem rejects for Loss is
	// ignored (independent losses).
	Burst float64
	// SenderLoss drops a datagram for all receivers at once, as a lost
	// frame on the sender's link would. It models correlated loss, which is
	// what defeats NACK suppression in SRM.
	SenderLoss float64
	// Dup is the probability that a delivered copy arrives twice (the
	// second with its own delay).
	Dup float64
	// Reorder is the probability that a copy is held back by ReorderDelay
	// so that later datagrams overtake it.
	Reorder float64
	// ReorderDelay is the extra delay of a reordered copy; zero means
	// DefaultReorderDelay.
	ReorderDelay time.Duration
}

// Defaults for zero Options fields.
const (
	DefaultDelay        = 100 * time.Microsecond
	DefaultReorderDelay = time.Millisecond
)

// NewRand returns the random source of a run with the given seed.
func NewRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x687564646c65)) // "huddle"
}

// Port is the UDP port of every simulated host address.
const Port = 7468

// Addr returns the address of simulated host id: 10.a.b.c:Port from the
// low 24 bits of id, so 10.0.x.y for IDs below 65536.
func Addr(id uint64) netip.AddrPort {
	ip := netip.AddrFrom4([4]byte{10, byte(id >> 16), byte(id >> 8), byte(id)})
	return netip.AddrPortFrom(ip, Port)
}

// Cause says why a copy of a datagram was not delivered.
type Cause uint8

// Drop causes, as counted in Drops and shown in the simulator's traces.
const (
	CauseNone       Cause = iota
	CauseSenderLoss       // Options.SenderLoss: lost for every receiver
	CauseLoss             // Options.Loss: lost for one receiver
	CauseLink             // a SetLinkLoss override
	CausePartition        // sender and receiver in different partition groups
	CauseCrashed          // receiver crashed, restarted or closed before arrival
	CauseOverflow         // receiver's queue full (memnet only: World's hosts have no queue)
)

var causeNames = [...]string{"none", "sender-loss", "loss", "link", "partition", "crashed", "overflow"}

func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "unknown"
}

// Stats counts datagrams. Every copy ends up delivered, dropped or still in
// flight: Copies + Duplicated = Delivered + Dropped.Total() + in flight.
type Stats struct {
	Sent       uint64 // datagrams taken from outboxes (World) or written (memnet)
	Copies     uint64 // datagram × receiver pairs the network carried
	Delivered  uint64 // copies handed to a receiver
	Duplicated uint64 // extra copies made by Options.Dup
	Reordered  uint64 // copies held back by Options.Reorder
	Dropped    Drops
}

// Drops counts dropped copies by cause.
type Drops struct {
	SenderLoss, Loss, Link, Partition, Crashed, Overflow uint64
}

// Total is the number of dropped copies, whatever the cause.
func (d Drops) Total() uint64 {
	return d.SenderLoss + d.Loss + d.Link + d.Partition + d.Crashed + d.Overflow
}

// Add counts one copy dropped for cause c.
func (d *Drops) Add(c Cause) {
	switch c {
	case CauseSenderLoss:
		d.SenderLoss++
	case CauseLoss:
		d.Loss++
	case CauseLink:
		d.Link++
	case CausePartition:
		d.Partition++
	case CauseCrashed:
		d.Crashed++
	case CauseOverflow:
		d.Overflow++
	}
}

// link is a directed pair of hosts, the key of per-link loss overrides.
type link[K comparable] struct{ from, to K }

// Model is the fault model of one network whose hosts are keyed by K (node
// IDs in World, addresses in memnet). It is not safe for concurrent use.
type Model[K comparable] struct {
	delay, jitter, reorderDelay time.Duration
	loss, senderLoss            float64
	burst                       float64
	gilbert                     Gilbert    // of loss and burst; P and R 0 when losses are independent
	bad                         map[K]bool // receiver → its Gilbert chain is in the bad state
	dup, reorder                float64
	groups                      map[K]int // partition group; nil when healed
	links                       map[link[K]]float64
}

// NewModel returns the model of a network with o's faults, without
// partitions or per-link overrides. o.Seed is not used: the caller owns
// the random source.
func NewModel[K comparable](o Options) Model[K] {
	m := Model[K]{
		delay: o.Delay, jitter: o.Jitter, reorderDelay: o.ReorderDelay,
		loss: o.Loss, senderLoss: o.SenderLoss, dup: o.Dup, reorder: o.Reorder,
		burst: o.Burst,
	}
	m.gilbert, _ = NewGilbert(m.loss, m.burst)
	if m.delay <= 0 {
		m.delay = DefaultDelay
	}
	if m.reorderDelay <= 0 {
		m.reorderDelay = DefaultReorderDelay
	}
	return m
}

// Fate is what the network does with one copy of a datagram: drop it
// (Cause != CauseNone) or deliver Copies copies (1, or 2 when duplicated)
// after Delay[0] and Delay[1].
type Fate struct {
	Cause     Cause
	Copies    int
	Delay     [2]time.Duration
	Reordered int // how many of the copies were held back by Options.Reorder
}

// hit reports an event of probability p. It draws from r only when the
// outcome is uncertain, so that turning a fault off does not shift the
// random stream of the others more than necessary.
func hit(r *rand.Rand, p float64) bool {
	return p > 0 && (p >= 1 || r.Float64() < p)
}

// SenderLost draws whether a datagram is lost at its sender, for every
// receiver at once (Options.SenderLoss). Draw it once per datagram, before
// the receivers' Decide.
func (m *Model[K]) SenderLost(r *rand.Rand) bool { return hit(r, m.senderLoss) }

// Decide draws the fate of the copy of a datagram from one host to another.
func (m *Model[K]) Decide(r *rand.Rand, from, to K) Fate {
	if c := m.dropCause(r, from, to); c != CauseNone {
		return Fate{Cause: c}
	}
	f := Fate{Copies: 1}
	f.Delay[0] = m.latency(r, &f)
	if hit(r, m.dup) {
		f.Copies = 2
		f.Delay[1] = m.latency(r, &f)
	}
	return f
}

func (m *Model[K]) dropCause(r *rand.Rand, from, to K) Cause {
	if m.groups != nil && m.groups[from] != m.groups[to] {
		return CausePartition
	}
	// A per-link value replaces Loss on that link rather than adding to
	// it, so SetLinkLoss(a, b, 0) makes one link reliable in a lossy net.
	if p, ok := m.links[link[K]{from, to}]; ok {
		if hit(r, p) {
			return CauseLink
		}
		return CauseNone
	}
	if m.gilbert.R > 0 {
		if m.bad == nil {
			m.bad = make(map[K]bool)
		}
		bad := m.bad[to]
		lost := m.gilbert.Step(r, &bad)
		m.bad[to] = bad
		if lost {
			return CauseLoss
		}
		return CauseNone
	}
	if hit(r, m.loss) {
		return CauseLoss
	}
	return CauseNone
}

func (m *Model[K]) latency(r *rand.Rand, f *Fate) time.Duration {
	d := m.delay
	if m.jitter > 0 {
		d += time.Duration(r.Int64N(int64(m.jitter)))
	}
	if hit(r, m.reorder) {
		f.Reordered++
		d += m.reorderDelay
	}
	return d
}

// Partition splits the network: each listed key goes to group i+1, and
// unlisted keys, including hosts that appear later, share group 0. Copies
// between groups are dropped. It replaces any earlier partition.
func (m *Model[K]) Partition(groups [][]K) {
	m.groups = make(map[K]int)
	for i, g := range groups {
		for _, k := range g {
			m.groups[k] = i + 1
		}
	}
}

// SetLinkLoss sets the loss probability of the directed link from -> to,
// replacing Options.Loss there; p = 1 blocks the link.
func (m *Model[K]) SetLinkLoss(from, to K, p float64) {
	if m.links == nil {
		m.links = make(map[link[K]]float64)
	}
	m.links[link[K]{from, to}] = p
}

// SetLoss changes Options.Loss from now on, in bursts of Options.Burst.
func (m *Model[K]) SetLoss(p float64) {
	m.loss = p
	m.gilbert, _ = NewGilbert(m.loss, m.burst)
}

// SetSenderLoss changes Options.SenderLoss from now on.
func (m *Model[K]) SetSenderLoss(p float64) { m.senderLoss = p }

// Heal removes partitions and per-link overrides.
func (m *Model[K]) Heal() {
	m.groups = nil
	m.links = nil
}
