//go:build unix && !linux

package multicast

import "syscall"

const rcvbufFactor = 1

func setReusePort(fd int) error {
	return syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEPORT, 1)
}
