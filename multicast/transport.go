package multicast

import "net/netip"

// Packet is one received datagram. Buf is owned by whoever calls ReadBatch:
// the transport copies the datagram into Buf[:N] and never keeps Buf.
type Packet struct {
	Buf []byte         // receive buffer; at least the configured datagram size
	N   int            // bytes of Buf that hold the datagram
	Src netip.AddrPort // the sender's address
}

// Transport moves datagrams between this node and the group. The real one is
// a UDP multicast socket (Open); the simulator has an in-memory twin. A
// Transport is used by one reader goroutine (ReadBatch) and one writer (the
// node loop, WriteBatch) at once.
type Transport interface {
	// ReadBatch blocks until at least one datagram has arrived, fills
	// pkts[0:n] and returns n. After Close it returns net.ErrClosed.
	// A datagram longer than its Buf is truncated and reported with
	// N == len(Buf)+1 so that the caller can count and drop it.
	ReadBatch(pkts []Packet) (n int, err error)
	// WriteBatch multicasts every datagram to the group, in order.
	WriteBatch(datagrams [][]byte) error
	// LocalAddr is the address this node sends from (for logs and IDs).
	LocalAddr() netip.AddrPort
	// Close releases the transport and unblocks ReadBatch.
	Close() error
}
