//go:build !linux

package lan

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// osReason says why this system cannot host a virtual LAN at all: a LAN is
// made of Linux network namespaces. The package builds here so that the
// programs using it do; Available and New fail with this reason.
func osReason() error {
	return fmt.Errorf("virtual LANs are made of Linux network namespaces, and this is %s", runtime.GOOS)
}

// childAttr has nothing to set: no child is started here (see osReason).
func childAttr(bool) *syscall.SysProcAttr { return nil }

func pidAlive(int) bool { return false }

func killPID(int) {}

// sigCont is nil: no process here is ever stopped by the lab.
var sigCont os.Signal

// sigStop is nil: no process here is ever stopped by the lab.
var sigStop os.Signal
