package node

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
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
	// PreciseTimer wakes the loop with a timerfd (Linux) instead of the
	// Go runtime's timers, which round to the millisecond. Real nodes
	// want it; tests in virtual time (testing/synctest) must not use it.
	PreciseTimer bool
	Log          zerolog.Logger // already carries the node field
	Inc          uint64         // this start's incarnation (NewIncarnation)
	Seed         uint64         // protocol randomness; 0 = derived from Inc
	// Handle, when set, is called in the loop with every delivery and
	// every event, in the order they happened (an event's Delivered
	// field is 0 here). Deliveries' bytes are valid only during the call.
	// It may block, which stops the node: the Group API blocks while an
	// application does not read its events, and a node stopped for a
	// suspect timeout is excluded.
	Handle func(d *membership.Delivery, ev *membership.Event)
}

// NewIncarnation returns a fresh incarnation number: the start time in
// microseconds since the Unix epoch, which grows across restarts of the
// same node and stays below 2^53 (until the year 2255), so that every JSON
// reader, jq's float64 numbers included, reads it exactly. One process
// never gets the same number twice: when the clock did not move (or went
// back) since the last call, it is the last number plus one.
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
// the kernel's socket buffer absorbs (or drops) the rest.
const (
	batchSize = 64
	poolSize  = 4
)

type rxBatch struct {
	pkts []multicast.Packet
	n    int
}

// Node is one running huddle node: one loop owns the transport, the clock
// and the protocol core; other goroutines talk to it only through channels
// (Multicast). Make it with New, run it with Run.
type Node struct {
	o       Options
	sendc   chan *sendReq
	calls   chan func(*Core) // Do
	stopped chan struct{}    // closed when Run returns

	// Owned by the loop.
	core        *Core
	order       wire.Order // the workload's
	log         zerolog.Logger
	work        *workload
	pending     []*sendReq // Multicast calls waiting for the send window
	sendBlocked bool       // they wait now (windowFull counts the waits, not the turns)
	blocked     bool       // the workload waits for the send window
	windowFull  uint64     // times it had to
	truncated   uint64
	sendErrors  uint64
	pauses      uint64 // stretches of a heartbeat or more when the loop could not read
	warned      map[string]bool
	refused     error         // the group refused this node
	lockWaiter  chan struct{} // a Lock call waiting for the lock
	lockLost    bool          // the lock was taken away since the last request
	lockWork    *lockWorkload
}

// The workload queues at most maxSendsPerStep messages, or sendBytesPerStep
// datagrams' worth of payload if that is more, in one turn of the loop: a
// saturating workload must not starve the receive path (which reopens the
// window and carries the NACKs), yet with large datagrams a turn must
// still fill several of them.
const (
	maxSendsPerStep  = 32
	sendBytesPerStep = 4 // datagrams
)

// New returns a node ready to Run.
func New(o Options) *Node {
	seed := o.Seed
	if seed == 0 {
		seed = o.Inc
	}
	cfg, now := o.Config, time.Now()
	return &Node{
		o: o, log: o.Log, warned: map[string]bool{}, order: ParseOrder(cfg.SendOrder),
		sendc: make(chan *sendReq), calls: make(chan func(*Core)), stopped: make(chan struct{}),
		core:     NewCore(CoreOptionsFrom(cfg, o.Inc, seed), now),
		work:     newWorkload(cfg.SendRate, cfg.SendSize, cfg.SendCount, now.Add(cfg.JoinTimeout.D())),
		lockWork: newLockWorkload(cfg.Mutex, seed, now.Add(cfg.JoinTimeout.D())),
	}
}

// Run runs a new node until ctx is done (see Node.Run).
func Run(ctx context.Context, o Options) error { return New(o).Run(ctx) }

