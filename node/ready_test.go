package node

import (
	"runtime"
	"sync"
	"weak"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/mutex"
)

// heldEvents is what Ready handed out that a test has not looked at yet,
// per Core: the tests take deliveries, views and the protocols' events
// apart. An entry goes when its Core is collected: a soak makes
// thousands.
var heldEvents sync.Map // weak.Pointer[Core] → *held

type held struct {
	membership []membership.Event // deliveries and events, in order
	election   []election.Event
	lock       []mutex.Event
}

func (c *Core) collect() *held {
	k := weak.Make(c)
	v, ok := heldEvents.Load(k)
	if !ok {
		v = &held{}
		heldEvents.Store(k, v)
		runtime.AddCleanup(c, func(k weak.Pointer[Core]) { heldEvents.Delete(k) }, k)
	}
	h := v.(*held)
	for _, ev := range c.Ready() {
		switch ev.Kind {
		case MembershipEvent:
			m := ev.Membership
			m.Delivery.Payload = append([]byte(nil), m.Delivery.Payload...)
			h.membership = append(h.membership, m)
		case ElectionEvent:
			h.election = append(h.election, ev.Election)
		case LockEvent:
			h.lock = append(h.lock, ev.Lock)
		}
	}
	return h
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

// TakeMutexEvents returns the lock's events not taken yet.
func (c *Core) TakeMutexEvents() []mutex.Event {
	h := c.collect()
	out := h.lock
	h.lock = nil
	return out
}
