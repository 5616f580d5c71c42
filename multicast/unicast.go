package multicast

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/rs/zerolog"
	"golang.org/x/net/ipv4"
)

// UnicastOptions says how to open the unicast transport's sockets.
type UnicastOptions struct {
	Listen     netip.AddrPort // this node's IPv4 address and data port; repairs use the next port
	RecvBuffer int            // requested SO_RCVBUF of the data socket, bytes
	SendBuffer int            // requested SO_SNDBUF, bytes (0: the system's default)
	MaxBatch   int            // datagrams per system call (default DefaultMaxBatch)
	// NoSegmentation: as SocketOptions.NoSegmentation.
	NoSegmentation bool
}

// Unicast is the transport for networks that carry no multicast: every
// datagram the group would multicast goes to each destination in turn,
// batched into sendmmsg calls. It has two sockets, as the multicast
// transport does: the data socket on Listen's port, and the repair socket
// on the next port, which Repair reads. Both send from the data socket, so
// that every datagram of a node comes from one address, the one its peers
// send to (a repair goes to the destination's port + 1).
//
// The destinations are the node loop's to set (SetDestinations): the
// members of the view and the nodes it hears, by their data addresses.
// WriteBatch and SetDestinations are the loop's alone; ReadBatch belongs
// to one reader goroutine per socket.
type Unicast struct {
	data, repair *net.UDPConn
	dbatch       batchIO // the data socket's: reads, and every send
	rbatch       batchIO // the repair socket's: reads
	local        netip.AddrPort
	dests        []netip.AddrPort
	RcvBuf       int // receive buffer the kernel granted the data socket, bytes
	SndBuf       int // send buffer the kernel granted the data socket, bytes (0: unknown)
}

var _ Transport = (*Unicast)(nil)

// OpenUnicast binds the data socket to o.Listen and the repair socket to
// the next port. Unlike the multicast sockets they are bound without
// SO_REUSEADDR: a second node on the same address and port is an error
// here, not a silent split of the datagrams between the two.
func OpenUnicast(o UnicastOptions, log zerolog.Logger) (*Unicast, error) {
	a := o.Listen
	if !a.Addr().Is4() || a.Addr().IsMulticast() || a.Port() == 0 || a.Port() == 65535 {
		return nil, fmt.Errorf("multicast: unicast: %v is not an IPv4 unicast address with a port from 1 to 65534", a)
	}
	data, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(a))
	if err != nil {
		return nil, fmt.Errorf("multicast: unicast: bind %v: %w", a, classify(err))
	}
	ra := netip.AddrPortFrom(a.Addr(), a.Port()+1)
	repair, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ra))
	if err != nil {
		data.Close()
		return nil, fmt.Errorf("multicast: unicast: bind %v (the repair port, listen's + 1): %w", ra, classify(err))
	}
	u := &Unicast{data: data, repair: repair, local: a}
	u.dbatch = newBatchIO(data, ipv4.NewPacketConn(data), net.UDPAddrFromAddrPort(a), o.MaxBatch)
	u.rbatch = newBatchIO(repair, ipv4.NewPacketConn(repair), net.UDPAddrFromAddrPort(ra), o.MaxBatch)
	if o.NoSegmentation {
		u.dbatch.noRuns()
		u.rbatch.noRuns()
	}
	if o.SendBuffer > 0 {
		data.SetWriteBuffer(o.SendBuffer)
	}
	u.SndBuf, _ = sendBufferSize(data) // only informative: 0 when unknown
	if u.RcvBuf, err = setRecvBuffer(data, o.RecvBuffer, log); err != nil {
		u.Close()
		repair.Close()
		return nil, err
	}
	setRecvBuffer(repair, min(o.RecvBuffer, 1<<20), log)
	return u, nil
}

