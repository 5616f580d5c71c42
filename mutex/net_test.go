package mutex

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil/script"
)

// lan is a tiny network of RA machines in virtual time (script.Net):
// every Message goes to its To after a delay, in FIFO order per sender and
// receiver. Messages are lost only at view changes and crashes (Install,
// Crash). After every call into a machine it checks the machine's
// invariants and that no two members of one view hold the lock (and,
// with global, no two nodes at all).
type lan struct {
	*script.Net[*rnode, Event]
	opt Options

	naiveJoin  bool // new machines leave joiners out of pending requests (the unsafe textbook variant)
	noLease    bool // new machines count a quorum by the view alone (unsafe while views overlap)
	noQuiet    bool // new machines have no quarantine (unsafe too)
	global     bool // the safety check counts holders across views too (quorum mode, between steps)
	installing bool
	tolerate   bool  // record the first safety violation in violation instead of failing
	violation  error // the first safety violation, with tolerate

	carried   Counts // messages sent on the network, by kind (a multicast once per receiver)
	datagrams int    // messages sent, a multicast counted once
}

// rnode is an RA machine on the network. Before every input it is told,
// as its node tells it with every datagram, when it last heard each member
// of its view (quorum mode), and a view comes with those times.
type rnode struct {
	*RA
	l  *lan
	id uint64
}

func (n *rnode) Receive(now time.Time, from uint64, payload []byte) {
	n.l.feed(n.id)
	n.RA.Receive(now, from, payload)
}

func (n *rnode) Tick(now time.Time) {
	n.l.feed(n.id)
	n.RA.Tick(now)
}

func (n *rnode) SetView(now time.Time, view string, members []uint64) {
	n.RA.SetView(now, view, members, n.l.heardAll(n.id, members))
}

// Take implements script.Node.
func (n *rnode) Take() ([]script.Msg, []Event) { return messagesOf(n.TakeOutput()), n.TakeEvents() }

// messagesOf returns what a lock machine sends as the network's messages:
// a total-order message goes to every member, the sender too.
func messagesOf(out []Message) []script.Msg {
	msgs := make([]script.Msg, len(out))
	for i, o := range out {
		msgs[i] = script.Msg{To: o.To, Self: o.Total, Payload: o.Payload}
	}
	return msgs
}

// testLease is the lease of quorum mode in these tests, against message
// delays of 0.1–3 ms.
const testLease = 20 * time.Millisecond

func newLAN(t testing.TB, opt Options, delay time.Duration) *lan {
	l := &lan{Net: script.New[*rnode, Event](t, script.Start), opt: opt}
	l.Delay = func(_, _ uint64) time.Duration { return delay }
	l.TimersFirst = true
	l.Sending = l.sending
	l.Event = func(id uint64, e Event) {
		l.Logf("%d: %v ts%d view %s wait %v held %v msgs %d peer %d lost %v", id, e.Kind, e.Clock, e.View, e.Wait, e.Held, e.Messages, e.Peer, e.Lost)
	}
	l.Collected = l.check
	return l
}

// add creates fresh machines (a new node, or a restart of a crashed one).
func (l *lan) add(ids ...uint64) {
	for _, id := range ids {
		o := l.opt
		o.Self = id
		if o.Quorum > 0 && o.Lease == 0 {
			o.Lease = testLease
		}
		m := NewRA(o)
		m.naiveJoin, m.noLease, m.noQuiet = l.naiveJoin, l.noLease, l.noQuiet
		l.Add(id, &rnode{RA: m, l: l, id: id})
	}
}

