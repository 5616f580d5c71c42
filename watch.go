package huddle

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/mutex"
	"github.com/huddle-lan/huddle/node"
)

// ProbeResult is a group probe's result: the asking node's view and one
// row per member, in the view's order.
type ProbeResult = node.ProbeResult

// ProbeInfo is what one member reports of itself to a probe.
type ProbeInfo = node.ProbeInfo

// ProbeRow is one member of the asker's view in a ProbeResult.
type ProbeRow = node.ProbeRow

// ErrProbeBusy: 16 probes of this node are waiting already.
var ErrProbeBusy = node.ErrProbeBusy

// Probe asks every member of the view for a summary of itself (ID,
// address, view, role, uptime, counters, lock and leader), over the
// group, and returns the answers once every member answered or when ctx
// ends: give it a deadline. Members that did not answer by then have
// Answered false. `huddle status --group` prints it. ErrNotInView before
// the first view.
func (g *Group) Probe(ctx context.Context) (ProbeResult, error) {
	res, err := g.node.Probe(ctx)
	return res, closedErr(err)
}

// WatchEvent is one thing a node saw, as Watch reports it. Event is the
// name of the log event it matches (docs/logs.md): view.installed,
// member.suspected, member.refused, member.excluded, leader.changed,
// mutex.requested, mutex.acquired, mutex.released, mutex.withdrawn, or
// deliver (a message of a watched service); watch.dropped says that Count
// events were dropped before this one because the watcher fell behind.
// Snapshot marks the events that open a watch: the state the node was in
// when it began, not a change.
type WatchEvent struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	Snapshot bool      `json:"snapshot,omitempty"`
	View     string    `json:"view,omitempty"`
	Members  []uint64  `json:"members,omitempty"` // view.installed
	Joined   []uint64  `json:"joined,omitempty"`
	Left     []uint64  `json:"left,omitempty"`
	Crashed  []uint64  `json:"crashed,omitempty"`
	Primary  *bool     `json:"primary,omitempty"`   // view.installed: the view is the primary component
	Member   uint64    `json:"member,omitempty"`    // member.suspected, member.refused: who
	Silent   float64   `json:"silent_ms,omitempty"` // member.suspected: heard last this long ago
	Setting  string    `json:"setting,omitempty"`   // member.refused: the setting that differs
	Leader   uint64    `json:"leader,omitempty"`    // leader.changed
	Round    uint64    `json:"round,omitempty"`     // leader.changed
	Node     uint64    `json:"node,omitempty"`      // mutex.*: this node, which wants, holds or released the lock
	Lost     bool      `json:"lost,omitempty"`      // mutex.released: taken away
	WaitMS   float64   `json:"wait_ms,omitempty"`   // mutex.acquired
	Service  string    `json:"service,omitempty"`   // deliver
	From     uint64    `json:"from,omitempty"`      // deliver
	Seq      uint64    `json:"seq,omitempty"`
	Order    string    `json:"order,omitempty"`
	GSeq     uint64    `json:"gseq,omitempty"`
	Payload  []byte    `json:"payload,omitempty"` // deliver: the message (base64 in JSON)
	Count    uint64    `json:"count,omitempty"`   // watch.dropped
}

// WatchBuffer is how many events a Watcher holds for its reader; past
// that, events are dropped and counted, never waited for: a slow watcher
// does not slow the node.
const WatchBuffer = 1024

// Watcher receives what its node sees as it happens (Group.Watch).
type Watcher struct {
	g        *Group
	services map[string]bool
	c        chan WatchEvent
	dropped  atomic.Uint64
	once     sync.Once
}

// Watch returns a watcher of this node's views, suspicions, refusals,
// leaders and lock events, and of the deliveries of the services named
// (none: no deliveries). Its first events, each with Snapshot set, are
// the node's state as the watch begins: its view (view.installed, when it
// is in one), the leader it knows (leader.changed, when it knows one) and
// its part in the lock (mutex.acquired when it holds it, mutex.requested
// when it wants it, else mutex.released), in that order; every later
// event is a change. Watching takes nothing from the services' own
// readers. Close it when done; it is closed when the node stops.
func (g *Group) Watch(services ...string) *Watcher {
	w := &Watcher{g: g, services: map[string]bool{}, c: make(chan WatchEvent, WatchBuffer)}
	for _, s := range services {
		w.services[s] = true
	}
	// In the loop, between two of its turns: the state read is the one
	// the next change starts from, so none is missed or told twice.
	watching := false
	g.node.Do(context.Background(), func(c *node.Core) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.closed {
			return
		}
		for _, ev := range g.snapshot(c) {
			w.put(ev)
		}
		ws := slices.Clone(g.watchers())
		g.watching.Store(&watcherList{append(ws, w)})
		watching = true
	})
	if !watching { // the node stopped
		w.close()
	}
	return w
}

