package logcheck

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// Kinds of violation of the lock's guarantees found by CheckMutex
// (docs/design.md, "Mutual exclusion": at most one holder, every request granted). In
// their Violations, Node is the node that logged the offending event and
// Seq the clock of its request; for MutexOverlap, Node entered while
// Sender held the lock.
const (
	// MutexOverlap: two lives held the lock at once: the
	// mutex.acquired…mutex.released intervals of two lives overlap (by
	// more than MutexOptions.Slack).
	MutexOverlap Kind = "mutex-overlap"
	// MutexSequence: a life's lock events out of turn: mutex.acquired,
	// mutex.released or mutex.withdrawn without the request (or grant)
	// before it, a request while one is pending or held, a grant or
	// release whose clock is not its request's, or request clocks that do
	// not increase.
	MutexSequence Kind = "mutex-sequence"
	// MutexPending: a request neither granted nor withdrawn, pending for
	// longer than MutexOptions.MaxPending before its node's log ends.
	MutexPending Kind = "mutex-pending"
)

// LockEvent is one of a life's mutex.* events.
type LockEvent struct {
	Event    string        // logs.MutexRequested, MutexAcquired, MutexReleased, MutexWithdrawn or MutexDeferred
	Clock    uint64        // the request's Lamport timestamp (deferred: the deferred request's)
	View     string        // the view it happened in
	Wait     time.Duration // acquired, withdrawn: since the request (wait_ms)
	Held     time.Duration // released: since the grant (held_ms)
	Messages int           // acquired: requests sent and replies received for it
	Lost     bool          // released: taken away (quorum or view lost), not released
	Peer     uint64        // deferred: whose request
	Time     time.Time
	Line     int
}

// lockEvent reads a mutex.* event.
func lockEvent(ev *logs.Event) LockEvent {
	get := func(key string) uint64 { v, _ := ev.Uint(key); return v }
	dur := func(key string) time.Duration {
		f, _ := ev.Float(key)
		return time.Duration(math.Round(f * float64(time.Millisecond)))
	}
	e := LockEvent{Event: ev.Name, Clock: get(logs.ClockKey), Wait: dur(logs.WaitMsKey), Held: dur(logs.HeldMsKey),
		Messages: int(get(logs.MessagesKey)), Peer: get(logs.PeerKey), Time: ev.Time, Line: ev.Line}
	e.View, _ = ev.Str(logs.ViewKey)
	e.Lost, _ = ev.Bool(logs.LostKey)
	return e
}

// Death is when a node was killed (SIGKILL): its last log line came
// before, by up to however long it ran on without logging.
type Death struct {
	Node uint64
	At   time.Time
}

// MutexOptions shape CheckMutex.
type MutexOptions struct {
	// Deaths are the kills the caller knows of. A life that was running
	// at a death of its node (the node's last life started before it) and
	// whose log ends with the lock held or wanted is taken to hold or want
	// it until then, not only until its last line. Without them a killed
	// holder's interval ends at its last line, which makes the safety
	// check weaker: pass the kill times when the test knows them.
	Deaths []Death
	// Slack forgives overlaps up to this long with a hold that ended by a
	// release (lost or not) or by its node's exit. The log's times are
	// when each node wrote its line: a node logs mutex.released right
	// after its loop wrote the replies the release sends, and a node that
	// leaves the group holding the lock logs its exit once the others
	// installed a view without it, which lets them grant; so on a busy
	// machine the next holder may log mutex.acquired a moment earlier.
	// A hold that ended by a death or at the end of its log gets no slack:
	// nothing the dead node sent lets another in. 0 forgives none;
	// forgiven overlaps are counted in MutexResult.Forgiven.
	Slack time.Duration
	// EndAtHeld ends a hold that a mutex.released ended at the earlier of
	// the release's line and the grant's line plus the release's held_ms,
	// which the node measures from its grant to its release: the release's
	// line comes after the node wrote the replies the release sends, which
	// on a busy machine can be milliseconds later.
	EndAtHeld bool
	// MaxPending is how long a request may stay pending, neither granted
	// nor withdrawn, when its life's log ends (its node died or exited
	// while it waited): longer is a MutexPending violation, for the node
	// waited while it ran. Default DefaultMaxPending.
	MaxPending time.Duration
	// MaxViolations is how many violations the Result lists; default
	// DefaultMaxViolations. All are counted.
	MaxViolations int
}

