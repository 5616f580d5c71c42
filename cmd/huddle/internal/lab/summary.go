package lab

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
)

// Summary is the outcome of a demo run.
type Summary struct {
	Mode     string // "root" or "rootless" (a virtual LAN), or "in-process"
	Fallback string // why the nodes ran in this process; "" on a virtual LAN
	LogDir   string // the nodes' logs; "" once removed (Options.RemoveLogs)
	Nodes    []NodeSummary
	Views    []View // every view installed, in the order first installed

	// The crash and the rejoin: the node killed (0 if none), and when
	// (since the nodes were started) it was killed, first left out of a
	// view, restarted, and first back in a view; zero if it did not happen.
	Killed                   uint64
	KilledAt, ExcludedAt     time.Duration
	RestartedAt, RejoinedAt  time.Duration
	ExcludedView, RejoinView string

	// Seconds is the run's length, from the start of the nodes to their
	// stop; Rounds the election rounds, Entries the lock's entries.
	Seconds float64
	Rounds  []Round
	Entries []Entry

	Checks      []Check
	Interrupted bool
	OK          bool // every check that ran passed, and the run was not interrupted
}

// NodeSummary is what one node did over all its lives.
type NodeSummary struct {
	ID               uint64
	Lives            int
	Sent, Delivered  [4]int64 // per order: fifo, total, safe, causal (see Orders)
	Nacks, Repairs   int64    // NACK datagrams and repairs sent
	Found, Recovered int64    // messages found missing, and received later
	Views            int      // views installed
	Locks            int64    // lock entries
	Stopped          int      // lives that logged node.stopped
	StopReason       string   // of the last life
}

// Round is an election round: its leader and its messages (every node's
// election.done sent, summed).
type Round struct {
	Round, Leader uint64
	Messages      int
}

// Entry is one entry into the lock.
type Entry struct {
	Node     uint64
	WaitMs   float64
	Messages int
}

// View is a view as installed during the run.
type View struct {
	ID                    string
	Members               []uint64
	Joined, Left, Crashed []uint64 // as its coordinator logged them
	At                    time.Duration
	Installers            int // members that logged installing it
	Text                  string
}

// Check is the result of one check of the logs.
type Check struct {
	Name    string
	What    string
	Skipped string // why it did not run; "" if it ran
	Passed  bool
	Result  *logcheck.Result // for a logcheck check
	Detail  string           // summary line and violations
}

func (d *demo) summarize(interrupted bool) *Summary {
	s := &Summary{Mode: d.mode, Fallback: d.why, LogDir: d.dir, Interrupted: interrupted}
	if d.mode != "in-process" {
		s.Fallback = ""
	}
	for _, v := range d.w.views {
		e := v.ev
		s.Views = append(s.Views, View{ID: v.ID, Members: v.Members, Joined: e.Joined, Left: e.Left, Crashed: e.Crashed,
			At: d.w.since(v.First), Installers: v.installers(), Text: v.text})
	}
	slices.SortStableFunc(s.Views, func(a, b View) int { return int(a.At - b.At) })
	d.crashStory(s)
	s.Seconds = d.stopped.Sub(d.start).Seconds()
	for _, r := range slices.Sorted(maps.Keys(d.w.rounds)) {
		s.Rounds = append(s.Rounds, Round{Round: r, Leader: d.w.rounds[r].leader, Messages: d.w.rounds[r].sent})
	}
	s.Entries = d.w.taken

	var paths []string
	for _, id := range d.ids() {
		if _, err := os.Stat(d.logPath(id)); err == nil {
			paths = append(paths, d.logPath(id))
		}
	}
	run, err := logcheck.Load(paths...)
	if err == nil && len(paths) == 0 {
		err = errors.New("no node wrote a log")
	}
	if err != nil {
		s.Checks = append(s.Checks, Check{Name: "logs", What: "reading the logs", Detail: err.Error()})
		s.Nodes = d.nodes(&logcheck.Run{})
		return s
	}
	s.Nodes = d.nodes(run)
	o := logcheck.AllOptions{
		// Each node writes its own log: the next holder's mutex.acquired
		// may be written a moment before the last holder's release line.
		Skew: 5 * time.Millisecond,
	}
	o.Deaths = d.deaths
	for _, v := range run.CheckAll(o) {
		c := resultCheck(v.Name, v.What, v.Result, "")
		c.Detail = v.Text
		s.Checks = append(s.Checks, c)
	}
	if d.o.Plan == nil {
		s.Checks = append(s.Checks, d.scenario(s))
	}
	s.OK = !interrupted
	for _, c := range s.Checks {
		s.OK = s.OK && (c.Passed || c.Skipped != "")
	}
	return s
}

