package lab

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// watcher turns the nodes' log events into console lines: one line per
// view (once its members installed it), per suspicion, per view change
// started and per warning, and a periodic traffic line. It also keeps
// what the summary and the demo's own decisions need: the views, which
// node coordinates, and the repair counters.
type watcher struct {
	con   *console
	start time.Time
	cnt   *counts

	views   []*seenView          // in the order first seen
	byKey   map[string]*seenView // by view ID and coordinator incarnation
	last    map[uint64]*seenView // the view each node installed last
	coord   uint64               // coordinator of the last view printed
	stats   map[uint64]*[4]int64 // last repair counters of each node's current life
	rep     [4]int64             // repair counters summed over lives, to now
	susp    map[uint64]time.Time // last suspicion of each member printed
	flush   map[string]bool      // view changes started, printed
	warns   map[string]int       // warnings per event name
	stop    bool                 // the demo is stopping the nodes
	down    map[uint64]bool      // nodes the demo killed or stopped
	fresh   map[uint64]bool      // nodes whose current life has no view yet
	out     []line               // of this poll, printed in time order
	left    []uint64             // nodes that logged member.left in this poll
	leftAt  time.Time
	rounds  map[uint64]*round // elections, by round
	holder  uint64            // the node that last took the lock and has not released it, 0 for none
	entries map[uint64]int    // lock entries, by node
	taken   []Entry           // every lock entry, in log order
	recent  [2]struct {       // deliveries counted at two moments, for rate
		at time.Time
		n  int64
	}
	tick struct { // at the last traffic line
		at        time.Time
		sent      [4]int64
		delivered int64
		rep       [4]int64
	}
}

// The repair counters of node.stats the watcher sums, in this order.
const (
	repNacks = iota
	repRepairs
	repGaps
	repRecovered
)

// seenView is a view as the logs show it.
type seenView struct {
	ID      string
	Key     string
	Members []uint64
	First   time.Time // log time of its first install
	seen    time.Time // wall time it was first read
	by      map[uint64]bool
	ev      event // the install the console describes: the coordinator's, else the first
	printed bool
	text    string // as printed
}

// complete reports whether every member has installed the view.
func (v *seenView) complete() bool {
	for _, m := range v.Members {
		if !v.by[m] {
			return false
		}
	}
	return true
}

func (v *seenView) installers() int {
	n := 0
	for _, m := range v.Members {
		if v.by[m] {
			n++
		}
	}
	return n
}

func newWatcher(con *console, start time.Time, cnt *counts) *watcher {
	w := &watcher{con: con, start: start, cnt: cnt, byKey: map[string]*seenView{}, last: map[uint64]*seenView{},
		stats: map[uint64]*[4]int64{}, susp: map[uint64]time.Time{}, flush: map[string]bool{},
		warns: map[string]int{}, down: map[uint64]bool{}, fresh: map[uint64]bool{}, rounds: map[uint64]*round{},
		entries: map[uint64]int{}}
	w.tick.at = start
	return w
}

func (w *watcher) since(t time.Time) time.Duration { return t.Sub(w.start) }

// line is a console line waiting to be printed in time order.
type line struct {
	at    time.Time
	style style
	text  string
}

func (w *watcher) emit(at time.Time, s style, format string, args ...any) {
	w.out = append(w.out, line{at, s, fmt.Sprintf(format, args...)})
}

// print prints the lines emitted since the last print, in time order.
func (w *watcher) print() {
	slices.SortStableFunc(w.out, func(a, b line) int { return a.at.Compare(b.at) })
	for _, l := range w.out {
		w.con.at(w.since(l.at), l.style, "%s", l.text)
	}
	w.out = w.out[:0]
}

// handle takes the events of one poll, in time order, and prints what
// they tell.
func (w *watcher) handle(evs []event) {
	for _, ev := range evs {
		w.event(ev)
	}
	if len(w.left) > 0 {
		slices.Sort(w.left)
		w.emit(w.leftAt, notice, "%s left the group", nodeList(w.left))
		w.left = w.left[:0]
	}
	w.printViews(time.Now(), false)
	w.print()
}

