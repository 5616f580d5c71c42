package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/seal"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// Options configures Run.
type Options struct {
	Config    config.Config       // resolved: ID and Iface are set
	Transport multicast.Transport // the group socket (or a simulated one)
	// Control, when set, carries the repair traffic (NACKs and repairs)
	// on a socket of its own, which the loop reads first: a repair then
	// never waits behind a backlog of data in the receiver's socket, nor
	// a NACK behind the sender's own looped-back data. Nil: everything
	// travels on Transport.
	Control multicast.Transport
	// Path, with the multicast transport, is a unicast socket on the
	// interface's address and the group's port (multicast.OpenPath) for
	// the per-peer fallback: a peer whose multicast does not reach this
	// node, or this node's theirs, is sent to by unicast as well. Nil: no
	// fallback. It must implement UnicastTransport.
	Path multicast.Transport
	// PathNotes reads the fallback's path datagrams, which peers send to
	// the port after Path's (multicast.Unicast.Repair of OpenPath's).
	PathNotes multicast.Transport
	// PreciseTimer wakes the loop with a timerfd (Linux) instead of the
	// Go runtime's timers, which round to the millisecond. Real nodes
	// want it; tests in virtual time (testing/synctest) must not use it.
	PreciseTimer bool
	Log          zerolog.Logger // already carries the node field
	Inc          uint64         // this start's incarnation (NewIncarnation)
	Seed         uint64         // protocol randomness; 0 = derived from Inc
	// Keys seal every datagram with the group key (Config.Security.Keys);
	// none: datagrams in the clear.
	Keys []seal.Key
	// Handle, when set, is called in the loop with everything the Core
	// reports, in the order it happened: views, the application's
	// messages, suspicions, the election's and the lock's events. A
	// delivery's bytes are valid only during the call. It may block,
	// which stops the node: the Group API blocks while an application
	// does not read its events, and a node stopped for a suspect timeout
	// is excluded.
	Handle func(ev *Event)
	// Replicated are the services whose state this node keeps and
	// transfers (StateOptions.Services); config state_max_size bounds it.
	Replicated []string
}

// NewIncarnation returns a fresh incarnation number: the start time in
// microseconds since the Unix epoch, which grows across restarts of the
// same node and stays below 2^53 (until the year 2255), so that every JSON
// reader reads it exactly. Within one process it never returns the same
// number twice.
func NewIncarnation() uint64 {
	incMu.Lock()
	defer incMu.Unlock()
	lastInc = max(uint64(time.Now().UnixMicro()), lastInc+1)
	return lastInc
}

var (
	incMu   sync.Mutex
	lastInc uint64 // NewIncarnation's last number
)

// Reading is done in batches of batchSize datagrams, with poolSize batches
// circulating between the reader goroutine and the loop. That bounds the
// node's receive memory: when the loop falls behind, the reader waits, and
// the kernel's socket buffer absorbs (or drops) the rest. A batch of large
// datagrams holds fewer of them (batchLen), so that a reader's buffers stay
// within poolSize·batchBytes: a node has up to four readers, and 64 buffers
// of 64 KiB in each batch were 66 MB of buffers alone.
const (
	batchSize  = 64
	poolSize   = 4
	batchBytes = 512 << 10
)

// batchLen is how many datagrams of size bytes a batch holds: batchSize,
// fewer for large datagrams (at least 4).
func batchLen(size int) int { return max(4, min(batchSize, batchBytes/(size+1))) }

type rxBatch struct {
	pkts []multicast.Packet
	n    int
}

