package node

import "time"

// loopTimer is the loop's one timer: a channel that receives when the
// deadline set by Reset has passed (spurious receives are allowed; the
// loop re-checks the time).
type loopTimer interface {
	C() <-chan struct{}
	Reset(d time.Duration)
	Stop()
}

// goTimer is the portable loopTimer, on the Go runtime's timers. Those
// wake an idle process through epoll_wait, whose timeout counts whole
// milliseconds: a timer due in 300 µs fires after about a millisecond.
// That is fine for tests (and required under testing/synctest, whose
// virtual clock drives only runtime timers).
type goTimer struct {
	t *time.Timer
	c chan struct{}
}

func newGoTimer(d time.Duration) *goTimer {
	g := &goTimer{c: make(chan struct{}, 1)}
	g.t = time.AfterFunc(d, g.fire)
	return g
}

func (g *goTimer) fire() {
	select {
	case g.c <- struct{}{}:
	default:
	}
}

func (g *goTimer) C() <-chan struct{}    { return g.c }
func (g *goTimer) Reset(d time.Duration) { g.t.Reset(d) }
func (g *goTimer) Stop()                 { g.t.Stop() }