func (w *watcher) event(ev event) {
	switch ev.Event {
	case logs.NodeStarted:
		w.stats[ev.Node] = new([4]int64)
		w.fresh[ev.Node] = true
	case logs.ViewInstalled:
		w.fresh[ev.Node] = false
		w.installed(ev)
	case logs.StreamSkipped:
		if w.fresh[ev.Node] || ev.Level != logs.LevelWarn { // info: sent before this node's view needed them
			// A joiner hears of messages sent before it joined, which
			// nobody needs to repair for it.
			what := fmt.Sprintf("messages %d-%d", ev.FromSeq, ev.FromSeq+ev.Count-1)
			if ev.Count == 1 {
				what = fmt.Sprintf("message %d", ev.FromSeq)
			}
			w.emit(ev.Time, plain, "node %d passes over %s of node %d: sent before it joined", ev.Node, what, ev.Peer)
			return
		}
		w.warn(ev)
	case logs.ViewFlushStarted:
		key := fmt.Sprint(ev.Epoch, ev.Attempt, ev.Proposed)
		if !w.flush[key] {
			w.flush[key] = true
			again := ""
			if ev.Attempt > 1 {
				again = fmt.Sprintf(" (attempt %d)", ev.Attempt)
			}
			w.emit(ev.Time, notice, "node %d starts a view change%s, proposing %s", ev.Node, again, ids(ev.Proposed))
		}
	case logs.MemberSuspected:
		if t, ok := w.susp[ev.Member]; !ok || ev.Time.Sub(t) > time.Second {
			w.susp[ev.Member] = ev.Time
			w.emit(ev.Time, notice, "node %d suspects node %d: silent for %d ms", ev.Node, ev.Member, ev.SilentMs)
		}
	case logs.OrderTaken:
		w.emit(ev.Time, plain, "node %d sends alone: node %d hands it total order's sequencing (from number %d of view %s)", ev.Node, ev.By, ev.GSeq, ev.View)
	case logs.MemberLeft:
		if len(w.left) == 0 {
			w.leftAt = ev.Time
		}
		w.left = append(w.left, ev.Node)
	case logs.ElectionStarted, logs.ElectionWon, logs.ElectionDone:
		w.election(ev)
	case logs.MutexAcquired, logs.MutexReleased:
		w.lock(ev)
	case logs.NodeStats:
		w.addStats(ev)
	case logs.NodeStopped:
		if !w.stop && !w.down[ev.Node] {
			w.emit(ev.Time, bad, "node %d stopped by itself: %s", ev.Node, ev.Reason)
		}
	default:
		if ev.Level == logs.LevelWarn || ev.Level == logs.LevelError {
			w.warn(ev)
		}
	}
}

// quietWarnings are warnings of no interest in a demo: the kernel of a
// laptop caps the socket buffer below what a node asks for.
var quietWarnings = map[string]bool{logs.SocketRcvbufCapped: true}

// maxWarnings is how many warnings of one kind are shown.
const maxWarnings = 3

func (w *watcher) warn(ev event) {
	if quietWarnings[ev.Event] {
		return
	}
	w.warns[ev.Event]++
	switch n := w.warns[ev.Event]; {
	case n <= maxWarnings:
		msg := ev.Message
		if ev.Error != "" {
			msg += ": " + ev.Error
		}
		w.emit(ev.Time, bad, "node %d: %s (%s)", ev.Node, msg, ev.Event)
	case n == maxWarnings+1:
		w.emit(ev.Time, bad, "(more %s warnings: counted in the summary)", ev.Event)
	}
}

func (w *watcher) installed(ev event) {
	key := ev.View + "@" + strconv.FormatUint(ev.CoordInc, 10)
	v := w.byKey[key]
	if v == nil {
		v = &seenView{ID: ev.View, Key: key, Members: ev.Members, First: ev.Time, seen: time.Now(),
			by: map[uint64]bool{}, ev: ev}
		w.byKey[key] = v
		w.views = append(w.views, v)
	}
	v.by[ev.Node] = true
	if len(ev.Members) > 0 && ev.Node == ev.Members[0] {
		v.ev = ev // the coordinator's account of the change
	}
	if ev.Time.Before(v.First) {
		v.First = ev.Time
	}
	w.last[ev.Node] = v
}

