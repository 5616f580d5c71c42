package mutex

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Bounds on Lamport clocks (docs/design.md, "Mutual exclusion"). Nothing
// wraps: a clock never passes MaxClock, and a message that would take it
// further, or that jumps more than ClockBound above this node's clock, is
// ignored and counted (Stats.OutOfBound).
//
// Honest clocks fit: a Lamport clock rises by one per lock event (a
// request made or a message taken), so the highest clock in a group is at
// most the number of lock events along one causal chain of the group's
// whole history, however it splits and merges. Every clock starts at 0 (a
// joiner, a restarted node) and two clocks can be as far apart as that
// number, no further. The busiest lock measured (five nodes contending
// with zero hold, docs/benchmarks.md) handles under 7 000 entries a second,
// each raising the clocks by at most 2n; at 100 000 a second, 2^48 takes
// 89 years. MaxClock leaves room for arithmetic that cannot overflow: a
// member that holds the group's key and sends bad timestamps needs 2^14
// (16 384) of them to exhaust the clocks, after which requests are
// refused (Stats.Exhausted), never granted out of order.
const (
	ClockBound = 1 << 48
	MaxClock   = 1 << 62
)

// request is a member's request: its sender and timestamp.
type request struct {
	peer uint64
	ts   uint64
}

// RA is one node's Ricart–Agrawala lock (Ricart and Agrawala 1981),
// a deterministic state machine: no goroutines, clock, sockets or
// randomness. The node's Core (in the node loop or the simulator) feeds it
// views (SetView), messages (Receive) and the application's requests
// (Request, Release), and takes what it produced (Ready). In quorum mode
// it is also told when members were heard (Heard, and SetView's heard),
// and Tick lets its lease and quarantine run out.
//
// It assumes the group service of docs/design.md: addressed messages are
// reliable and FIFO per sender, and are delivered in the view they were
// sent in or lost with a view change or a crash; a message from a member
// that left and joined again is never one it sent before it left.
type RA struct {
	self       uint64
	quorum     int  // the expected cluster size N (Options.Quorum), 0: none
	leased     bool // quorum mode: Quorum or ViewLease
	notPrimary bool // the view is not the primary component: nothing is granted
	lease      time.Duration
	heard      map[uint64]time.Time // quorum mode: when each other member was last heard in this node's view
	quiet      time.Time            // quorum mode: no reply and no entry before this
	ends       []time.Time          // leaseEnds' scratch

	hasView bool
	view    string
	members []uint64 // ascending, with self

	clock uint64 // Lamport clock
	state State

	ts       uint64    // Wanted, Held: this node's request's timestamp
	reqAt    time.Time // when Request made it
	heldAt   time.Time // Held: when it was acquired
	heldView string    // Held: the view it was acquired in
	needed   []uint64  // Wanted: members whose reply is still needed, ascending
	msgs     int       // Wanted, Held: requests sent and replies received for ts
	dgrams   int       // the same, a multicast request counted once
	deferred []request // members' requests deferred, by peer ascending

	// naiveJoin, set only by tests, leaves joiners out of a pending
	// request: the textbook algorithm over a static group, which tests
	// show unsafe under joins.
	naiveJoin bool
	// noLease, set only by tests, counts a quorum by the view alone, with
	// no lease and no quarantine: unsafe while views overlap.
	noLease bool
	// noQuiet, set only by tests, leaves the quarantine out.
	noQuiet bool
	// unbounded, set only by tests, takes any timestamp and lets the
	// clock wrap: the arithmetic before the bounds.
	unbounded bool

	out    []Message
	events []Event
	arena  []byte // payloads of out; handed over with them
	codec  codec
	stats  Stats
}

// NewRA returns an RA without a view, Released. It panics if o does not
// Validate: options come from a validated configuration.
func NewRA(o Options) *RA {
	if err := o.Validate(); err != nil {
		panic(err)
	}
	return &RA{self: o.Self, quorum: o.Quorum, leased: o.Quorum > 0 || o.ViewLease, lease: o.Lease, heard: map[uint64]time.Time{}}
}

