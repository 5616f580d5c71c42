package wire

import "math"

// Exact encoded sizes, so that senders can pack datagrams to the byte
// without encoding twice. TestSizes checks them against the encoder.

// uintSize is the size of v as a compact msgpack unsigned int.
func uintSize(v uint64) int {
	switch {
	case v <= math.MaxInt8:
		return 1
	case v <= math.MaxUint8:
		return 2
	case v <= math.MaxUint16:
		return 3
	case v <= math.MaxUint32:
		return 5
	}
	return 9
}

// arraySize is the size of an array header for n elements.
func arraySize(n int) int {
	switch {
	case n < 16:
		return 1
	case n <= math.MaxUint16:
		return 3
	}
	return 5
}

// binSize is the size of a bin field of n bytes.
func binSize(n int) int {
	switch {
	case n < 256:
		return 2 + n
	case n <= math.MaxUint16:
		return 3 + n
	}
	return 5 + n
}

// nameSize is the size of a short byte field written by Encoder.name.
func nameSize(n int) int {
	if n == 0 {
		return 1
	}
	return binSize(n)
}

// HeaderSize is the encoded size of h with the array header of an envelope
// whose body has bodyFields fields.
func HeaderSize(h *Header, bodyFields int) int {
	return arraySize(HeaderFields+bodyFields) + uintSize(MagicVersion) + uintSize(uint64(h.Group)) +
		uintSize(h.From) + uintSize(h.Inc) + uintSize(uint64(h.Kind)) + uintSize(h.View.Epoch) + uintSize(h.View.Coord)
}

// DataSize is the encoded size of d's fields, without an array header.
func DataSize(d *Data) int { return DataSizeWith(d, len(d.Service), len(d.Payload)) }

// DataSizeWith is DataSize of d with a service of serviceLen bytes and a
// payload of payloadLen bytes in place of its own: a message's size before
// it is built.
func DataSizeWith(d *Data, serviceLen, payloadLen int) int {
	return uintSize(d.Seq) + uintSize(uint64(d.Order)) + uintSize(d.Dest) + nameSize(serviceLen) +
		uintSize(uint64(d.FragIndex)) + uintSize(uint64(d.FragCount)) + binSize(payloadLen)
}

// Sizes of the envelopes that carry data, for packing.
const (
	// RepairExtra bounds what a repair adds to a data message's size: the
	// source, its incarnation and the original view's epoch and
	// coordinator, at most 9 bytes each. (MaxHeader already allows for the
	// repair's longer array header.)
	RepairExtra = 4 * 9
	// MaxHeader bounds HeaderSize for any header and body.
	MaxHeader = 5 + 3 + 5 + 9 + 9 + 2 + 9 + 9
	// BatchEntryExtra is what each message adds in a batch besides its
	// fields: its own array header.
	BatchEntryExtra = 1
)

// BatchSize is the exact size of a KindBatch envelope with header h whose
// entries' DataSize values sum to fields over n entries.
func BatchSize(h *Header, n, fields int) int {
	return HeaderSize(h, 1) + arraySize(n) + n*BatchEntryExtra + fields
}

// Worst-case sizes of one element of a membership list, for the membership
// layer to tell how many fit a datagram before it builds the message:
// an array header, then up to 9 bytes per int.
const (
	MaxMemberBytes     = 1 + 2*9
	MaxViewMemberBytes = 1 + 3*9
	MaxCutBytes        = 1 + 2*9
	MaxLeftBytes       = 9 // one left ID, a bare int
	// MaxViewCutExtra is what a view cut takes besides its cuts: its
	// array header, the view, and its cuts' array header.
	MaxViewCutExtra = 1 + 3*9 + 5
	// MaxListHeader bounds the array header of any list.
	MaxListHeader = 5
)

// EncodedSize is the exact size of Append's encoding of env, computed
// without encoding. Like Append, it fails for a kind without a codec.
func EncodedSize(env *Envelope) (int, error) {
	n, err := bodyFields(env)
	if err != nil {
		return 0, err
	}
	return HeaderSize(&env.Header, n) + bodySize(env), nil
}

func bodySize(env *Envelope) int {
	switch env.Kind {
	case KindData:
		return DataSize(&env.Data)
	case KindBatch:
		n := arraySize(len(env.Batch)) + len(env.Batch)*BatchEntryExtra
		for i := range env.Batch {
			n += DataSize(&env.Batch[i])
		}
		return n
	case KindNack:
		m := &env.Nack
		n := uintsSize(m.Source, m.SourceInc, m.Attempt) + arraySize(2*len(m.Ranges))
		for _, r := range m.Ranges {
			n += uintsSize(r.First, r.Last)
		}
		return n
	case KindRepair:
		r := &env.Repair
		return uintsSize(r.Source, r.SourceInc, r.View.Epoch, r.View.Coord) + DataSize(&r.Data)
	case KindSession:
		return sessionSize(&env.Session)
	}
	return membershipSize(env)
}

