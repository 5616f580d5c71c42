package node

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fdTimer is a loopTimer on a timerfd, which the runtime's netpoller
// watches like a socket: it wakes the loop within microseconds of its
// deadline, where the runtime's own timers round up to the millisecond.
// SRM's timers are a millisecond or two long on a LAN; rounded, they
// spread less (so suppress less) and recover later.
type fdTimer struct {
	fd int
	f  *os.File
	c  chan struct{}
}

func newPreciseTimer(d time.Duration) (loopTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	t := &fdTimer{fd: fd, f: os.NewFile(uintptr(fd), "timerfd"), c: make(chan struct{}, 1)}
	go t.run()
	t.Reset(d)
	return t, nil
}

// run turns expirations into channel receives until the timer is stopped.
func (t *fdTimer) run() {
	var buf [8]byte
	for {
		if _, err := t.f.Read(buf[:]); err != nil {
			return
		}
		select {
		case t.c <- struct{}{}:
		default:
		}
	}
}

func (t *fdTimer) C() <-chan struct{} { return t.c }

// Reset arms the timer d from now; d ≤ 0 fires at once.
func (t *fdTimer) Reset(d time.Duration) {
	d = max(d, time.Microsecond) // a zero value would disarm it
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	unix.TimerfdSettime(t.fd, 0, &spec, nil)
}

func (t *fdTimer) Stop() { t.f.Close() }
