package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
)

// rawRun is one run of the raw blaster and its sinks.
type rawRun struct {
	size  int
	blast blastResult
	sinks []sinkResult
	hosts []int
	load  string  // the machine's CPU use during the blast
	pace  float64 // datagrams/s the blaster was paced to; 0: unpaced
	// unicast: the blaster sent each datagram to every sink's unicast
	// address (blast.Dests of them) instead of multicasting it once
	unicast bool
	// of a loss-free search (lossFree): the unpaced blast it began with,
	// and the paced runs it made
	unpaced *rawRun
	tries   []string
}

// blastRuns makes the blaster send runs of datagrams (UDP segmentation
// offload, as huddle sends them) rather than a header per datagram. The
// ceilings the targets are set against are per datagram, mcastbench's
// way; withRuns measures one the other way, for information.
var blastRuns = false

// withRuns is lossFree with the blaster sending runs.
func withRuns(sc *scenario, l *lan.LAN, sender int, receivers []int, size int) *rawRun {
	sc.Helper()
	blastRuns = true
	defer func() { blastRuns = false }()
	return lossFree(sc, l, sender, receivers, size)
}

// lossFreeLimit is the loss at the worst receiver under which a paced run
// counts as loss-free.
const lossFreeLimit = 0.001

// loss is the fraction of the datagrams sent that the worst receiver
// did not get.
func (r *rawRun) loss() float64 {
	worst := int64(r.blast.Sent)
	for _, s := range r.sinks {
		worst = min(worst, s.Got)
	}
	return 1 - float64(worst)/float64(max(r.blast.Sent, 1))
}

// The loss-free search: an unpaced blast of blastFor bounds it, then
// paced runs of searchFor step down until one is loss-free and bisect
// between the two (searchRate).
const (
	searchDown   = 8
	searchBisect = 5
	searchFor    = 1500 * time.Millisecond
)

// lossFree finds the ceiling as multicast benchmarks define it: the
// highest rate at which every receiver gets the datagrams with less than
// 0.1 % loss. An unpaced blast that loses less than that is the ceiling
// itself (the sender is the bound); otherwise it overloaded the
// receivers' CPUs, which then keep up with about half of what they take
// without loss on two cores, and paced runs search below what it sent.
// The result is the loss-free run whose slowest receiver got the most.
func lossFree(sc *scenario, l *lan.LAN, sender int, receivers []int, size int) *rawRun {
	sc.Helper()
	return lossFreeOf(sc, l, sender, receivers, size, false)
}

// lossFreeOf is lossFree, of the unicast fan-out when unicast is set
// (runRawOf); the rates it searches are then datagrams per second before
// the fan-out, what each receiver gets.
func lossFreeOf(sc *scenario, l *lan.LAN, sender int, receivers []int, size int, unicast bool) *rawRun {
	sc.Helper()
	top := runRawOf(sc, l, sender, receivers, size, blastFor, 0, unicast)
	if top.loss() < lossFreeLimit {
		top.tries = []string{"none: the unpaced blast lost nothing, the sender is the bound"}
		return top
	}
	var best *rawRun
	var tries []string
	searchRate(float64(top.blast.Sent)/top.blast.Seconds, func(try float64) bool {
		r := runRawOf(sc, l, sender, receivers, size, searchFor, try, unicast)
		tries = append(tries, fmt.Sprintf("%s %.2f%%", rate(try, "/s"), 100*r.loss()))
		if r.loss() >= lossFreeLimit {
			return false
		}
		if best == nil || r.rate(r.slowest()) > best.rate(best.slowest()) {
			best = r
		}
		return true
	})
	if best == nil { // nothing loss-free: the slowest receiver of the unpaced blast
		best = top
	}
	best.unpaced, best.tries = top, tries
	return best
}

