//go:build !unix

package multicast

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
)

func reuseAddr(_, _ string, _ syscall.RawConn) error { return nil }

func recvBufferSize(*net.UDPConn) (int, error) { return 0, errors.ErrUnsupported }

func connectFD(uintptr, netip.AddrPort) error { return nil }
