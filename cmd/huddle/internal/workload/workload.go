// Package workload generates the experiment traffic of `huddle run`, as
// the seed programs did: messages at a rate (send_rate, send_size,
// send_count, send_order), the group's lock used over and over (the seed
// program dist_sync: mutex.think, mutex.hold), and elections started
// periodically (ring_voting: election.every, election.count). Each is a
// client of the node through the Group API, like any application: the
// node itself only runs the protocols and their I/O. huddle run and the
// demo's in-process nodes run them.
//
//	g, _ := huddle.Start(ctx, cfg, log)
//	go workload.Run(ctx, g, cfg, start)
package workload

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
)

// Run runs the workloads cfg asks for against g until ctx ends, g stops,
// or each is done. start is when the node started: the traffic and the
// lock start one join timeout later (the node has heard the group by
// then), the periodic elections one interval later.
func Run(ctx context.Context, g *huddle.Group, cfg config.Config, start time.Time) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the node's end ends the workloads
		select {
		case <-g.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	seed := g.Self().Inc
	var wg sync.WaitGroup
	if cfg.SendRate > 0 {
		wg.Go(func() { newTraffic(cfg, start.Add(cfg.JoinTimeout.D())).run(ctx, g) })
	}
	if lo, hi, on, _ := cfg.Mutex.ThinkRange(); on {
		l := &lockUse{lo: lo, hi: hi, hold: cfg.Mutex.Hold.D(), rng: rand.New(rand.NewPCG(seed, 0x6c6f636b))}
		wg.Go(func() { l.run(ctx, g, start.Add(cfg.JoinTimeout.D())) })
	}
	if cfg.KV.Keys > 0 && cfg.KV.Rate > 0 {
		wg.Go(func() { puts(ctx, g, cfg, start.Add(cfg.JoinTimeout.D())) })
	}
	if every := cfg.Election.Every.D(); every > 0 {
		wg.Go(func() { elections(ctx, g, start, every, cfg.Election.Count) })
	}
	wg.Wait()
}

// maxBatch bounds the messages the traffic hands the node in one call:
// a node far behind its rate catches up in bursts of this many.
const maxBatch = 256

// traffic multicasts messages at a rate: message n is due at
// start + n/rate, so a node that falls behind (a full send window)
// catches up in a burst, as an application with a queue would. Payloads
// are deterministic: the 8-byte message number, then a fixed pattern, so
// that the same message has the same CRC everywhere and no two messages
// of a sender have the same bytes.
type traffic struct {
	rate    float64 // messages per second
	count   int     // stop after this many; 0 = no limit
	order   huddle.Order
	start   time.Time
	sent    int
	bufs    [][]byte // payload buffers, reused from batch to batch
	payload []byte   // the fixed pattern
}

func newTraffic(cfg config.Config, start time.Time) *traffic {
	order, _ := huddle.ParseOrder(cfg.SendOrder) // validated: one of them
	t := &traffic{rate: float64(cfg.SendRate), count: cfg.SendCount, order: order,
		start: start, payload: make([]byte, cfg.SendSize)}
	for i := 8; i < len(t.payload); i++ {
		t.payload[i] = byte(i * 131)
	}
	return t
}

// done reports whether the traffic has nothing more to send, ever.
func (t *traffic) done() bool { return t.count > 0 && t.sent >= t.count }

// due is how many messages should have been sent by now and were not.
func (t *traffic) due(now time.Time) int {
	if t.done() || now.Before(t.start) {
		return 0
	}
	n := int(now.Sub(t.start).Seconds()*t.rate) + 1
	if t.count > 0 {
		n = min(n, t.count)
	}
	return max(0, n-t.sent)
}

// next is when the next message falls due.
func (t *traffic) next() time.Time {
	return t.start.Add(time.Duration(float64(t.sent) / t.rate * float64(time.Second)))
}

// batch returns the payloads of the next n messages (valid until the next
// call): each message's number, then the pattern.
func (t *traffic) batch(n int) [][]byte {
	for len(t.bufs) < n {
		t.bufs = append(t.bufs, append([]byte(nil), t.payload...))
	}
	for i := range n {
		binary.BigEndian.PutUint64(t.bufs[i], uint64(t.sent+i+1))
	}
	return t.bufs[:n]
}

func (t *traffic) run(ctx context.Context, g *huddle.Group) {
	svc := g.Service("") // the application's channel, as huddle send's
	var p *pacer
	if usePacer {
		if p = newPacer(); p != nil {
			defer p.close()
		}
	}
	for !t.done() {
		n := min(t.due(time.Now()), maxBatch)
		if n == 0 {
			if !t.sleep(ctx, p) {
				return
			}
			continue
		}
		_, sent, err := svc.MulticastBatch(ctx, t.batch(n), t.order)
		t.sent += sent
		switch {
		case errors.Is(err, huddle.ErrNotInView):
			// Between views (a refusal, an exclusion): try again soon.
			if !sleepUntil(ctx, time.Now().Add(time.Millisecond)) {
				return
			}
		case errors.Is(err, huddle.ErrNotPrimary):
			// Total and safe messages wait for the primary component: the
			// messages due meanwhile are skipped, not sent in a burst.
			t.sent += n - sent
			if !sleepUntil(ctx, time.Now().Add(10*time.Millisecond)) {
				return
			}
		case err != nil:
			return
		}
	}
}

// preciseWait is the longest wait for the next message that the pacer
// makes (the end of ctx is noticed after it); longer ones are the
// runtime's timers', whose rounding to the millisecond does not matter
// there.
const preciseWait = 5 * time.Millisecond

// usePacer: the traffic paces itself with a pacer where it can.
var usePacer = true

// sleep waits until the next message is due, or ctx ends: false then.
func (t *traffic) sleep(ctx context.Context, p *pacer) bool {
	if d := time.Until(t.next()); p != nil && d > 0 && d <= preciseWait && p.wait(d) {
		return ctx.Err() == nil
	}
	return sleepUntil(ctx, t.next())
}

// lockUse takes the lock for experiments, as the seed program dist_sync
// did: think a while (a random time in [lo, hi]), request the lock, hold
// it for hold, release it, and again.
type lockUse struct {
	lo, hi, hold time.Duration
	rng          *rand.Rand
}

func (l *lockUse) think() time.Duration {
	if l.hi <= l.lo {
		return l.lo
	}
	return l.lo + time.Duration(l.rng.Int64N(int64(l.hi-l.lo)+1))
}

func (l *lockUse) run(ctx context.Context, g *huddle.Group, start time.Time) {
	next := start.Add(l.think())
	for sleepUntil(ctx, next) {
		err := g.Lock(ctx)
		switch {
		case errors.Is(err, huddle.ErrLockBusy):
			// Someone else on this node (huddle lock) uses it: think again.
		case err != nil:
			return
		default:
			if !sleepUntil(ctx, time.Now().Add(l.hold)) {
				return // leaving: the node releases the lock first
			}
			if err := g.Unlock(); errors.Is(err, huddle.ErrClosed) {
				return
			}
		}
		next = time.Now().Add(l.think())
	}
}

// elections starts an election every interval, count times (0: no limit),
// counting only those this node started (not while it takes part in one).
func elections(ctx context.Context, g *huddle.Group, start time.Time, every time.Duration, count int) {
	started := 0
	for next := start.Add(every); count == 0 || started < count; next = next.Add(every) {
		if !sleepUntil(ctx, next) {
			return
		}
		res, err := g.Elect(ctx)
		if err != nil {
			return
		}
		if res.Started {
			started++
		}
	}
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