// snapshot describes the node's state as watch events; only the loop may
// call it, with its Core.
func (g *Group) snapshot(c *node.Core) []WatchEvent {
	now := time.Now()
	v := c.View()
	view := v.ID.String()
	var out []WatchEvent
	if len(v.Members) > 0 {
		out = append(out, WatchEvent{Event: logs.ViewInstalled, View: view, Members: v.IDs(), Primary: &v.Primary})
	}
	if leader, round := c.Leader(); leader != 0 {
		out = append(out, WatchEvent{Event: logs.LeaderChanged, View: view, Leader: leader, Round: round})
	}
	lock := WatchEvent{Event: logs.MutexReleased, View: view, Node: g.self.ID}
	switch c.LockState() {
	case mutex.Held:
		lock.Event = logs.MutexAcquired
	case mutex.Wanted:
		lock.Event = logs.MutexRequested
	}
	out = append(out, lock)
	for i := range out {
		out[i].Time, out[i].Snapshot = now, true
	}
	return out
}

// C is the watcher's channel of events, in the order the node saw them.
func (w *Watcher) C() <-chan WatchEvent { return w.c }

// Dropped is how many events were dropped because the reader fell behind.
func (w *Watcher) Dropped() uint64 { return w.dropped.Load() }

// Close stops the watcher and closes its channel.
func (w *Watcher) Close() {
	g := w.g
	g.mu.Lock()
	defer g.mu.Unlock()
	ws := g.watchers()
	if i := slices.Index(ws, w); i >= 0 {
		g.watching.Store(&watcherList{slices.Delete(slices.Clone(ws), i, i+1)})
		w.close()
	}
}

func (w *Watcher) close() { w.once.Do(func() { close(w.c) }) }

// put hands ev to the watcher, or drops it when the reader is behind.
func (w *Watcher) put(ev WatchEvent) {
	select {
	case w.c <- ev:
	default:
		w.dropped.Add(1)
	}
}

// watcherList is the watchers, replaced whole on a change so that the
// loop reads it without a lock.
type watcherList struct{ ws []*Watcher }

func (g *Group) watchers() []*Watcher {
	if l := g.watching.Load(); l != nil {
		return l.ws
	}
	return nil
}

// closeWatchers closes every watcher; g.mu is held.
func (g *Group) closeWatchers() {
	for _, w := range g.watchers() {
		w.close()
	}
	g.watching.Store(nil)
}

// watch hands what the node reports to the watchers; it runs in the
// node's loop, and costs one atomic load when nobody watches.
func (g *Group) watch(ev *node.Event) {
	ws := g.watchers()
	if len(ws) == 0 {
		return
	}
	now := time.Now()
	var we WatchEvent
	switch ev.Kind {
	case node.MembershipEvent:
		m := &ev.Membership
		switch m.Kind {
		case membership.ViewInstalled:
			primary := m.View.Primary
			we = WatchEvent{Event: logs.ViewInstalled, View: m.View.ID.String(), Members: m.View.IDs(),
				Joined: m.Joined, Left: m.Left, Crashed: m.Crashed, Primary: &primary}
		case membership.Suspected:
			we = WatchEvent{Event: logs.MemberSuspected, Member: m.Member, Silent: float64(m.Silent.Microseconds()) / 1000}
		case membership.Refused:
			we = WatchEvent{Event: logs.MemberRefused, Member: m.Member, Setting: m.Setting}
		case membership.Excluded:
			we = WatchEvent{Event: logs.MemberExcluded, Member: g.self.ID}
		case membership.Delivered:
			d := &m.Delivery
			for _, w := range ws {
				if w.services[string(d.Service)] {
					w.put(WatchEvent{Time: now, Event: logs.Deliver, View: d.View.String(), Service: string(d.Service),
						From: d.Source, Seq: d.Seq, Order: d.Order.String(), GSeq: d.GSeq, Payload: append([]byte(nil), d.Payload...)})
				}
			}
			return
		default:
			return
		}
	case node.ElectionEvent:
		e := ev.Election
		if e.Kind != election.LeaderChanged {
			return
		}
		we = WatchEvent{Event: logs.LeaderChanged, View: e.View, Leader: e.Leader, Round: e.Round}
	case node.LockEvent:
		l := ev.Lock
		we = WatchEvent{View: l.View, Node: g.self.ID}
		switch l.Kind {
		case mutex.Requested:
			we.Event = logs.MutexRequested
		case mutex.Acquired:
			we.Event, we.WaitMS = logs.MutexAcquired, float64(l.Wait.Microseconds())/1000
		case mutex.Exited:
			we.Event, we.Lost = logs.MutexReleased, l.Lost
		case mutex.Withdrawn:
			we.Event = logs.MutexWithdrawn
		default:
			return
		}
	default:
		return
	}
	we.Time = now
	for _, w := range ws {
		w.put(we)
	}
}
