package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
)

// BenchmarkState measures state transfer (docs/design.md, "State
// transfer") on a virtual LAN of 5 hosts with huddle run's replicated
// key-value store (config kv.*), started full with kv.fill so that the
// state has its size from the start: kv.size 1024, kv.keys chosen for the
// size (a key takes 1034 bytes of the snapshot). Every node runs
// `huddle run --profile lan --loopback=false --stats-interval 100ms
// --kv-size 1024 --kv-fill --kv-keys K`; the figures are read off the
// nodes' JSON logs (the namespaces share one clock).
//
//   - raw: the ceiling, as BenchmarkLAN's but with datagrams of huddle's
//     datagram_size (1400 bytes, the default), from the provider's host (3)
//     to the two others of the group (1, 2): the loss-free rate, and its
//     bytes per second (datagrams/s × 1400).
//   - transfer1M, transfer16M, transfer100M: 3 nodes (hosts 1-3, node 3
//     founds the group and provides the state); once every node is current
//     (state.current or state.installed), node 1 gets SIGKILL, the
//     survivors install a view without it, and it is started again. The
//     transfer rate is the snapshot's bytes over the time from the
//     joiner's install of the view it joins in to its state.installed
//     (what state.installed's duration_ms says, at the log's nanosecond
//     resolution: the provider's snapshot, its hash, every piece through
//     the group's reliable FIFO stream and the joiner's hash check), as a
//     ratio to the raw ceiling's bytes/s (target ≥ 50 %). Join-to-up-to-date
//     is the time from the restarted node's node.started to its
//     state.installed (for information; also from the lab's Start call,
//     which adds the process start and the store's fill).
//   - during: transfer100M with host 2 multicasting a steady FIFO load
//     (--send-rate 5000 --send-size 1000, about a tenth of the ceiling):
//     the group's delivered rate of it (app_delivered of node.stats every
//     100 ms, the slower of hosts 1 and 3) while the transfer runs (from
//     the joiner's view install to its state.installed), as a ratio to
//     the same before the kill (2 s of steady state, hosts 1 and 3).
//     Target ≥ 80 %.
//   - merge: 5 nodes with quorum majority (quorum_expected 5), a 1 MiB
//     store and kv.rate 50 puts/s on every node; the LAN is cut 3 | 2
//     (hosts 1, 2, 3 | 4, 5), both sides settle, the puts run on for 1 s
//     on the primary side, then the cut heals. The figure is the time from
//     the heal to the last state.installed of the minority's nodes, each
//     checked against the kv.state hash the current members logged at the
//     same view (the store they took is the group's). Also: the heal to
//     the first view of all 5.
//
// Every run is a fresh group on a fresh port; the figure of a scenario is
// the median of -benchtime Nx runs. The package documentation says how
// to run it; BENCH_HUDDLE_ARGS goes to every node (the header says so).
func BenchmarkState(b *testing.B) {
	s := newSuite(b)
	s.run("raw", func(sc *scenario) { sc.metric(s.stateCeiling(sc, sc.N), "B/s") })
	for _, size := range []int{1 << 20, 16 << 20, 100 << 20} {
		s.run(fmt.Sprintf("transfer%dM", size>>20), func(sc *scenario) { s.benchTransfer(sc, size) })
	}
	s.run("during", s.benchDuring)
	s.run("merge", benchStateMerge)
	veth := "?"
	if l := machine.lans[stateHosts]; l != nil {
		veth = mtu(l)
	}
	s.print("huddle state-transfer benchmark", fmt.Sprintf("virtual LAN (veth MTU %s), %s; kv.size %d, kv.keys for the state's size",
		veth, strings.Join(stateArgs(0), " "), stateValue), nil)
}

const (
	stateHosts    = 5
	stateValue    = 1024 // kv.size
	stateDatagram = 1400 // huddle's datagram_size by default
	stateProvider = 3    // the founder of a group of hosts 1-3: the view's first member
	stateJoiner   = 1    // the node killed and started again
	stateWait     = 60 * time.Second
	duringRate    = 5000 // msg/s of the during scenario's steady load
	duringSize    = 100 << 20
	mergeSize     = 1 << 20
	mergeRate     = 50 // puts/s per node
)

