package election

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil/msgnet"
)

// lan is a tiny network of Machines in virtual time: every Message goes to
// its To after a delay, in FIFO order per sender and receiver, through an
// event queue; Tick runs at each machine's deadline. Messages are lost only
// at view changes and crashes (install, crash).
type lan struct {
	t     testing.TB
	now   time.Time
	opt   Options
	nodes map[uint64]*node
	net   msgnet.Net
	delay func() time.Duration
	rng   *rand.Rand // nil: a view change drops every message in flight among its members; else each is delivered first or dropped at random
	// order, when set, gives the order of a view's members as the view
	// lists them (the join order); nil: by ID.
	order func(group []uint64) []uint64
	epoch int

	carried    Counts // messages sent on the network, by kind (the algorithms')
	accounting int    // TALLY and RESULT messages sent
	dropped    int
	trace      []string // the last steps, for failure messages
}

type node struct {
	m      *Machine
	view   []uint64
	viewID string
	evs    []Event
}

func newLAN(t testing.TB, opt Options, delay time.Duration) *lan {
	return &lan{t: t, now: time.Unix(1_800_000_000, 0), opt: opt, nodes: map[uint64]*node{},
		delay: func() time.Duration { return delay }}
}

// add creates fresh machines (a new node, or a restart of a crashed one).
func (l *lan) add(ids ...uint64) {
	for _, id := range ids {
		o := l.opt
		o.Self = id
		l.nodes[id] = &node{m: New(o)}
	}
}

// install gives every member of group a new view of exactly group, after
// settling what is in flight from or to them.
func (l *lan) install(group ...uint64) {
	group = slices.Sorted(slices.Values(group))
	in := map[uint64]bool{}
	for _, id := range group {
		in[id] = true
	}
	l.settle(in, func(a, b uint64) bool { return in[a] && in[b] })
	l.epoch++
	vid := fmt.Sprintf("%d.%d", l.epoch, group[0])
	l.logf("view %s %v", vid, group)
	listed := group
	if l.order != nil {
		listed = l.order(group)
	}
	for _, i := range msgnet.Order(l.rng, len(group)) {
		n := l.nodes[group[i]]
		n.view, n.viewID = group, vid
		n.m.SetView(l.now, vid, listed)
		l.collect(group[i])
	}
}

// crash stops id: what it sent or should receive is lost. The survivors
// of its view do not know yet; the caller installs their next view.
func (l *lan) crash(id uint64) {
	l.logf("crash %d", id)
	l.settle(map[uint64]bool{id: true}, func(a, b uint64) bool { return false })
	delete(l.nodes, id)
}

// settle decides the fate of the messages in flight from or to the nodes
// in touched, whose view is about to change (msgnet.Net.Settle).
func (l *lan) settle(touched map[uint64]bool, together func(a, b uint64) bool) {
	l.dropped += l.net.Settle(l.rng, touched, l.sameView, together, l.deliver)
}

func (l *lan) sameView(a, b uint64) bool {
	na, nb := l.nodes[a], l.nodes[b]
	return na != nil && nb != nil && na.viewID != "" && na.viewID == nb.viewID
}

func (l *lan) start(id uint64) bool {
	ok := l.nodes[id].m.Start(l.now)
	l.logf("start %d: %v", id, ok)
	l.collect(id)
	return ok
}

// collect moves id's output onto the network and keeps its events.
func (l *lan) collect(id uint64) {
	n := l.nodes[id]
	for _, out := range n.m.TakeOutput() {
		if out.To == 0 { // the leader's RESULT, to every other member
			for _, to := range n.view {
				if to != id {
					l.logf("%d → %d RESULT", id, to)
					l.net.Send(l.now.Add(l.delay()), id, to, out.Payload)
				}
			}
			continue
		}
		if out.To == id || !slices.Contains(n.view, out.To) {
			l.t.Fatalf("node %d (view %v) sends to %d\n%s", id, n.view, out.To, l.tail())
		}
		var c codec
		msg, err := c.decode(out.Payload)
		if err != nil && n.m.unbounded { // a wrapped round 0: every receiver drops it as malformed
			l.logf("%d → %d %x: %v", id, out.To, out.Payload, err)
			continue
		}
		if err != nil {
			l.t.Fatalf("node %d sends %x: %v", id, out.Payload, err)
		}
		if msg.kind >= kindTally {
			l.accounting++
		} else {
			l.carried.add(msg.kind)
		}
		l.logf("%d → %d %v r%d %d", id, out.To, msg.kind, msg.round, msg.id)
		l.net.Send(l.now.Add(l.delay()), id, out.To, out.Payload)
	}
	for _, e := range n.m.TakeEvents() {
		l.logf("%d: %v r%d leader %d sent %d", id, e.Kind, e.Round, e.Leader, e.Sent)
		n.evs = append(n.evs, e)
	}
	if err := n.m.invariants(); err != nil && !n.m.unbounded { // a wrapped round breaks them
		l.t.Fatalf("%v\n%s", err, l.tail())
	}
}

func (l *lan) deliver(f msgnet.Msg) {
	n := l.nodes[f.To]
	if n == nil {
		l.dropped++
		return
	}
	n.m.Receive(l.now, f.From, f.Payload)
	l.collect(f.To)
}

// next returns when the next thing happens: a delivery or a deadline.
func (l *lan) next() (time.Time, bool) {
	at, _ := l.net.Next()
	for _, n := range l.nodes {
		if d := n.m.NextDeadline(); !d.IsZero() && (at.IsZero() || d.Before(at)) {
			at = d
		}
	}
	return at, !at.IsZero()
}

// step does the next thing: deliveries first, then due timers in ID order.
func (l *lan) step() bool {
	at, ok := l.next()
	if !ok {
		return false
	}
	if at.After(l.now) {
		l.now = at
	}
	if at, ok := l.net.Next(); ok && !at.After(l.now) {
		l.deliver(l.net.Pop())
		return true
	}
	for _, id := range l.ids() {
		n := l.nodes[id]
		if d := n.m.NextDeadline(); !d.IsZero() && !d.After(l.now) {
			l.logf("tick %d", id)
			n.m.Tick(l.now)
			l.collect(id)
		}
	}
	return true
}

// run steps until d has passed.
func (l *lan) run(d time.Duration) {
	end := l.now.Add(d)
	for {
		at, ok := l.next()
		if !ok || at.After(end) {
			break
		}
		l.step()
	}
	l.now = end
}

// drain steps until nothing is in flight and no timer is armed.
func (l *lan) drain() {
	for i := 0; l.step(); i++ {
		if i > 1_000_000 {
			l.t.Fatalf("no quiescence after %d steps\n%s", i, l.tail())
		}
	}
}

// messages is every message the network carried.
func (l *lan) messages() int { return int(l.carried.Total()) }

func (l *lan) ids() []uint64 {
	ids := make([]uint64, 0, len(l.nodes))
	for id := range l.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (l *lan) logf(format string, args ...any) {
	s := fmt.Sprintf("%8.3fms ", float64(l.now.Sub(time.Unix(1_800_000_000, 0)))/1e6) + fmt.Sprintf(format, args...)
	if len(l.trace) >= 400 {
		l.trace = l.trace[100:]
	}
	l.trace = append(l.trace, s)
}

func (l *lan) tail() string { return strings.Join(l.trace, "\n") }
