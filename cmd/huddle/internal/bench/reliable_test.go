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
	"github.com/huddle-lan/huddle/internal/logs"
)

// BenchmarkLAN measures the reliable multicast layer against raw UDP
// multicast on one virtual LAN; see the package documentation.
func BenchmarkLAN(b *testing.B) {
	s := newSuite(b)
	s.run("raw", s.benchRaw)
	s.run("rawruns", func(sc *scenario) { s.runsCeiling(sc, sc.lan(5), 5) })
	s.run("lossless", s.benchLossless)
	s.run("loss1", func(sc *scenario) { s.benchLoss(sc, 0.01, 0) })
	s.run("loss5", func(sc *scenario) { s.benchLoss(sc, lossRate, 0) })
	s.run("shared", func(sc *scenario) { s.benchShared(sc, 0) })
	s.run("loss5paced", func(sc *scenario) { s.benchLoss(sc, lossRate, pacedRate) })
	s.run("sharedpaced", func(sc *scenario) { s.benchShared(sc, pacedRate) })
	s.run("sharedscale", s.benchSharedScale)
	s.run("large", s.benchLarge)
	var all []float64
	for _, h := range s.rss {
		all = append(all, h...)
	}
	if len(all) > 0 {
		m := slices.Max(all)
		s.add(row{"all", "max RSS (VmHWM) over every huddle process", fmt.Sprintf("%.1f MB", m), "< 100 MB",
			verdict(m < 100), fmt.Sprintf("%d processes", len(all))})
	}
	lan := machine.lans[5]
	method, veth := "", "?"
	if lan != nil {
		method, veth = lan.LossMethod(), mtu(lan)
	}
	s.print("huddle reliable multicast benchmark", fmt.Sprintf("lab loss method %q, veth MTU %s", method, veth), nil)
}

// Scenario parameters: a few seconds each, so that the whole benchmark
// stays well under three minutes on a small machine.
const (
	huddleFor   = 2500 * time.Millisecond // a huddle run's length at the raw ceiling's rate
	minCount    = 20_000
	maxCount    = 1_000_000
	runTimeout  = 15 * time.Second // for a huddle run's receivers to deliver everything
	bigDatagram = 65000
	lossRate    = 0.05
	// pacedRate is the sending rate of the paced scenarios: well below
	// what this machine's CPUs sustain, so that they measure the protocol
	// (NACKs and repairs per loss, recovery latency) rather than queueing
	// at saturation, which the unpaced scenarios show.
	pacedRate = 5000
)

// countFor picks a message count that takes about d at rate.
func countFor(rate float64, d time.Duration) int {
	n := int(rate * d.Seconds())
	return min(max(n, minCount), maxCount) / 1000 * 1000
}

// benchRaw: the ceiling, 1 blaster and 4 sinks, 1000-byte datagrams.
func (s *suite) benchRaw(sc *scenario) {
	sc.metric(s.ceiling(sc, "raw", sc.lan(5), 5, sc.N), "dgram/s")
}

// ceiling measures the raw ceiling of runs runs on l with a blaster on
// host 1 and sinks on hosts 2..n, and adds its row as scenario name.
func (s *suite) ceiling(sc *scenario, name string, l *lan.LAN, n, runs int) float64 {
	r, k := median(runs, func() *rawRun { return lossFree(sc, l, 1, hosts(2, n), msgSize) },
		func(r *rawRun) float64 { return r.ceilingRate() })
	s.baseline[name] = r.ceilingRate()
	s.add(row{name, fmt.Sprintf("ceiling: raw UDP 1000 B, loss-free rate to %d receivers", n-1), rate(s.baseline[name], "dgram/s"), "-", "info", rawDetail(r, k)})
	return s.baseline[name]
}

// runsCeiling is ceiling, once, with the blaster sending runs of
// datagrams (UDP segmentation offload) as huddle does, for information:
// the targets stay set against the ceiling of a header per datagram.
func (s *suite) runsCeiling(sc *scenario, l *lan.LAN, n int) {
	r := withRuns(sc, l, 1, hosts(2, n), msgSize)
	sc.add(fmt.Sprintf("ceiling with runs (UDP segmentation, as huddle sends): raw UDP 1000 B to %d receivers", n-1),
		rate(r.ceilingRate(), "dgram/s"), "-", "info", rawDetail(r, 1))
	sc.metric(r.ceilingRate(), "dgram/s")
}

