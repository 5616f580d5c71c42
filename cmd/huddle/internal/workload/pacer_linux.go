package workload

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pacer waits for the traffic's next message on a timerfd, which the
// runtime's poller watches like a socket: it wakes within microseconds
// of the deadline, where the runtime's own timers round a wait up to the
// millisecond. Without it, traffic at 10 000 msg/s leaves in bursts of
// ten a millisecond apart.
type pacer struct {
	fd int
	f  *os.File
}

// newPacer returns a pacer, or nil where no timerfd can be had.
func newPacer() *pacer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	return &pacer{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

// wait sleeps for d (> 0); false if the timer failed.
func (p *pacer) wait(d time.Duration) bool {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, time.Microsecond)))}
	if unix.TimerfdSettime(p.fd, 0, &spec, nil) != nil {
		return false
	}
	var buf [8]byte
	_, err := p.f.Read(buf[:])
	return err == nil
}

func (p *pacer) close() { p.f.Close() }
