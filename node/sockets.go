package node

import (
	"net/netip"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/multicast"
)

// OpenSockets opens the group's data socket on its port and the repair
// socket on the next port (see Options.Control).
func OpenSockets(cfg config.Config, log zerolog.Logger) (data, ctl *multicast.Conn, err error) {
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
