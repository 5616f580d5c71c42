package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/internal/wire"
)

// Node is what the commands need of a running node.
type Node interface {
	Status(ctx context.Context) (huddle.Status, error)
	Multicast(ctx context.Context, service, payload []byte, order wire.Order) (uint64, error)
	Elect(ctx context.Context) (huddle.ElectResult, error)
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	SetDrop(ctx context.Context, d huddle.Drop) (huddle.Drop, error)
	ReloadKeys(ctx context.Context) error
	Probe(ctx context.Context) (huddle.ProbeResult, error)
	Watch(services ...string) Watch
}

// Watch is what watch needs of a watcher (huddle.Watcher).
type Watch interface {
	C() <-chan huddle.WatchEvent
	Dropped() uint64
	Close()
}

var _ Node = groupNode{}

// Commands returns the commands a node serves, by name. A new command is
// one more Handler here.
func Commands(n Node) map[string]Handler {
	return map[string]Handler{
		"status": statusCommand(n),
		"send":   sendCommand(n),
		"elect":  electCommand(n),
		"lock":   lockCommand(n),
		"drop":   dropCommand(n),
		"key":    keyCommand(n),
		"watch":  watchCommand(n),
	}
}

// StatusArgs are the arguments of status: none for the node's own
// huddle.Status; Group for a huddle.ProbeResult of every member of its view,
// each asked over the group, waiting up to WaitMS (0: DefaultProbeWait)
// for their answers.
type StatusArgs struct {
	Group  bool  `json:"group,omitempty"`
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// DefaultProbeWait is how long status with group waits for the members'
// answers; a member of a healthy group answers within milliseconds.
const DefaultProbeWait = time.Second

// statusCommand returns the node's huddle.Status, or with group the
// members' answers to a probe.
func statusCommand(n Node) Handler {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		var a StatusArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, err
		}
		if a.WaitMS < 0 || a.WaitMS > MaxTimeout.Milliseconds() {
			return nil, errorf(ErrBadRequest, fmt.Sprintf("status: wait_ms %d is out of range (0 to %d)", a.WaitMS, MaxTimeout.Milliseconds()))
		}
		if a.Group {
			return probe(ctx, n, time.Duration(a.WaitMS)*time.Millisecond)
		}
		st, err := n.Status(ctx)
		if err != nil {
			return nil, nodeError(err, "reading the node's status", "its loop did not answer")
		}
		return st, nil
	}
}

// probe asks every member for its summary, waiting up to wait (0:
// DefaultProbeWait), and returns their answers.
func probe(ctx context.Context, n Node, wait time.Duration) (any, error) {
	if wait <= 0 {
		wait = DefaultProbeWait
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	res, err := n.Probe(pctx)
	switch {
	case errors.Is(err, huddle.ErrProbeBusy):
		return nil, errorf(ErrBusy, "status: 16 group probes of this node are waiting already; try again")
	case err != nil:
		return nil, nodeError(err, "probing the group", "its loop did not answer")
	}
	return res, nil
}

// WatchArgs are the arguments of watch: the services whose deliveries
// to stream besides the views, suspicions, leaders and lock events ("" is
// the application's default service).
type WatchArgs struct {
	Services []string `json:"services,omitempty"`
}

// MaxWatchServices bounds the services one watch follows.
const MaxWatchServices = 16

// watchCommand streams what the node sees (huddle.WatchEvent), one event
// per line, until the client hangs up; a watch.dropped event says how many
// were dropped before the next because the client read too slowly. Its
// last line, when the node stops, is a stopped error.
func watchCommand(n Node) Handler {
	return func(_ context.Context, args json.RawMessage) (any, error) {
		var a WatchArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, err
		}
		if len(a.Services) > MaxWatchServices {
			return nil, errorf(ErrBadRequest, fmt.Sprintf("watch: %d services (at most %d)", len(a.Services), MaxWatchServices))
		}
		for _, s := range a.Services {
			if len(s) > huddle.MaxServiceName {
				return nil, errorf(ErrBadRequest, fmt.Sprintf("watch: service name of %d bytes (at most %d)", len(s), huddle.MaxServiceName))
			}
		}
		return Stream(func(ctx context.Context, emit func(any) error) (any, error) {
			w := n.Watch(a.Services...)
			defer w.Close()
			var told uint64
			for {
				select {
				case <-ctx.Done():
					return WatchResult{Dropped: w.Dropped()}, nil
				case ev, ok := <-w.C():
					if !ok {
						return nil, errorf(ErrStopped, "the node stopped")
					}
					if d := w.Dropped(); d > told {
						if err := emit(huddle.WatchEvent{Time: time.Now(), Event: WatchDropped, Count: d - told}); err != nil {
							return nil, err
						}
						told = d
					}
					if err := emit(ev); err != nil {
						return nil, err
					}
				}
			}
		}), nil
	}
}

// WatchDropped is the event that counts the events a slow watcher missed.
const WatchDropped = "watch.dropped"

// WatchResult ends a watch: how many events it dropped in all.
type WatchResult struct {
	Dropped uint64 `json:"dropped"`
}

