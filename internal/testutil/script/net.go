package script

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil/msgnet"
)

// Node is one node's machine as Net runs it: a protocol machine, or an
// adapter around one. Net calls Take after every call into it.
type Node[E any] interface {
	Receive(now time.Time, from uint64, payload []byte)
	Tick(now time.Time)
	NextDeadline() time.Time
	// Take hands over what the machine produced since the last call: the
	// messages to send, in order, and the events.
	Take() ([]Msg, []E)
}

// Viewer is a Node that takes views (Net.Install): the election, the lock.
type Viewer interface {
	SetView(now time.Time, view string, members []uint64)
}

// Msg is a message a node sends.
type Msg struct {
	// To is the receiver; 0: every other member of the sender's view, or
	// without a view every other node it reaches (a multicast).
	To uint64
	// Self, with To 0, has the sender take its message too, in the same
	// order as the others (the lock's total-order messages).
	Self    bool
	Payload []byte
}

// Peer is a node of the network and what the network knows of it.
type Peer[N Node[E], E any] struct {
	ID     uint64
	M      N
	View   []uint64  // its view's members, ascending; nil: no view
	ViewID string    // its view, "epoch.lowest"; "": none
	PrevID string    // the view before ViewID
	Moved  time.Time // when it installed ViewID
	Events []E       // every event it reported, in order
}

// Net is a network of nodes in virtual time: every message arrives after
// Delay, in FIFO order per sender and receiver (msgnet.Net); a node is
// ticked at its deadline. Messages are lost only where a drop rule or a
// partition takes them, when their sender or receiver crashes, and when a
// view change settles them (Settle).
type Net[N Node[E], E any] struct {
	T     testing.TB
	Start time.Time // when the network began: times print as since then
	Now   time.Time
	Nodes map[uint64]*Peer[N, E]
	// Delay is the time a message takes from one node to another; nil:
	// none.
	Delay func(from, to uint64) time.Duration
	// Rng, when set, decides the fate of each message in flight at a view
	// change or crash (msgnet.Net.Settle); nil: they are all lost.
	Rng *rand.Rand
	// Order, when set, lists a view's members as the view gives them (the
	// join order); nil: ascending.
	Order func(group []uint64) []uint64
	// TimersFirst: at an instant a message arrives and a deadline passes,
	// the node is ticked first; else the message is delivered first.
	TimersFirst bool

	// Sending, when set, is asked about every message a node sends before
	// it goes out: the message's kind (for drop rules) and how to print it;
	// false keeps it from the network.
	Sending func(from uint64, m Msg) (kind, text string, send bool)
	// Sent, when set, hears of every message sent: to whom it went, and
	// to whom a drop rule kept it from going (a partition just cuts).
	Sent func(from uint64, m Msg, to, dropped []uint64, kind, text string)
	// Lost, when set, hears of every message in flight lost to a crash or
	// a view change.
	Lost func(m msgnet.Msg, why string)
	// Event, when set, hears of every event a node reports.
	Event func(id uint64, e E)
	// Collected, when set, runs after every call into a node, when its
	// output is on the network: the machines' own invariants.
	Collected func(id uint64)

	Dropped int        // messages lost: to a crashed node, a view change, a rule
	Flight  msgnet.Net // the messages in flight

	epoch int
	side  map[uint64]int // partition side of each node; nil: no partition
	rules []*Rule
	trace []string // the last steps, for failure messages
}

// Rule drops messages from one node to one (To 0: to all) of a kind
// ("any": of every kind).
type Rule struct {
	From, To uint64
	Kind     string
	Left     int // messages still to drop; -1: all, until Heal
}

// New returns an empty network at start.
func New[N Node[E], E any](t testing.TB, start time.Time) *Net[N, E] {
	return &Net[N, E]{T: t, Start: start, Now: start, Nodes: map[uint64]*Peer[N, E]{}}
}

// Add puts machine m on the network as node id (a new node, or a restart
// of a crashed one), without a view.
func (n *Net[N, E]) Add(id uint64, m N) *Peer[N, E] {
	p := &Peer[N, E]{ID: id, M: m}
	n.Nodes[id] = p
	return p
}

