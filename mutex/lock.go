package mutex

import (
	"fmt"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/idset"
	"github.com/huddle-lan/huddle/internal/wire"
)

// Algorithm names a lock algorithm, spelled as config's mutex.algorithm.
type Algorithm string

// The algorithms. Every member of a group must use the same one.
const (
	// RicartAgrawala (Ricart and Agrawala 1981): a request to every other
	// member, a reply from each; 2(n−1) messages per entry. The default.
	RicartAgrawala Algorithm = "ra"
	// Central is the central server: the view's coordinator grants the
	// lock in the order of the requests; REQUEST, GRANT and RELEASE, 3
	// messages per entry.
	Central Algorithm = "central"
	// TokenRing is the token ring: one token goes round the view's
	// members, and whoever holds it may enter; 0 to n−1 passes per entry.
	TokenRing Algorithm = "token"
)

// DefaultAlgorithm is the algorithm of an empty Options.Algorithm.
const DefaultAlgorithm = RicartAgrawala

// Lock is what a node's Core needs of a lock machine, whichever the
// algorithm: Ricart–Agrawala's (RA), the central server, the token
// ring. Each is a deterministic state machine fed the same inputs.
type Lock interface {
	// SetView tells the machine the view installed now: its ID and its
	// members in the view's order (the coordinator first), and in quorum
	// mode when each was last heard.
	SetView(now time.Time, view string, members []uint64, heard []time.Time)
	// SetPrimary tells the machine whether the view about to be set (or
	// the one set) is the primary component. Outside it the lock is never
	// granted, and a holder loses it (an Exited event with Lost set). A
	// machine starts in the primary component (no quorum policy).
	SetPrimary(now time.Time, primary bool)
	// Receive handles one lock message member from sent.
	Receive(now time.Time, from uint64, payload []byte)
	// Heard tells the machine, in quorum mode, when member id was last heard.
	Heard(id uint64, at time.Time)
	// Request asks for the lock; false when wanted or held already.
	Request(now time.Time) bool
	// Release releases the lock or withdraws the request; false when
	// neither held nor wanted.
	Release(now time.Time) bool
	// Tick lets time pass; NextDeadline says when it is next needed.
	Tick(now time.Time)
	NextDeadline() time.Time
	// Ready hands over what the machine produced: messages and events.
	Ready() Ready
	// State, HeldView and Stats report on the machine.
	State() State
	HeldView() string
	Stats() Stats
	// OwnMessages reports whether the machine takes its own messages
	// back: the central server and the token ring multicast theirs in
	// total order to every member, the sender included, and every member
	// applies them in that order.
	OwnMessages() bool
}

var _ Lock = (*RA)(nil)

// NewLock returns the lock machine of o.Algorithm. It panics if o does
// not Validate.
func NewLock(o Options) Lock {
	if err := o.Validate(); err != nil {
		panic(err)
	}
	switch o.Algorithm {
	case Central:
		return newCentral(o.Self)
	case TokenRing:
		return newTokenRing(o.Self)
	}
	return NewRA(o)
}

// OwnMessages implements Lock: Ricart–Agrawala's messages go to the
// others only.
func (m *RA) OwnMessages() bool { return false }

// replicated is what the central server and the token ring share: a
// state every member rebuilds alike from the messages delivered in total
// order since the view was installed, starting with one STATE message of
// each member (its part in the lock when the view came), and this node's
// own part.
type replicated struct {
	self    uint64
	hasView bool
	view    string
	members []uint64 // the view's order: the coordinator first
	known   []uint64 // members whose STATE was delivered in this view, ascending

	state    State
	req      uint64    // this node's request count: its latest request
	reqAt    time.Time // when it was made
	heldAt   time.Time
	heldView string
	msgs     int // lock messages of the current request's entry so far (the group's)

	notPrimary bool // the view is not the primary component: nothing is granted

	out    []Message
	events []Event
	codec  codec
	stats  Stats
}

// ready reports whether every member's STATE has arrived: until then the
// rebuilt state is partial, and nothing is granted or passed on.
func (r *replicated) ready() bool { return r.hasView && len(r.known) == len(r.members) }

// isMember reports whether id is a member of the view.
func (r *replicated) isMember(id uint64) bool { return slices.Contains(r.members, id) }

// know records that member id's STATE arrived; false if it had already.
func (r *replicated) know(id uint64) bool {
	i, found := slices.BinarySearch(r.known, id)
	if found {
		return false
	}
	r.known = slices.Insert(r.known, i, id)
	return true
}

// emit queues an event of the view.
func (r *replicated) emit(e Event) {
	e.View = r.view
	r.events = append(r.events, e)
}

// send queues the message [k, a, b] to every member, in total order.
func (r *replicated) send(k kind, a, b uint64) {
	r.out = append(r.out, Message{Payload: r.codec.append3(nil, k, a, b), Total: true})
	r.stats.Sent.add(k)
}