// Request asks for the lock: Ricart–Agrawala's REQUEST, timestamped with
// the incremented Lamport clock, to every other member of the view. The
// lock is granted (an Acquired event) once each of them replied and, with
// a quorum, while the view holds a majority; alone in a view that is at
// once, without a message. Without a view the request waits for one. It
// returns false, changing nothing, if this node already wants or holds
// the lock, or if its clock is exhausted (Stats.Exhausted; see
// ClockBound).
func (m *RA) Request(now time.Time) bool {
	if m.state != Released {
		return false
	}
	if m.clock >= MaxClock-1 && !m.unbounded {
		m.stats.Exhausted++ // the request's timestamp would be MaxClock, which members ignore
		return false
	}
	m.clock++
	m.state, m.ts, m.reqAt, m.msgs, m.dgrams = Wanted, m.clock, now, 0, 0
	m.stats.Requests++
	m.emit(Event{Kind: Requested, Clock: m.ts})
	m.needed = nil
	if m.hasView {
		m.ask(m.others())
	}
	m.tryEnter(now)
	return true
}

// Release gives the lock up (Exited event) or withdraws a pending
// request (Withdrawn event). Either way the requests this node deferred
// are answered now, and the replies still coming for a withdrawn request
// will be told apart from those to a later one by their timestamp. It
// returns false if this node neither holds nor wants the lock (a lock
// lost to a view change is already released).
func (m *RA) Release(now time.Time) bool {
	switch m.state {
	case Held:
		m.stats.Released++
		m.emit(Event{Kind: Exited, Clock: m.ts, Held: now.Sub(m.heldAt)})
	case Wanted:
		m.stats.Withdrawn++
		m.emit(Event{Kind: Withdrawn, Clock: m.ts, Wait: now.Sub(m.reqAt)})
	default:
		return false
	}
	m.becomeReleased(now)
	return true
}

// Receive handles one mutex message that member from sent to this node.
// Nothing in payload can make it panic: junk is counted and dropped, and
// so is a message from a node outside the view.
func (m *RA) Receive(now time.Time, from uint64, payload []byte) {
	msg, err := m.codec.decode(payload)
	if err != nil {
		m.stats.Malformed++
		return
	}
	if !m.hasView || from == m.self || !m.isMember(from) {
		m.stats.Foreign++
		return
	}
	m.stats.Received.add(msg.kind)
	if !m.fits(msg) {
		m.stats.OutOfBound++
		return
	}
	m.clock = max(m.clock, msg.ts) + 1 // Lamport 1978, as Ricart–Agrawala 1981 use it
	if m.clock > MaxClock && !m.unbounded {
		m.clock = MaxClock // a reply when the clock is exhausted: no request follows
	}
	if msg.kind == kindRequest {
		m.onRequest(now, from, msg.ts)
	} else {
		m.onReply(now, from, msg.ts)
	}
}

// fits reports whether msg's timestamp is within the bounds (see
// ClockBound): a request at most ClockBound above this node's clock and
// below MaxClock, so that the clock it sets stays at most MaxClock; a
// reply to a timestamp this node's clock reached, as its own requests'
// did. Ignoring a request is safe: no reply to it goes out.
func (m *RA) fits(msg message) bool {
	switch {
	case m.unbounded:
		return true
	case msg.kind == kindReply:
		return msg.ts <= m.clock
	}
	return msg.ts < MaxClock && msg.ts-min(msg.ts, m.clock) <= ClockBound
}

// onRequest answers a member's request at once, or defers it while this
// node holds the lock or wants it with priority: Ricart–Agrawala 1981,
// the (timestamp, ID) order. One request per member is kept: a newer one
// from the same member replaces the older (which it withdrew). In a
// quarantine every request is deferred, and answered when it ends.
func (m *RA) onRequest(now time.Time, from, ts uint64) {
	i, found := slices.BinarySearchFunc(m.deferred, from, func(r request, id uint64) int { return cmp.Compare(r.peer, id) })
	if m.quieted(now) || m.defers(from, ts) {
		if found {
			m.deferred[i].ts = ts
		} else {
			m.deferred = slices.Insert(m.deferred, i, request{from, ts})
		}
		m.stats.Deferred++
		m.emit(Event{Kind: Deferred, Clock: ts, Peer: from})
		return
	}
	if found {
		m.deferred = slices.Delete(m.deferred, i, i+1)
	}
	m.send(from, kindReply, ts)
}

