package huddle

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/multicast/memnet"
	"github.com/huddle-lan/huddle/node"
)

// Order is how a message is delivered.
type Order = wire.Order

// Delivery orders (docs/design.md, guarantees 4 to 6).
const (
	// FIFO delivers each sender's messages in the order it sent them.
	FIFO = wire.FIFO
	// Total delivers one order to every member of the view, through a
	// sequencer (the view's coordinator, or a member that sends alone:
	// config sequencer); it respects FIFO too.
	Total = wire.Total
	// Safe is Total, and delivers a message only once every member of
	// the view holds it.
	Safe = wire.Safe
	// Causal delivers a message once everything its sender had
	// delivered or sent before it has been delivered: a reply never
	// before what it answers, whoever sent that. No sequencer hop; it
	// respects FIFO too.
	Causal = wire.Causal
)

// View is a group view: its ID (epoch, coordinator) and its members,
// oldest first; the first is the coordinator (and total order's first
// sequencer).
type View = membership.View

// ViewID identifies a view.
type ViewID = wire.ViewID

// Member is a member of a view: a node ID and the incarnation (start) of
// that node.
type Member = wire.Member

// Errors of the Group API.
var (
	// ErrNotInView: the node has no view (it has not joined yet, or it
	// left).
	ErrNotInView = membership.ErrNotInView
	// ErrNotPrimary: a total or safe message sent in a view that is not
	// the primary component (config quorum; View.Primary). The message is
	// not sent; FIFO messages still go. Send again once a primary view is
	// installed (a ViewChanged event with View.Primary).
	ErrNotPrimary = membership.ErrNotPrimary
	// ErrTooLarge: the payload exceeds max_message_size.
	ErrTooLarge = errors.New("huddle: payload too large")
	// ErrClosed: the group was left, or the node stopped (refused by the
	// group, or its socket failed: see Group.Err).
	ErrClosed = errors.New("huddle: group closed")
	// ErrReserved: Multicast or Send on the service of the node's own
	// election ("election"), lock ("mutex"), probe ("probe") or state
	// transfer ("huddle.state").
	ErrReserved = errors.New("huddle: the election's, the lock's and the probe's services are the node's own")
	// ErrNotMember: Send to a node that is not a member of the view.
	ErrNotMember = errors.New("huddle: not a member of the view")
	// ErrRefused: the group refused this node (its ID is taken, or its
	// settings differ from the group's; the log says which).
	ErrRefused = membership.ErrRefused
	// ErrLockBusy: Lock or TryLock while this node already wants or holds
	// the lock.
	ErrLockBusy = node.ErrLockBusy
	// ErrNotHeld: Unlock while this node neither holds nor wants the lock.
	ErrNotHeld = node.ErrNotHeld
	// ErrLockLost: Unlock after the lock was taken away while this node
	// held it (quorum mode: the view lost the majority or the lease ran
	// out; or this node was excluded from the view). Another node may
	// have held it meanwhile: what was done under it is not protected.
	ErrLockLost = node.ErrLockLost
	// ErrLockExhausted: the lock's Lamport clock reached its bound,
	// which only forged timestamps from a member cause: it grants nothing
	// more on this node.
	ErrLockExhausted = node.ErrLockExhausted
)

// EventKind says what an Event is.
type EventKind uint8

// Event kinds.
const (
	// ViewChanged: a new view is installed. Every message delivered
	// before it was sent in the view before; every message after it, up
	// to the next ViewChanged, in this one.
	ViewChanged EventKind = iota + 1
	// Delivered: a message of the service.
	Delivered
)

// Event is what a service's Events channel carries: a view change or a
// message, in the order the node delivered them.
type Event struct {
	Kind    EventKind
	View    View    // ViewChanged: the new view
	Message Message // Delivered
	state   *node.StateEvent
}

// Message is a delivered message.
type Message struct {
	From    Member // the sender
	Seq     uint64 // in the sender's stream
	View    ViewID // the view it was sent and delivered in
	Order   Order
	GSeq    uint64 // Total and Safe: its number in the view's total order, from 1
	To      uint64 // the addressee of Send; 0 for Multicast
	Payload []byte // the message's own copy
}

