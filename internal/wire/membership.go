package wire

// The membership layer's messages. As in a session's peer list, every list
// element is an array of its own.

// Member is one member of a view: [id, incarnation].
type Member struct{ ID, Inc uint64 }

const memberFields = 2

// ViewMember is a member of a new view and the first sequence number of its
// stream in that view: [id, incarnation, next].
type ViewMember struct{ ID, Inc, Next uint64 }

const viewMemberFields = 3

// Cut is how far one sender's stream goes: [id, seq].
type Cut struct{ ID, Seq uint64 }

const cutFields = 2

// ViewCut is the cut of one prior view: [view epoch, view coordinator,
// coordinator incarnation, [cut, ...]]. A coordinator that restarts counts
// epochs afresh: its incarnation tells its views from its earlier life's.
type ViewCut struct {
	View ViewID
	Inc  uint64 // the view's coordinator's incarnation
	Cuts []Cut
}

const viewCutFields = 4

// Setting is one protocol-relevant setting a joiner declares: [name, value].
// Name and Value alias the datagram after Decode.
type Setting struct{ Name, Value []byte }

const settingFields = 2

// Join (KindJoin) asks the coordinator to admit the sender: [[setting, ...]].
// The settings let the coordinator refuse a joiner that would not interoperate.
type Join struct{ Settings []Setting }

// Reasons for a Leave. The numbers are on the wire.
const (
	LeaveGraceful = 0 // the member itself leaves
	LeaveSuspect  = 1 // the sender suspects the member has crashed
	LeaveLagging  = 2 // the sender finds the member too far behind
)

// Leave (KindLeave) asks for a member's exclusion:
// [member, member incarnation, reason].
type Leave struct {
	Member    uint64
	MemberInc uint64
	Reason    uint8 // LeaveGraceful, LeaveSuspect or LeaveLagging
}

// FlushPhase is the round of a flush. The numbers are on the wire.
type FlushPhase uint8

// Flush phases.
const (
	FlushState FlushPhase = 0 // stop sending, report what you hold
	FlushCut   FlushPhase = 1 // here is the cut; get up to it
)

// Flush (KindFlush) comes from the flush's initiator (the header's From):
// [epoch, attempt, phase, [member, ...], [viewcut, ...]]. Members is the
// proposed view's membership; Cuts is empty in FlushState.
type Flush struct {
	Epoch   uint64 // epoch of the proposed view
	Attempt uint64 // counts the initiator's tries at that epoch
	Phase   FlushPhase
	Members []Member
	Cuts    []ViewCut
	// Primary is, in FlushCut, the generation the proposed view will have
	// as the primary component, 0 when it will not be primary: each
	// participant records the attempt before it confirms the cut.
	Primary uint64
}

// FlushOK (KindFlushOK) is a participant's reply to a Flush:
// [epoch, attempt, initiator, phase, prior epoch, prior coordinator,
// prior coordinator incarnation, settings, sent, [cut, ...], known].
type FlushOK struct {
	Epoch     uint64 // the Flush's epoch and attempt, echoed
	Attempt   uint64
	Initiator uint64 // the Flush's sender
	Phase     FlushPhase
	Prior     ViewID // the participant's view before this one
	PriorInc  uint64 // the incarnation of that view's coordinator
	Settings  uint32 // a 32-bit hash of the participant's protocol settings
	Sent      uint64 // the participant's own highest sent seq
	// Has is, in FlushState, the highest seq held in order of each sender of
	// the prior view; in FlushCut it is empty: the reply itself says that
	// the participant holds everything up to the cut.
	Has []Cut
	// Known is, in FlushState, what the participant knows of the primary
	// component (empty in FlushCut).
	Known Known
}

// PrimaryView is a primary view, or an attempt at one: [generation, epoch,
// coordinator, coordinator incarnation, [member, ...]]. Generations
// count the primary views: each is one more than the last primary its
// members knew. A zero Gen is none.
type PrimaryView struct {
	Gen     uint64
	View    ViewID
	Inc     uint64
	Members []Member
}

const primaryViewFields = 5

// Known is what a member knows of the primary component: [last primary,
// [attempt, ...], behind]. Attempts are the primary views it confirmed the
// cut of since Last without seeing them installed: some member may have.
// Behind says its replicated state is not yet the group's (a state
// transfer to it has not finished).
type Known struct {
	Last     PrimaryView
	Attempts []PrimaryView
	Behind   bool
}

