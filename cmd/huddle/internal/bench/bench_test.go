package bench

// The harness every benchmark runs on: the virtual LANs and the huddle
// binary, made once per process; the suite of one benchmark, whose
// scenarios add rows to its table and report metrics; and the table.

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/testutil"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		if err := helperMain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	machine.close()
	os.Exit(code)
}

const (
	// logDirEnv names a directory that keeps the logs of every process
	// the benchmarks start (by default they go with the LAN).
	logDirEnv = "BENCH_LOGDIR"
	// extraArgsEnv names an environment variable whose words are added to
	// every huddle command line, for tuning experiments:
	// BENCH_HUDDLE_ARGS="--send-window 16384".
	extraArgsEnv = "BENCH_HUDDLE_ARGS"

	msgSize   = 1000                    // bytes of every message and raw datagram
	blastFor  = 2500 * time.Millisecond // each raw blast
	groupAddr = "239.192.72.68"         // the multicast address of every run, each on a port of its own
)

// machine is what every benchmark of the process shares: the huddle
// binary and the LANs, by number of hosts, made on first use and closed
// when the benchmarks are over. A scenario leaves a LAN as it found it
// (no loss, no cut).
var machine shared

type shared struct {
	mu      sync.Mutex
	bin     string
	binDir  string
	lans    map[int]*lan.LAN
	port    int
	current atomic.Pointer[testing.B] // the running scenario, where the LANs log
}

func (m *shared) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n, l := range m.lans {
		if err := l.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "closing the LAN of %d hosts: %v\n", n, err)
		}
	}
	if m.binDir != "" {
		os.RemoveAll(m.binDir)
	}
}

// suite is one benchmark: its scenarios and its table.
type suite struct {
	b     *testing.B
	mu    sync.Mutex
	rows  []row
	diags []string // the events around what went wrong, printed after the table
	// figures a later scenario compares with, by the scenario that
	// measured them: "raw", "raw3", "one3", "token", "contend0"
	baseline map[string]float64
	rss      map[string][]float64 // VmHWM of every huddle process, MB, by scenario
}

func newSuite(b *testing.B) *suite {
	testutil.NeedLAN(b, lan.Available())
	return &suite{b: b, baseline: map[string]float64{}, rss: map[string][]float64{}}
}

// scenario is one invocation of a sub-benchmark: the rows it adds to the
// table and the metrics it reports go through it.
type scenario struct {
	*testing.B
	suite *suite
	name  string
}

// run runs f as the sub-benchmark name. It skips the testing package's
// first call with b.N == 1 when -benchtime asks for more runs (that call
// would be thrown away), and drops the rows of an earlier invocation.
func (s *suite) run(name string, f func(sc *scenario)) {
	s.b.Run(name, func(b *testing.B) {
		if b.N < repeats() {
			return
		}
		s.mu.Lock()
		s.rows = slices.DeleteFunc(s.rows, func(r row) bool { return r.scenario == name })
		delete(s.rss, name)
		s.mu.Unlock()
		machine.current.Store(b)
		defer machine.current.Store(nil)
		f(&scenario{B: b, suite: s, name: name})
	})
}

// repeats is n of -benchtime nx, else 1.
func repeats() int {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return 1
	}
	v := f.Value.String()
	if n, err := strconv.Atoi(strings.TrimSuffix(v, "x")); err == nil && strings.HasSuffix(v, "x") && n > 0 {
		return n
	}
	return 1
}

// add adds a row of the scenario to the table.
func (sc *scenario) add(figure, value, target, result, raw string) {
	sc.suite.add(row{sc.name, figure, value, target, result, raw})
}

// metric reports a figure of the scenario as a benchmark metric.
func (sc *scenario) metric(v float64, unit string) { sc.ReportMetric(v, unit) }

// diagLines is how many lines of events a diagnostic keeps.
const diagLines = 80

// diag keeps a diagnostic for the report (the testing package trims a
// benchmark's log to a few lines) and logs its first line.
func (sc *scenario) diag(format string, args ...any) {
	s := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	ls := strings.Split(s, "\n")
	if len(ls) > diagLines+1 {
		ls = append(ls[:diagLines+1], fmt.Sprintf("    ... %d more lines (BENCH_LOGDIR keeps the logs)", len(ls)-diagLines-1))
	}
	sc.suite.mu.Lock()
	sc.suite.diags = append(sc.suite.diags, sc.Name()+": "+strings.Join(ls, "\n"))
	sc.suite.mu.Unlock()
	sc.Log(ls[0])
}

