package wire

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// Decoder reads envelopes from datagrams. It trusts nothing in the datagram:
// every length is checked against the bytes that remain before anything is
// sized by it, so a forged datagram can neither panic the decoder nor make it
// allocate more than the datagram's own size. Byte fields (payload, service)
// alias the datagram instead of being copied. A Decoder is not safe for
// concurrent use.
type Decoder struct {
	data []byte
	r    bytes.Reader
	dec  *msgpack.Decoder

	filter            bool
	group             uint32
	selfID, selfIncar uint64
}

// Filter makes Decode stop right after the header of a datagram that is
// not for this node, before the body costs anything: one of another group
// (ErrForeignGroup), or this node's own, looped back (ErrOwnEcho).
func (d *Decoder) Filter(group uint32, self, inc uint64) {
	d.filter, d.group, d.selfID, d.selfIncar = true, group, self, inc
}

// NewDecoder returns a Decoder.
func NewDecoder() *Decoder {
	d := &Decoder{}
	// bytes.Reader is an io.ByteScanner, so msgpack reads it directly
	// without a bufio layer; that is what lets us compute offsets into
	// data for zero-copy byte fields.
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}

// Decode parses data into env. On success, env's byte fields alias data, so
// data must stay unchanged while env is in use. On failure env is partly
// filled and must be ignored; the error wraps ErrMalformed, ErrNotHuddle or
// ErrUnknownKind.
func (d *Decoder) Decode(data []byte, env *Envelope) (err error) {
	d.data = data
	d.r.Reset(data)
	d.dec.ResetReader(&d.r)
	defer func() { d.data = nil }()
	n, err := d.countOf(1)
	if err != nil {
		return err
	}
	if err := d.header(&env.Header, n); err != nil {
		return err
	}
	if d.filter {
		switch {
		case env.Group != d.group:
			return ErrForeignGroup
		case env.From == d.selfID && env.Inc == d.selfIncar:
			return ErrOwnEcho
		}
	}
	want, err := bodyFields(env)
	if err != nil {
		return err
	}
	if n != HeaderFields+want {
		return d.fail("%v datagram has %d fields, want %d", env.Kind, n, HeaderFields+want)
	}
	if err := d.body(env); err != nil {
		return err
	}
	if d.r.Len() != 0 {
		return d.fail("%d trailing bytes", d.r.Len())
	}
	return nil
}

// header reads the header of a datagram of n fields. A huddle datagram of
// another wire version gives a *VersionError: every version begins a
// datagram with MagicVersion, the group and the sender's ID (the
// compatibility rule), so that versions can tell each other apart.
func (d *Decoder) header(h *Header, n int) error {
	if n < 3 {
		return d.fail("datagram of %d fields, want at least %d", n, HeaderFields)
	}
	mv, err := d.uint()
	if err != nil {
		return err
	}
	if mv != MagicVersion {
		if mv>>8 == MagicVersion>>8 && mv <= math.MaxUint16 {
			ve := &VersionError{Version: uint8(mv)}
			g, err1 := d.uintMax(math.MaxUint32)
			from, err2 := d.uint()
			if err1 == nil && err2 == nil {
				ve.Group, ve.From = uint32(g), from
				return ve
			}
		}
		return fmt.Errorf("%w (magic+version %#x)", ErrNotHuddle, mv)
	}
	if n < HeaderFields {
		return d.fail("datagram of %d fields, want at least %d", n, HeaderFields)
	}
	g, err := d.uintMax(math.MaxUint32)
	if err != nil {
		return err
	}
	h.Group = uint32(g)
	if h.From, err = d.uint(); err != nil {
		return err
	}
	if h.Inc, err = d.uint(); err != nil {
		return err
	}
	k, err := d.uintMax(math.MaxUint8)
	if err != nil {
		return err
	}
	h.Kind = Kind(k)
	return d.view(&h.View)
}

