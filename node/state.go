package node

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// State transfer (docs/design.md, "State transfer"). A replicated service
// keeps state from its messages; a member whose state is not the group's
// (a joiner, a restarted node, the other side of a merge: View.Behind)
// takes it from the view's provider (View.Provider), as a snapshot taken
// exactly at the view's cut: after the last message of the view before,
// before the first of this one. Meanwhile it holds back the service's
// deliveries of this view, and hands them out after the snapshot: its
// first delivery is the first message of the view, nothing twice, nothing
// missed. The snapshot travels in pieces on the group's own reliable,
// sealed streams (StateService), as fast as the send window lets it. If
// the view changes first (the provider crashed, or another joined), the
// next view's provider sends a snapshot at that view's cut and the
// deliveries held back so far are dropped: that snapshot covers them.

// StateService is the group service state transfers travel on.
const StateService = "huddle.state"

var stateService = []byte(StateService)

// StateOptions configures state transfer.
type StateOptions struct {
	// Services are the replicated services of this node: their state
	// goes to members behind the group. Every member must replicate the
	// same ones. None: the node keeps no replicated state.
	Services []string
	// MaxSize bounds a snapshot, and the deliveries a member behind holds
	// back while it waits for one, in bytes (config state_max_size).
	MaxSize int64
}

// Bounds of the transfer.
const (
	// statePiece is the most snapshot bytes one piece carries: a
	// message the engine sends in fragments, small enough that pieces of
	// one snapshot interleave with the group's traffic.
	statePiece = 32 << 10
	// statePiecesPerStep is how many pieces a provider sends per step
	// while the window has room: the transfer takes the window's spare
	// room, not all of it.
	statePiecesPerStep = 4
	// maxHeldDeliveries bounds the deliveries a member behind holds back,
	// whatever their size.
	maxHeldDeliveries = 1 << 20
	// stateVersion is the first byte of a piece.
	stateVersion = 1
)

// The kinds of a state message.
const (
	pieceData  = 0 // [version, kind, service, size, hash, offset, bytes]
	pieceAbort = 1 // [version, kind, service, reason]
)

// StateEventKind says what a StateEvent reports.
type StateEventKind uint8

// State event kinds.
const (
	// StateWanted: this node provides the snapshot of Service to To, at
	// View's cut, which is now: the runtime takes the snapshot before it
	// hands out the service's next delivery, and gives it to ProvideState.
	StateWanted StateEventKind = iota + 1
	// StateInstalled: this node's state of Service is Data (restore it),
	// taken by From at View's cut; the service's deliveries of the view
	// follow.
	StateInstalled
	// StateCurrent: this node's state of Service became the group's
	// without a transfer: no member of View had the group's state, and it
	// is the view's provider.
	StateCurrent
	// StateSent: the snapshot this node provided in View went out to To.
	StateSent
	// StateFailed: a transfer to this node, or from it, failed (Reason);
	// a member behind stays behind and tries again at the next view.
	StateFailed
)

func (k StateEventKind) String() string {
	switch k {
	case StateWanted:
		return "wanted"
	case StateInstalled:
		return "installed"
	case StateCurrent:
		return "current"
	case StateSent:
		return "sent"
	case StateFailed:
		return "failed"
	}
	return fmt.Sprintf("state(%d)", uint8(k))
}

// StateEvent is a state transfer's event (Event.State).
type StateEvent struct {
	Kind    StateEventKind
	Service string
	View    wire.ViewID
	From    uint64   // the provider
	To      []uint64 // StateWanted, StateSent: the members that take it
	Data    []byte   // StateInstalled: the snapshot (the event's own)
	Bytes   int64
	Hash    [sha256.Size]byte // of the snapshot
	Took    time.Duration     // StateInstalled: from the view to the install; StateSent: from the snapshot to the last piece
	Held    int               // StateInstalled: the deliveries held back, which follow
	Reason  string            // StateFailed
}

// HashHex is the snapshot's hash as the log shows it: the first 16 bytes
// of its SHA-256, in hex.
func (e *StateEvent) HashHex() string { return fmt.Sprintf("%x", e.Hash[:16]) }

// StateStats counts state transfers.
type StateStats struct {
	Sent, Installed, Failed uint64
	BytesSent, BytesRecv    uint64
	Bad                     uint64 // state messages malformed, beyond the bounds, or not the view's provider's in the view
	Discarded               uint64 // deliveries of a replicated service dropped while behind and not waiting (a transfer failed)
}

