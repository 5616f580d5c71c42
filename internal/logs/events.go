package logs

// The events a node logs, by the value of their EventKey field. Each has
// a row in the Events tables of docs/logs.md, which says its level and
// fields.
//
// This file declares the event names and nothing else: docs/docs_test.go
// reads its constants to check docs/logs.md against them.
const (
	// The node.
	NodeStarted        = "node.started"
	NodeConfig         = "node.config"
	NodeDrop           = "node.drop"
	NodeStats          = "node.stats"
	NodeWarning        = "node.warning"
	NodeStopped        = "node.stopped"
	NodeFailed         = "node.failed"
	SocketRcvbufCapped = "socket.rcvbuf_capped"
	// NodeHealth: this node found itself starved, or runs freely again.
	NodeHealth = "node.health"

	// The group key.
	SealRejected = "seal.rejected"
	KeyReloaded  = "key.reloaded"

	// The control socket.
	ControlRequest = "control.request"
	ControlError   = "control.error"

	// Peers and the multicast layer.
	PeerSeen      = "peer.seen"
	PeerLost      = "peer.lost"
	PeerVersion   = "peer.version"
	PeerLagging   = "peer.lagging"
	PeerConflict  = "peer.conflict"
	PeerPath      = "peer.path"
	StreamSkipped = "stream.skipped"

	// Membership.
	ViewInstalled    = "view.installed"
	ViewFlushStarted = "view.flush.started"
	// ViewUnchanged: a view change this node ran ended without a view,
	// because only the nodes it was to take in did not answer.
	ViewUnchanged   = "view.flush.unchanged"
	MemberSuspected = "member.suspected"
	MemberExcluded  = "member.excluded"
	MemberLeft      = "member.left"
	MemberRefused   = "member.refused"
	// OrderTaken: total order's sequencer handed this node the order
	// (sequencer = "moving"): it sends alone.
	OrderTaken = "order.taken"

	// Messages, with trace_deliveries.
	Send    = "send"
	Deliver = "deliver"

	// Elections.
	ElectionStarted = "election.started"
	ElectionWon     = "election.won"
	LeaderChanged   = "leader.changed"
	ElectionDone    = "election.done"
	ElectionRound   = "election.round"
	ElectionMessage = "election.message"

	// The lock.
	MutexRequested = "mutex.requested"
	MutexAcquired  = "mutex.acquired"
	MutexReleased  = "mutex.released"
	MutexWithdrawn = "mutex.withdrawn"
	MutexDeferred  = "mutex.deferred"
	MutexMessage   = "mutex.message"

	// State transfer.
	StateSent      = "state.sent"
	StateInstalled = "state.installed"
	StateCurrent   = "state.current"
	StateFailed    = "state.failed"

	// The experiment's replicated key-value store (huddle run --kv-keys).
	KVState = "kv.state"
)