// viewWait is how long a view waits for its last members before it is
// printed anyway (a member died during the change, or moved on).
const viewWait = 500 * time.Millisecond

// printViews prints the views that every member installed, or that waited
// long enough, or all of them when force.
func (w *watcher) printViews(now time.Time, force bool) {
	var ready []*seenView
	for _, v := range w.views {
		if !v.printed && (force || v.complete() || now.Sub(v.seen) >= viewWait) {
			ready = append(ready, v)
		}
	}
	slices.SortStableFunc(ready, func(a, b *seenView) int { return a.First.Compare(b.First) })
	for _, v := range ready {
		v.printed = true
		v.text = w.describe(v)
		w.emit(v.First, viewed, "view %s %s: %s", v.ID, ids(v.Members), v.text)
		if len(v.Members) > 0 {
			w.coord = v.Members[0]
		}
	}
}

// describe says what changed with v, from its coordinator's log: one
// line, and notes for lines of their own.
func (w *watcher) describe(v *seenView) string {
	e := v.ev
	var parts, notes []string
	switch {
	case len(v.Members) > 1 && len(e.Joined) == len(v.Members):
		parts = append(parts, "group formed")
	case len(v.Members) == 1 && len(e.Joined) == 1:
		parts = append(parts, fmt.Sprintf("node %d alone, for now", v.Members[0]))
	case len(e.Joined) > 0:
		parts = append(parts, nodeList(e.Joined)+" joined")
	}
	if len(e.Crashed) > 0 {
		parts = append(parts, nodeList(e.Crashed)+" crashed")
	}
	if len(e.Left) > 0 {
		parts = append(parts, nodeList(e.Left)+" left")
	}
	if e.FlushMs > 0 {
		parts = append(parts, fmt.Sprintf("flush %d ms", e.FlushMs))
	}
	switch n := v.installers(); {
	case n < len(v.Members):
		parts = append(parts, fmt.Sprintf("installed by %d of %d so far", n, len(v.Members)))
	case n == 2:
		parts = append(parts, "installed by both")
	case n > 2:
		parts = append(parts, fmt.Sprintf("installed by all %d", n))
	}
	if len(parts) == 0 {
		parts = append(parts, "no change of members")
	}
	if len(v.Members) > 0 && v.Members[0] != w.coord {
		if w.coord == 0 {
			notes = append(notes, fmt.Sprintf("node %d coordinates the group and sequences total order", v.Members[0]))
		} else {
			notes = append(notes, fmt.Sprintf("node %d takes over as coordinator and total-order sequencer", v.Members[0]))
		}
	}
	if n := w.cnt.final[e.Node][e.Prior]; n > 0 {
		notes = append(notes, fmt.Sprintf("the flush ordered %d total/safe messages of view %s that had no order record yet", n, e.Prior))
	}
	return strings.Join(append([]string{strings.Join(parts, "; ")}, notes...), "\n")
}

// addStats adds what a node's repair counters moved since its last stats.
func (w *watcher) addStats(ev event) {
	now := [4]int64{ev.NacksSent, ev.RepairsSent, ev.GapsDetected, ev.GapsRecovered}
	last := w.stats[ev.Node]
	if last == nil {
		last = new([4]int64)
		w.stats[ev.Node] = last
	}
	for i := range now {
		if d := now[i] - last[i]; d > 0 {
			w.rep[i] += d
		}
	}
	*last = now
}

// trafficLine prints what was sent, delivered and repaired since the last
// traffic line.
func (w *watcher) trafficLine(now time.Time) {
	secs := now.Sub(w.tick.at).Seconds()
	if secs <= 0 {
		return
	}
	sent, _ := total(w.cnt.sent)
	_, delivered := total(w.cnt.delivered)
	var per []string
	var all int64
	for i, o := range Orders {
		d := sent[i] - w.tick.sent[i]
		all += d
		if sent[i] > 0 { // an order no node uses is not worth a word
			per = append(per, fmt.Sprintf("%s %.0f", o, float64(d)/secs))
		}
	}
	rep := w.rep
	if all == 0 && delivered == w.tick.delivered && rep == w.tick.rep {
		w.tick.at = now
		return // no traffic: nothing to say
	}
	w.con.at(w.since(now), traffic, "traffic  sent %.0f msg/s (%s), %.0f deliveries/s; %d NACKs, %d repairs, %d lost messages recovered",
		float64(all)/secs, strings.Join(per, ", "), float64(delivered-w.tick.delivered)/secs,
		rep[repNacks]-w.tick.rep[repNacks], rep[repRepairs]-w.tick.rep[repRepairs], rep[repRecovered]-w.tick.rep[repRecovered])
	w.tick.at, w.tick.sent, w.tick.delivered, w.tick.rep = now, sent, delivered, rep
}