// DefaultMaxPending is MutexOptions.MaxPending's default: well above a
// request's wait behind every other member of a LAN group under loss
// (each hold, plus a suspect timeout for a holder that died), well below
// the length of a test run.
const DefaultMaxPending = 10 * time.Second

// Interval is one life's hold of the lock: from its mutex.acquired to
// its mutex.released, or to the end of its life.
type Interval struct {
	Life       *Life
	Node       uint64
	Clock      uint64 // its request's
	View       string // the view it was acquired in
	Start, End time.Time
	// Ended says how it ended: "released"; "lost" (a mutex.released with
	// lost: true: taken away); "death" (at a MutexOptions.Deaths time);
	// "exit" (the node logged node.stopped while holding it) or "log end"
	// (neither: killed, or still running), both at the life's last line;
	// "out of turn" (a request or withdrawal while holding it, a
	// MutexSequence violation).
	Ended string
	Line  int // of mutex.acquired
}

// Open reports whether the life ended while holding the lock.
func (iv Interval) Open() bool {
	return iv.Ended == "death" || iv.Ended == "exit" || iv.Ended == "log end"
}

// Overlap is two lives holding the lock at once: B entered while A held
// it, for Length.
type Overlap struct {
	A, B   Interval
	Length time.Duration
}

// MutexResult is the outcome of CheckMutex: the violations, and figures
// of the lock's use.
type MutexResult struct {
	*Result
	Requests  int // mutex.requested events
	Entries   int // mutex.acquired events
	Releases  int // mutex.released events, lost ones included
	Lost      int // of those, with lost: true
	Withdrawn int // mutex.withdrawn events
	Deferred  int // mutex.deferred events
	// Ended counts requests still pending when their life ended by death
	// or at the end of its log, within MaxPending; longer ones, and those
	// pending at an exit, are MutexPending violations.
	Ended int
	// PerNode counts the entries of each node, over its lives.
	PerNode map[uint64]int
	// Waits, Holds and Messages are the wait_ms of each mutex.acquired,
	// the held_ms of each mutex.released and the messages of each
	// mutex.acquired, in the order of the lives; see Quantile.
	Waits    []time.Duration
	Holds    []time.Duration
	Messages []int
	// Intervals are every life's holds, by start time.
	Intervals []Interval
	// Overlaps are the MutexOverlap violations, all of them.
	Overlaps []Overlap
	// Forgiven counts the overlaps MutexOptions.Slack forgave, and
	// MaxForgiven is the longest.
	Forgiven    int
	MaxForgiven time.Duration
}

// CheckMutex checks the lock (any mutex.algorithm) (docs/design.md, "Mutual exclusion") from the
// mutex.* events of every life, all logs sharing one clock:
//
//   - safety: no two lives' mutex.acquired…mutex.released intervals
//     overlap (MutexOverlap). A hold still open when a life's log ends
//     lasts until the node's death (MutexOptions.Deaths), else until its
//     last line;
//   - each life's events go request → (acquired → released) or
//     withdrawn, with its request's clock, and request clocks increase
//     (MutexSequence);
//   - liveness: every request is granted or withdrawn: a life that
//     exits (node.stopped) withdraws what it waits for, and one that dies
//     or whose log ends may have waited at most MutexOptions.MaxPending
//     (MutexPending).
func (r *Run) CheckMutex(o MutexOptions) *MutexResult {
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	c := &lockCheck{run: r, o: o, lives: map[uint64]int{},
		res: &MutexResult{Result: newResult("mutex", o.MaxViolations), PerNode: map[uint64]int{}}}
	c.res.Lives = len(r.Lives)
	for _, f := range r.Files {
		c.res.Malformed += f.Malformed
	}
	for _, l := range r.Lives {
		c.lives[l.Node]++
	}
	for _, l := range r.Lives {
		c.walk(l)
	}
	c.overlaps()
	c.res.count("holds", len(c.res.Intervals))
	c.res.count("requests", c.res.Requests)
	return c.res
}