// SendArgs are the arguments of send: the message, as Text or as Payload
// (raw bytes, base64 in JSON), and its order.
type SendArgs struct {
	Text    string `json:"text,omitempty"`
	Payload []byte `json:"payload,omitempty"`
	Order   string `json:"order,omitempty"` // fifo, total, safe or causal; empty is DefaultOrder
	// Service is the group service to send on: "" (the default) is the
	// application's channel, the workload's; programs open others with
	// Group.Service. Not "election", "mutex" nor "probe", the node's own.
	Service string `json:"service,omitempty"`
}

// SendResult is send's result: the message's sequence number among this
// node's messages (the seq of its deliver events) and its order.
type SendResult struct {
	Seq   uint64 `json:"seq"`
	Order string `json:"order"`
}

// Orders are the names send accepts for an order.
var Orders = []string{"fifo", "total", "safe", "causal"}

// DefaultOrder is the order of a send without one.
const DefaultOrder = "fifo"

// sendCommand multicasts a message from the node, on the application's
// channel (no service, like the workload's messages) or on the service
// named. It waits while the
// send window is full or a view change holds sends, up to the request's
// timeout; a message that times out is not sent.
func sendCommand(n Node) Handler {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		var a SendArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, err
		}
		payload := []byte(a.Text)
		switch {
		case a.Text != "" && a.Payload != nil:
			return nil, errorf(ErrBadRequest, "send: give text or payload, not both")
		case a.Payload != nil:
			payload = a.Payload
		}
		if a.Order == "" {
			a.Order = DefaultOrder
		}
		order, ok := huddle.ParseOrder(a.Order)
		if !ok {
			return nil, errorf(ErrBadRequest, fmt.Sprintf("send: order %q is not fifo, total, safe or causal", a.Order))
		}
		switch {
		case len(a.Service) > huddle.MaxServiceName:
			return nil, errorf(ErrBadRequest, fmt.Sprintf("send: service name of %d bytes (at most %d)", len(a.Service), huddle.MaxServiceName))
		case huddle.Reserved(a.Service):
			return nil, errorf(ErrBadRequest, fmt.Sprintf("send: service %q is the node's own (its election, lock, probe and state transfer use election, mutex, probe and huddle.state)", a.Service))
		}
		var service []byte
		if a.Service != "" {
			service = []byte(a.Service)
		}
		st, err := n.Status(ctx)
		if err != nil {
			return nil, nodeError(err, "reading the node's status", "its loop did not answer; the message was not sent")
		}
		if st.State == huddle.StateJoining {
			return nil, errorf(ErrNotInView, fmt.Sprintf("node %d is not in a view yet: it is still joining group %q; try again in a moment", st.ID, st.Group))
		}
		seq, err := n.Multicast(ctx, service, payload, order)
		if err != nil {
			return nil, nodeError(err, "sending", "the send window stayed full, or a view change held sends; the message was not sent")
		}
		return SendResult{Seq: seq, Order: order.String()}, nil
	}
}

// electCommand starts an election from the node; it takes no arguments
// and returns huddle.ElectResult. The election itself runs on: follow it
// with status (leader, leader_round) or in the log (leader.changed).
func electCommand(n Node) Handler {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		if err := decodeArgs(args, &struct{}{}); err != nil {
			return nil, err
		}
		res, err := n.Elect(ctx)
		if err != nil {
			return nil, nodeError(err, "starting an election", "its loop did not answer")
		}
		return res, nil
	}
}

// LockArgs are the arguments of lock: how long to hold the lock.
type LockArgs struct {
	HoldMs int64 `json:"hold_ms,omitempty"`
}

// LockResult is lock's result: how long the node waited for the lock and
// held it.
type LockResult struct {
	WaitMs float64 `json:"wait_ms"`
	HeldMs float64 `json:"held_ms"`
	// Messages is the entry's lock messages across the group
	// (Status.LockMessages, read after the release).
	Messages int `json:"messages"`
}

// lockCommand acquires the group's lock on the node, holds it for hold_ms
// and releases it. A request that times out before the lock is granted is
// withdrawn; the hold ends early, and the lock is released, if the request
// ends meanwhile.
func lockCommand(n Node) Handler {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		var a LockArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, err
		}
		if a.HoldMs < 0 {
			return nil, errorf(ErrBadRequest, "lock: hold_ms is negative")
		}
		start := time.Now()
		if err := n.Lock(ctx); err != nil {
			if errors.Is(err, huddle.ErrLockBusy) {
				return nil, errorf(ErrFailed, "lock: this node already wants or holds the lock")
			}
			return nil, nodeError(err, "waiting for the lock", "another member held it, or the group had no quorum; the request was withdrawn")
		}
		got := time.Now()
		select {
		case <-time.After(time.Duration(a.HoldMs) * time.Millisecond):
		case <-ctx.Done():
		}
		if err := n.Unlock(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, huddle.ErrNotHeld) {
			return nil, nodeError(err, "releasing the lock", "its loop did not answer")
		}
		r := LockResult{WaitMs: float64(got.Sub(start).Microseconds()) / 1000, HeldMs: float64(time.Since(got).Microseconds()) / 1000}
		if st, err := n.Status(context.WithoutCancel(ctx)); err == nil {
			r.Messages = st.LockMessages
		}
		return r, nil
	}
}

