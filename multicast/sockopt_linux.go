package multicast

import (
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
)

// Linux doubles the SO_RCVBUF it reports.
const rcvbufFactor = 2

// setReusePort is not needed on Linux: SO_REUSEADDR already lets every
// socket bound to a multicast port get its own copy.
func setReusePort(int) error { return nil }

// setMulticastIF sends through ifi with src as the source address. Naming
// only the interface (as ipv4.PacketConn does on Linux) leaves the kernel to
// pick a source of global scope on it; lo's 127.0.0.1 is host scope, so on a
// host whose only interface is lo datagrams went out from 0.0.0.0, and
// receivers saw Src 0.0.0.0 instead of LocalAddr. Giving the address makes
// Src equal the sender's LocalAddr on every interface.
func setMulticastIF(udp *net.UDPConn, _ *ipv4.PacketConn, ifi *net.Interface, src netip.Addr) error {
	raw, err := udp.SyscallConn()
	if err != nil {
		return err
	}
	mreq := &syscall.IPMreqn{Address: src.As4(), Ifindex: int32(ifi.Index)}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptIPMreqn(int(fd), syscall.IPPROTO_IP, syscall.IP_MULTICAST_IF, mreq)
	})
	if err != nil {
		return err
	}
	return serr
}