func resultCheck(name, what string, res *logcheck.Result, skipped string) Check {
	c := Check{Name: name, What: what, Skipped: skipped, Result: res}
	if res != nil {
		c.Passed, c.Detail = res.OK(), res.String()
	}
	return c
}

// crashStory finds the views that followed the kill and the restart.
func (d *demo) crashStory(s *Summary) {
	if d.killed.IsZero() {
		return
	}
	s.Killed, s.KilledAt = d.victim, d.killed.Sub(d.start)
	if !d.revived.IsZero() {
		s.RestartedAt = d.revived.Sub(d.start)
	}
	for _, v := range s.Views {
		in := slices.Contains(v.Members, d.victim)
		switch {
		case s.ExcludedView == "" && v.At >= s.KilledAt && !in:
			s.ExcludedAt, s.ExcludedView = v.At, v.ID
		case s.RejoinView == "" && s.RestartedAt > 0 && v.At >= s.RestartedAt && in:
			s.RejoinedAt, s.RejoinView = v.At, v.ID
		}
	}
}

// scenario checks that the run showed what the demo is about: the group
// formed, left the killed coordinator out, took it back, and delivered
// messages of every order.
func (d *demo) scenario(s *Summary) Check {
	c := Check{Name: "scenario", What: "the group formed, excluded the killed coordinator, took it back, and delivered every order"}
	if s.Interrupted {
		c.Skipped = "interrupted"
		return c
	}
	n := len(d.ids())
	var problems []string
	formed := slices.ContainsFunc(s.Views, func(v View) bool { return len(v.Members) == n && v.At < s.KilledAt })
	if !formed {
		problems = append(problems, fmt.Sprintf("no view of all %d nodes before the kill", n))
	}
	if s.Killed == 0 {
		problems = append(problems, "no node was killed")
	} else if s.ExcludedView == "" {
		problems = append(problems, fmt.Sprintf("no view without node %d after it was killed", s.Killed))
	}
	if s.Killed != 0 && s.RejoinView == "" {
		problems = append(problems, fmt.Sprintf("no view with node %d again after its restart", s.Killed))
	} else if i := slices.IndexFunc(s.Views, func(v View) bool { return v.ID == s.RejoinView }); i >= 0 && len(s.Views[i].Members) != n {
		if !slices.ContainsFunc(s.Views[i:], func(v View) bool { return len(v.Members) == n && v.At < d.stopped.Sub(d.start) }) {
			problems = append(problems, fmt.Sprintf("the group was not whole again (all %d nodes in one view) after the restart", n))
		}
	}
	sent, _ := total(d.cnt.sent)
	delivered, _ := total(d.cnt.delivered)
	for i, o := range Orders {
		if sent[i] > 0 && delivered[i] == 0 {
			problems = append(problems, fmt.Sprintf("%d %s messages sent, none delivered", sent[i], o))
		}
	}
	c.Passed = len(problems) == 0
	c.Detail = strings.Join(problems, "; ")
	return c
}

// nodes sums up each node from its lives in run and the counts.
func (d *demo) nodes(run *logcheck.Run) []NodeSummary {
	var out []NodeSummary
	for _, id := range d.ids() {
		ns := NodeSummary{ID: id, Sent: of(d.cnt.sent, id), Delivered: of(d.cnt.delivered, id)}
		for _, l := range run.Nodes(id) {
			ns.Lives++
			ns.Views += len(l.Views)
			if st, ok := l.LastStats(); ok {
				ns.Nacks += st.Get("nacks_sent")
				ns.Repairs += st.Get("repairs_sent")
				ns.Found += st.Get("gaps_detected")
				ns.Recovered += st.Get("gaps_recovered")
				ns.Locks += st.Get("lock_entries")
			}
			if !l.Stopped.IsZero() {
				ns.Stopped++
			}
			ns.StopReason = l.StopReason
		}
		out = append(out, ns)
	}
	return out
}