// Node is one running huddle node: one loop owns the transport, the clock
// and the protocol core; other goroutines talk to it only through channels
// (Multicast, Do). It runs the protocols and does their I/O, nothing else:
// traffic, lock use and periodic elections for experiments are clients
// (package cmd/huddle/internal/workload) that drive it through the Group API. Make
// it with New, run it with Run.
type Node struct {
	o       Options
	sendc   chan *sendReq
	calls   chan func(*Core) // Do
	stopped chan struct{}    // closed when Run returns
	spin    *spinner         // the group socket's busy poll (busy_poll), or nil

	// Owned by the loop.
	awaitRecord  bool   // with spin: this turn sent total or safe messages
	awaitSeq     uint64 // the last of them: its delivery ends the poll
	core         *Core
	log          zerolog.Logger
	pending      []*sendReq // Multicast calls waiting for the send window
	sendBlocked  bool       // they wait now (windowFull counts the waits, not the turns)
	sendsDue     bool       // the turn's send budget ran out with calls that fit still waiting
	windowFull   uint64     // times sending had to wait for the window
	truncated    uint64
	sendErrors   uint64
	pauses       uint64 // stretches of a heartbeat or more when the loop could not read
	warned       map[string]bool
	refused      error         // the group refused this node
	lockWaiter   chan struct{} // a Lock call waiting for the lock
	lockLost     bool          // the lock was taken away since the last request
	lockMessages int           // the last entry's lock messages (Status.LockMessages)
	hist         Histograms    // Recovery aside, which the multicast layer keeps
	sentAt       []sentAt      // when own total and safe messages were sent, by seq modulo its length
	start        time.Time     // when New made the node (uptime)

	probeDone map[uint64]chan struct{} // Probe calls waiting, by the probe's ID
	uni       *unicast                 // the unicast transport's part, nil with multicast
	fb        *fallback                // the per-peer fallback, nil without Options.Path
	path      *reader                  // Options.Path's, nil without it
	pnotes    *reader                  // Options.PathNotes'; nil without it
	ctlPort   uint16                   // the multicast repair socket's port, whose sources the Core sees at the data port; 0: none
}

// sentAt is when an own message was sent (Histograms.Delivery).
type sentAt struct {
	seq uint64
	at  time.Time
}

// sentRing is how many own ordered messages in flight Histograms.Delivery
// follows at once: the default send window; past it, some go unmeasured.
const sentRing = 4096

// New returns a node ready to Run.
func New(o Options) *Node {
	seed := o.Seed
	if seed == 0 {
		seed = o.Inc
	}
	n := &Node{
		o: o, log: o.Log, warned: map[string]bool{}, start: time.Now(), probeDone: map[uint64]chan struct{}{},
		sendc: make(chan *sendReq), calls: make(chan func(*Core)), stopped: make(chan struct{}),
		core: newCore(o, seed),
	}
	if t, ok := o.Transport.(UnicastTransport); ok {
		n.uni = newUnicast(t, o.Transport.LocalAddr(), o.Config)
	}
	if t, ok := o.Path.(pathTransport); ok && n.uni == nil && o.PathNotes != nil {
		n.fb = newFallback(t, o.Config.Heartbeat.D())
	}
	if c, ok := o.Control.(*multicast.Conn); ok {
		n.ctlPort = c.LocalAddr().Port()
	}
	return n
}

func newCore(o Options, seed uint64) *Core {
	co := CoreOptionsFrom(o.Config, o.Inc, seed)
	co.State.Services = o.Replicated
	co.Keys, co.Addr = o.Keys, o.Transport.LocalAddr().String()
	co.Trace = o.Config.Log.Level == "trace" && o.Log.GetLevel() <= zerolog.TraceLevel
	// The window fits the receive buffer the kernel granted, when it
	// granted less than the configuration asked for.
	if t, ok := o.Transport.(interface{ ReceiveBuffer() int }); ok && t.ReceiveBuffer() > 0 {
		e := &co.Membership.Engine
		e.WindowBytes = min(e.WindowBytes, multicast.WindowBytes(t.ReceiveBuffer()))
	}
	// With the unicast transport, every copy of the window, one per
	// destination, fits the send buffer the kernel granted.
	if t, ok := o.Transport.(interface{ SendBuffer() int }); ok && t.SendBuffer() > 0 {
		co.Membership.Engine.FanOutBytes = multicast.WindowBytes(t.SendBuffer())
	}
	return NewCore(co, time.Now())
}

// Run runs a new node until ctx is done (see Node.Run).
func Run(ctx context.Context, o Options) error { return New(o).Run(ctx) }

