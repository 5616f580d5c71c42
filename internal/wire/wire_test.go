package wire

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
)

var hdr = Header{Group: GroupHash("huddle"), From: 3, Inc: 1763800000123456789, View: ViewID{Epoch: 7, Coord: 5}}

// samples has one envelope of every kind that has a codec, filled so that
// every field is non-zero and a mix-up between fields would show.
func samples() []*Envelope {
	data := Data{Seq: 42, Order: Total, Dest: 9, Service: []byte("election"), FragIndex: 1, FragCount: 3, Payload: []byte("hello, group")}
	small := Data{Seq: 43, Service: []byte{}, Payload: []byte("x")}
	mk := func(k Kind) *Envelope { e := &Envelope{Header: hdr}; e.Kind = k; return e }
	d := mk(KindData)
	d.Data = data
	b := mk(KindBatch)
	b.Batch = []Data{data, small}
	n := mk(KindNack)
	n.Nack = Nack{Source: 2, SourceInc: 99, Attempt: 3, Ranges: []SeqRange{{1, 1}, {5, 300}}}
	r := mk(KindRepair)
	r.Repair = Repair{Source: 2, SourceInc: 99, View: ViewID{Epoch: 6, Coord: 2}, Data: data}
	s := mk(KindSession)
	s.Session = Session{Sent: 1763800000999, Seq: 1 << 40, Low: 1<<40 - 5, Peers: []PeerState{{ID: 2, Inc: 99, Seq: 17, Echo: 1763800000000, Held: 2500}, {ID: 4, Inc: 1, Seq: 0, Echo: 0, Held: -1}}}
	return append([]*Envelope{d, b, n, r, s}, membershipSamples(mk)...)
}

// membershipSamples are the membership kinds' samples, filled like samples'.
func membershipSamples(mk func(Kind) *Envelope) []*Envelope {
	cuts := []ViewCut{{View: ViewID{6, 2}, Inc: 1 << 61, Cuts: []Cut{{2, 17}, {4, 9}}}, {View: ViewID{5, 2}, Inc: 3, Cuts: []Cut{{3, 1 << 40}}}}
	j := mk(KindJoin)
	j.Join = Join{Settings: []Setting{{Name: []byte("datagram"), Value: []byte("1400")}, {Name: []byte("order"), Value: []byte("total")}}}
	l := mk(KindLeave)
	l.Leave = Leave{Member: 4, MemberInc: 77, Reason: LeaveSuspect}
	f := mk(KindFlush)
	f.Flush = Flush{Epoch: 8, Attempt: 2, Phase: FlushCut, Members: []Member{{2, 99}, {3, 1}, {4, 77}}, Cuts: cuts, Primary: 7}
	ok := mk(KindFlushOK)
	ok.FlushOK = FlushOK{Epoch: 8, Attempt: 2, Initiator: 3, Phase: FlushState, Prior: ViewID{7, 5}, PriorInc: 1 << 62, Settings: 0xdeadbeef, Sent: 1 << 40, Has: []Cut{{2, 17}, {4, 9}},
		Known: Known{Last: PrimaryView{Gen: 6, View: ViewID{7, 5}, Inc: 1, Members: []Member{{2, 1}, {4, 9}, {5, 1 << 60}}}, Attempts: []PrimaryView{{Gen: 7, View: ViewID{8, 3}, Inc: 1 << 40, Members: []Member{{2, 1}, {3, 1 << 40}}}}, Behind: true}}
	v := mk(KindView)
	v.Commit = ViewCommit{Epoch: 8, Attempt: 2, Members: []ViewMember{{2, 99, 18}, {3, 1, 1 << 40}}, Left: []uint64{4, 1 << 33}, Cuts: cuts, Primary: 1 << 50, Behind: []uint64{3, 1 << 40}}
	rf := mk(KindRefuse)
	rf.Refuse = Refuse{Target: 6, TargetInc: 12, Setting: []byte("datagram"), Ours: []byte("1400"), Theirs: []byte("9000")}
	ch := mk(KindChunk)
	ch.Chunk = Chunk{Message: 3, Index: 1, Count: 4, Bytes: []byte("a piece of a view commit")}
	fe := mk(KindFlushEnd)
	fe.FlushEnd = FlushEnd{Epoch: 8, Attempt: 2}
	pr := mk(KindProof)
	pr.Proof = Proof{Target: 7, TargetInc: 1 << 40, Sent: 1 << 60, Flags: ProofAnswer | ProofStarved}
	return []*Envelope{j, l, f, ok, v, rf, ch, fe, pr}
}

