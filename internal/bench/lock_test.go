package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/lab"
	"github.com/huddle-lan/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// BenchmarkLock measures the Ricart–Agrawala lock (docs/design.md, "Mutual exclusion")
// of real `huddle run --profile local --loopback=false` nodes on a
// virtual LAN of 8 hosts, node ID = host number:
//
//   - token: the baseline. The lock's best case hands it on with one
//     message, the reply the holder deferred; the raw counterpart is a
//     token ring of plain UDP unicast over hosts 1..5 (the test binary
//     re-executed in each host's namespace with HUDDLE_BENCH_TOKEN=1, one
//     Go P, as huddle): each host forwards the token to the next at once,
//     nothing is repaired. The figure is hand-offs per second, the tokens
//     every host received from the first arrival to the last, over 2.5 s.
//   - contend0, contend5: 5 nodes on hosts 1..5, each with --lock-think
//     0s --lock-hold 0s (it requests again as soon as it released), at 0 %
//     and with the lab's 5 % random loss on every host's input
//     (lab.SetLoss, as the other benchmarks). From 0.5 s after the last
//     node installed the view of all 5, a window of 4 s: entries per
//     second (mutex.acquired of every node in the window), the wait p50
//     and p99 (their wait_ms), their messages and datagrams (2(n−1) = 8
//     and n = 5 in a stable view), and what the nodes sent per entry (the
//     growth of data_datagrams and msgs_sent in their node.stats, every
//     500 ms). contend0's rate is a ratio to token's, contend5's to
//     contend0's (for information: a token ring dies at the first loss,
//     and an entry with zero hold costs about 0.15 ms, a lost datagram's
//     detection and repair one to a few ms). Target at 5 %: wait p99 at
//     most 10 ms, half the local profile's heartbeat: a loss costs a
//     repair, not a wait for the next session message (the tail probe).
//     Targets: at 0 % every node entered, the fewest entries of a node at
//     least 10 % of the mean, in every run; no two stays in the critical
//     section overlap, in any run (a node's mutex.acquired to its next
//     mutex.released, from the group's formation to the end of the
//     window; see lockHold for where a stay ends, and overlaps up to 1 ms
//     are counted as logging skew); and logcheck.CheckMutex over the whole
//     logs finds no event out of turn and no request left waiting. The
//     rows also give stalls (gaps of more than 5 ms between two entries of
//     the group), requests not granted within 1 s, nodes that exited, and
//     views, suspicions or warnings during the window.
//   - msgs3, msgs5, msgs8: messages per entry in a quiet group of n (no
//     other workload): node 1 with --lock-think 100ms --lock-hold 0s, the
//     others idle, every node with its control socket. Once the group
//     formed and its election is over, the counters of every node are
//     read (`huddle status`), and again 2 s later, each time when no entry
//     is in progress. The figure is the median of messages of node 1's
//     entries in between; target: every entry of every run 2(n−1). For
//     information: their datagrams (n), the growth of lock_msgs_sent
//     (2(n−1)), msgs_sent and data_datagrams (n: the request is one
//     multicast) and datagrams_out (with the session messages), summed
//     over the nodes, per entry, and the wait when nobody contends.
//
// Run it with
//
//	go test -run '^$' -bench Lock -benchtime 3x ./internal/bench
//
// as root (about 70 s). One scenario alone with -bench
// 'Lock/contend5' (it measures what it is compared with first, once).
// BENCH_LOGDIR keeps the logs, LAB_HUDDLE_BIN names a prebuilt huddle,
// BENCH_HUDDLE_ARGS adds words to every huddle command line.
func BenchmarkLock(b *testing.B) {
	if err := lab.Available(); err != nil {
		b.Skip(err)
	}
	dir, err := os.MkdirTemp("", "huddle-lock-")
	if err != nil {
		b.Fatal(err)
	}
	e := &lenv{menv: &menv{env: &env{parent: b, hwm: map[string][]float64{}}, port: 7900}, socks: dir, tokenPort: 8000}
	b.Cleanup(func() { e.close(); os.RemoveAll(dir) })
	b.Run("token", e.benchToken)
	b.Run("contend0", func(b *testing.B) { e.benchContend(b, "contend0", 0) })
	b.Run("contend5", func(b *testing.B) { e.benchContend(b, "contend5", lockLoss) })
	for _, n := range []int{3, 5, 8} {
		b.Run(fmt.Sprintf("msgs%d", n), func(b *testing.B) { e.benchMsgs(b, n) })
	}
	e.printLockTable()
}

