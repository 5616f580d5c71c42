package sim

import (
	"math/rand/v2"
	"time"
)

// Options describe the simulated network. The zero value is a perfect LAN
// with DefaultDelay one-way delay. Probabilities are in [0, 1]; values
// outside are clamped in effect (≤0 never, ≥1 always).
type Options struct {
	// Seed feeds the one random source of the run: the same Seed (and the
	// same calls) replays the same run.
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
	// QueueLen bounds each Net endpoint's receive queue, in datagrams, like
	// a socket receive buffer; datagrams beyond it are dropped and counted
	// as Overflow. Zero means DefaultQueueLen. World does not use it.
	QueueLen int
}

// Defaults for zero Options fields.
const (
	DefaultDelay        = 100 * time.Microsecond
	DefaultReorderDelay = time.Millisecond
	DefaultQueueLen     = 1024
)

// Cause says why a copy of a datagram was not delivered.
type Cause uint8

// Drop causes, as counted in Drops and shown in traces.
const (
	CauseNone       Cause = iota
	CauseSenderLoss       // Options.SenderLoss: lost for every receiver
	CauseLoss             // Options.Loss: lost for one receiver
	CauseLink             // a SetLinkLoss override
	CausePartition        // sender and receiver in different partition groups
	CauseCrashed          // receiver crashed, restarted or closed before arrival
	CauseOverflow         // receiver's queue full (Net only)
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
	Sent       uint64 // datagrams taken from outboxes (World) or written (Net)
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

func (d *Drops) add(c Cause) {
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

// link is a directed pair of nodes, the key of per-link loss overrides.
type link[K comparable] struct{ from, to K }

// model is the fault model shared by World (nodes keyed by ID) and Net
// (endpoints keyed by address), so that both misbehave the same way.
type model[K comparable] struct {
	delay, jitter, reorderDelay time.Duration
	loss, senderLoss            float64
	dup, reorder                float64
	groups                      map[K]int // partition group; nil when healed
	links                       map[link[K]]float64
}

func newModel[K comparable](o Options) model[K] {
	m := model[K]{
		delay: o.Delay, jitter: o.Jitter, reorderDelay: o.ReorderDelay,
		loss: o.Loss, senderLoss: o.SenderLoss, dup: o.Dup, reorder: o.Reorder,
	}
	if m.delay <= 0 {
		m.delay = DefaultDelay
	}
	if m.reorderDelay <= 0 {
		m.reorderDelay = DefaultReorderDelay
	}
	return m
}

// fate is what the network does with one copy of a datagram: drop it
// (cause != CauseNone) or deliver n copies after the given delays.
type fate struct {
	cause     Cause
	n         int
	delay     [2]time.Duration
	reordered int
}

// hit reports an event of probability p. It draws from r only when the
// outcome is uncertain, so that turning a fault off does not shift the
// random stream of the others more than necessary.
func hit(r *rand.Rand, p float64) bool {
	return p > 0 && (p >= 1 || r.Float64() < p)
}

func (m *model[K]) senderLost(r *rand.Rand) bool { return hit(r, m.senderLoss) }

// decide draws the fate of the copy of a datagram from one node to another.
func (m *model[K]) decide(r *rand.Rand, from, to K) fate {
	if c := m.dropCause(r, from, to); c != CauseNone {
		return fate{cause: c}
	}
	f := fate{n: 1}
	f.delay[0] = m.latency(r, &f)
	if hit(r, m.dup) {
		f.n = 2
		f.delay[1] = m.latency(r, &f)
	}
	return f
}

func (m *model[K]) dropCause(r *rand.Rand, from, to K) Cause {
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
	if hit(r, m.loss) {
		return CauseLoss
	}
	return CauseNone
}

func (m *model[K]) latency(r *rand.Rand, f *fate) time.Duration {
	d := m.delay
	if m.jitter > 0 {
		d += time.Duration(r.Int64N(int64(m.jitter)))
	}
	if hit(r, m.reorder) {
		f.reordered++
		d += m.reorderDelay
	}
	return d
}

// partition puts each listed key in group i+1; unlisted keys share group 0.
func (m *model[K]) partition(groups [][]K) {
	m.groups = make(map[K]int)
	for i, g := range groups {
		for _, k := range g {
			m.groups[k] = i + 1
		}
	}
}

func (m *model[K]) setLinkLoss(from, to K, p float64) {
	if m.links == nil {
		m.links = make(map[link[K]]float64)
	}
	m.links[link[K]{from, to}] = p
}

// heal removes partitions and per-link overrides.
func (m *model[K]) heal() {
	m.groups = nil
	m.links = nil
}