// replica is one replicated service's part.
type replica struct {
	name     string
	current  bool
	waiting  bool      // for the provider's snapshot in the view
	since    time.Time // when it began to wait
	held     []membership.Delivery
	heldSize int64
	got      []byte    // the snapshot so far
	sum      hash.Hash // its SHA-256 so far: a piece at a time, never the whole on one turn
	size     int64
	hash     [sha256.Size]byte
}

// outgoing is a snapshot this node sends.
type outgoing struct {
	service string
	data    []byte
	hash    [sha256.Size]byte
	off     int
	to      []uint64
	at      time.Time
	abort   string // send an abort with this reason instead
}

// statePart is state transfer's part of a Core.
type statePart struct {
	opt      StateOptions
	replicas []*replica
	view     membership.View
	out      []*outgoing
	buf      []byte
	stats    StateStats
}

func newStatePart(o StateOptions) statePart {
	s := statePart{opt: o}
	if s.opt.MaxSize <= 0 {
		s.opt.MaxSize = 1 << 30
	}
	for _, name := range o.Services {
		s.replicas = append(s.replicas, &replica{name: name})
	}
	return s
}

func (s *statePart) replica(service string) *replica {
	for _, r := range s.replicas {
		if r.name == service {
			return r
		}
	}
	return nil
}

// setView starts the view's transfers: this node waits for the group's
// state if it is behind, or provides it to those behind.
func (c *Core) stateView(now time.Time, v membership.View) {
	s := &c.state
	if len(s.replicas) == 0 {
		return
	}
	s.view, s.out = v, nil
	behind := slices.Contains(v.Behind, c.self)
	provider := v.Provider()
	for _, r := range s.replicas {
		switch {
		case behind && provider == c.self && v.Primary:
			// Nobody here has the group's state (the group's first view,
			// or every member that had it restarted): this node's is. What
			// it held back of an earlier view, for a state that never came,
			// does not apply to it.
			s.stats.Discarded += uint64(len(r.held))
			r.held, r.heldSize, r.got, r.size, r.waiting = nil, 0, nil, 0, false
			if !r.current {
				r.current = true
				c.stateEvent(StateEvent{Kind: StateCurrent, Service: r.name, View: v.ID})
			}
		case behind && provider == c.self:
			// Outside the primary component with nobody that has the
			// group's state: it waits for a view that has it.
			r.current, r.waiting = false, true
			r.held, r.heldSize, r.got, r.size = nil, 0, nil, 0
		case behind:
			if !r.waiting {
				r.since = now
			}
			r.current, r.waiting = false, true
			r.held, r.heldSize, r.got, r.size = nil, 0, nil, 0
		}
	}
	c.stateSettled()
	to := needy(v, c.self)
	if provider != c.self || len(to) == 0 {
		return
	}
	for _, r := range s.replicas {
		if r.current {
			c.stateEvent(StateEvent{Kind: StateWanted, Service: r.name, View: v.ID, From: c.self, To: to})
		}
	}
}

// needy lists the members of v behind the group but self: those the
// provider sends the state to.
func needy(v membership.View, self uint64) []uint64 {
	var to []uint64
	for _, id := range v.Behind {
		if id != self {
			to = append(to, id)
		}
	}
	return to
}

// stateSettled tells membership when every replica is current.
func (c *Core) stateSettled() {
	for _, r := range c.state.replicas {
		if !r.current {
			return
		}
	}
	if c.membership.Behind() {
		c.membership.SetCurrent(c.state.view.ID)
	}
}

// stateRelease hands out what r held back.
func (c *Core) stateRelease(r *replica) {
	for _, d := range r.held {
		c.events = append(c.events, Event{Kind: MembershipEvent, Membership: membership.Event{Kind: membership.Delivered, Delivery: d}})
	}
	r.held, r.heldSize = nil, 0
}

