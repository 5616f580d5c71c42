package wire

// MaxUintsPayload is the most bytes AppendUints writes for n values: the
// array header and n unsigned ints of at most 9 bytes each.
func MaxUintsPayload(n int) int { return 1 + 9*n }

// AppendUints appends the msgpack array of vs (compact ints) to dst: the
// payload of the node's small protocols (election, mutex), which travel
// in data messages of their own services.
func (e *Encoder) AppendUints(dst []byte, vs ...uint64) []byte {
	e.buf.b = dst
	e.array(len(vs))
	e.uints(vs...)
	out := e.buf.b
	e.buf.b = nil
	return out
}

// DecodeUints parses data as a msgpack array of exactly len(dst) unsigned
// ints into dst. It trusts nothing: an error wraps ErrMalformed.
func (d *Decoder) DecodeUints(data []byte, dst []uint64) (err error) {
	if len(data) > MaxUintsPayload(len(dst)) {
		return d.fail("%d bytes for %d numbers (at most %d)", len(data), len(dst), MaxUintsPayload(len(dst)))
	}
	d.data = data
	d.r.Reset(data)
	d.dec.ResetReader(&d.r)
	defer func() { d.data = nil }()
	if _, err := d.arrayLen(len(dst)); err != nil {
		return err
	}
	for i := range dst {
		if dst[i], err = d.uint(); err != nil {
			return err
		}
	}
	if d.r.Len() != 0 {
		return d.fail("%d trailing bytes", d.r.Len())
	}
	return nil
}
