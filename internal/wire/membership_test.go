package wire

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
)

// normalizeMembership copies a membership body into out the way normalize
// does the others: lists and byte fields non-nil, nothing shared with e.
func normalizeMembership(e *Envelope, out *Envelope) {
	bs := func(b []byte) []byte { return append([]byte{}, b...) }
	vcs := func(vs []ViewCut) []ViewCut {
		out := []ViewCut{}
		for _, v := range vs {
			out = append(out, ViewCut{View: v.View, Inc: v.Inc, Cuts: append([]Cut{}, v.Cuts...)})
		}
		return out
	}
	switch e.Kind {
	case KindJoin:
		out.Join.Settings = []Setting{}
		for _, s := range e.Join.Settings {
			out.Join.Settings = append(out.Join.Settings, Setting{Name: bs(s.Name), Value: bs(s.Value)})
		}
	case KindLeave:
		out.Leave = e.Leave
	case KindFlush:
		out.Flush = e.Flush
		out.Flush.Members = append([]Member{}, e.Flush.Members...)
		out.Flush.Cuts = vcs(e.Flush.Cuts)
	case KindFlushOK:
		out.FlushOK = e.FlushOK
		out.FlushOK.Has = append([]Cut{}, e.FlushOK.Has...)
		pv := func(p PrimaryView) PrimaryView { p.Members = append([]Member{}, p.Members...); return p }
		out.FlushOK.Known.Last = pv(e.FlushOK.Known.Last)
		out.FlushOK.Known.Attempts = []PrimaryView{}
		for _, a := range e.FlushOK.Known.Attempts {
			out.FlushOK.Known.Attempts = append(out.FlushOK.Known.Attempts, pv(a))
		}
	case KindView:
		out.Commit = e.Commit
		out.Commit.Members = append([]ViewMember{}, e.Commit.Members...)
		out.Commit.Left = append([]uint64{}, e.Commit.Left...)
		out.Commit.Behind = append([]uint64{}, e.Commit.Behind...)
		out.Commit.Cuts = vcs(e.Commit.Cuts)
	case KindRefuse:
		r := e.Refuse
		out.Refuse = Refuse{Target: r.Target, TargetInc: r.TargetInc, Setting: bs(r.Setting), Ours: bs(r.Ours), Theirs: bs(r.Theirs)}
	case KindChunk:
		out.Chunk = e.Chunk
		out.Chunk.Bytes = bs(e.Chunk.Bytes)
	case KindPath:
		out.Path = e.Path
	case KindFlushEnd:
		out.FlushEnd = e.FlushEnd
	case KindProof:
		out.Proof = e.Proof
	}
}

// sample returns a fresh sample of kind k, safe to modify.
func sample(k Kind) *Envelope {
	for _, e := range samples() {
		if e.Kind == k {
			return e
		}
	}
	panic("no sample of " + k.String())
}