func (d *Decoder) body(env *Envelope) error {
	switch env.Kind {
	case KindData:
		return d.dataFields(&env.Data)
	case KindBatch:
		return d.batch(env)
	case KindNack:
		return d.nack(&env.Nack)
	case KindRepair:
		return d.repair(&env.Repair)
	case KindSession:
		return d.session(&env.Session)
	case KindJoin:
		return d.settings(&env.Join.Settings)
	case KindLeave:
		return d.leave(&env.Leave)
	case KindFlush:
		return d.flush(&env.Flush)
	case KindFlushOK:
		return d.flushOK(&env.FlushOK)
	case KindView:
		return d.commit(&env.Commit)
	case KindRefuse:
		return d.refuse(&env.Refuse)
	case KindChunk:
		return d.chunk(&env.Chunk)
	case KindPath:
		u, err := d.uintMax(1)
		env.Path.Unicast = u == 1
		return err
	case KindFlushEnd:
		return d.flushEnd(&env.FlushEnd)
	case KindProof:
		return d.proof(&env.Proof)
	}
	return fmt.Errorf("%w: %v", ErrUnknownKind, env.Kind)
}

func (d *Decoder) dataFields(m *Data) (err error) {
	if m.Seq, err = d.seq(); err != nil {
		return err
	}
	o, err := d.uintMax(uint64(Causal))
	if err != nil {
		return err
	}
	m.Order = Order(o)
	if m.Dest, err = d.uint(); err != nil {
		return err
	}
	if m.Service, err = d.bytes(); err != nil {
		return err
	}
	fi, err := d.uintMax(math.MaxUint32)
	if err != nil {
		return err
	}
	fc, err := d.uintMax(math.MaxUint32)
	if err != nil {
		return err
	}
	if fc > 1 && fi >= fc {
		return d.fail("fragment %d of %d", fi, fc)
	}
	m.FragIndex, m.FragCount = uint32(fi), uint32(fc)
	m.Payload, err = d.bytes()
	return err
}

// Smallest encodings, which bound how many elements a datagram can hold:
// a data message is an array header, five one-byte ints, a nil service
// and a two-byte empty payload; a peer state is an array header and five one-byte ints.
const (
	minDataBytes      = 1 + 5 + 1 + 2
	minPeerStateBytes = 1 + peerStateFields
	minRangeBytes     = 2
)

