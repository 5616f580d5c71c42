package ping

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// The datagram, big-endian, 24 bytes and the sender's ID:
//
//	0  magic "HPNG"
//	4  version (1)
//	5  kind (Kind)
//	6  ID length, 1 to MaxIDLen
//	7  reserved, sent as 0, ignored
//	8  seq: the probe's number; an echo carries the probe's
//	12 sent: when the probe left, in nanoseconds on the prober's own clock
//	   (since it started); an echo carries the probe's back unchanged
//	20 peers: how many peers the sender hears
//	22 reserved, sent as 0, ignored
//	24 ID, UTF-8
//
// Nothing in it is secret or trusted: a datagram only ever adds a peer to
// the table (bounded) and earns one echo of the same size.
const (
	magic     = "HPNG"
	version   = 1
	headerLen = 24
	// MaxIDLen is the longest ID in bytes.
	MaxIDLen = 64
	// MaxDatagram is the longest valid datagram.
	MaxDatagram = headerLen + MaxIDLen
)

// Kind says what a datagram is.
type Kind uint8

const (
	ProbeMulticast Kind = 1 // a probe to the group
	ProbeUnicast   Kind = 2 // a probe to one peer
	EchoMulticast  Kind = 3 // the answer to a ProbeMulticast, by unicast
	EchoUnicast    Kind = 4 // the answer to a ProbeUnicast, by unicast
	// Done says the sender sent its last probe: it answers a while longer,
	// then leaves. Sent to the group and to each peer every interval until
	// it leaves, so that peers neither wait for it nor call it silent.
	Done Kind = 5
)

func (k Kind) String() string {
	switch k {
	case ProbeMulticast:
		return "multicast probe"
	case ProbeUnicast:
		return "unicast probe"
	case EchoMulticast:
		return "multicast echo"
	case EchoUnicast:
		return "unicast echo"
	case Done:
		return "done"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// Probe is one datagram of huddle ping, whatever its kind.
type Probe struct {
	Kind  Kind
	Seq   uint32
	Sent  uint64 // nanoseconds on the prober's clock; see the layout above
	Peers uint16 // how many peers the sender hears
	ID    string // the sender's name
}

// Errors of Decode. ErrVersion is apart from ErrMalformed: a pinger of
// another version on the same port is a fact worth telling, not noise.
var (
	ErrMalformed = errors.New("not a huddle ping datagram")
	ErrVersion   = errors.New("a huddle ping datagram of another version")
)

// Append appends p's encoding to b. p.ID must pass CheckID.
func (p Probe) Append(b []byte) []byte {
	b = append(b, magic...)
	b = append(b, version, byte(p.Kind), byte(len(p.ID)), 0)
	b = binary.BigEndian.AppendUint32(b, p.Seq)
	b = binary.BigEndian.AppendUint64(b, p.Sent)
	b = binary.BigEndian.AppendUint16(b, p.Peers)
	b = append(b, 0, 0)
	return append(b, p.ID...)
}

// Decode parses one datagram. It checks everything a sender controls: the
// magic, the version, the kind, that the length is exactly the header and
// the ID, and that the ID is one CheckID accepts (it is printed on
// terminals). The error wraps ErrMalformed or ErrVersion.
func Decode(b []byte) (Probe, error) {
	if len(b) < headerLen {
		return Probe{}, fmt.Errorf("%w: %d bytes, fewer than the %d-byte header", ErrMalformed, len(b), headerLen)
	}
	if string(b[:4]) != magic {
		return Probe{}, fmt.Errorf("%w: magic %q", ErrMalformed, b[:4])
	}
	if b[4] != version {
		return Probe{}, fmt.Errorf("%w: version %d (this is %d)", ErrVersion, b[4], version)
	}
	p := Probe{
		Kind:  Kind(b[5]),
		Seq:   binary.BigEndian.Uint32(b[8:]),
		Sent:  binary.BigEndian.Uint64(b[12:]),
		Peers: binary.BigEndian.Uint16(b[20:]),
	}
	if p.Kind < ProbeMulticast || p.Kind > Done {
		return Probe{}, fmt.Errorf("%w: %v", ErrMalformed, p.Kind)
	}
	if n := int(b[6]); len(b) != headerLen+n {
		return Probe{}, fmt.Errorf("%w: %d bytes for an ID of %d", ErrMalformed, len(b), n)
	}
	p.ID = string(b[headerLen:])
	if err := CheckID(p.ID); err != nil {
		return Probe{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return p, nil
}

// CheckID says whether id can name a pinger: 1 to MaxIDLen bytes of UTF-8,
// letters, digits, punctuation and symbols, no spaces or control
// characters (IDs from the network are printed as they are).
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("empty ID")
	case len(id) > MaxIDLen:
		return fmt.Errorf("ID of %d bytes, more than %d", len(id), MaxIDLen)
	case !utf8.ValidString(id):
		return errors.New("ID is not UTF-8")
	}
	for _, r := range id {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return fmt.Errorf("ID has the character %U; allowed are letters, digits, punctuation and symbols", r)
		}
	}
	return nil
}
