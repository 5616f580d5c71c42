//go:build unix

package multicast

import (
	"net"
	"net/netip"
	"syscall"
)

// reuseAddr lets several sockets on one host bind the group's port, each
// receiving its own copy of every datagram (SO_REUSEPORT is needed for that
// on the BSDs; Linux gives multicast copies with SO_REUSEADDR alone).
func reuseAddr(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		if serr == nil {
			serr = setReusePort(int(fd))
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// recvBufferSize reads back SO_RCVBUF. Linux reports twice the usable size
// (it counts its bookkeeping), so halve it to compare with what was asked.
func recvBufferSize(c *net.UDPConn) (int, error) { return bufferSize(c, syscall.SO_RCVBUF) }

// sendBufferSize reads back SO_SNDBUF, halved as recvBufferSize's.
func sendBufferSize(c *net.UDPConn) (int, error) { return bufferSize(c, syscall.SO_SNDBUF) }

func bufferSize(c *net.UDPConn, opt int) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var gerr error
	err = raw.Control(func(fd uintptr) {
		n, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt)
	})
	if err != nil {
		return 0, err
	}
	return n / rcvbufFactor, gerr
}

func connectFD(fd uintptr, to netip.AddrPort) error {
	return syscall.Connect(int(fd), &syscall.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().As4()})
}
