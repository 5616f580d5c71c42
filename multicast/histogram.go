package multicast

import (
	"math/bits"
	"time"
)

// Histogram counts durations in log-linear buckets: sixteen buckets per
// power of two, so a quantile is exact to within 6.25 %, from 1 µs to
// hours, in a fixed 8 KiB. It is what recovery latency is measured with.
type Histogram struct {
	counts [histBuckets]uint64
	total  uint64
	max    time.Duration
	sum    time.Duration
}

const (
	histSubBits = 4
	histSub     = 1 << histSubBits // buckets per power of two
	histBuckets = 64 * histSub
)

// histIndex maps microseconds below histSub one to one, and above that
// splits each power of two [2^e, 2^(e+1)) into histSub equal buckets.
func histIndex(d time.Duration) int {
	us := uint64(d / time.Microsecond)
	if us < histSub {
		return int(us)
	}
	e := bits.Len64(us) - 1
	sub := (us >> (e - histSubBits)) & (histSub - 1)
	return (e-histSubBits+1)*histSub + int(sub)
}

// histUpper is the largest duration that falls in bucket i.
func histUpper(i int) time.Duration {
	if i < histSub {
		return time.Duration(i+1)*time.Microsecond - 1
	}
	e := i/histSub + histSubBits - 1
	sub := uint64(i % histSub)
	lo := uint64(1)<<e + sub<<(e-histSubBits)
	return time.Duration(lo+uint64(1)<<(e-histSubBits))*time.Microsecond - 1
}

// Add counts one duration.
func (h *Histogram) Add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[min(histIndex(d), histBuckets-1)]++
	h.total++
	h.max = max(h.max, d)
	h.sum += d
}

// Sum is the total of the durations added.
func (h *Histogram) Sum() time.Duration { return h.sum }

// Cumulative returns, for each of bounds (ascending), how many durations
// fell in buckets that lie wholly at or below it: Prometheus' cumulative
// buckets, low by at most the durations of one bucket (6.25 % wide) below
// each bound.
func (h *Histogram) Cumulative(bounds []time.Duration) []uint64 {
	out := make([]uint64, len(bounds))
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		up := histUpper(i)
		for j, b := range bounds {
			if up <= b {
				out[j] += c
			}
		}
	}
	return out
}

// Count is the number of durations added.
func (h *Histogram) Count() uint64 { return h.total }

// Max is the largest duration added.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns an upper bound of the q-quantile (0 < q ≤ 1), within
// 6.25 %; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(q*float64(h.total) + 0.5)
	rank = max(1, min(rank, h.total))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
	h.sum += o.sum
}
