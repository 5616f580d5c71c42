package bench

import (
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/logs"
)

// BenchmarkElection measures the leader elections (docs/design.md, "Leader election")
// of real `huddle run --profile lan` nodes on a virtual LAN of 8 hosts,
// node ID = host number, for both algorithms (--election ring|bully):
//
//   - failring, failbully: failover. 5 nodes, each sending 100 msg/s of
//     1000 bytes (as BenchmarkMembership), elect node 5; after 0.5 s it
//     gets SIGKILL. The figure is the time from the kill to the moment the
//     last survivor logged leader.changed naming node 4 (the median over
//     the iterations of the maximum over the survivors). With the LAN
//     profile's timers (heartbeat 50ms, suspect timeout 400ms) the
//     detection dominates; the rows below it split it into the survivors'
//     view without node 5 (the kill → the last survivor's view.installed)
//     and the election itself (each survivor's view.installed →
//     its leader.changed, the largest of them), and count the election's
//     messages. Every run must end with node 4 as the leader of every
//     survivor, kept for 1 s.
//   - msgsring3 … msgsbully8: messages per election in quiet groups of
//     n = 3, 5 and 8 (no workload), each node with its control socket.
//     Once the group elected node n and no election event was logged for
//     300 ms, `huddle elect` starts an election at one node; the figure is
//     the sum of `sent` of that round's election.done over every node's
//     log, against the literature: ring started by the highest, 2n; ring
//     started by the lowest, which follows the highest on the ring (IDs
//     increase along it), 3n−1; bully started by the highest, n−1; bully
//     started by the lowest with everyone alive, n²−1 (n(n−1)/2 ELECTION,
//     n(n−1)/2 ANSWER, n−1 COORDINATOR). Then node n gets SIGKILL, and the
//     group runs the election itself (every survivor sees the view
//     change): all the rounds after the kill count, against 2(n−1) for
//     ring (the highest survivor starts) and n−2 COORDINATORs for bully
//     (Garcia-Molina's best case: the second-highest detects). Each row
//     also gives the growth of the nodes' msgs_sent counters over the
//     round (from `huddle status`): the multicast layer's count of what
//     was sent, a cross-check of the logs (a message sent after a node's
//     round was over, such as a bully ANSWER to a late ELECTION, has an
//     election.done of its own with late: true).
//
// The package documentation says how to run it.
func BenchmarkElection(b *testing.B) {
	s := newSuite(b)
	for _, alg := range algorithms {
		s.run("fail"+alg, func(sc *scenario) { benchFailover(sc, alg) })
	}
	for _, n := range []int{3, 5, 8} {
		for _, alg := range algorithms {
			s.run(fmt.Sprintf("msgs%s%d", alg, n), func(sc *scenario) { benchMessages(sc, alg, n) })
		}
	}
	s.print("huddle election benchmark", fmt.Sprintf("virtual LAN, --profile lan (heartbeat 50ms, suspect_timeout 400ms); "+
		"failover: %d nodes at --send-rate %d --send-size 1000; messages: quiet groups of n, the figure is Σ election.done's sent", elFailN, memRate),
		func() string {
			return "(messages: every run equal to the formula; failover: the right leader, kept)\n" +
				"reproduce: go test -run '^$' -bench Election -benchtime 3x ./internal/bench\n"
		})
}

var algorithms = []string{"ring", "bully"}

const (
	elHosts  = 8                      // the largest group
	elFailN  = 5                      // the failover group's size
	elSettle = 500 * time.Millisecond // the failover group runs this long with its leader before the kill
	elQuiet  = 300 * time.Millisecond // no election event for this long: the group is quiet
	elKept   = time.Second            // the new leader must stay this long
)

// electionGroup is a group whose nodes run the election algorithm alg.
type electionGroup struct {
	*group
	alg string
}

