package node

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/multicast"
)

// BenchmarkIdleGroup measures what an idle group costs as it grows, in
// the simulator: groups of 4 to 128 members with the lan profile's
// settings (heartbeat 50 ms, every machine's defaults), formed, then 2 s
// of simulated time (40 heartbeats) with no traffic. Per member and second: the datagrams
// it sends and receives, against the design's formula (docs/design.md,
// "The cost of a group": each member multicasts one session message per
// heartbeat, multicast.SessionDatagrams datagrams), and the Cores' own
// time (the wall time of the simulator's run over the members and the
// simulated seconds: an upper bound, the network model's work included).
//
//	go test -run '^$' -bench IdleGroup -benchtime 1x ./node
func BenchmarkIdleGroup(b *testing.B) {
	for _, n := range []int{4, 8, 16, 32, 64, 128} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			for range b.N {
				out, in, cpu := idleGroup(b, n, 2*time.Second)
				cfg := config.LAN()
				perBeat := float64(multicast.SessionDatagrams(n, cfg.DatagramSize))
				want := perBeat * float64(time.Second) / float64(cfg.Heartbeat.D())
				b.ReportMetric(out, "out/s/member")
				b.ReportMetric(want, "formula-out/s")
				b.ReportMetric(in, "in/s/member")
				b.ReportMetric(want*float64(n-1), "formula-in/s")
				b.ReportMetric(cpu, "core-µs/s/member")
			}
		})
	}
}

// idleGroup forms a group of n members with the lan profile's settings,
// lets it settle for 2 s, and measures it idle for d of simulated time:
// datagrams sent and received per member and second, and the run's wall
// time per member and simulated second, in µs.
func idleGroup(b *testing.B, n int, d time.Duration) (out, in, cpuUs float64) {
	w := sim.New(sim.Options{Seed: 1})
	cfg := config.LAN()
	for id := range uint64(n) {
		w.Add(id+1, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			cfg.ID = id
			return newSimCore(NewCore(CoreOptionsFrom(cfg, realInc+inc, uint64(seed)), w.Now()))
		})
	}
	all := ids(n)
	var last error
	if err := w.RunUntil(func() bool { last = agreed(w, all); return last == nil }, 30*time.Second); err != nil {
		b.Fatalf("%d members: no view of all: %v (%v)", n, last, err)
	}
	if err := w.RunFor(2 * time.Second); err != nil {
		b.Fatal(err)
	}
	if err := agreed(w, all); err != nil {
		b.Fatalf("%d members: the view did not hold while idle: %v", n, err)
	}
	count := func() (o, i uint64) {
		for _, id := range all {
			cs, _ := core(w, id).Stats()
			o, i = o+cs.DatagramsOut, i+cs.DatagramsIn
		}
		return
	}
	o0, i0 := count()
	start := time.Now()
	if err := w.RunFor(d); err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start)
	o1, i1 := count()
	if err := agreed(w, all); err != nil {
		b.Fatalf("%d members: the view did not hold while idle: %v", n, err)
	}
	secs := d.Seconds() * float64(n)
	return float64(o1-o0) / secs, float64(i1-i0) / secs, float64(wall.Microseconds()) / secs
}