// DropArgs are the arguments of drop: the node's new fault injection
// rule (see huddle.Drop). Without Rate the command changes nothing and
// reports the rule in force.
type DropArgs struct {
	Rate *float64 `json:"rate,omitempty"` // 0 to 1; 0 turns the drop off
	From []uint64 `json:"from,omitempty"` // only datagrams from these senders; empty: every sender
	Seed uint64   `json:"seed,omitempty"` // restarts the random choices; 0 keeps them going
	// Burst drops in bursts of this mean length at the same long-run
	// rate; 0 or 1: independent drops (see huddle.Drop).
	Burst float64 `json:"burst,omitempty"`
}

// DropResult is drop's result: the rule in force after the command, the
// one it replaced (when it changed the rule), and the datagrams dropped so
// far.
type DropResult struct {
	Drop          huddle.Drop  `json:"drop"`
	Before        *huddle.Drop `json:"before,omitempty"`
	InjectedDrops uint64       `json:"injected_drops"`
}

// maxDropFrom bounds drop's list of senders, as the drop.from setting.
const maxDropFrom = 1024

// dropCommand sets or reports the node's built-in fault injection.
func dropCommand(n Node) Handler {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		var a DropArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, err
		}
		if err := a.check(); err != nil {
			return nil, err
		}
		var res DropResult
		if a.Rate != nil {
			before, err := n.SetDrop(ctx, huddle.Drop{Rate: *a.Rate, From: a.From, Seed: a.Seed, Burst: a.Burst})
			if err != nil {
				return nil, nodeError(err, "setting the drop", "its loop did not answer")
			}
			res.Before = &before
		}
		st, err := n.Status(ctx)
		if err != nil {
			return nil, nodeError(err, "reading the node's status", "its loop did not answer")
		}
		if st.Drop != nil {
			res.Drop = *st.Drop
		}
		if v, ok := st.Counters.Get("injected_drops"); ok {
			res.InjectedDrops, _ = v.(uint64)
		}
		return res, nil
	}
}

func (a DropArgs) check() error {
	switch {
	case a.Rate == nil && (a.From != nil || a.Seed != 0 || a.Burst != 0):
		return errorf(ErrBadRequest, "drop: from, seed and burst go with a rate")
	case a.Rate != nil && !(*a.Rate >= 0 && *a.Rate <= 1):
		return errorf(ErrBadRequest, fmt.Sprintf("drop: rate %v is out of range (0 to 1)", *a.Rate))
	case a.Rate != nil && netmodel.BurstProblem(*a.Rate, a.Burst) != "":
		return errorf(ErrBadRequest, "drop: burst "+netmodel.BurstProblem(*a.Rate, a.Burst))
	case len(a.From) > maxDropFrom:
		return errorf(ErrBadRequest, fmt.Sprintf("drop: %d senders are too many (at most %d)", len(a.From), maxDropFrom))
	}
	for _, id := range a.From {
		if id < 1 || id > math.MaxInt64 {
			return errorf(ErrBadRequest, fmt.Sprintf("drop: sender ID %d is out of range (1 to 2^63-1)", id))
		}
	}
	return nil
}

// KeyArgs are the arguments of key: Reload reads the group keys again from
// the node's configuration (security.key_file, as a rollover changes it);
// without it the command reports the keys in use.
type KeyArgs struct {
	Reload bool `json:"reload,omitempty"`
}

// KeyResult is key's result: the fingerprints of the keys in use, the
// sealing one first (none: the node runs in the clear).
type KeyResult struct {
	Fingerprints []string `json:"fingerprints"`
}

// keyCommand reports, or reloads, the node's group keys.
func keyCommand(n Node) Handler {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		var a KeyArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, err
		}
		if a.Reload {
			if err := n.ReloadKeys(ctx); err != nil {
				return nil, nodeError(err, "reloading the keys", "the key file could not be used; the keys in use stay")
			}
		}
		st, err := n.Status(ctx)
		if err != nil {
			return nil, nodeError(err, "reading the node's status", "its loop did not answer")
		}
		res := KeyResult{Fingerprints: st.Keys}
		if res.Fingerprints == nil {
			res.Fingerprints = []string{}
		}
		return res, nil
	}
}

// decodeArgs decodes a command's arguments strictly into v; no arguments
// leave v as it is.
func decodeArgs(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return errorf(ErrBadRequest, "malformed arguments: "+err.Error())
	}
	return nil
}

// nodeError turns a node's error into a reply's; why explains a timeout.
func nodeError(err error, doing, why string) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(ErrTimeout, fmt.Sprintf("timed out %s: %s", doing, why))
	case errors.Is(err, huddle.ErrClosed), errors.Is(err, context.Canceled):
		return errorf(ErrStopped, "the node is stopping")
	case errors.Is(err, huddle.ErrNotInView):
		return errorf(ErrNotInView, fmt.Sprintf("%s: the node is not in a view (joining, or between views)", doing))
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return errorf(ErrFailed, fmt.Sprintf("%s: %v", doing, err))
}