// lockCheck is the state of CheckMutex.
type lockCheck struct {
	run   *Run
	o     MutexOptions
	res   *MutexResult
	lives map[uint64]int // lives per node, to name incarnations only when needed
}

// lifeLock is where one life stands with the lock while its events are
// walked.
type lifeLock struct {
	l       *Life
	req     *LockEvent // the pending or held request; nil when released
	held    *LockEvent // its grant, while held
	lastReq uint64     // the clock of the life's last request
}

// walk checks the order of l's events and collects its holds and figures.
func (c *lockCheck) walk(l *Life) {
	s := &lifeLock{l: l}
	evs := l.Locks
	for i := range evs {
		c.step(s, &evs[i])
	}
	c.end(s)
}

func (c *lockCheck) step(s *lifeLock, e *LockEvent) {
	switch e.Event {
	case logs.MutexRequested:
		c.requested(s, e)
	case logs.MutexAcquired:
		c.acquired(s, e)
	case logs.MutexReleased:
		c.released(s, e)
	case logs.MutexWithdrawn:
		c.withdrawn(s, e)
	case logs.MutexDeferred:
		c.res.Deferred++
	}
}

func (c *lockCheck) requested(s *lifeLock, e *LockEvent) {
	c.res.Requests++
	switch {
	case s.held != nil:
		c.sequence(s.l, e, fmt.Sprintf("while holding the lock of request clock %d (line %d): want a release first", s.req.Clock, s.held.Line))
		c.closeHold(s, e.Time, "out of turn") // count the hold as ending here, and go on
	case s.req != nil:
		c.sequence(s.l, e, fmt.Sprintf("while request clock %d (line %d) was pending: want it granted or withdrawn first", s.req.Clock, s.req.Line))
	case s.lastReq != 0 && e.Clock <= s.lastReq:
		c.sequence(s.l, e, fmt.Sprintf("after a request with clock %d: want increasing clocks", s.lastReq))
	}
	s.req, s.held, s.lastReq = e, nil, e.Clock
}

func (c *lockCheck) acquired(s *lifeLock, e *LockEvent) {
	c.res.Entries++
	c.res.PerNode[s.l.Node]++
	c.res.Waits = append(c.res.Waits, e.Wait)
	c.res.Messages = append(c.res.Messages, e.Messages)
	switch {
	case s.held != nil:
		c.sequence(s.l, e, fmt.Sprintf("while holding it already (acquired at line %d): want one grant per request", s.held.Line))
		return
	case s.req == nil:
		c.sequence(s.l, e, "without a pending request: want mutex.requested first")
	case e.Clock != s.req.Clock:
		c.sequence(s.l, e, fmt.Sprintf("for request clock %d (line %d): want the request's clock", s.req.Clock, s.req.Line))
	}
	if s.req == nil {
		s.req = e
	}
	s.held = e
}

func (c *lockCheck) released(s *lifeLock, e *LockEvent) {
	c.res.Releases++
	c.res.Holds = append(c.res.Holds, e.Held)
	if e.Lost {
		c.res.Lost++
	}
	switch {
	case s.held == nil:
		c.sequence(s.l, e, "without holding the lock: want mutex.acquired first")
		s.req = nil // a pending request released counts as withdrawn
		return
	case e.Clock != s.held.Clock:
		c.sequence(s.l, e, fmt.Sprintf("for the lock acquired with clock %d (line %d): want the grant's clock", s.held.Clock, s.held.Line))
	}
	how := "released"
	if e.Lost {
		how = "lost"
	}
	end := e.Time
	if c.o.EndAtHeld {
		end = earlier(end, s.held.Time.Add(e.Held))
	}
	c.closeHold(s, end, how)
}