// searchRate searches below hi, a rate known to be too high, for the
// highest rate at which ok holds: down by 30 % a try until one holds (at
// most searchDown tries), then searchBisect bisections. It returns the
// highest rate that held, 0 if none did.
func searchRate(hi float64, ok func(rate float64) bool) float64 {
	lo := 0.0
	for range searchDown {
		if try := hi * 0.7; ok(try) {
			lo = try
			break
		} else {
			hi = try
		}
	}
	if lo == 0 {
		return 0
	}
	for range searchBisect {
		if try := (lo + hi) / 2; ok(try) {
			lo = try
		} else {
			hi = try
		}
	}
	return lo
}

// ceilingRate is the ceiling's figure of a run: what its slowest
// receiver got per second, first to last arrival.
func (r *rawRun) ceilingRate() float64 { return r.rate(r.slowest()) }

// rate is the delivered datagrams per second at receiver i, from its first
// to its last datagram.
func (r *rawRun) rate(i int) float64 {
	s := r.sinks[i]
	if s.Got < 2 || s.LastNs <= s.FirstNs {
		return 0
	}
	return float64(s.Got-1) / (float64(s.LastNs-s.FirstNs) / 1e9)
}

// slowest returns the index of the receiver with the lowest rate.
func (r *rawRun) slowest() int {
	k := 0
	for i := range r.sinks {
		if r.rate(i) < r.rate(k) {
			k = i
		}
	}
	return k
}

// runRaw blasts size-byte datagrams from sender to receivers for d, at
// pace datagrams per second (0: as fast as the blaster can).
func runRaw(sc *scenario, l *lan.LAN, sender int, receivers []int, size int, d time.Duration, pace float64) *rawRun {
	sc.Helper()
	return runRawOf(sc, l, sender, receivers, size, d, pace, false)
}

// runRawOf is runRaw, or with unicast the fan-out of huddle's unicast
// transport: each sink bound to its host's address, and the blaster
// sending every datagram to each of them (pace counts datagrams before
// the fan-out).
func runRawOf(sc *scenario, l *lan.LAN, sender int, receivers []int, size int, d time.Duration, pace float64, unicast bool) *rawRun {
	sc.Helper()
	port := strconv.Itoa(nextPort())
	group := groupAddr + ":" + port
	sinkAddr := func(int) string { return group }
	if unicast {
		sinkAddr = func(h int) string { return net.JoinHostPort(l.Host(h).Addr.String(), port) }
		var dests []string
		for _, h := range receivers {
			dests = append(dests, sinkAddr(h))
		}
		group = strings.Join(dests, ",")
	}
	runSeq++
	var procs []*lan.Proc
	for _, h := range receivers {
		name := fmt.Sprintf("raw%d-sink%d", runSeq, h)
		p, err := l.Start(h, name, helperArgv(sc, "sink", sinkAddr(h), lan.Iface, strconv.Itoa(8<<20), "500ms", (d+10*time.Second).String()))
		if err != nil {
			sc.Fatal(err)
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if err := waitLine(p, "ready", 5*time.Second); err != nil {
			sc.Fatal(err)
		}
	}
	r := &rawRun{size: size, hosts: receivers, pace: pace, unicast: unicast}
	c0 := readCPU()
	out, err := l.Exec(sender, helperArgv(sc, "blast", group, lan.Iface, strconv.Itoa(size), d.String(), "64",
		strconv.FormatFloat(pace, 'f', 0, 64), strconv.FormatBool(blastRuns))...)
	if err != nil {
		sc.Fatalf("blaster: %v", err)
	}
	r.load = machineLoad(c0, readCPU())
	if err := lastJSON(out, &r.blast); err != nil {
		sc.Fatalf("blaster: %v:\n%s", err, out)
	}
	for _, p := range procs {
		if err := p.WaitTimeout(15 * time.Second); err != nil {
			sc.Fatalf("%s: %v", p.Name, err)
		}
		data, _ := os.ReadFile(p.LogPath())
		var s sinkResult
		if err := lastJSON(data, &s); err != nil {
			sc.Fatalf("%s: %v:\n%s", p.Name, err, data)
		}
		r.sinks = append(r.sinks, s)
	}
	return r
}

// helperArgv is the command that runs this test binary as a helper.
func helperArgv(b testing.TB, args ...string) []string {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	// GORACE: a race-enabled binary otherwise sleeps 1s at exit.
	return append([]string{"env", helperEnv + "=1", "GORACE=atexit_sleep_ms=0", self}, args...)
}

func waitLine(p *lan.Proc, s string, timeout time.Duration) error {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		exited := p.Exited()
		if data, _ := os.ReadFile(p.LogPath()); strings.Contains(string(data), s) {
			return nil
		}
		if exited {
			break
		}
	}
	data, _ := os.ReadFile(p.LogPath())
	return fmt.Errorf("%s: no %q within %v:\n%s", p.Name, s, timeout, data)
}

