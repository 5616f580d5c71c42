package bench

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
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
// The package documentation says how to run it; one scenario alone
// measures what it is compared with first, once.
func BenchmarkLock(b *testing.B) {
	s := newSuite(b)
	s.run("token", func(sc *scenario) { sc.metric(s.token(sc, sc.N), "handoffs/s") })
	s.run("contend0", func(sc *scenario) { s.benchContend(sc, "ra", 0) })
	s.run("contend5", func(sc *scenario) { s.benchContend(sc, "ra", lockLoss) })
	for _, n := range []int{3, 5, 8} {
		s.run(fmt.Sprintf("msgs%d", n), func(sc *scenario) { benchMsgs(sc, "ra", n) })
	}
	// The central server and the token ring, side by side with
	// Ricart–Agrawala (--mutex-algorithm).
	for _, alg := range []string{"central", "token"} {
		s.run(alg+"-contend0", func(sc *scenario) { s.benchContend(sc, alg, 0) })
		s.run(alg+"-contend5", func(sc *scenario) { s.benchContend(sc, alg, lockLoss) })
		s.run(alg+"-msgs5", func(sc *scenario) { benchMsgs(sc, alg, 5) })
	}
	method := ""
	if lan := machine.lans[lockHosts]; lan != nil {
		method = lan.LossMethod()
	}
	s.print("huddle lock benchmark", fmt.Sprintf("virtual LAN of %d hosts (loss by %s), --profile local --loopback=false; "+
		"contention: %d nodes --lock-think 0s --lock-hold 0s, %v window; messages: node 1 --lock-think %v, the others idle",
		lockHosts, method, lockContenders, lockWindow, lockIdleThink),
		func() string { return "reproduce: go test -run '^$' -bench Lock -benchtime 3x ./internal/bench\n" })
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

// lockGroup starts nodes on hs, host h with the extra flags args(h), each
// with a control socket when sockets, and waits until they share a view;
// g.err says why not, g.formed is when the last of them installed it.
func lockGroup(sc *scenario, hs []int, args func(int) []string, sockets bool) *group {
	g := sc.newGroup(lockHosts, sockets, "--profile", "local", "--stats-interval", lockStatsEvery.String())
	g.form(hs, args)
	return g
}

// --- the token ring ---

// token measures the raw token ring runs times and adds its row.
func (s *suite) token(sc *scenario, runs int) float64 {
	var all []string
	t, k := median(runs, func() *tokenRun {
		t := runToken(sc, sc.lan(lockHosts), hosts(1, lockContenders), tokenFor)
		all = append(all, rate(t.rate(), "/s"))
		return t
	}, (*tokenRun).rate)
	s.baseline["token"] = t.rate()
	// A lost token (re-injected) or a send error shows in the detail.
	s.add(row{"token", "raw UDP token ring over hosts 1..5: hand-offs/s", rate(t.rate(), "/s"), "-", "info",
		fmt.Sprintf("median of %d (runs in order: %s); median run: %s", k, strings.Join(all, ", "), t.detail())})
	return t.rate()
}

func (s *suite) ensureToken(sc *scenario) float64 {
	if s.baseline["token"] == 0 {
		s.token(sc, 1)
	}
	return s.baseline["token"]
}

// --- contention ---

// contention is one contention run.
type contention struct {
	run        int
	rate       float64     // entries/s in the window; NaN: no group
	entries    map[int]int // by host
	waits      []time.Duration
	msgs       []int64               // messages of the entries
	dgField    []int64               // datagrams of the entries
	dgrams     float64               // data_datagrams per entry; NaN: unknown
	sent       float64               // msgs_sent per entry
	safe       safety                // the stays from the group's formation to the window's end
	lock       *logcheck.MutexResult // CheckMutex over the whole logs; nil: not run
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

func (s *suite) benchContend(sc *scenario, alg string, loss float64) {
	base, key := 0.0, lockScenario(alg, "contend0")
	if loss == 0 {
		base = s.ensureToken(sc)
	} else if base = s.baseline[key]; base == 0 {
		r := contend(sc, alg, 0)
		r.run = 1
		base, s.baseline[key] = r.rate, r.rate
		s.add(row{key, "5 nodes contending, 0 % loss (contend5's base, one run): entries/s", rate(base, "entries/s"), "-", "info", r.detail()})
	}
	rs := repeat(sc.N, func(i int) contention {
		r := contend(sc, alg, loss)
		r.run = i + 1
		sc.Log(r.detail())
		return r
	})
	// The run with the median rate (a run without a group counts as the slowest).
	med, _ := medianBy(rs, func(r contention) float64 {
		if math.IsNaN(r.rate) {
			return -1
		}
		return r.rate
	})
	if loss == 0 {
		s.baseline[key] = med.rate
	}
	reportContend(sc, alg, loss, base, rs, med)
}

// lockScenario is the name of scenario name of lock algorithm alg:
// Ricart–Agrawala's without a prefix.
func lockScenario(alg, name string) string {
	if alg == "ra" {
		return name
	}
	return alg + "-" + name
}

// lockFormula says what an entry costs with algorithm alg in a stable
// view of n, as mutex.acquired counts it.
func lockFormula(alg string, n int) (msgs int, text string) {
	switch alg {
	case "central":
		return 2, "central: REQUEST and GRANT, 2, then RELEASE: 3 per entry"
	case "token":
		return 0, fmt.Sprintf("token: the passes from where the token was, 0 to n−1 = %d, plus a WANT when it had to be woken", n-1)
	}
	return 2 * (n - 1), fmt.Sprintf("2(n−1) = %d, n = %d datagrams", 2*(n-1), n)
}

// contend runs one contention run: 5 nodes, think 0, hold 0.
func contend(sc *scenario, alg string, loss float64) contention {
	all := hosts(1, lockContenders)
	if loss > 0 {
		defer setLoss(sc, sc.lan(lockHosts), all, loss)()
	}
	g := lockGroup(sc, all, func(int) []string {
		return []string{"--lock-think", "0s", "--lock-hold", "0s", "--mutex-algorithm", alg}
	}, false)
	defer g.stop(3 * time.Second)
	if g.err != nil {
		return contention{rate: math.NaN(), dgrams: math.NaN(), sent: math.NaN(), problems: []string{g.err.Error()}}
	}
	from := g.formed.Add(lockSkip)
	to := from.Add(lockWindow)
	time.Sleep(time.Until(from))
	c0 := readCPU()
	time.Sleep(time.Until(to))
	load := machineLoad(c0, readCPU())
	var exited []string
	for _, h := range all {
		if m := g.members[h]; m.Exited() {
			exited = append(exited, fmt.Sprintf("h%d exited (code %d) during the run:\n%s", h, m.Proc.ExitCode(), m.Proc.Output(2000)))
		}
	}
	g.stop(3 * time.Second)
	r := g.contendFigures(all, from, to)
	r.problems = append(r.problems, exited...)
	if run, err := g.readLives(slices.Collect(maps.Values(g.members))); err != nil {
		r.problems = append(r.problems, err.Error())
	} else {
		r.lock = run.CheckMutex(logcheck.MutexOptions{Slack: lockSkewTol, EndAtHeld: true, MaxViolations: 5})
		r.safe = safetyIn(r.lock, g.formed, to)
	}
	r.load = load
	r.form = fmt.Sprintf("view %s of all 5 installed %.0f ms after the first start", g.view, ms(g.formed.Sub(g.members[1].Started)))
	if len(r.problems) > 0 || len(r.safe.violations) > 0 {
		sc.diag("%s: %s; events around the window's start:\n%s", g.name, strings.Join(append(slices.Clone(r.safe.violations), r.problems...), "; "),
			g.excerpt(g.formed.Add(-100*time.Millisecond), g.formed))
	}
	return r
}

// contendFigures reads a contention run's figures off the logs: the
// entries in [from, to], the stays from the group's formation to to.
func (g *group) contendFigures(all []int, from, to time.Time) contention {
	r := contention{entries: map[int]int{}, dgrams: math.NaN(), sent: math.NaN()}
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
		g.members[h].readStats()
		ss := g.members[h].periodic
		if last := lastBefore(ss, to); last != nil {
			rec = append(rec, fmt.Sprintf("h%d %d/%d", h, last.get("recovery_p50_us"), last.get("recovery_p99_us")))
		}
		d, ok1 := statRate(ss, from, to, "data_datagrams")
		m, ok2 := statRate(ss, from, to, "msgs_sent")
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
func (r contention) detail() string {
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

// reportContend adds a contention scenario's rows.
func reportContend(sc *scenario, alg string, loss, base float64, rs []contention, med contention) {
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
		sc.add("5 nodes, think 0, hold 0, 0 % loss: entries/s / token hand-offs/s", pct(ratio)+" ("+rate(med.rate, "entries/s")+")",
			"-", "info", fmt.Sprintf("token ring %s; %s", rate(base, "hand-offs/s"), runsLine))
	} else {
		sc.add(fmt.Sprintf("the same at %.0f %% loss on every host: entries/s / 0 %%-loss", 100*loss), pct(ratio)+" ("+rate(med.rate, "entries/s")+")",
			"-", "info", fmt.Sprintf("loss by %s; 0 %% loss %s; %s", sc.lan(lockHosts).LossMethod(), rate(base, "entries/s"), runsLine))
	}
	wTarget, wVerdict := "-", "info"
	if loss > 0 {
		wTarget, wVerdict = "p99 ≤ 10 ms", verdict(quantile(med.waits, 0.99) <= lockWaitP99)
	}
	sc.add("  wait p50 / p99 (wait_ms of the window's entries)", fmtDur(quantile(med.waits, 0.5))+" / "+fmtDur(quantile(med.waits, 0.99)),
		wTarget, wVerdict, "median run; p50/p99 by run: "+strings.Join(waits, ", "))
	sc.add("  per entry: messages / datagrams / data_datagrams / msgs_sent",
		fmt.Sprintf("%d / %d / %s / %s", medianInt(med.msgs), medianInt(med.dgField), num(med.dgrams), num(med.sent)), "-", "info",
		"median run; messages and datagrams: mutex.acquired's ("+func() string { _, f := lockFormula(alg, lockContenders); return f }()+", in a stable view); data datagrams and msgs_sent: "+
			"the growth of the nodes' data_datagrams and msgs_sent in node.stats over the window, per entry (everything the nodes sent, batched)")
	fTarget, fVerdict := fmt.Sprintf("≥ %.0f %%", 100*lockFairness), verdict(worst >= lockFairness)
	if loss > 0 {
		fTarget, fVerdict = "-", "info"
	}
	sc.add("  fairness: fewest entries of a node / the mean (worst run)", pct(worst), fTarget, fVerdict, "by run: "+strings.Join(fair, ", "))
	sdetail := fmt.Sprintf("%d stays checked over %d runs; %d overlaps within %v (logging skew), deepest overlap %.3f ms", stays, len(rs), skewed, lockSkewTol, ms(deepest))
	if len(viol) > 0 {
		sdetail += "; VIOLATIONS: " + strings.Join(firstN(viol, 10), "; ")
	}
	sc.add("  safety: stays (acquired…released) overlapping by more than 1 ms", strconv.Itoa(len(viol)), "0", verdict(len(viol) == 0 && stays > 0), sdetail)
	addLogcheck(sc, rs)
	val, res := "none", "PASS"
	if all := append(slices.Clone(probs), odd...); len(all) > 0 {
		val, res = strconv.Itoa(len(all)), "info"
		if len(probs) > 0 {
			res = "FAIL"
		}
	}
	sc.add("  anomalies (stalls, exits, views, suspicions, warnings)", val, "none", res, strings.Join(append(probs, odd...), "; "))
	sc.metric(med.rate, "entries/s")
	sc.metric(float64(quantile(med.waits, 0.5).Microseconds()), "p50-µs")
	sc.metric(float64(quantile(med.waits, 0.99).Microseconds()), "p99-µs")
}

// addLogcheck adds the row of logcheck.CheckMutex over the runs' whole
// logs: the lock's events in order, and every request granted, or pending
// at the end for less than its MaxPending. (Its overlaps are the safety
// row's.)
func addLogcheck(sc *scenario, rs []contention) {
	bad := 0
	var parts []string
	for _, r := range rs {
		if r.lock == nil {
			continue
		}
		n := r.lock.ByKind[logcheck.MutexSequence] + r.lock.ByKind[logcheck.MutexPending]
		bad += n
		line, _, _ := strings.Cut(r.lock.String(), "\n")
		if n > 0 {
			line = strings.ReplaceAll(r.lock.String(), "\n", " ")
		}
		parts = append(parts, fmt.Sprintf("run %d: %s", r.run, line))
	}
	sc.add("  logcheck.CheckMutex: events out of turn, requests never granted", strconv.Itoa(bad), "0",
		verdict(bad == 0 && len(parts) == len(rs)), strings.Join(parts, "; "))
}

// safety is what logcheck.CheckMutex found of the stays in the critical
// section that began in a window: a node's mutex.acquired to its
// mutex.released, ending at the earlier of the release's line and the
// grant's plus its held_ms (logcheck.MutexOptions.EndAtHeld).
type safety struct {
	stays      int           // stays checked
	violations []string      // overlaps by more than the slack
	skewed     int           // overlaps within it (over the whole logs)
	deepest    time.Duration // the largest overlap
}

// safetyIn is what res says of the stays that began in [from, to): the
// group's own, once it formed.
func safetyIn(res *logcheck.MutexResult, from, to time.Time) safety {
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	s := safety{skewed: res.Forgiven, deepest: res.MaxForgiven}
	for _, iv := range res.Intervals {
		if in(iv.Start) {
			s.stays++
		}
	}
	for _, o := range res.Overlaps {
		if in(o.B.Start) {
			s.deepest = max(s.deepest, o.Length)
			s.violations = append(s.violations, fmt.Sprintf("h%d acquired at %s (view %s) while h%d held it since %s (view %s), %.3f ms before its release",
				o.B.Node, o.B.Start.Format("15:04:05.000000"), o.B.View, o.A.Node, o.A.Start.Format("15:04:05.000000"), o.A.View, ms(o.Length)))
		}
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

// lockMessages is one run of a messages scenario.
type lockMessages struct {
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

func benchMsgs(sc *scenario, alg string, n int) {
	rs := repeat(sc.N, func(i int) lockMessages {
		r := msgs(sc, alg, n)
		r.run = i + 1
		sc.Logf("run %d: %d entries, messages %s, datagrams %s; lock_msgs_sent +%d, msgs_sent +%d, data_datagrams +%d; %s",
			r.run, len(r.msgs), countValues(r.msgs), countValues(r.dgField), r.lockSent, r.sent, r.dgrams, strings.Join(r.problems, "; "))
		return r
	})
	reportMsgs(sc, alg, n, rs)
}

// snapQuiet reads the counters at a moment when node 1 has no entry in
// progress (it retries a few times).
func (g *group) snapQuiet(hs []int) (counterSnap, error) {
	for range 10 {
		s, err := g.snapshot(hs)
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
func msgs(sc *scenario, alg string, n int) lockMessages {
	hs := hosts(1, n)
	var r lockMessages
	g := lockGroup(sc, hs, func(h int) []string {
		if h == 1 {
			return []string{"--lock-think", lockIdleThink.String(), "--lock-hold", "0s", "--mutex-algorithm", alg}
		}
		return []string{"--mutex-algorithm", alg}
	}, true)
	defer g.stop(3 * time.Second)
	if g.err != nil {
		r.problems = append(r.problems, g.err.Error())
		return r
	}
	r.view = g.view.String()
	eg := &electionGroup{group: g}
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
					if v.At.After(s1.from) && v.At.Before(s2.to) {
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
		sc.diag("%s: %s; events:\n%s", g.name, strings.Join(r.problems, "; "), g.excerpt(g.formed.Add(-100*time.Millisecond), g.formed))
	}
	return r
}

// perEntry is x per entry of r; NaN without entries.
func (r lockMessages) perEntry(x int64) float64 {
	if len(r.msgs) == 0 {
		return math.NaN()
	}
	return float64(x) / float64(len(r.msgs))
}

// reportMsgs adds a messages scenario's rows.
func reportMsgs(sc *scenario, alg string, n int, rs []lockMessages) {
	w, formula := lockFormula(alg, n)
	want := int64(w)
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
	sc.add(fmt.Sprintf("n = %d, one node using the lock: messages per entry (median)", n), val,
		formula, verdict(ok), detail)
	mid := rs[len(rs)/2]
	sc.add("  per entry: datagrams / lock_msgs_sent / msgs_sent / data_datagrams",
		fmt.Sprintf("%s / %s / %s / %s", dval, num(mid.perEntry(mid.lockSent)), num(mid.perEntry(mid.sent)), num(mid.perEntry(mid.dgrams))), "-", "info",
		fmt.Sprintf("datagrams: mutex.acquired's (n = %d: the request is one multicast); the others: the growth of the nodes' counters between the readings "+
			"(huddle status), summed over the nodes, per entry (run %d); by run: %s", n, mid.run, strings.Join(counted, "; ")))
	sc.add("  uncontended wait p50 / p99", fmtDur(quantile(waits, 0.5))+" / "+fmtDur(quantile(waits, 0.99)), "-", "info",
		fmt.Sprintf("%d entries, all runs", len(waits)))
	if len(meds) > 0 {
		sc.metric(float64(medianInt(meds)), "msgs/entry")
	}
}

// --- the lock's events ---

// lockEv is one mutex.* event of a node's log.
type lockEv struct {
	host     int
	at       time.Time
	name     string // requested, acquired, released, withdrawn
	clock    uint64
	view     string
	wait     time.Duration // acquired, withdrawn
	held     time.Duration // released
	messages int64         // acquired: requests sent and replies received, 2(n−1)
	dgrams   int64         // acquired: the same, a multicast request counted once, n
	lost     bool          // released: taken away
}

// lockEvents returns the mutex events among evs, logged by host.
func lockEvents(host int, evs []logs.Event) []lockEv {
	var out []lockEv
	for _, ev := range evs {
		name, ok := strings.CutPrefix(ev.Name, "mutex.")
		if !ok {
			continue
		}
		x := lockEv{host: host, at: ev.Time, name: name}
		x.clock, _ = ev.Uint(logs.ClockKey)
		x.view, _ = ev.Str(logs.ViewKey)
		x.wait = msField(ev, logs.WaitMsKey)
		x.held = msField(ev, logs.HeldMsKey)
		if m, ok := ev.Uint(logs.MessagesKey); ok {
			x.messages = int64(m)
		}
		if d, ok := ev.Uint(logs.DatagramsKey); ok {
			x.dgrams = int64(d)
		}
		x.lost, _ = ev.Bool(logs.LostKey)
		out = append(out, x)
	}
	return out
}

// msField is a field in milliseconds (a JSON number with decimals).
func msField(ev logs.Event, key string) time.Duration {
	f, _ := ev.Float(key)
	return time.Duration(f * float64(time.Millisecond))
}

// statRate is the growth per second of counter k over the periodic
// samples of ss within [from, to]; ok is false with fewer than two.
func statRate(ss []stats, from, to time.Time, k string) (float64, bool) {
	var in []stats
	for _, s := range ss {
		if s.why == "periodic" && !s.time.Before(from) && !s.time.After(to) {
			in = append(in, s)
		}
	}
	if len(in) < 2 {
		return 0, false
	}
	a, z := in[0], in[len(in)-1]
	return float64(z.get(k)-a.get(k)) / z.time.Sub(a.time).Seconds(), true
}

// lastBefore is the last sample of ss at or before t; nil for none.
func lastBefore(ss []stats, t time.Time) *stats {
	var last *stats
	for i := range ss {
		if !ss[i].time.After(t) {
			last = &ss[i]
		}
	}
	return last
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
	n3 := parse(3, line(3, "091400000", "requested", ""), line(3, "092000000", "acquired", `"wait_ms":0.6,"messages":6,"datagrams":4,`))
	if len(n2) != 3 || n2[1].wait != 1897*time.Microsecond || n2[1].messages != 8 || n2[1].dgrams != 5 || n2[2].held != 17*time.Microsecond {
		t.Fatalf("events %+v", n2)
	}
	// The same through logcheck, as the contention runs check safety.
	var run logcheck.Run
	for node, ls := range map[int][]string{
		1: {line(1, "091300000", "requested", ""), line(1, "091458628", "acquired", `"wait_ms":0.2,"messages":8,`), line(1, "093458628", "released", `"held_ms":2.000,`)},
		2: {line(2, "091200000", "requested", ""), line(2, "091264524", "acquired", `"wait_ms":1.897,"messages":8,`), line(2, "093553532", "released", `"held_ms":0.017,`)},
		3: {line(3, "091400000", "requested", ""), line(3, "092000000", "acquired", `"wait_ms":0.6,"messages":6,`), line(3, "094000000", "released", `"held_ms":2.000,`)},
	} {
		started := fmt.Sprintf(`{"level":"info","node":%d,"incarnation":7,"event":"node.started","time":"2026-11-22T16:55:51.000000000Z"}`, node)
		if err := run.Read(fmt.Sprintf("h%d.json", node), strings.NewReader(strings.Join(append([]string{started}, ls...), "\n"))); err != nil {
			t.Fatal(err)
		}
	}
	res := run.CheckMutex(logcheck.MutexOptions{Slack: lockSkewTol, EndAtHeld: true})
	from := time.Date(2026, 11, 22, 16, 55, 51, 0, time.UTC)
	end := from.Add(time.Second)
	sf := safetyIn(res, from, end)
	if sf.stays != 3 || len(sf.violations) != 1 || !strings.HasPrefix(sf.violations[0], "h3 acquired") || sf.skewed != 0 ||
		sf.deepest != 1458628*time.Nanosecond {
		t.Errorf("safety %+v", sf)
	}
	if sf := safetyIn(res, from.Add(93*time.Millisecond), end); sf.stays != 0 || len(sf.violations) != 0 {
		t.Errorf("safety after the window's start: %+v", sf)
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
	dg := func(at time.Duration, why string, n int64) stats {
		return stats{time: t0.Add(at), why: why, c: map[string]int64{"data_datagrams": n}}
	}
	ss := []stats{dg(0, "periodic", 10), dg(time.Second, "periodic", 30), dg(2*time.Second, "periodic", 70), dg(2*time.Second, "exit", 99)}
	if r, ok := statRate(ss, t0.Add(time.Millisecond), t0.Add(3*time.Second), "data_datagrams"); !ok || r != 40 {
		t.Errorf("statRate %v %v", r, ok)
	}
	if l := lastBefore(ss, t0.Add(1500*time.Millisecond)); l == nil || l.get("data_datagrams") != 30 {
		t.Errorf("lastBefore %+v", l)
	}
}