// Ready implements Lock.
func (r *replicated) Ready() Ready {
	rd := Ready{Messages: r.out, Events: r.events}
	r.out, r.events = nil, nil
	return rd
}

// State implements Lock.
func (r *replicated) State() State { return r.state }

// HeldView implements Lock.
func (r *replicated) HeldView() string {
	if r.state != Held {
		return ""
	}
	return r.heldView
}

// Stats implements Lock.
func (r *replicated) Stats() Stats { return r.stats }

// SetPrimary implements Lock: a holder outside the primary component
// loses the lock; its STATE in the view says released.
func (r *replicated) SetPrimary(now time.Time, primary bool) {
	r.notPrimary = !primary
	if !primary && r.state == Held {
		r.leave(now, true)
	}
}

// Heard implements Lock: no quorum mode here.
func (r *replicated) Heard(uint64, time.Time) {}

// Tick implements Lock: no timers.
func (r *replicated) Tick(time.Time) {}

// NextDeadline implements Lock: no timers.
func (r *replicated) NextDeadline() time.Time { return time.Time{} }

// OwnMessages implements Lock.
func (r *replicated) OwnMessages() bool { return true }

// beginRequest makes a request: false when one is out or held already.
func (r *replicated) beginRequest(now time.Time) bool {
	if r.state != Released || r.req >= MaxClock-1 {
		return false
	}
	r.req++
	r.state, r.reqAt, r.msgs = Wanted, now, 0
	r.stats.Requests++
	r.emit(Event{Kind: Requested, Clock: r.req})
	return true
}

// enter grants this node's request.
func (r *replicated) enter(now time.Time) {
	r.state, r.heldAt, r.heldView = Held, now, r.view
	r.stats.Acquired++
	r.emit(Event{Kind: Acquired, Clock: r.req, Wait: now.Sub(r.reqAt), Messages: r.msgs, Datagrams: r.msgs})
}

// leave ends this node's part: a release, a withdrawal, or (lost) a view
// without this node.
func (r *replicated) leave(now time.Time, lost bool) {
	switch r.state {
	case Held:
		if lost {
			r.stats.Lost++
		} else {
			r.stats.Released++
		}
		r.emit(Event{Kind: Exited, Clock: r.req, Held: now.Sub(r.heldAt), Lost: lost, Messages: r.msgs, Datagrams: r.msgs})
	case Wanted:
		r.stats.Withdrawn++
		r.emit(Event{Kind: Withdrawn, Clock: r.req, Wait: now.Sub(r.reqAt)})
	}
	r.state = Released
}

// input decodes a message of kinds lo to hi, [kind, a, b], from member
// from; false (counted) when it is malformed or from outside the view.
func (r *replicated) input(from uint64, payload []byte, lo, hi kind) (kind, uint64, uint64, bool) {
	k, a, b, err := r.codec.decode3(payload, lo, hi)
	switch {
	case err != nil:
		r.stats.Malformed++
		return 0, 0, 0, false
	case !r.hasView || !r.isMember(from):
		r.stats.Foreign++
		return 0, 0, 0, false
	}
	r.stats.Received.add(k)
	return k, a, b, true
}

// setView installs a view: the rebuilt state starts empty. It reports
// whether this node is a member; a node outside the view loses the lock.
func (r *replicated) setView(now time.Time, view string, members []uint64) bool {
	ms := idset.InOrder(members)
	r.view, r.known = view, r.known[:0]
	if !slices.Contains(ms, r.self) {
		r.hasView, r.members = false, nil
		if r.state == Held {
			r.leave(now, true)
		}
		return false
	}
	r.hasView, r.members = true, ms
	return true
}

// appendUints3 and decodeUints3 are the codec of the central server's
// and the token ring's messages: the msgpack array [kind, a, b].
func (c *codec) append3(dst []byte, k kind, a, b uint64) []byte {
	if c.enc == nil {
		c.enc = wire.NewEncoder()
	}
	return c.enc.AppendUints(dst, uint64(k), a, b)
}

func (c *codec) decode3(p []byte, lo, hi kind) (kind, uint64, uint64, error) {
	if c.dec == nil {
		c.dec = wire.NewDecoder()
	}
	var v [3]uint64
	if err := c.dec.DecodeUints(p, v[:]); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if v[0] < uint64(lo) || v[0] > uint64(hi) {
		return 0, 0, 0, fmt.Errorf("%w: unknown kind %d", errMalformed, v[0])
	}
	if v[1] >= MaxClock || v[2] >= MaxClock {
		return 0, 0, 0, fmt.Errorf("%w: a number at or above 2^62", errMalformed)
	}
	return kind(v[0]), v[1], v[2], nil
}