// heardAt is when node id last heard peer in its view (quorum mode): at
// every instant while peer is in id's view, or in the one before (it has
// not installed the next view yet), since the network carries heartbeats;
// when it moved on, if it moved on from there; else never.
func (l *lan) heardAt(id, peer uint64) time.Time {
	n, p := l.Nodes[id], l.Nodes[peer]
	ours := func(v string) bool { return v != "" && (v == n.ViewID || v == n.PrevID) }
	switch {
	case n == nil || p == nil:
		return time.Time{}
	case ours(p.ViewID):
		return l.Now
	case ours(p.PrevID):
		return p.Moved
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
	n := l.Nodes[id]
	if n == nil || l.opt.Quorum == 0 {
		return
	}
	for _, peer := range n.View {
		n.M.Heard(peer, l.heardAt(id, peer))
	}
}

// install is Install, with the global safety check off until every
// member installed the view.
func (l *lan) install(group ...uint64) {
	l.installing = true
	defer func() { l.installing = false }()
	l.Install(group...)
}

// installOn installs the view vid of group on the members in on only:
// the others have not heard of it yet (members install a view one by
// one, and a member may move on while the others still count it).
func (l *lan) installOn(vid string, group []uint64, on ...uint64) {
	l.Logf("view %s %v on %v", vid, group, on)
	for _, id := range on {
		l.SetView(id, vid, group, group)
	}
}

func (l *lan) request(id uint64) bool {
	var ok bool
	l.Call(id, func(n *rnode) {
		l.feed(id)
		ok = n.Request(l.Now)
	})
	l.Logf("request %d: %v", id, ok)
	return ok
}

func (l *lan) release(id uint64) bool {
	var ok bool
	l.Call(id, func(n *rnode) {
		l.feed(id)
		ok = n.Release(l.Now)
	})
	l.Logf("release %d: %v", id, ok)
	return ok
}

// sending checks and counts what a node sends.
func (l *lan) sending(from uint64, out script.Msg) (string, string, bool) {
	var c codec
	msg, err := c.decode(out.Payload)
	if err != nil && l.Nodes[from].M.unbounded { // a wrapped clock's timestamp 0: the receivers drop it as malformed
		msg.kind, err = kindRequest, nil
	}
	if err != nil || out.To == 0 && msg.kind != kindRequest {
		l.T.Fatalf("node %d sends %x to %d: %+v, %v", from, out.Payload, out.To, msg, err)
	}
	l.datagrams++
	receivers := 1
	if out.To == 0 { // a multicast to the view's other members
		receivers = len(l.Nodes[from].View) - 1
	}
	for range receivers {
		l.carried.add(msg.kind)
	}
	return msg.kind.String(), fmt.Sprintf("%v ts%d", msg.kind, msg.ts), true
}

// check checks a machine's own invariants and the lock's safety.
func (l *lan) check(id uint64) {
	if m := l.Nodes[id].M; !m.unbounded { // a wrapped clock breaks them
		if err := m.invariants(l.Now); err != nil {
			l.T.Fatalf("%v\n%s", err, l.Tail())
		}
	}
	if err := l.safe(l.global && !l.installing); err != nil && l.tolerate {
		if l.violation == nil {
			l.violation = err
		}
	} else if err != nil {
		l.T.Fatalf("%v\n%s", err, l.Tail())
	}
}

// safe checks that no two members of one view hold the lock, and with
// global, that no two nodes do at all.
func (l *lan) safe(global bool) error {
	var holders []uint64
	byView := map[string]uint64{}
	for _, id := range l.IDs() {
		n := l.Nodes[id]
		if n.M.State() != Held {
			continue
		}
		holders = append(holders, id)
		if other, ok := byView[n.ViewID]; ok {
			return fmt.Errorf("nodes %d and %d both hold the lock in view %s", other, id, n.ViewID)
		}
		byView[n.ViewID] = id
	}
	if global && len(holders) > 1 {
		return fmt.Errorf("nodes %v all hold the lock", holders)
	}
	return nil
}

func (l *lan) holders() []uint64 {
	var hs []uint64
	for _, id := range l.IDs() {
		if l.Nodes[id].M.State() == Held {
			hs = append(hs, id)
		}
	}
	return hs
}

// quarantined returns the end of the first quarantine that holds back a
// request or a reply, zero if none.
func (l *lan) quarantined() time.Time {
	var first time.Time
	for _, id := range l.IDs() {
		m := l.Nodes[id].M
		if q := m.quiet; !q.IsZero() && (m.state == Wanted || len(m.deferred) > 0) && (first.IsZero() || q.Before(first)) {
			first = q
		}
	}
	return first
}

// drain delivers until nothing is in flight and no quarantine holds
// anything back. (A holder's lease, renewed at every tick, never stops
// its timer.)
func (l *lan) drain() {
	for {
		l.Deliveries()
		q := l.quarantined()
		if q.IsZero() {
			return
		}
		l.RunUntil(q)
	}
}

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