// ensureCeiling measures the raw ceiling if this benchmark has not yet.
func (s *suite) ensureCeiling(sc *scenario, name string, l *lan.LAN, n int) float64 {
	if s.baseline[name] == 0 {
		s.ceiling(sc, name, l, n, 1)
	}
	return s.baseline[name]
}

// multicastSpec describes one huddle run of BenchmarkLAN: a sender
// multicasting count 1000-byte messages as fast as it can to the
// receivers.
type multicastSpec struct {
	sender       int
	receivers    []int
	count        int
	datagramSize int      // 0: the default
	rate         int      // messages/s; 0: as fast as the window allows
	countDrops   bool     // install the input drop counters
	args         []string // more flags for every node (the sealed runs' key file)
}

// multicastRun is the outcome of a run.
type multicastRun struct {
	spec       multicastSpec
	g          *group
	sender     *member
	receivers  []*member
	complete   bool          // every receiver's periodic stats reached count (delivered or skipped)
	wall       time.Duration // sender start to the end of the run
	load       string        // the machine's CPU use meanwhile
	background string        // the machine's CPU use just before (other work)
	drops      map[int]inputDrop

	sharedDrops  int64  // shared loss: datagrams dropped at the sender's egress
	sharedMethod string // and how
}

// inputDrop is what the input counters of a receiver's host saw.
type inputDrop struct {
	all, fromSender int64 // datagrams the lab's loss dropped on the way in, and of those the sender's; -1 unknown
	rule            int64 // the lab's own iptables loss rule counter; -1 unknown
}

func (r *multicastRun) nodes() []*member { return append([]*member{r.sender}, r.receivers...) }

// runMulticast runs huddle on the LAN of n hosts as spec says and collects
// the nodes' stats, memory and drop counters. The LAN is left as it was
// found.
func runMulticast(sc *scenario, n int, spec multicastSpec) *multicastRun {
	sc.Helper()
	args := []string{"--profile", "local", "--stats-interval", "100ms"}
	if spec.datagramSize > 0 {
		args = append(args, "--datagram-size", strconv.Itoa(spec.datagramSize))
	}
	g := sc.newGroup(n, false, append(args, spec.args...)...)
	r := &multicastRun{spec: spec, g: g, drops: map[int]inputDrop{}}
	defer g.stop(10 * time.Second)
	if spec.countDrops {
		for _, h := range spec.receivers {
			if err := inputCounters(g.lan, h, g.lan.Host(spec.sender).Addr); err != nil {
				sc.Logf("no input drop counters on host %d (drops unknown): %v", h, err)
			}
		}
	}
	for _, h := range spec.receivers {
		r.receivers = append(r.receivers, g.start(h))
	}
	for _, m := range r.receivers {
		if err := waitEvent(m, logs.NodeStarted, 5*time.Second); err != nil {
			sc.Fatal(err)
		}
	}
	b0 := readCPU()
	time.Sleep(300 * time.Millisecond)
	t0, c0 := time.Now(), readCPU()
	r.background = machineLoad(b0, c0)
	sendRate := 10_000_000
	if spec.rate > 0 {
		sendRate = spec.rate
	}
	r.sender = g.start(spec.sender, "--send-rate", strconv.Itoa(sendRate), "--send-size", "1000", "--send-count", strconv.Itoa(spec.count))

	// Wait until every receiver reports all messages delivered.
	for deadline := t0.Add(runTimeout); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		done := true
		for _, m := range r.receivers {
			done = done && processed(m.latest()) >= uint64(spec.count)
		}
		if done || slices.ContainsFunc(r.nodes(), (*member).Exited) {
			r.complete = done
			break
		}
	}
	r.wall = time.Since(t0)
	r.load = machineLoad(c0, readCPU())
	g.measure(r.nodes())
	if spec.countDrops {
		for _, m := range r.receivers {
			d := inputDrop{all: -1, fromSender: -1}
			if all, tx, err := inputDrops(g.lan, m.Host); err == nil {
				d.all, d.fromSender = all, tx
			}
			d.rule = lossRuleDrops(g.lan, m.Host)
			r.drops[m.Host] = d
			g.lan.Exec(m.Host, "nft", "delete", "table", "inet", counterTable)
		}
	}
	g.stop(10 * time.Second)
	for _, m := range r.nodes() {
		m.readStats()
		if !m.hasFinal {
			sc.Errorf("host %d: no node.stats at exit in %s:\n%s", m.Host, m.Log, m.Proc.Output(2000))
		}
	}
	return r
}