// stateHold reports whether d, a delivery for the application, is held
// back (or dropped) because its service's state is not current here.
func (c *Core) stateHold(d *membership.Delivery) bool {
	if len(c.state.replicas) == 0 {
		return false // no replicated service: every application delivery's path
	}
	r := c.state.replica(string(d.Service))
	if r == nil || r.current {
		return false
	}
	if !r.waiting {
		c.state.stats.Discarded++
		return true
	}
	size := int64(len(d.Payload)) + 64
	if len(r.held) >= maxHeldDeliveries || r.heldSize+size > c.state.opt.MaxSize {
		c.stateFail(r, "the deliveries held back while waiting for the state exceed state_max_size")
		c.state.stats.Discarded++
		return true
	}
	h := *d
	h.Service, h.Payload = slices.Clone(d.Service), slices.Clone(d.Payload)
	r.held, r.heldSize = append(r.held, h), r.heldSize+size
	return true
}

// stateFail gives r's transfer up until the next view.
func (c *Core) stateFail(r *replica, reason string) {
	c.state.stats.Failed++
	c.stateEvent(StateEvent{Kind: StateFailed, Service: r.name, View: c.state.view.ID, From: c.state.view.Provider(), Reason: reason})
	r.waiting, r.held, r.heldSize, r.got, r.size = false, nil, 0, nil, 0
}

func (c *Core) stateEvent(e StateEvent) {
	c.events = append(c.events, Event{Kind: StateTransferEvent, State: e})
}

// ProvideState gives the snapshot of service this node provides in view
// (a StateWanted's), or the error that kept the runtime from taking it;
// it goes out in pieces as the window allows. A view that is over by now
// takes nothing: its successor's provider sends anew.
func (c *Core) ProvideState(now time.Time, service string, view wire.ViewID, data []byte, err error) {
	c.ProvideStateSum(now, service, view, data, sha256.Sum256(data), err)
}

// ProvideStateSum is ProvideState with the snapshot's SHA-256 taken
// already: off the node's loop, which a large snapshot's hash would hold
// up (100 MiB: about 80 ms on a 2-core machine, where the peers' suspect
// timeout runs).
func (c *Core) ProvideStateSum(now time.Time, service string, view wire.ViewID, data []byte, sum [sha256.Size]byte, err error) {
	c.lastInput = now
	c.route(now)
	s := &c.state
	if s.view.ID != view || s.replica(service) == nil || s.view.Provider() != c.self {
		c.protocolsStep()
		return
	}
	o := &outgoing{service: service, data: data, hash: sum, at: now, to: needy(s.view, c.self)}
	switch {
	case err != nil:
		o.abort = "the provider could not take its snapshot: " + err.Error()
	case int64(len(data)) > s.opt.MaxSize:
		o.abort = fmt.Sprintf("the snapshot of %d bytes exceeds the provider's state_max_size (%d)", len(data), s.opt.MaxSize)
	}
	s.out = append(s.out, o)
	c.protocolsStep()
}

// stateSend sends the next pieces of the snapshots this node provides, as
// far as the window takes them this step.
func (c *Core) stateSend(now time.Time) {
	s := &c.state
	for budget := statePiecesPerStep; len(s.out) > 0 && budget > 0; budget-- {
		o := s.out[0]
		b, n := c.statePieceOf(o)
		if _, err := c.membership.Multicast(stateService, b, wire.FIFO, 0); err != nil {
			if !errors.Is(err, membership.ErrBlocked) && !errors.Is(err, multicast.ErrWindowFull) && !errors.Is(err, membership.ErrNotInView) {
				s.out = s.out[1:] // cannot go: the next view's provider sends anew
			}
			return
		}
		o.off += n
		s.stats.BytesSent += uint64(n)
		if o.abort != "" || o.off >= len(o.data) {
			s.out = s.out[1:]
			if o.abort == "" {
				s.stats.Sent++
				c.stateEvent(StateEvent{Kind: StateSent, Service: o.service, View: s.view.ID, From: c.self, To: o.to,
					Bytes: int64(len(o.data)), Hash: o.hash, Took: now.Sub(o.at)})
			} else {
				s.stats.Failed++
				c.stateEvent(StateEvent{Kind: StateFailed, Service: o.service, View: s.view.ID, From: c.self, To: o.to, Reason: o.abort})
			}
		}
	}
}

