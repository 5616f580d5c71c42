package election

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// kind is an election message's kind. Append only: the values are on the
// wire.
type kind uint8

const (
	kindElection    kind = 1 // ring: [1, round, candidate]; bully: [1, round, sender]
	kindElected     kind = 2 // ring: [2, round, leader]
	kindAnswer      kind = 3 // bully: [3, round, sender]
	kindCoordinator kind = 4 // bully: [4, round, leader], sent by the leader
)

func (k kind) String() string {
	switch k {
	case kindElection:
		return "ELECTION"
	case kindElected:
		return "ELECTED"
	case kindAnswer:
		return "ANSWER"
	case kindCoordinator:
		return "COORDINATOR"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// message is a decoded election message.
type message struct {
	kind  kind
	round uint64 // from 1
	id    uint64 // a node, not 0
}

// maxPayload bounds a payload: three uints of at most 9 bytes each and the
// array header.
const maxPayload = 1 + 3*9

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("election: malformed message")

// codec writes and reads payloads, the msgpack array [kind, round, id]
// with compact ints (4 to 20 bytes), reusing one msgpack encoder and
// decoder. The zero codec is ready to use; it must not be copied once
// used. Not safe for concurrent use.
type codec struct {
	w   appendBuf
	enc *msgpack.Encoder
	r   bytes.Reader
	dec *msgpack.Decoder
}

// init makes the msgpack encoder and decoder on first use: they point
// into c, so c must be at its final address (inside the Machine).
func (c *codec) init() {
	c.enc = msgpack.NewEncoder(&c.w)
	c.enc.UseCompactInts(true)
	c.dec = msgpack.NewDecoder(&c.r)
}

// append appends msg's encoding to dst.
func (c *codec) append(dst []byte, msg message) []byte {
	if c.enc == nil {
		c.init()
	}
	c.w.b = dst
	// appendBuf never fails, so neither does the encoder.
	_ = c.enc.EncodeArrayLen(3)
	_ = c.enc.EncodeUint(uint64(msg.kind))
	_ = c.enc.EncodeUint(msg.round)
	_ = c.enc.EncodeUint(msg.id)
	out := c.w.b
	c.w.b = nil
	return out
}

// decode parses a payload. It trusts nothing: any error wraps
// errMalformed.
func (c *codec) decode(p []byte) (message, error) {
	if c.dec == nil {
		c.init()
	}
	if len(p) > maxPayload {
		return message{}, fmt.Errorf("%w: %d bytes, at most %d", errMalformed, len(p), maxPayload)
	}
	c.r.Reset(p)
	c.dec.ResetReader(&c.r)
	n, err := c.dec.DecodeArrayLen()
	if err != nil || n != 3 {
		return message{}, fmt.Errorf("%w: not an array of 3 (%d, %v)", errMalformed, n, err)
	}
	var v [3]uint64
	for i := range v {
		if v[i], err = c.uint(); err != nil {
			return message{}, err
		}
	}
	msg := message{kind: kind(v[0]), round: v[1], id: v[2]}
	switch {
	case c.r.Len() != 0:
		return message{}, fmt.Errorf("%w: %d bytes after the message", errMalformed, c.r.Len())
	case v[0] < uint64(kindElection) || v[0] > uint64(kindCoordinator):
		return message{}, fmt.Errorf("%w: unknown kind %d", errMalformed, v[0])
	case msg.round == 0 || msg.id == 0:
		return message{}, fmt.Errorf("%w: round %d, id %d", errMalformed, msg.round, msg.id)
	}
	return msg, nil
}

// uint reads an unsigned int as a compact encoder writes it: msgpack's
// DecodeUint64 also takes negative ints, nil and (with a cast) others.
func (c *codec) uint() (uint64, error) {
	code, err := c.dec.PeekCode()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if code > msgpcode.PosFixedNumHigh && (code < msgpcode.Uint8 || code > msgpcode.Uint64) {
		return 0, fmt.Errorf("%w: code %#x where an unsigned int belongs", errMalformed, code)
	}
	v, err := c.dec.DecodeUint64()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errMalformed, err)
	}
	return v, nil
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
