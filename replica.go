package huddle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/huddle-lan/huddle/node"
)

// StateMachine is the state a replicated service keeps from its messages
// (Replicated). Apply, Snapshot and Restore are called from one goroutine,
// in the order of the service's deliveries; the state they share needs a
// lock only against the application's own readers.
//
// For the members' states to agree, send the service's messages in total
// or safe order (huddle.Total, huddle.Safe): every member applies those in
// one order. Outside the primary component they fail with ErrNotPrimary,
// so that a side cut off from it does not change the group's state.
type StateMachine interface {
	// Apply changes the state by a delivered message of the service.
	Apply(m Message)
	// Snapshot writes the whole state. The state is that of the moment
	// Snapshot is called, which is a view's cut: keep no reference to it
	// that later Applies would change while the writer still reads it.
	Snapshot(w io.Writer) error
	// Restore replaces the whole state by one Snapshot wrote.
	Restore(r io.Reader) error
}

// A StateMachine that also has a method ViewChanged(View) is told of every
// view, in order with Apply, before the view's first delivery: its state
// is then that of the view's cut (unless View.WaitsForState says this
// node waits for the group's).

// Merger is a StateMachine that keeps what its side did apart when it
// comes back from a partition, rather than losing it.
//
// A member whose state was the group's and then is not (it was on a side
// of a partition that was not the primary component, or it was excluded
// and merged back) takes the group's state, as a joiner does. By default
// that state replaces its own (Restore): what its side applied while
// apart the group never had, and it is gone. A StateMachine that is also
// a Merger gets the group's state through Merge instead, called in order
// with Apply as Restore is. Merge must leave the group's state, as
// Restore would (every other member holds it), and returns what of its
// own the group should have too, as messages of the service: the replica
// multicasts them in total order, in order, once Merge returns (again
// after a view change that interrupts it), so that every member, this one
// included, applies them alike. A node that joins or restarts has no state
// of its own to keep and is restored, never merged.
type Merger interface {
	Merge(group io.Reader) (resend [][]byte, err error)
}

// Option is an option of Join, Start, StartOn and Network.Join.
type Option func(*options)

type options struct {
	replicas []replicaSpec
}

type replicaSpec struct {
	service string
	sm      StateMachine
}

// Replicated makes service a replicated service of the group
// (docs/design.md, "State transfer"): sm applies its messages, and a
// member whose state is not the group's (it joins, it restarted, it was
// on the other side of a partition) takes the group's state from a member
// that has it: a snapshot taken exactly at the cut of the view that
// admits it, restored before the service's first delivery in that view,
// so that nothing is applied twice and nothing missed. The snapshot goes
// in pieces over the group's own reliable, sealed streams, at most
// state_max_size bytes. Every member of a group must replicate the same
// services. The service's Events belong to its Replica.
func Replicated(service string, sm StateMachine) Option {
	return func(o *options) { o.replicas = append(o.replicas, replicaSpec{service, sm}) }
}

// Replica is a replicated service of this node (Replicated): whether its
// state is the group's yet, and what went wrong.
type Replica struct {
	group   *Group
	service *Service
	sm      StateMachine
	max     int64

	current chan struct{}
	once    sync.Once
	again   chan struct{} // a view changed: a resend that failed may go on (Merger)
	mu      sync.Mutex
	isCur   bool
	err     error
}

// Replica returns the replicated service name (see Replicated); nil if
// name is not one.
func (g *Group) Replica(name string) *Replica {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.replicas[name]
}

// Current is closed once this node's state of the service is the group's
// for the first time: installed by a state transfer, or found to be the
// group's.
func (r *Replica) Current() <-chan struct{} { return r.current }

// IsCurrent reports whether this node's state of the service is the
// group's now. It is not while a transfer to it is under way: after a
// restart, or a merge with a primary component that went on without it.
func (r *Replica) IsCurrent() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isCur
}

// Err returns the last failure of a state transfer to this node (the node
// stays behind, and tries again at the next view), or of the
// application's Snapshot or Restore; nil when none.
func (r *Replica) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// The state transfer's events on a replicated service's channel, which
// its Replica takes (Event.state).
const (
	stateWanted EventKind = 200 + iota
	stateInstalled
	stateCurrent
	stateFailed
)

// startReplicas registers the replicated services' readers before the
// node runs, so that no delivery comes before them, and starts each one's
// goroutine.
func (g *Group) startReplicas(specs []replicaSpec) {
	for _, spec := range specs {
		s := g.Service(spec.service)
		r := &Replica{group: g, service: s, sm: spec.sm, max: int64(g.cfg.StateMaxSize), current: make(chan struct{}), again: make(chan struct{}, 1)}
		g.replicas[spec.service] = r
		events := s.Events()
		go r.run(events)
	}
}

