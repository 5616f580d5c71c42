package wire

import (
	"errors"
	"hash/fnv"
)

// MagicVersion is the first field of every datagram: 'H' (0x48) in the high
// byte, the wire version in the low byte. A datagram with another value is
// not huddle's, or is from an incompatible version, and is dropped.
const MagicVersion = 0x48<<8 | Version

// Version is the wire format version. It changes when an existing kind's
// fields change; new kinds only append to the Kind list.
const Version = 4

// MaxSeq bounds sequence numbers: a datagram carrying one at or above it is
// malformed. No sender sends 2^62 messages, and the bound leaves room for
// arithmetic on sequence numbers that can never overflow.
const MaxSeq = 1 << 62

// MaxAttempt bounds a NACK's attempt number (a requester backs off a few
// times, not thousands).
const MaxAttempt = 255

// HeaderFields is the number of array elements before the kind's fields.
const HeaderFields = 7

// Kind says what a datagram carries. Kind numbers are append-only: a number,
// once released, keeps its meaning forever.
type Kind uint8

// Message kinds. KindOrder and KindMerge are reserved: they have no fields
// yet and decode as ErrUnknownKind.
const (
	KindData     Kind = 1  // one application or protocol message from its source
	KindBatch    Kind = 2  // several data messages of one source in one datagram
	KindNack     Kind = 3  // a request for missing data (SRM)
	KindRepair   Kind = 4  // a retransmission, by the source or any holder (SRM)
	KindSession  Kind = 5  // periodic receive state; heartbeat; delay estimation
	KindJoin     Kind = 6  // membership: ask to be admitted
	KindLeave    Kind = 7  // membership: a member leaves, or is reported suspect
	KindFlush    Kind = 8  // membership: stop sending, report what you hold
	KindFlushOK  Kind = 9  // membership: flush reply
	KindView     Kind = 10 // membership: install a view
	KindOrder    Kind = 11 // total order records from the sequencer
	KindMerge    Kind = 12 // membership: coordinator beacon for merging
	KindRefuse   Kind = 13 // membership: the coordinator refuses a joiner
	KindChunk    Kind = 14 // a piece of a membership message too large for one datagram
	KindPath     Kind = 15 // sent by unicast: how the sender hears the receiver (per-peer fallback)
	KindFlushEnd Kind = 16 // membership: the initiator ends its flush without a view (nothing changed)
	KindProof    Kind = 17 // membership: a coordinator asks a node it would take in for proof that it can take part, or the answer
	kindLimit    Kind = 18 // first unassigned number
)

var kindNames = [...]string{
	KindData: "data", KindBatch: "batch", KindNack: "nack", KindRepair: "repair",
	KindSession: "session", KindJoin: "join", KindLeave: "leave", KindFlush: "flush",
	KindFlushOK: "flush-ok", KindView: "view", KindOrder: "order", KindMerge: "merge",
	KindRefuse: "refuse", KindChunk: "chunk", KindPath: "path", KindFlushEnd: "flush-end",
	KindProof: "proof",
}

func (k Kind) String() string {
	if k > 0 && k < kindLimit {
		return kindNames[k]
	}
	return "kind(" + itoa(uint64(k)) + ")"
}

// Errors returned by Decode. Every decoding failure wraps ErrMalformed, so
// that callers can count all of them with one errors.Is; ErrNotHuddle and
// ErrUnknownKind are datagrams this version cannot read.
var (
	ErrMalformed   = errors.New("wire: malformed datagram")
	ErrNotHuddle   = errors.New("wire: not a huddle datagram or another wire version")
	ErrUnknownKind = errors.New("wire: unknown message kind")

	// Not errors in the datagram: what Decoder.Filter screens out.
	ErrForeignGroup = errors.New("wire: datagram of another group")
	ErrOwnEcho      = errors.New("wire: this node's own datagram, looped back")
)

// VersionError is a huddle datagram of another wire version: Decode
// returns it with what every version keeps in the same place, the group
// and the sender's ID, and it wraps ErrNotHuddle.
type VersionError struct {
	Version uint8  // the datagram's wire version
	Group   uint32 // its group (Group of its header)
	From    uint64 // its sender's ID
}

func (e *VersionError) Error() string {
	return "wire: a datagram of wire version " + itoa(uint64(e.Version)) + " (this node reads version " + itoa(Version) + ")"
}

// Unwrap makes a VersionError an ErrNotHuddle.
func (e *VersionError) Unwrap() error { return ErrNotHuddle }

// ViewID names a view: its epoch and its coordinator. View IDs are totally
// ordered by epoch, then coordinator. The zero ViewID means "no view yet".
type ViewID struct {
	Epoch uint64
	Coord uint64
}

// Less reports whether v is ordered before w.
func (v ViewID) Less(w ViewID) bool {
	return v.Epoch < w.Epoch || v.Epoch == w.Epoch && v.Coord < w.Coord
}

// String formats v as "epoch.coordinator", as in the logs.
func (v ViewID) String() string { return itoa(v.Epoch) + "." + itoa(v.Coord) }

// Header is common to every datagram:
// [magic+version, group hash, from, incarnation, kind, view epoch, view coordinator, ...kind fields].
type Header struct {
	Group uint32 // GroupHash of the group name
	From  uint64 // sender's node ID
	Inc   uint64 // sender's incarnation
	Kind  Kind
	View  ViewID // the sender's current view; zero before it has one
}