// edgeSamples are envelopes at the edges the samples avoid: empty lists,
// empty byte fields, zero and largest values.
func edgeSamples() []*Envelope {
	const max = math.MaxUint64
	mk := func(k Kind) *Envelope { e := &Envelope{Header: hdr}; e.Kind = k; return e }
	j0, j1 := mk(KindJoin), mk(KindJoin)
	j1.Join.Settings = []Setting{{}, {Name: []byte("x")}}
	l := mk(KindLeave)
	l.Leave = Leave{Member: max, MemberInc: max, Reason: LeaveLagging}
	f0, f1 := mk(KindFlush), mk(KindFlush)
	f1.Flush = Flush{Epoch: max, Attempt: max, Phase: FlushCut, Members: []Member{{max, max}}, Cuts: []ViewCut{{View: ViewID{max, max}, Inc: max}, {Cuts: []Cut{{max, MaxSeq - 1}}}}}
	ok0, ok1 := mk(KindFlushOK), mk(KindFlushOK)
	ok1.FlushOK = FlushOK{Epoch: max, Attempt: max, Initiator: max, Phase: FlushCut, Prior: ViewID{max, max}, PriorInc: max, Settings: math.MaxUint32, Sent: MaxSeq - 1}
	v0, v1 := mk(KindView), mk(KindView)
	v1.Commit = ViewCommit{Members: []ViewMember{{max, max, MaxSeq - 1}}, Left: []uint64{0, max}, Cuts: []ViewCut{{}}}
	r0 := mk(KindRefuse)
	c1 := mk(KindChunk)
	c1.Chunk = Chunk{Message: max, Index: MaxChunks - 1, Count: MaxChunks, Bytes: make([]byte, 70000)}
	rp := mk(KindRepair)
	rp.Repair = Repair{Source: max, SourceInc: max, View: ViewID{max, max}, Data: Data{Seq: MaxSeq - 1}}
	p0, p1 := mk(KindPath), mk(KindPath)
	p1.Path.Unicast = true
	e0, e1 := mk(KindFlushEnd), mk(KindFlushEnd)
	e1.FlushEnd = FlushEnd{Epoch: max, Attempt: max}
	q0, q1, q2 := mk(KindProof), mk(KindProof), mk(KindProof)
	q1.Proof = Proof{Target: max, TargetInc: max, Sent: math.MaxInt64, Flags: proofFlags}
	q2.Proof = Proof{Sent: math.MinInt64}
	return []*Envelope{j0, j1, l, f0, f1, ok0, ok1, v0, v1, r0, c1, rp, p0, p1, e0, e1, q0, q1, q2}
}

