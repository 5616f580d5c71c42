package multicast

import (
	"errors"
	"net"
	"os"
	"time"
)

// Poller is a Transport that can also be read without waiting: a node
// that busy-polls (the busy_poll setting) reads its group socket so for a
// while after each datagram it sends or receives, instead of sleeping
// until the kernel wakes it. Conn and Unicast are Pollers.
type Poller interface {
	// TryReadBatch is ReadBatch that returns 0 at once when nothing has
	// arrived, or ErrNoPoll where the socket cannot be read so.
	TryReadBatch(pkts []Packet) (n int, err error)
	// Wake makes the ReadBatch that waits now, or else the next one,
	// return 0 datagrams at once. It may be called from any goroutine.
	Wake()
}

// ErrNoPoll is TryReadBatch's error where the socket cannot be read
// without waiting (a platform without raw system calls): the caller waits
// in ReadBatch as before.
var ErrNoPoll = errors.New("multicast: this socket cannot be read without waiting")

// TryReadBatch implements Poller.
func (c *Conn) TryReadBatch(pkts []Packet) (int, error) { return c.batch.tryRead(pkts) }

// Wake implements Poller.
func (c *Conn) Wake() { wake(c.udp) }

// TryReadBatch implements Poller: the data socket.
func (u *Unicast) TryReadBatch(pkts []Packet) (int, error) { return u.dbatch.tryRead(pkts) }

// Wake implements Poller: the data socket.
func (u *Unicast) Wake() { wake(u.data) }

// wake ends the wait of a read on udp: a read deadline in the past, which
// woken clears.
func wake(udp *net.UDPConn) { udp.SetReadDeadline(time.Unix(1, 0)) }

// woken passes a read's result on, except that a read ended by wake
// returns no datagram and no error, and clears the deadline for the next.
func woken(udp *net.UDPConn, n int, err error) (int, error) {
	if udp != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		udp.SetReadDeadline(time.Time{})
		return 0, nil
	}
	return n, err
}