// statePieceOf encodes o's next piece into the part's buffer; n is the
// snapshot bytes it carries.
func (c *Core) statePieceOf(o *outgoing) (b []byte, n int) {
	b = append(c.state.buf[:0], stateVersion)
	if o.abort != "" {
		b = append(b, pieceAbort)
		b = appendString(b, o.service)
		b = appendString(b, o.abort[:min(len(o.abort), 512)])
		c.state.buf = b
		return b, 0
	}
	n = min(statePiece, len(o.data)-o.off)
	b = append(b, pieceData)
	b = appendString(b, o.service)
	b = binary.AppendUvarint(b, uint64(len(o.data)))
	b = append(b, o.hash[:]...)
	b = binary.AppendUvarint(b, uint64(o.off))
	b = append(b, o.data[o.off:o.off+n]...)
	c.state.buf = b
	return b, n
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// statePieceIn takes a message of the state service: a piece of the
// snapshot this node waits for, from the view's provider, in this view.
// Anything else is dropped and counted.
func (c *Core) statePieceIn(now time.Time, d *membership.Delivery) {
	s := &c.state
	p, err := parsePiece(d.Payload)
	r := s.replica(p.service)
	switch {
	case d.Source == c.self:
		return // this node's own pieces come back
	case err != nil || r == nil || d.View != s.view.ID || d.Source != s.view.Provider():
		s.stats.Bad++
		return
	case !r.waiting:
		return // the provider's, for the others behind (pieces go to the whole group)
	case p.kind == pieceAbort:
		c.stateFail(r, "the provider gave up: "+p.reason)
		return
	case p.size > s.opt.MaxSize:
		c.stateFail(r, fmt.Sprintf("the snapshot of %d bytes exceeds state_max_size (%d)", p.size, s.opt.MaxSize))
		return
	case p.off != int64(len(r.got)) || p.off > 0 && (p.size != r.size || p.hash != r.hash) || p.off+int64(len(p.data)) > p.size:
		s.stats.Bad++
		c.stateFail(r, fmt.Sprintf("a piece of the snapshot out of place (the piece at byte %d of %d, %d received)", p.off, p.size, len(r.got)))
		return
	}
	if p.off == 0 {
		// The whole snapshot at once (state_max_size bounds it): a buffer
		// grown by appending copies it over and over.
		r.got, r.sum = make([]byte, 0, p.size), sha256.New()
	}
	r.size, r.hash = p.size, p.hash
	r.got = append(r.got, p.data...)
	r.sum.Write(p.data)
	s.stats.BytesRecv += uint64(len(p.data))
	if int64(len(r.got)) < r.size {
		return
	}
	if [sha256.Size]byte(r.sum.Sum(nil)) != r.hash {
		c.stateFail(r, "the snapshot does not match its hash")
		return
	}
	s.stats.Installed++
	c.stateEvent(StateEvent{Kind: StateInstalled, Service: r.name, View: s.view.ID, From: d.Source, Data: r.got,
		Bytes: r.size, Hash: r.hash, Took: now.Sub(r.since), Held: len(r.held)})
	r.got = nil
	r.current, r.waiting = true, false
	c.stateRelease(r)
	c.stateSettled()
}

// piece is a state message, parsed.
type piece struct {
	kind    byte
	service string
	size    int64
	hash    [sha256.Size]byte
	off     int64
	data    []byte
	reason  string
}

var errPiece = errors.New("node: malformed state message")

// parsePiece parses a state message; every length is checked against the
// bytes that remain.
func parsePiece(b []byte) (p piece, err error) {
	if len(b) < 2 || b[0] != stateVersion || b[1] > pieceAbort {
		return p, errPiece
	}
	p.kind, b = b[1], b[2:]
	if p.service, b, err = takeString(b, MaxServiceName); err != nil {
		return p, err
	}
	if p.kind == pieceAbort {
		p.reason, _, err = takeString(b, 512)
		return p, err
	}
	size, n := binary.Uvarint(b)
	if n <= 0 || size > 1<<62 || len(b[n:]) < sha256.Size {
		return p, errPiece
	}
	p.size, b = int64(size), b[n:]
	copy(p.hash[:], b)
	b = b[sha256.Size:]
	off, n := binary.Uvarint(b)
	if n <= 0 || off > 1<<62 {
		return p, errPiece
	}
	p.off, p.data = int64(off), b[n:]
	return p, nil
}

func takeString(b []byte, most int) (string, []byte, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(most) || uint64(len(b[n:])) < l {
		return "", nil, errPiece
	}
	return string(b[n : n+int(l)]), b[n+int(l):], nil
}

// StateStats returns the state transfer's counters.
func (c *Core) StateStats() StateStats { return c.state.stats }