// waitEvent polls m's log until it has the event.
func waitEvent(m *member, name string, timeout time.Duration) error {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if len(m.Events(name)) > 0 {
			return nil
		}
		if m.Exited() {
			break
		}
	}
	return fmt.Errorf("host %d: no %s within %v:\n%s", m.Host, name, timeout, m.Proc.Output(2000))
}

// pairedRun is a huddle run and the raw ceiling measured just before it.
type pairedRun struct {
	r     *multicastRun
	raw   float64 // the slowest raw sink's datagrams/s
	ratio float64 // huddle's rate at its slowest receiver / raw
}

// benchLossless: huddle at 0 % loss against the ceiling. Each huddle run
// follows a raw run of its own on the same LAN, and the figure is the
// median of the runs' ratios: the machine's load drifts over a benchmark
// (the ceiling of one run to the next by ±15 %), and a ratio of two
// measurements taken seconds apart drifts least.
func (s *suite) benchLossless(sc *scenario) {
	l := sc.lan(5)
	count := countFor(s.ensureCeiling(sc, "raw", l, 5), huddleFor)
	p, runs := median(sc.N, func() pairedRun {
		raw := lossFree(sc, l, 1, hosts(2, 5), msgSize)
		r := runMulticast(sc, 5, multicastSpec{sender: 1, receivers: hosts(2, 5), count: count, countDrops: true})
		return pairedRun{r, raw.ceilingRate(), slowestRate(r) / max(raw.ceilingRate(), 1)}
	}, func(p pairedRun) float64 { return p.ratio })
	tp := slowestRate(p.r)
	sc.add("huddle 0 % loss: msgs/s at slowest receiver / ceiling", pct(p.ratio)+" ("+rate(tp, "msg/s")+")",
		"≥ 70 %", verdict(p.ratio >= 0.70), fmt.Sprintf("median of %d ratios, each to a raw run just before (this one's %s); %s",
			runs, rate(p.raw, "dgram/s"), multicastDetail(p.r, runs)))
	s.addDelivery(sc, p.r)
	s.addMemory(sc, p.r)
	sc.metric(tp, "msg/s")
	sc.metric(100*p.ratio, "%ceiling")
}

// benchLoss: independent loss on each of 4 receivers, at sendRate (0: as
// fast as possible).
func (s *suite) benchLoss(sc *scenario, loss float64, sendRate int) {
	l := sc.lan(5)
	ceiling := s.ensureCeiling(sc, "raw", l, 5)
	count := countFor(ceiling, huddleFor)
	if sendRate > 0 {
		count = countFor(float64(sendRate), huddleFor)
	}
	r, runs := median(sc.N, func() *multicastRun {
		defer setLoss(sc, l, hosts(2, 5), loss)()
		return runMulticast(sc, 5, multicastSpec{sender: 1, receivers: hosts(2, 5), count: count, countDrops: true, rate: sendRate})
	}, slowestRate)
	tp := slowestRate(r)
	ratio := tp / ceiling
	detail := multicastDetail(r, runs)
	switch {
	case sendRate > 0:
		sc.add(fmt.Sprintf("paced at %d msg/s, %.0f %% loss/receiver: msgs/s", sendRate, 100*loss), rate(tp, "msg/s"), "-", "info", detail)
	case loss == lossRate:
		sc.add("huddle 5 % loss/receiver: msgs/s / 0 %-loss ceiling", pct(ratio)+" ("+rate(tp, "msg/s")+")", "≥ 50 %", verdict(ratio >= 0.50), detail)
	default:
		// The issue sets no ratio here; the peers' figure is the bar.
		sc.add(fmt.Sprintf("huddle %.0f %% loss/receiver: msgs/s (%s of the ceiling)", 100*loss, pct(ratio)), rate(tp, "msg/s"),
			"> 9 700 (JGroups)", verdict(tp > 9700), detail)
	}
	s.addDelivery(sc, r)
	lost, lostDetail := receiverLosses(r)
	nr, rr := s.addRepairs(sc, r, lost, "1.2", "1.3", lostDetail)
	p99 := maxRecovery(r)
	// Recovery latency is the protocol's when paced; at saturation it is
	// mostly the time a repair waits in queues, reported for information.
	target, ok := "≤ 5 ms", verdict(p99 > 0 && p99 <= 5000)
	if sendRate == 0 {
		target, ok = "-", "info"
	}
	sc.add("p99 recovery latency, max over receivers", fmt.Sprintf("%.2f ms", float64(p99)/1000), target,
		ok, "recovery p50/p99/max µs per receiver: "+recoveryDetail(r))
	s.addMemory(sc, r)
	sc.metric(tp, "msg/s")
	sc.metric(100*ratio, "%ceiling")
	sc.metric(nr, "nacks/loss")
	sc.metric(rr, "repairs/loss")
	sc.metric(float64(p99), "p99-µs")
}