// stateKeys is kv.keys for a store of about size bytes.
func stateKeys(size int) int {
	return max(1, size/int(config.KV{Keys: 1, Size: stateValue}.FilledSize()-8))
}

// stateArgs is the flags of every node of a store of about size bytes
// (0: without kv.keys).
func stateArgs(size int) []string {
	args := []string{"--profile", "lan", "--stats-interval", "100ms", "--kv-size", strconv.Itoa(stateValue), "--kv-fill"}
	if size > 0 {
		args = append(args, "--kv-keys", strconv.Itoa(stateKeys(size)))
	}
	return args
}

// stateCeiling measures the raw ceiling from the provider's host to the
// two other members', in datagrams of huddle's size, and returns it in
// bytes/s.
func (s *suite) stateCeiling(sc *scenario, runs int) float64 {
	l := sc.lan(stateHosts)
	r, k := median(runs, func() *rawRun { return lossFree(sc, l, stateProvider, []int{1, 2}, stateDatagram) },
		func(r *rawRun) float64 { return r.ceilingRate() })
	bps := r.ceilingRate() * stateDatagram
	s.baseline["raw"] = bps
	s.add(row{"raw", fmt.Sprintf("ceiling: raw UDP %d B, loss-free rate to 2 receivers", stateDatagram),
		fmt.Sprintf("%s (%.1f MB/s)", rate(r.ceilingRate(), "dgram/s"), bps/1e6), "-", "info", rawDetail(r, k)})
	return bps
}

func (s *suite) ensureStateCeiling(sc *scenario) float64 {
	if s.baseline["raw"] == 0 {
		s.stateCeiling(sc, 1)
	}
	return s.baseline["raw"]
}

// --- a transfer to a restarted node ---

// transferRun is one run of a transfer scenario.
type transferRun struct {
	run         int
	ok          bool
	problems    []string
	bytes       int64
	took        time.Duration // the joiner's view install to its state.installed
	tookMs      int64         // state.installed's duration_ms
	rate        float64       // bytes/s
	join        time.Duration // node.started to state.installed
	fromStart   time.Duration // the lab's Start call to state.installed
	sentMs      int64         // the provider's state.sent duration_ms
	founding    time.Duration // the formation's transfer, first state.installed after the group formed
	steady      float64       // during: the load's delivered rate before the kill, msg/s
	during      float64       // during: the same while the transfer ran
	duringWhere string
	hwmMB       float64 // the largest VmHWM of the nodes
	detail      string
}

func (r *transferRun) fail(format string, args ...any) *transferRun {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	return r
}

func (s *suite) benchTransfer(sc *scenario, size int) {
	ceiling := s.ensureStateCeiling(sc)
	rs := repeat(sc.N, func(i int) *transferRun { return transfer(sc, i, size, 0) })
	med, sorted := medianBy(rs, func(r *transferRun) float64 { return r.rate })
	var vs []string
	for _, r := range sorted {
		vs = append(vs, fmt.Sprintf("%.1f", r.rate/1e6))
	}
	ratio := med.rate / ceiling
	sc.add(fmt.Sprintf("%s state to a restarted node: rate / ceiling", sizeName(size)),
		fmt.Sprintf("%s (%.1f MB/s)", pct(ratio), med.rate/1e6), "≥ 50 %", verdict(med.ok && ratio >= 0.5),
		fmt.Sprintf("median of %d (sorted, MB/s: %s); median run (%d): %s", len(rs), strings.Join(vs, ", "), med.run, med.detail))
	sc.add("  node.started → state.installed (join to up to date)", fmtDur(med.join), "-", "info",
		fmt.Sprintf("from the lab's Start call: %s (adds the process start and the fill of the store)", fmtDur(med.fromStart)))
	sc.problemsRow("  runs with a clean transfer", "every run: one transfer, hashes equal, no state.failed", problemsOf(rs))
	sc.metric(100*ratio, "%ceiling")
	sc.metric(med.rate, "B/s")
	sc.metric(ms(med.join), "ms-join")
}