// normalize makes an envelope comparable with reflect.DeepEqual after a
// round trip: only the body of its kind counts, and empty byte fields decode
// as empty (not nil) slices.
func normalize(e *Envelope) Envelope {
	out := Envelope{Header: e.Header}
	fix := func(d Data) Data {
		if d.Service == nil {
			d.Service = []byte{}
		}
		if d.Payload == nil {
			d.Payload = []byte{}
		}
		return d
	}
	switch e.Kind {
	case KindData:
		out.Data = fix(e.Data)
	case KindBatch:
		for _, d := range e.Batch {
			out.Batch = append(out.Batch, fix(d))
		}
	case KindNack:
		out.Nack = e.Nack
		out.Nack.Ranges = append([]SeqRange{}, e.Nack.Ranges...)
	case KindRepair:
		out.Repair = e.Repair
		out.Repair.Data = fix(e.Repair.Data)
	case KindSession:
		out.Session = e.Session
		out.Session.Peers = append([]PeerState{}, e.Session.Peers...)
	default:
		normalizeMembership(e, &out)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	enc, dec := NewEncoder(), NewDecoder()
	for _, in := range samples() {
		t.Run(in.Kind.String(), func(t *testing.T) {
			b, err := enc.Append(nil, in)
			if err != nil {
				t.Fatal(err)
			}
			out := NewEnvelope(1400)
			if err := dec.Decode(b, out); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got, want := normalize(out), normalize(in); !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip changed the envelope:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestPayloadIsNotCopied(t *testing.T) {
	in := samples()[0]
	b, _ := NewEncoder().Append(nil, in)
	out := NewEnvelope(1400)
	if err := NewDecoder().Decode(b, out); err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, in.Data.Payload)
	if &out.Data.Payload[0] != &b[i] {
		t.Fatal("payload was copied out of the datagram")
	}
	if cap(out.Data.Payload) != len(out.Data.Payload) {
		t.Fatal("payload slice can be appended into the datagram")
	}
}

// TestDataHeaderSize pins the per-message overhead of a data message with
// IDs derived from IPv4 addresses (the worst common case): header 30 bytes
// (array 1, magic+version 3, group 5, from 5, incarnation 9, kind 1, view
// 1+5), then seq 5, order 1, dest 1, service 1, fragment 2, payload length 3.
func TestDataHeaderSize(t *testing.T) {
	e := &Envelope{Header: Header{Group: GroupHash("huddle"), From: 167772165, Inc: 1763800000123456789, Kind: KindData, View: ViewID{12, 167772161}}}
	e.Data = Data{Seq: 100000, Payload: make([]byte, 1000)}
	b, _ := NewEncoder().Append(nil, e)
	if over := len(b) - 1000; over > 43 {
		t.Fatalf("data message overhead is %d bytes, want at most 43", over)
	}
}

func TestNoAllocations(t *testing.T) {
	enc, dec := NewEncoder(), NewDecoder()
	env := NewEnvelope(1400)
	buf := make([]byte, 0, 2048)
	for _, in := range samples() {
		b, _ := enc.Append(nil, in)
		if a := testing.AllocsPerRun(100, func() { dec.Decode(b, env) }); a != 0 {
			t.Errorf("decoding %v allocates %.1f times per datagram", in.Kind, a)
		}
		if a := testing.AllocsPerRun(100, func() { enc.Append(buf[:0], in) }); a != 0 {
			t.Errorf("encoding %v allocates %.1f times per datagram", in.Kind, a)
		}
		if a := testing.AllocsPerRun(100, func() { EncodedSize(in) }); a != 0 {
			t.Errorf("sizing %v allocates %.1f times per datagram", in.Kind, a)
		}
	}
}

// kindOffset is where the kind byte sits in an encoding of a sample: after
// the array header, magic+version (3), group hash (5), from (1) and
// incarnation (9).
const kindOffset = 1 + 3 + 5 + 1 + 9

func TestDecodeRejects(t *testing.T) {
	enc := NewEncoder()
	good, _ := enc.Append(nil, samples()[0])
	foreign := *samples()[0]
	foreign.Kind = KindOrder
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"not msgpack", []byte("GET / HTTP/1.1\r\n"), ErrMalformed},
		{"truncated", good[:len(good)-1], ErrMalformed},
		{"trailing byte", append(append([]byte{}, good...), 0), ErrMalformed},
		{"wrong magic", func() []byte { b := append([]byte{}, good...); b[2]++; return b }(), ErrNotHuddle},
		{"reserved kind", func() []byte { b := append([]byte{}, good...); b[kindOffset] = byte(KindOrder); return b }(), ErrUnknownKind},
		{"merge kind", func() []byte { b := append([]byte{}, good...); b[kindOffset] = byte(KindMerge); return b }(), ErrUnknownKind},
		{"unassigned kind", func() []byte { b := append([]byte{}, good...); b[kindOffset] = byte(kindLimit); return b }(), ErrUnknownKind},
		{"version 1", func() []byte { b := append([]byte{}, good...); b[3] = 1; return b }(), ErrNotHuddle},
		{"huge array", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, ErrMalformed},
		{"huge bin", append(good[:len(good)-13:len(good)-13], 0xc6, 0x7f, 0xff, 0xff, 0xff), ErrMalformed},
		{"negative seq", func() []byte { b := append([]byte{}, good...); b[bytes.Index(b, []byte{42})] = 0xff; return b }(), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := NewDecoder().Decode(c.data, NewEnvelope(1400))
			if !errors.Is(err, c.want) {
				t.Fatalf("Decode = %v, want %v", err, c.want)
			}
		})
	}
	if _, err := enc.Append(nil, &foreign); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("encoding a reserved kind: %v, want ErrUnknownKind", err)
	}
}

