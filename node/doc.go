// Package node assembles one huddle node, in two parts (docs/design.md,
// "How the machines talk" and "The node runtime and the Group API").
//
// Core (core.go, core_election.go, core_lock.go, probe.go) is the node's
// protocol stack as a deterministic state machine over datagrams. It owns
// the membership layer (membership.Machine, which owns the multicast
// engine), the leader election (election.Machine), the lock (mutex.Lock)
// and the group probe. Its inputs are Receive, Tick and the requests
// (Multicast, Leave, StartElection, LockRequest, LockRelease, Probe); each
// decodes or applies what came in and routes what the machines hand back
// in one place (route): the messages of the election's, the lock's and
// the probe's services, and the views installed, go to those parts as
// inputs; the messages they hand back go down as multicasts on their
// services; everything else, and their events, go into one ordered list.
// No machine calls another. Its one output is Ready: it packs the turn's
// messages and hands back the datagrams to send and the events, in one
// value, once per turn of the loop. The simulator (internal/sim) drives a
// Core the same way: the node's tests wrap it (simCore) so that the world
// takes its Ready after every step.
//
// Node (node.go, node_send.go, node_protocols.go, node_log.go, status.go,
// drop.go) is the runtime: Run is the loop that owns the transport, the
// wall clock and the timer, drives a Core, logs what it reports and hands
// it to Options.Handle. Other goroutines reach the loop only through
// channels: Multicast, Send and MulticastBatch, and Do (Status, Elect,
// Leader, Lock, Unlock, SetDrop, Probe).
//
// The node runs the protocols and their I/O, nothing else. Programs use
// it through the Group API of the root package huddle, and so do huddle
// run's control socket (cmd/huddle/internal/control) and its experiment workloads
// (cmd/huddle/internal/workload: traffic, the lock used over and over, periodic
// elections): they are clients.
package node
