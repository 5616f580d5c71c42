package node

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// ErrStopped is returned by Multicast when the node has stopped.
var ErrStopped = errors.New("node: stopped")

// MaxServiceName is the longest service name, in bytes.
const MaxServiceName = 64

// Reserved reports whether service is one the node's own protocols use
// (the election's, the lock's and the probe's): their messages are not an
// application's to send.
func Reserved(service string) bool {
	return service == ElectionService || service == MutexService || service == ProbeService || service == StateService
}

// A sendReq is one Multicast call handed to the loop: one message, or a
// batch sent in order. Its state decides the race between the loop
// sending it and the caller giving up.
type sendReq struct {
	service  []byte
	payloads [][]byte
	order    wire.Order
	dest     uint64
	state    atomic.Int32 // reqWaiting, then reqTaken (loop) or reqWithdrawn (caller)
	cancel   atomic.Bool  // taken, and the caller gave up: the rest of a batch is not sent
	done     chan sendResult

	sent  int    // payloads sent so far (the loop's)
	first uint64 // the first one's sequence number (the loop's)
}

const (
	reqWaiting int32 = iota
	reqTaken
	reqWithdrawn
)

type sendResult struct {
	first uint64
	n     int
	err   error
}

// A turn of the loop sends at most maxSendsPerTurn messages, or
// sendBytesPerTurn datagrams' worth of payload if that is more: a
// saturating sender must not starve the receive path (which reopens the
// window and carries the NACKs), yet with large datagrams a turn must
// still fill several of them. What is left waits for the next turn, which
// comes at once.
const (
	maxSendsPerTurn  = 32
	sendBytesPerTurn = 4 // datagrams
)

// Multicast sends payload to the group from this node, reliably and in
// FIFO order with its other messages, and returns the message's sequence
// number. While the send window is full it blocks, until stability frees
// room or ctx ends; then it returns ctx's error and the message is not
// sent. Memory does not grow with the backlog: each blocked caller holds
// only its own message. The payload is copied before Multicast returns.
func (n *Node) Multicast(ctx context.Context, service, payload []byte, order wire.Order) (uint64, error) {
	return n.Send(ctx, service, payload, order, 0)
}

// Send is Multicast addressed to one member, dest, when dest is not 0:
// the others' nodes receive it (it is part of the sender's stream) but do
// not deliver it. Addressed messages are FIFO only (membership.ErrOrder).
func (n *Node) Send(ctx context.Context, service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	first, _, err := n.send(ctx, &sendReq{service: service, payloads: [][]byte{payload}, order: order, dest: dest})
	return first, err
}

// MulticastBatch multicasts payloads in order, as Multicast does, so that
// the messages of one call share datagrams as far as they fit. It returns
// the first message's sequence number (the others follow it, one each)
// and how many were sent: all of them, or, when ctx ends while the
// window is full, those sent before, with ctx's error.
func (n *Node) MulticastBatch(ctx context.Context, service []byte, payloads [][]byte, order wire.Order) (first uint64, sent int, err error) {
	if len(payloads) == 0 {
		return 0, 0, nil
	}
	return n.send(ctx, &sendReq{service: service, payloads: payloads, order: order})
}

func (n *Node) send(ctx context.Context, req *sendReq) (uint64, int, error) {
	req.done = make(chan sendResult, 1)
	select {
	case n.sendc <- req:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-n.stopped:
		return 0, 0, ErrStopped
	}
	select {
	case res := <-req.done:
		return res.first, res.n, res.err
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqWaiting, reqWithdrawn) {
			return 0, 0, ctx.Err()
		}
		req.cancel.Store(true) // the loop answers at its next turn: what it sent
		res := <-req.done
		if res.err == nil && res.n < len(req.payloads) {
			res.err = ctx.Err()
		}
		return res.first, res.n, res.err
	}
}

// takeSends takes the Multicast calls already waiting, without blocking.
func (n *Node) takeSends() {
	for {
		select {
		case req := <-n.sendc:
			n.pending = append(n.pending, req)
		default:
			return
		}
	}
}

// sendPending hands waiting Multicast calls to the core in arrival order,
// as far as the window and the turn's budget allow. Calls withdrawn while
// waiting are dropped, so that callers giving up do not pile up behind a
// full window; a batch whose caller gave up is answered with what was sent.
func (n *Node) sendPending() {
	n.sendsDue = false
	n.pending = slices.DeleteFunc(n.pending, func(req *sendReq) bool {
		switch {
		case req.state.Load() == reqWithdrawn:
			return true
		case req.cancel.Load():
			req.done <- sendResult{req.first, req.sent, nil}
			return true
		}
		return false
	})
	budget := maxSendsPerTurn
	for len(n.pending) > 0 {
		req := n.pending[0]
		p := req.payloads[req.sent]
		switch {
		case budget <= 0:
			n.sendsDue = n.core.Sending() && n.core.Fits(len(req.service), len(p), req.order, req.dest)
			return
		case !n.core.Sending():
			return // no view yet, or a view change: the install wakes the loop
		case !n.core.Fits(len(req.service), len(p), req.order, req.dest):
			if !n.sendBlocked {
				n.sendBlocked = true
				n.windowFull++
			}
			return
		}
		n.sendBlocked = false
		// Take the call before sending it: a caller who withdrew first
		// must find its message unsent.
		if req.sent == 0 && !req.state.CompareAndSwap(reqWaiting, reqTaken) {
			n.pending = n.pending[1:]
			continue
		}
		if req.sent == 0 {
			budget = max(budget, sendBytesPerTurn*n.o.Config.DatagramSize/max(1, len(p)))
		}
		budget--
		seq, err := n.core.Multicast(req.service, p, req.order, req.dest)
		if err == nil {
			if req.order != wire.FIFO {
				n.noteSent(seq)
			}
			if n.spin != nil && (req.order == wire.Total || req.order == wire.Safe) {
				n.awaitRecord, n.awaitSeq = true, seq
			}
			if req.sent == 0 {
				req.first = seq
			}
			req.sent++
		}
		if err != nil || req.sent == len(req.payloads) {
			n.pending = n.pending[1:]
			req.done <- sendResult{req.first, req.sent, err}
		}
	}
}

// failPending answers every waiting call once the loop has stopped.
func (n *Node) failPending(err error) {
	for _, req := range n.pending {
		if req.state.CompareAndSwap(reqWaiting, reqTaken) || req.sent > 0 {
			req.done <- sendResult{req.first, req.sent, err}
		}
	}
	n.pending = nil
}

// noteSent remembers when own ordered message seq was sent, for
// Histograms.Delivery.
func (n *Node) noteSent(seq uint64) {
	if n.sentAt == nil {
		n.sentAt = make([]sentAt, sentRing)
	}
	n.sentAt[seq%sentRing] = sentAt{seq, time.Now()}
}

// noteDelivered measures an own ordered message's time from its send to
// its delivery here.
func (n *Node) noteDelivered(seq uint64) {
	if n.sentAt == nil {
		return
	}
	if e := &n.sentAt[seq%sentRing]; e.seq == seq && !e.at.IsZero() {
		n.hist.Delivery.Add(time.Since(e.at))
		*e = sentAt{}
	}
}
