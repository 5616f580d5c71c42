package multicast

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/net/ipv4"

	"github.com/huddle-lan/huddle/internal/logs"
)

// Socket errors. Open wraps one of these (with errors.Is) around a message
// that names the interface, the address and what to do.
var (
	ErrNoInterface     = errors.New("multicast: no such interface")
	ErrNotMulticast    = errors.New("multicast: interface cannot multicast")
	ErrNoRoute         = errors.New("multicast: no route for the group")
	ErrAddrInUse       = errors.New("multicast: address in use")
	ErrPermission      = errors.New("multicast: permission denied")
	ErrNotMulticastIP  = errors.New("multicast: not a multicast address")
	ErrInterfaceNoIPv4 = errors.New("multicast: interface has no IPv4 address")
)

// SocketOptions says how to open the group socket.
type SocketOptions struct {
	Group      netip.AddrPort // IPv4 multicast address and UDP port
	Iface      string         // interface to join and send on
	TTL        int            // IP TTL of sent datagrams (1 = link-local)
	Loopback   bool           // deliver this host's datagrams to its own sockets
	RecvBuffer int            // requested SO_RCVBUF, bytes
	SendBuffer int            // requested SO_SNDBUF, bytes (0: the system's default)
	MaxBatch   int            // datagrams per ReadBatch/WriteBatch system call (default DefaultMaxBatch)
	// NoSegmentation sends every datagram with a header of its own, as
	// before runs (UDP segmentation offload, Linux): for comparisons.
	NoSegmentation bool
}

// DefaultMaxBatch is the number of datagrams per system call when
// SocketOptions.MaxBatch is zero. It applies where the system reads and
// writes datagrams in batches (Linux); elsewhere each call moves one.
const DefaultMaxBatch = 64

// Conn is a UDP socket joined to one IPv4 multicast group on one interface.
// It implements Transport.
type Conn struct {
	udp    *net.UDPConn
	pc     *ipv4.PacketConn
	group  *net.UDPAddr
	local  netip.AddrPort
	batch  batchIO
	RcvBuf int // receive buffer the kernel granted, bytes
}

var _ Transport = (*Conn)(nil)

// Open creates the socket: bound to the group's port with SO_REUSEADDR (so
// several nodes share one host), joined to the group on the interface, with
// TTL, loopback and receive buffer set. It logs a warning when the kernel
// grants a smaller receive buffer than asked for.
func Open(o SocketOptions, log zerolog.Logger) (*Conn, error) {
	if !o.Group.Addr().Is4() || !o.Group.Addr().IsMulticast() {
		return nil, fmt.Errorf("%w: %v is not an IPv4 multicast address (224.0.0.0/4)", ErrNotMulticastIP, o.Group.Addr())
	}
	ifi, src, err := lookupInterface(o.Iface)
	if err != nil {
		return nil, err
	}
	if err := checkRoute(ifi, o.Group); err != nil {
		return nil, err
	}
	udp, err := listen(o.Group)
	if err != nil {
		return nil, err
	}
	c := &Conn{udp: udp, pc: ipv4.NewPacketConn(udp), group: net.UDPAddrFromAddrPort(o.Group),
		local: netip.AddrPortFrom(src, o.Group.Port())}
	if err := c.setup(ifi, o, log); err != nil {
		udp.Close()
		return nil, err
	}
	c.batch = newBatchIO(c.udp, c.pc, c.group, o.MaxBatch)
	if o.NoSegmentation {
		c.batch.noRuns()
	}
	return c, nil
}

func (c *Conn) setup(ifi *net.Interface, o SocketOptions, log zerolog.Logger) error {
	if err := c.pc.JoinGroup(ifi, c.group); err != nil {
		return fmt.Errorf("multicast: join %v on %s: %w", c.group.IP, ifi.Name, classify(err))
	}
	if err := setMulticastIF(c.udp, c.pc, ifi, c.local.Addr()); err != nil {
		return fmt.Errorf("multicast: send interface %s: %w", ifi.Name, classify(err))
	}
	if err := c.pc.SetMulticastTTL(o.TTL); err != nil {
		return fmt.Errorf("multicast: ttl %d: %w", o.TTL, classify(err))
	}
	if err := c.pc.SetMulticastLoopback(o.Loopback); err != nil {
		return fmt.Errorf("multicast: loopback: %w", classify(err))
	}
	// A send buffer of a few hundred datagrams makes a sender that
	// batches block on it (measured: most messages cost a context switch
	// at saturation); what the kernel grants is enough, so no warning.
	if o.SendBuffer > 0 {
		c.udp.SetWriteBuffer(o.SendBuffer)
	}
	return c.setRecvBuffer(o.RecvBuffer, log)
}

// setRecvBuffer asks for n bytes and warns when the kernel grants less,
// naming the sysctl that caps it: a short buffer drops datagrams under
// bursts, and SRM then has to repair what the host itself lost.
func (c *Conn) setRecvBuffer(n int, log zerolog.Logger) (err error) {
	c.RcvBuf, err = setRecvBuffer(c.udp, n, log)
	return err
}