// Run runs the node until ctx is done. A reader goroutine only reads
// batches of datagrams and hands them over to the loop. When ctx ends, Run
// leaves the group gracefully, closes the transport, logs the final stats
// and node.stopped with the context's cause, and returns nil; it returns
// an error only if the transport fails or the group refused the node. A
// Node runs once.
func (n *Node) Run(ctx context.Context) error {
	defer close(n.stopped)
	o, cfg := n.o, n.o.Config
	if d := cfg.Duration.D(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errDuration)
		defer cancel()
	}
	n.logStarted()
	if n.uni != nil {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		n.uni.startResolver(rctx)
	}

	rerr := make(chan error, 4)
	n.spin = newSpinner(o.Transport, cfg.BusyPoll.D())
	data := startReaderSpinning(o.Transport, cfg.ReadSize(), rerr, n.spin)
	ctl := data
	if o.Control != nil {
		ctl = startReader(o.Control, cfg.DatagramSize, rerr)
	}
	if n.fb != nil {
		n.path = startReader(o.Path, cfg.ReadSize(), rerr)
		n.pnotes = startReader(o.PathNotes, cfg.DatagramSize, rerr)
	}
	err := n.loop(ctx, ctl, data, rerr)
	if err == nil && !n.core.Left() {
		err = n.leave(ctl, data, rerr)
	}
	if err == nil {
		err = n.refused
	}
	data.stop()
	if ctl != data {
		ctl.stop()
	}
	if n.path != nil {
		n.path.stop()
		n.pnotes.stop()
	}
	n.failPending(ErrStopped)
	n.logStats("exit")
	reason := "transport failed"
	switch {
	case n.refused != nil:
		reason = "refused by the group"
	case err == nil:
		reason = causeText(ctx)
	}
	n.log.Info().Str(logs.EventKey, logs.NodeStopped).Str(logs.ReasonKey, reason).Msg("node stopped")
	return err
}

var errDuration = errors.New("duration elapsed")

// ParseOrder returns the order a configuration names (fifo, total, safe,
// causal); FIFO for anything else.
func ParseOrder(s string) wire.Order {
	switch s {
	case "total":
		return wire.Total
	case "safe":
		return wire.Safe
	case "causal":
		return wire.Causal
	}
	return wire.FIFO
}

// ErrRefused is returned by Run when the group refused this node: another
// live node has its ID, or its protocol settings differ from the group's.
var ErrRefused = membership.ErrRefused

// leave runs the loop through a graceful leave: the node asks to be
// excluded and waits, at most two suspect timeouts, until a view without
// it exists, so that its last messages are flushed to everyone.
func (n *Node) leave(ctl, data *reader, rerr <-chan error) error {
	n.core.Leave(time.Now())
	n.afterTurn()
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.o.Config.SuspectTimeout.D())
	defer cancel()
	return n.loop(ctx, ctl, data, rerr)
}

func newBatch(size int) *rxBatch {
	b := &rxBatch{pkts: make([]multicast.Packet, batchLen(size))}
	for i := range b.pkts {
		// One spare byte tells a datagram longer than size apart from one
		// that fits exactly, even where the OS does not report truncation.
		b.pkts[i].Buf = make([]byte, size+1)
	}
	return b
}

// reader is one transport's reading goroutine and the batches that
// circulate between it and the loop.
type reader struct {
	t          multicast.Transport
	full, free chan *rxBatch
	done       chan struct{}
}

func startReader(t multicast.Transport, size int, rerr chan<- error) *reader {
	return startReaderSpinning(t, size, rerr, nil)
}

// startReaderSpinning is startReader whose goroutine reads through s, the
// busy poll, when s is not nil.
func startReaderSpinning(t multicast.Transport, size int, rerr chan<- error, s *spinner) *reader {
	x := &reader{t: t, full: make(chan *rxBatch, poolSize), free: make(chan *rxBatch, poolSize), done: make(chan struct{})}
	for range poolSize {
		x.free <- newBatch(size)
	}
	read := t.ReadBatch
	if s != nil {
		read = func(pkts []multicast.Packet) (int, error) { return s.read(t, pkts) }
	}
	go func() {
		defer close(x.done)
		for b := range x.free {
			k, err := read(b.pkts)
			if err != nil {
				rerr <- err
				return
			}
			b.n = k
			x.full <- b
		}
	}()
	return x
}

