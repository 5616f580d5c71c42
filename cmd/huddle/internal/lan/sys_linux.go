package lan

import (
	"errors"
	"os"
	"syscall"
)

// sigCont resumes a stopped process before it is asked to stop.
var sigCont os.Signal = syscall.SIGCONT

// osReason says why this system cannot host a virtual LAN at all: nil, as
// Linux has network namespaces.
func osReason() error { return nil }

// childAttr makes a child get SIGKILL (Pdeathsig) when the thread that
// started it dies, which in practice means this process; ownGroup also
// puts it in a process group of its own.
func childAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: ownGroup}
}

// pidAlive reports whether a process with this PID exists.
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// killPID sends SIGKILL to the process with this PID.
func killPID(pid int) { syscall.Kill(pid, syscall.SIGKILL) }

// sigStop freezes a node (Node.Pause).
var sigStop os.Signal = syscall.SIGSTOP