// setRecvBuffer asks for an n-byte receive buffer on udp and returns what
// the kernel granted (0: unknown), warning when it is less.
func setRecvBuffer(udp *net.UDPConn, n int, log zerolog.Logger) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	if err := udp.SetReadBuffer(n); err != nil {
		return 0, fmt.Errorf("multicast: receive buffer %d bytes: %w", n, err)
	}
	got, err := recvBufferSize(udp)
	if err != nil {
		return 0, nil // the size is only informative
	}
	if got < n {
		log.Warn().Str(logs.EventKey, logs.SocketRcvbufCapped).Int(logs.RequestedKey, n).Int(logs.GrantedKey, got).
			Msgf("the kernel capped the receive buffer at %d bytes (asked for %d); raise net.core.rmem_max (sysctl -w net.core.rmem_max=%d) to avoid drops under bursts", got, n, n)
	}
	return got, nil
}

// ReceiveBuffer is the receive buffer the kernel granted, in bytes (0:
// unknown).
func (c *Conn) ReceiveBuffer() int { return c.RcvBuf }

// ReadBatch implements Transport.
func (c *Conn) ReadBatch(pkts []Packet) (int, error) { return c.batch.read(pkts) }

// WriteBatch implements Transport.
func (c *Conn) WriteBatch(datagrams [][]byte) error {
	if err := c.batch.write(datagrams); err != nil {
		return fmt.Errorf("multicast: send to %v: %w", c.group, classify(err))
	}
	return nil
}

// LocalAddr implements Transport: the interface's IPv4 address and the port.
func (c *Conn) LocalAddr() netip.AddrPort { return c.local }

// Close implements Transport.
func (c *Conn) Close() error { return c.udp.Close() }

// lookupInterface finds the named interface, checks it can carry multicast,
// and returns its first IPv4 address.
func lookupInterface(name string) (*net.Interface, netip.Addr, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("%w: %q (interfaces: %s)", ErrNoInterface, name, interfaceNames())
	}
	if ifi.Flags&net.FlagUp == 0 {
		return nil, netip.Addr{}, fmt.Errorf("%w: %s is down (ip link set %s up)", ErrNotMulticast, name, name)
	}
	if ifi.Flags&net.FlagMulticast == 0 {
		return nil, netip.Addr{}, fmt.Errorf("%w: %s has no MULTICAST flag (ip link set %s multicast on)", ErrNotMulticast, name, name)
	}
	addrs, _ := ifi.Addrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			return ifi, p.Addr(), nil
		}
	}
	return nil, netip.Addr{}, fmt.Errorf("%w: %s", ErrInterfaceNoIPv4, name)
}

func interfaceNames() string {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		return "none"
	}
	names := make([]string, len(ifs))
	for i, ifi := range ifs {
		names[i] = ifi.Name
	}
	return strings.Join(names, ", ")
}

// checkRoute connects a throwaway UDP socket to the group through the
// interface: connect does the kernel's route lookup without sending anything,
// so a send that cannot be routed fails here, with advice, rather than at the
// first send. On Linux it catches little: with IP_MULTICAST_IF set the kernel
// sends a group's datagrams out of the named interface with or without a
// route for 224.0.0.0/4 (it takes the group to be on link, whatever the
// routing tables and rules say), so the lookup fails only if the interface
// went down (ENETUNREACH) or vanished since lookupInterface looked. Other
// systems may want a route for the group; there it says so.
func checkRoute(ifi *net.Interface, group netip.AddrPort) error {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return fmt.Errorf("multicast: probe socket: %w", classify(err))
	}
	defer c.Close()
	if err := ipv4.NewPacketConn(c).SetMulticastInterface(ifi); err != nil {
		return fmt.Errorf("multicast: send interface %s: %w", ifi.Name, classify(err))
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var cerr error
	raw.Control(func(fd uintptr) { cerr = connectFD(fd, group) })
	if cerr != nil {
		return fmt.Errorf("%w %v via %s: %v (is %s up? does it need a route for 224.0.0.0/4?)", ErrNoRoute, group.Addr(), ifi.Name, cerr, ifi.Name)
	}
	return nil
}

// ListenUnicast binds a UDP socket to a unicast address of this host with
// SO_REUSEADDR, so that it can share the port of a group socket of Open:
// huddle ping sends and receives its unicast there, from the group's
// port. Open's socket is bound to the wildcard address (Go binds a socket
// for a multicast address so), and the kernel hands a unicast datagram to
// the socket bound most exactly to its destination: this one.
func ListenUnicast(addr netip.AddrPort) (*net.UDPConn, error) {
	return listen(addr)
}

// listen binds a UDP socket to the group address and port with SO_REUSEADDR.
// Binding to the group address (not 0.0.0.0) keeps out unicast datagrams and
// other groups' traffic on the same port.
func listen(group netip.AddrPort) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: reuseAddr}
	pc, err := lc.ListenPacket(context.Background(), "udp4", group.String())
	if err != nil {
		return nil, fmt.Errorf("multicast: bind %v: %w", group, classify(err))
	}
	return pc.(*net.UDPConn), nil
}

// classify wraps the system errors people meet into this package's errors,
// with a hint.
func classify(err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%w (another program holds the port without SO_REUSEADDR): %v", ErrAddrInUse, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%w (a firewall rule, or a port below 1024 without privileges): %v", ErrPermission, err)
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return fmt.Errorf("%w: %v", ErrNoRoute, err)
	case errors.Is(err, syscall.ENODEV):
		return fmt.Errorf("%w: %v", ErrNoInterface, err)
	}
	return err
}
