package multicast

import (
	"cmp"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// batchIO moves up to max datagrams per system call with recvmmsg and
// sendmmsg, both made as raw system calls of its own on the non-blocking
// socket (see send and recv); x/net/ipv4's ReadBatch and WriteBatch serve
// only when the socket has no raw connection or the group is not IPv4.
// The message headers are allocated once and pointed at the caller's
// buffers per call.
type batchIO struct {
	udp   *net.UDPConn // for the read deadline of wake
	pc    *ipv4.PacketConn
	group *net.UDPAddr
	rmsgs []ipv4.Message
	wmsgs []ipv4.Message // for WriteBatch, without a raw connection

	raw  syscall.RawConn
	name unix.RawSockaddrInet4 // the group
	hdrs []unix.Mmsghdr
	iovs []unix.Iovec

	rhdrs  []unix.Mmsghdr // recvmmsg's
	riovs  []unix.Iovec
	rnames []unix.RawSockaddrInet4 // the senders

	names []unix.RawSockaddrInet4 // each header's destination

	gso gsoState // runs of datagrams in one header (gso_linux.go)
}

func newBatchIO(udp *net.UDPConn, pc *ipv4.PacketConn, group *net.UDPAddr, max int) batchIO {
	if max <= 0 {
		max = DefaultMaxBatch
	}
	b := batchIO{udp: udp, pc: pc, group: group, rmsgs: make([]ipv4.Message, max), wmsgs: make([]ipv4.Message, max)}
	if ip4 := group.IP.To4(); udp != nil && ip4 != nil {
		if rc, err := udp.SyscallConn(); err == nil {
			b.raw, b.hdrs, b.iovs = rc, make([]unix.Mmsghdr, max), make([]unix.Iovec, gsoIovs)
			b.rhdrs, b.riovs, b.rnames = make([]unix.Mmsghdr, max), make([]unix.Iovec, max), make([]unix.RawSockaddrInet4, max)
			b.names = make([]unix.RawSockaddrInet4, max)
			b.gso = newGSO(rc, max)
			b.name = sockaddr(netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip4)), uint16(group.Port)))
		}
	}
	for i := range b.rmsgs {
		b.rmsgs[i].Buffers = make([][]byte, 1)
		b.wmsgs[i].Buffers = make([][]byte, 1)
		b.wmsgs[i].Addr = group
	}
	return b
}

// sockaddr is an IPv4 address and port as the system calls take it.
func sockaddr(a netip.AddrPort) unix.RawSockaddrInet4 {
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.Addr().As4()}
	port := (*[2]byte)(unsafe.Pointer(&sa.Port)) // network byte order in memory
	port[0], port[1] = byte(a.Port()>>8), byte(a.Port())
	return sa
}

// addrPort is sockaddr's inverse.
func addrPort(sa *unix.RawSockaddrInet4) netip.AddrPort {
	port := (*[2]byte)(unsafe.Pointer(&sa.Port))
	return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(port[0])<<8|uint16(port[1]))
}

// sendTo sends every datagram to every destination, in order for each,
// at the destination's port plus offset. Each sendmmsg gives every
// destination a run of consecutive datagrams (a header of its own each,
// or one header for the lot, see addRun) rather than one datagram in
// turn: a receiver then wakes once per run, as a multicast receiver does
// for a burst, where one datagram every len(dests) sends woke it about
// once per datagram. A destination the kernel refuses is skipped, as
// write skips a datagram; the first error is returned once the rest has
// gone.
func (b *batchIO) sendTo(datagrams [][]byte, dests []netip.AddrPort, offset uint16) error {
	if b.raw == nil {
		return b.sendToEach(datagrams, dests, offset)
	}
	var first error
	var f fill
	chunk := max(1, len(b.hdrs)/max(1, len(dests)))
	if b.gso.maxSeg > 0 {
		chunk = gsoMaxSegs // a run per destination
	}
	for lo := 0; lo < len(datagrams); lo += chunk {
		part := datagrams[lo:min(len(datagrams), lo+chunk)]
		for _, dst := range dests {
			if !dst.Addr().Is4() {
				continue
			}
			if err := b.put(&f, part, sockaddr(netip.AddrPortFrom(dst.Addr(), dst.Port()+offset)), &first); err != nil {
				return err
			}
		}
	}
	err := b.flushRuns(&f)
	runtime.KeepAlive(datagrams)
	return cmp.Or(first, err)
}