func (s *suite) benchDuring(sc *scenario) {
	ceiling := s.ensureStateCeiling(sc)
	rs := repeat(sc.N, func(i int) *transferRun { return transfer(sc, i, duringSize, duringRate) })
	key := func(r *transferRun) float64 {
		if r.steady <= 0 {
			return 0
		}
		return r.during / r.steady
	}
	med, sorted := medianBy(rs, key)
	var vs []string
	for _, r := range sorted {
		vs = append(vs, pct(key(r)))
	}
	ratio := key(med)
	sc.add(fmt.Sprintf("group's delivered rate during a %s transfer / before", sizeName(duringSize)),
		fmt.Sprintf("%s (%s of %s)", pct(ratio), rate(med.during, "msg/s"), rate(med.steady, "msg/s")), "≥ 80 %", verdict(med.ok && ratio >= 0.8),
		fmt.Sprintf("h2 sends FIFO at %d msg/s of 1000 B; median of %d (sorted: %s); median run (%d): %s; %s",
			duringRate, len(rs), strings.Join(vs, ", "), med.run, med.duringWhere, med.detail))
	sc.add("  the transfer's rate meanwhile / ceiling", fmt.Sprintf("%s (%.1f MB/s)", pct(med.rate/ceiling), med.rate/1e6), "-", "info", "")
	sc.problemsRow("  runs with a clean transfer", "every run: one transfer, hashes equal, no state.failed", problemsOf(rs))
	sc.metric(100*ratio, "%steady")
}

func problemsOf(rs []*transferRun) [][]string {
	var ps [][]string
	for _, r := range rs {
		ps = append(ps, r.problems)
	}
	return ps
}

func sizeName(size int) string {
	if size >= 1<<20 {
		return fmt.Sprintf("%d MiB", size>>20)
	}
	return fmt.Sprintf("%d KiB", size>>10)
}