// setLoss sets loss on hosts of l and returns what takes it away.
func setLoss(sc *scenario, l *lan.LAN, hs []int, loss float64) func() {
	for _, h := range hs {
		if err := l.SetLoss(h, loss); err != nil {
			sc.Fatal(err)
		}
	}
	return func() {
		for _, h := range hs {
			l.SetLoss(h, 0)
		}
	}
}

// benchShared: 5 % loss at the sender's egress, 8 receivers, at sendRate
// (0: as fast as possible).
func (s *suite) benchShared(sc *scenario, sendRate int) {
	l := sc.lan(9)
	count := countFor(s.ensureCeiling(sc, "raw", sc.lan(5), 5)/2, huddleFor)
	if sendRate > 0 {
		count = countFor(float64(sendRate), huddleFor)
	}
	r, runs := median(sc.N, func() *multicastRun { return sharedRun(sc, l, 9, count, sendRate) },
		func(r *multicastRun) float64 { return ratioOf(sumNacks(r), sharedLost(r)) })
	sock := sumOf(r.receivers, func(m *member) uint64 { return uint64(max(m.sockDrops, 0)) })
	lostDetail := fmt.Sprintf("%d dropped at the sender's egress (%s, %.0f %%) + %d receiver socket drops", r.sharedDrops, r.sharedMethod, 100*lossRate, sock)
	tp := slowestRate(r)
	sc.add("8 receivers, 5 % loss at sender: msgs/s at slowest", rate(tp, "msg/s"), "-", "info", multicastDetail(r, runs))
	s.addDelivery(sc, r)
	nr, rr := s.addRepairs(sc, r, sharedLost(r), "2", "1.5", lostDetail)
	p99 := maxRecovery(r)
	sc.add("p99 recovery latency, max over receivers", fmt.Sprintf("%.2f ms", float64(p99)/1000), "-", "info",
		"recovery p50/p99/max µs per receiver: "+recoveryDetail(r))
	s.addMemory(sc, r)
	sc.metric(tp, "msg/s")
	sc.metric(nr, "nacks/loss")
	sc.metric(rr, "repairs/loss")
}

// sharedRun runs host 1 sending count messages at sendRate to hosts 2..n
// of l, with 5 % loss at its egress.
func sharedRun(sc *scenario, l *lan.LAN, n, count, sendRate int) *multicastRun {
	m, err := egressLoss(l, 1, lossRate)
	if err != nil {
		sc.Fatal(err)
	}
	defer clearEgressLoss(l, 1, m)
	r := runMulticast(sc, n, multicastSpec{sender: 1, receivers: hosts(2, n), count: count, rate: sendRate})
	r.sharedMethod = m
	if r.sharedDrops, err = egressDrops(l, 1, m); err != nil {
		sc.Fatal(err)
	}
	return r
}

// Group sizes and rate of sharedscale. The rate keeps 12 processes on a
// small machine below saturation, so that the figures are suppression's
// rather than queueing's.
var scaleSizes = []int{2, 4, 8, 12}

const scaleRate = 3000

