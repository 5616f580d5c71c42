package sim

import (
	"net/netip"
	"time"
)

// Machine is one node's protocol stack as the simulator sees it: a
// deterministic state machine fed with datagrams and time. The node's real
// runtime loop drives the very same value (node.Core) with a socket
// and the wall clock.
type Machine interface {
	// Receive hands the machine one datagram that arrived at now from src.
	// The machine must not keep data after it returns.
	Receive(now time.Time, src netip.AddrPort, data []byte)
	// Tick tells the machine that time has advanced to now.
	Tick(now time.Time)
	// NextDeadline is the earliest time the machine wants Tick called;
	// the zero Time means no timer is armed.
	NextDeadline() time.Time
	// TakeOutbox returns the datagrams the machine wants multicast, in
	// order, and forgets them. They need stay valid only until the next
	// call into the machine: the simulator copies what it keeps.
	TakeOutbox() [][]byte
}

// Addressed is a datagram for some nodes only, named by their addresses
// (netmodel.Addr).
type Addressed struct {
	Data []byte
	To   []netip.AddrPort
}

// Unicaster is a Machine whose datagrams go to chosen nodes, as a unicast
// transport sends them: after TakeOutbox the world calls TakeUnicast and
// sends each datagram to the live nodes at its addresses only, each copy
// meeting its own fate as a multicast's copies do. The datagrams and the
// addresses need stay valid only until the next call into the machine.
type Unicaster interface {
	TakeUnicast() []Addressed
}
