package bench

import (
	"fmt"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/multicast"
)

// idleSizes are the group sizes of the idle scenario: as far as this
// machine holds real members (the simulator's BenchmarkIdleGroup, in
// ./node, goes on to 64 and 128).
var idleSizes = []int{4, 8, 16, 32}

// idleFor is how long an idle group is measured.
const idleFor = 10 * time.Second

// benchIdle: what an idle group costs as it grows. Groups of 4, 8, 16
// and 32 members (--profile lan, nothing sent), formed, settled for 2 s,
// then measured for idleFor: per member and second, the datagrams it
// sent and received (node.stats datagrams_out, datagrams_in, from the
// first and last of its stats in the window) against the design's
// formula (docs/design.md, "The cost of a group": a session message of
// multicast.SessionDatagrams datagrams per member and heartbeat), and
// its CPU (/proc/PID/stat) as a share of one core. Target: the datagrams
// within 10 % of the formula; no view change while idle.
func benchIdle(sc *scenario) {
	cfg := config.LAN()
	beats := float64(time.Second) / float64(cfg.Heartbeat.D())
	for _, n := range idleSizes {
		hs := hosts(1, n)
		g := sc.newGroup(n, false, "--stats-interval", "1s")
		g.form(hs, func(int) []string { return nil })
		if g.err != nil {
			sc.add(fmt.Sprintf("%d members idle", n), "no group", "a group", "FAIL", g.err.Error())
			g.stop(10 * time.Second)
			continue
		}
		time.Sleep(2 * time.Second)
		type snap struct {
			s   *stats
			cpu float64
		}
		take := func() map[int]snap {
			out := map[int]snap{}
			for _, h := range hs {
				m := g.members[h]
				pid, err := m.PID()
				if err != nil {
					continue
				}
				cpu, _, _ := procCPU(pid)
				out[h] = snap{m.latest(), cpu}
			}
			return out
		}
		t0, a := time.Now(), take()
		time.Sleep(idleFor)
		t1, b := time.Now(), take()
		views := g.viewsBetween(hs, t0, t1)
		g.stop(10 * time.Second)

		var outs, ins, cpus []float64
		for _, h := range hs {
			x, y := a[h], b[h]
			if x.s == nil || y.s == nil {
				continue
			}
			dt := y.s.time.Sub(x.s.time).Seconds()
			if dt <= 0 {
				continue
			}
			outs = append(outs, float64(y.s.get("datagrams_out")-x.s.get("datagrams_out"))/dt)
			ins = append(ins, float64(y.s.get("datagrams_in")-x.s.get("datagrams_in"))/dt)
			cpus = append(cpus, 100*(y.cpu-x.cpu)/t1.Sub(t0).Seconds())
		}
		wantOut := float64(multicast.SessionDatagrams(n, cfg.DatagramSize)) * beats
		wantIn := wantOut * float64(n-1)
		out, in, cpu := mean(outs), mean(ins), mean(cpus)
		ok := len(outs) == n && views == 0 && near(out, wantOut, 0.1) && near(in, wantIn, 0.1)
		sc.add(fmt.Sprintf("%d members idle: datagrams sent / received per member and second", n),
			fmt.Sprintf("%.1f / %.0f", out, in), fmt.Sprintf("%.0f / %.0f ±10 %%", wantOut, wantIn), verdict(ok),
			fmt.Sprintf("the formula: %d session datagram(s) per heartbeat (%v) each, received from %d others; per member, sent %s, received %s; "+
				"%d of %d members measured over %v; views installed meanwhile: %d",
				multicast.SessionDatagrams(n, cfg.DatagramSize), cfg.Heartbeat.D(), n-1, spread(outs, "%.1f"), spread(ins, "%.0f"), len(outs), n, idleFor, views))
		sc.add(fmt.Sprintf("%d members idle: CPU per member", n), fmt.Sprintf("%.2f %% of a core", cpu), "-", "info",
			fmt.Sprintf("per member %s %%; %.1f µs per datagram received", spread(cpus, "%.2f"), 1e4*cpu/max(in, 1)))
		sc.metric(in, fmt.Sprintf("in/s@%d", n))
		sc.metric(cpu, fmt.Sprintf("%%cpu@%d", n))
	}
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// near reports whether x is within frac of want.
func near(x, want, frac float64) bool { return x >= want*(1-frac) && x <= want*(1+frac) }

// spread is the least and the most of xs, formatted.
func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf(format+"–"+format, lo, hi)
}