// transfer runs one transfer of a store of about size bytes to a
// restarted node of a group of 3; with load > 0, host 2 sends load FIFO
// messages a second meanwhile.
func transfer(sc *scenario, i, size, load int) *transferRun {
	r := &transferRun{run: i + 1}
	defer func() {
		r.ok = len(r.problems) == 0
		sc.Logf("run %d: %.1f MB/s, join %s; %s; problems %v", r.run, r.rate/1e6, fmtDur(r.join), r.detail, r.problems)
	}()
	args := stateArgs(size)
	hs := hosts(1, 3)
	g := sc.newGroup(stateHosts, false, args...)
	defer g.stop(10 * time.Second)
	own := func(h int) []string {
		if load > 0 && h == 2 {
			return []string{"--send-rate", strconv.Itoa(load), "--send-size", "1000"}
		}
		return nil
	}
	g.form(hs, own)
	if g.err != nil {
		return r.fail("%v", g.err)
	}
	// Every node current: the founder's state.current, the others' transfer.
	if err := waitCurrent(g, hs, stateWait); err != nil {
		sc.diag("transfer run %d: %v; events:\n%s", i+1, err, g.excerpt(g.formed.Add(-time.Second), g.formed))
		return r.fail("the group's first transfers: %v", err)
	}
	ready := time.Now()
	r.founding = ready.Sub(g.formed)
	formTrouble, formViews := trouble(g, hs, g.members[1].Started, ready)
	if len(formTrouble) > 0 {
		r.fail("while the founding group took its first state (%d views installed): %s", formViews, strings.Join(firstN(formTrouble, 4), "; "))
	}
	var steadyWhere string
	if load > 0 {
		time.Sleep(2500 * time.Millisecond) // the load starts a join timeout after its node, then runs steady
		end := time.Now()
		r.steady, steadyWhere = groupRate(g, []int{1, 3}, end.Add(-2*time.Second), end, time.Time{})
	} else {
		time.Sleep(500 * time.Millisecond)
	}
	victim := g.members[stateJoiner]
	tk := time.Now()
	if err := victim.Kill(); err != nil {
		return r.fail("%v", err)
	}
	survivors := without(hs, stateJoiner)
	if _, err := g.WaitViews(survivors, tk, memWait, func(_ int, v lan.View) bool { return !slices.Contains(v.Members, stateJoiner) }); err != nil {
		return r.fail("no view without the killed node: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	n := g.start(stateJoiner, own(stateJoiner)...)
	started := n.Started
	var inst logs.Event
	err := pollNodes(g, []int{stateJoiner}, stateWait, func() bool {
		evs := after(n.Events(logs.StateInstalled, logs.StateFailed), started)
		for _, ev := range evs {
			if ev.Name == logs.StateInstalled {
				inst = ev
				return true
			}
		}
		return false
	})
	g.measure(slices.Collect(func(yield func(*member) bool) {
		for _, h := range hs {
			if !yield(g.members[h]) {
				return
			}
		}
	}))
	for _, h := range hs {
		r.hwmMB = max(r.hwmMB, float64(g.members[h].hwmKB)/1024)
	}
	failedEvs := func() []string {
		var fs []string
		for _, h := range hs {
			for _, ev := range after(g.events(h, logs.StateFailed), g.members[1].Started) {
				reason, _ := ev.Str(logs.ReasonKey)
				fs = append(fs, fmt.Sprintf("h%d at %s: %s", h, ev.Time.Format("15:04:05.000"), reason))
			}
		}
		return fs
	}
	if err != nil {
		sc.diag("transfer run %d: no state.installed at the restarted node: %v; events:\n%s", i+1, err, g.excerpt(started.Add(-100*time.Millisecond), started))
		return r.fail("no state.installed at the restarted node within %v: %v; state.failed: %v", stateWait, err, failedEvs())
	}
	if fs := failedEvs(); len(fs) > 0 {
		r.fail("state.failed: %s", strings.Join(fs, "; "))
	}
	view, _ := inst.Str(logs.ViewKey)
	hash, _ := inst.Str(logs.HashKey)
	r.bytes, _ = inst.Int(logs.BytesKey)
	r.tookMs, _ = inst.Int(logs.DurationMsKey)
	from, _ := inst.Uint(logs.FromKey)
	var viewAt time.Time
	for _, v := range n.Views() {
		if v.ID == view && !v.At.Before(started) {
			viewAt = v.At
		}
	}
	if viewAt.IsZero() {
		return r.fail("the restarted node installed the state in view %s, which it did not log", view)
	}
	r.took = inst.Time.Sub(viewAt)
	r.rate = float64(r.bytes) / r.took.Seconds()
	if st, _, ok := g.firstEvent([]int{stateJoiner}, logs.NodeStarted, started, nil); ok {
		r.join = inst.Time.Sub(st.Time)
	}
	r.fromStart = inst.Time.Sub(started)
	// The provider's state.sent of that view.
	sent, _, ok := g.firstEvent([]int{int(from)}, logs.StateSent, started, func(ev logs.Event) bool {
		v, _ := ev.Str(logs.ViewKey)
		return v == view
	})
	if !ok {
		r.fail("provider %d logged no state.sent for view %s", from, view)
	} else {
		r.sentMs, _ = sent.Int(logs.DurationMsKey)
		if h, _ := sent.Str(logs.HashKey); h != hash {
			r.fail("the provider sent hash %s, the joiner installed %s", h, hash)
		}
	}
	if tr, nv := trouble(g, hs, started, inst.Time); len(tr) > 0 {
		r.fail("during the transfer to the restarted node: %s", strings.Join(firstN(tr, 4), "; "))
	} else if jv := viewsSince(n.Views(), started); len(jv) > 1 {
		r.fail("the restarted node installed %d views before its state came (%v): a transfer abandoned by a view change (%d views at all nodes)", len(jv), jv, nv)
	}
	if want := (config.KV{Keys: stateKeys(size), Size: stateValue}).FilledSize(); r.bytes != want {
		r.fail("the state installed has %d bytes, the filled store %d", r.bytes, want)
	}
	if load > 0 {
		r.during, r.duringWhere = groupRate(g, []int{1, 3}, viewAt, inst.Time, started)
		r.duringWhere = fmt.Sprintf("before the kill: %s; during: %s", steadyWhere, r.duringWhere)
		if from == 2 {
			r.duringWhere += "; the provider was the load's sender (h2), the group's coordinator after the founding's view changes"
		}
	}
	provider := g.members[int(from)]
	r.detail = fmt.Sprintf("%d bytes from node %d in view %s: %s from the joiner's view install to state.installed (duration_ms %d; "+
		"provider's state.sent duration_ms %d, from its snapshot to the last piece handed to its stream); node.started → state.installed %s; "+
		"the founding group current %s after it formed; provider CPU %.1f s; peak RSS %.0f MB",
		r.bytes, from, view, fmtDur(r.took), r.tookMs, r.sentMs, fmtDur(r.join), fmtDur(r.founding), provider.cpuSec, r.hwmMB)
	return r
}

// viewsSince lists the IDs of the views in vs installed at or after t.
func viewsSince(vs []lan.View, t time.Time) []string {
	var ids []string
	for _, v := range vs {
		if !v.At.Before(t) {
			ids = append(ids, v.ID)
		}
	}
	return ids
}

// after keeps the events at or after t.
func after(evs []logs.Event, t time.Time) []logs.Event {
	return slices.DeleteFunc(evs, func(ev logs.Event) bool { return ev.Time.Before(t) })
}

// waitCurrent waits until the nodes of hs share a view of exactly them in
// which every one is current (it logged state.installed in that view, or
// kv.state not behind), and it then stays for memQuiet.
func waitCurrent(g *group, hs []int, timeout time.Duration) error {
	var at []string
	err := pollNodes(g, hs, timeout, func() bool {
		at = nil
		var id string
		for _, h := range hs {
			vs := g.views(h)
			if len(vs) == 0 || !vs[len(vs)-1].Is(hs) || (id != "" && vs[len(vs)-1].ID != id) {
				at = append(at, fmt.Sprintf("h%d not in the view of all", h))
				return false
			}
			id = vs[len(vs)-1].ID
		}
		for _, h := range hs {
			if !currentIn(g, h, id) {
				at = append(at, fmt.Sprintf("h%d not current in %s", h, id))
			}
		}
		return len(at) == 0
	})
	if err != nil {
		return fmt.Errorf("%s: %v", strings.Join(at, ", "), err)
	}
	if _, err := g.settle(hs, memQuiet, timeout); err != nil {
		return err
	}
	return nil
}

// currentIn reports whether host's node is current in view id.
func currentIn(g *group, host int, id string) bool {
	for _, ev := range g.events(host, logs.StateInstalled, logs.KVState) {
		if v, _ := ev.Str(logs.ViewKey); v != id {
			continue
		}
		if behind, _ := ev.Bool(logs.BehindKey); ev.Name == logs.StateInstalled || !behind {
			return true
		}
	}
	return false
}

// trouble lists the suspicions and exclusions the nodes of hs logged in
// [from, to], and the views each installed there.
func trouble(g *group, hs []int, from, to time.Time) (problems []string, views int) {
	for _, h := range hs {
		for _, ev := range g.events(h, logs.MemberSuspected, logs.MemberExcluded) {
			if ev.Time.Before(from) || ev.Time.After(to) {
				continue
			}
			v, _ := ev.Str(logs.ViewKey)
			if ev.Name == logs.MemberSuspected {
				m, _ := ev.Uint(logs.MemberKey)
				silent, _ := ev.Int(logs.SilentMsKey)
				problems = append(problems, fmt.Sprintf("h%d suspected %d in view %s (silent %d ms) at %s", h, m, v, silent, ev.Time.Format("15:04:05.000")))
			} else {
				problems = append(problems, fmt.Sprintf("h%d excluded from view %s at %s", h, v, ev.Time.Format("15:04:05.000")))
			}
		}
	}
	return problems, g.viewsBetween(hs, from, to)
}

// pollNodes calls done every 20 ms until it reports true; it fails when
// a node of hs exits meanwhile, or after timeout.
func pollNodes(g *group, hs []int, timeout time.Duration, done func() bool) error {
	for end := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if done() {
			return nil
		}
		for _, h := range hs {
			if m := g.members[h]; m != nil && m.Exited() {
				return fmt.Errorf("h%d exited (code %d):\n%s", h, m.Proc.ExitCode(), m.Proc.Output(2000))
			}
		}
		if time.Now().After(end) {
			return fmt.Errorf("not within %v", timeout)
		}
	}
}

// periodicSince is host's periodic node.stats at or after since.
func periodicSince(g *group, host int, since time.Time) []stats {
	var ss []stats
	for _, ev := range after(g.events(host, logs.NodeStats), since) {
		if why, _ := ev.Str(logs.WhyKey); why == "exit" {
			continue
		}
		s := stats{time: ev.Time, c: map[string]int64{}}
		for k := range ev.Keys() {
			if v, ok := ev.Int(k); ok {
				s.c[k] = v
			}
		}
		ss = append(ss, s)
	}
	return ss
}

// rateIn is the growth of app_delivered per second over [a, b] in ss: over
// the samples within it when there are three or more, else from the last
// sample before a to the first after b (which widens the window).
func rateIn(ss []stats, a, b time.Time) (float64, time.Duration) {
	var in []stats
	for _, s := range ss {
		if !s.time.Before(a) && !s.time.After(b) {
			in = append(in, s)
		}
	}
	if len(in) < 3 {
		in = nil
		i := slices.IndexFunc(ss, func(s stats) bool { return !s.time.Before(a) })
		j := slices.IndexFunc(ss, func(s stats) bool { return !s.time.Before(b) })
		if i > 0 {
			i--
		}
		if i < 0 || j < 0 || j <= i {
			return math.NaN(), 0
		}
		in = []stats{ss[i], ss[j]}
	}
	first, last := in[0], in[len(in)-1]
	span := last.time.Sub(first.time)
	if span <= 0 {
		return math.NaN(), 0
	}
	return float64(appDelivered(&last)-appDelivered(&first)) / span.Seconds(), span
}

// groupRate is the lowest delivered rate of the nodes of hs over [a, b]
// (each node's stats since since, or its latest start), and where.
func groupRate(g *group, hs []int, a, b, since time.Time) (float64, string) {
	low := math.Inf(1)
	var per []string
	for _, h := range hs {
		from := since
		if from.IsZero() {
			from = g.members[h].Started
		}
		v, span := rateIn(periodicSince(g, h, from), a, b)
		per = append(per, fmt.Sprintf("h%d %s over %.0f ms", h, rate(v, "msg/s"), ms(span)))
		if math.IsNaN(v) {
			v = 0
		}
		low = min(low, v)
	}
	return low, fmt.Sprintf("window %.0f ms: %s", ms(b.Sub(a)), strings.Join(per, ", "))
}

// --- merge ---

func benchStateMerge(sc *scenario) {
	rs := repeat(sc.N, func(i int) timing {
		r := stateMerge(sc, i)
		r.run = i + 1
		sc.Logf("run %d: %s ms; %s", r.run, fmtMs(r.ms), r.detail)
		return r
	})
	med, sorted := medianBy(rs, func(r timing) float64 { return r.ms })
	var vs, as []string
	for _, r := range sorted {
		vs = append(vs, fmtMs(r.ms))
	}
	var altv []float64
	var probs [][]string
	for _, r := range rs {
		as = append(as, fmtMs(r.alt))
		if !math.IsNaN(r.alt) {
			altv = append(altv, r.alt)
		}
		probs = append(probs, r.problems)
	}
	sc.add(fmt.Sprintf("partition 1,2,3 | 4,5, heal → the minority's %s state installed, hashes agreed", sizeName(mergeSize)),
		fmtMs(med.ms)+" ms", "-", "info",
		fmt.Sprintf("median of %d (sorted, ms: %s); median run (%d): %s", len(rs), strings.Join(vs, ", "), med.run, med.detail))
	v := math.NaN()
	if len(altv) > 0 {
		slices.Sort(altv)
		v = altv[len(altv)/2]
	}
	sc.add("  heal → first view of all 5", fmtMs(v)+" ms", "-", "info", "runs in order, ms: "+strings.Join(as, ", "))
	sc.problemsRow("  runs whose states agreed", "every run: the minority installed the state the primary side logged at that view, no state.failed", probs)
	sc.metric(med.ms, "ms")
}

func stateMerge(sc *scenario, i int) timing {
	all := hosts(1, 5)
	sideA, sideB := []int{1, 2, 3}, []int{4, 5}
	args := append(stateArgs(mergeSize), "--quorum", "majority", "--quorum-expected", "5", "--kv-rate", strconv.Itoa(mergeRate))
	g := sc.newGroup(stateHosts, false, args...)
	defer g.stop(10 * time.Second)
	g.form(all, func(int) []string { return nil })
	if g.err != nil {
		return failed(g.err.Error())
	}
	if err := waitCurrent(g, all, stateWait); err != nil {
		return failed("the group's first transfers: " + err.Error())
	}
	time.Sleep(time.Second)
	tc := time.Now()
	defer g.lan.Heal()
	_, unsettled, err := g.split(sc, "state merge", i, sideA, sideB)
	if err != nil {
		return failed("after the cut: " + err.Error())
	}
	r := timing{alt: math.NaN()}
	if unsettled != nil {
		r.problems = append(r.problems, fmt.Sprintf("the sides did not settle: %v", unsettled))
	}
	time.Sleep(time.Second) // the primary side's puts move its state on
	t0, _, _, firstAt, err := g.heal(sc, "state merge", i, all)
	if err != nil {
		return failed("no view of all 5 after the heal: " + err.Error())
	}
	r.alt = ms(firstAt.Sub(t0))
	// The minority takes the state; wait for each's state.installed.
	var insts map[int]logs.Event
	err = pollNodes(g, all, stateWait, func() bool {
		insts = map[int]logs.Event{}
		for _, h := range sideB {
			if evs := after(g.events(h, logs.StateInstalled), t0); len(evs) > 0 {
				insts[h] = evs[len(evs)-1]
			}
		}
		return len(insts) == len(sideB)
	})
	if err != nil {
		sc.diag("state merge run %d: the minority did not install the state: %v; events:\n%s", i+1, err, g.excerpt(t0.Add(-100*time.Millisecond), t0))
		r.ms = math.Inf(1)
		r.problems = append(r.problems, "the minority did not install the state: "+err.Error())
		return r
	}
	fin, err := g.settle(all, memQuiet, memWait)
	if err == nil && !fin[1].Is(all) {
		err = fmt.Errorf("the stable view is %s", fin[1])
	}
	if err != nil {
		r.problems = append(r.problems, "no stable view of all 5 after the heal: "+err.Error())
	}
	var last time.Time
	var per []string
	for _, h := range sideB {
		ev := insts[h]
		last = later(last, ev.Time)
		view, _ := ev.Str(logs.ViewKey)
		hash, _ := ev.Str(logs.HashKey)
		b, _ := ev.Int(logs.BytesKey)
		// The current members' kv.state at that view.
		var want []string
		for _, o := range all {
			for _, ks := range after(g.events(o, logs.KVState), t0) {
				v, _ := ks.Str(logs.ViewKey)
				behind, _ := ks.Bool(logs.BehindKey)
				if v == view && !behind {
					hs, _ := ks.Str(logs.HashKey)
					want = append(want, hs)
				}
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		switch {
		case len(want) == 0:
			r.problems = append(r.problems, fmt.Sprintf("h%d installed the state in view %s, of which no current member logged kv.state", h, view))
		case len(want) > 1:
			r.problems = append(r.problems, fmt.Sprintf("the current members of view %s logged different stores: %v", view, want))
		case want[0] != hash:
			r.problems = append(r.problems, fmt.Sprintf("h%d installed %s in view %s, the current members logged %s", h, hash, view, want[0]))
		}
		per = append(per, fmt.Sprintf("h%d %.0f ms (view %s, %d bytes)", h, ms(ev.Time.Sub(t0)), view, b))
	}
	for _, h := range all {
		for _, ev := range after(g.events(h, logs.StateFailed), tc) {
			reason, _ := ev.Str(logs.ReasonKey)
			r.problems = append(r.problems, fmt.Sprintf("h%d state.failed: %s", h, reason))
		}
	}
	r.ms = ms(last.Sub(t0))
	r.detail = fmt.Sprintf("first view of all 5 at every node %.0f ms after the heal; state.installed after the heal: %s; final view %s; %d views installed after the heal",
		r.alt, strings.Join(per, ", "), fin[1], g.viewsBetween(all, t0, time.Now()))
	return r
}