func TestDecodeBounds(t *testing.T) {
	enc, dec := NewEncoder(), NewDecoder()
	hugeSeq := *samples()[0]
	hugeSeq.Data.Seq = MaxSeq
	hugeRange := *samples()[2]
	hugeRange.Nack.Ranges = []SeqRange{{1, MaxSeq}}
	hugeAttempt := *samples()[2]
	hugeAttempt.Nack.Attempt = MaxAttempt + 1
	hugeLow := *samples()[4]
	hugeLow.Session.Low = 1 << 63
	for name, e := range map[string]*Envelope{"seq": &hugeSeq, "range": &hugeRange, "attempt": &hugeAttempt, "low": &hugeLow} {
		b, _ := enc.Append(nil, e)
		if err := dec.Decode(b, NewEnvelope(1400)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s out of bounds: Decode = %v, want ErrMalformed", name, err)
		}
	}
}

func TestViewID(t *testing.T) {
	a, b, c := ViewID{1, 9}, ViewID{2, 1}, ViewID{2, 3}
	if !a.Less(b) || !b.Less(c) || c.Less(a) || a.Less(a) {
		t.Fatal("ViewID order is not epoch, then coordinator")
	}
	if s := c.String(); s != "2.3" {
		t.Fatalf("String = %q", s)
	}
}

func BenchmarkEncodeData(b *testing.B) {
	enc, in := NewEncoder(), samples()[0]
	in.Data.Payload = make([]byte, 1000)
	buf := make([]byte, 0, 2048)
	b.SetBytes(1000)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = enc.Append(buf[:0], in)
	}
}

