package logs

// The fields every line has (docs/logs.md, "The line format"). zerolog
// writes time, level and message itself, and error with Err; the values
// here are zerolog's defaults, which huddle does not change.
const (
	TimeKey    = "time"
	LevelKey   = "level"
	NodeKey    = "node"
	EventKey   = "event"
	MessageKey = "message"
	ErrorKey   = "error" // node.failed, control.error
)

// The values of LevelKey.
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// The fields of the events, in the order of docs/logs.md. The counters
// of node.stats, a field each, are named in one list of their own, the
// node's Counters (node/status.go).
const (
	// node.started
	IncarnationKey   = "incarnation" // also of the peer in peer.* and stream.skipped
	GroupKey         = "group"
	AddrKey          = "addr" // also node.warning, peer.seen, peer.conflict, member.refused
	IfaceKey         = "iface"
	SrcKey           = "src"
	TransportKey     = "transport" // multicast or unicast
	ProfileKey       = "profile"
	HeartbeatMsKey   = "heartbeat_ms"
	SuspectMsKey     = "suspect_ms"
	DatagramSizeKey  = "datagram_size"
	TTLKey           = "ttl"
	LoopbackKey      = "loopback"
	ControlSocketKey = "control_socket"
	MetricsKey       = "metrics" // node.started: the metrics endpoint's address, or "off"

	// node.drop
	RateKey  = "rate"
	FromKey  = "from" // also deliver: the sender
	SeedKey  = "seed"
	BurstKey = "burst"

	// node.stats, then the counters
	WhyKey     = "why"
	ViewKey    = "view" // also membership, messages, elections and the lock
	MembersKey = "members"

	// node.warning, node.stopped
	WhatKey = "what"
	// seal.rejected, key.reloaded, node.started.
	FingerprintKey  = "fingerprint"  // a key's fingerprint
	OursKeyFP       = "ours"         // this node's sealing key's fingerprint ("none" without a key)
	FingerprintsKey = "fingerprints" // the keys in use, the sealing one first
	ReasonKey       = "reason"

	// socket.rcvbuf_capped
	RequestedKey = "requested"
	GrantedKey   = "granted"

	// control.request, control.error
	CmdKey   = "cmd"
	MsKey    = "ms"
	CodeKey  = "code"
	WriteKey = "write"
	PanicKey = "panic"

	// peer.*, stream.skipped
	PeerKey      = "peer" // also mutex.deferred
	RestartedKey = "restarted"
	SilentMsKey  = "silent_ms" // also member.suspected
	StarvedKey   = "starved"   // node.health
	PauseMsKey   = "pause_ms"  // node.health
	BehindKey    = "behind"
	HeldMsKey    = "held_ms" // also mutex.released
	FromSeqKey   = "from_seq"
	CountKey     = "count"
	InViewKey    = "in_view"

	// view.installed, view.flush.started, member.*
	CoordinatorIncarnationKey = "coordinator_incarnation"
	JoinedKey                 = "joined"
	LeftKey                   = "left"
	CrashedKey                = "crashed"
	FlushMsKey                = "flush_ms"
	PriorKey                  = "prior"
	PrimaryKey                = "primary"    // view.installed: the view is the primary component
	GenerationKey             = "generation" // view.installed: its generation as the primary component (0: not primary)
	EpochKey                  = "epoch"
	AttemptKey                = "attempt"
	ProposedKey               = "proposed"
	UnansweredKey             = "unanswered"
	MemberKey                 = "member"
	ByKey                     = "by"
	SettingKey                = "setting"
	OursKey                   = "ours"
	VersionKey                = "version" // peer.version: the peer's wire version
	TheirsKey                 = "theirs"

	// send, deliver
	SeqKey             = "seq"
	OrderKey           = "order"
	ServiceKey         = "service"
	ToKey              = "to"
	LenKey             = "len"
	CRCKey             = "crc"
	FromIncarnationKey = "from_incarnation"
	GSeqKey            = "gseq"
	FinalKey           = "final"

	// election.message, mutex.message (trace), node.config (debug)
	DirKey     = "dir"     // sent or received; peer.path: out (how this node sends to the peer) or in (how it hears it)
	PathKey    = "path"    // peer.path: multicast or unicast
	ContentKey = "content" // the message, decoded: "ELECTION round 3 id 7"
	ConfigKey  = "config"  // node.config: every setting by its TOML key

	// election.*, leader.changed
	AlgorithmKey  = "algorithm"
	RoundKey      = "round"
	InitiatorKey  = "initiator"
	LeaderKey     = "leader"
	DurationMsKey = "duration_ms"
	SentKey       = "sent"
	LateKey       = "late"

	// state.*
	BytesKey = "bytes"
	HashKey  = "hash" // the first 16 bytes of the snapshot's SHA-256, in hex
	HeldKey  = "held" // state.installed: the deliveries held back, handed out after it

	// kv.state (and behind, above)
	KeysKey = "keys"

	// mutex.*
	ClockKey     = "clock"
	WaitMsKey    = "wait_ms"
	MessagesKey  = "messages"
	DatagramsKey = "datagrams"
	LostKey      = "lost"
)
