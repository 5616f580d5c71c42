// Package node assembles one huddle node, in two parts (docs/design.md,
// "How the machines talk" and "The node runtime and the Group API").
//
// Core (core.go, core_election.go, core_lock.go) is the node's protocol
// stack as a deterministic state machine over datagrams. It owns the
// membership layer (membership.Machine, which owns the multicast engine),
// the leader election (election.Machine) and the lock (mutex.Lock). It
// decodes what arrives (Receive), applies the built-in drop, steps the
// membership layer, and routes what the machines hand back in one place
// (route): the messages of the election's and the lock's services, and
// the views installed, go to those machines as inputs; the messages they
// hand back go down as multicasts on their services; everything else, and
// their events, go into one ordered list of Events (Ready). No machine
// calls another. TakeOutboxes packs a turn's messages and returns its
// datagrams. The simulator (internal/sim) drives a Core directly.
//
// Node (node.go, node_send.go, node_protocols.go, node_log.go, status.go,
// drop.go) is the runtime: Run is the loop that owns the transport, the
// wall clock and the timer, drives a Core, logs what it reports and hands
// it to Options.Handle. Other goroutines reach the loop only through
// channels: Multicast, Send and MulticastBatch, and Do (Status, Elect,
// Leader, Lock, Unlock, SetDrop).
//
// The node runs the protocols and their I/O, nothing else. Programs use
// it through the Group API of the root package huddle, and so do huddle
// run's control socket (internal/control) and its experiment workloads
// (internal/workload: traffic, the lock used over and over, periodic
// elections): they are clients.
package node