// report prints the summary.
func (d *demo) report(s *Summary) {
	c := d.con
	c.say(plain, "")
	where := "on a virtual LAN (" + s.Mode + ")"
	if s.Mode == "in-process" {
		where = "in this process"
	}
	loss := pct(d.o.Loss) + " loss"
	if d.o.Plan != nil {
		loss = d.o.Plan.Loss.String()
	}
	c.say(action, "summary: %s, %d nodes %s, %s", secs(d.stopped.Sub(d.start)), len(s.Nodes), where, loss)
	c.say(plain, "  %4s %5s %6s %9s %6s %6s %6s %6s %6s %7s %9s %5s %5s", "node", "lives", "sent", "delivered", "fifo", "total", "safe", "causal", "NACKs", "repairs", "recovered", "views", "locks")
	var all NodeSummary
	for _, n := range s.Nodes {
		d.nodeRow(fmt.Sprint(n.ID), n)
		all.Lives += n.Lives
		for i := range Orders {
			all.Sent[i] += n.Sent[i]
			all.Delivered[i] += n.Delivered[i]
		}
		all.Nacks += n.Nacks
		all.Repairs += n.Repairs
		all.Found += n.Found
		all.Recovered += n.Recovered
		all.Views += n.Views
		all.Locks += n.Locks
	}
	d.nodeRow("all", all)
	c.say(plain, "  (fifo, total, safe, causal: delivered in each order; NACKs and repairs: sent; recovered: lost messages received later; locks: entries)")
	c.say(plain, "  %s", d.viewStory(s))
	c.say(plain, "  checks of the logs (as huddle check runs them):")
	for _, ch := range s.Checks {
		switch {
		case ch.Skipped != "":
			c.say(plain, "    --    %s (%s): %s", ch.Name, ch.What, ch.Skipped)
		case ch.Passed:
			c.say(good, "    ok    %s (%s)", ch.Name, ch.What)
		default:
			c.say(bad, "    FAIL  %s (%s)", ch.Name, ch.What)
			for _, line := range strings.Split(ch.Detail, "\n") {
				c.say(bad, "            %s", line)
			}
		}
	}
	verdict, st := "PASS", good
	if !s.OK {
		verdict, st = "FAIL", bad
		if s.Interrupted {
			verdict = "INTERRUPTED"
		}
	}
	logs := "logs in " + s.LogDir + " (nodeN.json: the JSON log of node N"
	if s.Mode == "in-process" {
		logs += ")"
	} else {
		logs += "; nodeN.log: its stderr)"
	}
	if d.o.RemoveLogs && s.OK {
		d.removeLogs()
		logs, s.LogDir = "logs removed", ""
	}
	c.say(st, "%s  %s", verdict, logs)
}

func (d *demo) nodeRow(name string, n NodeSummary) {
	var delivered int64
	for _, x := range n.Delivered {
		delivered += x
	}
	var sent int64
	for _, x := range n.Sent {
		sent += x
	}
	d.con.say(plain, "  %4s %5d %6d %9d %6d %6d %6d %6d %6d %7d %9s %5d %5d", name, n.Lives, sent, delivered,
		n.Delivered[0], n.Delivered[1], n.Delivered[2], n.Delivered[3], n.Nacks, n.Repairs, fmt.Sprint(n.Recovered), n.Views, n.Locks)
}

// viewStory is one line about the views: how many, and the crash and
// the rejoin.
func (d *demo) viewStory(s *Summary) string {
	b := fmt.Sprintf("views: %d distinct", len(s.Views))
	if s.Killed == 0 {
		return b
	}
	b += fmt.Sprintf("; node %d killed at %s", s.Killed, secs(s.KilledAt))
	if s.ExcludedView != "" {
		b += fmt.Sprintf(", out of view %s %v later", s.ExcludedView, (s.ExcludedAt - s.KilledAt).Round(time.Millisecond))
	} else {
		b += ", never left out of a view"
	}
	if s.RestartedAt > 0 {
		b += fmt.Sprintf("; restarted at %s", secs(s.RestartedAt))
		if s.RejoinView != "" {
			b += fmt.Sprintf(", back in view %s %v later", s.RejoinView, (s.RejoinedAt - s.RestartedAt).Round(time.Millisecond))
		} else {
			b += ", never back in a view"
		}
	}
	return b
}

// removeLogs deletes the nodes' logs, and the directory if the demo made it.
func (d *demo) removeLogs() {
	if d.o.LogDir == "" {
		os.RemoveAll(d.dir)
		return
	}
	for _, id := range d.ids() {
		os.Remove(d.logPath(id))
		os.Remove(filepath.Join(d.dir, fmt.Sprintf("node%d.log", id)))
	}
}
