package node

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/multicast"
)

// pollConn is a Poller in memory: ReadBatch waits for a datagram or a
// Wake, TryReadBatch never waits, and both say how often they were called.
type pollConn struct {
	mu      sync.Mutex
	queue   [][]byte
	arrived chan struct{} // a datagram or a Wake
	closed  bool

	waits, tries atomic.Int64
}

func newPollConn() *pollConn { return &pollConn{arrived: make(chan struct{}, 1)} }

func (c *pollConn) signal() {
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

func (c *pollConn) put(d []byte) {
	c.mu.Lock()
	c.queue = append(c.queue, d)
	c.mu.Unlock()
	c.signal()
}

func (c *pollConn) take(pkts []multicast.Packet) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	n := 0
	for ; n < len(pkts) && len(c.queue) > 0; n++ {
		pkts[n].N = copy(pkts[n].Buf, c.queue[0])
		c.queue = c.queue[1:]
	}
	return n, nil
}

func (c *pollConn) ReadBatch(pkts []multicast.Packet) (int, error) {
	c.waits.Add(1)
	for {
		if n, err := c.take(pkts); n > 0 || err != nil {
			return n, err
		}
		<-c.arrived
		c.mu.Lock()
		empty := len(c.queue) == 0 && !c.closed
		c.mu.Unlock()
		if empty {
			return 0, nil // woken
		}
	}
}

func (c *pollConn) TryReadBatch(pkts []multicast.Packet) (int, error) {
	c.tries.Add(1)
	return c.take(pkts)
}

func (c *pollConn) Wake()                     { c.signal() }
func (c *pollConn) WriteBatch([][]byte) error { return nil }
func (c *pollConn) LocalAddr() netip.AddrPort { return netip.AddrPort{} }
func (c *pollConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.signal()
	return nil
}

// waitFor fails the test unless cond holds within 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// TestBusyPoll: an ordered send wakes the sleeping reader, which then
// polls, so that the record is taken without a wait; once the window has
// passed, the reader sleeps again until a datagram arrives; a send while
// it polls does not wake it.
func TestBusyPoll(t *testing.T) {
	if newSpinner(newPollConn(), 0) != nil {
		t.Fatal("a spinner without busy_poll")
	}
	if newSpinner(&recordingTransport{}, time.Second) != nil {
		t.Fatal("a spinner of a transport that is no Poller")
	}
	c := newPollConn()
	s := newSpinner(c, time.Second)
	rerr := make(chan error, 1)
	x := startReaderSpinning(c, 64, rerr, s)
	defer x.stop()
	waitFor(t, "the reader to sleep at first", s.parked.Load)

	s.sent()
	if s.wakeCount() != 1 {
		t.Fatalf("a send woke the sleeping reader %d times, want 1", s.wakeCount())
	}
	tries := c.tries.Load()
	waitFor(t, "the woken reader to poll", func() bool { return c.tries.Load() > tries+2 })
	c.put([]byte("the record"))
	b := <-x.full
	if b.n != 1 || string(b.pkts[0].Buf[:b.pkts[0].N]) != "the record" {
		t.Fatalf("read %d datagrams: %q", b.n, b.pkts[0].Buf[:b.pkts[0].N])
	}
	x.free <- b
	if s.polledCount() != 1 || c.waits.Load() != 1 {
		t.Fatalf("the record was polled %d times and the reader waited %d times; want it polled, after the one wait before the send", s.polledCount(), c.waits.Load())
	}

	waitFor(t, "the reader to sleep once the window has passed", s.parked.Load)
	c.put([]byte("later"))
	b = <-x.full
	if b.n != 1 || c.waits.Load() < 2 || s.polledCount() != 1 {
		t.Fatalf("after the window: %d datagrams, %d waits, %d polled; want 1 datagram, taken by a wait", b.n, c.waits.Load(), s.polledCount())
	}
	x.free <- b

	waitFor(t, "the reader to sleep again", s.parked.Load)
	s.sent()
	tries = c.tries.Load()
	waitFor(t, "the reader to poll again", func() bool { return c.tries.Load() > tries+2 })
	if s.sent(); s.wakeCount() != 2 {
		t.Fatalf("%d wakes, want 2: a send while the reader polls does not wake it", s.wakeCount())
	}
}

// TestBusyPollCredit: a node that keeps sending while nothing comes back
// stops polling once it has spent its credit, and sends then do not wake
// its reader, until sleeping has earned credit again.
func TestBusyPollCredit(t *testing.T) {
	c := newPollConn()
	s := newSpinner(c, 10*time.Millisecond)
	x := startReaderSpinning(c, 64, make(chan error, 1), s)
	defer x.stop()
	waitFor(t, "the reader to sleep at first", s.parked.Load)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(10 * time.Second); !s.broke.Load(); <-tick.C {
		if time.Now().After(end) {
			t.Fatal("a node sending every millisecond polled for 10 s: its credit never ran out")
		}
		s.sent()
	}
	waitFor(t, "the reader out of credit to sleep", s.parked.Load)
	wakes := s.wakeCount()
	if s.sent(); s.wakeCount() != wakes {
		t.Fatal("a send woke a reader out of credit")
	}
	c.put([]byte("after"))
	if b := <-x.full; b.n != 1 {
		t.Fatalf("read %d datagrams", b.n)
	}
}
