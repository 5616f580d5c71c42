package bench

// The raw UDP token ring BenchmarkLock measures the lock against: the
// test binary, re-executed in each host's namespace (helperMain's token
// mode), forwards a token to the next host at once, one plain unicast
// datagram each, nothing repaired.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
)

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
	var listen, next netip.AddrPort
	var run, idle, total time.Duration
	var inject bool
	if err := helperArgs(args, "token listen next run idle total inject", &listen, &next, &run, &idle, &total, &inject); err != nil {
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

// helperArgs parses a helper's arguments after its mode into vs, one each
// (*netip.AddrPort, *time.Duration, *int or *bool); usage names them.
func helperArgs(args []string, usage string, vs ...any) error {
	if len(args) != len(vs)+1 {
		return errors.New("usage: " + usage)
	}
	var errs []error
	for i, v := range vs {
		a := args[i+1]
		var err error
		switch v := v.(type) {
		case *netip.AddrPort:
			*v, err = netip.ParseAddrPort(a)
		case *time.Duration:
			*v, err = time.ParseDuration(a)
		case *int:
			*v, err = strconv.Atoi(a)
		case *bool:
			*v, err = strconv.ParseBool(a)
		case *string:
			*v = a
		default:
			err = fmt.Errorf("helperArgs: %T", v)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
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
func runToken(sc *scenario, l *lan.LAN, hs []int, run time.Duration) *tokenRun {
	sc.Helper()
	port := uint16(nextPort())
	runSeq++
	addr := func(i int) string {
		return netip.AddrPortFrom(l.Host(hs[i%len(hs)]).Addr, port).String()
	}
	procs := make([]*lan.Proc, len(hs))
	start := func(i int) {
		name := fmt.Sprintf("token%d-h%d", runSeq, hs[i])
		args := []string{"token", addr(i), addr(i + 1), run.String(), "300ms", (run + 10*time.Second).String(), strconv.FormatBool(i == 0)}
		p, err := l.Start(hs[i], name, helperArgv(sc, args...))
		if err != nil {
			sc.Fatal(err)
		}
		procs[i] = p
	}
	for i := len(hs) - 1; i >= 1; i-- {
		start(i)
		if err := waitLine(procs[i], "ready", 5*time.Second); err != nil {
			sc.Fatal(err)
		}
	}
	c0 := readCPU()
	start(0)
	t := &tokenRun{hosts: hs}
	for i, p := range procs {
		if err := p.WaitTimeout(run + 15*time.Second); err != nil {
			sc.Fatalf("%s: %v", p.Name, err)
		}
		if i == 0 {
			t.load = machineLoad(c0, readCPU())
		}
		data, _ := os.ReadFile(p.LogPath())
		var r tokenResult
		if err := lastJSON(data, &r); err != nil {
			sc.Fatalf("%s: %v:\n%s", p.Name, err, data)
		}
		t.res = append(t.res, r)
	}
	return t
}
