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
	// The round trip's halves, one per echo (the echo stamps its read
	// time; the hosts of a virtual LAN share one clock): out, the pinger's
	// send to the echo's read, and back, from there to the pinger's read.
	Out  []int64 `json:"out_ns"`
	Back []int64 `json:"back_ns"`
}

// A ping datagram: its number, the pinger's send time and the echo's
// read time (Unix ns).
const pingHeader = 24

// pingMain: ping LISTEN PEER SIZE RATE COUNT PINGER. The echoer (PINGER
// false) sends every datagram it receives back to where it came from,
// until it has been idle for a second after the first; the pinger sends
// COUNT datagrams of SIZE bytes to PEER at RATE a second, each carrying
// its number and send time, and waits for each echo (up to pingWait)
// before the next. The echo writes the time it read each datagram into
// it, so the pinger can split the round trip in two.
func pingMain(args []string) error {
	var listen, peer netip.AddrPort
	var size, rate, count int
	var pinger bool
	if err := helperArgs(args, "ping listen peer size rate count pinger", &listen, &peer, &size, &rate, &count, &pinger); err != nil {
		return err
	}
	if size < pingHeader || rate <= 0 || count <= 0 {
		return fmt.Errorf("ping: size %d (at least %d), rate %d, count %d (positive)", size, pingHeader, rate, count)
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
			if n >= pingHeader {
				binary.BigEndian.PutUint64(buf[16:], uint64(time.Now().UnixNano()))
			}
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
		binary.BigEndian.PutUint64(out[8:], uint64(sent.UnixNano()))
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
			if n >= pingHeader && binary.BigEndian.Uint64(buf) == uint64(i) {
				now := time.Now()
				read := int64(binary.BigEndian.Uint64(buf[16:]))
				res.RTTs = append(res.RTTs, int64(now.Sub(sent)))
				res.Out = append(res.Out, read-sent.UnixNano())
				res.Back = append(res.Back, now.UnixNano()-read)
				break
			}
		}
		time.Sleep(time.Until(next))
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// rawRTT runs the pinger on host from and the echoer on host to of l, at
// latRate, latCount datagrams of 1000 bytes, and returns its result.
func rawRTT(sc *scenario, from, to int) pingResult {
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
	return r
}

// benchRawRTT: the raw round trip from h1 to h3 (the latency scenarios'
// sender and sequencer) at their rate and size, p50 and p99, and its two
// halves: out, to a process that has slept since the last datagram, and
// back, to one that blocked in its read a moment before.
func (s *suite) benchRawRTT(sc *scenario) {
	type run struct {
		rtt, out, back hopRun
		sent           int
	}
	r, runs := median(sc.N, func() run {
		p := rawRTT(sc, 1, 3)
		return run{hopFigures(p.RTTs), hopFigures(p.Out), hopFigures(p.Back), p.Sent}
	}, func(r run) float64 { return float64(r.rtt.p50) })
	s.baseline["rawrtt"], s.baseline["rawrtt-p99"], s.baseline["rawrtt-out"] = float64(r.rtt.p50), float64(r.rtt.p99), float64(r.out.p50)
	sc.add(fmt.Sprintf("raw UDP round trip h1 → h3 → h1 at %d/s, 1000 B: p50", latRate), fmtDur(r.rtt.p50), "-", "info",
		fmt.Sprintf("median of %d (by p50); %d of %d echoed; the floor of lattotal's self-delivery (two hops)", runs, r.rtt.n, r.sent))
	sc.add("  p99", fmtDur(r.rtt.p99), "-", "info", "")
	sc.add("  out h1 → h3, one way, p50 / p99", fmtDur(r.out.p50)+" / "+fmtDur(r.out.p99), "-", "info",
		"the echo's read time in the echo; h3 has slept since the last datagram, as a member between two messages")
	sc.add("  back h3 → h1, one way, p50 / p99", fmtDur(r.back.p50)+" / "+fmtDur(r.back.p99), "-", "info",
		"h1 blocked in its read just after its send, and wakes where it ran")
	if r.rtt.p50 > 0 {
		sc.add("  out p50 / half the round trip's p50", fmt.Sprintf("%.2f", 2*float64(r.out.p50)/float64(r.rtt.p50)), "-", "info",
			"latfifo's ≤ 1.3 target is against half the round trip; a raw one-way datagram to a sleeping process pays this much")
	}
	sc.metric(float64(r.rtt.p50.Microseconds()), "p50-µs")
	sc.metric(float64(r.rtt.p99.Microseconds()), "p99-µs")
	sc.metric(float64(r.out.p50.Microseconds()), "out-p50-µs")
}
