package bench

// The raw multicast floors of the latency scenarios. A raw round trip
// (rawrtt) is one process waking another and back; a huddle hop is a
// multicast that wakes every other member's process at once, on a
// machine whose few cores they share, and a sequencer's hop a second such
// multicast. These helpers do exactly that with no protocol at all, over
// huddle's own socket layer (multicast.Open, ReadBatch/WriteBatch):
//
//   - hop send: h1 multicasts COUNT datagrams of SIZE bytes at RATE, each
//     carrying its number and its send time;
//   - hop recv: every other member's host reads them and keeps, for each,
//     the time from its send (the hosts of a virtual LAN share one clock);
//   - hop relay: as recv, and multicasts each one again at once, marked
//     relayed, as a sequencer multicasts an order record for each message:
//     the sender and the other receivers keep the time from the first send
//     to the relayed copy's arrival (two hops).

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/multicast"
)

// hopResult is what every hop helper prints (one JSON line) when it is
// done: the one-way times of the datagrams it received, in ns.
type hopResult struct {
	Sent    int     `json:"sent,omitempty"`
	Direct  []int64 `json:"direct_ns"`  // the sender's datagrams: one hop
	Relayed []int64 `json:"relayed_ns"` // the relay's copies: two hops
}

// A hop datagram: magic, kind, number, send time (Unix ns).
const (
	hopMagic  = 0x68
	hopDirect = 1
	hopRelay  = 2
	hopHeader = 18
)

// hopMain: hop GROUP:PORT IFACE ROLE SIZE RATE COUNT, ROLE send, recv or
// relay. Every role stops after a second without a datagram once the
// first arrived (the sender once it sent everything and heard nothing
// for that long), and prints a hopResult.
func hopMain(args []string) error {
	var group netip.AddrPort
	var iface, role string
	var size, rate, count int
	if err := helperArgs(args, "hop group iface role size rate count", &group, &iface, &role, &size, &rate, &count); err != nil {
		return err
	}
	if size < hopHeader || rate <= 0 || count <= 0 || (role != "send" && role != "recv" && role != "relay") {
		return fmt.Errorf("hop: role %q (send, recv, relay), size %d (at least %d), rate %d, count %d (positive)", role, size, hopHeader, rate, count)
	}
	runtime.GOMAXPROCS(1) // as huddle runs
	c, err := multicast.Open(multicast.SocketOptions{Group: group, Iface: iface, TTL: 1, RecvBuffer: 4 << 20}, zerolog.Nop())
	if err != nil {
		return err
	}
	var (
		mu   sync.Mutex
		res  hopResult
		last = time.Now()
		got  bool
	)
	done := make(chan struct{})
	go func() { // the reader: records, relays
		defer close(done)
		pkts := make([]huddle.Packet, 64)
		for i := range pkts {
			pkts[i].Buf = make([]byte, 65536)
		}
		var out [][]byte
		for {
			n, err := c.ReadBatch(pkts)
			if err != nil {
				return
			}
			now := time.Now()
			out = out[:0]
			mu.Lock()
			for _, p := range pkts[:n] {
				b := p.Buf[:p.N]
				if len(b) < hopHeader || b[0] != hopMagic {
					continue
				}
				d := now.UnixNano() - int64(binary.BigEndian.Uint64(b[10:]))
				if b[1] == hopDirect {
					res.Direct = append(res.Direct, d)
					if role == "relay" {
						b[1] = hopRelay
						out = append(out, b)
					}
				} else {
					res.Relayed = append(res.Relayed, d)
				}
			}
			got, last = true, now
			mu.Unlock()
			if len(out) > 0 {
				c.WriteBatch(out)
			}
		}
	}()
	fmt.Println("ready")
	if role == "send" {
		b := make([]byte, size)
		b[0], b[1] = hopMagic, hopDirect
		interval := time.Second / time.Duration(rate)
		start := time.Now()
		for i := range count {
			binary.BigEndian.PutUint64(b[2:], uint64(i))
			binary.BigEndian.PutUint64(b[10:], uint64(time.Now().UnixNano()))
			if err := c.WriteBatch([][]byte{b}); err != nil {
				return err
			}
			res.Sent++
			time.Sleep(time.Until(start.Add(time.Duration(i+1) * interval)))
		}
		mu.Lock()
		got, last = true, time.Now()
		mu.Unlock()
	}
	for {
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		idle := got && time.Since(last) > time.Second
		mu.Unlock()
		if idle {
			break
		}
	}
	c.Close()
	<-done
	return json.NewEncoder(os.Stdout).Encode(res)
}

