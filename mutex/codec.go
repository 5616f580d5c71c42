package mutex

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// kind is a mutex message's kind. Append only: the values are on the wire.
type kind uint8

const (
	kindRequest kind = 1 // [1, ts]: the sender wants the lock; ts is its request's Lamport timestamp
	kindReply   kind = 2 // [2, ts]: permission for the receiver's request ts
)

func (k kind) String() string {
	switch k {
	case kindRequest:
		return "REQUEST"
	case kindReply:
		return "REPLY"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// message is a decoded mutex message. The requester's ID is not in it: it
// is the sender the group service names (Receive's from).
type message struct {
	kind kind
	ts   uint64 // a request's timestamp, from 1
}

// maxPayload bounds a payload: two uints of at most 9 bytes each and the
// array header.
const maxPayload = 1 + 2*9

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("mutex: malformed message")

// codec writes and reads payloads, the msgpack array [kind, ts] with
// compact ints (3 to 19 bytes), reusing one msgpack encoder and decoder.
// The zero codec is ready to use; it must not be copied once used. Not
// safe for concurrent use.
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
	_ = c.enc.EncodeArrayLen(2)
	_ = c.enc.EncodeUint(uint64(msg.kind))
	_ = c.enc.EncodeUint(msg.ts)
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
	if err != nil || n != 2 {
		return message{}, fmt.Errorf("%w: not an array of 2 (%d, %v)", errMalformed, n, err)
	}
	var v [2]uint64
	for i := range v {
		if v[i], err = c.uint(); err != nil {
			return message{}, err
		}
	}
	switch {
	case c.r.Len() != 0:
		return message{}, fmt.Errorf("%w: %d bytes after the message", errMalformed, c.r.Len())
	case v[0] != uint64(kindRequest) && v[0] != uint64(kindReply):
		return message{}, fmt.Errorf("%w: unknown kind %d", errMalformed, v[0])
	case v[1] == 0:
		return message{}, fmt.Errorf("%w: timestamp 0", errMalformed)
	}
	return message{kind: kind(v[0]), ts: v[1]}, nil
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
