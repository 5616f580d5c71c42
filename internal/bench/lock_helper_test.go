package bench

// The pieces of BenchmarkLock: the raw UDP token ring it measures the
// lock against, a group of locking nodes, and the lock's events read off
// their JSON logs.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/control"
	"github.com/huddle-lan/huddle/internal/lab"
	"github.com/huddle-lan/huddle/internal/logs"
)

// --- the raw token ring ---

// tokenEnv makes the test binary a node of the raw token ring instead of
// a test (see init). It is not helperEnv: TestMain hands that one to
// helperMain, which knows only the blaster and the sink.
const tokenEnv = "HUDDLE_BENCH_TOKEN"

// init runs the token ring's node when the benchmark re-executes this
// binary in a host's namespace (tokenArgv), before the testing package
// parses a flag.
func init() {
	if os.Getenv(tokenEnv) != "1" {
		return
	}
	if err := tokenMain(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "token:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// tokenResult is what a node of the ring prints (one JSON line) when it
// is done.
type tokenResult struct {
	Got        int64   `json:"got"`      // tokens received
	FirstNs    int64   `json:"first_ns"` // arrival of the first, Unix ns
	LastNs     int64   `json:"last_ns"`  // arrival of the last
	Hops       uint64  `json:"hops"`     // the hop count the last token arrived with
	Injected   int64   `json:"injected"` // tokens put on the ring (the injector: 1, more after a loss)
	SendErrors int64   `json:"send_errors"`
	CPU        float64 `json:"cpu"` // user+system CPU seconds
}

// Re-injection: the injector puts a new token on the ring after this
// long without one (a datagram lost, which 0 % loss should not see).
const tokenLost = 100 * time.Millisecond

// tokenMain: token LISTEN NEXT RUN IDLE TOTAL INJECT
func tokenMain(args []string) error {
	if len(args) != 7 || args[0] != "token" {
		return errors.New("usage: token listen next run idle total inject")
	}
	listen, err1 := netip.ParseAddrPort(args[1])
	next, err2 := netip.ParseAddrPort(args[2])
	run, err3 := time.ParseDuration(args[3])
	idle, err4 := time.ParseDuration(args[4])
	total, err5 := time.ParseDuration(args[5])
	inject, err6 := strconv.ParseBool(args[6])
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	// One P, as huddle runs.
	runtime.GOMAXPROCS(1)
	res, err := tokenRing(listen, next, run, idle, total, inject)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// tokenRing is one node of the ring: it forwards every token it receives
// to next at once, one plain unicast datagram each (no reliability). The
// injector puts the first token on the ring, re-injects after tokenLost
// of silence, and swallows the token after run; the others stop after
// idle without a token once one came, or after total.
func tokenRing(listen, next netip.AddrPort, run, idle, total time.Duration, inject bool) (tokenResult, error) {
	var res tokenResult
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(listen))
	if err != nil {
		return res, err
	}
	defer c.Close()
	fmt.Println("ready")
	out, buf := make([]byte, 8), make([]byte, 64)
	send := func(hops uint64) {
		binary.BigEndian.PutUint64(out, hops)
		if _, err := c.WriteToUDPAddrPort(out, next); err != nil {
			res.SendErrors++
		}
	}
	start := time.Now()
	end := start.Add(run)
	if inject {
		send(0)
		res.Injected++
	}
	for {
		deadline := start.Add(total)
		switch {
		case inject:
			deadline = time.Now().Add(tokenLost)
		case res.Got > 0:
			deadline = time.Now().Add(idle)
		}
		c.SetReadDeadline(deadline)
		n, _, err := c.ReadFromUDPAddrPort(buf)
		now := time.Now()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if inject && now.Before(end) {
				send(res.Hops)
				res.Injected++
				continue
			}
			break
		}
		if err != nil {
			return res, err
		}
		if n < 8 {
			continue
		}
		res.Hops = binary.BigEndian.Uint64(buf) + 1
		if res.Got == 0 {
			res.FirstNs = now.UnixNano()
		}
		res.LastNs = now.UnixNano()
		res.Got++
		if inject && !now.Before(end) {
			break // the ring stops here
		}
		send(res.Hops)
	}
	res.CPU = cpuSeconds()
	return res, nil
}

// tokenRun is one run of the ring over some hosts.
type tokenRun struct {
	hosts []int
	res   []tokenResult // by position in hosts
	load  string
}

// rate is hand-offs per second: the tokens received on every host, from
// the first arrival anywhere to the last.
func (t *tokenRun) rate() float64 {
	var got, first, last int64
	for _, r := range t.res {
		got += r.Got
		if r.Got > 0 && (first == 0 || r.FirstNs < first) {
			first = r.FirstNs
		}
		last = max(last, r.LastNs)
	}
	if got < 2 || last <= first {
		return 0
	}
	return float64(got-1) / (float64(last-first) / 1e9)
}

func (t *tokenRun) detail() string {
	var per, cpu []string
	var got, injected, errs int64
	var hops uint64
	for i, r := range t.res {
		per = append(per, fmt.Sprintf("h%d %d", t.hosts[i], r.Got))
		cpu = append(cpu, fmt.Sprintf("%.1f", usPer(r.CPU, r.Got)))
		got, injected, errs, hops = got+r.Got, injected+r.Injected, errs+r.SendErrors, max(hops, r.Hops)
	}
	return fmt.Sprintf("%d hand-offs (received: %s; the token's hop count %d), %d token(s) injected, %d send errors; CPU µs per hand-off %s; %s",
		got, strings.Join(per, ", "), hops, injected, errs, strings.Join(cpu, "/"), t.load)
}

// runToken runs the ring over hs (in that order, back to the first) for
// run; the first host injects the token once every other one is ready.
func (e *lenv) runToken(b *testing.B, l *lab.LAN, hs []int, run time.Duration) *tokenRun {
	b.Helper()
	e.tokenPort++
	port := uint16(e.tokenPort)
	e.runs++
	addr := func(i int) string {
		return netip.AddrPortFrom(l.Host(hs[i%len(hs)]).Addr, port).String()
	}
	procs := make([]*lab.Proc, len(hs))
	start := func(i int) {
		name := fmt.Sprintf("token%d-h%d", e.runs, hs[i])
		args := []string{"token", addr(i), addr(i + 1), run.String(), "300ms", (run + 10*time.Second).String(), strconv.FormatBool(i == 0)}
		p, err := l.Start(hs[i], name, tokenArgv(b, args...))
		if err != nil {
			b.Fatal(err)
		}
		procs[i] = p
	}
	for i := len(hs) - 1; i >= 1; i-- {
		start(i)
		if err := waitLine(procs[i], "ready", 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
	c0 := readCPU()
	start(0)
	t := &tokenRun{hosts: hs}
	for i, p := range procs {
		if err := p.WaitTimeout(run + 15*time.Second); err != nil {
			b.Fatalf("%s: %v", p.Name, err)
		}
		if i == 0 {
			t.load = machineLoad(c0, readCPU())
		}
		data, _ := os.ReadFile(p.LogPath())
		var r tokenResult
		if err := lastJSON(data, &r); err != nil {
			b.Fatalf("%s: %v:\n%s", p.Name, err, data)
		}
		t.res = append(t.res, r)
	}
	return t
}

// tokenArgv is the command that runs this test binary as a node of the
// token ring.
func tokenArgv(b testing.TB, args ...string) []string {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return append([]string{"env", tokenEnv + "=1", "GORACE=atexit_sleep_ms=0", self}, args...)
}

// --- a group of locking nodes ---

// lgroup is an mgroup (logs, views, signals, stop) whose nodes use the
// lock, each with its control socket when the group has a socket
// directory.
type lgroup struct {
	*mgroup
	socks map[int]string // by host
}

// lockGroup starts nodes on hs, host h with the extra flags args(h), and
// waits until they all installed one view of all of them; g.err says why
// not, g.formed is when the last of them did.
func (e *lenv) lockGroup(b *testing.B, scenario string, hs []int, args func(int) []string, sockets bool) *lgroup {
	b.Helper()
	e.runs++
	e.port += 2 // the node uses port and port+1
	g := &lgroup{mgroup: &mgroup{e: e.menv, b: b, l: e.lan8(b), name: fmt.Sprintf("%s%d", scenario, e.runs),
		addr: "239.192.72.71:" + strconv.Itoa(e.port), nodes: map[int]*mnode{}}, socks: map[int]string{}}
	for _, h := range hs {
		sock := "off"
		if sockets {
			sock = filepath.Join(e.socks, fmt.Sprintf("%s-h%d.sock", g.name, h))
			g.socks[h] = sock
		}
		g.startNode(h, sock, args(h))
	}
	t0 := time.Now()
	formed, err := g.waitViews(hs, time.Time{}, memFormWait, func(h int, v viewEv) bool { return sameIDs(v.members, hs) })
	if err == nil {
		ids := map[string]bool{}
		for _, h := range hs {
			g.formed = later(g.formed, formed[h].at)
			ids[formed[h].id] = true
		}
		if len(ids) != 1 {
			err = fmt.Errorf("the nodes installed different views of all %d: %v", len(hs), formed)
		}
		g.view = formed[hs[0]]
	}
	if err != nil {
		g.err = fmt.Errorf("group %s did not form: %v", g.name, err)
		e.diag(b, "%v; events since the start:\n%s", g.err, g.excerpt(t0.Add(-time.Second), t0))
	}
	return g
}

// startNode starts host's node with control socket sock (or "off") and
// the extra flags args.
func (g *lgroup) startNode(host int, sock string, args []string) {
	g.b.Helper()
	g.startWith(host, sock, "local", append([]string{"--stats-interval", lockStatsEvery.String()}, args...)...)
}

// counterSnap is the counters of every node of a group, read by their
// control sockets between from and to.
type counterSnap struct {
	from, to time.Time
	c        map[int]map[string]uint64 // by host, by counter
}

// snapCounters reads the counters of every node of hs.
func (g *lgroup) snapCounters(hs []int) (counterSnap, error) {
	s := counterSnap{from: time.Now(), c: map[int]map[string]uint64{}}
	for _, h := range hs {
		res, err := control.Call(context.Background(), g.socks[h], 2*time.Second, "status", nil)
		if err != nil {
			return s, fmt.Errorf("status of h%d: %w", h, err)
		}
		var st struct {
			Counters map[string]json.Number `json:"counters"`
		}
		if err := json.Unmarshal(res, &st); err != nil {
			return s, fmt.Errorf("status of h%d: %w", h, err)
		}
		s.c[h] = map[string]uint64{}
		for k, v := range st.Counters {
			if n, err := strconv.ParseUint(v.String(), 10, 64); err == nil {
				s.c[h][k] = n
			}
		}
	}
	s.to = time.Now()
	return s, nil
}

// grown is how much counter k grew from a to b, summed over the hosts.
func grown(a, b counterSnap, k string) int64 {
	var d int64
	for h, c := range b.c {
		d += int64(c[k]) - int64(a.c[h][k])
	}
	return d
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

// lockHold is one stay in the critical section: a node's mutex.acquired
// to its next mutex.released (to the end of its log when none followed).
// It ends at the release's log time or at the acquisition's log time
// plus the release's held_ms, whichever is earlier. Both are at or after
// the moment the node released the lock: held_ms is measured by the node
// from its grant, which it logged after it happened, and it logs
// mutex.released after it wrote the replies the release sends, which on
// a busy machine can be milliseconds later (another node's acquisition
// in between is the skew, not an overlap).
type lockHold struct {
	host     int
	from, to time.Time
	view     string
	open     bool // no release logged
}

// holds returns the stays of one node's events, in order.
func holds(les []lockEv) []lockHold {
	var out []lockHold
	var cur *lockHold
	for _, e := range les {
		switch e.name {
		case "acquired":
			if cur != nil { // two acquisitions without a release
				out = append(out, *cur)
			}
			cur = &lockHold{host: e.host, from: e.at, view: e.view, open: true}
		case "released":
			if cur != nil {
				cur.to, cur.open = e.at, false
				if end := cur.from.Add(e.held); end.Before(cur.to) {
					cur.to = end
				}
				out = append(out, *cur)
				cur = nil
			}
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// safety is what checkHolds found in the stays of every node.
type safety struct {
	stays      int           // stays checked
	violations []string      // overlaps by more than the tolerance
	skewed     int           // overlaps within it
	deepest    time.Duration // the largest overlap
}

// checkHolds checks that no two stays overlap: sorted by their start,
// each must start after every earlier one ended. A stay's end is when its
// release was logged, which is after the node sent the replies it had
// deferred (the loop writes a turn's datagrams, then logs its events), so
// the next holder can log its acquisition a little before that: overlaps
// up to tol are counted apart as that skew, not as violations. A stay
// without a release ends at end.
func checkHolds(hs []lockHold, tol time.Duration, end time.Time) safety {
	s := safety{stays: len(hs)}
	sorted := slices.SortedFunc(slices.Values(hs), func(a, c lockHold) int { return a.from.Compare(c.from) })
	var prev lockHold
	var prevEnd time.Time
	for i, h := range sorted {
		to := h.to
		if h.open {
			to = end
		}
		if i > 0 && h.from.Before(prevEnd) {
			over := prevEnd.Sub(h.from)
			s.deepest = max(s.deepest, over)
			if over > tol {
				s.violations = append(s.violations, fmt.Sprintf("h%d acquired at %s (view %s) while h%d held it since %s (view %s), %.3f ms before its release",
					h.host, h.from.Format("15:04:05.000000"), h.view, prev.host, prev.from.Format("15:04:05.000000"), prev.view, ms(over)))
			} else {
				s.skewed++
			}
		}
		if to.After(prevEnd) {
			prev, prevEnd = h, to
		}
	}
	return s
}

// statsLines returns the node.stats events of the JSON log at path.
func statsLines(path string) []stat {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []stat
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, logs.Tag(logs.NodeStats)) {
			continue
		}
		var s stat
		if json.Unmarshal(line, &s) == nil && s.Event == logs.NodeStats {
			out = append(out, s)
		}
	}
	return out
}

// statRate is the growth per second of f over the periodic samples of ss
// within [from, to]; ok is false with fewer than two.
func statRate(ss []stat, from, to time.Time, f func(*stat) uint64) (float64, bool) {
	var in []stat
	for _, s := range ss {
		if s.Why == "periodic" && !s.Time.Before(from) && !s.Time.After(to) {
			in = append(in, s)
		}
	}
	if len(in) < 2 {
		return 0, false
	}
	a, z := in[0], in[len(in)-1]
	return float64(f(&z)-f(&a)) / z.Time.Sub(a.Time).Seconds(), true
}

// lastBefore is the last sample of ss at or before t; nil for none.
func lastBefore(ss []stat, t time.Time) *stat {
	var last *stat
	for i := range ss {
		if !ss[i].Time.After(t) {
			last = &ss[i]
		}
	}
	return last
}