// IDs returns the nodes' IDs, ascending.
func (n *Net[N, E]) IDs() []uint64 {
	ids := make([]uint64, 0, len(n.Nodes))
	for id := range n.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Since is the time since the network began.
func (n *Net[N, E]) Since() time.Duration { return n.Now.Sub(n.Start) }

// Install gives every member of group a new view of exactly group, after
// settling what is in flight from or to them. It returns the view's ID,
// "epoch.lowest".
func (n *Net[N, E]) Install(group ...uint64) string {
	group = slices.Sorted(slices.Values(group))
	in := map[uint64]bool{}
	for _, id := range group {
		in[id] = true
	}
	n.Settle(in, func(a, b uint64) bool { return in[a] && in[b] }, "view change")
	n.epoch++
	vid := fmt.Sprintf("%d.%d", n.epoch, group[0])
	n.Logf("view %s %v", vid, group)
	listed := group
	if n.Order != nil {
		listed = n.Order(group)
	}
	for _, i := range msgnet.Order(n.Rng, len(group)) {
		n.SetView(group[i], vid, group, listed)
	}
	return vid
}

// SetView installs view vid of group (listed in the view's order) on node
// id alone.
func (n *Net[N, E]) SetView(id uint64, vid string, group, listed []uint64) {
	p := n.Nodes[id]
	p.View, p.PrevID, p.ViewID, p.Moved = group, p.ViewID, vid, n.Now
	any(p.M).(Viewer).SetView(n.Now, vid, listed)
	n.Collect(id)
}

// Crash stops id: what it sent or should receive is lost (with Rng, a
// prefix of it may arrive first). The others of its view do not know
// yet: the caller installs their next view.
func (n *Net[N, E]) Crash(id uint64) {
	n.Logf("crash %d", id)
	n.Settle(map[uint64]bool{id: true}, func(a, b uint64) bool { return false }, "crash")
	delete(n.Nodes, id)
}

// Settle decides the fate of the messages in flight from or to the nodes
// in touched, whose view is about to change (msgnet.Net.Settle); without
// Rng they are all lost, and Lost hears of each, with why.
func (n *Net[N, E]) Settle(touched map[uint64]bool, together func(a, b uint64) bool, why string) {
	if n.Rng == nil && n.Lost != nil {
		for _, m := range n.Flight.Sorted() {
			if touched[m.From] || touched[m.To] {
				n.Lost(m, why)
			}
		}
	}
	n.Dropped += n.Flight.Settle(n.Rng, touched, n.sameView, together, n.Deliver)
}

func (n *Net[N, E]) sameView(a, b uint64) bool {
	pa, pb := n.Nodes[a], n.Nodes[b]
	return pa != nil && pb != nil && pa.ViewID != "" && pa.ViewID == pb.ViewID
}

// Collect puts what node id produced on the network and hands on its
// events.
func (n *Net[N, E]) Collect(id uint64) {
	p := n.Nodes[id]
	msgs, evs := p.M.Take()
	for _, m := range msgs {
		n.send(p, m)
	}
	for _, e := range evs {
		p.Events = append(p.Events, e)
		if n.Event != nil {
			n.Event(id, e)
		}
	}
	if n.Collected != nil {
		n.Collected(id)
	}
}

// send puts m on the network to each node it reaches.
func (n *Net[N, E]) send(p *Peer[N, E], m Msg) {
	kind, text, ok := "", fmt.Sprintf("%x", m.Payload), true
	if n.Sending != nil {
		kind, text, ok = n.Sending(p.ID, m)
	}
	if !ok {
		n.Logf("%d → %d %s: not sent", p.ID, m.To, text)
		return
	}
	var to, dropped []uint64
	used := map[*Rule]bool{} // a message counts once against a rule, however many it misses
	for _, dst := range n.receivers(p, m) {
		if !n.connected(p.ID, dst) {
			continue
		}
		if r := n.dropping(p.ID, dst, kind); r != nil {
			used[r] = true
			dropped = append(dropped, dst)
			n.Dropped++
			continue
		}
		to = append(to, dst)
		n.Logf("%d → %d %s", p.ID, dst, text)
		d := time.Duration(0)
		if n.Delay != nil {
			d = n.Delay(p.ID, dst)
		}
		n.Flight.Send(n.Now.Add(d), p.ID, dst, m.Payload)
	}
	for r := range used {
		if r.Left > 0 {
			r.Left--
		}
	}
	if n.Sent != nil {
		n.Sent(p.ID, m, to, dropped, kind, text)
	}
}

// receivers returns whom m goes to: To, or every other member of the
// sender's view (every other node without a view), and the sender too
// with Self.
func (n *Net[N, E]) receivers(p *Peer[N, E], m Msg) []uint64 {
	if m.To != 0 {
		if m.To == p.ID || p.View != nil && !slices.Contains(p.View, m.To) {
			n.T.Fatalf("node %d (view %v) sends to %d\n%s", p.ID, p.View, m.To, n.Tail())
		}
		return []uint64{m.To}
	}
	all := p.View
	if all == nil {
		all = n.IDs()
	}
	var out []uint64
	for _, id := range all {
		if id != p.ID || m.Self {
			out = append(out, id)
		}
	}
	return out
}

// Deliver hands message m to its receiver, if it still runs.
func (n *Net[N, E]) Deliver(m msgnet.Msg) {
	p := n.Nodes[m.To]
	if p == nil {
		n.Dropped++
		return
	}
	p.M.Receive(n.Now, m.From, m.Payload)
	n.Collect(m.To)
}

// Call runs f on node id's machine now, and collects what it produced
// (a request of the application: Start, Request, Multicast).
func (n *Net[N, E]) Call(id uint64, f func(m N)) {
	f(n.Nodes[id].M)
	n.Collect(id)
}

// InFlight is the number of messages in flight.
func (n *Net[N, E]) InFlight() int { return n.Flight.Len() }

// Next returns when the next thing happens: an arrival or a deadline.
func (n *Net[N, E]) Next() (time.Time, bool) {
	at, _ := n.Flight.Next()
	for _, p := range n.Nodes {
		if d := p.M.NextDeadline(); !d.IsZero() && (at.IsZero() || d.Before(at)) {
			at = d
		}
	}
	return at, !at.IsZero()
}

// Step does the next thing, moving the clock to it: the arrival of a
// message, or the ticks of the nodes whose deadline passed, in ID order
// (at one instant, the arrival first unless TimersFirst). It returns
// false when nothing is left to happen.
func (n *Net[N, E]) Step() bool {
	at, ok := n.Next()
	if !ok {
		return false
	}
	if at.After(n.Now) {
		n.Now = at
	}
	if n.TimersFirst && n.tickDue() {
		return true
	}
	if a, ok := n.Flight.Next(); ok && !a.After(n.Now) {
		n.Deliver(n.Flight.Pop())
		return true
	}
	n.tickDue()
	return true
}

// tickDue ticks, in ID order, every node whose deadline passed; false if
// none did.
func (n *Net[N, E]) tickDue() bool {
	ticked := false
	for _, id := range n.IDs() {
		p := n.Nodes[id]
		if p == nil {
			continue
		}
		if d := p.M.NextDeadline(); !d.IsZero() && !d.After(n.Now) {
			n.Logf("tick %d", id)
			p.M.Tick(n.Now)
			n.Collect(id)
			ticked = true
		}
	}
	return ticked
}

// RunUntil does everything that happens up to end, then sets the clock
// to end (unless it is past it already).
func (n *Net[N, E]) RunUntil(end time.Time) {
	for at, ok := n.Next(); ok && !at.After(end); at, ok = n.Next() {
		n.Step()
	}
	if end.After(n.Now) {
		n.Now = end
	}
}

// Run does everything that happens in the next d.
func (n *Net[N, E]) Run(d time.Duration) { n.RunUntil(n.Now.Add(d)) }

// Drain steps until nothing is in flight and no deadline is armed.
func (n *Net[N, E]) Drain() {
	for i := 0; n.Step(); i++ {
		n.bound(i)
	}
}

// Deliveries steps until nothing is in flight, ticking the nodes whose
// deadline comes first: for machines whose deadlines never stop (a
// lease renewed at each tick).
func (n *Net[N, E]) Deliveries() {
	for i := 0; n.InFlight() > 0; i++ {
		n.Step()
		n.bound(i)
	}
}

func (n *Net[N, E]) bound(steps int) {
	if steps > 1_000_000 {
		n.T.Fatalf("no quiescence after %d steps\n%s", steps, n.Tail())
	}
}

// Partition cuts the network into sides: a node on no side is alone.
func (n *Net[N, E]) Partition(sides ...[]uint64) {
	n.side = map[uint64]int{}
	for s, ids := range sides {
		for _, id := range ids {
			n.side[id] = s
		}
	}
	n.Logf("partition %v", sides)
}

// Drop adds a drop rule.
func (n *Net[N, E]) Drop(r Rule) { n.rules = append(n.rules, &r) }

// Heal ends the partition and every drop rule.
func (n *Net[N, E]) Heal() { n.side, n.rules = nil, nil }

func (n *Net[N, E]) connected(a, b uint64) bool {
	if n.side == nil {
		return true
	}
	sa, oka := n.side[a]
	sb, okb := n.side[b]
	return oka && okb && sa == sb
}

// dropping returns the rule that takes a message of kind from a to b,
// nil if none.
func (n *Net[N, E]) dropping(a, b uint64, kind string) *Rule {
	for _, r := range n.rules {
		if r.From == a && (r.To == 0 || r.To == b) && r.Left != 0 && (r.Kind == "any" || r.Kind == kind) {
			return r
		}
	}
	return nil
}

// Logf keeps a line of the trace that a failure prints (Tail).
func (n *Net[N, E]) Logf(format string, args ...any) {
	s := fmt.Sprintf("%8.3fms ", float64(n.Since())/1e6) + fmt.Sprintf(format, args...)
	if len(n.trace) >= 400 {
		n.trace = n.trace[100:]
	}
	n.trace = append(n.trace, s)
}

// Tail returns the last lines of the trace.
func (n *Net[N, E]) Tail() string { return strings.Join(n.trace, "\n") }

// Gap is a random time between two steps of a random history: none (view
// changes in a burst), less than a message round trip, or long enough for
// timeouts to fire and the network to settle.
func Gap(rng *rand.Rand) time.Duration {
	switch r := rng.IntN(10); {
	case r < 3:
		return 0
	case r < 8:
		return time.Duration(rng.IntN(5000)) * time.Microsecond
	default:
		return time.Duration(rng.IntN(80)) * time.Millisecond
	}
}