func (c *lockCheck) withdrawn(s *lifeLock, e *LockEvent) {
	c.res.Withdrawn++
	switch {
	case s.held != nil:
		c.sequence(s.l, e, fmt.Sprintf("while holding the lock (acquired at line %d): want mutex.released", s.held.Line))
		c.closeHold(s, e.Time, "out of turn")
		return
	case s.req == nil:
		c.sequence(s.l, e, "without a pending request: want mutex.requested first")
	case e.Clock != s.req.Clock:
		c.sequence(s.l, e, fmt.Sprintf("for request clock %d (line %d): want the request's clock", s.req.Clock, s.req.Line))
	}
	s.req = nil
}

// closeHold ends s's hold at end.
func (c *lockCheck) closeHold(s *lifeLock, end time.Time, how string) {
	h := s.held
	c.res.Intervals = append(c.res.Intervals, Interval{Life: s.l, Node: s.l.Node, Clock: h.Clock, View: h.View,
		Start: h.Time, End: end, Ended: how, Line: h.Line})
	s.req, s.held = nil, nil
}

// end closes what s's life left open when its log ended: a hold, or a
// pending request, which must not have waited longer than MaxPending.
func (c *lockCheck) end(s *lifeLock) {
	end, how := c.lifeEnd(s.l)
	switch {
	case s.held != nil:
		c.closeHold(s, end, how)
	case s.req != nil && how == "exit":
		c.res.add(Violation{Kind: MutexPending, Node: s.l.Node, Seq: s.req.Clock, Count: 1, File: s.l.File, Line: s.req.Line,
			Detail: fmt.Sprintf("%s requested the lock (clock %d, view %s) at %s and stopped at %s (%s:%d) with the request neither granted nor withdrawn: a node that leaves withdraws its request (mutex.withdrawn) first",
				c.name(s.l), s.req.Clock, s.req.View, clock(s.req.Time), clock(end), s.l.File, s.l.StopLine)})
	case s.req != nil:
		waited := end.Sub(s.req.Time)
		if waited <= c.o.MaxPending {
			c.res.Ended++
			return
		}
		c.res.add(Violation{Kind: MutexPending, Node: s.l.Node, Seq: s.req.Clock, Count: 1, File: s.l.File, Line: s.req.Line,
			Detail: fmt.Sprintf("%s requested the lock (clock %d, view %s) at %s and waited %v, neither granted nor withdrawn, until its life ended (%s) at %s: want every request granted within %v",
				c.name(s.l), s.req.Clock, s.req.View, clock(s.req.Time), waited.Round(time.Millisecond), how, clock(end), c.o.MaxPending)})
	}
}

// lifeEnd returns when l ended and how: at the death of its node that it
// ran into, else at its last line, by exit (node.stopped) or not. A line
// up to deathSkew after the death was still written by the life (the
// caller takes the time just before it sends the signal); a later one is
// the next process's, written before its node.started (a socket warning),
// and says nothing of when this life ended.
func (c *lockCheck) lifeEnd(l *Life) (time.Time, string) {
	if d, ok := c.deathOf(l); ok {
		if l.LastTime.After(d) && l.LastTime.Sub(d) <= deathSkew {
			d = l.LastTime
		}
		return d, "death"
	}
	if !l.Stopped.IsZero() {
		return l.LastTime, "exit"
	}
	return l.LastTime, "log end"
}

// deathOf returns the death of l's node that happened while l ran: the
// first after l started, provided no later life of the node started
// before it.
func (c *lockCheck) deathOf(l *Life) (time.Time, bool) {
	var at time.Time
	for _, d := range c.o.Deaths {
		if d.Node == l.Node && !d.At.Before(l.Started) && (at.IsZero() || d.At.Before(at)) {
			at = d.At
		}
	}
	if at.IsZero() {
		return at, false
	}
	for _, o := range c.run.Lives {
		if o != l && o.Node == l.Node && o.Started.After(l.Started) && !o.Started.After(at) {
			return time.Time{}, false // a later life ran at that death
		}
	}
	return at, true
}

