package multicast

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for us := time.Duration(0); us < 100_000; us++ {
		d := us * time.Microsecond
		i := histIndex(d)
		if i < prev {
			t.Fatalf("bucket of %v is %d, below the previous %d", d, i, prev)
		}
		if up := histUpper(i); d > up || (i > 0 && d <= histUpper(i-1)) {
			t.Fatalf("%v in bucket %d, whose range ends at %v (previous at %v)", d, i, up, histUpper(i-1))
		}
		prev = i
	}
}

func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var h Histogram
	var all []time.Duration
	for range 10000 {
		d := time.Duration(r.ExpFloat64() * float64(2*time.Millisecond))
		h.Add(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := all[int(q*float64(len(all)))-1]
		got := h.Quantile(q)
		if got < exact || float64(got) > float64(exact)*1.0625+float64(time.Microsecond) {
			t.Errorf("p%v = %v, exact %v: want an upper bound within 6.25 %%", q*100, got, exact)
		}
	}
	if h.Max() != all[len(all)-1] || h.Count() != 10000 {
		t.Errorf("max %v count %d", h.Max(), h.Count())
	}
	var a, b Histogram
	a.Add(time.Millisecond)
	b.Add(3 * time.Millisecond)
	a.Merge(&b)
	if a.Count() != 2 || a.Max() != 3*time.Millisecond || a.Quantile(0.5) > 1200*time.Microsecond {
		t.Errorf("merged: count %d max %v median %v", a.Count(), a.Max(), a.Quantile(0.5))
	}
	var empty Histogram
	if empty.Quantile(0.99) != 0 {
		t.Error("empty histogram has a quantile")
	}
}

// TestHistogramCumulative: the cumulative counts at each bound are those
// of the durations at most the bound, low by no more than the durations
// within a bucket's width below it, and the sum is exact.
func TestHistogramCumulative(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	var h Histogram
	var all []time.Duration
	var sum time.Duration
	for range 20000 {
		d := time.Duration(r.ExpFloat64() * float64(3*time.Millisecond))
		h.Add(d)
		all = append(all, d)
		sum += d
	}
	bounds := []time.Duration{100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, time.Second}
	got := h.Cumulative(bounds)
	for j, b := range bounds {
		var exact, near uint64
		for _, d := range all {
			if d <= b {
				exact++
				if d > b-b/16-time.Microsecond {
					near++
				}
			}
		}
		if got[j] > exact || got[j]+near < exact {
			t.Errorf("at or below %v: %d counted, want %d less at most the %d within a bucket below it", b, got[j], exact, near)
		}
	}
	if got[len(got)-1] != uint64(len(all)) {
		t.Errorf("at or below 1s: %d of %d", got[len(got)-1], len(all))
	}
	if h.Sum() != sum {
		t.Errorf("sum %v, want %v", h.Sum(), sum)
	}
}