const (
	lockHosts      = 8                      // the largest group
	lockContenders = 5                      // the contention scenarios' group
	lockSkip       = 500 * time.Millisecond // after the group formed, before the window
	lockWindow     = 4 * time.Second        // the contention scenarios' window
	lockLoss       = 0.05                   // contend5's loss on every host
	lockStatsEvery = 500 * time.Millisecond // --stats-interval
	lockSkewTol    = time.Millisecond       // overlaps up to this are logging skew
	lockStall      = time.Second            // a request waiting longer is reported
	lockFairness   = 0.10                   // the fewest entries of a node / the mean, at least
	lockWaitP99    = 10 * time.Millisecond  // at 5 % loss, the wait p99 at most: half the local heartbeat
	tokenFor       = 2500 * time.Millisecond
	lockIdleThink  = 100 * time.Millisecond // the messages scenarios' requester
	lockMsgsFor    = 2 * time.Second        // between the two readings of the counters
	lockPad        = 5 * time.Millisecond   // an entry's requests are written just before mutex.requested is logged
	lockGap        = 5 * time.Millisecond   // a longer gap between two entries of the group is a stall
)

// lenv is what the sub-benchmarks of BenchmarkLock share: the membership
// benchmark's environment (binary, LAN, report), on a LAN of 8 hosts, the
// directory of the nodes' control sockets and the baselines.
type lenv struct {
	*menv
	socks     string
	tokenPort int
	token     float64 // raw hand-offs/s over hosts 1..5
	zero      float64 // huddle's entries/s at 0 % loss
}

// lan8 returns the LAN of 8 hosts, built on first use (menv closes it).
func (e *lenv) lan8(b *testing.B) *lab.LAN {
	if e.menv.lan == nil {
		opts := lab.Options{Hosts: lockHosts, Logf: b.Logf, Grace: 2 * time.Second}
		if dir := os.Getenv(logDirEnv); dir != "" {
			opts.LogDir = filepath.Join(dir, "lock")
		}
		l, err := lab.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		e.menv.lan = l
		e.method = l.LossMethod()
	}
	return e.menv.lan
}

// --- the token ring ---

func (e *lenv) benchToken(b *testing.B) {
	if !e.begin(b, "token") {
		return
	}
	e.measureToken(b, b.N)
	b.ReportMetric(e.token, "handoffs/s")
}

func (e *lenv) measureToken(b *testing.B, n int) {
	l := e.lan8(b)
	var all []string
	t, runs := median(n, func() *tokenRun {
		t := e.runToken(b, l, hosts(1, lockContenders), tokenFor)
		all = append(all, rate(t.rate(), "/s"))
		return t
	}, (*tokenRun).rate)
	e.token = t.rate()
	// A lost token (re-injected) or a send error shows in the detail.
	e.add(row{"token", "raw UDP token ring over hosts 1..5: hand-offs/s", rate(e.token, "/s"), "-", "info",
		fmt.Sprintf("median of %d (runs in order: %s); median run: %s", runs, strings.Join(all, ", "), t.detail())})
}

func (e *lenv) ensureToken(b *testing.B) float64 {
	if e.token == 0 {
		e.measureToken(b, 1)
	}
	return e.token
}

// --- contention ---

// cres is one contention run.
type cres struct {
	run        int
	rate       float64     // entries/s in the window; NaN: no group
	entries    map[int]int // by host
	waits      []time.Duration
	msgs       []int64 // messages of the entries
	dgField    []int64 // datagrams of the entries
	dgrams     float64 // data_datagrams per entry; NaN: unknown
	sent       float64 // msgs_sent per entry
	safe       safety
	lc         *logcheck.MutexResult // CheckMutex over the whole logs; nil: not run
	fairness   float64               // the fewest entries of a node / the mean
	maxGap     time.Duration
	stalls     int           // gaps of more than lockGap between two entries of the group
	stalled    time.Duration // their sum
	recovery   string        // the nodes' recovery p50/p99 of lost datagrams, µs
	longest    time.Duration // the longest wait, granted or not
	problems   []string      // FAIL
	odd        []string      // info
	load, form string
}

func (e *lenv) benchContend(b *testing.B, name string, loss float64) {
	if !e.begin(b, name) {
		return
	}
	base := 0.0
	if loss == 0 {
		base = e.ensureToken(b)
	} else if base = e.zero; base == 0 {
		r := e.contend(b, "contend0", 0)
		r.run = 1
		base, e.zero = r.rate, r.rate
		e.add(row{"contend0", "5 nodes contending, 0 % loss (contend5's base, one run): entries/s", rate(base, "entries/s"), "-", "info", r.detail()})
	}
	var rs []cres
	for i := range b.N {
		r := e.contend(b, name, loss)
		r.run = i + 1
		b.Log(r.detail())
		rs = append(rs, r)
	}
	med := medianCres(rs)
	if loss == 0 {
		e.zero = med.rate
	}
	e.reportContend(b, name, loss, base, rs, med)
}