// electGroup starts nodes 1..n, each sending rate messages/s (none: 0),
// with control sockets when sockets, and waits until they share a view,
// agree on leader n and the group is quiet; g.err says why not.
func electGroup(sc *scenario, alg string, n, rate int, sockets bool) *electionGroup {
	g := &electionGroup{group: sc.newGroup(elHosts, sockets, "--profile", "lan", "--election", alg), alg: alg}
	hs := hosts(1, n)
	t0 := time.Now()
	g.form(hs, func(int) []string {
		if rate > 0 {
			return memberLoad(rate)
		}
		return nil
	})
	if g.err != nil {
		return g
	}
	_, err := g.waitLeader(hs, uint64(n), 0, memWait)
	if err == nil {
		err = g.waitQuiet(hs, elQuiet, memWait)
	}
	if err != nil {
		g.err = fmt.Errorf("group %s did not form with leader %d: %v", g.name, n, err)
		sc.diag("%v; events since the start:\n%s", g.err, g.excerpt(t0.Add(-time.Second), t0))
	}
	return g
}

// electionEvent is one election event of a node's log (election.started,
// election.won, leader.changed, election.done).
type electionEvent struct {
	at                  time.Time
	name                string
	round, leader, sent uint64
}

// elections returns host's election events.
func (g *electionGroup) elections(host int) []electionEvent {
	var out []electionEvent
	for _, ev := range g.events(host, logs.ElectionStarted, logs.ElectionWon, logs.LeaderChanged, logs.ElectionDone) {
		x := electionEvent{at: ev.Time, name: ev.Name}
		x.round, _ = ev.Uint(logs.RoundKey)
		x.leader, _ = ev.Uint(logs.LeaderKey)
		x.sent, _ = ev.Uint(logs.SentKey)
		out = append(out, x)
	}
	return out
}

// lastLeader returns host's last leader.changed.
func (g *electionGroup) lastLeader(host int) (electionEvent, bool) {
	evs := g.elections(host)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].name == logs.LeaderChanged {
			return evs[i], true
		}
	}
	return electionEvent{}, false
}

// leaderAgreed returns each host's last leader.changed if they all name
// want, in one round above after; else an error saying where they stand.
func (g *electionGroup) leaderAgreed(hs []int, want, after uint64) (map[int]electionEvent, error) {
	got := map[int]electionEvent{}
	ok := true
	var desc []string
	for _, h := range hs {
		ev, found := g.lastLeader(h)
		if !found {
			ok = false
			desc = append(desc, fmt.Sprintf("h%d none", h))
			continue
		}
		got[h] = ev
		desc = append(desc, fmt.Sprintf("h%d %d (round %d)", h, ev.leader, ev.round))
		ok = ok && ev.leader == want && ev.round > after && ev.round == got[hs[0]].round
	}
	if !ok {
		return nil, fmt.Errorf("want leader %d in one round above %d; last leaders %s", want, after, strings.Join(desc, ", "))
	}
	return got, nil
}