// benchSharedScale: shared 5 % loss (at the sender's egress) in groups of
// 2, 4, 8 and 12 members, paced: NACKs and repairs per loss against group
// size, as in the SRM paper's figures and TestSuppressionScales. A loss
// here is a lost data message: the receivers' mean of gaps_detected (each
// receiver detects each shared loss), as the simulator counts them. The
// egress also drops session messages and tail probes, which need no
// repair, and repairs, which need another request; the figures per lost
// datagram of any kind, as the shared scenario counts them, are in the
// detail. Targets: ≤ 1.2 NACKs and ≤ 1.1 repairs per loss at every size.
func (s *suite) benchSharedScale(sc *scenario) {
	count := countFor(scaleRate, 3*time.Second)
	var nacks, repairs []string
	for _, n := range scaleSizes {
		l := sc.lan(n)
		perGap := func(r *multicastRun) (float64, float64) {
			gaps := float64(sumOf(r.receivers, func(m *member) uint64 { return m.final.get("gaps_detected") })) / float64(len(r.receivers))
			return float64(sumNacks(r)) / max(gaps, 1), float64(sumRepairs(r)) / max(gaps, 1)
		}
		r, runs := median(sc.N, func() *multicastRun { return sharedRun(sc, l, n, count, scaleRate) },
			func(r *multicastRun) float64 { nr, _ := perGap(r); return nr })
		nr, rr := perGap(r)
		lost := sharedLost(r)
		ok, detail := s.deliveredAll(r)
		sc.add(fmt.Sprintf("%2d members: NACKs / repairs per lost message", n), num(nr)+" / "+num(rr), "≤ 1.2 / ≤ 1.1",
			verdict(ok && lost > 0 && nr <= 1.2 && rr <= 1.1),
			fmt.Sprintf("median of %d by NACKs per loss; %d NACKs (%s), %d repairs (sender %d, receivers %s); gaps detected %s; per lost datagram of any kind %s / %s (%d lost: %d at the egress by %s, the rest receiver socket drops); %s; p99 recovery %.2f ms",
				runs, sumNacks(r), perNode(r.receivers, "nacks_sent"), sumRepairs(r), r.sender.final.get("repairs_sent"), perNode(r.receivers, "repairs_sent"),
				perNode(r.receivers, "gaps_detected"), num(ratioOf(sumNacks(r), lost)), num(ratioOf(sumRepairs(r), lost)),
				lost, r.sharedDrops, r.sharedMethod, detail, float64(maxRecovery(r))/1000))
		nacks, repairs = append(nacks, num(nr)), append(repairs, num(rr))
		sc.metric(nr, fmt.Sprintf("nacks/loss-%d", n))
	}
	sc.diag("shared loss by group size %v: NACKs per lost message %s, repairs %s", scaleSizes, strings.Join(nacks, " / "), strings.Join(repairs, " / "))
}