// lan returns the LAN of n hosts, built on first use.
func (sc *scenario) lan(n int) *lan.LAN {
	machine.mu.Lock()
	defer machine.mu.Unlock()
	if l := machine.lans[n]; l != nil {
		return l
	}
	opts := lan.Options{Hosts: n, Grace: 2 * time.Second, Logf: func(format string, args ...any) {
		if b := machine.current.Load(); b != nil {
			b.Logf(format, args...)
		}
	}}
	if dir := os.Getenv(logDirEnv); dir != "" {
		opts.LogDir = filepath.Join(dir, fmt.Sprintf("lan%d", n))
	}
	l, err := lan.New(opts)
	if err != nil {
		sc.Fatal(err)
	}
	if machine.lans == nil {
		machine.lans = map[int]*lan.LAN{}
	}
	machine.lans[n] = l
	return l
}

// huddle returns the huddle binary: $LAB_HUDDLE_BIN, or cmd/huddle built once.
func (sc *scenario) huddle() string {
	machine.mu.Lock()
	defer machine.mu.Unlock()
	if machine.bin != "" {
		return machine.bin
	}
	dir, err := os.MkdirTemp("", "huddle-bench-")
	if err != nil {
		sc.Fatal(err)
	}
	machine.binDir = dir
	bin, err := lan.BuildHuddle(dir)
	if errors.Is(err, lan.ErrNoGo) {
		sc.Skip(err)
	} else if err != nil {
		sc.Fatal(err)
	}
	machine.bin = bin
	return bin
}

// nextPort returns a multicast port for a run; a node uses the next one too.
func nextPort() int {
	machine.mu.Lock()
	defer machine.mu.Unlock()
	if machine.port == 0 {
		machine.port = 7500
	}
	machine.port += 2
	return machine.port
}

// mtu is the LAN's veth MTU.
func mtu(l *lan.LAN) string {
	out, err := l.Exec(1, "cat", "/sys/class/net/"+lan.Iface+"/mtu")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// --- repeated runs ---

// repeat runs f n times (at least once), f(i) being run i (0-based).
func repeat[T any](n int, f func(i int) T) []T {
	var rs []T
	for i := range max(n, 1) {
		rs = append(rs, f(i))
	}
	return rs
}

// medianBy returns the run whose key is the median, and rs sorted by key.
func medianBy[T any](rs []T, key func(T) float64) (T, []T) {
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, c T) int {
		switch ka, kc := key(a), key(c); {
		case ka < kc:
			return -1
		case ka > kc:
			return 1
		}
		return 0
	})
	return sorted[len(sorted)/2], sorted
}

// median runs f n times and returns the run whose key is the median, and
// how many runs there were.
func median[T any](n int, f func() T, key func(T) float64) (T, int) {
	rs := repeat(n, func(int) T { return f() })
	m, _ := medianBy(rs, key)
	return m, len(rs)
}

// --- the table ---

type row struct {
	scenario, figure, value, target, verdict, raw string
}

func (s *suite) add(r row) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, r)
}

// value is the value of the first row of scenario, for the comparisons
// printed after a table.
func (s *suite) value(scenario string) string {
	for _, r := range s.rows {
		if r.scenario == scenario {
			return r.value
		}
	}
	return "not run"
}