// waitLeader waits until hs agree on leader want in a round above after.
func (g *electionGroup) waitLeader(hs []int, want, after uint64, timeout time.Duration) (map[int]electionEvent, error) {
	end := time.Now().Add(timeout)
	for {
		got, err := g.leaderAgreed(hs, want, after)
		if err == nil || time.Now().After(end) {
			return got, err
		}
		if err := g.exited(hs); err != nil {
			return nil, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitQuiet waits until no node of hs logged an election event for d.
func (g *electionGroup) waitQuiet(hs []int, d, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for {
		var newest time.Time
		for _, h := range hs {
			if evs := g.elections(h); len(evs) > 0 {
				newest = later(newest, evs[len(evs)-1].at)
			}
		}
		if time.Since(newest) >= d {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("election events went on for %v (the last at %s)", timeout, newest.Format("15:04:05.000"))
		}
		if err := g.exited(hs); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (g *electionGroup) exited(hs []int) error {
	for _, h := range hs {
		if m := g.members[h]; m.Exited() {
			return fmt.Errorf("h%d exited (code %d):\n%s", h, m.Proc.ExitCode(), m.Proc.Output(2000))
		}
	}
	return nil
}

// electionRound is what the logs say of one election round.
type electionRound struct {
	round      uint64
	initiators []int
	winners    []int
	leaders    map[int]uint64 // by host: the leader of its leader.changed in the round (last one)
	sent       map[int]uint64 // by host: election.done's sent
	first      time.Time      // its first event
	last       time.Time      // its last leader.changed
}

// rounds returns the rounds that hs logged events of at or after since,
// in order.
func (g *electionGroup) rounds(hs []int, since time.Time) []*electionRound {
	by := map[uint64]*electionRound{}
	for _, h := range hs {
		for _, ev := range g.elections(h) {
			if ev.at.Before(since) {
				continue
			}
			r := by[ev.round]
			if r == nil {
				r = &electionRound{round: ev.round, leaders: map[int]uint64{}, sent: map[int]uint64{}, first: ev.at}
				by[ev.round] = r
			}
			if ev.at.Before(r.first) {
				r.first = ev.at
			}
			switch ev.name {
			case logs.ElectionStarted:
				r.initiators = append(r.initiators, h)
			case logs.ElectionWon:
				r.winners = append(r.winners, h)
			case logs.LeaderChanged:
				r.leaders[h] = ev.leader
				r.last = later(r.last, ev.at)
			case logs.ElectionDone:
				r.sent[h] += ev.sent
			}
		}
	}
	var out []*electionRound
	for _, r := range by {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, c *electionRound) int { return int(a.round) - int(c.round) })
	return out
}

func (r *electionRound) messages() uint64 {
	var n uint64
	for _, s := range r.sent {
		n += s
	}
	return n
}

func (r *electionRound) String() string {
	var per []string
	for _, h := range slices.Sorted(func(yield func(int) bool) {
		for h := range r.sent {
			if !yield(h) {
				return
			}
		}
	}) {
		per = append(per, fmt.Sprintf("h%d %d", h, r.sent[h]))
	}
	return fmt.Sprintf("round %d started by %v won by %v: %d messages (%s)", r.round, r.initiators, r.winners, r.messages(), strings.Join(per, ", "))
}

// sumMessages adds up the messages of rs.
func sumMessages(rs []*electionRound) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.messages()
	}
	return n
}

func describeRounds(rs []*electionRound) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.String())
	}
	return strings.Join(s, "; ")
}