// addRepairs adds the rows of NACKs and repairs per lost datagram, at
// most nackMax and repairMax, and returns the two ratios.
func (s *suite) addRepairs(sc *scenario, r *multicastRun, lost uint64, nackMax, repairMax, lostDetail string) (float64, float64) {
	nacks, repairs := sumNacks(r), sumRepairs(r)
	nr, rr := ratioOf(nacks, lost), ratioOf(repairs, lost)
	limit := func(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
	sc.add("NACK datagrams per lost datagram", num(nr), "≤ "+nackMax, verdict(lost > 0 && nr <= limit(nackMax)),
		fmt.Sprintf("%d NACKs (%s; suppressed %d) / %d lost: %s", nacks, perNode(r.receivers, "nacks_sent"),
			sumOf(r.receivers, func(m *member) uint64 { return m.final.get("nacks_suppressed") }), lost, lostDetail))
	sc.add("repair datagrams per lost datagram", num(rr), "≤ "+repairMax, verdict(lost > 0 && rr <= limit(repairMax)),
		fmt.Sprintf("%d repairs (sender %d, receivers %s; suppressed %d) / %d lost", repairs, r.sender.final.get("repairs_sent"),
			perNode(r.receivers, "repairs_sent"), sumOf(r.nodes(), func(m *member) uint64 { return m.final.get("repairs_suppressed") }), lost))
	return nr, rr
}

// sharedLost is the loss events of a shared-loss run: the sender's egress
// drops plus the receivers' own socket drops.
func sharedLost(r *multicastRun) uint64 {
	return uint64(max(r.sharedDrops, 0)) + sumOf(r.receivers, func(m *member) uint64 { return uint64(max(m.sockDrops, 0)) })
}

// benchLarge: 65000-byte datagrams, raw and huddle (1000-byte messages
// packed into them), 0 % loss.
func (s *suite) benchLarge(sc *scenario) {
	l := sc.lan(5)
	raw, runs := median(sc.N, func() *rawRun { return lossFree(sc, l, 1, hosts(2, 5), bigDatagram) },
		func(r *rawRun) float64 { return r.ceilingRate() })
	rawRate := raw.ceilingRate()
	perDatagram := float64(bigDatagram) / msgSize
	rawMsgs := rawRate * perDatagram
	sc.add("raw UDP 65000 B, loss-free rate to 4 receivers", rate(rawRate, "dgram/s")+" = "+rate(rawMsgs, "KB/s"), "-", "info",
		"veth MTU "+mtu(l)+" (IP fragments); "+rawDetail(raw, runs))
	count := countFor(max(rawMsgs/2, 50_000), huddleFor)
	r, hruns := median(sc.N, func() *multicastRun {
		return runMulticast(sc, 5, multicastSpec{sender: 1, receivers: hosts(2, 5), count: count, datagramSize: bigDatagram, countDrops: true})
	}, slowestRate)
	tp := slowestRate(r)
	ratio := tp / rawMsgs
	sc.add("huddle --datagram-size 65000, 1000 B msgs: msgs/s at slowest", rate(tp, "msg/s"), "≥ 93 000 (JGroups)",
		verdict(tp >= 93_000), multicastDetail(r, hruns))
	sc.add("  ratio to raw 65000 B (payload bytes/s)", pct(ratio), "-", "info",
		fmt.Sprintf("raw %s × %.0f msgs of 1000 B per datagram = %s", rate(rawRate, "dgram/s"), perDatagram, rate(rawMsgs, "msg/s")))
	s.addDelivery(sc, r)
	s.addMemory(sc, r)
	sc.metric(tp, "msg/s")
	sc.metric(100*ratio, "%raw")
}

// --- figures of a run ---

func slowestRate(r *multicastRun) float64 {
	slowest := math.Inf(1)
	for _, m := range r.receivers {
		slowest = min(slowest, deliveryRate(m.periodic, uint64(r.spec.count), processed, delivered).rate)
	}
	if math.IsInf(slowest, 1) {
		return 0
	}
	return slowest
}

func sumOf(ms []*member, f func(*member) uint64) uint64 {
	var s uint64
	for _, m := range ms {
		s += f(m)
	}
	return s
}

// perNode lists counter k of the nodes' exit stats.
func perNode(ms []*member, k string) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprint(m.final.get(k)))
	}
	return strings.Join(parts, "/")
}

func sumNacks(r *multicastRun) uint64 {
	return sumOf(r.receivers, func(m *member) uint64 { return m.final.get("nacks_sent") })
}

func sumRepairs(r *multicastRun) uint64 {
	return sumOf(r.nodes(), func(m *member) uint64 { return m.final.get("repairs_sent") })
}

// receiverLosses counts the losses repair has to make good: the sender's
// datagrams dropped at each receiver's input (data, and the sender's own
// repairs and session messages) plus the receivers' socket drops. Drops of
// other receivers' datagrams (their session messages, NACKs) are left out.
func receiverLosses(r *multicastRun) (uint64, string) {
	var lost uint64
	var parts []string
	for _, m := range r.receivers {
		d := r.drops[m.Host]
		lost += uint64(max(d.fromSender, 0)) + uint64(max(m.sockDrops, 0))
		parts = append(parts, fmt.Sprintf("h%d %d of %d+%d (lab rule %d)", m.Host, d.fromSender, d.all, m.sockDrops, d.rule))
	}
	return lost, fmt.Sprintf("input drops of the sender's datagrams, of all input drops, + socket drops: %s", strings.Join(parts, ", "))
}

func maxRecovery(r *multicastRun) int64 {
	var p99 uint64
	for _, m := range r.receivers {
		p99 = max(p99, m.final.get("recovery_p99_us"))
	}
	return int64(p99)
}

func recoveryDetail(r *multicastRun) string {
	var parts []string
	for _, m := range r.receivers {
		parts = append(parts, fmt.Sprintf("h%d %d/%d/%d", m.Host, m.final.get("recovery_p50_us"), m.final.get("recovery_p99_us"), m.final.get("recovery_max_us")))
	}
	return strings.Join(parts, ", ")
}