// defers reports whether this node defers member j's request ts.
func (m *RA) defers(j, ts uint64) bool {
	switch m.state {
	case Held:
		return true
	case Wanted:
		return m.ts < ts || (m.ts == ts && m.self < j)
	}
	return false
}

// onReply counts a reply to this node's pending request.
func (m *RA) onReply(now time.Time, from, ts uint64) {
	if m.state != Wanted || ts != m.ts {
		m.stats.Stale++ // to a withdrawn or an earlier request, or a copy after the grant
		return
	}
	m.msgs++
	m.dgrams++
	i, ok := slices.BinarySearch(m.needed, from)
	if !ok {
		m.stats.Stale++ // a second reply, after a request sent again on a view change
		return
	}
	m.needed = slices.Delete(m.needed, i, i+1)
	m.tryEnter(now)
}

// tryEnter grants the pending request when no reply is needed any more,
// the view holds the quorum, and no quarantine is on.
func (m *RA) tryEnter(now time.Time) {
	if m.state == Wanted && m.hasView && len(m.needed) == 0 && m.quorate(now) && !m.quieted(now) {
		m.becomeHeld(now)
	}
}

func (m *RA) becomeHeld(now time.Time) {
	m.state, m.heldAt, m.heldView = Held, now, m.view
	m.stats.Acquired++
	m.emit(Event{Kind: Acquired, Clock: m.ts, Wait: now.Sub(m.reqAt), Messages: m.msgs, Datagrams: m.dgrams})
}

// becomeReleased leaves Held or Wanted and answers the deferred requests
// (Ricart–Agrawala 1981: the deferred replies go out on exit), unless a
// quarantine is on: then they wait for its end.
func (m *RA) becomeReleased(now time.Time) {
	m.state, m.needed = Released, nil
	m.answerDeferred(now)
}

// answerDeferred replies to the deferred requests this node no longer
// defers.
func (m *RA) answerDeferred(now time.Time) {
	if len(m.deferred) == 0 || m.quieted(now) {
		return
	}
	kept := m.deferred[:0]
	for _, r := range m.deferred {
		if m.defers(r.peer, r.ts) {
			kept = append(kept, r)
		} else {
			m.send(r.peer, kindReply, r.ts)
		}
	}
	clear(m.deferred[len(kept):])
	m.deferred = kept
}

// lose takes the lock away from a holder that may no longer hold it.
func (m *RA) lose(now time.Time) {
	m.stats.Lost++
	m.emit(Event{Kind: Exited, Clock: m.ts, Held: now.Sub(m.heldAt), Lost: true})
	m.becomeReleased(now)
}

// quorate reports whether the view holds the configured majority, and
// whether this node heard a majority of its members within the lease.
func (m *RA) quorate(now time.Time) bool {
	if m.notPrimary {
		return false
	}
	if !m.leased {
		return true
	}
	if !m.hasView || m.quorum > 0 && len(m.members) <= m.quorum/2 {
		return false
	}
	return m.noLease || m.leaseEnds().After(now)
}

// leaseEnds is when, hearing nothing more, this node stops hearing a
// majority of its view within the lease (quorum mode, in a view).
func (m *RA) leaseEnds() time.Time {
	need := m.quorum / 2 // other members to hear: with this node, a majority (of the view's with ViewLease)
	if m.quorum == 0 {
		need = len(m.members) / 2
	}
	if need == 0 {
		return time.Unix(1<<62, 0) // this node alone is a majority: forever
	}
	ends := m.ends[:0] // NextDeadline asks at every turn of the node's loop: no allocation
	for _, id := range m.members {
		if at := m.heard[id]; id != m.self && !at.IsZero() {
			ends = append(ends, at.Add(m.lease))
		}
	}
	m.ends = ends
	if len(ends) < need {
		return longAgo
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return b.Compare(a) })
	return ends[need-1]
}