// elect runs `huddle elect` at host's node and returns what it printed.
func (g *electionGroup) elect(host int) (string, error) {
	cmd := exec.Command(g.sc.huddle(), "elect", "--control-socket", g.members[host].Socket, "--timeout", "5s", "--json")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("huddle elect at h%d: %v: %s", host, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// --- failover ---

// failoverRun is one failover run.
type failoverRun struct {
	run      int
	total    float64 // ms: the kill → the last survivor's leader.changed; +Inf: none
	view     float64 // ms: the kill → the last survivor's view without the leader
	elect    float64 // ms: the largest view.installed → leader.changed of a survivor
	msgs     uint64  // the messages of the rounds after the kill
	problems []string
	detail   string
}

func benchFailover(sc *scenario, alg string) {
	rs := repeat(sc.N, func(i int) failoverRun {
		r := failover(sc, alg, i)
		r.run = i + 1
		sc.Logf("run %d: %s ms; %s", r.run, fmtMs(r.total), r.detail)
		return r
	})
	reportFailover(sc, rs)
}

// failover runs one failover iteration.
func failover(sc *scenario, alg string, i int) failoverRun {
	bad := failoverRun{total: math.Inf(1), view: math.NaN(), elect: math.NaN()}
	all := hosts(1, elFailN)
	g := electGroup(sc, alg, elFailN, memRate, false)
	defer g.stop(3 * time.Second)
	if g.err != nil {
		bad.problems, bad.detail = []string{g.err.Error()}, g.err.Error()
		return bad
	}
	time.Sleep(elSettle)
	before, _ := g.lastLeader(1)
	victim, next := elFailN, uint64(elFailN-1)
	survivors := without(all, victim)
	t0 := time.Now()
	g.signal(victim, syscall.SIGKILL)
	got, err := g.waitLeader(survivors, next, before.round, memWait)
	if err != nil {
		sc.diag("%s run %d: no leader %d after the kill: %v; events:\n%s", g.name, i+1, next, err, g.excerpt(t0.Add(-200*time.Millisecond), t0))
		bad.problems, bad.detail = []string{err.Error()}, err.Error()
		return bad
	}
	views, err := g.WaitViews(survivors, t0, memWait, func(_ int, v lan.View) bool { return !slices.Contains(v.Members, uint64(victim)) })
	if err != nil {
		bad.problems, bad.detail = []string{err.Error()}, err.Error()
		return bad
	}
	r := failoverRun{}
	var lastLeader, lastView time.Time
	var per []string
	for _, h := range survivors {
		lc, v := got[h], views[h]
		lastLeader, lastView = later(lastLeader, lc.at), later(lastView, v.At)
		r.elect = math.Max(r.elect, ms(lc.at.Sub(v.At)))
		per = append(per, fmt.Sprintf("h%d %.0f (view %.0f, +%.1f)", h, ms(lc.at.Sub(t0)), ms(v.At.Sub(t0)), ms(lc.at.Sub(v.At))))
	}
	r.total, r.view = ms(lastLeader.Sub(t0)), ms(lastView.Sub(t0))
	rs := g.rounds(survivors, t0)
	r.msgs = sumMessages(rs)
	if err := g.waitQuiet(survivors, elKept, memWait); err != nil {
		r.problems = append(r.problems, err.Error())
	}
	if _, err := g.leaderAgreed(survivors, next, before.round); err != nil {
		r.problems = append(r.problems, fmt.Sprintf("%v, %v after", err, elKept))
	}
	if rs = g.rounds(survivors, t0); len(rs) != 1 {
		r.problems = append(r.problems, fmt.Sprintf("%d rounds after the kill: %s", len(rs), describeRounds(rs)))
	}
	if len(r.problems) > 0 {
		sc.diag("%s run %d: %s; events:\n%s", g.name, i+1, strings.Join(r.problems, "; "), g.excerpt(t0.Add(-200*time.Millisecond), t0))
	}
	r.detail = fmt.Sprintf("SIGKILL to leader %d (round %d); leader.changed to %d at ms after it (view.installed, +election): %s; %s",
		victim, before.round, next, strings.Join(per, ", "), describeRounds(rs))
	return r
}

// reportFailover adds a failover scenario's rows: medians over its runs.
func reportFailover(sc *scenario, rs []failoverRun) {
	med := func(f func(failoverRun) float64) (float64, string) {
		var vs []float64
		var s []string
		for _, r := range rs {
			vs = append(vs, f(r))
			s = append(s, strconv.FormatFloat(f(r), 'f', 1, 64))
		}
		sorted := slices.Clone(vs)
		slices.Sort(sorted)
		return sorted[len(sorted)/2], strings.Join(s, ", ")
	}
	total, totals := med(func(r failoverRun) float64 { return r.total })
	view, viewsMs := med(func(r failoverRun) float64 { return r.view })
	el, els := med(func(r failoverRun) float64 { return r.elect })
	msgs, _ := med(func(r failoverRun) float64 { return float64(r.msgs) })
	var counts []int64
	for _, r := range rs {
		counts = append(counts, int64(r.msgs))
	}
	mid := rs[0]
	for _, r := range rs {
		if r.total == total {
			mid = r
		}
	}
	sc.add(fmt.Sprintf("SIGKILL leader %d → leader.changed (%d) at every survivor", elFailN, elFailN-1), fmtMs(total)+" ms", "-", "info",
		fmt.Sprintf("median of %d (runs in order, ms: %s); median run (%d): %s", len(rs), totals, mid.run, mid.detail))
	sc.add("  of which detection: SIGKILL → view without it at every survivor", fmtMs(view)+" ms", "-", "info", "runs in order, ms: "+viewsMs)
	sc.add("  of which the election: view.installed → leader.changed", fmt.Sprintf("%.1f ms", el), "-", "info",
		"the largest over the survivors; runs in order, ms: "+els)
	sc.add("  messages of the election after the kill", fmt.Sprintf("%.0f", msgs), "-", "info", "runs in order: "+joinInts(counts))
	var probs [][]string
	for _, r := range rs {
		probs = append(probs, r.problems)
	}
	sc.problemsRow(fmt.Sprintf("  runs that end with leader %d, in one round, kept", elFailN-1),
		fmt.Sprintf("every run: one round after the kill, node %d the leader of every survivor and kept for %v", elFailN-1, elKept), probs)
	sc.metric(total, "ms")
	sc.metric(el, "ms-election")
}

// --- messages per election ---

// electionCase is one election of a messages scenario: started by `huddle elect`
// at a node, or by the group after its leader's SIGKILL (from == 0).
type electionCase struct {
	what    string
	from    func(n int) int
	formula string
	want    func(n int) int
}

func highestNode(n int) int { return n }
func lowestNode(int) int    { return 1 }
func byCrash(int) int       { return 0 }

// linear returns n ↦ k·n + d.
func linear(k, d int) func(int) int { return func(n int) int { return k*n + d } }

var electionCases = map[string][]electionCase{
	"ring": {
		{"huddle elect at the highest", highestNode, "2n", linear(2, 0)},
		{"huddle elect at the lowest (follows the highest)", lowestNode, "3n−1", linear(3, -1)},
		{"SIGKILL the leader: the group elects", byCrash, "2(n−1)", linear(2, -2)},
	},
	"bully": {
		{"huddle elect at the highest", highestNode, "n−1", linear(1, -1)},
		{"huddle elect at the lowest, all alive", lowestNode, "n²−1", func(n int) int { return n*n - 1 }},
		{"SIGKILL the leader: the group elects", byCrash, "n−2", linear(1, -2)},
	},
}

// electionCount is one election's count.
type electionCount struct {
	msgs     uint64 // the sum of election.done's sent over the nodes and the election's rounds
	sentDiff int64  // the growth of msgs_sent over the nodes; -1: not measured
	rounds   int
	ms       float64 // the first event of its rounds → the last leader.changed
	problems []string
	detail   string
}

func benchMessages(sc *scenario, alg string, n int) {
	cases := electionCases[alg]
	res := make([][]electionCount, len(cases))
	for i := range sc.N {
		for k, c := range messages(sc, alg, n, i) {
			res[k] = append(res[k], c)
		}
	}
	for k, c := range cases {
		reportCount(sc, n, c, res[k])
	}
}

// messages runs one iteration: a group of n, then each case in turn.
func messages(sc *scenario, alg string, n, i int) []electionCount {
	cases := electionCases[alg]
	out := make([]electionCount, len(cases))
	g := electGroup(sc, alg, n, 0, true)
	defer g.stop(3 * time.Second)
	for k := range out {
		out[k] = electionCount{sentDiff: -1, ms: math.NaN()}
		if g.err != nil {
			out[k].problems = []string{g.err.Error()}
			continue
		}
		out[k] = g.count(cases[k], n)
		if len(out[k].problems) > 0 {
			sc.diag("%s run %d, %s: %s", g.name, i+1, cases[k].what, strings.Join(out[k].problems, "; "))
		}
		sc.Logf("run %d, %s: %d messages (%d formula); %s", i+1, cases[k].what, out[k].msgs, cases[k].want(n), out[k].detail)
	}
	return out
}

// count runs one case in the quiet group of n, and counts its messages.
func (g *electionGroup) count(c electionCase, n int) electionCount {
	r := electionCount{sentDiff: -1, ms: math.NaN()}
	hs := hosts(1, n)
	from := c.from(n)
	before, _ := g.lastLeader(1)
	var sent0 counterSnap
	if from != 0 {
		var err error
		if sent0, err = g.snapshot(hs); err != nil {
			r.problems = append(r.problems, err.Error())
			return r
		}
	}
	t0 := time.Now()
	want, live := uint64(n), hs
	var out string
	if from == 0 {
		g.signal(n, syscall.SIGKILL)
		want, live = uint64(n-1), hosts(1, n-1)
	} else {
		var err error
		if out, err = g.elect(from); err != nil {
			r.problems = append(r.problems, err.Error())
			return r
		}
	}
	if _, err := g.waitLeader(live, want, before.round, memWait); err != nil {
		r.problems = append(r.problems, err.Error())
		return r
	}
	if err := g.waitQuiet(live, elQuiet, memWait); err != nil {
		r.problems = append(r.problems, err.Error())
	}
	rs := g.rounds(live, t0)
	r.msgs, r.rounds = sumMessages(rs), len(rs)
	if len(rs) > 0 {
		var last time.Time
		for _, x := range rs {
			last = later(last, x.last)
		}
		r.ms = ms(last.Sub(rs[0].first))
	}
	if sent0.c != nil {
		if sent1, err := g.snapshot(hs); err == nil {
			r.sentDiff = grown(sent0, sent1, "msgs_sent")
		}
	}
	if len(rs) != 1 {
		r.problems = append(r.problems, fmt.Sprintf("%d rounds: %s", len(rs), describeRounds(rs)))
	} else if x := rs[0]; from != 0 && (len(x.initiators) != 1 || x.initiators[0] != from) {
		r.problems = append(r.problems, fmt.Sprintf("started by %v, not by h%d alone", x.initiators, from))
	}
	r.detail = describeRounds(rs)
	if out != "" {
		r.detail = fmt.Sprintf("huddle elect printed %s; %s; msgs_sent grew by %d", out, r.detail, r.sentDiff)
	}
	return r
}

// reportCount adds the rows of one case of a messages scenario: the sum
// of election.done's sent, and for an election started by `huddle elect`
// in the quiet group the growth of msgs_sent, which counts every message
// the nodes sent, the round's accounting among them, beside it.
func reportCount(sc *scenario, n int, c electionCase, rs []electionCount) {
	want := c.want(n)
	var done, grown []int64
	var durs, probs []string
	for i, r := range rs {
		done, grown = append(done, int64(r.msgs)), append(grown, r.sentDiff)
		durs = append(durs, fmt.Sprintf("%.1f", r.ms))
		for _, p := range r.problems {
			probs = append(probs, fmt.Sprintf("run %d: %s", i+1, p))
		}
	}
	target := fmt.Sprintf("%s = %d", c.formula, want)
	raw := fmt.Sprintf("runs: %s; %s ms from the round's first event to its last leader.changed; run 1: %s",
		joinInts(done), strings.Join(durs, ", "), rs[0].detail)
	if len(probs) > 0 {
		raw += "; PROBLEMS: " + strings.Join(probs, "; ")
	}
	med := medianInt(done)
	sc.add(c.what+": Σ election.done's sent", strconv.FormatInt(med, 10), target, verdict(len(probs) == 0 && allEqual(done, int64(want))), raw)
	if c.from(n) == 1 {
		sc.metric(float64(med), "msgs-from-lowest")
	}
	if c.from(n) == 0 {
		return
	}
	raw = "runs: " + joinInts(grown)
	var more []int64
	for i := range grown {
		more = append(more, grown[i]-done[i])
	}
	if slices.Max(more) > 0 {
		raw += fmt.Sprintf("; more than election.done's sent by %s", joinInts(more))
	}
	// msgs_sent counts every message the nodes multicast: besides the
	// election's, the round's accounting (each member's TALLY to the
	// leader, its RESULT) and whatever else the quiet group sends, so it
	// is shown beside the target, not held to it.
	sc.add("  the nodes' msgs_sent growth (every message, accounting included)", strconv.FormatInt(medianInt(grown), 10), "-", "info", raw)
}