// deathSkew is how long after the death a killed life's last line may
// still come: the signal's delivery.
const deathSkew = 10 * time.Millisecond

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// overlaps sorts the holds and reports each pair of lives' holds that
// overlap by more than Slack.
func (c *lockCheck) overlaps() {
	ivs := c.res.Intervals
	slices.SortStableFunc(ivs, func(a, b Interval) int { return a.Start.Compare(b.Start) })
	var active []Interval // holds started so far that end after the current start
	for _, b := range ivs {
		active = slices.DeleteFunc(active, func(a Interval) bool { return !a.End.After(b.Start) })
		for _, a := range active {
			if a.Life == b.Life {
				continue // out of turn: a MutexSequence already
			}
			c.overlap(a, b, earlier(a.End, b.End).Sub(b.Start))
		}
		active = append(active, b)
	}
}

func (c *lockCheck) overlap(a, b Interval, d time.Duration) {
	if d <= c.o.Slack && (a.Ended == "released" || a.Ended == "lost" || a.Ended == "exit") {
		c.res.Forgiven++
		c.res.MaxForgiven = max(c.res.MaxForgiven, d)
		return
	}
	c.res.Overlaps = append(c.res.Overlaps, Overlap{A: a, B: b, Length: d})
	c.res.add(Violation{Kind: MutexOverlap, Node: b.Node, Sender: a.Node, Seq: b.Clock, Count: 1, File: b.Life.File, Line: b.Line,
		Detail: fmt.Sprintf("%s acquired the lock (clock %d, view %s) at %s, held until %s (%s), while %s held it (clock %d, view %s) from %s (%s:%d) until %s (%s): both held it for %v",
			c.name(b.Life), b.Clock, b.View, clock(b.Start), clock(b.End), b.Ended,
			c.name(a.Life), a.Clock, a.View, clock(a.Start), a.Life.File, a.Line, clock(a.End), a.Ended, d)})
}

func (c *lockCheck) sequence(l *Life, e *LockEvent, what string) {
	c.res.add(Violation{Kind: MutexSequence, Node: l.Node, Seq: e.Clock, Count: 1, File: l.File, Line: e.Line,
		Detail: fmt.Sprintf("%s logged %s (clock %d) %s", c.name(l), e.Event, e.Clock, what)})
}

// name is "node N", with the incarnation when the node has several lives.
func (c *lockCheck) name(l *Life) string {
	if c.lives[l.Node] > 1 {
		return fmt.Sprintf("node %d (inc %d)", l.Node, l.Inc)
	}
	return fmt.Sprintf("node %d", l.Node)
}

// clock formats a log time to the microsecond, without the date.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000000") }

// OK reports whether no violation was found.
func (r *MutexResult) OK() bool { return r.Result.OK() }

// Err returns nil when no violation was found, else an error wrapping
// ErrViolations whose text is String.
func (r *MutexResult) Err() error {
	if r.OK() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrViolations, r.String())
}

// String is a summary line, then one line per listed violation.
func (r *MutexResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d lives, %d requests, %d entries %s, %d released (%d lost), %d withdrawn, %d pending at a death or exit",
		r.Check, r.Lives, r.Requests, r.Entries, perNode(r.PerNode), r.Releases, r.Lost, r.Withdrawn, r.Ended)
	if len(r.Waits) > 0 {
		fmt.Fprintf(&b, "; wait p50 %v p99 %v", Quantile(r.Waits, 0.5), Quantile(r.Waits, 0.99))
	}
	if r.Forgiven > 0 {
		fmt.Fprintf(&b, "; %d overlaps within the slack (longest %v)", r.Forgiven, r.MaxForgiven)
	}
	if r.Malformed > 0 {
		fmt.Fprintf(&b, ", %d malformed lines", r.Malformed)
	}
	b.WriteString(r.comparedText())
	r.writeVerdict(&b, "")
	return b.String()
}

// perNode formats entries by node, e.g. "(node 1: 12, node 2: 9)".
func perNode(m map[uint64]int) string {
	ids := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("node %d: %d", id, m[id])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Quantile is the q-quantile of ds by nearest rank (0.5: the median), 0
// for none. ds is not changed.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
