package mutex

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil/msgnet"
)

// lan is a tiny network of RA machines in virtual time: every Message goes to
// its To after a delay, in FIFO order per sender and receiver, through an
// event queue. Messages are lost only at view changes and crashes
// (install, crash). After every delivery it checks that no two members of
// one view hold the lock (and, with global, no two nodes at all).
type lan struct {
	t     testing.TB
	now   time.Time
	opt   Options
	nodes map[uint64]*node
	net   msgnet.Net
	delay func() time.Duration
	rng   *rand.Rand // nil: a view change drops every message in flight among its members; else each is delivered first, held or dropped at random
	epoch int

	naiveJoin  bool // new machines leave joiners out of pending requests (the unsafe textbook variant)
	noLease    bool // new machines count a quorum by the view alone (unsafe while views overlap)
	noQuiet    bool // new machines have no quarantine (unsafe too)
	global     bool // the safety check counts holders across views too (quorum mode, between steps)
	installing bool
	tolerate   bool  // record the first safety violation in violation instead of failing
	violation  error // the first safety violation, with tolerate

	carried   Counts // messages sent on the network, by kind (a multicast once per receiver)
	datagrams int    // messages sent, a multicast counted once
	dropped   int
	trace     []string // the last steps, for failure messages
}

type node struct {
	m      *RA
	view   []uint64
	viewID string
	prevID string    // the view before viewID
	moved  time.Time // when it installed viewID
	evs    []Event
}

// testLease is the lease of quorum mode in these tests, against message
// delays of 0.1–3 ms.
const testLease = 20 * time.Millisecond

func newLAN(t testing.TB, opt Options, delay time.Duration) *lan {
	return &lan{t: t, now: time.Unix(1_800_000_000, 0), opt: opt, nodes: map[uint64]*node{},
		delay: func() time.Duration { return delay }}
}

// add creates fresh machines (a new node, or a restart of a crashed one).
func (l *lan) add(ids ...uint64) {
	for _, id := range ids {
		o := l.opt
		o.Self = id
		if o.Quorum > 0 {
			if o.Lease == 0 {
				o.Lease = testLease
			}
		}
		m := NewRA(o)
		m.naiveJoin, m.noLease, m.noQuiet = l.naiveJoin, l.noLease, l.noQuiet
		l.nodes[id] = &node{m: m}
	}
}

// heardAt is when node id last heard peer in its view (quorum mode): at
// every instant while peer is in id's view, or in the one before (it has
// not installed the next view yet), since the network carries heartbeats;
// when it moved on, if it moved on from there; else never.
func (l *lan) heardAt(id, peer uint64) time.Time {
	n, p := l.nodes[id], l.nodes[peer]
	ours := func(v string) bool { return v != "" && (v == n.viewID || v == n.prevID) }
	switch {
	case n == nil || p == nil:
		return time.Time{}
	case ours(p.viewID):
		return l.now
	case ours(p.prevID):
		return p.moved
	}
	return time.Time{}
}

// heardAll is heardAt for each of members.
func (l *lan) heardAll(id uint64, members []uint64) []time.Time {
	if l.opt.Quorum == 0 {
		return nil
	}
	at := make([]time.Time, len(members))
	for i, peer := range members {
		at[i] = l.heardAt(id, peer)
	}
	return at
}