func sessionSize(s *Session) int {
	n := intSize(s.Sent) + uintsSize(s.Seq, s.Low) + arraySize(len(s.Peers))
	for _, p := range s.Peers {
		n += arraySize(peerStateFields) + uintsSize(p.ID, p.Inc, p.Seq) + intSize(p.Echo) + intSize(p.Held)
	}
	return n
}

func membershipSize(env *Envelope) int {
	switch env.Kind {
	case KindJoin:
		return settingsSize(env.Join.Settings)
	case KindLeave:
		l := &env.Leave
		return uintsSize(l.Member, l.MemberInc, uint64(l.Reason))
	case KindFlush:
		f := &env.Flush
		return uintsSize(f.Epoch, f.Attempt, uint64(f.Phase)) + membersSize(f.Members) + viewCutsSize(f.Cuts) + uintSize(f.Primary)
	case KindFlushOK:
		f := &env.FlushOK
		return uintsSize(f.Epoch, f.Attempt, f.Initiator, uint64(f.Phase), f.Prior.Epoch, f.Prior.Coord, f.PriorInc, uint64(f.Settings), f.Sent) +
			cutsSize(f.Has) + knownSize(&f.Known)
	case KindView:
		c := &env.Commit
		return uintsSize(c.Epoch, c.Attempt) + viewMembersSize(c.Members) +
			arraySize(len(c.Left)) + uintsSize(c.Left...) + viewCutsSize(c.Cuts) + uintSize(c.Primary) + arraySize(len(c.Behind)) + uintsSize(c.Behind...)
	case KindRefuse:
		r := &env.Refuse
		return uintsSize(r.Target, r.TargetInc) + nameSize(len(r.Setting)) + binSize(len(r.Ours)) + binSize(len(r.Theirs))
	case KindChunk:
		c := &env.Chunk
		return uintsSize(c.Message, uint64(c.Index), uint64(c.Count)) + binSize(len(c.Bytes))
	case KindPath:
		return 1
	case KindFlushEnd:
		return uintsSize(env.FlushEnd.Epoch, env.FlushEnd.Attempt)
	case KindProof:
		p := &env.Proof
		return uintsSize(p.Target, p.TargetInc, uint64(p.Flags)) + intSize(p.Sent)
	}
	return 0
}

func knownSize(k *Known) int {
	n := arraySize(3) + primaryViewSize(&k.Last) + arraySize(len(k.Attempts)) + 1 // the bool
	for i := range k.Attempts {
		n += primaryViewSize(&k.Attempts[i])
	}
	return n
}

func primaryViewSize(p *PrimaryView) int {
	return arraySize(primaryViewFields) + uintsSize(p.Gen, p.View.Epoch, p.View.Coord, p.Inc) + membersSize(p.Members)
}

func settingsSize(ss []Setting) int {
	n := arraySize(len(ss))
	for _, s := range ss {
		n += arraySize(settingFields) + nameSize(len(s.Name)) + binSize(len(s.Value))
	}
	return n
}

func membersSize(ms []Member) int {
	n := arraySize(len(ms))
	for _, m := range ms {
		n += arraySize(memberFields) + uintsSize(m.ID, m.Inc)
	}
	return n
}

func viewMembersSize(ms []ViewMember) int {
	n := arraySize(len(ms))
	for _, m := range ms {
		n += arraySize(viewMemberFields) + uintsSize(m.ID, m.Inc, m.Next)
	}
	return n
}

func viewCutsSize(vs []ViewCut) int {
	n := arraySize(len(vs))
	for _, v := range vs {
		n += arraySize(viewCutFields) + uintsSize(v.View.Epoch, v.View.Coord, v.Inc) + cutsSize(v.Cuts)
	}
	return n
}

func cutsSize(cs []Cut) int {
	n := arraySize(len(cs))
	for _, c := range cs {
		n += arraySize(cutFields) + uintsSize(c.ID, c.Seq)
	}
	return n
}

func uintsSize(vs ...uint64) int {
	n := 0
	for _, v := range vs {
		n += uintSize(v)
	}
	return n
}

// intSize is the size of v as a compact msgpack int: a non-negative v is
// written as an unsigned int.
func intSize(v int64) int {
	switch {
	case v >= 0:
		return uintSize(uint64(v))
	case v >= -32:
		return 1
	case v >= math.MinInt8:
		return 2
	case v >= math.MinInt16:
		return 3
	case v >= math.MinInt32:
		return 5
	}
	return 9
}