// rawHops runs the hop helpers on l: the sender on host 1, a receiver on
// every other host of receivers, host relay (0: none) relaying; latRate,
// latCount datagrams of msgSize bytes. It returns each host's result.
func rawHops(sc *scenario, l *lan.LAN, receivers []int, relay int) map[int]hopResult {
	sc.Helper()
	group := groupAddr + ":" + strconv.Itoa(nextPort())
	runSeq++
	args := func(role string) []string {
		return helperArgv(sc, "hop", group, lan.Iface, role, strconv.Itoa(msgSize), strconv.Itoa(latRate), strconv.Itoa(latCount))
	}
	procs := map[int]*lan.Proc{}
	for _, h := range append(receivers, 1) {
		role := "recv"
		switch h {
		case 1:
			role = "send"
		case relay:
			role = "relay"
		}
		if h == 1 { // the sender starts once every receiver is ready
			for _, p := range procs {
				if err := waitLine(p, "ready", 5*time.Second); err != nil {
					sc.Fatal(err)
				}
			}
		}
		p, err := l.Start(h, fmt.Sprintf("hop%d-%s-h%d", runSeq, role, h), args(role))
		if err != nil {
			sc.Fatal(err)
		}
		procs[h] = p
	}
	limit := time.Duration(latCount)*time.Second/time.Duration(latRate) + 10*time.Second
	out := map[int]hopResult{}
	var errs []error
	for h, p := range procs {
		if err := p.WaitTimeout(limit); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", p.Name, err))
			continue
		}
		data, _ := os.ReadFile(p.LogPath())
		var r hopResult
		if err := lastJSON(data, &r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v:\n%s", p.Name, err, data))
		}
		out[h] = r
	}
	if err := errors.Join(errs...); err != nil {
		sc.Fatal(err)
	}
	return out
}

// hopRun is a hop run's figures: one-way p50 and p99, and how many.
type hopRun struct {
	p50, p99 time.Duration
	n        int
}

func hopFigures(ns []int64) hopRun {
	ds := make([]time.Duration, len(ns))
	for i, v := range ns {
		ds[i] = time.Duration(v)
	}
	slices.Sort(ds)
	return hopRun{quantile(ds, 0.5), quantile(ds, 0.99), len(ds)}
}

// benchRawHop: rawhop (see BenchmarkOrder), the floor of latfifo, at h2
// (latfifo's other member) and at h3 (the other reader of the same
// datagrams).
func (s *suite) benchRawHop(sc *scenario) {
	type run struct{ h2, h3 hopRun }
	r, runs := median(sc.N, func() run {
		res := rawHops(sc, sc.lan(latHosts), hosts(2, latHosts), 0)
		return run{hopFigures(res[2].Direct), hopFigures(res[3].Direct)}
	}, func(r run) float64 { return float64(r.h2.p50) })
	s.baseline["rawhop"] = float64(r.h2.p50)
	sc.add(fmt.Sprintf("raw multicast h1 → h2 (h3 reading too) at %d/s, 1000 B: p50", latRate), fmtDur(r.h2.p50), "-", "info",
		fmt.Sprintf("median of %d (by p50); %d of %d arrived; latfifo's hop with no protocol: one multicast wakes both other hosts' processes", runs, r.h2.n, latCount))
	sc.add("  p99", fmtDur(r.h2.p99), "-", "info", "")
	sc.add("  at h3, p50 / p99", fmtDur(r.h3.p50)+" / "+fmtDur(r.h3.p99), "-", "info",
		"the same datagrams at the other reader: where the two differ, one of them waited for a CPU")
	s.floorRatio(sc, "  p50 / half the raw round trip's p50 (rawrtt)", r.h2.p50, "rawrtt", 0.5, 0, "latfifo's target, met by no protocol at all here when above 1.3")
	sc.metric(float64(r.h2.p50.Microseconds()), "p50-µs")
	sc.metric(float64(r.h2.p99.Microseconds()), "p99-µs")
	sc.metric(float64(r.h3.p50.Microseconds()), "h3-p50-µs")
}

// benchRawRelay: rawrelay (see BenchmarkOrder), the floor of lattotal.
func (s *suite) benchRawRelay(sc *scenario) {
	type run struct{ own, other hopRun }
	r, runs := median(sc.N, func() run {
		res := rawHops(sc, sc.lan(latHosts), hosts(2, latHosts), latHosts)
		return run{hopFigures(res[1].Relayed), hopFigures(res[2].Relayed)}
	}, func(r run) float64 { return float64(r.own.p50) })
	s.baseline["rawrelay"], s.baseline["rawrelay-other"] = float64(r.own.p50), float64(r.other.p50)
	sc.add(fmt.Sprintf("raw multicast h1 → h3 → h1 (h3 multicasts each again) at %d/s: p50", latRate), fmtDur(r.own.p50), "-", "info",
		fmt.Sprintf("median of %d (by p50); %d of %d came back; lattotal's self-delivery with no protocol: a sequencer's two multicast hops", runs, r.own.n, latCount))
	sc.add("  p99", fmtDur(r.own.p99), "-", "info", "")
	sc.add("  at h2 (h1 → h3 → h2), p50 / p99", fmtDur(r.other.p50)+" / "+fmtDur(r.other.p99), "-", "info", "lattotal's other member with no protocol")
	sc.metric(float64(r.own.p50.Microseconds()), "p50-µs")
	sc.metric(float64(r.own.p99.Microseconds()), "p99-µs")
}

// floorRatio adds a row: d / (share × the floor named), at most most when
// most is not 0 (else for information); nothing when the floor did not
// run.
func (s *suite) floorRatio(sc *scenario, figure string, d time.Duration, floor string, share, most float64, detail string) {
	f := s.baseline[floor] * share
	if f <= 0 || d <= 0 {
		return
	}
	ratio := float64(d) / f
	target, result := "-", "info"
	if most > 0 {
		target, result = fmt.Sprintf("≤ %.1f", most), verdict(ratio <= most)
	}
	if detail != "" {
		detail += "; "
	}
	sc.add(figure, fmt.Sprintf("%.2f", ratio), target, result, detail+"floor "+fmtDur(time.Duration(f)))
}