// stateEvent hands a state transfer's event to its service's replica, in
// order with the service's deliveries.
func (g *Group) stateEvent(e *node.StateEvent) {
	var k EventKind
	switch e.Kind {
	case node.StateWanted:
		k = stateWanted
	case node.StateInstalled:
		k = stateInstalled
	case node.StateCurrent:
		k = stateCurrent
	case node.StateFailed:
		k = stateFailed
	default:
		return
	}
	g.mu.Lock()
	s := g.readers[e.Service]
	g.mu.Unlock()
	if s != nil {
		c := *e // Data is the event's own (node.StateEvent): no copy
		s.put(Event{Kind: k, state: &c})
	}
}

// run applies the service's events to the state machine until the node
// stops.
func (r *Replica) run(events <-chan Event) {
	for ev := range events {
		switch ev.Kind {
		case ViewChanged:
			if ev.View.WaitsForState(r.group.self.ID) {
				r.setCurrent(false, nil)
			}
			select {
			case r.again <- struct{}{}:
			default:
			}
			if w, ok := r.sm.(interface{ ViewChanged(View) }); ok {
				w.ViewChanged(ev.View)
			}
		case Delivered:
			r.sm.Apply(ev.Message)
		case stateWanted:
			r.provide(ev.state)
		case stateInstalled:
			r.install(ev.state)
		case stateCurrent:
			r.setCurrent(true, nil)
		case stateFailed:
			r.setErr(fmt.Errorf("huddle: state transfer of %s in view %v: %s", r.service.name, ev.state.View, ev.state.Reason))
		}
	}
}

// install hands the group's state to the state machine: Restore, or
// Merge when this node's own state was the group's before (Merger).
func (r *Replica) install(e *node.StateEvent) {
	m, merges := r.sm.(Merger)
	select {
	case <-r.current:
	default:
		merges = false // it never had the group's state: nothing of its own to keep
	}
	if !merges {
		if err := r.sm.Restore(bytes.NewReader(e.Data)); err != nil {
			r.setCurrent(false, fmt.Errorf("huddle: restoring the state of %s from node %d: %w", r.service.name, e.From, err))
			return
		}
		r.setCurrent(true, nil)
		return
	}
	resend, err := m.Merge(bytes.NewReader(e.Data))
	if err != nil {
		r.setCurrent(false, fmt.Errorf("huddle: merging the state of %s from node %d: %w", r.service.name, e.From, err))
		return
	}
	r.setCurrent(true, nil)
	if len(resend) > 0 {
		go r.resend(resend)
	}
}

// resend multicasts what Merge kept, in total order and in order. A send
// refused outside the view or the primary component waits for the next
// view; the others are given up and recorded (Err).
func (r *Replica) resend(payloads [][]byte) {
	for _, p := range payloads {
		for {
			_, err := r.service.Multicast(context.Background(), p, Total)
			if err == nil {
				break
			}
			if errors.Is(err, ErrNotPrimary) || errors.Is(err, ErrNotInView) {
				select {
				case <-r.again:
					continue
				case <-r.group.stop:
					return
				}
			}
			if !errors.Is(err, ErrClosed) {
				r.setErr(fmt.Errorf("huddle: resending what Merge kept of %s: %w", r.service.name, err))
				break
			}
			return
		}
	}
}

// provide takes the snapshot at this point of the service's deliveries
// (the view's cut) and hands it to the node, which sends it in pieces.
// The handing runs apart: the node's loop may be waiting to hand this
// goroutine more events.
func (r *Replica) provide(e *node.StateEvent) {
	var buf limited
	buf.max = r.max
	err := r.sm.Snapshot(&buf)
	if err != nil {
		r.setErr(fmt.Errorf("huddle: snapshot of %s: %w", r.service.name, err))
	}
	data := buf.Bytes()
	go func() {
		sum := sha256.Sum256(data) // here, not on the node's loop
		r.group.node.Do(context.Background(), func(c *node.Core) {
			c.ProvideStateSum(time.Now(), e.Service, e.View, data, sum, err)
		})
	}()
}

func (r *Replica) setCurrent(cur bool, err error) {
	r.mu.Lock()
	r.isCur = cur
	if err != nil {
		r.err = err
	}
	r.mu.Unlock()
	if cur {
		r.once.Do(func() { close(r.current) })
	}
}

func (r *Replica) setErr(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// limited is a buffer that refuses to grow past max bytes.
type limited struct {
	bytes.Buffer
	max int64
}

var errStateTooLarge = errors.New("the state exceeds state_max_size")

func (l *limited) Write(p []byte) (int, error) {
	if int64(l.Len()+len(p)) > l.max {
		return 0, fmt.Errorf("%w (%d bytes)", errStateTooLarge, l.max)
	}
	return l.Buffer.Write(p)
}
