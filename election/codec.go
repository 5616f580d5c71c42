package election

import (
	"errors"
	"fmt"

	"github.com/huddle-lan/huddle/internal/wire"
)

// kind is an election message's kind. Append only: the values are on the
// wire.
type kind uint8

const (
	kindElection    kind = 1 // ring: [1, round, candidate]; bully: [1, round, sender]
	kindElected     kind = 2 // ring: [2, round, leader]
	kindAnswer      kind = 3 // bully: [3, round, sender]
	kindCoordinator kind = 4 // bully: [4, round, leader], sent by the leader
	// The round's accounting, not part of the algorithms (nor of their
	// counts): each member tells the leader how many messages it sent in
	// the round once it is over there, and the leader tells every member
	// the total. A node of an earlier release counts them as malformed.
	kindTally  kind = 5 // [5, round, messages this member sent in the round]
	kindResult kind = 6 // [6, round, the round's messages across the group], to every member
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
	case kindTally:
		return "TALLY"
	case kindResult:
		return "RESULT"
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
var maxPayload = wire.MaxUintsPayload(3)

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("election: malformed message")

// codec writes and reads payloads, the msgpack array [kind, round, id]
// with compact ints (4 to 28 bytes), with the wire format's encoder and
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
	return c.enc.AppendUints(dst, uint64(msg.kind), msg.round, msg.id)
}

// decode parses a payload. It trusts nothing: any error wraps
// errMalformed.
func (c *codec) decode(p []byte) (message, error) {
	if c.dec == nil {
		c.dec = wire.NewDecoder()
	}
	var v [3]uint64
	if err := c.dec.DecodeUints(p, v[:]); err != nil {
		return message{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	msg := message{kind: kind(v[0]), round: v[1], id: v[2]}
	switch {
	case v[0] < uint64(kindElection) || v[0] > uint64(kindResult):
		return message{}, fmt.Errorf("%w: unknown kind %d", errMalformed, v[0])
	case msg.kind >= kindTally && msg.round != 0:
		return msg, nil // a count, which may be 0
	case msg.round == 0 || msg.id == 0:
		return message{}, fmt.Errorf("%w: round %d, id %d", errMalformed, msg.round, msg.id)
	}
	return msg, nil
}

// Describe returns an election message's content for a trace log line:
// "ELECTION round 3 id 7" (the id is the candidate, the leader or the
// sender, by kind), or why it does not decode.
func Describe(payload []byte) string {
	var c codec
	msg, err := c.decode(payload)
	if err != nil {
		return fmt.Sprintf("malformed (%v)", err)
	}
	return fmt.Sprintf("%v round %d id %d", msg.kind, msg.round, msg.id)
}
