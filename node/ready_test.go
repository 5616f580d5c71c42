package node

import (
	"net/netip"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/huddle-lan/huddle/internal/sim"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/mutex"
)

// simCore is a Core as the simulator drives it (sim.Machine): after every
// step the world takes its output, and TakeOutbox takes the Core's Ready,
// keeps the events for the test (held), and hands the world the
// datagrams, the repair traffic first. As the node's loop does
// (Node.checkPause), it tells the Core of a pause when it is called a
// heartbeat or more past the deadline the Core asked for: the world
// stalled it.
type simCore struct {
	*Core
	out [][]byte
	due time.Time // the deadline the Core asked for when last called
}

var _ sim.Machine = (*simCore)(nil)

func newSimCore(c *Core) sim.Machine { return &simCore{Core: c} }

// Receive implements sim.Machine.
func (s *simCore) Receive(now time.Time, src netip.AddrPort, data []byte) {
	s.checkPause(now)
	s.Core.Receive(now, src, data)
	s.due = s.Core.NextDeadline()
}

// Tick implements sim.Machine.
func (s *simCore) Tick(now time.Time) {
	s.checkPause(now)
	s.Core.Tick(now)
	s.due = s.Core.NextDeadline()
}

func (s *simCore) checkPause(now time.Time) {
	if !s.due.IsZero() && now.Sub(s.due) >= s.Core.membership.Engine().Options().Heartbeat {
		s.Core.Paused(now, now.Sub(s.due))
	}
	s.due = time.Time{}
}

// TakeOutbox implements sim.Machine.
func (s *simCore) TakeOutbox() [][]byte {
	rd := s.Core.Ready()
	s.keep(rd.Events)
	s.out = append(append(s.out[:0], rd.Repair...), rd.Data...)
	return s.out
}

// coreOf returns the Core of a simulated node.
func coreOf(m sim.Machine) *Core {
	if u, ok := m.(*simUnicast); ok {
		return u.Core
	}
	return m.(*simCore).Core
}

// drain takes a Core's Ready outside the simulator, as the node's loop
// does, keeping its events for the test and dropping its datagrams.
func (c *Core) drain() { c.keep(c.Ready().Events) }

// heldEvents is what Ready handed out that a test has not looked at yet,
// per Core: the tests take deliveries, views and the protocols' events
// apart. An entry goes when its Core is collected: a soak makes
// thousands.
var heldEvents sync.Map // weak.Pointer[Core] → *held

type held struct {
	membership []membership.Event // deliveries and events, in order
	election   []election.Event
	lock       []mutex.Event
	probes     []uint64 // probes finished (ProbeDoneEvent)
	stream     []Event  // with replicated services: membership and state events, in order
}

// collect returns the events held for c.
func (c *Core) collect() *held {
	k := weak.Make(c)
	v, ok := heldEvents.Load(k)
	if !ok {
		v = &held{}
		heldEvents.Store(k, v)
		runtime.AddCleanup(c, func(k weak.Pointer[Core]) { heldEvents.Delete(k) }, k)
	}
	return v.(*held)
}

// keep holds events of c's Ready for the test.
func (c *Core) keep(evs []Event) {
	h := c.collect()
	for _, ev := range evs {
		if len(c.opt.State.Services) > 0 && (ev.Kind == MembershipEvent || ev.Kind == StateTransferEvent) {
			ev.Membership.Delivery.Payload = append([]byte(nil), ev.Membership.Delivery.Payload...)
			ev.State.Data = append([]byte(nil), ev.State.Data...)
			h.stream = append(h.stream, ev)
			continue
		}
		switch ev.Kind {
		case MembershipEvent:
			m := ev.Membership
			m.Delivery.Payload = append([]byte(nil), m.Delivery.Payload...)
			h.membership = append(h.membership, m)
		case ElectionEvent:
			h.election = append(h.election, ev.Election)
		case LockEvent:
			h.lock = append(h.lock, ev.Lock)
		case ProbeDoneEvent:
			h.probes = append(h.probes, ev.ProbeID)
		}
	}
}

// takeMembership returns the deliveries and membership events not taken
// yet, in the order they happened.
func (c *Core) takeMembership() []membership.Event {
	h := c.collect()
	out := h.membership
	h.membership = nil
	return out
}

// TakeDeliveries returns the application's messages not taken yet.
func (c *Core) TakeDeliveries() []membership.Delivery {
	h := c.collect()
	var out []membership.Delivery
	rest := h.membership[:0]
	for _, ev := range h.membership {
		if ev.Kind == membership.Delivered {
			out = append(out, ev.Delivery)
		} else {
			rest = append(rest, ev)
		}
	}
	h.membership = rest
	return out
}

// TakeEvents returns the membership events (deliveries aside) not taken yet.
func (c *Core) TakeEvents() []membership.Event {
	h := c.collect()
	var out []membership.Event
	rest := h.membership[:0]
	for _, ev := range h.membership {
		if ev.Kind != membership.Delivered {
			out = append(out, ev)
		} else {
			rest = append(rest, ev)
		}
	}
	h.membership = rest
	return out
}

// TakeElectionEvents returns the election's events not taken yet.
func (c *Core) TakeElectionEvents() []election.Event {
	h := c.collect()
	out := h.election
	h.election = nil
	return out
}

// takeProbesDone returns the probes reported finished, not taken yet.
func (c *Core) takeProbesDone() []uint64 {
	h := c.collect()
	out := h.probes
	h.probes = nil
	return out
}

// TakeMutexEvents returns the lock's events not taken yet.
func (c *Core) TakeMutexEvents() []mutex.Event {
	h := c.collect()
	out := h.lock
	h.lock = nil
	return out
}
