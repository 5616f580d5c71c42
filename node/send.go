package node

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/huddle-lan/huddle/internal/wire"
)

// ErrStopped is returned by Multicast when the node has stopped.
var ErrStopped = errors.New("node: stopped")

// MaxServiceName is the longest service name, in bytes.
const MaxServiceName = 64

// Reserved reports whether service is one the node's own protocols use
// (the election's and the lock's): their messages are not an
// application's to send.
func Reserved(service string) bool { return service == ElectionService || service == MutexService }

// A sendReq is one Multicast call handed to the loop. Its state decides
// the race between the loop sending it and the caller giving up.
type sendReq struct {
	service []byte
	payload []byte
	order   wire.Order
	dest    uint64
	state   atomic.Int32 // reqWaiting, then reqTaken (loop) or reqWithdrawn (caller)
	done    chan sendResult
}

const (
	reqWaiting int32 = iota
	reqTaken
	reqWithdrawn
)

type sendResult struct {
	seq uint64
	err error
}

// Multicast sends payload to the group from this node, reliably and in
// FIFO order with its other messages, and returns the message's sequence
// number. While the send window is full it blocks, until stability frees
// room or ctx ends; then it returns ctx's error and the message is not
// sent. Memory does not grow with the backlog: each blocked caller holds
// only its own message. The payload is copied before Multicast returns.
func (r *Node) Multicast(ctx context.Context, service, payload []byte, order wire.Order) (uint64, error) {
	return r.Send(ctx, service, payload, order, 0)
}

// Send is Multicast addressed to one member, dest, when dest is not 0:
// the others' nodes receive it (it is part of the sender's stream) but do
// not deliver it. Addressed messages are FIFO only (membership.ErrOrder).
func (r *Node) Send(ctx context.Context, service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	req := &sendReq{service: service, payload: payload, order: order, dest: dest, done: make(chan sendResult, 1)}
	select {
	case r.sendc <- req:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-r.stopped:
		return 0, ErrStopped
	}
	select {
	case res := <-req.done:
		return res.seq, res.err
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqWaiting, reqWithdrawn) {
			return 0, ctx.Err()
		}
		res := <-req.done // the loop took it first: report what happened
		return res.seq, res.err
	}
}

// takeSends takes the Multicast calls already waiting, without blocking.
func (r *Node) takeSends() {
	for {
		select {
		case req := <-r.sendc:
			r.pending = append(r.pending, req)
		default:
			return
		}
	}
}

// sendPending hands waiting Multicast calls to the core in arrival order,
// as far as the window allows. Calls withdrawn while waiting are dropped,
// so that callers giving up do not pile up behind a full window.
func (r *Node) sendPending() {
	r.pending = slices.DeleteFunc(r.pending, func(req *sendReq) bool { return req.state.Load() == reqWithdrawn })
	for len(r.pending) > 0 {
		req := r.pending[0]
		if !r.core.Sending() {
			return // no view yet, or a view change: the install wakes the loop
		}
		if !r.core.Fits(len(req.service), len(req.payload)) {
			if !r.sendBlocked {
				r.sendBlocked = true
				r.windowFull++
			}
			return
		}
		r.sendBlocked = false
		r.pending = r.pending[1:]
		// Take the call before sending it: a caller who withdrew first
		// must find its message unsent.
		if !req.state.CompareAndSwap(reqWaiting, reqTaken) {
			continue
		}
		seq, err := r.core.Multicast(req.service, req.payload, req.order, req.dest)
		req.done <- sendResult{seq, err}
	}
}

// failPending answers every waiting call once the loop has stopped.
func (r *Node) failPending(err error) {
	for _, req := range r.pending {
		if req.state.CompareAndSwap(reqWaiting, reqTaken) {
			req.done <- sendResult{0, err}
		}
	}
	r.pending = nil
}
