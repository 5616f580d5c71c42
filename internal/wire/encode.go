package wire

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Encoder writes envelopes as msgpack arrays. It reuses one msgpack.Encoder
// and appends to a caller's slice, so encoding does not allocate once the
// slice has room. An Encoder is not safe for concurrent use.
type Encoder struct {
	buf appendBuf
	enc *msgpack.Encoder
}

// NewEncoder returns an Encoder.
func NewEncoder() *Encoder {
	e := &Encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	e.enc.UseCompactInts(true)
	return e
}

// Append appends the encoding of env to dst and returns the extended slice.
// Only the body that env.Kind names is encoded.
func (e *Encoder) Append(dst []byte, env *Envelope) ([]byte, error) {
	e.buf.b = dst
	err := e.envelope(env)
	out := e.buf.b
	e.buf.b = nil
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (e *Encoder) envelope(env *Envelope) error {
	n, err := bodyFields(env)
	if err != nil {
		return err
	}
	e.array(HeaderFields + n)
	e.uints(MagicVersion, uint64(env.Group), env.From, env.Inc, uint64(env.Kind), env.View.Epoch, env.View.Coord)
	switch env.Kind {
	case KindData:
		e.data(&env.Data)
	case KindBatch:
		e.array(len(env.Batch))
		for i := range env.Batch {
			e.array(dataFields)
			e.data(&env.Batch[i])
		}
	case KindNack:
		e.nack(&env.Nack)
	case KindRepair:
		r := &env.Repair
		e.uints(r.Source, r.SourceInc, r.View.Epoch, r.View.Coord)
		e.data(&r.Data)
	case KindSession:
		e.session(&env.Session)
	default:
		e.membership(env)
	}
	return nil
}

// bodyFields is the number of array elements the kind's body adds.
func bodyFields(env *Envelope) (int, error) {
	switch env.Kind {
	case KindData:
		return dataFields, nil
	case KindBatch:
		return 1, nil
	case KindNack:
		return 4, nil
	case KindRepair:
		return repairFields, nil
	case KindSession:
		return 4, nil
	case KindJoin:
		return 1, nil
	case KindLeave:
		return 3, nil
	case KindRefuse:
		return 5, nil
	case KindFlush:
		return 6, nil
	case KindView:
		return 7, nil
	case KindChunk:
		return 4, nil
	case KindPath:
		return 1, nil
	case KindFlushEnd:
		return 2, nil
	case KindProof:
		return 4, nil
	case KindFlushOK:
		return 11, nil
	}
	return 0, fmt.Errorf("%w: %v has no codec in this version", ErrUnknownKind, env.Kind)
}

func (e *Encoder) data(d *Data) {
	e.uints(d.Seq, uint64(d.Order), d.Dest)
	e.name(d.Service)
	e.uints(uint64(d.FragIndex), uint64(d.FragCount))
	e.bytes(d.Payload)
}

func (e *Encoder) nack(n *Nack) {
	e.uints(n.Source, n.SourceInc, n.Attempt)
	e.array(2 * len(n.Ranges))
	for _, r := range n.Ranges {
		e.uints(r.First, r.Last)
	}
}

func (e *Encoder) session(s *Session) {
	e.enc.EncodeInt(s.Sent)
	e.uints(s.Seq, s.Low)
	e.array(len(s.Peers))
	for _, p := range s.Peers {
		e.array(peerStateFields)
		e.uints(p.ID, p.Inc, p.Seq)
		e.enc.EncodeInt(p.Echo)
		e.enc.EncodeInt(p.Held)
	}
}

// membership encodes the body of a membership kind; bodyFields has already
// rejected the kinds without a codec.
func (e *Encoder) membership(env *Envelope) {
	switch env.Kind {
	case KindJoin:
		e.settings(env.Join.Settings)
	case KindLeave:
		l := &env.Leave
		e.uints(l.Member, l.MemberInc, uint64(l.Reason))
	case KindFlush:
		f := &env.Flush
		e.uints(f.Epoch, f.Attempt, uint64(f.Phase))
		e.members(f.Members)
		e.viewCuts(f.Cuts)
		e.uints(f.Primary)
	case KindFlushOK:
		f := &env.FlushOK
		e.uints(f.Epoch, f.Attempt, f.Initiator, uint64(f.Phase), f.Prior.Epoch, f.Prior.Coord, f.PriorInc, uint64(f.Settings), f.Sent)
		e.cuts(f.Has)
		e.known(&f.Known)
	case KindView:
		e.commit(&env.Commit)
	case KindChunk:
		c := &env.Chunk
		e.uints(c.Message, uint64(c.Index), uint64(c.Count))
		e.bytes(c.Bytes)
	case KindPath:
		e.uints(b2u(env.Path.Unicast))
	case KindFlushEnd:
		e.uints(env.FlushEnd.Epoch, env.FlushEnd.Attempt)
	case KindProof:
		p := &env.Proof
		e.uints(p.Target, p.TargetInc)
		e.enc.EncodeInt(p.Sent)
		e.uints(uint64(p.Flags))
	case KindRefuse:
		r := &env.Refuse
		e.uints(r.Target, r.TargetInc)
		e.name(r.Setting)
		e.bytes(r.Ours)
		e.bytes(r.Theirs)
	}
}

func (e *Encoder) settings(ss []Setting) {
	e.array(len(ss))
	for _, s := range ss {
		e.array(settingFields)
		e.name(s.Name)
		e.bytes(s.Value)
	}
}

func (e *Encoder) members(ms []Member) {
	e.array(len(ms))
	for _, m := range ms {
		e.array(memberFields)
		e.uints(m.ID, m.Inc)
	}
}

func (e *Encoder) commit(c *ViewCommit) {
	e.uints(c.Epoch, c.Attempt)
	e.array(len(c.Members))
	for _, m := range c.Members {
		e.array(viewMemberFields)
		e.uints(m.ID, m.Inc, m.Next)
	}
	e.array(len(c.Left))
	e.uints(c.Left...)
	e.viewCuts(c.Cuts)
	e.uints(c.Primary)
	e.array(len(c.Behind))
	e.uints(c.Behind...)
}

func (e *Encoder) known(k *Known) {
	e.array(3)
	e.primaryView(&k.Last)
	e.array(len(k.Attempts))
	for i := range k.Attempts {
		e.primaryView(&k.Attempts[i])
	}
	e.enc.EncodeBool(k.Behind)
}

func (e *Encoder) primaryView(p *PrimaryView) {
	e.array(primaryViewFields)
	e.uints(p.Gen, p.View.Epoch, p.View.Coord, p.Inc)
	e.members(p.Members)
}

func (e *Encoder) viewCuts(vs []ViewCut) {
	e.array(len(vs))
	for _, v := range vs {
		e.array(viewCutFields)
		e.uints(v.View.Epoch, v.View.Coord, v.Inc)
		e.cuts(v.Cuts)
	}
}

func (e *Encoder) cuts(cs []Cut) {
	e.array(len(cs))
	for _, c := range cs {
		e.array(cutFields)
		e.uints(c.ID, c.Seq)
	}
}

// The msgpack encoder only fails when its writer fails, and appendBuf never
// does, so the helpers below drop the (always nil) errors.

func (e *Encoder) array(n int) { e.enc.EncodeArrayLen(n) }

func (e *Encoder) uints(vs ...uint64) {
	for _, v := range vs {
		e.enc.EncodeUint(v)
	}
}

// bytes writes b as msgpack bin; nil and empty both become an empty bin so
// that decoding never has to tell them apart.
func (e *Encoder) bytes(b []byte) {
	e.enc.EncodeBytesLen(len(b))
	e.buf.b = append(e.buf.b, b...)
}

// name writes a short byte field: nil (one byte) when empty, else bin.
func (e *Encoder) name(b []byte) {
	if len(b) == 0 {
		e.enc.EncodeNil()
		return
	}
	e.bytes(b)
}

// appendBuf is the msgpack encoder's writer: it appends to a slice.
type appendBuf struct{ b []byte }

func (a *appendBuf) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

func (a *appendBuf) WriteByte(c byte) error {
	a.b = append(a.b, c)
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