// longAgo is a lease that ran out long ago (not zero: a deadline).
var longAgo = time.Unix(1, 0)

// quieted reports whether a quarantine is on.
func (m *RA) quieted(now time.Time) bool {
	return m.leased && !m.noLease && !m.noQuiet && now.Before(m.quiet)
}

// Tick lets time pass (quorum mode; without a quorum it does nothing): a
// holder whose lease ran out loses the lock, and at the end of a
// quarantine the deferred requests are answered and a pending request may
// enter. Call it at NextDeadline, or more often.
func (m *RA) Tick(now time.Time) {
	if !m.leased {
		return
	}
	if m.state == Held && !m.quorate(now) {
		m.lose(now)
	}
	if !m.quieted(now) {
		m.quiet = time.Time{}
	}
	m.answerDeferred(now)
	m.tryEnter(now)
}

// NextDeadline returns when the machine next needs Tick: the end of a
// quarantine that holds something back, or when the holder's lease runs
// out as things stand. Zero for none.
func (m *RA) NextDeadline() time.Time {
	if !m.leased || m.noLease {
		return time.Time{}
	}
	var d time.Time
	if !m.quiet.IsZero() && (m.state == Wanted || len(m.deferred) > 0) {
		d = m.quiet
	}
	if m.state == Held && m.hasView {
		if e := m.leaseEnds(); d.IsZero() || e.Before(d) {
			d = e
		}
	}
	return d
}

// ask sends this node's pending request to ids and needs their replies:
// one multicast when they are all the other members (and more than one).
func (m *RA) ask(ids []uint64) {
	all := len(ids) > 1 && len(ids) == len(m.members)-1
	for _, id := range ids {
		if i, ok := slices.BinarySearch(m.needed, id); !ok {
			m.needed = slices.Insert(m.needed, i, id)
		}
		if !all {
			m.send(id, kindRequest, m.ts)
			m.dgrams++
		}
		m.msgs++
	}
	if all {
		m.send(0, kindRequest, m.ts)
		m.stats.Sent.Request += uint64(len(ids) - 1) // one per member, like addressed requests
		m.dgrams++
	}
}

// others returns the view's members but this node.
func (m *RA) others() []uint64 {
	out := make([]uint64, 0, len(m.members))
	for _, id := range m.members {
		if id != m.self {
			out = append(out, id)
		}
	}
	return out
}

// Ready returns what the machine produced since the last call.
func (m *RA) Ready() Ready {
	rd := Ready{Messages: m.out, Events: m.events}
	m.out, m.arena, m.events = nil, nil, nil
	return rd
}

// State returns whether this node holds, wants or neither.
func (m *RA) State() State { return m.state }

// HeldView returns the view this node acquired the lock in, "" unless it
// holds it. (It may hold it in a later view too: a view change does not
// take the lock away, but for the quorum.)
func (m *RA) HeldView() string {
	if m.state != Held {
		return ""
	}
	return m.heldView
}

// Clock returns the Lamport clock.
func (m *RA) Clock() uint64 { return m.clock }

// Stats returns the counters.
func (m *RA) Stats() Stats { return m.stats }

func (m *RA) emit(e Event) {
	e.View = m.view
	m.events = append(m.events, e)
}

// send queues the message [k, ts] to member to (0: every other member).
func (m *RA) send(to uint64, k kind, ts uint64) {
	if to == m.self || to == 0 && k != kindRequest {
		panic(fmt.Sprintf("mutex: node %d sends %v to %d", m.self, k, to))
	}
	start := len(m.arena)
	m.arena = m.codec.append(m.arena, message{kind: k, ts: ts})
	m.out = append(m.out, Message{To: to, Payload: m.arena[start:len(m.arena):len(m.arena)]})
	m.stats.Sent.add(k)
}

func (m *RA) isMember(id uint64) bool {
	_, ok := slices.BinarySearch(m.members, id)
	return ok
}
