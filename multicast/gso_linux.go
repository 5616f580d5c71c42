package multicast

import (
	"cmp"
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDP segmentation offload (UDP_SEGMENT, Linux 4.18 and later): one
// sendmmsg header carries a run of datagrams of one length, the last of
// the run possibly shorter, and the kernel cuts the run apart where it
// must: in the network card, or in software just before it. Every
// datagram still crosses the network as a UDP datagram of its own, so
// loss, repair and the receivers see nothing new (no IP fragments); what
// a run saves is the way through the sending stack per datagram, which
// is most of what a datagram costs its sender.
//
// Only the OUTPUT hook of the sender's firewall sees a run whole: a rule
// that matches on a packet's length sees the run's.
const (
	gsoMaxSegs  = 64    // datagrams per run (UDP_MAX_SEGMENTS of kernels before 6.9)
	gsoMaxBytes = 65507 // a run's bytes: the most a UDP datagram holds
	// gsoMinSeg: when the kernel refuses runs of datagrams this short, or
	// longer, runs stop for good: they gain nothing on such a path.
	gsoMinSeg = 512
	// gsoIovs is the iovecs of one sendmmsg: every datagram of every run
	// takes one.
	gsoIovs = 1024
)

// gsoState is what batchIO keeps for runs.
type gsoState struct {
	// maxSeg is the longest datagram sent in runs; 0 turns runs off. It
	// starts at gsoMaxBytes and comes down to below a length the kernel
	// refused in a run (EMSGSIZE or EINVAL: longer than the path's MTU
	// allows, where the kernel would have to fragment), and to 0 where it
	// cannot cut runs at all (EIO: an IPsec route, say). It is 0 from the
	// start on a kernel without UDP_SEGMENT (see newGSO).
	maxSeg int
	ctl    []byte     // one UDP_SEGMENT control message per header
	spans  [][][]byte // the datagrams of each header of the current call
	runs   uint64     // headers of more than one datagram put together
}

// noRuns turns runs off for good.
func (b *batchIO) noRuns() { b.gso.maxSeg = 0 }

// newGSO prepares runs for headers headers on the socket of rc, or leaves
// them off where the kernel has no UDP_SEGMENT: a kernel before 4.18
// ignores the control message of a level it does not know and would send
// a run as one datagram.
func newGSO(rc syscall.RawConn, headers int) gsoState {
	g := gsoState{ctl: make([]byte, headers*unix.CmsgSpace(2)), spans: make([][][]byte, headers)}
	var err error
	if cerr := rc.Control(func(fd uintptr) { _, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT) }); cerr == nil && err == nil {
		g.maxSeg = gsoMaxBytes
	}
	return g
}

// fill is a sendmmsg being put together: headers and iovecs taken.
type fill struct{ h, iov int }

// put adds the datagrams to f in runs to address to, sending what f holds
// whenever it is full. The first error of a header the kernel refused goes
// to first; net.ErrClosed is returned at once.
func (b *batchIO) put(f *fill, datagrams [][]byte, to unix.RawSockaddrInet4, first *error) error {
	for len(datagrams) > 0 {
		if f.h == len(b.hdrs) || f.iov == len(b.iovs) {
			if err := b.flushRuns(f); err != nil {
				if isClosed(err) {
					return err
				}
				*first = cmp.Or(*first, err)
			}
		}
		b.names[f.h] = to
		datagrams = datagrams[b.addRun(f, datagrams, &b.names[f.h]):]
	}
	return nil
}

// addRun adds a header for the first datagrams to name: a run of those
// of the first one's length (one shorter one may end it), within what a
// run and the free iovecs hold; one datagram when runs are off or it is
// too long for one. It returns how many it took. f must have a header
// and an iovec left.
func (b *batchIO) addRun(f *fill, datagrams [][]byte, name *unix.RawSockaddrInet4) int {
	n := b.runLen(datagrams, len(b.iovs)-f.iov)
	run := datagrams[:n]
	vs := b.iovs[f.iov : f.iov+n]
	for i, d := range run {
		vs[i].Base = nil
		if len(d) > 0 {
			vs[i].Base = &d[0]
		}
		vs[i].SetLen(len(d))
	}
	m := &b.hdrs[f.h].Hdr
	m.Name, m.Namelen = (*byte)(unsafe.Pointer(name)), unix.SizeofSockaddrInet4
	m.Iov = &vs[0]
	m.SetIovlen(n)
	m.Control = nil
	m.SetControllen(0)
	if n > 1 {
		space := unix.CmsgSpace(2)
		ctl := b.gso.ctl[f.h*space : (f.h+1)*space]
		clear(ctl)
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		c.Level, c.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
		c.SetLen(unix.CmsgLen(2))
		binary.NativeEndian.PutUint16(ctl[unix.CmsgLen(0):], uint16(len(run[0])))
		m.Control = &ctl[0]
		m.SetControllen(space)
		b.gso.runs++
	}
	b.gso.spans[f.h] = run
	f.h, f.iov = f.h+1, f.iov+n
	return n
}

// runLen is how many of the first datagrams one header takes (see addRun).
func (b *batchIO) runLen(datagrams [][]byte, iovs int) int {
	size := len(datagrams[0])
	if size == 0 || size > b.gso.maxSeg {
		return 1
	}
	n, bytes := 1, size
	for n < len(datagrams) && n < min(gsoMaxSegs, iovs) {
		l := len(datagrams[n])
		if l == 0 || l > size || bytes+l > gsoMaxBytes {
			break
		}
		n, bytes = n+1, bytes+l
		if l < size {
			break // a shorter one ends the run
		}
	}
	return n
}

// flushRuns sends the headers of f, all of them: a header the kernel
// refuses is skipped (its datagrams lost, as write skips a datagram),
// except a run refused for being one, which turns runs down or off
// (see gsoState.maxSeg) and goes again one datagram at a time. It
// returns the first error of a skipped header; net.ErrClosed at once.
func (b *batchIO) flushRuns(f *fill) error {
	var first error
	for done := 0; done < f.h; {
		k, err := b.sendmmsg(done, f.h-done)
		if err == nil {
			done += k
			continue
		}
		if isClosed(err) {
			return err
		}
		failed := done + max(k, 0)
		if run := b.gso.spans[failed]; len(run) > 1 && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EMSGSIZE) || errors.Is(err, unix.EIO)) {
			b.gso.maxSeg = len(run[0]) - 1
			if b.gso.maxSeg < gsoMinSeg || errors.Is(err, unix.EIO) {
				b.gso.maxSeg = 0
			}
			to := addrPort(&b.names[failed])
			if err := b.sendToEach(run, []netip.AddrPort{to}, 0); err != nil {
				if isClosed(err) {
					return err
				}
				first = cmp.Or(first, err)
			}
		} else {
			first = cmp.Or(first, err)
		}
		done = failed + 1
	}
	clear(b.gso.spans[:f.h]) // hold no caller's buffers
	f.h, f.iov = 0, 0
	return first
}