// OpenPath opens the multicast transport's unicast sockets, for the
// per-peer fallback: bound to addr (the interface's address and the
// group's port) and to the next port, with SO_REUSEADDR, as huddle ping's
// unicast socket is, so that a node's unicast address is the one its
// multicast comes from, and several nodes of one host can bind them (one
// of them receives). The first takes the path probes and the traffic a
// peer sends this node by unicast; the second (Repair) the path datagrams,
// which WriteToNext sends.
func OpenPath(addr netip.AddrPort, log zerolog.Logger) (*Unicast, error) {
	udp, err := ListenUnicast(addr)
	if err != nil {
		return nil, err
	}
	next := netip.AddrPortFrom(addr.Addr(), addr.Port()+1)
	req, err := ListenUnicast(next)
	if err != nil {
		udp.Close()
		return nil, err
	}
	u := &Unicast{data: udp, repair: req, local: addr}
	u.dbatch = newBatchIO(udp, ipv4.NewPacketConn(udp), net.UDPAddrFromAddrPort(addr), 0)
	u.rbatch = newBatchIO(req, ipv4.NewPacketConn(req), net.UDPAddrFromAddrPort(next), 16)
	u.RcvBuf, _ = setRecvBuffer(udp, 1<<20, log)
	return u, nil
}

// WriteToNext sends every datagram to each of dests at the port after
// theirs (the repair socket, or OpenPath's second).
func (u *Unicast) WriteToNext(datagrams [][]byte, dests []netip.AddrPort) error {
	return u.write(datagrams, dests, 1)
}

// SetDestinations replaces the addresses WriteBatch sends to (data
// ports). The transport keeps its own copy.
func (u *Unicast) SetDestinations(dests []netip.AddrPort) {
	u.dests = append(u.dests[:0], dests...)
}

// Destinations returns a copy of the addresses WriteBatch sends to.
func (u *Unicast) Destinations() []netip.AddrPort { return slices.Clone(u.dests) }

// WriteBatch implements Transport: every datagram to every destination.
func (u *Unicast) WriteBatch(datagrams [][]byte) error {
	return u.WriteTo(datagrams, u.dests)
}

// WriteTo sends every datagram to each of dests (data ports), in order.
func (u *Unicast) WriteTo(datagrams [][]byte, dests []netip.AddrPort) error {
	return u.write(datagrams, dests, 0)
}

func (u *Unicast) write(datagrams [][]byte, dests []netip.AddrPort, offset uint16) error {
	if len(datagrams) == 0 || len(dests) == 0 {
		return nil
	}
	if err := u.dbatch.sendTo(datagrams, dests, offset); err != nil {
		return fmt.Errorf("multicast: unicast send: %w", classify(err))
	}
	return nil
}

// ReadBatch implements Transport: the data socket.
func (u *Unicast) ReadBatch(pkts []Packet) (int, error) { return u.dbatch.read(pkts) }

// LocalAddr implements Transport: the data socket's address.
func (u *Unicast) LocalAddr() netip.AddrPort { return u.local }

// ReceiveBuffer is the receive buffer the kernel granted the data socket,
// in bytes (0: unknown).
func (u *Unicast) ReceiveBuffer() int { return u.RcvBuf }

// SendBuffer is the send buffer the kernel granted the data socket, in
// bytes (0: unknown). Every datagram waits in it once per destination.
func (u *Unicast) SendBuffer() int { return u.SndBuf }

// Close implements Transport: it closes the data socket (Repair's Close
// closes the repair socket).
func (u *Unicast) Close() error { return u.data.Close() }

// Repair returns the transport of the repair traffic: it reads the repair
// socket, and sends through the data socket to each destination's port
// + 1.
func (u *Unicast) Repair() Transport { return unicastRepair{u} }

type unicastRepair struct{ u *Unicast }

func (r unicastRepair) ReadBatch(pkts []Packet) (int, error) { return r.u.rbatch.read(pkts) }
func (r unicastRepair) WriteBatch(datagrams [][]byte) error {
	return r.u.write(datagrams, r.u.dests, 1)
}
func (r unicastRepair) LocalAddr() netip.AddrPort { return r.u.local }
func (r unicastRepair) Close() error              { return r.u.repair.Close() }
