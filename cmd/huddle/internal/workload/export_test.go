package workload

// NoPacer makes the traffic wait on the runtime's timers only: a timerfd
// waits in real time, which a test in virtual time (testing/synctest)
// never sees pass.
func NoPacer() { usePacer = false }
