//go:build !linux

package workload

import "time"

// pacer: the runtime's timers only, where there is no timerfd.
type pacer struct{}

func newPacer() *pacer { return nil }

func (*pacer) wait(time.Duration) bool { return false }

func (*pacer) close() {}
