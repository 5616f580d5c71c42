package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/seal"
)

// BenchmarkSeal measures what sealing every datagram with a group key
// costs, side by side in one run: each sealed run is paired with the
// same run in the clear just before it, and the figure is the median of
// the pairs. Targets (issue 14): sealing keeps at least 85 % of the
// throughput at 1000-byte messages, and adds at most 20 µs to the p50 of
// total order's send → own delivery at 1000 msg/s.
//
//	go test -run '^$' -bench Seal -benchtime 3x ./internal/bench   # about 1 min, as root
func BenchmarkSeal(b *testing.B) {
	s := newSuite(b)
	key := keyFile(b)
	sealed := []string{"--security-key-file", key}
	s.run("throughput", func(sc *scenario) {
		l := sc.lan(5)
		count := countFor(s.ensureCeiling(sc, "raw", l, 5), huddleFor)
		type pair struct {
			clear, sealed *multicastRun
			ratio         float64
		}
		p, runs := median(sc.N, func() pair {
			c := runMulticast(sc, 5, multicastSpec{sender: 1, receivers: hosts(2, 5), count: count})
			k := runMulticast(sc, 5, multicastSpec{sender: 1, receivers: hosts(2, 5), count: count, args: sealed})
			return pair{c, k, slowestRate(k) / max(slowestRate(c), 1)}
		}, func(p pair) float64 { return p.ratio })
		sc.add("sealed / in the clear: msgs/s at the slowest of 4 receivers, 0 % loss", pct(p.ratio),
			"≥ 85 %", verdict(p.ratio >= 0.85), fmt.Sprintf("median of %d pairs; this pair %s sealed, %s in the clear; sealed %s",
				runs, rate(slowestRate(p.sealed), "msg/s"), rate(slowestRate(p.clear), "msg/s"), multicastDetail(p.sealed, runs)))
		s.addDelivery(sc, p.sealed)
		sc.metric(100*p.ratio, "%clear")
		sc.metric(slowestRate(p.sealed), "msg/s")
	})
	s.run("lattotal", func(sc *scenario) {
		type pair struct {
			clear, sealed *latRun
			added         time.Duration
		}
		spec := latencySpec("total")
		withKey := spec
		withKey.args = sealed
		p, runs := median(sc.N, func() pair {
			c, k := runLatency(sc, spec), runLatency(sc, withKey)
			return pair{c, k, k.p50 - c.p50}
		}, func(p pair) float64 { return float64(p.added) })
		ok := p.clear.n > 0 && p.sealed.n > 0 && p.added <= 20*time.Microsecond
		sc.add("total order at 1000 msg/s, send → own deliver: p50 sealed − p50 in the clear", fmtDur(p.added), "≤ 20 µs", verdict(ok),
			fmt.Sprintf("median of %d pairs; this pair p50 %s sealed, %s in the clear; p99 %s and %s", runs,
				fmtDur(p.sealed.p50), fmtDur(p.clear.p50), fmtDur(p.sealed.p99), fmtDur(p.clear.p99)))
		trace, how := p.sealed.o.traceCheck()
		sc.add("  sealed run: logcheck, total order, all delivered", okWord(trace), "ok", verdict(trace), how)
		sc.metric(float64(p.added.Microseconds()), "added-p50-µs")
	})
	s.print("huddle sealing benchmark", "every datagram sealed with AES-256-GCM (security.key_file) against the same runs in the clear", nil)
}

// keyFile writes a group key for the benchmark's sealed runs.
func keyFile(b *testing.B) string {
	b.Helper()
	_, text, err := seal.NewKey()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "group.key")
	if err := os.WriteFile(path, []byte(text+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}