// Order says how a data message is delivered.
type Order uint8

// Delivery orders. The numbers are on the wire.
const (
	FIFO  Order = 0 // per-sender order
	Total Order = 1 // one order for all members, also FIFO
	Safe  Order = 2 // total, and only once every member has it
	// Record marks an order record: the view's sequencer assigning total
	// order to messages. Its payload is an OrderRecord. Membership sends
	// and consumes these itself; applications never see one.
	Record Order = 3
	// Causal: delivered once everything its sender had delivered or sent
	// before it has been delivered (Birman's CBCAST). Its payload begins
	// with the sender's causal header (membership's causal.go).
	Causal Order = 4
)

// String names the order as logs and flags spell it.
func (o Order) String() string {
	switch o {
	case FIFO:
		return "fifo"
	case Total:
		return "total"
	case Safe:
		return "safe"
	case Record:
		return "record"
	case Causal:
		return "causal"
	}
	return "order(" + itoa(uint64(o)) + ")"
}

// Data is one message in its source's reliable stream:
// [seq, order, dest, service, frag index, frag count, payload].
type Data struct {
	Seq       uint64 // 1, 2, 3 … per source incarnation
	Order     Order
	Dest      uint64 // addressee's node ID; 0 = every member
	Service   []byte // named service ("" = application); aliases the datagram after Decode
	FragIndex uint32 // 0-based fragment number of a fragmented message
	FragCount uint32 // fragments of the message; 0 or 1 = not fragmented
	Payload   []byte // aliases the datagram after Decode
}

const dataFields = 7

// SeqRange is an inclusive range of sequence numbers.
type SeqRange struct{ First, Last uint64 }

// Nack asks for missing messages of one source incarnation:
// [source, source incarnation, attempt, [first, last, first, last, ...]].
type Nack struct {
	Source    uint64
	SourceInc uint64
	// Attempt is 0 for a first request and counts the requests for the
	// same data heard or sent before (the requester's back-off). A repairer
	// in hold-down ignores first requests, which may have crossed its repair
	// in flight, but answers later ones: they mean the repair was lost.
	Attempt uint64
	Ranges  []SeqRange
}

// Repair is a retransmission of Source's message, sent by From (the source
// or any member holding it):
// [source, source incarnation, view epoch, view coordinator, ...data fields].
type Repair struct {
	Source    uint64
	SourceInc uint64
	// View is the view the message was first sent in. Fresh data takes it
	// from the header, but a repair's header is the repairer's, whose view
	// may have moved on since.
	View ViewID
	Data Data
}

const repairFields = 4 + dataFields

// PeerState is what a session message says about one peer it hears:
// [id, incarnation, seq, echo, held].
type PeerState struct {
	ID   uint64
	Inc  uint64
	Seq  uint64 // highest sequence received in order from that peer
	Echo int64  // the Sent time of the last session message heard from it
	Held int64  // nanoseconds between hearing that message and sending this one
}

const peerStateFields = 5

// Session is the periodic session message (SRM §III-A): [sent, seq, low, [peer states...]].
// A receiver of a session message that echoes its own Sent time computes the
// round trip as now - Echo - Held.
type Session struct {
	Sent  int64  // sender's clock, Unix nanoseconds
	Seq   uint64 // highest sequence number the sender has sent
	Low   uint64 // lowest sequence number the sender still holds for repair; 0 = none
	Peers []PeerState
}

// Envelope is a decoded datagram: the header and the body of its kind. Only
// the body that Kind names is meaningful. Decoding into the same Envelope
// reuses its slices, so a steady stream decodes without allocating.
type Envelope struct {
	Header
	Data     Data       // KindData
	Batch    []Data     // KindBatch
	Nack     Nack       // KindNack
	Repair   Repair     // KindRepair
	Session  Session    // KindSession
	Join     Join       // KindJoin
	Leave    Leave      // KindLeave
	Flush    Flush      // KindFlush
	FlushOK  FlushOK    // KindFlushOK
	Commit   ViewCommit // KindView (Header.View is the sender's current view)
	Refuse   Refuse     // KindRefuse
	Chunk    Chunk      // KindChunk
	Path     Path       // KindPath
	FlushEnd FlushEnd   // KindFlushEnd
	Proof    Proof      // KindProof

	// To is not on the wire: the one node an outgoing envelope is for
	// (a NACK to its source, a repair to its requester, when the
	// transport sends to each member apart), 0 for the whole group.
	// Decoding leaves it 0.
	To uint64
}

// GroupHash is the 32-bit FNV-1a hash of a group name, carried in every
// datagram so that groups sharing an address ignore each other cheaply.
func GroupHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// NewEnvelope returns an Envelope whose data-path slices (batch, NACK
// ranges, session peers) can hold everything a datagram of up to maxDatagram
// bytes can carry, so that decoding the steady stream into it never
// allocates. The membership kinds' lists are left unsized: they come a few
// per view change, and presizing them all would cost several times the
// rest. Any Envelope works with Decode; an unsized slice grows on demand, by
// no more than the datagram's contents can justify, and is reused after.
func NewEnvelope(maxDatagram int) *Envelope {
	return &Envelope{
		Batch:   make([]Data, 0, maxDatagram/minDataBytes),
		Nack:    Nack{Ranges: make([]SeqRange, 0, maxDatagram/minRangeBytes)},
		Session: Session{Peers: make([]PeerState, 0, maxDatagram/minPeerStateBytes)},
	}
}
