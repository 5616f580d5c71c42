package node

import (
	"net/netip"

	"github.com/huddle-lan/huddle/internal/wire"
)

// PathNote is a path datagram a node received (wire.KindPath): the node
// From, at Addr, asks this one to send to it by unicast as well as by
// multicast (Unicast), or says multicast reaches it again.
type PathNote struct {
	From    uint64
	Inc     uint64
	Addr    netip.AddrPort
	Unicast bool
}

// maxPathNotes bounds the notes kept between two Readys: a turn reads at
// most a few batches of datagrams, and a node sends one note per peer per
// probe round.
const maxPathNotes = 1024

// pathNotes are the path notes received since the last Ready.
type pathNotes struct {
	in, spare []PathNote
	received  uint64 // path datagrams taken
	dropped   uint64 // over maxPathNotes in one turn
	buf       []byte // PathDatagram's
}

// pathIn takes the path datagram in c.env, authenticated and of this
// group, from src.
func (c *Core) pathIn(src netip.AddrPort) {
	p := &c.paths
	if c.env.From == c.self {
		return
	}
	if len(p.in) >= maxPathNotes {
		p.dropped++
		return
	}
	p.received++
	p.in = append(p.in, PathNote{From: c.env.From, Inc: c.env.Inc, Addr: src, Unicast: c.env.Path.Unicast})
}

// PathDatagram returns a path datagram (wire.KindPath) of this node,
// sealed with the group key when there is one: a fresh one per call, so
// that each receiver takes it once. It is valid until the next call.
func (c *Core) PathDatagram(unicast bool) []byte {
	v, _ := c.membership.ViewKey()
	env := wire.Envelope{Header: wire.Header{Group: c.group, From: c.self, Inc: c.inc, Kind: wire.KindPath, View: v}}
	env.Path.Unicast = unicast
	b, err := c.encodeOne(c.paths.buf[:0], &env)
	if err != nil {
		c.stats.EncodeErrors++
		return nil
	}
	c.paths.buf = b
	c.stats.DatagramsOut++
	c.stats.BytesOut += uint64(len(b))
	return b
}
