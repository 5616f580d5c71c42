package sim

import (
	"fmt"
	"time"

	"github.com/huddle-lan/huddle/internal/netmodel"
)

// RunError is how a run ends when an invariant fails, a condition is not
// met in time, or the clock stops advancing. Its message carries all that
// is needed to replay and debug the run.
type RunError struct {
	Seed      int64
	Invariant string        // name of the failed Check; "" for timeout and livelock
	At        time.Duration // virtual time since Epoch
	Err       error
	Trace     string // the last steps, as Trace returns them
}

func (e *RunError) Error() string {
	what := "run"
	if e.Invariant != "" {
		what = fmt.Sprintf("invariant %q", e.Invariant)
	}
	return fmt.Sprintf("sim: seed %d: %s failed at t=%v: %v\nlast steps:\n%s",
		e.Seed, what, e.At, e.Err, e.Trace)
}

func (e *RunError) Unwrap() error { return e.Err }

func (w *World) runError(invariant string, err error) *RunError {
	return &RunError{Seed: w.seed, Invariant: invariant, At: w.now, Err: err, Trace: w.Trace()}
}

// Step processes the next event: a delivery (Receive) or a timer (Tick),
// then sends that node's outbox, re-arms its timer and runs the checks. It
// reports false when nothing is left to do or the world has stopped.
func (w *World) Step() bool { return w.stepUntil(forever) }

// RunFor runs every event of the next d, then sets the clock to its end.
func (w *World) RunFor(d time.Duration) error {
	end := w.now + d
	for w.stepUntil(end) {
	}
	if w.err != nil {
		return w.err
	}
	w.now = end
	return nil
}

// RunUntil steps until cond holds, checked before each step, or fails with
// ErrTimeout after limit of virtual time.
func (w *World) RunUntil(cond func() bool, limit time.Duration) error {
	end := w.now + limit
	for !cond() {
		if !w.stepUntil(end) {
			if w.err != nil {
				return w.err
			}
			w.now = end
			return w.runError("", fmt.Errorf("%w (limit %v)", ErrTimeout, limit))
		}
	}
	return w.err
}

// stepUntil processes the next event due at or before end. Events that
// turn out to be moot (a cancelled timer, a stalled node's input put off)
// are consumed without counting as a step.
func (w *World) stepUntil(end time.Duration) bool {
	for w.err == nil && w.queue.len() > 0 && w.queue.peek().at <= end {
		ev := w.queue.pop()
		if w.handle(&ev) {
			w.runChecks()
			return w.err == nil
		}
	}
	return false
}

func (w *World) handle(ev *event) bool {
	n := ev.to
	if ev.kind == evTimer && (ev.gen != n.gen || !n.alive) {
		return false
	}
	if n.alive && ev.at < n.stalled && (ev.kind == evTimer || ev.gen == n.inc) {
		ev.at = n.stalled
		w.queue.push(*ev) // a new seq keeps the arrival order
		return false
	}
	w.advance(ev.at)
	if ev.kind == evTimer {
		w.tick(n)
	} else {
		w.receive(ev)
	}
	return true
}

// advance moves the clock, watching for a run stuck at one instant.
func (w *World) advance(at time.Duration) {
	w.steps++
	if at != w.now {
		w.now, w.still = at, 0
		return
	}
	if w.still++; w.still > livelockSteps {
		w.err = w.runError("", fmt.Errorf("%w after %d steps", ErrLivelock, w.still))
	}
}

func (w *World) tick(n *node) {
	n.armed = false
	w.log(traceEntry{kind: trTick, node: n.id})
	n.machine.Tick(w.Now())
	w.after(n)
}

func (w *World) receive(ev *event) {
	n := ev.to
	if !n.alive || ev.gen != n.inc {
		w.drop(ev.from.id, n.id, netmodel.CauseCrashed)
		return
	}
	w.stats.Delivered++
	w.log(traceEntry{kind: trRecv, node: n.id, peer: ev.from.id, n: len(ev.data)})
	// A private copy per Receive: a machine that scribbles on its input
	// cannot corrupt the copies other nodes are still to receive.
	w.rbuf = append(w.rbuf[:0], ev.data...)
	n.machine.Receive(w.Now(), ev.from.addr, w.rbuf)
	w.after(n)
}

// after sends what n's machine produced and re-arms its timer.
func (w *World) after(n *node) {
	if out := n.machine.TakeOutbox(); len(out) > 0 {
		w.log(traceEntry{kind: trSend, node: n.id, n: len(out)})
		for _, d := range out {
			w.multicast(n, d)
		}
	}
	if u, ok := n.machine.(Unicaster); ok {
		if out := u.TakeUnicast(); len(out) > 0 {
			w.log(traceEntry{kind: trSend, node: n.id, n: len(out)})
			for _, d := range out {
				w.unicast(n, d.Data, d.To)
			}
		}
	}
	w.arm(n)
}

// arm keeps one timer event per node, at the machine's NextDeadline. A
// changed deadline bumps the generation, which makes the old event moot.
func (w *World) arm(n *node) {
	d := n.machine.NextDeadline()
	if d.IsZero() {
		n.gen++
		n.armed = false
		return
	}
	at := max(d.Sub(Epoch), w.now)
	if n.armed && at == n.deadline {
		return
	}
	n.gen++
	n.armed, n.deadline = true, at
	w.queue.push(event{at: at, kind: evTimer, to: n, gen: n.gen})
}

func (w *World) runChecks() {
	for _, c := range w.checks {
		if err := c.f(w); err != nil {
			w.note("check %q failed: %v", c.name, err)
			w.err = w.runError(c.name, err)
			return
		}
	}
}
