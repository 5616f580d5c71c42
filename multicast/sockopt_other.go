//go:build !unix

package multicast

import (
	"errors"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
)

func reuseAddr(_, _ string, _ syscall.RawConn) error { return nil }

func recvBufferSize(*net.UDPConn) (int, error) { return 0, errors.ErrUnsupported }

func sendBufferSize(*net.UDPConn) (int, error) { return 0, errors.ErrUnsupported }

func connectFD(uintptr, netip.AddrPort) error { return nil }

// setMulticastIF sends through ifi.
func setMulticastIF(_ *net.UDPConn, pc *ipv4.PacketConn, ifi *net.Interface, _ netip.Addr) error {
	return pc.SetMulticastInterface(ifi)
}