// rate returns the deliveries per second over about the last second,
// delivered being the count now.
func (w *watcher) rate(now time.Time, delivered int64) float64 {
	r := &w.recent
	if r[1].at.IsZero() || now.Sub(r[1].at) >= time.Second {
		r[0], r[1] = r[1], r[0]
		r[1].at, r[1].n = now, delivered
	}
	if r[0].at.IsZero() {
		return 0
	}
	return float64(delivered-r[0].n) / now.Sub(r[0].at).Seconds()
}

// current returns the view most of the given running nodes installed
// last (the newest such view on a tie), or nil.
func (w *watcher) current(running []uint64) *seenView {
	votes := map[*seenView]int{}
	var best *seenView
	for _, id := range running {
		v := w.last[id]
		if v == nil {
			continue
		}
		votes[v]++
		if best == nil || votes[v] > votes[best] || votes[v] == votes[best] && v.First.After(best.First) {
			best = v
		}
	}
	return best
}

// round is what the logs told of one election round.
type round struct {
	starters []uint64
	done     map[uint64]bool
	sent     int
	longest  float64 // ms, the slowest node's duration
	leader   uint64
	said     bool // the outcome was printed
}

// election follows the election events: who starts a round, who wins, and
// once every member of the round's view is done, the leader and the
// messages the round took (the sum of election.done's sent).
func (w *watcher) election(ev event) {
	r := w.rounds[ev.Round]
	if r == nil {
		r = &round{done: map[uint64]bool{}}
		w.rounds[ev.Round] = r
	}
	switch ev.Event {
	case logs.ElectionStarted:
		if len(r.starters) == 0 {
			w.emit(ev.Time, notice, "node %d starts a %s election (round %d)", ev.Node, ev.Algorithm, ev.Round)
		}
		r.starters = append(r.starters, ev.Node)
	case logs.ElectionWon:
		r.leader = ev.Leader
		w.emit(ev.Time, good, "node %d wins the %s election of round %d", ev.Node, ev.Algorithm, ev.Round)
	case logs.ElectionDone:
		r.done[ev.Node], r.sent, r.leader = true, r.sent+ev.Sent, ev.Leader
		r.longest = max(r.longest, ev.Duration)
		if v := w.last[ev.Node]; !r.said && v != nil && len(r.done) >= len(v.Members) {
			r.said = true
			also := ""
			if len(r.starters) > 1 {
				also = fmt.Sprintf("; %d nodes started it at once", len(r.starters))
			}
			w.emit(ev.Time, plain, "round %d: every node knows leader %d; %d election messages, %.1f ms%s",
				ev.Round, r.leader, r.sent, r.longest, also)
		}
	}
}

// lock follows the lock: every entry, with its wait and messages, and a
// lock taken away or passed on from a node that died holding it.
func (w *watcher) lock(ev event) {
	switch ev.Event {
	case logs.MutexAcquired:
		after := ""
		if h := w.holder; h != 0 && h != ev.Node && w.down[h] {
			after = fmt.Sprintf(", after node %d died holding it", h)
		}
		w.holder = ev.Node
		w.entries[ev.Node]++
		w.taken = append(w.taken, Entry{Node: ev.Node, WaitMs: ev.WaitMs, Messages: ev.Messages})
		w.emit(ev.Time, good, "node %d takes the lock after waiting %.0f ms (%d messages)%s", ev.Node, ev.WaitMs, ev.Messages, after)
	case logs.MutexReleased:
		if w.holder == ev.Node {
			w.holder = 0
		}
		if ev.Lost {
			w.emit(ev.Time, bad, "node %d lost the lock after %.0f ms: its view no longer has the quorum, or no longer holds it", ev.Node, ev.HeldMs)
		}
	}
}
