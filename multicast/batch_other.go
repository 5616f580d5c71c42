//go:build !linux

package multicast

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
)

// batchIO is the portable fallback: one datagram per system call.
type batchIO struct {
	udp   *net.UDPConn
	group *net.UDPAddr
}

func newBatchIO(udp *net.UDPConn, _ *ipv4.PacketConn, group *net.UDPAddr, _ int) batchIO {
	return batchIO{udp: udp, group: group}
}

// noRuns: there are no runs here.
func (b *batchIO) noRuns() {}

func (b *batchIO) read(pkts []Packet) (int, error) {
	if len(pkts) == 0 {
		return 0, nil
	}
	n, src, err := b.udp.ReadFromUDPAddrPort(pkts[0].Buf)
	if err != nil {
		return woken(b.udp, 0, err)
	}
	pkts[0].N, pkts[0].Src = n, src
	return 1, nil
}

// tryRead: here a socket is not read without waiting.
func (b *batchIO) tryRead([]Packet) (int, error) { return 0, ErrNoPoll }

func (b *batchIO) write(datagrams [][]byte) error {
	var first error
	for _, d := range datagrams {
		if _, err := b.udp.WriteToUDP(d, b.group); err != nil && first == nil {
			first = err // skip it; send the rest
		}
	}
	return first
}

// sendTo sends every datagram to every destination, at the destination's
// port plus offset; see the Linux version.
func (b *batchIO) sendTo(datagrams [][]byte, dests []netip.AddrPort, offset uint16) error {
	var first error
	for _, d := range datagrams {
		for _, dst := range dests {
			if _, err := b.udp.WriteToUDPAddrPort(d, netip.AddrPortFrom(dst.Addr(), dst.Port()+offset)); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}
