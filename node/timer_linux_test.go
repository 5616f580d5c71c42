package node

import (
	"testing"
	"time"
)

func TestPreciseTimer(t *testing.T) {
	tm, err := newPreciseTimer(time.Hour)
	if err != nil {
		t.Skipf("no timerfd here: %v", err)
	}
	defer tm.Stop()
	for _, d := range []time.Duration{300 * time.Microsecond, 0, 2 * time.Millisecond} {
		start := time.Now()
		tm.Reset(d)
		select {
		case <-tm.C():
			if el := time.Since(start); el < d {
				t.Fatalf("timer of %v fired after %v", d, el)
			}
		case <-time.After(time.Second):
			t.Fatalf("timer of %v did not fire", d)
		}
	}
	// Re-arming later cancels the earlier deadline.
	tm.Reset(time.Millisecond)
	tm.Reset(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a re-armed timer fired at its old deadline")
	case <-time.After(20 * time.Millisecond):
	}
}
