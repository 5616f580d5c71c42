// Package memnet is an in-memory multicast network for the real node
// runtime: groups in one process exchange their datagrams through it, with
// the faults of internal/netmodel (loss, duplication, reordering, delay,
// partitions, per-link loss), and never touch a socket. The Group API's
// huddle.Network, the in-process demo and the node's tests run on it.
//
// Each Net.Endpoint is a multicast.Transport, and every datagram written
// to one reaches every other open endpoint, each copy meeting its own
// fate, with delays from time.AfterFunc. Inside a testing/synctest bubble
// those delays are virtual, so a test of the full node runs in no real
// time:
//
//	n := memnet.New(netmodel.Options{Seed: 1, Loss: 0.05})
//	o := node.Options{Config: cfg, Transport: n.Endpoint(netmodel.Addr(1)), ...}
//
// Unlike the simulator (internal/sim), a Net run is not reproducible from
// its seed: goroutine scheduling decides the order of random draws.
package memnet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/multicast"
)

var _ multicast.Transport = (*endpoint)(nil)

// DefaultQueueLen bounds each endpoint's receive queue, in datagrams,
// unless SetQueueLen says otherwise.
const DefaultQueueLen = 1024

// Net is an in-memory multicast network of endpoints keyed by address.
// It is safe for concurrent use.
type Net struct {
	mu        sync.Mutex
	rng       *rand.Rand
	model     netmodel.Model[netip.AddrPort]
	queueLen  int
	endpoints []*endpoint // open endpoints, in opening order
	stats     netmodel.Stats
}

// New returns a network without endpoints, with opts's seed and faults.
func New(opts netmodel.Options) *Net {
	return &Net{
		rng:      netmodel.NewRand(opts.Seed),
		model:    netmodel.NewModel[netip.AddrPort](opts),
		queueLen: DefaultQueueLen,
	}
}

// SetQueueLen bounds each endpoint's receive queue to k datagrams from now
// on, like a socket receive buffer: datagrams that arrive at a full queue
// are dropped and counted as Overflow. k <= 0 means DefaultQueueLen.
func (n *Net) SetQueueLen(k int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if k <= 0 {
		k = DefaultQueueLen
	}
	n.queueLen = k
}

// Endpoint opens the transport of the node at addr. It panics if an open
// endpoint already has addr; after Close the address may be reopened (a
// restarted node).
func (n *Net) Endpoint(addr netip.AddrPort) multicast.Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.endpoints {
		if e.addr == addr {
			panic(fmt.Sprintf("memnet: endpoint %v already open", addr))
		}
	}
	e := &endpoint{net: n, addr: addr, ready: make(chan struct{}, 1), done: make(chan struct{})}
	n.endpoints = append(n.endpoints, e)
	return e
}

// Partition splits the network by address: datagrams between endpoints of
// different groups are dropped. Addresses not listed, including endpoints
// opened later, together form one more group. It replaces any earlier
// partition.
func (n *Net) Partition(groups ...[]netip.AddrPort) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.model.Partition(groups)
}

// Heal removes the partition and every SetLinkLoss override.
func (n *Net) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.model.Heal()
}

// SetLoss changes netmodel.Options.Loss from now on.
func (n *Net) SetLoss(p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.model.SetLoss(p)
}

// SetSenderLoss changes netmodel.Options.SenderLoss from now on.
func (n *Net) SetSenderLoss(p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.model.SetSenderLoss(p)
}

// SetLinkLoss sets the loss probability of the directed link from -> to,
// replacing netmodel.Options.Loss there; p = 1 blocks the link.
func (n *Net) SetLinkLoss(from, to netip.AddrPort, p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.model.SetLinkLoss(from, to, p)
}

// Stats returns the datagram counters so far.
func (n *Net) Stats() netmodel.Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// multicast carries one datagram from one endpoint to all others.
// Called with n.mu held.
func (n *Net) multicast(from *endpoint, data []byte) {
	n.stats.Sent++
	data = bytes.Clone(data) // the writer may reuse its buffer at once
	lost := n.model.SenderLost(n.rng)
	for _, to := range n.endpoints {
		if to == from {
			continue
		}
		n.stats.Copies++
		if lost {
			n.stats.Dropped.SenderLoss++
			continue
		}
		n.carry(from.addr, to, data)
	}
}

// carry schedules the copies of one datagram to one endpoint.
// Called with n.mu held.
func (n *Net) carry(src netip.AddrPort, to *endpoint, data []byte) {
	f := n.model.Decide(n.rng, src, to.addr)
	if f.Cause != netmodel.CauseNone {
		n.stats.Dropped.Add(f.Cause)
		return
	}
	n.stats.Reordered += uint64(f.Reordered)
	if f.Copies > 1 {
		n.stats.Duplicated++
	}
	for i := range f.Copies {
		time.AfterFunc(f.Delay[i], func() { n.deliver(to, src, data) })
	}
}

func (n *Net) deliver(to *endpoint, src netip.AddrPort, data []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case to.closed:
		n.stats.Dropped.Crashed++
	case len(to.queue) >= n.queueLen:
		n.stats.Dropped.Overflow++ // like a full socket receive buffer
	default:
		n.stats.Delivered++
		to.queue = append(to.queue, datagram{src, data})
		select {
		case to.ready <- struct{}{}:
		default: // the reader has a wake-up pending already
		}
	}
}

type datagram struct {
	src  netip.AddrPort
	data []byte // shared by all receivers; read-only
}

// endpoint is one node's transport on a Net. Its queue and closed flag are
// guarded by net.mu.
type endpoint struct {
	net    *Net
	addr   netip.AddrPort
	queue  []datagram
	closed bool
	ready  chan struct{} // holds a token while queue may be non-empty
	done   chan struct{} // closed by Close
}

// ReadBatch implements multicast.Transport.
func (e *endpoint) ReadBatch(pkts []multicast.Packet) (int, error) {
	for {
		n, err := e.take(pkts)
		if n > 0 || err != nil || len(pkts) == 0 {
			return n, err
		}
		select {
		case <-e.ready:
		case <-e.done:
		}
	}
}

// take moves queued datagrams into pkts, copying the bytes.
func (e *endpoint) take(pkts []multicast.Packet) (int, error) {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	if e.closed {
		return 0, net.ErrClosed
	}
	k := min(len(pkts), len(e.queue))
	for i, d := range e.queue[:k] {
		pkts[i].Src = d.src
		pkts[i].N = copy(pkts[i].Buf, d.data)
		if len(d.data) > len(pkts[i].Buf) {
			pkts[i].N = len(pkts[i].Buf) + 1 // truncated, as the interface says
		}
	}
	rest := copy(e.queue, e.queue[k:])
	clear(e.queue[rest:])
	e.queue = e.queue[:rest]
	return k, nil
}

// WriteBatch implements multicast.Transport.
func (e *endpoint) WriteBatch(datagrams [][]byte) error {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	if e.closed {
		return net.ErrClosed
	}
	for _, d := range datagrams {
		e.net.multicast(e, d)
	}
	return nil
}

// LocalAddr implements multicast.Transport.
func (e *endpoint) LocalAddr() netip.AddrPort { return e.addr }

// Close implements multicast.Transport. Datagrams still on their way to
// the endpoint are dropped on arrival. Closing twice is harmless.
func (e *endpoint) Close() error {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.queue = nil
	close(e.done)
	e.net.endpoints = slices.DeleteFunc(e.net.endpoints, func(x *endpoint) bool { return x == e })
	return nil
}
