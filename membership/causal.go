package membership

import (
	"encoding/binary"
	"errors"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Causal order (docs/design.md, "Causal order"): a causal message is
// delivered once everything its sender had delivered or sent before it
// has been delivered, as Birman, Schiper and Stephenson's CBCAST does.
//
// Within a view every member passes the same messages of each source in
// the same order (the stream's), delivered or addressed to another
// member, so "how many of source j's messages this node has passed in
// this view" means the same everywhere. A causal message carries its
// sender's counts of every other member when it sent it: the message may
// be delivered at a member once that member's counts reach them (its
// sender's own earlier messages come first anyway: FIFO). The counts
// start at 0 with each view: the flush delivers all of a view's messages
// before the next one begins, so nothing of an older view is ever
// waited for.
//
// The header is small: it names only the members whose count changed
// since the sender's last causal message in the view, by their index in
// the view, with the count's growth, each a varint. Receivers add it to
// the sender's previous vector, which they rebuilt from its previous
// causal message (a source's messages reach the orderer in stream order).
//
// header = count, then count × (member index, growth), all uvarints,
// then the application's payload.

// causalState is the orderer's causal bookkeeping for one view.
type causalState struct {
	passed  map[uint64]uint64   // by source: its messages of this view passed here (given, or for another member)
	sent    []uint64            // by member index: the counts this node's last causal message carried
	last    map[uint64][]uint64 // by source: the vector of its last causal message, rebuilt
	waiting int                 // causal messages held for their causes
}

// errCausalHeader: a causal message whose header does not fit the view.
var errCausalHeader = errors.New("membership: malformed causal header")

// causalHeader appends this node's causal header to b: the counts that
// changed since its last causal message in the view. causalSent notes
// that the message went out.
func (o *orderer) causalHeader(b []byte) []byte {
	c := &o.causal
	if len(c.sent) != len(o.members) {
		c.sent = make([]uint64, len(o.members))
	}
	n := 0
	for i, x := range o.members {
		if x.ID != o.self && c.passed[x.ID] != c.sent[i] {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i, x := range o.members {
		if now := c.passed[x.ID]; x.ID != o.self && now != c.sent[i] {
			b = binary.AppendUvarint(b, uint64(i))
			b = binary.AppendUvarint(b, now-c.sent[i])
		}
	}
	return b
}

func (o *orderer) causalSent() {
	for i, x := range o.members {
		o.causal.sent[i] = o.causal.passed[x.ID]
	}
}

// readCausal rebuilds the vector of causal message d from its header and
// its source's previous one, and strips the header from its payload. A
// header that names a member twice or out of the view, or grows a count
// past what the source could have passed, is an error: the message is
// not delivered (it still counts as passed, so its source's later ones
// do not wait for it).
func (o *orderer) readCausal(d *Delivery) error {
	c := &o.causal
	p := d.Payload
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(o.members)) {
		return errCausalHeader
	}
	p = p[k:]
	prev := c.last[d.Source]
	v := make([]uint64, len(o.members))
	copy(v, prev)
	for range n {
		i, k := binary.Uvarint(p)
		// A count already grown is a member named twice: every growth is
		// at least 1.
		if k <= 0 || i >= uint64(len(o.members)) || v[i] != at(prev, i) {
			return errCausalHeader
		}
		p = p[k:]
		g, k := binary.Uvarint(p)
		// A count grows by at most what its source could have sent: a
		// source's stream holds fewer than 2^40 messages.
		if k <= 0 || g == 0 || g > 1<<40 || v[i] > 1<<40 {
			return errCausalHeader
		}
		p = p[k:]
		v[i] += g
	}
	if c.last == nil {
		c.last = map[uint64][]uint64{}
	}
	c.last[d.Source] = v
	d.causes, d.Payload = v, p
	return nil
}

// at returns s[i], or 0 past its end (a source with no causal message yet
// has no vector).
func at(s []uint64, i uint64) uint64 {
	if i < uint64(len(s)) {
		return s[i]
	}
	return 0
}

// ready reports whether d may be delivered as its order allows, once the
// messages before it in its source's stream are: a causal message waits
// for its causes, any other for nothing here (ordered ones wait for their
// record besides).
func (o *orderer) ready(d *Delivery) bool {
	if d.Order != wire.Causal || d.causes == nil {
		return true
	}
	for i, x := range o.members {
		if x.ID != d.Source && i < len(d.causes) && o.causal.passed[x.ID] < d.causes[i] {
			return false
		}
	}
	return true
}

// free reports whether d, at the head of its source's queue, may go up
// without waiting for a record.
func (o *orderer) free(d *Delivery) bool { return !ordered(d.Order) && o.ready(d) }

// pump delivers what has become deliverable: recorded messages, and
// causal ones whose causes arrived, with what waits behind them, until
// nothing moves. Sources are visited in ID order, so that every run of
// the simulator delivers alike.
func (o *orderer) pump(final bool) {
	for {
		before := o.given
		o.advance(final)
		if o.causal.waiting > 0 {
			for _, src := range o.heldSources() {
				if q := o.held[src]; len(q) > 0 && o.free(&q[0]) {
					o.drain(src, final)
				}
			}
		}
		if o.given == before {
			return
		}
	}
}

// heldSources returns the sources with messages waiting, in ID order.
func (o *orderer) heldSources() []uint64 { return sortedKeys(o.held) }

// drain delivers src's waiting messages from the head on while they need
// no record and their causes have been delivered.
func (o *orderer) drain(src uint64, final bool) {
	q := o.held[src]
	for len(q) > 0 && o.free(&q[0]) {
		if q[0].Order == wire.Causal {
			o.causal.waiting--
		}
		q[0].Final = final
		o.give(q[0])
		q[0] = Delivery{}
		q = q[1:]
	}
	o.setHeld(src, q)
}

// setHeld stores src's queue, or forgets it when empty.
func (o *orderer) setHeld(src uint64, q []Delivery) {
	if len(q) == 0 {
		delete(o.held, src)
		return
	}
	o.held[src] = q
}