// EventBuffer is how many events a service's channel holds. When an
// application does not read them, the node waits for it and stops
// hearing the group; after the suspect timeout the group excludes it,
// and merges it back once it reads again. Memory stays bounded either
// way.
const EventBuffer = 1024

// MaxServiceName is the longest service name, in bytes.
const MaxServiceName = node.MaxServiceName

// Group is this node's membership of a group, with the node that runs
// it. Make one with Join or Start, with StartOn over transports of your
// own, or with Network.Join in one process. Its methods are safe for
// concurrent use.
type Group struct {
	node   *node.Node
	cfg    config.Config
	self   Member
	cancel context.CancelCauseFunc
	stop   chan struct{} // closed when the node is asked to stop: events are dropped from then on
	once   sync.Once
	done   chan struct{} // closed when the node stopped
	err    error         // why, set before done closes

	first     chan struct{} // closed at the first view
	firstOnce sync.Once

	mu       sync.Mutex
	view     View
	services map[string]*Service // every service asked for, by name
	readers  map[string]*Service // those whose Events were asked for: they get views and messages
	replicas map[string]*Replica // the replicated services (Replicated)
	closed   bool                // the node stopped: the readers' channels are closed

	undeliverable atomic.Uint64
	watching      atomic.Pointer[watcherList] // Watch's watchers; written under mu
}

// Service is a named channel of a group: its messages go only to the
// same service on the other members, so that applications, the election
// and the mutex share one group without seeing each other's messages.
type Service struct {
	group  *Group
	name   string
	events chan Event
}

// errLeft is the cause of the node's context when Leave is called.
var errLeft = errors.New("left the group")

