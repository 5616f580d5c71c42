// Package multicast is huddle's lowest layer: the group socket and the
// reliable per-sender FIFO multicast protocol that runs over it.
//
// Open returns a Conn, a UDP socket joined to an IPv4 multicast group on one
// interface (golang.org/x/net/ipv4), which reads and writes datagrams in
// batches (recvmmsg/sendmmsg on Linux, one at a time elsewhere). Conn and the
// in-memory network's endpoints (multicast/memnet) both implement Transport,
// so nothing above needs to know which one it runs on.
//
// Engine is the protocol core, a deterministic state machine: it takes
// decoded datagrams (Step), time (Tick) and messages to send (Multicast),
// and hands back envelopes to send, events and deliveries (Ready) and its
// next deadline; Pack packs the messages of a turn into datagrams. It runs the session
// protocol of SRM (Floyd et al. 1997, §III-A): every member multicasts a
// session message each heartbeat, carrying timestamps from which every member
// measures its round-trip time to every other; the session messages are also
// the heartbeats from which peers are seen and lost. NACK-based repair,
// stability, flow control, fragmentation and batching build on it.
//
// Package membership's Machine owns and drives it (and package node
// drives that), like this:
//
//	eng := multicast.New(opts, time.Now())
//	for {
//		// a datagram arrived: decode it into env, then
//		eng.Step(now, src, env)
//		// or the deadline passed:
//		eng.Tick(now)
//		// or the layer above sends (ErrWindowFull: wait for stability):
//		seq, err := eng.Multicast(service, payload, wire.FIFO, 0)
//
//		eng.Pack() // once per turn: the turn's messages into datagrams
//		rd := eng.Ready()
//		for _, out := range rd.Envelopes { /* encode and send */ }
//		for _, ev := range rd.Events { /* log */ }
//		for _, d := range rd.Deliveries { /* hand up */ }
//		// sleep until eng.NextDeadline() or the next datagram
//	}
package multicast