// MaxPrimaryAttempts bounds a Known's attempts.
const MaxPrimaryAttempts = 8

// ViewCommit (KindView) installs the view (Epoch, the header's From):
// [epoch, attempt, [viewmember, ...], [left id, ...], [viewcut, ...],
// primary, [behind id, ...]].
// Left lists the members that left gracefully; the others missing from the
// new view crashed or were excluded.
type ViewCommit struct {
	Epoch   uint64
	Attempt uint64
	Members []ViewMember
	Left    []uint64
	Cuts    []ViewCut
	Primary uint64 // the view's generation as the primary component, 0: not primary
	// Behind lists the members whose replicated state is not the group's:
	// they take it by state transfer from the view's first other member.
	Behind []uint64
}

// Path (KindPath) tells its receiver, by unicast, how its sender hears
// it: [unicast]. Unicast 1 says "your multicast does not reach me, but
// this unicast path does: send to me by unicast too"; 0 says multicast
// reaches it again. A node in multicast mode sends it to a peer whose
// unicast probes it hears and whose multicast it does not (the
// per-peer fallback, docs/design.md).
type Path struct {
	Unicast bool
}

// FlushEnd (KindFlushEnd) ends the flush (Epoch, Attempt, the header's
// From) without a view: [epoch, attempt]. Its initiator sends it when the
// flush would install a view of the very members the view has (the nodes
// it was to take in did not answer): each participant goes on in its view
// as when it abandons a flush.
type FlushEnd struct {
	Epoch, Attempt uint64
}

// Refuse (KindRefuse) is the coordinator's answer to a joiner it will not
// admit: [target, target incarnation, setting, ours, theirs]. Setting names
// the setting that differs; "id" means a live node already has the joiner's
// ID, "members" that the group is full. Setting, Ours and Theirs alias the
// datagram after Decode.
type Refuse struct {
	Target    uint64
	TargetInc uint64
	Setting   []byte
	Ours      []byte
	Theirs    []byte
}

// Chunk (KindChunk) is one piece of a membership message too large for
// one datagram (a large group's flush, flush reply or view commit):
// [message, index, count, bytes]. The pieces' bytes, in index order, are
// the whole message's encoding, header included; each piece travels (and
// is sealed) as a datagram of its own. Message counts the sender's
// chunked messages in its incarnation. Bytes aliases the datagram after
// Decode.
type Chunk struct {
	Message      uint64
	Index, Count uint32
	Bytes        []byte
}

// MaxChunks is the most pieces one message may take: with 1400-byte
// datagrams about 43 kB, a view commit of several hundred members.
const MaxChunks = 32

// ChunkOverhead is the most a piece's datagram adds to its bytes: a
// header, the three numbers and the bytes' length.
const ChunkOverhead = MaxHeader + 9 + 1 + 1 + 5

// ChunkedMax is the largest message that fits MaxChunks pieces in
// datagrams of datagramSize bytes.
func ChunkedMax(datagramSize int) int { return MaxChunks * max(0, datagramSize-ChunkOverhead) }

// Smallest encodings the decoder accepts, which bound how many elements a
// list can claim: an array header, then one byte per int or empty byte
// field; a view cut's own cuts list is at least an empty array.
const (
	minMemberBytes     = 1 + memberFields
	minViewMemberBytes = 1 + viewMemberFields
	minCutBytes        = 1 + cutFields
	minViewCutBytes    = 1 + viewCutFields
	minSettingBytes    = 1 + settingFields
	minLeftBytes       = 1
	minPrimaryBytes    = 1 + primaryViewFields
)

// Proof (KindProof) asks a node outside the view for proof that it can
// take part in a view change, or gives it: [target, target incarnation,
// sent, flags]. A coordinator asks each node it would merge or admit, the
// way it would send the flush; the target answers at once with a Proof of
// its own that names the coordinator, echoes Sent and sets ProofAnswer,
// and ProofStarved if it finds itself starved (docs/design.md, "A merge
// waits for proof"). An answer in time shows that each can hear the
// other, lately.
type Proof struct {
	Target, TargetInc uint64
	Sent              int64 // the asker's clock, Unix nanoseconds; echoed by the answer
	Flags             uint8
}

// Proof flags.
const (
	ProofAnswer  uint8 = 1 << iota // this proof answers a question that named its sender
	ProofStarved                   // the answerer finds itself starved (local health)
	proofFlags   = ProofAnswer | ProofStarved
)