// Join starts a node with cfg (validated and resolved: an ID from the
// interface's address when cfg.ID is 0) on the group's multicast address
// and returns once it is in a view. That first view may hold this node
// alone: members that join together, and groups that find each other,
// merge into one view a moment later (a ViewChanged event). The node logs
// to log as `huddle run` does. It stops when ctx ends or on Leave.
//
// Options: Replicated makes a service's state replicated.
func Join(ctx context.Context, cfg config.Config, log zerolog.Logger, opts ...Option) (*Group, error) {
	g, err := Start(ctx, cfg, log, opts...)
	if err != nil {
		return nil, err
	}
	if err := g.waitView(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// Start is Join that returns at once, while the node joins; Joined is
// closed once it is in a view. `huddle run` starts so: its control socket
// answers while the node joins. The errors are cfg's (config's errors,
// a key file that cannot be read or that others may read), the host's (an
// interface that is missing, down or without multicast or an IPv4
// address; exit code 1 in huddle run), and the sockets'. With a key
// (security.key or security.key_file) every datagram is sealed.
func Start(ctx context.Context, cfg config.Config, log zerolog.Logger, opts ...Option) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, err := cfg.Security.Keys()
	if err != nil {
		return nil, err
	}
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	log = log.With().Uint64(logs.NodeKey, cfg.ID).Logger()
	data, ctl, err := node.OpenSockets(cfg, log)
	if err != nil {
		return nil, err
	}
	o := node.Options{Transport: data, Control: ctl, PreciseTimer: true, Keys: keys}
	if cfg.Transport != "unicast" {
		if p, err := node.OpenPath(data, log); err != nil {
			log.Warn().Str(logs.EventKey, logs.NodeWarning).Str(logs.WhatKey, "path").Err(err).
				Msg("no unicast socket for the per-peer fallback: a peer whose multicast stops reaching this node (or this node's, it) is lost to it")
		} else {
			o.Path, o.PathNotes = p, p.Repair()
		}
	}
	return start(ctx, cfg, log, o, opts), nil
}

// StartOn is Start over transports of the caller's (an in-memory network,
// a test's) instead of the group's sockets: data carries the group's
// traffic, repair (nil: data too) the NACKs and repairs. cfg's address
// and interface are not used, and cfg.ID must be set.
func StartOn(ctx context.Context, cfg config.Config, log zerolog.Logger, data, repair Transport, opts ...Option) (*Group, error) {
	if cfg.ID == 0 {
		return nil, errors.New("huddle: a node on its own transport needs an ID (cfg.ID)")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, err := cfg.Security.Keys()
	if err != nil {
		return nil, err
	}
	return start(ctx, cfg, log.With().Uint64(logs.NodeKey, cfg.ID).Logger(), node.Options{Transport: data, Control: repair, Keys: keys}, opts), nil
}

// ReloadKeys reads the group keys again from the configuration
// (security.key_file, as a rollover changes it) and seals with the first
// from now on; every one opens. A node started without a key cannot take
// one on: that is an error.
func (g *Group) ReloadKeys(ctx context.Context) error {
	keys, err := g.cfg.Security.Keys()
	switch {
	case err != nil:
		return err
	case len(keys) == 0:
		return errors.New("huddle: the configuration has no key to reload")
	}
	return closedErr(g.node.SetKeys(ctx, keys))
}

func start(ctx context.Context, cfg config.Config, log zerolog.Logger, o node.Options, opts []Option) *Group {
	inc := node.NewIncarnation()
	g := &Group{cfg: cfg, self: Member{ID: cfg.ID, Inc: inc}, stop: make(chan struct{}), done: make(chan struct{}), first: make(chan struct{}),
		services: map[string]*Service{}, readers: map[string]*Service{}, replicas: map[string]*Replica{}}
	var op options
	for _, f := range opts {
		f(&op)
	}
	for _, r := range op.replicas {
		o.Replicated = append(o.Replicated, r.service)
	}
	o.Config, o.Log, o.Inc, o.Handle = cfg, log, inc, g.handle
	g.node = node.New(o)
	g.startReplicas(op.replicas)
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	g.cancel = func(cause error) {
		g.once.Do(func() { close(g.stop) })
		cancel(cause)
	}
	stop := context.AfterFunc(ctx, func() { g.cancel(context.Cause(ctx)) })
	go func() {
		err := g.node.Run(runCtx)
		stop()
		if err == nil {
			err = ErrClosed
		}
		g.err = err
		g.closeServices()
		close(g.done)
	}()
	return g
}

// waitView waits for the node's first view.
func (g *Group) waitView(ctx context.Context) error {
	select {
	case <-g.first:
		return nil
	case <-g.done:
		return g.err
	case <-ctx.Done():
		<-g.done
		return ctx.Err()
	}
}

// Joined is closed once the node is in its first view.
func (g *Group) Joined() <-chan struct{} { return g.first }

// handle runs in the node's loop with everything the node reports, in
// order: it hands views and messages to the services.
func (g *Group) handle(ev *node.Event) {
	g.watch(ev)
	if ev.Kind == node.StateTransferEvent {
		g.stateEvent(&ev.State)
		return
	}
	if ev.Kind != node.MembershipEvent {
		return
	}
	switch m := &ev.Membership; m.Kind {
	case membership.ViewInstalled:
		g.mu.Lock()
		g.view = m.View
		svcs := make([]*Service, 0, len(g.readers))
		for _, s := range g.readers {
			svcs = append(svcs, s)
		}
		g.mu.Unlock()
		g.firstOnce.Do(func() { close(g.first) })
		for _, s := range svcs {
			s.put(Event{Kind: ViewChanged, View: m.View})
		}
	case membership.Delivered:
		d := &m.Delivery
		g.mu.Lock()
		s := g.readers[string(d.Service)]
		g.mu.Unlock()
		if s == nil {
			g.undeliverable.Add(1) // nobody reads this service here (yet)
			return
		}
		s.put(Event{Kind: Delivered, Message: Message{From: Member{ID: d.Source, Inc: d.Inc}, Seq: d.Seq, View: d.View,
			Order: d.Order, GSeq: d.GSeq, To: d.Dest, Payload: append([]byte(nil), d.Payload...)}})
	}
}

// put hands ev to the application, waiting while its channel is full,
// unless the node is stopping.
func (s *Service) put(ev Event) {
	select {
	case s.events <- ev:
	case <-s.group.stop:
	}
}

// Service returns the named service of the group (the same one for the
// same name). Election, mutex and the probe use "election", "mutex" and
// "probe"; "" is the
// default application service, the one `huddle send` and the traffic of
// `huddle run --send-rate` use. It panics on a name longer than
// MaxServiceName bytes.
func (g *Group) Service(name string) *Service {
	if len(name) > MaxServiceName {
		panic(fmt.Sprintf("huddle: service name of %d bytes (at most %d)", len(name), MaxServiceName))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.services[name]; s != nil {
		return s
	}
	s := &Service{group: g, name: name}
	g.services[name] = s
	return s
}

// Name returns the service's name.
func (s *Service) Name() string { return s.name }

// Events returns the service's events: views and its messages, in order,
// starting with the view installed when Events was first called. A
// service only sends needs no reader; messages for a service whose Events
// this node never asked for are dropped (and counted as undeliverable):
// ask before its traffic starts, or expect to miss its beginning. The
// channel is closed when the node stops; when nobody reads it, the node
// waits (see EventBuffer).
func (s *Service) Events() <-chan Event {
	g := s.group
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.events == nil {
		s.events = make(chan Event, EventBuffer)
		if len(g.view.Members) > 0 {
			s.events <- Event{Kind: ViewChanged, View: g.view}
		}
		if g.closed {
			close(s.events)
		} else {
			g.readers[s.name] = s
		}
	}
	return s.events
}

// Multicast sends payload to every member of the view, this node
// included, delivered in the given order. It returns the message's
// sequence number once the node has sent it. While the send window is
// full, or a view change holds sends, it waits, until ctx ends. It fails
// with ErrTooLarge, ErrNotInView or ErrClosed, and a total or safe message
// with ErrNotPrimary in a view that is not the primary component. The
// payload is copied.
func (s *Service) Multicast(ctx context.Context, payload []byte, order Order) (uint64, error) {
	return s.send(ctx, payload, order, 0)
}

// Send sends payload to one member of the view, reliably and in FIFO
// order with this node's other messages (the other members receive it as
// part of the stream but do not deliver it). It fails like Multicast, and
// with ErrNotMember when to is not in the view.
func (s *Service) Send(ctx context.Context, to uint64, payload []byte) (uint64, error) {
	if !s.group.View().Has(to) {
		return 0, fmt.Errorf("%w: node %d", ErrNotMember, to)
	}
	return s.send(ctx, payload, FIFO, to)
}

func (s *Service) send(ctx context.Context, payload []byte, order Order, to uint64) (uint64, error) {
	if err := s.canSend(payload); err != nil {
		return 0, err
	}
	seq, err := s.group.node.Send(ctx, s.nameBytes(), payload, order, to)
	if err != nil {
		return 0, sendErr(err)
	}
	return seq, nil
}

// MulticastBatch multicasts payloads in order, as Multicast does each of
// them, in one turn of the node's loop, so that they share datagrams as
// far as they fit (a turn sends a bounded number of messages; the rest go
// in the next ones). It returns the first message's sequence number (the
// others follow it, one each) and how many were sent: all of them, or
// those sent before ctx ended or an error, with the error. Use it to send
// many small messages fast; the payloads are copied.
func (s *Service) MulticastBatch(ctx context.Context, payloads [][]byte, order Order) (first uint64, sent int, err error) {
	if err := s.canSend(payloads...); err != nil {
		return 0, 0, err
	}
	first, sent, err = s.group.node.MulticastBatch(ctx, s.nameBytes(), payloads, order)
	return first, sent, sendErr(err)
}

// canSend checks what a send can tell before it reaches the node: the
// service is the application's, every payload fits max_message_size, the
// node runs and is in a view.
func (s *Service) canSend(payloads ...[]byte) error {
	if node.Reserved(s.name) {
		return fmt.Errorf("%w: %q", ErrReserved, s.name)
	}
	g := s.group
	for _, p := range payloads {
		if len(p) > g.cfg.MaxMessageSize {
			return fmt.Errorf("%w: %d bytes (max_message_size is %d)", ErrTooLarge, len(p), g.cfg.MaxMessageSize)
		}
	}
	select {
	case <-g.done:
		return ErrClosed
	default:
	}
	if len(g.View().Members) == 0 {
		return ErrNotInView
	}
	return nil
}

// sendErr turns the node's errors into the Group API's.
func sendErr(err error) error {
	switch {
	case errors.Is(err, node.ErrStopped), errors.Is(err, membership.ErrLeft):
		return ErrClosed
	case errors.Is(err, multicast.ErrTooLarge):
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return err
}

// nameBytes is the service's name as the node sends it.
func (s *Service) nameBytes() []byte {
	if s.name == "" {
		return nil
	}
	return []byte(s.name)
}

// View returns the installed view.
func (g *Group) View() View {
	g.mu.Lock()
	defer g.mu.Unlock()
	return View{ID: g.view.ID, Members: append([]Member(nil), g.view.Members...), Primary: g.view.Primary}
}

// Leader returns the leader the group's election chose, as this node
// knows it (0: none yet), and the election round that chose it. The
// election (ring or bully, config election.algorithm) runs by itself:
// when the group has no leader, when the leader leaves the view, when a
// higher node joins, and on Elect.
func (g *Group) Leader(ctx context.Context) (leader, round uint64, err error) {
	leader, round, err = g.node.Leader(ctx)
	return leader, round, closedErr(err)
}

// Elect starts an election from this node and returns at once; Leader
// tells the outcome once the round is done. Started is false when this
// node already takes part in an election, or has no view yet.
func (g *Group) Elect(ctx context.Context) (ElectResult, error) {
	res, err := g.node.Elect(ctx)
	return res, closedErr(err)
}

// ElectResult is what Elect reports: whether this node started an
// election (false while it takes part in one already, or before its first
// view), the algorithm, and the leader it knew when it asked (0: none).
type ElectResult = node.ElectResult

// Status is what the node reports about itself: identity, view, leader,
// the lock, and its counters (those of the node.stats log event).
type Status = node.Status

// StatusMember is one member of the view in a Status: its ID and incarnation.
type StatusMember = node.Member

// Status returns the node's status, read in its loop.
func (g *Group) Status(ctx context.Context) (Status, error) {
	st, err := g.node.Status(ctx)
	return st, closedErr(err)
}

// The states of Status.State.
const (
	StateJoining  = node.StateJoining  // no view installed yet
	StateMember   = node.StateMember   // in a view, sending
	StateChanging = node.StateChanging // in a view, sends held by a view change (flush) or a leave
)

// ParseOrder returns the order named "fifo", "total", "safe" or "causal";
// false for any other name.
func ParseOrder(name string) (Order, bool) {
	o := node.ParseOrder(name)
	return o, o.String() == name
}

// Counters are a node's counters in the order node.stats logs them
// (Status.Counters); each Counter is a name and a number.
type (
	Counters = node.Counters
	Counter  = node.Counter
)

// Histograms are the durations a node measures (Status.Histograms), each
// a Histogram: within 6.25 %, with its count and sum.
type (
	Histograms = node.Histograms
	Histogram  = multicast.Histogram
)

// Reserved reports whether service is one of the node's own protocols'
// (the election's, the lock's and the probe's): a program may not send on
// it, and a watcher may follow it.
func Reserved(service string) bool { return node.Reserved(service) }

// Transport is what StartOn runs a node over: a socket of the caller's,
// an in-memory network, a test's. Packet is one datagram it reads.
type (
	Transport = multicast.Transport
	Packet    = multicast.Packet
)

// Drop is the node's built-in fault injection, an experiment tool: a
// share of the datagrams it receives dropped before the protocol sees
// them (see the drop.* settings).
type Drop = node.Drop

// SetDrop replaces the node's fault injection rule and returns the one it
// replaced; a Drop with Rate 0 turns it off.
func (g *Group) SetDrop(ctx context.Context, d Drop) (Drop, error) {
	old, err := g.node.SetDrop(ctx, d)
	return old, closedErr(err)
}

// Lock acquires the group's lock (over the view, on the service "mutex",
// with the group's mutex.algorithm: Ricart–Agrawala, the central server or
// the token ring): it returns once this node holds it, or with ctx's
// error, the request withdrawn (the replies this node deferred meanwhile
// go out all the same). One lock per group; ErrLockBusy while this node
// already wants or holds it.
//
// At most one member of a view holds the lock. Without mutex.quorum, the
// two sides of a partition can each grant it, and both holders keep it
// until they unlock. With mutex.quorum = N it is granted only while this
// node's view holds a majority of N members and it heard from a majority
// within the suspect timeout; a holder that loses either loses the lock
// (logged as mutex.released with lost, and Unlock returns ErrLockLost),
// so no two nodes anywhere hold it. Like any lease, this assumes the
// holder runs: one that is paused (SIGSTOP, a swapped-out machine) learns
// of the loss only when it runs again, so a resource that must never see
// two writers needs a check of its own (a fencing token).
func (g *Group) Lock(ctx context.Context) error {
	return closedErr(g.node.Lock(ctx))
}

// TryLock is Lock that reports ctx ending before the grant as false.
func (g *Group) TryLock(ctx context.Context) (bool, error) {
	ok, err := g.node.TryLock(ctx)
	return ok, closedErr(err)
}

// Unlock releases the lock this node holds: ErrLockLost if it was taken
// away since Lock returned, ErrNotHeld if this node neither holds nor
// wants it.
func (g *Group) Unlock() error {
	select {
	case <-g.done:
		return ErrClosed
	default:
	}
	return closedErr(g.node.Unlock(context.Background()))
}

// closedErr turns a stopped node's errors into ErrClosed.
func closedErr(err error) error {
	if errors.Is(err, node.ErrStopped) || errors.Is(err, membership.ErrLeft) {
		return ErrClosed
	}
	return err
}

// Self returns this node: its ID and incarnation.
func (g *Group) Self() Member { return g.self }

// Undeliverable counts the messages dropped because this node had not
// opened their service.
func (g *Group) Undeliverable() uint64 { return g.undeliverable.Load() }

// Leave leaves the group gracefully: the node asks to be excluded and
// waits (at most about a suspect timeout) for the view without it, then
// stops. It returns once the node stopped, or with ctx's error. The
// services' channels are closed then.
func (g *Group) Leave(ctx context.Context) error {
	g.cancel(errLeft)
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed when the node has stopped: after Leave, when the
// context given to Join ended, or when it failed (see Err).
func (g *Group) Done() <-chan struct{} { return g.done }

// Err returns why the node stopped once Done is closed: ErrClosed after a
// Leave or the end of Join's context, ErrRefused if the group refused
// it, or its socket's error.
func (g *Group) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}

// closeServices closes the services' channels once the node stopped
// (its loop, which hands them events, is over).
func (g *Group) closeServices() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.closeWatchers()
	for name, s := range g.readers {
		close(s.events)
		delete(g.readers, name)
	}
}

// Network is an in-process network: groups joined on it exchange their
// datagrams in memory, with optional loss, and never touch a socket. It
// is for tests, examples and demos (JGroups calls this SHARED_LOOPBACK).
type Network struct {
	data, ctl *memnet.Net // the group's port and the repair port
	hosts     atomic.Uint32

	mu    sync.Mutex
	addrs map[*Group]netip.AddrPort // each group's host
}

// NewNetwork returns an in-process network that drops each datagram
// copy with probability loss.
func NewNetwork(loss float64) *Network {
	return &Network{data: memnet.New(netmodel.Options{Loss: loss}), ctl: memnet.New(netmodel.Options{Seed: 1, Loss: loss})}
}

// Join is huddle.Join on the in-process network: cfg's address and
// interface are not used, and cfg.ID must be set.
func (n *Network) Join(ctx context.Context, cfg config.Config, log zerolog.Logger, opts ...Option) (*Group, error) {
	h := n.hosts.Add(1) // a host of its own, as another machine would be
	a := netmodel.Addr(uint64(h))
	g, err := StartOn(ctx, cfg, log, n.data.Endpoint(a), n.ctl.Endpoint(a), opts...)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	if n.addrs == nil {
		n.addrs = map[*Group]netip.AddrPort{}
	}
	n.addrs[g] = a
	n.mu.Unlock()
	if err := g.waitView(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// Partition cuts the network into sides: a group hears only the groups
// on its side. The groups not listed, and those that join later, form
// one more side. It replaces any earlier partition; Heal ends it. Use it
// to see what an application does when its group splits and merges.
func (n *Network) Partition(sides ...[]*Group) {
	n.mu.Lock()
	defer n.mu.Unlock()
	as := make([][]netip.AddrPort, len(sides))
	for i, side := range sides {
		for _, g := range side {
			if a, ok := n.addrs[g]; ok {
				as[i] = append(as[i], a)
			}
		}
	}
	n.data.Partition(as...)
	n.ctl.Partition(as...)
}

// Heal ends a partition.
func (n *Network) Heal() {
	n.data.Heal()
	n.ctl.Heal()
}
