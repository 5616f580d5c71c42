package mutex

import (
	"errors"
	"fmt"

	"github.com/huddle-lan/huddle/internal/wire"
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
	case kindCRequest:
		return "REQUEST"
	case kindGrant:
		return "GRANT"
	case kindRelease, kindTRelease:
		return "RELEASE"
	case kindCState, kindTState:
		return "STATE"
	case kindWant:
		return "WANT"
	case kindPass:
		return "PASS"
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
var maxPayload = wire.MaxUintsPayload(2)

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("mutex: malformed message")

// codec writes and reads payloads, the msgpack array [kind, ts] with
// compact ints (3 to 19 bytes), with the wire format's encoder and
// decoder. The zero codec is ready to use. Not safe for concurrent use.
type codec struct {
	enc *wire.Encoder
	dec *wire.Decoder
}

// append appends msg's encoding to dst.
func (c *codec) append(dst []byte, msg message) []byte {
	if c.enc == nil {
		c.enc = wire.NewEncoder()
	}
	return c.enc.AppendUints(dst, uint64(msg.kind), msg.ts)
}

// decode parses a payload. It trusts nothing: any error wraps
// errMalformed.
func (c *codec) decode(p []byte) (message, error) {
	if c.dec == nil {
		c.dec = wire.NewDecoder()
	}
	var v [2]uint64
	if err := c.dec.DecodeUints(p, v[:]); err != nil {
		return message{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	switch {
	case v[0] != uint64(kindRequest) && v[0] != uint64(kindReply):
		return message{}, fmt.Errorf("%w: unknown kind %d", errMalformed, v[0])
	case v[1] == 0:
		return message{}, fmt.Errorf("%w: timestamp 0", errMalformed)
	}
	return message{kind: kind(v[0]), ts: v[1]}, nil
}

// Describe returns a lock message's content for a trace log line:
// "REQUEST ts 12", or why it does not decode.
func Describe(payload []byte) string {
	var c codec
	if msg, err := c.decode(payload); err == nil {
		return fmt.Sprintf("%v ts %d", msg.kind, msg.ts)
	}
	k, a, b, err := c.decode3(payload, kindCRequest, kindTRelease)
	switch {
	case err != nil:
		return fmt.Sprintf("malformed (%v)", err)
	case k == kindGrant:
		return fmt.Sprintf("GRANT to %d request %d", a, b)
	case k == kindPass:
		return fmt.Sprintf("PASS to %d hops %d", a, b)
	case k == kindCState, k == kindTState:
		return fmt.Sprintf("STATE %d request %d", a, b)
	}
	return fmt.Sprintf("%v request %d", k, a)
}