func BenchmarkDecodeData(b *testing.B) {
	in := samples()[0]
	in.Data.Payload = make([]byte, 1000)
	data, _ := NewEncoder().Append(nil, in)
	dec, env := NewDecoder(), NewEnvelope(1400)
	b.SetBytes(1000)
	b.ReportAllocs()
	for b.Loop() {
		if err := dec.Decode(data, env); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSizes(t *testing.T) {
	enc := NewEncoder()
	for _, e := range samples() {
		b, _ := enc.Append(nil, e)
		n, _ := bodyFields(e)
		switch e.Kind {
		case KindData:
			if got := HeaderSize(&e.Header, dataFields) + DataSize(&e.Data); got != len(b) {
				t.Errorf("HeaderSize+DataSize = %d, encoding is %d", got, len(b))
			}
		case KindBatch:
			f := 0
			for i := range e.Batch {
				f += DataSize(&e.Batch[i])
			}
			if got := BatchSize(&e.Header, len(e.Batch), f); got != len(b) {
				t.Errorf("BatchSize = %d, encoding is %d", got, len(b))
			}
		case KindRepair:
			if got := HeaderSize(&e.Header, n) + DataSize(&e.Repair.Data); got > len(b) || got+RepairExtra < len(b) {
				t.Errorf("repair of %d bytes is not within RepairExtra of its data's %d", len(b), got)
			}
		}
		if h := HeaderSize(&e.Header, n); h > MaxHeader {
			t.Errorf("header of %d bytes exceeds MaxHeader", h)
		}
		if got, err := EncodedSize(e); err != nil || got != len(b) {
			t.Errorf("EncodedSize of %v = %d, %v; encoding is %d", e.Kind, got, err, len(b))
		}
	}
	big := Data{Seq: math.MaxUint64, Dest: math.MaxUint64, Service: make([]byte, 300), FragIndex: math.MaxUint32 - 1, FragCount: math.MaxUint32, Payload: make([]byte, 70000)}
	e := &Envelope{Header: Header{Group: math.MaxUint32, From: math.MaxUint64, Inc: math.MaxUint64, Kind: KindData, View: ViewID{math.MaxUint64, math.MaxUint64}}, Data: big}
	b, _ := enc.Append(nil, e)
	if got := HeaderSize(&e.Header, dataFields) + DataSize(&e.Data); got != len(b) {
		t.Errorf("HeaderSize+DataSize of the largest values = %d, encoding is %d", got, len(b))
	}
	e.Kind = KindRepair
	e.Repair = Repair{Source: math.MaxUint64, SourceInc: math.MaxUint64, View: ViewID{math.MaxUint64, math.MaxUint64}, Data: big}
	r, _ := enc.Append(nil, e)
	if len(r) > MaxHeader+DataSize(&big)+RepairExtra {
		t.Errorf("worst-case repair of %d bytes exceeds MaxHeader+DataSize+RepairExtra", len(r))
	}
	if got, _ := EncodedSize(e); got != len(r) {
		t.Errorf("EncodedSize of the largest repair = %d, encoding is %d", got, len(r))
	}
}

func TestFilter(t *testing.T) {
	b, _ := NewEncoder().Append(nil, samples()[0])
	d := NewDecoder()
	d.Filter(hdr.Group, hdr.From, hdr.Inc)
	if err := d.Decode(b, NewEnvelope(1400)); err != ErrOwnEcho {
		t.Fatalf("own datagram: %v", err)
	}
	d.Filter(hdr.Group+1, 99, 1)
	if err := d.Decode(b, NewEnvelope(1400)); err != ErrForeignGroup {
		t.Fatalf("another group's datagram: %v", err)
	}
	d.Filter(hdr.Group, hdr.From, hdr.Inc+1) // same ID, another incarnation: for us
	if err := d.Decode(b, NewEnvelope(1400)); err != nil {
		t.Fatal(err)
	}
}