// stop closes the transport, which unblocks the goroutine inside
// ReadBatch, and the pool, which unblocks it waiting for a batch.
func (x *reader) stop() {
	x.t.Close()
	close(x.free)
	<-x.done
}

func (n *Node) loop(ctx context.Context, ctl, data *reader, rerr <-chan error) error {
	// due is when the timer should fire: its deadline, or when it was
	// armed if that deadline had passed already.
	armed := n.deadline()
	due := later(armed, time.Now())
	timer := n.newTimer(time.Until(due))
	defer timer.Stop()
	pending := true // the timer is armed for `armed` and has not fired
	var stats <-chan time.Time
	if iv := n.o.Config.StatsInterval.D(); iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		stats = t.C
	}
	for !n.core.Left() {
		// Sends left over from the last turn's budget make the loop
		// turn again at once, through a ready channel rather than the
		// timer: select still takes whatever else is ready first, as
		// often as not, and no system call is spent on a timer that
		// would fire at once.
		var again <-chan struct{}
		if n.sendsDue {
			again = closedChan
		}
		var pathFull, notesFull chan *rxBatch
		if n.path != nil {
			pathFull, notesFull = n.path.full, n.pnotes.full
		}
		select {
		case <-again:
		case <-ctx.Done():
			return nil
		case err := <-rerr:
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("node: receive: %w", err)
		case b := <-ctl.full:
			n.receive(b, ctl.from(n))
			ctl.free <- b
		case b := <-pathFull:
			n.receivePath(b)
			n.path.free <- b
		case b := <-notesFull:
			n.receive(b, fromNotes)
			n.pnotes.free <- b
		case b := <-data.full:
			if ctl != data {
				n.drain(ctl) // repairs first: they unblock delivery
			}
			n.receive(b, fromGroup)
			data.free <- b
			// Take what else has arrived before answering: one turn's
			// output (an order record, acknowledgements, NACKs) then
			// covers all of it. The pool bounds the turn.
			n.drainUpTo(data, poolSize-1)
		case req := <-n.sendc:
			n.pending = append(n.pending, req)
			n.takeSends() // callers of this turn share its datagrams
		case f := <-n.calls:
			f(n.core)
		case <-timer.C():
			pending = false
			n.checkPause(&due)
			// Datagrams already read are news of peers: take them before
			// the clock judges anyone silent.
			n.drain(ctl)
			if data != ctl {
				n.drain(data)
			}
			if n.fb != nil {
				// The fallback's probe round judges whose multicast
				// arrives: everything read must be taken first.
				n.drain(n.path)
				n.drain(n.pnotes)
				n.fb.due = true
			}
			n.core.Tick(time.Now())
		case <-stats:
			n.logStats("periodic")
		}
		// Whatever woke the loop, a timer deadline long past means this
		// process did not run (frozen, starved, blocked): the peers were
		// not silent, we were deaf.
		n.checkPause(&due)
		n.sendPending()
		n.afterTurn()
		if n.awaitRecord {
			n.awaitRecord = false
			n.spin.sent() // poll for the record rather than sleep
		}
		// Re-arm only for an earlier deadline: re-arming costs a system
		// call with a timerfd, and a sending node's deadline moves later
		// on nearly every turn (the tail probe follows the last data).
		// A later one waits for the timer armed now: it fires early, the
		// Tick finds nothing due, and the timer is armed again then.
		if next := n.deadline(); !pending || next.Before(armed) {
			armed, due, pending = next, later(next, time.Now()), true
			timer.Reset(time.Until(due))
		}
	}
	return nil
}