func TestMembershipEdges(t *testing.T) {
	enc := NewEncoder()
	for _, in := range edgeSamples() {
		b, err := enc.Append(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		out := NewEnvelope(1400)
		if err := NewDecoder().Decode(b, out); err != nil {
			t.Fatalf("%v: decode: %v", in.Kind, err)
		}
		if got, want := normalize(out), normalize(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: round trip changed the envelope:\n got %+v\nwant %+v", in.Kind, got, want)
		}
		if n, _ := EncodedSize(in); n != len(b) {
			t.Errorf("%v: EncodedSize = %d, encoding is %d", in.Kind, n, len(b))
		}
	}
}

// TestMembershipReuse decodes messages of shrinking and growing lists into
// one Envelope: nothing of an earlier message may show through.
func TestMembershipReuse(t *testing.T) {
	big := sample(KindView)
	small := sample(KindView)
	small.Commit.Cuts = []ViewCut{{View: ViewID{1, 1}}}
	small.Commit.Left = nil
	grown := sample(KindView)
	grown.Commit.Cuts = append(grown.Commit.Cuts, ViewCut{View: ViewID{2, 2}, Cuts: []Cut{{1, 1}, {2, 2}, {3, 3}}})
	flush := sample(KindFlush)
	enc, dec, env := NewEncoder(), NewDecoder(), NewEnvelope(1400)
	for i, in := range []*Envelope{big, small, flush, big, grown, small, grown} {
		b, _ := enc.Append(nil, in)
		if err := dec.Decode(b, env); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if got, want := normalize(env), normalize(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("message %d decoded into a used envelope:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

func TestMembershipTruncated(t *testing.T) {
	enc := NewEncoder()
	for _, in := range append(samples()[5:], edgeSamples()...) {
		b, _ := enc.Append(nil, in)
		for n := range len(b) {
			if err := NewDecoder().Decode(b[:n], NewEnvelope(1400)); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v cut to %d of %d bytes: Decode = %v, want ErrMalformed", in.Kind, n, len(b), err)
			}
		}
	}
}

func TestMembershipBounds(t *testing.T) {
	cases := map[string]*Envelope{}
	add := func(name string, k Kind, f func(e *Envelope)) {
		e := sample(k)
		f(e)
		cases[name] = e
	}
	add("leave reason", KindLeave, func(e *Envelope) { e.Leave.Reason = LeaveLagging + 1 })
	add("flush phase", KindFlush, func(e *Envelope) { e.Flush.Phase = FlushCut + 1 })
	add("flush cut seq", KindFlush, func(e *Envelope) { e.Flush.Cuts[1].Cuts[0].Seq = MaxSeq })
	add("flush-ok phase", KindFlushOK, func(e *Envelope) { e.FlushOK.Phase = 255 })
	add("flush-ok sent", KindFlushOK, func(e *Envelope) { e.FlushOK.Sent = MaxSeq })
	add("flush-ok has", KindFlushOK, func(e *Envelope) { e.FlushOK.Has[1].Seq = math.MaxUint64 })
	add("view next", KindView, func(e *Envelope) { e.Commit.Members[0].Next = MaxSeq })
	add("view cut seq", KindView, func(e *Envelope) { e.Commit.Cuts[0].Cuts[1].Seq = MaxSeq })
	enc, dec := NewEncoder(), NewDecoder()
	for name, e := range cases {
		b, _ := enc.Append(nil, e)
		if err := dec.Decode(b, NewEnvelope(1400)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s out of bounds: Decode = %v, want ErrMalformed", name, err)
		}
	}
	// A settings hash is 32 bits: 2^32 has to be written by hand.
	b := flushOKWithKnown(1<<32, knownOf(primaryViewFields, 0, noBehind))
	if err := dec.Decode(b, NewEnvelope(1400)); !errors.Is(err, ErrMalformed) {
		t.Errorf("33-bit settings hash: Decode = %v, want ErrMalformed", err)
	}
}

// flushOKWithKnown writes a flush-ok by hand, with the settings hash
// given, no cuts, and the known that known writes.
func flushOKWithKnown(settings uint64, known func(e *Encoder)) []byte {
	return raw(KindFlushOK, 11, func(e *Encoder) {
		e.uints(8, 2, 3, 0, 7, 5, 1, settings, 1)
		e.array(0)
		known(e)
	})
}

// knownOf writes a known by hand: a last primary view of lastFields
// fields (its members an empty list), attempts well-formed attempts, and
// what behind writes.
func knownOf(lastFields, attempts int, behind func(e *Encoder)) func(e *Encoder) {
	return func(e *Encoder) {
		e.array(3)
		e.array(lastFields)
		e.uints(make([]uint64, lastFields-1)...)
		e.array(0)
		e.array(attempts)
		for range attempts {
			e.array(primaryViewFields)
			e.uints(1, 1, 1, 1)
			e.array(0)
		}
		behind(e)
	}
}

func noBehind(e *Encoder) { e.enc.EncodeBool(false) }

// raw writes a datagram by hand: the samples' header for kind k, claiming
// fields body fields, then whatever body writes.
func raw(k Kind, fields int, body func(e *Encoder)) []byte {
	e := NewEncoder()
	e.array(HeaderFields + fields)
	e.uints(MagicVersion, uint64(hdr.Group), hdr.From, hdr.Inc, uint64(k), hdr.View.Epoch, hdr.View.Coord)
	body(e)
	return e.buf.b
}

func TestMembershipShapes(t *testing.T) {
	none := func(e *Encoder) { e.array(0) }
	flush := func(members func(e *Encoder), cuts func(e *Encoder)) []byte {
		return raw(KindFlush, 6, func(e *Encoder) { e.uints(8, 2, 1); members(e); cuts(e); e.uints(0) })
	}
	member := func(fields int) func(e *Encoder) {
		return func(e *Encoder) { e.array(1); e.array(fields); e.uints(make([]uint64, fields)...) }
	}
	viewCut := func(fields int) func(e *Encoder) {
		return func(e *Encoder) {
			e.array(1)
			e.array(fields)
			e.uints(1, 2)
			e.array(0)
			e.uints(make([]uint64, fields-3)...)
		}
	}
	cut := func(fields int) func(e *Encoder) {
		return func(e *Encoder) {
			e.array(1)
			e.array(3)
			e.uints(1, 2)
			e.array(1)
			e.array(fields)
			e.uints(make([]uint64, fields)...)
			e.uints(0) // so that the list's count bound is not what rejects it
		}
	}
	view := func(members, left func(e *Encoder)) []byte {
		return raw(KindView, 7, func(e *Encoder) {
			e.uints(8, 2)
			members(e)
			left(e)
			e.array(0)
			e.uints(0)
			e.array(0)
		})
	}
	viewMember := func(fields int) func(e *Encoder) {
		return func(e *Encoder) { e.array(1); e.array(fields); e.uints(make([]uint64, fields)...) }
	}
	setting := func(fields int) []byte {
		// The trailing 0 keeps the list's count bound from rejecting it first.
		return raw(KindJoin, 1, func(e *Encoder) { e.array(1); e.array(fields); e.uints(make([]uint64, fields)...); e.uints(0) })
	}
	bad := map[string][]byte{
		"flush of 4 fields": raw(KindFlush, 4, func(e *Encoder) { e.uints(8, 2, 1); e.array(0) }),
		"flush of 5 fields": raw(KindFlush, 5, func(e *Encoder) { e.uints(8, 2, 1); e.array(0); e.array(0) }),
		"flush of 7 fields": raw(KindFlush, 7, func(e *Encoder) { e.uints(8, 2, 1); e.array(0); e.array(0); e.uints(0, 0) }),
		"view of 5 fields":  raw(KindView, 5, func(e *Encoder) { e.uints(8, 2); e.array(0); e.array(0); e.array(0) }),
		"primary gen beyond MaxSeq": raw(KindView, 7, func(e *Encoder) {
			e.uints(8, 2)
			e.array(0)
			e.array(0)
			e.array(0)
			e.uints(MaxSeq)
			e.array(0)
		}),
		"behind not a list":                 raw(KindView, 7, func(e *Encoder) { e.uints(8, 2); e.array(0); e.array(0); e.array(0); e.uints(1, 4) }),
		"known's behind not a bool":         flushOKWithKnown(1, knownOf(primaryViewFields, 0, func(e *Encoder) { e.uints(1) })),
		"flush-ok of 10 fields":             raw(KindFlushOK, 10, func(e *Encoder) { e.uints(8, 2, 3, 0, 7, 5, 1, 1, 1); e.array(0) }),
		"primary attempts beyond the bound": flushOKWithKnown(1, knownOf(primaryViewFields, MaxPrimaryAttempts+1, noBehind)),
		"primary view of 4 fields":          flushOKWithKnown(1, knownOf(primaryViewFields-1, 0, noBehind)),
		"leave of 2 fields":                 raw(KindLeave, 2, func(e *Encoder) { e.uints(4, 77) }),
		"member of 1 field":                 flush(member(1), none),
		"member of 3 fields":                flush(member(3), none),
		"view cut of 4 fields":              flush(none, viewCut(4)),
		"cut of 1 field":                    flush(none, cut(1)),
		"cut of 3 fields":                   flush(none, cut(3)),
		"view member of 2 fields":           view(viewMember(2), none),
		"view member of 4 fields":           view(viewMember(4), none),
		"setting of 1 field":                setting(1),
		"setting of 3 fields":               setting(3),
		"members beyond the bytes":          flush(func(e *Encoder) { e.array(1000) }, none),
		"cuts beyond the bytes": flush(none, func(e *Encoder) {
			e.array(1)
			e.array(3)
			e.uints(1, 2)
			e.buf.b = append(e.buf.b, 0xdd, 0x7f, 0xff, 0xff, 0xff)
		}),
		"left beyond the bytes":  view(none, func(e *Encoder) { e.array(20) }),
		"left not a list":        view(none, func(e *Encoder) { e.uints(4) }),
		"negative left":          view(none, func(e *Encoder) { e.array(1); e.enc.EncodeInt(-1) }),
		"nil left":               view(none, func(e *Encoder) { e.array(1); e.enc.EncodeNil() }),
		"settings not a list":    raw(KindJoin, 1, func(e *Encoder) { e.bytes([]byte("x")) }),
		"int for a setting name": setting(2),
		"bytes for a member":     raw(KindLeave, 3, func(e *Encoder) { e.bytes([]byte{4}); e.uints(77, 0) }),
		"int for refuse bytes":   raw(KindRefuse, 5, func(e *Encoder) { e.uints(6, 12, 5); e.bytes(nil); e.bytes(nil) }),
		"refuse bytes beyond":    raw(KindRefuse, 5, func(e *Encoder) { e.uints(6, 12); e.bytes(nil); e.bytes(nil); e.enc.EncodeBytesLen(100) }),
		"path unicast 2":         raw(KindPath, 1, func(e *Encoder) { e.uints(2) }),
		"path unicast bytes":     raw(KindPath, 1, func(e *Encoder) { e.bytes([]byte{1}) }),
		"path without its field": raw(KindPath, 0, func(e *Encoder) {}),
		"flush-end of 1 field":   raw(KindFlushEnd, 1, func(e *Encoder) { e.uints(3) }),
		"flush-end bytes":        raw(KindFlushEnd, 2, func(e *Encoder) { e.uints(3); e.bytes([]byte{1}) }),
		"proof of 3 fields":      raw(KindProof, 3, func(e *Encoder) { e.uints(3, 1, 5) }),
		"proof flags unknown":    raw(KindProof, 4, func(e *Encoder) { e.uints(3, 1, 5, 4) }),
		"probe sent bytes":       raw(KindProof, 4, func(e *Encoder) { e.uints(3, 1); e.bytes([]byte{1}); e.uints(1) }),
	}
	for name, b := range bad {
		if err := NewDecoder().Decode(b, NewEnvelope(1400)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode = %v, want ErrMalformed", name, err)
		}
	}
	// The count bounds must admit lists of the smallest elements the
	// decoder accepts, or they would reject well-formed datagrams.
	good := map[string][]byte{
		"nil settings": raw(KindJoin, 1, func(e *Encoder) {
			e.array(5)
			for range 5 {
				e.array(2)
				e.enc.EncodeNil()
				e.enc.EncodeNil()
			}
		}),
		"small members": flush(func(e *Encoder) {
			e.array(3)
			for range 3 {
				e.array(2)
				e.uints(0, 0)
			}
		}, func(e *Encoder) {
			e.array(2)
			for range 2 {
				e.array(4)
				e.uints(0, 0, 0)
				e.array(0)
			}
		}),
		"small left":      view(none, func(e *Encoder) { e.array(4); e.uints(1, 2, 3, 4) }),
		"a known by hand": flushOKWithKnown(1, knownOf(primaryViewFields, MaxPrimaryAttempts, noBehind)),
	}
	for name, b := range good {
		if err := NewDecoder().Decode(b, NewEnvelope(1400)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestListElementSizes checks the worst-case element sizes against the
// exact sizes (which TestSizes and the fuzzer check against the encoder).
func TestListElementSizes(t *testing.T) {
	const max = math.MaxUint64
	many := make([]Cut, math.MaxUint16+1) // a 5-byte array header
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"member", membersSize([]Member{{max, max}}) - 1, MaxMemberBytes},
		{"view member", viewMembersSize([]ViewMember{{max, max, MaxSeq - 1}}) - 1, MaxViewMemberBytes},
		{"cut", cutsSize([]Cut{{max, MaxSeq - 1}}) - 1, MaxCutBytes},
		{"left", uintSize(max), MaxLeftBytes},
		{"view cut", viewCutsSize([]ViewCut{{View: ViewID{max, max}, Inc: max, Cuts: many}}) - 1 - cutsSize(many) + arraySize(len(many)), MaxViewCutExtra},
		{"list header", arraySize(math.MaxUint16 + 1), MaxListHeader},
	} {
		if c.got != c.want {
			t.Errorf("largest %s takes %d bytes, constant says %d", c.name, c.got, c.want)
		}
	}
	e := &Envelope{Header: hdr}
	e.Kind = KindFlushOK
	e.FlushOK.Has = many
	b, _ := NewEncoder().Append(nil, e)
	if n, _ := EncodedSize(e); n != len(b) {
		t.Errorf("EncodedSize of a long list = %d, encoding is %d", n, len(b))
	}
}

// TestChunkBounds: a chunk's datagram adds at most ChunkOverhead to its
// bytes; a chunk out of place, alone or empty does not decode.
func TestChunkBounds(t *testing.T) {
	e := sample(KindChunk)
	e.From, e.Inc, e.View = math.MaxUint64, math.MaxUint64, ViewID{math.MaxUint64, math.MaxUint64}
	e.Chunk = Chunk{Message: math.MaxUint64, Index: MaxChunks - 1, Count: MaxChunks, Bytes: make([]byte, 65000)}
	if n, _ := EncodedSize(e); n > len(e.Chunk.Bytes)+ChunkOverhead {
		t.Errorf("worst-case chunk of %d bytes takes %d, more than ChunkOverhead %d", len(e.Chunk.Bytes), n, ChunkOverhead)
	}
	for name, c := range map[string]Chunk{
		"index past count": {Index: 3, Count: 3, Bytes: []byte{1}},
		"one of one":       {Index: 0, Count: 1, Bytes: []byte{1}},
		"too many":         {Index: 0, Count: MaxChunks + 1, Bytes: []byte{1}},
		"empty":            {Index: 0, Count: 2},
	} {
		e.Chunk = c
		b, err := NewEncoder().Append(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := NewDecoder().Decode(b, NewEnvelope(1400)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decode says %v, want ErrMalformed", name, err)
		}
	}
}

func TestNoCodec(t *testing.T) {
	for _, k := range []Kind{0, KindOrder, KindMerge, kindLimit, 255} {
		e := &Envelope{Header: hdr}
		e.Kind = k
		if _, err := EncodedSize(e); !errors.Is(err, ErrUnknownKind) {
			t.Errorf("EncodedSize of %v: %v, want ErrUnknownKind", k, err)
		}
	}
	if s := KindRefuse.String(); s != "refuse" {
		t.Errorf("KindRefuse is %q", s)
	}
}

// TestOtherWireVersion: a huddle datagram of another wire version is told
// apart from one that is not huddle's, with its group and sender (the
// compatibility rule), whatever its layout after them; it still counts as
// ErrNotHuddle.
func TestOtherWireVersion(t *testing.T) {
	env := &Envelope{Header: Header{Group: 0xabcdef, From: 42, Inc: 7, Kind: KindSession}}
	b, err := NewEncoder().Append(nil, env)
	if err != nil {
		t.Fatal(err)
	}
	// MagicVersion is a msgpack uint16 right after the array's header.
	i := bytes.Index(b, []byte{0xcd, MagicVersion >> 8, Version})
	if i < 0 {
		t.Fatalf("no MagicVersion in %x", b)
	}
	next := slices.Clone(b)
	next[i+2] = Version + 1
	var got Envelope
	err = NewDecoder().Decode(next, &got)
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != Version+1 || ve.Group != 0xabcdef || ve.From != 42 || !errors.Is(err, ErrNotHuddle) {
		t.Fatalf("decode of version %d: %v (%+v), want a VersionError with group and sender", Version+1, err, ve)
	}
	// A shorter header of another version: three fields are enough.
	short := []byte{0x93, 0xcd, MagicVersion >> 8, Version + 1, 0xce, 0x00, 0xab, 0xcd, 0xef, 42}
	if err := NewDecoder().Decode(short, &got); !errors.As(err, &ve) || ve.From != 42 {
		t.Fatalf("a three-field datagram of another version: %v", err)
	}
	// Not huddle's at all: no VersionError.
	other := slices.Clone(b)
	other[i+1] = 'X'
	if err := NewDecoder().Decode(other, &got); !errors.Is(err, ErrNotHuddle) || errors.As(err, &ve) {
		t.Fatalf("a datagram of another protocol: %v, want ErrNotHuddle alone", err)
	}
}
