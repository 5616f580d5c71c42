package multicast

import (
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// TestSmoothDev: the estimator of the time repairs take follows TCP's
// (RFC 6298): the first sample sets the mean and half of it the
// deviation; steady samples shrink the deviation; a jump widens it.
func TestSmoothDev(t *testing.T) {
	m, d := smoothDev(0, 0, 8*time.Millisecond)
	if m != 8*time.Millisecond || d != 4*time.Millisecond {
		t.Fatalf("first sample: mean %v dev %v, want 8ms 4ms", m, d)
	}
	for range 50 {
		m, d = smoothDev(m, d, 8*time.Millisecond)
	}
	if m != 8*time.Millisecond || d > 100*time.Microsecond {
		t.Fatalf("steady samples: mean %v dev %v, want 8ms and about 0", m, d)
	}
	m2, d2 := smoothDev(m, d, 40*time.Millisecond)
	if m2 != m+4*time.Millisecond || d2 < 7*time.Millisecond {
		t.Fatalf("a jump to 40ms: mean %v dev %v, want %v and at least 7ms", m2, d2, m+4*time.Millisecond)
	}
}

// TestAnswerTimesMessagesAskedOnce: a message asked for once and repaired
// 10 ms later times the repairs; one asked for twice does not (Karn's
// rule), however long it took; and a retry then waits at least the time
// plus four deviations.
func TestAnswerTimesMessagesAskedOnce(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	e := New(Options{Self: 1, Inc: 1, Heartbeat: 50 * time.Millisecond, SuspectTimeout: time.Second}, t0)
	st := newStream(2, 1, 1, 64)
	st.high, st.opened = 2, 2
	st.gaps[1] = &gap{detected: t0, askedAt: t0}
	st.gaps[2] = &gap{detected: t0, askedAt: t0, again: true}
	e.receive(t0.Add(10*time.Millisecond), st, &wire.Data{Seq: 1, Payload: []byte("a")}, wire.ViewID{}, false)
	if st.answer != 10*time.Millisecond || st.answerV != 5*time.Millisecond {
		t.Fatalf("after a message asked once, repaired in 10ms: answer %v dev %v, want 10ms 5ms", st.answer, st.answerV)
	}
	e.receive(t0.Add(time.Second), st, &wire.Data{Seq: 2, Payload: []byte("b")}, wire.ViewID{}, false)
	if st.answer != 10*time.Millisecond || st.answerV != 5*time.Millisecond {
		t.Fatalf("a message asked twice was timed: answer %v dev %v, want 10ms 5ms still", st.answer, st.answerV)
	}
	g := &gap{detected: t0, backoff: 1}
	st.gaps[3] = g
	now := t0.Add(2 * time.Second)
	e.armRequest(now, st, 3, g)
	if wait := g.due.Sub(now); wait < 30*time.Millisecond {
		t.Fatalf("a retry waits %v, want at least answer + 4·dev = 30ms", wait)
	}
}