// feed tells node id when it last heard each member of its view, as its
// node does with every datagram, before the machine acts.
func (l *lan) feed(id uint64) {
	n := l.nodes[id]
	if n == nil || l.opt.Quorum == 0 {
		return
	}
	for _, peer := range n.view {
		n.m.Heard(peer, l.heardAt(id, peer))
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
	l.installing = true
	defer func() { l.installing = false }()
	l.settle(in, func(a, b uint64) bool { return in[a] && in[b] })
	l.epoch++
	vid := fmt.Sprintf("%d.%d", l.epoch, group[0])
	l.logf("view %s %v", vid, group)
	for _, i := range msgnet.Order(l.rng, len(group)) {
		n := l.nodes[group[i]]
		n.view, n.prevID, n.viewID, n.moved = group, n.viewID, vid, l.now
		n.m.SetView(l.now, vid, group, l.heardAll(group[i], group))
		l.collect(group[i])
	}
}

// installOn installs the view vid of group on the members in on only:
// the others have not heard of it yet (members install a view one by
// one, and a member may move on while the others still count it).
func (l *lan) installOn(vid string, group []uint64, on ...uint64) {
	l.logf("view %s %v on %v", vid, group, on)
	for _, id := range on {
		n := l.nodes[id]
		n.view, n.prevID, n.viewID, n.moved = group, n.viewID, vid, l.now
		n.m.SetView(l.now, vid, group, l.heardAll(id, group))
		l.collect(id)
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

func (l *lan) request(id uint64) bool {
	l.feed(id)
	ok := l.nodes[id].m.Request(l.now)
	l.logf("request %d: %v", id, ok)
	l.collect(id)
	return ok
}

func (l *lan) release(id uint64) bool {
	l.feed(id)
	ok := l.nodes[id].m.Release(l.now)
	l.logf("release %d: %v", id, ok)
	l.collect(id)
	return ok
}

// collect moves id's output onto the network and keeps its events, then
// checks the machine's own invariants and the lock's safety.
func (l *lan) collect(id uint64) {
	n := l.nodes[id]
	for _, out := range n.m.TakeOutput() {
		if out.To == id || out.To != 0 && !slices.Contains(n.view, out.To) {
			l.t.Fatalf("node %d (view %v) sends to %d\n%s", id, n.view, out.To, l.tail())
		}
		var c codec
		msg, err := c.decode(out.Payload)
		if err != nil && n.m.unbounded { // a wrapped clock's timestamp 0: the receivers drop it as malformed
			msg.kind, err = kindRequest, nil
		}
		if err != nil || out.To == 0 && msg.kind != kindRequest {
			l.t.Fatalf("node %d sends %x to %d: %+v, %v", id, out.Payload, out.To, msg, err)
		}
		l.datagrams++
		to := []uint64{out.To}
		if out.To == 0 { // a multicast to the view's other members
			to = slices.DeleteFunc(slices.Clone(n.view), func(x uint64) bool { return x == id })
		}
		for _, dst := range to {
			l.carried.add(msg.kind)
			l.logf("%d → %d %v ts%d", id, dst, msg.kind, msg.ts)
			l.net.Send(l.now.Add(l.delay()), id, dst, out.Payload)
		}
	}
	for _, e := range n.m.TakeEvents() {
		l.logf("%d: %v ts%d view %s wait %v held %v msgs %d peer %d lost %v", id, e.Kind, e.Clock, e.View, e.Wait, e.Held, e.Messages, e.Peer, e.Lost)
		n.evs = append(n.evs, e)
	}
	if err := n.m.invariants(l.now); err != nil && !n.m.unbounded { // a wrapped clock breaks them
		l.t.Fatalf("%v\n%s", err, l.tail())
	}
	if err := l.safe(l.global && !l.installing); err != nil && l.tolerate {
		if l.violation == nil {
			l.violation = err
		}
	} else if err != nil {
		l.t.Fatalf("%v\n%s", err, l.tail())
	}
}

// safe checks that no two members of one view hold the lock, and with
// global, that no two nodes do at all.
func (l *lan) safe(global bool) error {
	var holders []uint64
	byView := map[string]uint64{}
	for _, id := range l.ids() {
		n := l.nodes[id]
		if n.m.State() != Held {
			continue
		}
		holders = append(holders, id)
		if other, ok := byView[n.viewID]; ok {
			return fmt.Errorf("nodes %d and %d both hold the lock in view %s", other, id, n.viewID)
		}
		byView[n.viewID] = id
	}
	if global && len(holders) > 1 {
		return fmt.Errorf("nodes %v all hold the lock", holders)
	}
	return nil
}

func (l *lan) holders() []uint64 {
	var hs []uint64
	for _, id := range l.ids() {
		if l.nodes[id].m.State() == Held {
			hs = append(hs, id)
		}
	}
	return hs
}

func (l *lan) deliver(f msgnet.Msg) {
	n := l.nodes[f.To]
	if n == nil {
		l.dropped++
		return
	}
	l.feed(f.To)
	n.m.Receive(l.now, f.From, f.Payload)
	l.collect(f.To)
}

// step delivers the next message, advancing the clock to its arrival,
// and ticks before it the machines whose deadline comes first.
func (l *lan) step() bool {
	at, ok := l.net.Next()
	if !ok {
		return false
	}
	l.tickUntil(at)
	if at.After(l.now) {
		l.now = at
	}
	l.deliver(l.net.Pop())
	return true
}

// tickUntil ticks, in time order, every machine whose deadline is not
// after end.
func (l *lan) tickUntil(end time.Time) {
	for {
		var next time.Time
		var who uint64
		for _, id := range l.ids() {
			if d := l.nodes[id].m.NextDeadline(); !d.IsZero() && !d.After(end) && (next.IsZero() || d.Before(next)) {
				next, who = d, id
			}
		}
		if who == 0 {
			return
		}
		if next.After(l.now) {
			l.now = next
		}
		l.feed(who)
		l.nodes[who].m.Tick(l.now)
		l.collect(who)
	}
}

// quarantined returns the end of the first quarantine that holds back a
// request or a reply, zero if none.
func (l *lan) quarantined() time.Time {
	var first time.Time
	for _, id := range l.ids() {
		m := l.nodes[id].m
		if q := m.quiet; !q.IsZero() && (m.state == Wanted || len(m.deferred) > 0) && (first.IsZero() || q.Before(first)) {
			first = q
		}
	}
	return first
}

// run delivers what arrives until d has passed.
func (l *lan) run(d time.Duration) {
	end := l.now.Add(d)
	for at, ok := l.net.Next(); ok && !at.After(end); at, ok = l.net.Next() {
		l.step()
	}
	l.tickUntil(end)
	l.now = end
}

// drain delivers until nothing is in flight and no quarantine holds
// anything back.
func (l *lan) drain() {
	for i := 0; ; i++ {
		if !l.step() {
			q := l.quarantined()
			if q.IsZero() {
				return
			}
			l.tickUntil(q)
		}
		if i > 1_000_000 {
			l.t.Fatalf("no quiescence after %d steps\n%s", i, l.tail())
		}
	}
}

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

// invariants checks a machine's state against itself.
func (m *RA) invariants(now time.Time) error {
	for _, id := range m.needed {
		if !m.isMember(id) || id == m.self {
			return fmt.Errorf("node %d: needs %d, not another member of %v", m.self, id, m.members)
		}
	}
	for _, r := range m.deferred {
		if !m.isMember(r.peer) || r.peer == m.self {
			return fmt.Errorf("node %d: deferred %d, not another member of %v", m.self, r.peer, m.members)
		}
	}
	switch {
	case !slices.IsSorted(m.needed) || !slices.IsSortedFunc(m.deferred, func(a, b request) int { return cmp.Compare(a.peer, b.peer) }):
		return fmt.Errorf("node %d: needed %v or deferred %v unsorted", m.self, m.needed, m.deferred)
	case m.state == Released && (len(m.needed) > 0 || len(m.deferred) > 0 && !m.quieted(now)):
		return fmt.Errorf("node %d: released, needs %v, deferred %v", m.self, m.needed, m.deferred)
	case m.state == Held && (len(m.needed) > 0 || !m.hasView || m.quorum > 0 && len(m.members) <= m.quorum/2):
		return fmt.Errorf("node %d: holds, needs %v, view %v (quorum %d)", m.self, m.needed, m.members, m.quorum)
	case m.state == Wanted && m.hasView && len(m.needed) == 0 && m.quorate(now) && !m.quieted(now):
		return fmt.Errorf("node %d: wants with nothing missing", m.self)
	case m.state != Released && m.ts == 0, m.ts > m.clock:
		return fmt.Errorf("node %d: state %v, ts %d, clock %d", m.self, m.state, m.ts, m.clock)
	}
	return nil
}
