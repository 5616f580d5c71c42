//go:build unix && !linux

package multicast

import (
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
)

const rcvbufFactor = 1

func setReusePort(fd int) error {
	return syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEPORT, 1)
}

// setMulticastIF sends through ifi and leaves the source address to the
// kernel (see the Linux version for why Linux needs it given).
func setMulticastIF(_ *net.UDPConn, pc *ipv4.PacketConn, ifi *net.Interface, _ netip.Addr) error {
	return pc.SetMulticastInterface(ifi)
}
