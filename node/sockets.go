package node

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/multicast"
)

// OpenSockets opens the group's data socket on its port and the repair
// socket on the next port (see Options.Control): multicast sockets, or
// with transport = "unicast" the unicast transport's (OpenUnicast).
func OpenSockets(cfg config.Config, log zerolog.Logger) (data, ctl multicast.Transport, err error) {
	if cfg.Transport == "unicast" {
		u, err := OpenUnicast(cfg, log)
		if err != nil {
			return nil, nil, err
		}
		return u, u.Repair(), nil
	}
	d, c, err := openMulticast(cfg, log)
	if err != nil {
		return nil, nil, err // not typed nils
	}
	return d, c, nil
}

// OpenUnicast opens the unicast transport's sockets on cfg.Listen, or on
// the interface's first IPv4 address and addr's port.
func OpenUnicast(cfg config.Config, log zerolog.Logger) (*multicast.Unicast, error) {
	listen, err := ListenAddr(cfg)
	if err != nil {
		return nil, err
	}
	return multicast.OpenUnicast(multicast.UnicastOptions{Listen: listen, RecvBuffer: cfg.RecvBuffer, SendBuffer: 4 << 20}, log)
}

// ListenAddr is the address a unicast node receives on: cfg.Listen, or
// the interface's first IPv4 address and addr's port.
func ListenAddr(cfg config.Config) (netip.AddrPort, error) {
	if cfg.Listen != "" {
		return netip.ParseAddrPort(cfg.Listen)
	}
	ifi, err := net.InterfaceByName(cfg.Iface)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("node: unicast: interface %q: %w", cfg.Iface, err)
	}
	addrs, _ := ifi.Addrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			return netip.AddrPortFrom(p.Addr(), cfg.GroupAddr().Port()), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("node: unicast: interface %s has no IPv4 address to listen on; set listen", cfg.Iface)
}

// OpenPath opens the multicast transport's unicast socket for the
// per-peer fallback (Options.Path) on the data socket's address: the
// interface's address and the group's port. A node that cannot open it
// runs without the fallback: the caller logs why.
func OpenPath(data multicast.Transport, log zerolog.Logger) (*multicast.Unicast, error) {
	return multicast.OpenPath(data.LocalAddr(), log)
}

func openMulticast(cfg config.Config, log zerolog.Logger) (data, ctl *multicast.Conn, err error) {
	o := multicast.SocketOptions{Group: cfg.GroupAddr(), Iface: cfg.Iface, TTL: cfg.TTL,
		Loopback: cfg.Loopback, RecvBuffer: cfg.RecvBuffer, SendBuffer: 4 << 20}
	if data, err = multicast.Open(o, log); err != nil {
		return nil, nil, err
	}
	// Repair traffic is small and rare: a modest buffer will do.
	o.Group = netip.AddrPortFrom(o.Group.Addr(), o.Group.Port()+1)
	o.RecvBuffer = min(o.RecvBuffer, 1<<20)
	if ctl, err = multicast.Open(o, log); err != nil {
		data.Close()
		return nil, nil, err
	}
	return data, ctl, nil
}