// multicastDetail is the raw numbers behind a run's throughput.
func multicastDetail(r *multicastRun, runs int) string {
	var per, rcpu []string
	for _, m := range r.receivers {
		tp := deliveryRate(m.periodic, uint64(r.spec.count), processed, delivered)
		per = append(per, fmt.Sprintf("h%d %s over %.2fs", m.Host, rate(tp.rate, "/s"), tp.span.Seconds()))
	}
	f := &r.sender.final
	stp := deliveryRate(r.sender.periodic, uint64(r.spec.count), sent, sent)
	cpu := func(m *member) string {
		return fmt.Sprintf("%.0f%% (%.1f µs/msg, %.2f ctxsw/msg)", 100*m.cpuSec/r.wall.Seconds(),
			usPer(m.cpuSec, int64(r.spec.count)), float64(m.ctxsw)/float64(r.spec.count))
	}
	for _, m := range r.receivers {
		rcpu = append(rcpu, cpu(m))
	}
	var sock, lost []string
	for _, m := range r.nodes() {
		sock = append(sock, fmt.Sprint(max(m.sockDrops, 0)))
		lost = append(lost, fmt.Sprint(len(m.Events(logs.PeerLost))))
	}
	return fmt.Sprintf("median of %d; N=%d msgs, complete=%v; receivers %s; sender queued at %s (%d data datagrams, %.1f msgs each), "+
		"window_full %d, send_errors %d, unstable at end %d; CPU over %.1fs: sender %s, receivers %s; "+
		"%s; before the run %s; socket drops %s; duplicates %s; NACKs %d, repairs %d; peer.lost events %s (false suspicions: everyone runs)",
		runs, r.spec.count, r.complete, strings.Join(per, ", "), rate(stp.rate, "msg/s"), f.get("data_datagrams"),
		float64(f.get("msgs_sent"))/float64(max(f.get("data_datagrams"), 1)), f.get("window_full"), f.get("send_errors"), f.get("unstable"),
		r.wall.Seconds(), cpu(r.sender), strings.Join(rcpu, "/"), r.load, r.background,
		strings.Join(sock, "/"), perNode(r.receivers, "duplicates"), sumNacks(r), sumRepairs(r), strings.Join(lost, "/"))
}

// addDelivery checks that every receiver delivered every message.
func (s *suite) addDelivery(sc *scenario, r *multicastRun) {
	ok, detail := s.deliveredAll(r)
	sc.add("everything delivered, nothing skipped", okWord(ok), "all", verdict(ok), detail)
}

// deliveredAll reports whether every receiver of r delivered every message
// and skipped none, with each one's figures and the run's warnings.
func (s *suite) deliveredAll(r *multicastRun) (bool, string) {
	ok := true
	var parts, warns []string
	for _, m := range r.receivers {
		got := appDelivered(&m.final)
		ok = ok && m.hasFinal && got == uint64(r.spec.count) && m.final.get("skipped") == 0
		parts = append(parts, fmt.Sprintf("h%d %d/%d skipped %d", m.Host, got, r.spec.count, m.final.get("skipped")))
	}
	for _, m := range r.nodes() {
		for _, ev := range m.Events() {
			if ev.Level == logs.LevelWarn || ev.Level == logs.LevelError {
				warns = append(warns, fmt.Sprintf("h%d %s", m.Host, ev.Name))
			}
		}
	}
	detail := strings.Join(parts, ", ")
	if len(warns) > 0 {
		detail += "; warnings: " + strings.Join(slices.Compact(warns), ", ")
	}
	return ok, detail
}

// addMemory reports the largest VmHWM of the run's huddle processes.
func (s *suite) addMemory(sc *scenario, r *multicastRun) {
	var most float64
	var parts []string
	for _, m := range r.nodes() {
		mb := float64(m.hwmKB) / 1024
		most = max(most, mb)
		s.rss[sc.name] = append(s.rss[sc.name], mb)
		parts = append(parts, fmt.Sprintf("h%d %.1f", m.Host, mb))
	}
	sc.add("max RSS (VmHWM) of a huddle process", fmt.Sprintf("%.1f MB", most), "< 100 MB", verdict(most > 0 && most < 100),
		"MB per process (sender first): "+strings.Join(parts, ", "))
}