// print prints the benchmark's table: the header (the title, the
// machine, the set-up), a note when
// BENCH_HUDDLE_ARGS changes the command lines, every row with its
// details on a line of its own, the targets missed, then what after
// returns and the diagnostics.
func (s *suite) print(title, setup string, after func() string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rows) == 0 {
		return
	}
	var w strings.Builder
	fmt.Fprintf(&w, "\n%s: %s, GOMAXPROCS %d, %d CPUs, %s\n", title, runtime.GOOS+"/"+runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), setup)
	if x := os.Getenv(extraArgsEnv); x != "" {
		fmt.Fprintf(&w, "NOTE: %s=%q: not the profile's defaults\n", extraArgsEnv, x)
	}
	if x := os.Getenv(latRateEnv); x != "" {
		fmt.Fprintf(&w, "NOTE: %s=%q: the latency runs at %d msg/s; their targets are for 1000\n", latRateEnv, x, latRate)
	}
	var width [4]int
	for _, r := range append([]row{{"scenario", "figure", "value", "target", "result", ""}}, s.rows...) {
		for i, c := range []string{r.scenario, r.figure, r.value, r.target} {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	missed, targets := 0, 0
	for _, r := range append([]row{{"scenario", "figure", "value", "target", "result", ""}}, s.rows...) {
		fmt.Fprintf(&w, "%s %s %s %s %s\n", pad(r.scenario, width[0]), pad(r.figure, width[1]), pad(r.value, width[2]), pad(r.target, width[3]), r.verdict)
		if r.raw != "" {
			fmt.Fprintf(&w, "%*s   └ %s\n", width[0], "", r.raw)
		}
		if r.verdict == "FAIL" {
			missed++
		}
		if r.verdict == "PASS" || r.verdict == "FAIL" {
			targets++
		}
	}
	fmt.Fprintf(&w, "%d of %d targets missed\n", missed, targets)
	if after != nil {
		w.WriteString(after())
	}
	if len(s.diags) > 0 {
		fmt.Fprintf(&w, "\nevents around what went wrong (ms from the signal, start, cut, heal or formation):\n%s\n", strings.Join(s.diags, "\n"))
	}
	fmt.Print(w.String())
	if missed > 0 {
		// A FAIL row is a target missed or a guarantee broken (the lock's
		// safety, a check of the logs): the benchmark fails with it.
		s.b.Errorf("%s: %d of %d targets missed (the FAIL rows above)", title, missed, targets)
	}
}

func pad(s string, n int) string { return s + strings.Repeat(" ", max(n-len([]rune(s)), 0)) }

// --- formats and small helpers ---

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// okWord is "all" or "NOT all".
func okWord(ok bool) string {
	if ok {
		return "all"
	}
	return "NOT all"
}

func rate(v float64, unit string) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM %s", v/1e6, unit)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk %s", v/1e3, unit)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

func pct(r float64) string { return fmt.Sprintf("%.1f %%", 100*r) }

func num(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtMs formats milliseconds: "never" for +Inf, "n/a" for NaN.
func fmtMs(v float64) string {
	if math.IsInf(v, 1) {
		return "never"
	}
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratioOf(a, b uint64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// usPer is CPU seconds per item in microseconds.
func usPer(sec float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return sec * 1e6 / float64(n)
}

func hosts(from, to int) []int {
	var hs []int
	for i := from; i <= to; i++ {
		hs = append(hs, i)
	}
	return hs
}

func without(hs []int, x int) []int {
	return slices.DeleteFunc(slices.Clone(hs), func(h int) bool { return h == x })
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// quantile is the q-quantile of ds (nearest rank); 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func joinInts(vs []int64) string {
	var s []string
	for _, v := range vs {
		s = append(s, strconv.FormatInt(v, 10))
	}
	return strings.Join(s, ", ")
}

// medianInt is the median of vs; -1 for none.
func medianInt(vs []int64) int64 {
	if len(vs) == 0 {
		return -1
	}
	s := slices.Sorted(slices.Values(vs))
	return s[len(s)/2]
}

func allEqual(vs []int64, want int64) bool {
	for _, v := range vs {
		if v != want {
			return false
		}
	}
	return true
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

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... %d more", len(s)-n))
	}
	return s
}

// problemsRow adds the row of the runs' checks beyond the figures: PASS
// when no run had a problem, else FAIL with every problem by run.
func (sc *scenario) problemsRow(figure, pass string, problems [][]string) {
	var probs []string
	bad := 0
	for i, ps := range problems {
		for _, p := range ps {
			probs = append(probs, fmt.Sprintf("run %d: %s", i+1, p))
		}
		if len(ps) > 0 {
			bad++
		}
	}
	if len(probs) == 0 {
		sc.add(figure, "all", "all", "PASS", pass)
		return
	}
	sc.add(figure, fmt.Sprintf("%d of %d", len(problems)-bad, len(problems)), "all", "FAIL", strings.Join(probs, "; "))
}
