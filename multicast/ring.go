package multicast

import "github.com/huddle-lan/huddle/internal/wire"

// ring holds the messages of one stream from sequence number base on, in a
// power-of-two array indexed by seq. It may hold seqs up to base+max-1
// (its reach), which bounds the memory a stream can take whatever the
// network does; the array starts small and doubles as messages arrive
// further out, so that a quiet stream costs little.
type ring struct {
	base  uint64 // lowest seq the ring can hold; everything below is gone
	max   uint64 // how far past base it may reach; a power of two
	slots []entry
	mask  uint64
	count int // slots in use
	bytes int // payload bytes held
}

// entry is one stored message. data owns its Service and Payload.
type entry struct {
	data wire.Data
	view wire.ViewID // the view its source sent it in
	have bool
}

const minRingSlots = 64

func newRing(capacity int, base uint64) ring {
	n := uint64(minRingSlots)
	for n < uint64(capacity) {
		n *= 2
	}
	first := min(n, minRingSlots)
	return ring{base: base, max: n, slots: make([]entry, first), mask: first - 1}
}

// fits reports whether seq is within the ring's reach.
func (r *ring) fits(seq uint64) bool { return seq >= r.base && seq-r.base < r.max }

// reach is the highest seq the ring may hold.
func (r *ring) reach() uint64 { return r.base + r.max - 1 }

// get returns the stored message seq, or nil.
func (r *ring) get(seq uint64) *entry {
	if seq < r.base || seq-r.base >= uint64(len(r.slots)) {
		return nil
	}
	e := &r.slots[seq&r.mask]
	if !e.have || e.data.Seq != seq {
		return nil
	}
	return e
}

// put stores d (which must own its bytes), sent in view v, and reports
// whether it fit.
func (r *ring) put(d wire.Data, v wire.ViewID) bool {
	if !r.fits(d.Seq) {
		return false
	}
	for d.Seq-r.base >= uint64(len(r.slots)) {
		r.grow()
	}
	e := &r.slots[d.Seq&r.mask]
	if e.have {
		return e.data.Seq == d.Seq
	}
	*e = entry{data: d, view: v, have: true}
	r.count++
	r.bytes += len(d.Payload)
	return true
}

// grow doubles the array, moving every entry to its slot in the new one.
func (r *ring) grow() {
	slots := make([]entry, 2*len(r.slots))
	mask := uint64(len(slots) - 1)
	for _, e := range r.slots {
		if e.have {
			slots[e.data.Seq&mask] = e
		}
	}
	r.slots, r.mask = slots, mask
}

// advance forgets every message below seq.
func (r *ring) advance(seq uint64) {
	if seq <= r.base {
		return
	}
	if seq-r.base >= uint64(len(r.slots)) {
		r.clear()
	} else {
		for s := r.base; s < seq; s++ {
			r.drop(&r.slots[s&r.mask])
		}
	}
	r.base = seq
}

func (r *ring) drop(e *entry) {
	if e.have {
		r.count--
		r.bytes -= len(e.data.Payload)
	}
	*e = entry{}
}

func (r *ring) clear() {
	for i := range r.slots {
		r.slots[i] = entry{}
	}
	r.count, r.bytes = 0, 0
}

// owned returns a copy of d whose Service and Payload live in one new
// allocation, so that d may alias a datagram buffer that is reused.
func owned(d *wire.Data) wire.Data {
	c := *d
	buf := make([]byte, len(d.Service)+len(d.Payload))
	n := copy(buf, d.Service)
	copy(buf[n:], d.Payload)
	c.Service = buf[:n:n]
	c.Payload = buf[n:]
	return c
}