// medianCres is the run with the median rate (a run without a group
// counts as the slowest).
func medianCres(rs []cres) cres {
	key := func(r cres) float64 {
		if math.IsNaN(r.rate) {
			return -1
		}
		return r.rate
	}
	s := slices.SortedFunc(slices.Values(rs), func(a, c cres) int {
		switch ka, kc := key(a), key(c); {
		case ka < kc:
			return -1
		case ka > kc:
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

// contend runs one contention run: 5 nodes, think 0, hold 0.
func (e *lenv) contend(b *testing.B, name string, loss float64) cres {
	l := e.lan8(b)
	all := hosts(1, lockContenders)
	if loss > 0 {
		for _, h := range all {
			if err := l.SetLoss(h, loss); err != nil {
				b.Fatal(err)
			}
		}
		defer func() {
			for _, h := range all {
				l.SetLoss(h, 0)
			}
		}()
	}
	g := e.lockGroup(b, name, all, func(int) []string { return []string{"--lock-think", "0s", "--lock-hold", "0s"} }, false)
	defer g.stop()
	if g.err != nil {
		return cres{rate: math.NaN(), dgrams: math.NaN(), sent: math.NaN(), problems: []string{g.err.Error()}}
	}
	from := g.formed.Add(lockSkip)
	to := from.Add(lockWindow)
	time.Sleep(time.Until(from))
	c0 := readCPU()
	time.Sleep(time.Until(to))
	load := machineLoad(c0, readCPU())
	var exited []string
	for _, h := range all {
		if n := g.nodes[h]; n.proc.Exited() {
			exited = append(exited, fmt.Sprintf("h%d exited (code %d) during the run:\n%s", h, n.proc.ExitCode(), tail(n.proc.LogPath())))
		}
	}
	g.stop()
	r := g.contendFigures(all, from, to)
	r.problems = append(r.problems, exited...)
	var paths []string
	for _, h := range all {
		paths = append(paths, g.nodes[h].log)
	}
	if m, err := logcheck.Load(paths...); err != nil {
		r.problems = append(r.problems, err.Error())
	} else {
		r.lc = m.CheckMutex(logcheck.MutexOptions{Slack: lockSkewTol, MaxViolations: 5})
	}
	r.load = load
	r.form = fmt.Sprintf("view %s of all 5 installed %.0f ms after the first start", g.view, ms(g.formed.Sub(g.nodes[1].start)))
	if len(r.problems) > 0 || len(r.safe.violations) > 0 {
		e.diag(b, "%s: %s; events around the window's start:\n%s", g.name, strings.Join(append(slices.Clone(r.safe.violations), r.problems...), "; "),
			g.excerpt(g.formed.Add(-100*time.Millisecond), g.formed))
	}
	return r
}

// contendFigures reads a contention run's figures off the logs: the
// entries in [from, to], the stays from the group's formation to to.
func (g *lgroup) contendFigures(all []int, from, to time.Time) cres {
	r := cres{entries: map[int]int{}, dgrams: math.NaN(), sent: math.NaN()}
	var stays []lockHold
	var acquired []time.Time
	var views, susp, lost, withdrawn int
	warns := map[string]int{}
	dgRate, sentRate, statsOK := 0.0, 0.0, true
	var rec []string
	for _, h := range all {
		evs := g.events(h)
		les := lockEvents(h, evs)
		var asked time.Time // the pending request's, zero: none
		for _, x := range les {
			if x.at.After(to) {
				break
			}
			switch x.name {
			case "requested":
				asked = x.at
			case "acquired", "withdrawn":
				asked = time.Time{}
			}
			if x.at.Before(from) {
				continue
			}
			switch x.name {
			case "acquired":
				r.entries[h]++
				r.waits = append(r.waits, x.wait)
				r.msgs = append(r.msgs, x.messages)
				r.dgField = append(r.dgField, x.dgrams)
				r.longest = max(r.longest, x.wait)
				acquired = append(acquired, x.at)
			case "withdrawn":
				withdrawn++
			case "released":
				if x.lost {
					lost++
				}
			}
		}
		if !asked.IsZero() {
			w := to.Sub(asked)
			r.longest = max(r.longest, w)
			if w > lockStall {
				r.problems = append(r.problems, fmt.Sprintf("h%d's request of %s not granted after %.1f s", h, asked.Format("15:04:05.000"), w.Seconds()))
			}
		}
		for _, s := range holds(les) {
			if !s.from.Before(g.formed) && s.from.Before(to) {
				stays = append(stays, s)
			}
		}
		for _, ev := range evs {
			if ev.Time.Before(g.formed) || ev.Time.After(to) {
				continue
			}
			switch {
			case ev.Name == logs.ViewInstalled && !ev.Time.Equal(g.formed):
				views++
			case ev.Name == logs.MemberSuspected:
				susp++
			case (ev.Level == logs.LevelWarn || ev.Level == logs.LevelError) && ev.Name != logs.MutexReleased:
				warns[ev.Name]++
			}
		}
		ss := statsLines(g.nodes[h].log)
		if last := lastBefore(ss, to); last != nil {
			rec = append(rec, fmt.Sprintf("h%d %d/%d", h, last.RecoveryP50, last.RecoveryP99))
		}
		d, ok1 := statRate(ss, from, to, func(s *stat) uint64 { return s.DataDatagrams })
		m, ok2 := statRate(ss, from, to, func(s *stat) uint64 { return s.MsgsSent })
		dgRate, sentRate, statsOK = dgRate+d, sentRate+m, statsOK && ok1 && ok2
	}
	n := 0
	for _, c := range r.entries {
		n += c
	}
	r.rate = float64(n) / to.Sub(from).Seconds()
	if statsOK && r.rate > 0 {
		r.dgrams, r.sent = dgRate/r.rate, sentRate/r.rate
	}
	mean := float64(n) / float64(len(all))
	least := n
	for _, h := range all {
		least = min(least, r.entries[h])
	}
	if mean > 0 {
		r.fairness = float64(least) / mean
	}
	slices.SortFunc(acquired, time.Time.Compare)
	prev := from
	for _, at := range append(acquired, to) {
		gap := at.Sub(prev)
		r.maxGap = max(r.maxGap, gap)
		if gap > lockGap {
			r.stalls, r.stalled = r.stalls+1, r.stalled+gap
		}
		prev = at
	}
	r.safe = checkHolds(stays, lockSkewTol, to)
	r.recovery = strings.Join(rec, ", ")
	if views > 0 {
		r.odd = append(r.odd, fmt.Sprintf("%d view.installed after the group formed", views))
	}
	if susp > 0 {
		r.odd = append(r.odd, fmt.Sprintf("%d member.suspected", susp))
	}
	if lost > 0 {
		r.odd = append(r.odd, fmt.Sprintf("%d stays ended by losing the lock", lost))
	}
	if withdrawn > 0 {
		r.odd = append(r.odd, fmt.Sprintf("%d requests withdrawn", withdrawn))
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range warns {
			if !yield(k) {
				return
			}
		}
	}) {
		r.odd = append(r.odd, fmt.Sprintf("%d× %s (warn)", warns[k], k))
	}
	return r
}

// detail is a run's raw numbers.
func (r cres) detail() string {
	if math.IsNaN(r.rate) {
		return strings.Join(r.problems, "; ")
	}
	var per []string
	for _, h := range slices.Sorted(func(yield func(int) bool) {
		for h := range r.entries {
			if !yield(h) {
				return
			}
		}
	}) {
		per = append(per, fmt.Sprintf("h%d %d", h, r.entries[h]))
	}
	return fmt.Sprintf("run %d: %.0f entries/s (per node %s); wait p50 %s, p99 %s, longest %s; longest gap between two entries %s; "+
		"%d gaps over %v between entries, %.0f %% of the window; per entry: messages %s, datagrams %s, data datagrams %s, msgs_sent %s; "+
		"recovery p50/p99 µs of lost datagrams since the start (node.stats) %s; %d stays checked; %s; %s",
		r.run, r.rate, strings.Join(per, ", "), fmtDur(quantile(r.waits, 0.5)), fmtDur(quantile(r.waits, 0.99)), fmtDur(r.longest),
		fmtDur(r.maxGap), r.stalls, lockGap, 100*r.stalled.Seconds()/lockWindow.Seconds(), countValues(r.msgs), countValues(r.dgField),
		num(r.dgrams), num(r.sent), r.recovery, r.safe.stays, r.form, r.load)
}

func medianOr(vs []int64) int64 {
	if len(vs) == 0 {
		return -1
	}
	return medianInt(vs)
}

// reportContend adds a contention scenario's rows.
func (e *lenv) reportContend(b *testing.B, name string, loss, base float64, rs []cres, med cres) {
	var rates, waits, fair []string
	var probs, odd, viol []string
	worst := math.Inf(1)
	stays, skewed, deepest := 0, 0, time.Duration(0)
	for _, r := range rs {
		rates = append(rates, fmt.Sprintf("%.0f", r.rate))
		waits = append(waits, fmt.Sprintf("%s/%s", fmtDur(quantile(r.waits, 0.5)), fmtDur(quantile(r.waits, 0.99))))
		fair = append(fair, pct(r.fairness))
		if !math.IsNaN(r.rate) {
			worst = min(worst, r.fairness)
		} else {
			worst = 0
		}
		for _, p := range r.problems {
			probs = append(probs, fmt.Sprintf("run %d: %s", r.run, p))
		}
		for _, p := range r.odd {
			odd = append(odd, fmt.Sprintf("run %d: %s", r.run, p))
		}
		for _, v := range r.safe.violations {
			viol = append(viol, fmt.Sprintf("run %d: %s", r.run, v))
		}
		stays, skewed, deepest = stays+r.safe.stays, skewed+r.safe.skewed, max(deepest, r.safe.deepest)
	}
	runsLine := fmt.Sprintf("median of %d (entries/s by run: %s); window %v from %v after the view of all 5; %s", len(rs),
		strings.Join(rates, ", "), lockWindow, lockSkip, med.detail())
	ratio := med.rate / base
	if loss == 0 {
		e.add(row{name, "5 nodes, think 0, hold 0, 0 % loss: entries/s / token hand-offs/s", pct(ratio) + " (" + rate(med.rate, "entries/s") + ")",
			"-", "info", fmt.Sprintf("token ring %s; %s", rate(base, "hand-offs/s"), runsLine)})
	} else {
		e.add(row{name, fmt.Sprintf("the same at %.0f %% loss on every host: entries/s / 0 %%-loss", 100*loss), pct(ratio) + " (" + rate(med.rate, "entries/s") + ")",
			"-", "info", fmt.Sprintf("loss by %s; 0 %% loss %s; %s", e.method, rate(base, "entries/s"), runsLine)})
	}
	wTarget, wVerdict := "-", "info"
	if loss > 0 {
		wTarget, wVerdict = "p99 ≤ 10 ms", verdict(quantile(med.waits, 0.99) <= lockWaitP99)
	}
	e.add(row{name, "  wait p50 / p99 (wait_ms of the window's entries)", fmtDur(quantile(med.waits, 0.5)) + " / " + fmtDur(quantile(med.waits, 0.99)),
		wTarget, wVerdict, "median run; p50/p99 by run: " + strings.Join(waits, ", ")})
	e.add(row{name, "  per entry: messages / datagrams / data_datagrams / msgs_sent",
		fmt.Sprintf("%d / %d / %s / %s", medianOr(med.msgs), medianOr(med.dgField), num(med.dgrams), num(med.sent)), "-", "info",
		"median run; messages and datagrams: mutex.acquired's (2(n−1) = 8 and n = 5 in a stable view); data datagrams and msgs_sent: " +
			"the growth of the nodes' data_datagrams and msgs_sent in node.stats over the window, per entry (everything the nodes sent, batched)"})
	fTarget, fVerdict := fmt.Sprintf("≥ %.0f %%", 100*lockFairness), verdict(worst >= lockFairness)
	if loss > 0 {
		fTarget, fVerdict = "-", "info"
	}
	e.add(row{name, "  fairness: fewest entries of a node / the mean (worst run)", pct(worst), fTarget, fVerdict, "by run: " + strings.Join(fair, ", ")})
	sdetail := fmt.Sprintf("%d stays checked over %d runs; %d overlaps within %v (logging skew), deepest overlap %.3f ms", stays, len(rs), skewed, lockSkewTol, ms(deepest))
	if len(viol) > 0 {
		sdetail += "; VIOLATIONS: " + strings.Join(firstN(viol, 10), "; ")
	}
	e.add(row{name, "  safety: stays (acquired…released) overlapping by more than 1 ms", strconv.Itoa(len(viol)), "0", verdict(len(viol) == 0 && stays > 0), sdetail})
	e.addLogcheck(name, rs)
	val, res := "none", "PASS"
	if all := append(slices.Clone(probs), odd...); len(all) > 0 {
		val, res = strconv.Itoa(len(all)), "info"
		if len(probs) > 0 {
			res = "FAIL"
		}
	}
	e.add(row{name, "  anomalies (stalls, exits, views, suspicions, warnings)", val, "none", res, strings.Join(append(probs, odd...), "; ")})
	b.ReportMetric(med.rate, "entries/s")
	b.ReportMetric(float64(quantile(med.waits, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(quantile(med.waits, 0.99).Microseconds()), "p99-µs")
}

// addLogcheck adds the row of logcheck.CheckMutex over the runs' whole
// logs: the lock's events in order, and every request granted, or pending
// at the end for less than its MaxPending. Its overlaps (a stay ending at
// the mutex.released line, forgiven up to the same 1 ms) are given for
// information: the safety row judges overlaps with held_ms, which the
// logging skew does not stretch.
func (e *lenv) addLogcheck(name string, rs []cres) {
	bad, overlaps, forgiven := 0, 0, 0
	var longest time.Duration
	var parts []string
	for _, r := range rs {
		if r.lc == nil {
			continue
		}
		n := r.lc.ByKind[logcheck.MutexSequence] + r.lc.ByKind[logcheck.MutexPending]
		bad += n
		overlaps += r.lc.ByKind[logcheck.MutexOverlap]
		forgiven, longest = forgiven+r.lc.Forgiven, max(longest, r.lc.MaxForgiven)
		line, _, _ := strings.Cut(r.lc.String(), "\n")
		if n > 0 || r.lc.ByKind[logcheck.MutexOverlap] > 0 {
			line = strings.ReplaceAll(r.lc.String(), "\n", " ")
		}
		parts = append(parts, fmt.Sprintf("run %d: %s", r.run, line))
	}
	detail := fmt.Sprintf("its overlaps, a stay ending at the mutex.released line: %d beyond 1 ms, %d within (longest %v); %s",
		overlaps, forgiven, longest, strings.Join(parts, "; "))
	e.add(row{name, "  logcheck.CheckMutex: events out of turn, requests never granted", strconv.Itoa(bad), "0",
		verdict(bad == 0 && len(parts) == len(rs)), detail})
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... %d more", len(s)-n))
	}
	return s
}

// --- messages per entry ---

// lockEntry is one request of a node and its acquisition.
type lockEntry struct {
	req, acq time.Time // acq zero: not (yet) granted
	messages int64
	dgrams   int64
	wait     time.Duration
	view     string
}

// entries pairs a node's requests with their acquisitions.
func entries(les []lockEv) []lockEntry {
	var out []lockEntry
	for _, x := range les {
		switch x.name {
		case "requested":
			out = append(out, lockEntry{req: x.at})
		case "acquired":
			if len(out) > 0 && out[len(out)-1].acq.IsZero() {
				e := &out[len(out)-1]
				e.acq, e.messages, e.dgrams, e.wait, e.view = x.at, x.messages, x.dgrams, x.wait, x.view
			}
		case "withdrawn":
			if len(out) > 0 && out[len(out)-1].acq.IsZero() {
				out = out[:len(out)-1]
			}
		}
	}
	return out
}

// straddles reports whether an entry was in progress between from and
// to: its requests may be counted on one side and its replies on the
// other.
func straddles(es []lockEntry, from, to time.Time) bool {
	for _, e := range es {
		end := e.acq
		if end.IsZero() {
			end = to
		}
		if e.req.Add(-lockPad).Before(to) && !end.Before(from) {
			return true
		}
	}
	return false
}

// lres is one run of a messages scenario.
type lres struct {
	run               int
	msgs              []int64 // of node 1's entries between the readings
	dgField           []int64 // their datagrams
	waits             []time.Duration
	lockSent          int64 // the growth of lock_msgs_sent between the readings, over the nodes
	sent, dgrams, out int64 // the counters' growth between the readings, over the nodes
	sessions          int64
	problems          []string
	view              string
	span              time.Duration // from the first reading's end to the second's start
}

func (e *lenv) benchMsgs(b *testing.B, n int) {
	name := fmt.Sprintf("msgs%d", n)
	if !e.begin(b, name) {
		return
	}
	var rs []lres
	for i := range b.N {
		r := e.msgs(b, name, n)
		r.run = i + 1
		b.Logf("run %d: %d entries, messages %s, datagrams %s; lock_msgs_sent +%d, msgs_sent +%d, data_datagrams +%d; %s",
			r.run, len(r.msgs), countValues(r.msgs), countValues(r.dgField), r.lockSent, r.sent, r.dgrams, strings.Join(r.problems, "; "))
		rs = append(rs, r)
	}
	e.reportMsgs(b, name, n, rs)
}

// snapQuiet reads the counters at a moment when node 1 has no entry in
// progress (it retries a few times).
func (g *lgroup) snapQuiet(hs []int) (counterSnap, error) {
	for range 10 {
		s, err := g.snapCounters(hs)
		if err != nil {
			return s, err
		}
		time.Sleep(3 * lockPad) // the entry in progress, if any, is logged by now
		if !straddles(entries(lockEvents(1, g.events(1))), s.from, s.to) {
			return s, nil
		}
	}
	return counterSnap{}, fmt.Errorf("node 1 was taking the lock at every one of 10 readings of the counters")
}

// msgs runs one run of a messages scenario.
func (e *lenv) msgs(b *testing.B, name string, n int) lres {
	hs := hosts(1, n)
	var r lres
	g := e.lockGroup(b, name, hs, func(h int) []string {
		if h == 1 {
			return []string{"--lock-think", lockIdleThink.String(), "--lock-hold", "0s"}
		}
		return nil
	}, true)
	defer g.stop()
	if g.err != nil {
		r.problems = append(r.problems, g.err.Error())
		return r
	}
	r.view = g.view.String()
	eg := &egroup{mgroup: g.mgroup}
	if err := eg.waitQuiet(hs, elQuiet, memWait); err != nil {
		r.problems = append(r.problems, "elections: "+err.Error())
	}
	s1, err := g.snapQuiet(hs)
	if err == nil {
		time.Sleep(lockMsgsFor)
		var s2 counterSnap
		if s2, err = g.snapQuiet(hs); err == nil {
			r.sent, r.dgrams = grown(s1, s2, "msgs_sent"), grown(s1, s2, "data_datagrams")
			r.out, r.sessions = grown(s1, s2, "datagrams_out"), grown(s1, s2, "sessions_sent")
			r.lockSent = grown(s1, s2, "lock_msgs_sent")
			r.span = s2.from.Sub(s1.to)
			for _, x := range entries(lockEvents(1, g.events(1))) {
				switch {
				case x.acq.IsZero() || x.req.Before(s1.to):
				case x.acq.Before(s2.from):
					r.msgs = append(r.msgs, x.messages)
					r.dgField = append(r.dgField, x.dgrams)
					r.waits = append(r.waits, x.wait)
				}
			}
			for _, h := range hs {
				for _, v := range g.views(h) {
					if v.at.After(s1.from) && v.at.Before(s2.to) {
						r.problems = append(r.problems, fmt.Sprintf("h%d installed view %s between the readings", h, v))
					}
				}
			}
		}
	}
	if err != nil {
		r.problems = append(r.problems, err.Error())
	}
	if err == nil && len(r.msgs) == 0 {
		r.problems = append(r.problems, "no entry between the readings")
	}
	if len(r.problems) > 0 {
		e.diag(b, "%s: %s; events:\n%s", g.name, strings.Join(r.problems, "; "), g.excerpt(g.formed.Add(-100*time.Millisecond), g.formed))
	}
	return r
}

// perEntry is x per entry of r; NaN without entries.
func (r lres) perEntry(x int64) float64 {
	if len(r.msgs) == 0 {
		return math.NaN()
	}
	return float64(x) / float64(len(r.msgs))
}

// reportMsgs adds a messages scenario's rows.
func (e *lenv) reportMsgs(b *testing.B, name string, n int, rs []lres) {
	want := int64(2 * (n - 1))
	var meds, dgs []int64
	var probs, runs, counted []string
	var waits []time.Duration
	ok := true
	for _, r := range rs {
		for _, p := range r.problems {
			probs = append(probs, fmt.Sprintf("run %d: %s", r.run, p))
		}
		ok = ok && len(r.problems) == 0 && len(r.msgs) > 0 && allEqual(r.msgs, want)
		if len(r.msgs) > 0 {
			meds, dgs = append(meds, medianInt(r.msgs)), append(dgs, medianInt(r.dgField))
		}
		waits = append(waits, r.waits...)
		runs = append(runs, fmt.Sprintf("run %d: %d entries in %.1f s of view %s, messages %s, datagrams %s",
			r.run, len(r.msgs), r.span.Seconds(), r.view, countValues(r.msgs), countValues(r.dgField)))
		counted = append(counted, fmt.Sprintf("run %d: lock_msgs_sent %s, msgs_sent %s, data_datagrams %s, datagrams_out %s (sessions_sent %s)",
			r.run, num(r.perEntry(r.lockSent)), num(r.perEntry(r.sent)), num(r.perEntry(r.dgrams)), num(r.perEntry(r.out)), num(r.perEntry(r.sessions))))
	}
	val, dval := "none", "none"
	if len(meds) > 0 {
		val, dval = strconv.FormatInt(medianInt(meds), 10), strconv.FormatInt(medianInt(dgs), 10)
	}
	detail := strings.Join(runs, "; ")
	if len(probs) > 0 {
		detail += "; PROBLEMS: " + strings.Join(probs, "; ")
	}
	e.add(row{name, fmt.Sprintf("n = %d, one node using the lock: messages per entry (median)", n), val,
		fmt.Sprintf("2(n−1) = %d", want), verdict(ok), detail})
	mid := rs[len(rs)/2]
	e.add(row{name, "  per entry: datagrams / lock_msgs_sent / msgs_sent / data_datagrams",
		fmt.Sprintf("%s / %s / %s / %s", dval, num(mid.perEntry(mid.lockSent)), num(mid.perEntry(mid.sent)), num(mid.perEntry(mid.dgrams))), "-", "info",
		fmt.Sprintf("datagrams: mutex.acquired's (n = %d: the request is one multicast); the others: the growth of the nodes' counters between the readings "+
			"(huddle status), summed over the nodes, per entry (run %d); by run: %s", n, mid.run, strings.Join(counted, "; "))})
	e.add(row{name, "  uncontended wait p50 / p99", fmtDur(quantile(waits, 0.5)) + " / " + fmtDur(quantile(waits, 0.99)), "-", "info",
		fmt.Sprintf("%d entries, all runs", len(waits))})
	if len(meds) > 0 {
		b.ReportMetric(float64(medianInt(meds)), "msgs/entry")
	}
}

// countValues formats vs as "8×12" (value×count), most frequent first.
func countValues(vs []int64) string {
	c := map[int64]int{}
	for _, v := range vs {
		c[v]++
	}
	keys := slices.Sorted(func(yield func(int64) bool) {
		for k := range c {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortStableFunc(keys, func(a, z int64) int { return c[z] - c[a] })
	var s []string
	for _, k := range keys {
		s = append(s, fmt.Sprintf("%d×%d", k, c[k]))
	}
	return strings.Join(s, " ")
}

// --- the report ---

func (e *lenv) printLockTable() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.rows) == 0 {
		return
	}
	var w strings.Builder
	fmt.Fprintf(&w, "\nhuddle lock benchmark: %s, GOMAXPROCS %d, %d CPUs, virtual LAN of %d hosts (loss by %s), --profile local --loopback=false; "+
		"contention: %d nodes --lock-think 0s --lock-hold 0s, %v window; messages: node 1 --lock-think %v, the others idle\n",
		runtime.GOOS+"/"+runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), lockHosts, e.method, lockContenders, lockWindow, lockIdleThink)
	if x := os.Getenv(extraArgsEnv); x != "" {
		fmt.Fprintf(&w, "NOTE: %s=%q\n", extraArgsEnv, x)
	}
	fail := writeTable(&w, e.rows, 9, 70, 26, 12)
	fmt.Fprintf(&w, "%d of %d targets missed\n", fail, countTargets(e.rows))
	fmt.Fprintf(&w, "reproduce: go test -run '^$' -bench Lock -benchtime 3x ./internal/bench\n")
	if len(e.diags) > 0 {
		fmt.Fprintf(&w, "\nevents around what went wrong:\n%s\n", strings.Join(e.diags, "\n"))
	}
	fmt.Print(w.String())
}

// TestLockFigures checks the reading of the lock's events and the
// figures made of them (no network: it runs with plain go test).
func TestLockFigures(t *testing.T) {
	line := func(node int, at, event, extra string) string {
		return fmt.Sprintf(`{"level":"info","node":%d,"clock":7,"view":"3.5",%s"event":"mutex.%s","time":"2026-11-22T16:55:51.%sZ","message":"x"}`,
			node, extra, event, at)
	}
	parse := func(host int, ls ...string) []lockEv {
		evs, skipped, err := logs.Read(strings.NewReader(strings.Join(ls, "\n")))
		if err != nil || skipped != 0 {
			t.Fatalf("Read: %d skipped, %v", skipped, err)
		}
		return lockEvents(host, evs)
	}
	// Node 2 holds 17 µs but logs its release 2.3 ms later (the loop wrote
	// the replies first, then was descheduled): node 1's entry in between
	// is that skew. Node 3 enters while node 1 holds the lock for 2 ms.
	n2 := parse(2, line(2, "091200000", "requested", ""),
		line(2, "091264524", "acquired", `"wait_ms":1.897,"messages":8,"datagrams":5,`),
		line(2, "093553532", "released", `"held_ms":0.017,`))
	n1 := parse(1, line(1, "091300000", "requested", ""),
		line(1, "091458628", "acquired", `"wait_ms":0.2,"messages":8,"datagrams":5,`),
		line(1, "093458628", "released", `"held_ms":2.000,`))
	n3 := parse(3, line(3, "091400000", "requested", ""), line(3, "092000000", "acquired", `"wait_ms":0.6,"messages":6,"datagrams":4,`))
	if len(n2) != 3 || n2[1].wait != 1897*time.Microsecond || n2[1].messages != 8 || n2[1].dgrams != 5 || n2[2].held != 17*time.Microsecond {
		t.Fatalf("events %+v", n2)
	}
	h2, h1, h3 := holds(n2), holds(n1), holds(n3)
	if len(h2) != 1 || h2[0].to.Sub(h2[0].from) != 17*time.Microsecond || h2[0].open || !h3[0].open {
		t.Fatalf("holds %+v %+v", h2, h3)
	}
	end := h1[0].to.Add(time.Second)
	if s := checkHolds(append(h2, h1...), lockSkewTol, end); len(s.violations) != 0 || s.skewed != 0 || s.stays != 2 {
		t.Errorf("skew taken for an overlap: %+v", s)
	}
	s := checkHolds(slices.Concat(h2, h1, h3), lockSkewTol, end)
	if len(s.violations) != 1 || !strings.HasPrefix(s.violations[0], "h3 acquired") || s.deepest != h1[0].to.Sub(h3[0].from) {
		t.Errorf("overlap: %+v", s)
	}
	es := entries(slices.Concat(n3, parse(3, line(3, "095000000", "requested", ""), line(3, "095100000", "withdrawn", `"wait_ms":0.1,`))))
	if len(es) != 1 || es[0].messages != 6 || es[0].dgrams != 4 || es[0].acq.IsZero() {
		t.Fatalf("entries %+v", es)
	}
	if !straddles(es, es[0].acq, es[0].acq.Add(time.Millisecond)) || straddles(es, es[0].acq.Add(time.Nanosecond), end) ||
		!straddles(es, es[0].req.Add(-lockPad/2), es[0].req.Add(-lockPad/3)) {
		t.Error("straddles")
	}
	tr := tokenRun{hosts: []int{1, 2}, res: []tokenResult{{Got: 51, FirstNs: 1e9, LastNs: 2e9}, {Got: 50, FirstNs: 1e9 + 5e6, LastNs: 2e9 - 5e6}}}
	if r := tr.rate(); r != 100 {
		t.Errorf("token rate %v", r)
	}
	if got := countValues([]int64{8, 8, 9, 8, 7, 9}); got != "8×3 9×2 7×1" {
		t.Errorf("countValues %q", got)
	}
	t0 := time.Unix(100, 0)
	ss := []stat{{Time: t0, Why: "periodic", DataDatagrams: 10}, {Time: t0.Add(time.Second), Why: "periodic", DataDatagrams: 30},
		{Time: t0.Add(2 * time.Second), Why: "periodic", DataDatagrams: 70}, {Time: t0.Add(2 * time.Second), Why: "exit", DataDatagrams: 99}}
	if r, ok := statRate(ss, t0.Add(time.Millisecond), t0.Add(3*time.Second), func(s *stat) uint64 { return s.DataDatagrams }); !ok || r != 40 {
		t.Errorf("statRate %v %v", r, ok)
	}
	if l := lastBefore(ss, t0.Add(1500*time.Millisecond)); l == nil || l.DataDatagrams != 30 {
		t.Errorf("lastBefore %+v", l)
	}
}