// Run runs the node until ctx is done. A reader goroutine only reads
// batches of datagrams and hands them over to the loop. When ctx ends, Run
// closes the transport, logs the final stats and node.stopped with the
// context's cause, and returns nil; it returns an error only if the
// transport fails. A Node runs once.
func (r *Node) Run(ctx context.Context) error {
	defer close(r.stopped)
	o, cfg := r.o, r.o.Config
	if d := cfg.Duration.D(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errDuration)
		defer cancel()
	}
	r.logStarted()

	rerr := make(chan error, 2)
	data := startReader(o.Transport, cfg.DatagramSize, rerr)
	ctl := data
	if o.Control != nil {
		ctl = startReader(o.Control, cfg.DatagramSize, rerr)
	}
	err := r.loop(ctx, ctl, data, rerr)
	if err == nil && !r.core.Left() {
		err = r.leave(ctl, data, rerr)
	}
	if err == nil {
		err = r.refused
	}
	data.stop()
	if ctl != data {
		ctl.stop()
	}
	r.failPending(ErrStopped)
	r.logStats("exit")
	reason := "transport failed"
	switch {
	case r.refused != nil:
		reason = "refused by the group"
	case err == nil:
		reason = causeText(ctx)
	}
	r.log.Info().Str("event", "node.stopped").Str("reason", reason).Msg("node stopped")
	return err
}

var errDuration = errors.New("duration elapsed")

// ParseOrder returns the order a configuration names (fifo, total, safe);
// FIFO for anything else.
func ParseOrder(s string) wire.Order {
	switch s {
	case "total":
		return wire.Total
	case "safe":
		return wire.Safe
	}
	return wire.FIFO
}

// ErrRefused is returned by Run when the group refused this node: another
// live node has its ID, or its protocol settings differ from the group's.
var ErrRefused = membership.ErrRefused

// leave runs the loop through a graceful leave: the node asks to be
// excluded and waits, at most two suspect timeouts, until a view without
// it exists, so that its last messages are flushed to everyone.
func (r *Node) leave(ctl, data *reader, rerr <-chan error) error {
	r.core.Leave(time.Now())
	r.afterStep()
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.o.Config.SuspectTimeout.D())
	defer cancel()
	r.work.rate = 0
	return r.loop(ctx, ctl, data, rerr)
}