// lastJSON decodes the last line of out that is a JSON object.
func lastJSON(out []byte, v any) error {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); len(l) > 0 && l[0] == '{' {
			return json.Unmarshal(l, v)
		}
	}
	return fmt.Errorf("no JSON result")
}
func rawDetail(r *rawRun, runs int) string {
	var per, drops, cpu []string
	for i, s := range r.sinks {
		per = append(per, fmt.Sprintf("h%d %s (%d)", r.hosts[i], rate(r.rate(i), "/s"), s.Got))
		drops = append(drops, fmt.Sprint(s.Drops))
		cpu = append(cpu, fmt.Sprintf("%.1f (%.2f ctxsw/dgram)", usPer(s.CPU, s.Got), float64(s.CtxSw)/float64(max(s.Got, 1))))
	}
	sent := float64(r.blast.Sent) / r.blast.Seconds
	search := ""
	switch u := r.unpaced; {
	case u != nil:
		search = fmt.Sprintf("loss-free rate (< %.1f %% at every receiver) of a search: unpaced blast sent %s, slowest kept %s; paced tries (target, loss) %s; chosen: ",
			100*lossFreeLimit, rate(float64(u.blast.Sent)/u.blast.Seconds, "/s"), rate(u.rate(u.slowest()), "/s"), strings.Join(r.tries, ", "))
	case len(r.tries) > 0:
		search = fmt.Sprintf("loss-free rate (< %.1f %% at every receiver): %s; ", 100*lossFreeLimit, r.tries[0])
	}
	if d := int64(r.blast.Dests); d > 0 {
		search += fmt.Sprintf("unicast fan-out: every datagram to each of %d sinks, %s and %.2f µs of the blaster's CPU per datagram on the wire; ",
			d, rate(sent*float64(d), "dgram/s on the wire"), usPer(r.blast.CPU, r.blast.Sent*d))
	}
	return search + fmt.Sprintf("median of %d; blaster sent %d in %.2fs (%s, %d errors, sendmmsg of 64); received %s; "+
		"socket drops %s; rcvbuf %d B; lost at slowest %.1f %%; CPU µs/datagram: blaster %.1f (%.0f %% of a CPU), sinks %s; %s",
		runs, r.blast.Sent, r.blast.Seconds, rate(sent, "dgram/s"), r.blast.Errors, strings.Join(per, ", "),
		strings.Join(drops, "/"), r.sinks[0].RcvBuf, 100*(1-float64(r.sinks[r.slowest()].Got)/float64(max(r.blast.Sent, 1))),
		usPer(r.blast.CPU, r.blast.Sent), 100*r.blast.CPU/r.blast.Seconds, strings.Join(cpu, "/"), r.load)
}

// TestSearchRate: the search ends within an eighth of the true limit from
// an upper bound twice as high, never above the limit, and finds nothing
// when nothing holds.
func TestSearchRate(t *testing.T) {
	for _, limit := range []float64{30_000, 80_000, 110_000, 190_000} {
		got := searchRate(200_000, func(r float64) bool { return r <= limit })
		if got > limit || got < limit*7/8 {
			t.Errorf("limit %.0f: found %.0f", limit, got)
		}
	}
	if got := searchRate(100_000, func(float64) bool { return false }); got != 0 {
		t.Errorf("nothing holds: found %.0f", got)
	}
}
