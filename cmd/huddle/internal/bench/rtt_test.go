package bench

// The raw round trip: the floor of the latency scenarios. One helper
// echoes every datagram back to its sender; the other sends a datagram of
// the latency scenarios' size at their rate and times each echo. Total
// order's self-delivery is a round trip too (the sender → the sequencer →
// the sender), so lattotal is set beside it.

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
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
)

// pingWait is how long the pinger waits for an echo before it counts the
// datagram lost.
const pingWait = 20 * time.Millisecond

// pingResult is what the pinger prints (one JSON line) when it is done.
type pingResult struct {
	Sent int     `json:"sent"`
	RTTs []int64 `json:"rtts_ns"` // one per echo received, in send order
}

// pingMain: ping LISTEN PEER SIZE RATE COUNT PINGER. The echoer (PINGER
// false) sends every datagram it receives back to where it came from,
// until it has been idle for a second after the first; the pinger sends
// COUNT datagrams of SIZE bytes to PEER at RATE a second, each carrying
// its number, and waits for each echo (up to pingWait) before the next.
func pingMain(args []string) error {
	var listen, peer netip.AddrPort
	var size, rate, count int
	var pinger bool
	if err := helperArgs(args, "ping listen peer size rate count pinger", &listen, &peer, &size, &rate, &count, &pinger); err != nil {
		return err
	}
	if size < 8 || rate <= 0 || count <= 0 {
		return fmt.Errorf("ping: size %d (at least 8), rate %d, count %d (positive)", size, rate, count)
	}
	runtime.GOMAXPROCS(1) // as huddle runs
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(listen))
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Println("ready")
	buf := make([]byte, 65536)
	if !pinger {
		got := false
		for {
			if got {
				c.SetReadDeadline(time.Now().Add(time.Second))
			}
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			if err != nil {
				return err
			}
			got = true
			c.WriteToUDPAddrPort(buf[:n], from)
		}
	}
	var res pingResult
	out := make([]byte, size)
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range count {
		next := start.Add(time.Duration(i+1) * interval)
		binary.BigEndian.PutUint64(out, uint64(i))
		sent := time.Now()
		if _, err := c.WriteToUDPAddrPort(out, peer); err != nil {
			return err
		}
		res.Sent++
		c.SetReadDeadline(sent.Add(pingWait))
		for {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				break // no echo within pingWait: lost
			}
			if n >= 8 && binary.BigEndian.Uint64(buf) == uint64(i) {
				res.RTTs = append(res.RTTs, int64(time.Since(sent)))
				break
			}
		}
		time.Sleep(time.Until(next))
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// rawRTT runs the pinger on host from and the echoer on host to of l, at
// latRate, latCount datagrams of 1000 bytes, and returns the round trips.
func rawRTT(sc *scenario, from, to int) (rtts []time.Duration, sent int) {
	sc.Helper()
	l := sc.lan(latHosts)
	port := uint16(nextPort())
	runSeq++
	a := func(h int) string { return netip.AddrPortFrom(l.Host(h).Addr, port).String() }
	args := func(self, other int, pinger bool) []string {
		return []string{"ping", a(self), a(other), "1000", strconv.Itoa(latRate), strconv.Itoa(latCount), strconv.FormatBool(pinger)}
	}
	echo, err := l.Start(to, fmt.Sprintf("echo%d-h%d", runSeq, to), helperArgv(sc, args(to, from, false)...))
	if err != nil {
		sc.Fatal(err)
	}
	if err := waitLine(echo, "ready", 5*time.Second); err != nil {
		sc.Fatal(err)
	}
	ping, err := l.Start(from, fmt.Sprintf("ping%d-h%d", runSeq, from), helperArgv(sc, args(from, to, true)...))
	if err != nil {
		sc.Fatal(err)
	}
	limit := time.Duration(latCount)*time.Second/time.Duration(latRate) + 10*time.Second
	for _, p := range []*lan.Proc{ping, echo} {
		if err := p.WaitTimeout(limit); err != nil {
			sc.Fatalf("%s: %v", p.Name, err)
		}
	}
	data, _ := os.ReadFile(ping.LogPath())
	var r pingResult
	if err := lastJSON(data, &r); err != nil {
		sc.Fatalf("%s: %v:\n%s", ping.Name, err, data)
	}
	for _, ns := range r.RTTs {
		rtts = append(rtts, time.Duration(ns))
	}
	return rtts, r.Sent
}

// benchRawRTT: the raw round trip from h1 to h3 (the latency scenarios'
// sender and sequencer) at their rate and size, p50 and p99.
func (s *suite) benchRawRTT(sc *scenario) {
	type run struct {
		p50, p99  time.Duration
		got, sent int
	}
	r, runs := median(sc.N, func() run {
		rtts, sent := rawRTT(sc, 1, 3)
		return run{quantile(rtts, 0.5), quantile(rtts, 0.99), len(rtts), sent}
	}, func(r run) float64 { return float64(r.p50) })
	s.baseline["rawrtt"], s.baseline["rawrtt-p99"] = float64(r.p50), float64(r.p99)
	sc.add(fmt.Sprintf("raw UDP round trip h1 → h3 → h1 at %d/s, 1000 B: p50", latRate), fmtDur(r.p50), "-", "info",
		fmt.Sprintf("median of %d (by p50); %d of %d echoed; the floor of lattotal's self-delivery (two hops)", runs, r.got, r.sent))
	sc.add("  p99", fmtDur(r.p99), "-", "info", "")
	sc.metric(float64(r.p50.Microseconds()), "p50-µs")
	sc.metric(float64(r.p99.Microseconds()), "p99-µs")
}
