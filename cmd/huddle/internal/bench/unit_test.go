package bench

import (
	"math"
	"testing"
	"time"
)

// These run with plain `go test`: they check the benchmark's arithmetic,
// with no network.

func TestDeliveryRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// 0 until 100 ms, then 1000 per 100 ms; 3500 reached between 400 and 500 ms.
	st := func(ms int, delivered int64) stats {
		return stats{time: at(ms), c: map[string]int64{"msgs_delivered": delivered}}
	}
	ss := []stats{st(0, 0), st(100, 1000), st(200, 2000), st(300, 3000), st(400, 3400), st(500, 3500)}
	tp := deliveryRate(ss, 3500, processed, delivered)
	if !tp.complete || tp.msgs != 2500 {
		t.Fatalf("got %+v", tp)
	}
	// From 100 ms; the rate before the last interval (2400/0.3s) puts the
	// 100 missing at 400 ms + 12.5 ms.
	if want := 312500 * time.Microsecond; tp.span != want {
		t.Errorf("span %v, want %v", tp.span, want)
	}
	if math.Abs(tp.rate-2500/0.3125) > 1e-6 {
		t.Errorf("rate %v", tp.rate)
	}

	// Skipped messages end the run but do not count as delivered.
	ss[5].c["msgs_delivered"], ss[5].c["skipped"] = 3450, 50
	if tp := deliveryRate(ss, 3500, processed, delivered); !tp.complete || tp.msgs != 2450 {
		t.Errorf("with skips: %+v", tp)
	}

	// Never complete: up to the last sample.
	if tp := deliveryRate(ss[:4], 3500, processed, delivered); tp.complete || tp.msgs != 2000 || tp.span != 200*time.Millisecond {
		t.Errorf("incomplete: %+v", tp)
	}
	// Nothing delivered.
	if tp := deliveryRate(ss[:1], 3500, processed, delivered); tp.rate != 0 {
		t.Errorf("empty: %+v", tp)
	}
	// All within one interval: a lower bound over that interval.
	one := []stats{st(0, 0), st(100, 500)}
	if tp := deliveryRate(one, 500, processed, delivered); !tp.complete || tp.rate != 5000 {
		t.Errorf("one interval: %+v", tp)
	}
}

func TestParseUDPDrops(t *testing.T) {
	const listing = `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  110: 4448C0EF:1D4D 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 123 2 0000000000000000 17
  111: 4448C0EF:1D4E 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 124 2 0000000000000000 5
`
	if n, ok := parseUDPDrops(listing, 0x1D4D); !ok || n != 17 {
		t.Errorf("port 0x1D4D: %d %v", n, ok)
	}
	if _, ok := parseUDPDrops(listing, 7000); ok {
		t.Error("port 7000 found")
	}
}