func (d *Decoder) batch(env *Envelope) error {
	n, err := d.countOf(minDataBytes)
	if err != nil {
		return err
	}
	env.Batch = grow(env.Batch, n)
	for i := range env.Batch {
		if _, err := d.arrayLen(dataFields); err != nil {
			return err
		}
		if err := d.dataFields(&env.Batch[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) nack(m *Nack) (err error) {
	if m.Source, err = d.uint(); err != nil {
		return err
	}
	if m.SourceInc, err = d.uint(); err != nil {
		return err
	}
	if m.Attempt, err = d.uintMax(MaxAttempt); err != nil {
		return err
	}
	n, err := d.countOf(1)
	if err != nil {
		return err
	}
	if n%2 != 0 {
		return d.fail("nack has %d range bounds, want an even number", n)
	}
	m.Ranges = grow(m.Ranges, n/2)
	for i := range m.Ranges {
		r := &m.Ranges[i]
		if r.First, err = d.seq(); err != nil {
			return err
		}
		if r.Last, err = d.seq(); err != nil {
			return err
		}
		if r.Last < r.First {
			return d.fail("nack range %d-%d is reversed", r.First, r.Last)
		}
	}
	return nil
}

func (d *Decoder) repair(m *Repair) (err error) {
	if m.Source, err = d.uint(); err != nil {
		return err
	}
	if m.SourceInc, err = d.uint(); err != nil {
		return err
	}
	if err = d.view(&m.View); err != nil {
		return err
	}
	return d.dataFields(&m.Data)
}

func (d *Decoder) session(m *Session) (err error) {
	if m.Sent, err = d.int(); err != nil {
		return err
	}
	if m.Seq, err = d.seq(); err != nil {
		return err
	}
	if m.Low, err = d.seq(); err != nil {
		return err
	}
	n, err := d.countOf(minPeerStateBytes)
	if err != nil {
		return err
	}
	m.Peers = grow(m.Peers, n)
	for i := range m.Peers {
		if err := d.peerState(&m.Peers[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) peerState(p *PeerState) (err error) {
	if _, err = d.arrayLen(peerStateFields); err != nil {
		return err
	}
	if p.ID, err = d.uint(); err != nil {
		return err
	}
	if p.Inc, err = d.uint(); err != nil {
		return err
	}
	if p.Seq, err = d.seq(); err != nil {
		return err
	}
	if p.Echo, err = d.int(); err != nil {
		return err
	}
	p.Held, err = d.int()
	return err
}

func (d *Decoder) settings(ss *[]Setting) error {
	n, err := d.countOf(minSettingBytes)
	if err != nil {
		return err
	}
	*ss = grow(*ss, n)
	for i := range *ss {
		s := &(*ss)[i]
		if _, err := d.arrayLen(settingFields); err != nil {
			return err
		}
		if s.Name, err = d.bytes(); err != nil {
			return err
		}
		if s.Value, err = d.bytes(); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) leave(m *Leave) (err error) {
	if m.Member, err = d.uint(); err != nil {
		return err
	}
	if m.MemberInc, err = d.uint(); err != nil {
		return err
	}
	r, err := d.uintMax(LeaveLagging)
	m.Reason = uint8(r)
	return err
}

func (d *Decoder) flush(m *Flush) (err error) {
	if m.Epoch, err = d.uint(); err != nil {
		return err
	}
	if m.Attempt, err = d.uint(); err != nil {
		return err
	}
	if m.Phase, err = d.phase(); err != nil {
		return err
	}
	if err = d.members(&m.Members); err != nil {
		return err
	}
	if err = d.viewCuts(&m.Cuts); err != nil {
		return err
	}
	m.Primary, err = d.seq()
	return err
}

func (d *Decoder) flushEnd(m *FlushEnd) (err error) {
	if m.Epoch, err = d.uint(); err != nil {
		return err
	}
	m.Attempt, err = d.uint()
	return err
}

func (d *Decoder) proof(m *Proof) (err error) {
	if m.Target, err = d.uint(); err != nil {
		return err
	}
	if m.TargetInc, err = d.uint(); err != nil {
		return err
	}
	if m.Sent, err = d.int(); err != nil {
		return err
	}
	f, err := d.uintMax(uint64(proofFlags))
	m.Flags = uint8(f)
	return err
}

func (d *Decoder) flushOK(m *FlushOK) (err error) {
	if m.Epoch, err = d.uint(); err != nil {
		return err
	}
	if m.Attempt, err = d.uint(); err != nil {
		return err
	}
	if m.Initiator, err = d.uint(); err != nil {
		return err
	}
	if m.Phase, err = d.phase(); err != nil {
		return err
	}
	if err = d.view(&m.Prior); err != nil {
		return err
	}
	if m.PriorInc, err = d.uint(); err != nil {
		return err
	}
	h, err := d.uintMax(math.MaxUint32)
	if err != nil {
		return err
	}
	m.Settings = uint32(h)
	if m.Sent, err = d.seq(); err != nil {
		return err
	}
	if err = d.cuts(&m.Has); err != nil {
		return err
	}
	return d.known(&m.Known)
}

func (d *Decoder) known(k *Known) error {
	if _, err := d.arrayLen(3); err != nil {
		return err
	}
	if err := d.primaryView(&k.Last); err != nil {
		return err
	}
	n, err := d.countOf(minPrimaryBytes)
	if err != nil {
		return err
	}
	if n > MaxPrimaryAttempts {
		return d.fail("%d primary attempts, at most %d", n, MaxPrimaryAttempts)
	}
	k.Attempts = grow(k.Attempts, n)
	for i := range k.Attempts {
		if err := d.primaryView(&k.Attempts[i]); err != nil {
			return err
		}
	}
	k.Behind, err = d.bool()
	return err
}

// primaryView reuses p's Members from an earlier decode.
func (d *Decoder) primaryView(p *PrimaryView) (err error) {
	if _, err = d.arrayLen(primaryViewFields); err != nil {
		return err
	}
	if p.Gen, err = d.seq(); err != nil {
		return err
	}
	if err = d.view(&p.View); err != nil {
		return err
	}
	if p.Inc, err = d.uint(); err != nil {
		return err
	}
	return d.members(&p.Members)
}

func (d *Decoder) commit(m *ViewCommit) (err error) {
	if m.Epoch, err = d.uint(); err != nil {
		return err
	}
	if m.Attempt, err = d.uint(); err != nil {
		return err
	}
	if err = d.viewMembers(&m.Members); err != nil {
		return err
	}
	if err = d.left(&m.Left); err != nil {
		return err
	}
	if err = d.viewCuts(&m.Cuts); err != nil {
		return err
	}
	if m.Primary, err = d.seq(); err != nil {
		return err
	}
	return d.left(&m.Behind)
}

func (d *Decoder) refuse(m *Refuse) (err error) {
	if m.Target, err = d.uint(); err != nil {
		return err
	}
	if m.TargetInc, err = d.uint(); err != nil {
		return err
	}
	if m.Setting, err = d.bytes(); err != nil {
		return err
	}
	if m.Ours, err = d.bytes(); err != nil {
		return err
	}
	m.Theirs, err = d.bytes()
	return err
}

func (d *Decoder) phase() (FlushPhase, error) {
	p, err := d.uintMax(uint64(FlushCut))
	return FlushPhase(p), err
}

func (d *Decoder) view(v *ViewID) (err error) {
	if v.Epoch, err = d.uint(); err != nil {
		return err
	}
	v.Coord, err = d.uint()
	return err
}

func (d *Decoder) members(ms *[]Member) error {
	n, err := d.countOf(minMemberBytes)
	if err != nil {
		return err
	}
	*ms = grow(*ms, n)
	for i := range *ms {
		m := &(*ms)[i]
		if _, err := d.arrayLen(memberFields); err != nil {
			return err
		}
		if m.ID, err = d.uint(); err != nil {
			return err
		}
		if m.Inc, err = d.uint(); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) viewMembers(ms *[]ViewMember) error {
	n, err := d.countOf(minViewMemberBytes)
	if err != nil {
		return err
	}
	*ms = grow(*ms, n)
	for i := range *ms {
		m := &(*ms)[i]
		if _, err := d.arrayLen(viewMemberFields); err != nil {
			return err
		}
		if m.ID, err = d.uint(); err != nil {
			return err
		}
		if m.Inc, err = d.uint(); err != nil {
			return err
		}
		if m.Next, err = d.seq(); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) left(ids *[]uint64) error {
	n, err := d.countOf(minLeftBytes)
	if err != nil {
		return err
	}
	*ids = grow(*ids, n)
	for i := range *ids {
		if (*ids)[i], err = d.uint(); err != nil {
			return err
		}
	}
	return nil
}

// viewCuts reuses each element's Cuts slice from an earlier decode: grow
// keeps the elements within the old capacity.
func (d *Decoder) viewCuts(vs *[]ViewCut) error {
	n, err := d.countOf(minViewCutBytes)
	if err != nil {
		return err
	}
	*vs = grow(*vs, n)
	for i := range *vs {
		v := &(*vs)[i]
		if _, err := d.arrayLen(viewCutFields); err != nil {
			return err
		}
		if err := d.view(&v.View); err != nil {
			return err
		}
		var err error
		if v.Inc, err = d.uint(); err != nil {
			return err
		}
		if err := d.cuts(&v.Cuts); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) cuts(cs *[]Cut) error {
	n, err := d.countOf(minCutBytes)
	if err != nil {
		return err
	}
	*cs = grow(*cs, n)
	for i := range *cs {
		c := &(*cs)[i]
		if _, err := d.arrayLen(cutFields); err != nil {
			return err
		}
		if c.ID, err = d.uint(); err != nil {
			return err
		}
		if c.Seq, err = d.seq(); err != nil {
			return err
		}
	}
	return nil
}

// arrayLen reads an array header and checks it has exactly want elements.
func (d *Decoder) arrayLen(want int) (int, error) {
	n, err := d.countOf(1)
	if err == nil && n != want {
		err = d.fail("array of %d elements, want %d", n, want)
	}
	return n, err
}

// countOf reads an array header whose elements each take at least min bytes,
// and rejects counts the remaining bytes cannot hold. That bound is what keeps
// allocations within the datagram's size.
func (d *Decoder) countOf(min int) (int, error) {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return 0, d.wrap(err)
	}
	if n < 0 || n > d.r.Len()/min {
		return 0, d.fail("array of %d elements in %d bytes", n, d.r.Len())
	}
	return n, nil
}

func (d *Decoder) uint() (uint64, error) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return 0, d.wrap(err)
	}
	// msgpack's DecodeUint64 accepts negative ints and nil; we do not.
	if c >= 0xe0 || c == 0xc0 || (c >= 0xd0 && c <= 0xd3) {
		return 0, d.fail("code %#x where an unsigned int belongs", c)
	}
	v, err := d.dec.DecodeUint64()
	return v, d.wrap(err)
}

// bool reads a msgpack boolean, nothing else.
func (d *Decoder) bool() (bool, error) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return false, d.wrap(err)
	}
	if c != 0xc2 && c != 0xc3 {
		return false, d.fail("code %#x where a boolean belongs", c)
	}
	v, err := d.dec.DecodeBool()
	return v, d.wrap(err)
}

// seq reads a sequence number, which is below MaxSeq.
func (d *Decoder) seq() (uint64, error) { return d.uintMax(MaxSeq - 1) }

func (d *Decoder) uintMax(max uint64) (uint64, error) {
	v, err := d.uint()
	if err == nil && v > max {
		err = d.fail("%d is out of range (max %d)", v, max)
	}
	return v, err
}

func (d *Decoder) int() (int64, error) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return 0, d.wrap(err)
	}
	if c == 0xc0 {
		return 0, d.fail("nil where an int belongs")
	}
	v, err := d.dec.DecodeInt64()
	return v, d.wrap(err)
}

// bytes returns the next bin or str field as a slice of the datagram.
func (d *Decoder) bytes() ([]byte, error) {
	n, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, d.wrap(err)
	}
	if n < 0 {
		return d.data[:0:0], nil // nil: an empty field
	}
	if n > d.r.Len() {
		return nil, d.fail("%d-byte field in %d bytes", n, d.r.Len())
	}
	off := len(d.data) - d.r.Len()
	if _, err := d.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, d.wrap(err)
	}
	return d.data[off : off+n : off+n], nil
}

func (d *Decoder) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w at byte %d: %v", ErrMalformed, len(d.data)-d.r.Len(), err)
}

func (d *Decoder) fail(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrMalformed, len(d.data)-d.r.Len(), fmt.Sprintf(format, args...))
}

// grow returns s resized to n elements, reusing its array when it can.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

func (d *Decoder) chunk(m *Chunk) (err error) {
	if m.Message, err = d.uint(); err != nil {
		return err
	}
	i, err := d.uintMax(MaxChunks - 1)
	if err != nil {
		return err
	}
	n, err := d.uintMax(MaxChunks)
	if err != nil {
		return err
	}
	if n < 2 || i >= n {
		return d.fail("chunk %d of %d", i, n)
	}
	m.Index, m.Count = uint32(i), uint32(n)
	if m.Bytes, err = d.bytes(); err != nil {
		return err
	}
	if len(m.Bytes) == 0 {
		return d.fail("empty chunk")
	}
	return nil
}