func (n *Node) write(t multicast.Transport, out [][]byte) {
	if len(out) == 0 {
		return
	}
	start := time.Now()
	n.sendFailed(t.WriteBatch(out))
	n.noticePause(time.Since(start))
}

// sendFailed counts a failed send (send_errors) and warns of it once;
// err nil is no failure.
func (n *Node) sendFailed(err error) {
	if err != nil {
		n.sendErrors++
		n.warnOnce("send", err.Error(), netip.AddrPort{})
	}
}

// newTimer returns the loop's timer: a precise one when Options ask for it
// and the system has one, else the Go runtime's.
func (n *Node) newTimer(d time.Duration) loopTimer {
	if n.o.PreciseTimer {
		if t, err := newPreciseTimer(d); err == nil {
			return t
		}
	}
	return newGoTimer(d)
}

// deadline is when the loop must wake up without a datagram: the core's
// next timer. (Calls to Multicast left for the next turn turn the loop
// through closedChan.)
func (n *Node) deadline() time.Time {
	d := n.core.NextDeadline()
	if n.uni != nil && n.uni.probeAt.Before(d) {
		return n.uni.probeAt
	}
	if n.fb != nil && n.fb.probeAt.Before(d) {
		return n.fb.probeAt
	}
	return d
}

// closedChan is always ready to receive from.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkPause reports how far past due the loop woke as a pause, once.
func (n *Node) checkPause(due *time.Time) {
	now := time.Now()
	if now.After(*due) {
		n.noticePause(now.Sub(*due))
		*due = now
	}
}

// noticePause reports a stretch of d during which the loop could not read
// (a blocked send, a late timer) to the core, when it is long enough to
// matter for failure detection: a heartbeat.
func (n *Node) noticePause(d time.Duration) {
	if d >= n.o.Config.Heartbeat.D() {
		n.pauses++
		n.core.Paused(time.Now(), d)
	}
}

// drain processes the batches a reader has ready, without waiting.
func (n *Node) drain(x *reader) { n.drainUpTo(x, -1) }

// drainUpTo is drain of at most k batches (k < 0: no limit).
func (n *Node) drainUpTo(x *reader, k int) {
	for ; k != 0; k-- {
		select {
		case b := <-x.full:
			if x == n.path {
				n.receivePath(b)
			} else {
				n.receive(b, x.from(n))
			}
			x.free <- b
		default:
			return
		}
	}
}

// Where a batch was read: the group's socket, the repair socket, or the
// fallback's path notes socket.
type source int

const (
	fromGroup source = iota
	fromRepair
	fromNotes
)

// from says which of the node's sockets x reads.
func (x *reader) from(n *Node) source {
	switch {
	case x == n.pnotes:
		return fromNotes
	case x.t == n.o.Control && x.t != n.o.Transport:
		return fromRepair
	}
	return fromGroup
}

// receive hands a batch of the node's sockets to the Core. A multicast
// repair socket sends from the port after the group's: its sources are
// given to the Core at the group's port, so that a node is known by one
// address (the one its unicast socket, Options.Path, listens on). What
// the group's socket brings tells the fallback whose multicast arrives.
func (n *Node) receive(b *rxBatch, from source) {
	now := time.Now()
	limit := n.o.Config.DatagramSize
	if from == fromGroup {
		limit = n.o.Config.ReadSize()
	}
	for _, p := range b.pkts[:b.n] {
		if p.N > limit {
			n.truncated++
			n.warnOnce("truncated", "a datagram longer than datagram_size arrived and was dropped; every member must use the same datagram_size", p.Src)
			continue
		}
		src := p.Src
		switch {
		case n.uni != nil && !n.uni.accept(src):
			continue
		case from == fromRepair && n.ctlPort != 0 && src.Port() == n.ctlPort:
			src = netip.AddrPortFrom(src.Addr(), src.Port()-1)
		case from == fromGroup && n.fb != nil:
			n.fb.noteMulticast(src, now)
		}
		n.core.Receive(now, src, p.Buf[:p.N])
	}
}