// sendToEach is sendTo without a raw connection: one datagram per call.
func (b *batchIO) sendToEach(datagrams [][]byte, dests []netip.AddrPort, offset uint16) error {
	var first error
	for _, d := range datagrams {
		for _, dst := range dests {
			ua := net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst.Addr(), dst.Port()+offset))
			if _, err := b.pc.WriteTo(d, nil, ua); err != nil {
				if isClosed(err) {
					return err
				}
				first = cmp.Or(first, err)
			}
		}
	}
	return first
}

func (b *batchIO) read(pkts []Packet) (int, error) {
	if b.raw != nil {
		n, err := b.recv(pkts, true)
		return woken(b.udp, n, err)
	}
	ms := b.rmsgs[:min(len(pkts), len(b.rmsgs))]
	for i := range ms {
		ms[i].Buffers[0] = pkts[i].Buf
	}
	n, err := b.pc.ReadBatch(ms, 0)
	if err != nil {
		return woken(b.udp, 0, err)
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
// batch with it (a run of them, see addRun, is skipped whole); the first
// error is returned once the rest has gone.
func (b *batchIO) write(datagrams [][]byte) error {
	if b.raw != nil {
		return b.send(datagrams)
	}
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

// send is write to the group as raw sendmmsg system calls, of runs of
// datagrams where the kernel cuts them (see addRun): the loop goroutine
// keeps its P through them. Through the runtime's syscall entry (x/net's
// WriteBatch), a sendmmsg longer than 20 µs, which a batch to a bridge of
// several hosts is, lets sysmon hand the P to another thread and back:
// context switches the sender paid for with every batch. The socket is
// non-blocking, so the call never waits; a full send buffer (EAGAIN)
// parks the goroutine in the poller as before.
func (b *batchIO) send(datagrams [][]byte) error {
	var first error
	var f fill
	if err := b.put(&f, datagrams, b.name, &first); err != nil {
		return err
	}
	err := b.flushRuns(&f)
	runtime.KeepAlive(datagrams)
	return cmp.Or(first, err)
}

// sendmmsg is one sendmmsg of headers [from, from+n), prepared by the
// caller, as a raw system call (see send).
func (b *batchIO) sendmmsg(from, n int) (int, error) {
	var sent int
	var errno syscall.Errno
	err := b.raw.Write(func(fd uintptr) bool {
		r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[from])), uintptr(n), 0, 0, 0)
		if e == unix.EAGAIN || e == unix.EINTR {
			return false // wait until writable
		}
		sent, errno = int(r), e
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return -1, errno // as WriteBatch says it: the first datagram failed
	}
	return sent, nil
}

// tryRead is read that returns 0 at once when nothing has arrived
// (Poller).
func (b *batchIO) tryRead(pkts []Packet) (int, error) {
	if b.raw == nil {
		return 0, ErrNoPoll
	}
	n, err := b.recv(pkts, false)
	return woken(b.udp, n, err) // a Wake's deadline ends polls too
}

// recv is read as one raw recvmmsg, for the reason send gives: the
// reader goroutine keeps its P, and an empty socket (EAGAIN) parks it in
// the poller as before, or with wait false returns 0.
func (b *batchIO) recv(pkts []Packet, wait bool) (int, error) {
	n := min(len(pkts), len(b.rhdrs))
	if n == 0 {
		return 0, nil
	}
	for i := range n {
		iov := &b.riovs[i]
		iov.Base = nil
		if buf := pkts[i].Buf; len(buf) > 0 {
			iov.Base = &buf[0]
		}
		iov.SetLen(len(pkts[i].Buf))
		h := &b.rhdrs[i]
		h.Hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&b.rnames[i])), Namelen: unix.SizeofSockaddrInet4, Iov: iov}
		h.Hdr.SetIovlen(1)
		h.Len = 0
	}
	var got int
	var errno syscall.Errno
	err := b.raw.Read(func(fd uintptr) bool {
		r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.rhdrs[0])), uintptr(n), 0, 0, 0)
		if e == unix.EAGAIN || e == unix.EINTR {
			return !wait // wait until readable, or return none
		}
		got, errno = int(r), e
		return true
	})
	runtime.KeepAlive(pkts)
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("recvmmsg", errno)
	}
	for i := range got {
		p, h := &pkts[i], &b.rhdrs[i]
		p.N = int(h.Len)
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			p.N = len(p.Buf) + 1
		}
		p.Src = netip.AddrPort{}
		if sa := &b.rnames[i]; h.Hdr.Namelen >= unix.SizeofSockaddrInet4 && sa.Family == unix.AF_INET {
			p.Src = addrPort(sa)
		}
	}
	return got, nil
}