func newBatch(size int) *rxBatch {
	b := &rxBatch{pkts: make([]multicast.Packet, batchSize)}
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
	x := &reader{t: t, full: make(chan *rxBatch, poolSize), free: make(chan *rxBatch, poolSize), done: make(chan struct{})}
	for range poolSize {
		x.free <- newBatch(size)
	}
	go func() {
		defer close(x.done)
		for b := range x.free {
			n, err := t.ReadBatch(b.pkts)
			if err != nil {
				rerr <- err
				return
			}
			b.n = n
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

func (r *Node) loop(ctx context.Context, ctl, data *reader, rerr <-chan error) error {
	// due is when the timer should fire: its deadline, or when it was
	// armed if that deadline had passed already.
	armed := r.deadline()
	due := later(armed, time.Now())
	timer := r.newTimer(time.Until(due))
	defer timer.Stop()
	pending := true // the timer is armed for `armed` and has not fired
	var stats <-chan time.Time
	if iv := r.o.Config.StatsInterval.D(); iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		stats = t.C
	}
	for !r.core.Left() {
		select {
		case <-ctx.Done():
			return nil
		case err := <-rerr:
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("node: receive: %w", err)
		case b := <-ctl.full:
			r.receive(b)
			ctl.free <- b
		case b := <-data.full:
			if ctl != data {
				r.drain(ctl) // repairs first: they unblock delivery
			}
			r.receive(b)
			data.free <- b
			// Take what else has arrived before answering: one turn's
			// output (an order record, acknowledgements, NACKs) then
			// covers all of it. The pool bounds the turn.
			r.drainUpTo(data, poolSize-1)
		case req := <-r.sendc:
			r.pending = append(r.pending, req)
			r.takeSends() // callers of this turn share its datagrams
		case f := <-r.calls:
			f(r.core)
		case <-timer.C():
			pending = false
			r.checkPause(&due)
			// Datagrams already read are news of peers: take them before
			// the clock judges anyone silent.
			r.drain(ctl)
			if data != ctl {
				r.drain(data)
			}
			r.core.Tick(time.Now())
		case <-stats:
			r.logStats("periodic")
		}
		// Whatever woke the loop, a timer deadline long past means this
		// process did not run (frozen, starved, blocked): the peers were
		// not silent, we were deaf.
		r.checkPause(&due)
		r.lockWork.step(time.Now(), r.core) // before report: a release is logged before its replies go out
		r.report()                          // a view installed now is logged before what is sent in it
		r.sendPending()
		r.pump(time.Now())
		r.afterStep()
		// Re-arm only for a new deadline: on most turns it has not
		// moved, and re-arming costs a system call with a timerfd.
		if next := r.deadline(); !pending || !next.Equal(armed) {
			armed, due, pending = next, later(next, time.Now()), true
			timer.Reset(time.Until(due))
		}
	}
	return nil
}

func (r *Node) write(t multicast.Transport, out [][]byte) {
	if len(out) == 0 {
		return
	}
	start := time.Now()
	if err := t.WriteBatch(out); err != nil {
		r.sendErrors++
		r.warnOnce("send", err.Error(), netip.AddrPort{})
	}
	r.noticePause(time.Since(start))
}

// newTimer returns the loop's timer: a precise one when Options ask for it
// and the system has one, else the Go runtime's.
func (r *Node) newTimer(d time.Duration) loopTimer {
	if r.o.PreciseTimer {
		if t, err := newPreciseTimer(d); err == nil {
			return t
		}
	}
	return newGoTimer(d)
}

// deadline is when the loop must wake up without a datagram: the core's
// next timer, or the workload's next message unless it waits for the
// window (then stability, which arrives in datagrams, wakes it).
func (r *Node) deadline() time.Time {
	d := r.core.NextDeadline()
	if next := r.work.next(); !next.IsZero() && !r.blocked && next.Before(d) {
		d = next
	}
	if next := r.lockWork.next; r.lockWork.on && !next.IsZero() && next.Before(d) {
		d = next
	}
	return d
}

// pump multicasts the workload's messages that are due, as far as the send
// window allows.
func (r *Node) pump(now time.Time) {
	wasBlocked := r.blocked
	r.blocked = false
	limit := max(maxSendsPerStep, sendBytesPerStep*r.o.Config.DatagramSize/max(1, r.o.Config.SendSize))
	for n := min(r.work.due(now), limit); n > 0; n-- {
		p := r.work.payload()
		view := r.core.View().ID
		seq, err := r.core.Multicast(nil, p, r.order, 0)
		if errors.Is(err, membership.ErrBlocked) || errors.Is(err, membership.ErrNotInView) {
			r.blocked = true // the next view wakes it
			return
		}
		if errors.Is(err, multicast.ErrWindowFull) {
			r.blocked = true
			if !wasBlocked {
				r.windowFull++ // count waits, not the turns spent waiting
			}
			return
		}
		if err != nil {
			r.warnOnce("workload", err.Error(), netip.AddrPort{})
			r.work.rate = 0 // stop: the error would repeat
			return
		}
		r.work.sent++
		if r.o.Config.TraceDeliveries {
			r.log.Info().Str("event", "send").Str("view", view.String()).Uint64("seq", seq).Str("order", r.order.String()).Int("len", len(p)).
				Uint32("crc", crc32.ChecksumIEEE(p)).Msg("sent")
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkPause reports how far past due the loop woke as a pause, once.
func (r *Node) checkPause(due *time.Time) {
	now := time.Now()
	if now.After(*due) {
		r.noticePause(now.Sub(*due))
		*due = now
	}
}

// noticePause reports a stretch of d during which the loop could not read
// (a blocked send, a late timer) to the core, when it is long enough to
// matter for failure detection: a heartbeat.
func (r *Node) noticePause(d time.Duration) {
	if d >= r.o.Config.Heartbeat.D() {
		r.pauses++
		r.core.Paused(time.Now(), d)
	}
}

// drain processes the batches a reader has ready, without waiting.
func (r *Node) drain(x *reader) { r.drainUpTo(x, -1) }

// drainUpTo is drain of at most n batches (n < 0: no limit).
func (r *Node) drainUpTo(x *reader, n int) {
	for ; n != 0; n-- {
		select {
		case b := <-x.full:
			r.receive(b)
			x.free <- b
		default:
			return
		}
	}
}

func (r *Node) receive(b *rxBatch) {
	now := time.Now()
	limit := r.o.Config.DatagramSize
	for _, p := range b.pkts[:b.n] {
		if p.N > limit {
			r.truncated++
			r.warnOnce("truncated", "a datagram longer than datagram_size arrived and was dropped; every member must use the same datagram_size", p.Src)
			continue
		}
		r.core.Receive(now, p.Src, p.Buf[:p.N])
	}
}

// afterStep sends what the core produced and logs what it reported.
func (r *Node) afterStep() {
	ctl, data := r.core.TakeOutboxes()
	ct := r.o.Control
	if ct == nil {
		ct = r.o.Transport
	}
	r.write(ct, ctl)
	r.write(r.o.Transport, data)
	r.report()
}

// report logs what the core delivered and reported, in the order it
// happened: a view change and the deliveries before and after it.
func (r *Node) report() {
	ds, evs := r.core.TakeDeliveries(), r.core.TakeEvents()
	next := 0
	for i := range evs {
		for ; next < evs[i].Delivered && next < len(ds); next++ {
			r.delivered(&ds[next])
		}
		r.logEvent(evs[i])
		if r.o.Handle != nil {
			evs[i].Delivered = 0
			r.o.Handle(nil, &evs[i])
		}
	}
	for ; next < len(ds); next++ {
		r.delivered(&ds[next])
	}
	for _, ev := range r.core.TakeElectionEvents() {
		r.logElection(ev)
	}
	for _, ev := range r.core.TakeMutexEvents() {
		r.handleMutex(ev)
	}
}

func (r *Node) delivered(d *membership.Delivery) {
	r.logDelivery(d)
	if r.o.Handle != nil {
		r.o.Handle(d, nil)
	}
}

// Do runs f in the node's loop, with its Core, and returns once f has
// run; or ctx's error, or ErrStopped, if it could not run. f must not
// block.
func (r *Node) Do(ctx context.Context, f func(*Core)) error {
	done := make(chan struct{})
	select {
	case r.calls <- func(c *Core) { f(c); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-r.stopped:
		return ErrStopped
	}
	<-done
	return nil
}

func (r *Node) logDelivery(d *membership.Delivery) {
	if r.o.Config.TraceDeliveries {
		e := r.log.Info().Str("event", "deliver").Str("view", d.View.String()).Uint64("from", d.Source).
			Uint64("from_incarnation", d.Inc).Uint64("seq", d.Seq).Str("order", d.Order.String())
		if d.GSeq != 0 {
			e = e.Uint64("gseq", d.GSeq)
		}
		if d.Final {
			e = e.Bool("final", true)
		}
		if len(d.Service) > 0 {
			e = e.Str("service", string(d.Service))
		}
		e.Int("len", len(d.Payload)).Uint32("crc", crc32.ChecksumIEEE(d.Payload)).Msg("delivered")
	}
}

func (r *Node) logEvent(ev membership.Event) {
	switch ev.Kind {
	case membership.Engine:
		r.logEngineEvent(ev.Multicast, ev.InView)
	case membership.ViewInstalled:
		r.log.Info().Str("event", "view.installed").Str("view", ev.View.ID.String()).
			Uint64("coordinator_incarnation", ev.View.Members[0].Inc).
			Uints64("members", ev.View.IDs()).Uints64("joined", orEmpty(ev.Joined)).
			Uints64("left", orEmpty(ev.Left)).Uints64("crashed", orEmpty(ev.Crashed)).
			Int64("flush_ms", ev.Flush.Milliseconds()).Str("prior", ev.Prior.String()).
			Msgf("view %s installed", ev.View)
	case membership.FlushStarted:
		r.log.Info().Str("event", "view.flush.started").Str("view", ev.View.ID.String()).
			Uint64("epoch", ev.Epoch).Uint64("attempt", ev.Attempt).Uints64("proposed", ev.Proposed).
			Msg("view change started")
	case membership.Suspected:
		r.log.Info().Str("event", "member.suspected").Str("view", ev.View.ID.String()).Uint64("member", ev.Member).
			Int64("silent_ms", ev.Silent.Milliseconds()).Msg("member suspected")
	case membership.Excluded:
		r.log.Warn().Str("event", "member.excluded").Str("view", ev.View.ID.String()).Uint64("by", ev.Member).
			Msg("the group installed a view without this node; it will be merged back in")
	case membership.LeaveDone:
		r.log.Info().Str("event", "member.left").Str("view", ev.View.ID.String()).Msg("left the group")
	case membership.Refused:
		r.logRefused(ev)
	}
}

// logRefused logs a refusal: of this node (it stops), or of a joiner by
// this node as coordinator.
func (r *Node) logRefused(ev membership.Event) {
	e := r.log.Error().Str("event", "member.refused").Uint64("member", ev.Member).Str("setting", ev.Setting).
		Str("ours", ev.Ours).Str("theirs", ev.Theirs)
	switch {
	case ev.Member != r.o.Config.ID && ev.Setting == "settings":
		e.Msgf("not merging node %d: its protocol settings (datagram_size, max_message_size, heartbeat, suspect_timeout, election.algorithm, mutex.quorum) differ from this group's", ev.Member)
		return
	case ev.Member != r.o.Config.ID:
		e.Msgf("refused node %d: its %s is %q, the group's is %q", ev.Member, ev.Setting, ev.Theirs, ev.Ours)
		return
	}
	var err error
	switch ev.Setting {
	case "id":
		err = fmt.Errorf("%w: another live node at %s uses ID %d; give every node its own --id", ErrRefused, ev.Addr.Addr(), ev.Member)
	case "members":
		err = fmt.Errorf("%w: the group (coordinator at %s) is full: a view lists at most %s members with this datagram_size", ErrRefused, ev.Addr.Addr(), ev.Theirs)
	default:
		err = fmt.Errorf("%w: this node's %s is %q but the group's (coordinator at %s) is %q", ErrRefused, ev.Setting, ev.Ours, ev.Addr.Addr(), ev.Theirs)
	}
	r.refused = err
	e.Str("addr", ev.Addr.String()).Msg(err.Error())
}

func orEmpty(ids []uint64) []uint64 {
	if ids == nil {
		return []uint64{}
	}
	return ids
}

func (r *Node) logEngineEvent(ev multicast.Event, inView bool) {
	switch ev.Kind {
	case multicast.PeerSeen:
		r.log.Info().Str("event", "peer.seen").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
			Str("addr", ev.Addr.String()).Bool("restarted", ev.Restarted).Msg("peer seen")
	case multicast.PeerLost:
		r.log.Info().Str("event", "peer.lost").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
			Int64("silent_ms", ev.Silent.Milliseconds()).Msg("peer lost")
	case multicast.StreamSkipped:
		if !inView {
			r.log.Info().Str("event", "stream.skipped").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
				Uint64("from_seq", ev.From).Uint64("count", ev.Skipped).Bool("in_view", false).
				Msg("messages sent before this node's view needed them: none are lost to it")
			return
		}
		r.log.Warn().Str("event", "stream.skipped").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
			Uint64("from_seq", ev.From).Uint64("count", ev.Skipped).Bool("in_view", true).
			Msg("messages lost for good: the sender went on without this node and no longer holds them")
	case multicast.PeerLagging:
		r.log.Warn().Str("event", "peer.lagging").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
			Uint64("behind", ev.Behind).Int64("held_ms", ev.Held.Milliseconds()).
			Msg("a live peer has not acknowledged this node's messages and holds its send window full")
	case multicast.PeerConflict:
		if !r.warned["conflict"] {
			r.warned["conflict"] = true
			r.log.Warn().Str("event", "peer.conflict").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
				Str("addr", ev.Addr.String()).
				Msgf("another node at %s uses this node's ID %d; give every node its own --id", ev.Addr.Addr(), ev.Peer)
		}
	}
}

// warnOnce logs a warning the first time it happens; counters say how often.
func (r *Node) warnOnce(key, msg string, src netip.AddrPort) {
	if r.warned[key] {
		return
	}
	r.warned[key] = true
	e := r.log.Warn().Str("event", "node.warning").Str("what", key)
	if src.IsValid() {
		e = e.Str("addr", src.String())
	}
	e.Msg(msg)
}

func (r *Node) logStarted() {
	c := r.o.Config
	r.log.Info().Str("event", "node.started").
		Uint64("incarnation", r.o.Inc).Str("group", c.Group).Str("addr", c.Addr).Str("iface", c.Iface).
		Str("src", r.o.Transport.LocalAddr().String()).Str("profile", c.Profile).
		Int64("heartbeat_ms", c.Heartbeat.D().Milliseconds()).Int64("suspect_ms", c.SuspectTimeout.D().Milliseconds()).
		Int("datagram_size", c.DatagramSize).Int("ttl", c.TTL).Bool("loopback", c.Loopback).
		Str("control_socket", c.ControlSocket).Msg("node started")
	if d := r.core.Drop(); d.Active() {
		r.logDrop("node.drop", d)
	}
}

func (r *Node) logStats(why string) {
	v := r.core.View()
	e := r.log.Info().Str("event", "node.stats").Str("why", why).Str("view", v.ID.String()).Int("members", len(v.Members))
	r.counters().addTo(e).Msg("stats")
}

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c.Error()
	}
	return "stopped"
}
