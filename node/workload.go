package node

import (
	"encoding/binary"
	"time"
)

// workload generates the experiment traffic of --send-rate, --send-size
// and --send-count: message n is due at start + n/rate, so a node that
// falls behind (a full send window) catches up in a burst, as an
// application with a queue would. Payloads are deterministic: the 8-byte
// message number, then a fixed pattern, so that the same message has the
// same CRC everywhere and no two messages of a sender have the same bytes.
type workload struct {
	rate  float64 // messages per second; 0 = none
	count int     // stop after this many; 0 = no limit
	size  int
	start time.Time
	sent  int
	buf   []byte
}

func newWorkload(rate, size, count int, start time.Time) *workload {
	w := &workload{rate: float64(rate), size: size, count: count, start: start, buf: make([]byte, size)}
	for i := 8; i < len(w.buf); i++ {
		w.buf[i] = byte(i * 131)
	}
	return w
}

// done reports whether the workload has nothing more to send, ever.
func (w *workload) done() bool { return w.rate == 0 || w.count > 0 && w.sent >= w.count }

// due is how many messages should have been sent by now and were not.
func (w *workload) due(now time.Time) int {
	if w.done() || now.Before(w.start) {
		return 0
	}
	n := int(now.Sub(w.start).Seconds()*w.rate) + 1
	if w.count > 0 {
		n = min(n, w.count)
	}
	return max(0, n-w.sent)
}

// next is when the next message falls due; zero when none will.
func (w *workload) next() time.Time {
	if w.done() {
		return time.Time{}
	}
	return w.start.Add(time.Duration(float64(w.sent) / w.rate * float64(time.Second)))
}

// payload returns message number sent+1 (valid until the next call): the
// number, then a fixed pattern.
func (w *workload) payload() []byte {
	binary.BigEndian.PutUint64(w.buf, uint64(w.sent+1))
	return w.buf
}
