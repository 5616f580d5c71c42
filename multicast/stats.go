package multicast

// Stats are the engine's counters. Messages are what the layer above sent
// or got (a fragmented message counts once); datagrams are what crossed the
// network.
type Stats struct {
	MsgsSent       uint64 // messages multicast by this node
	BytesSent      uint64 // their payload bytes
	DataDatagrams  uint64 // datagrams of new data sent (KindData and KindBatch)
	BulkDatagrams  uint64 // of those, longer than DatagramSize (Options.BulkSize)
	MsgsDelivered  uint64 // messages delivered to the layer above
	BytesDelivered uint64 // their payload bytes
	Duplicates     uint64 // data or repairs of messages already held

	NacksSent         uint64 // NACK datagrams sent
	NackedSeqs        uint64 // sequence numbers asked for in them
	NacksSuppressed   uint64 // our requests postponed because another member asked first
	NacksRecv         uint64 // NACK datagrams received
	NacksUnanswerable uint64 // requests for messages that are already stable and gone
	NacksAhead        uint64 // requests heard for messages not yet known missing (they overtook the data): ours then waits as if suppressed
	RepairsSent       uint64
	RepairsSuppressed uint64 // our repairs cancelled because another member repaired first
	RepairsRecv       uint64
	GapsDetected      uint64 // messages found missing
	GapsRecovered     uint64 // of those, received later
	Skipped           uint64 // messages given up for good (the source no longer holds them)
	Overrun           uint64 // messages that arrived too far ahead to be buffered
	BadFragments      uint64 // fragments out of place in their source's stream
	TooLarge          uint64 // reassembled messages over the maximum message size, dropped

	SessionsSent uint64
	TailProbes   uint64 // session messages sent early, announcing the last message sent when no more followed
	EarlyAcks    uint64 // session messages sent early, after a quarter of a source's send window arrived
	SessionsRecv uint64
	StaleInc     uint64 // datagrams from an older incarnation of a peer, ignored
	Unhandled    uint64 // datagrams of kinds this layer does not handle

	// Hostile or foreign input, dropped (strangers.go, srm.go).
	ForeignData      uint64 // data, batch and repair datagrams from nodes outside the view (not members, not expected)
	NackRefused      uint64 // NACKs from nodes that are not members of the view: answered with nothing
	RepairBudget     uint64 // repairs not sent: over a NACK's share (maxNackRepairs) or the requester's byte budget
	PeersEvicted     uint64 // strangers forgotten to make room in their full table (MaxStrangers)
	FutureInc        uint64 // datagrams (and expectations) whose incarnation is more than MaxIncSkew ahead of the clock
	Unplaced         uint64 // data of a proposed node (not a member yet) taken before the view placed its stream: held, not delivered, until it does
	PeersUnannounced uint64 // strangers heard whose PeerSeen was held back by the rate limit

	Peers       int       // peers currently live that the engine keeps state for: members, nodes a flush proposes (all without a view)
	Strangers   int       // nodes outside the view heard within the suspect timeout, only heard (at most MaxStrangers)
	Buffered    int       // messages held for delivery or repair, all streams
	BufferBytes int       // their payload bytes
	Unstable    int       // own messages not yet stable (the send window's use)
	Recovery    Histogram // gap detected → message received
	Spread      float64   // the adapted request spread C2, averaged over the sources heard
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	s := e.stats
	s.Strangers = e.strangers.len()
	s.Peers = len(e.peers)
	s.Unstable = e.Unstable()
	s.Buffered, s.BufferBytes = e.own.ring.count, e.own.ring.bytes
	for _, st := range e.streams {
		s.Buffered += st.ring.count
		s.BufferBytes += st.ring.bytes
		s.Spread += st.c2 / float64(len(e.streams))
	}
	return s
}