// receivePath hands the Core what the unicast socket of the per-peer
// fallback read, less the copies of what multicast brings.
func (n *Node) receivePath(b *rxBatch) {
	now := time.Now()
	limit := n.o.Config.ReadSize()
	for _, p := range b.pkts[:b.n] {
		if p.N > limit {
			n.truncated++
			continue
		}
		if n.fb.admitUnicast(p.Src, now) {
			n.core.Receive(now, p.Src, p.Buf[:p.N])
		}
	}
}

// afterTurn takes what the Core produced in a turn of the loop, once.
// It logs the events first, in the order they happened, then sends the
// datagrams (the repair traffic on the control socket when there is one,
// the rest on the group's), then logs the deliveries that ended the
// turn's events and hands the events to Handle. Logging comes first so
// that a node killed at any moment has logged every message it sent: a
// receiver's log never holds a message its sender's log lacks.
func (n *Node) afterTurn() {
	rd := n.core.Ready()
	// The deliveries at the end of the turn's events are logged after
	// its datagrams: no datagram tells of them, and a sequencer's order
	// record, a FIFO sender's own datagram, need not wait for their
	// lines (with trace_deliveries, one write each). Lines stay in the
	// order of the events.
	logged := len(rd.Events)
	for logged > 0 && isDelivery(&rd.Events[logged-1]) {
		logged--
	}
	for i := range rd.Events[:logged] {
		n.logEvent(&rd.Events[i])
	}
	if n.uni != nil {
		n.sendFailed(n.uni.turn(n.core, &rd, time.Now(), func(key, msg string) { n.warnOnce(key, msg, netip.AddrPort{}) }))
		var err error
		rd.Repair, err = n.uni.direct(rd.Repair, rd.RepairTo)
		n.sendFailed(err)
	}
	rt := n.o.Control
	if rt == nil {
		rt = n.o.Transport
	}
	n.write(rt, rd.Repair)
	if n.uni != nil {
		n.sendFailed(n.uni.sendData(rd.Data, rd.DataTo, func(run [][]byte) { n.write(n.o.Transport, run) }))
	} else {
		n.write(n.o.Transport, rd.Data)
	}
	if n.fb != nil {
		n.fb.turn(n, &rd, time.Now())
		n.fb.write(n, rd.Repair)
		n.fb.write(n, rd.Data)
	}
	for i := logged; i < len(rd.Events); i++ {
		n.logEvent(&rd.Events[i])
	}
	if n.o.Handle != nil {
		for i := range rd.Events {
			n.o.Handle(&rd.Events[i])
		}
	}
}

// isDelivery says whether ev is a message delivered to this node.
func isDelivery(ev *Event) bool {
	return ev.Kind == MembershipEvent && ev.Membership.Kind == membership.Delivered
}

// logEvent logs one event the Core reported and acts on what the node
// keeps of it (the lock's and the probe's waiters, the histograms).
func (n *Node) logEvent(ev *Event) {
	switch ev.Kind {
	case MembershipEvent:
		n.logMembership(&ev.Membership)
	case ElectionEvent:
		n.logElection(ev.Election)
	case LockEvent:
		n.lockEvent(ev.Lock)
	case SecurityEventKind:
		n.logSecurity(ev.Security)
	case ProbeDoneEvent:
		n.probeFinished(ev.ProbeID)
	case TraceEvent:
		n.logTrace(ev.Trace)
	case SentEvent:
		n.logSend(&ev.Sent)
	case VersionEvent:
		n.logVersion(ev.Version)
	case StateTransferEvent:
		n.logState(&ev.State)
	}
}

// Do runs f in the node's loop, with its Core, and returns once f has
// run; or ctx's error, or ErrStopped, if it could not run. f must not
// block.
func (n *Node) Do(ctx context.Context, f func(*Core)) error {
	done := make(chan struct{})
	select {
	case n.calls <- func(c *Core) { f(c); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stopped:
		return ErrStopped
	}
	<-done
	return nil
}

// Stopped is closed when Run has returned.
func (n *Node) Stopped() <-chan struct{} { return n.stopped }

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c.Error()
	}
	return "stopped"
}
