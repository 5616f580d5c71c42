package multicast

import (
	"cmp"
	"errors"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
)

// batchIO moves up to max datagrams per system call with recvmmsg and
// sendmmsg (through x/net/ipv4's ReadBatch and WriteBatch). The message
// headers are allocated once and pointed at the caller's buffers per call.
type batchIO struct {
	pc    *ipv4.PacketConn
	group *net.UDPAddr
	rmsgs []ipv4.Message
	wmsgs []ipv4.Message
}

const defaultMaxBatch = 64

func newBatchIO(_ *net.UDPConn, pc *ipv4.PacketConn, group *net.UDPAddr, max int) batchIO {
	if max <= 0 {
		max = defaultMaxBatch
	}
	b := batchIO{pc: pc, group: group, rmsgs: make([]ipv4.Message, max), wmsgs: make([]ipv4.Message, max)}
	for i := range b.rmsgs {
		b.rmsgs[i].Buffers = make([][]byte, 1)
		b.wmsgs[i].Buffers = make([][]byte, 1)
		b.wmsgs[i].Addr = group
	}
	return b
}

func (b *batchIO) read(pkts []Packet) (int, error) {
	ms := b.rmsgs[:min(len(pkts), len(b.rmsgs))]
	for i := range ms {
		ms[i].Buffers[0] = pkts[i].Buf
	}
	n, err := b.pc.ReadBatch(ms, 0)
	if err != nil {
		return 0, err
	}
	for i := range n {
		p, m := &pkts[i], &ms[i]
		p.N = m.N
		if m.Flags&syscall.MSG_TRUNC != 0 {
			p.N = len(p.Buf) + 1
		}
		p.Src = netip.AddrPort{}
		if ua, ok := m.Addr.(*net.UDPAddr); ok {
			p.Src = ua.AddrPort()
		}
	}
	return n, nil
}

// write sends every datagram it can. A datagram the kernel refuses (a
// firewall's EPERM, say) is skipped rather than taking the rest of the
// batch with it; the first error is returned once the rest has gone.
func (b *batchIO) write(datagrams [][]byte) error {
	var first error
	for len(datagrams) > 0 {
		ms := b.wmsgs[:min(len(datagrams), len(b.wmsgs))]
		for i := range ms {
			ms[i].Buffers[0] = datagrams[i]
		}
		n, err := b.pc.WriteBatch(ms, 0)
		if err != nil {
			if isClosed(err) {
				return err
			}
			first = cmp.Or(first, err)
			n = max(n, 0) + 1 // sendmmsg stopped at datagram n (it says -1 for 0): skip it
		}
		datagrams = datagrams[min(n, len(datagrams)):]
	}
	return first
}

func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
