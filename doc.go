// Package huddle is the front door of huddle, a group-communication node
// for LANs: join a group of nodes over IP multicast, multicast to it in
// FIFO, causal, total or safe order, send to one member, receive the views and
// messages of a named service in the order the node delivers them, ask
// for the group's leader and take its lock (docs/design.md, "The node
// runtime and the Group API").
//
//	g, err := huddle.Join(ctx, cfg, log)     // a node of its own, in a view when it returns
//	chat := g.Service("chat")                // a named channel; the election and the lock have theirs
//	events := chat.Events()                  // views and messages from now on, in delivery order
//	chat.Multicast(ctx, []byte("hi"), huddle.Total)
//	for ev := range events {
//		...
//	}
//	g.Leave(ctx)
//
// Join returns once the node is in a view; Start returns at once, while
// it joins (Joined is closed at its first view); StartOn runs a node over
// transports of the caller's, and Network runs groups inside one process,
// for tests and examples. A service's Events channel exists once asked
// for: the service's messages that arrive before are dropped (counted by
// Undeliverable). Besides its services, a Group offers View, Leader and
// Elect, Lock, TryLock and Unlock, Status, SetDrop, Leave, and Done and
// Err for why the node stopped.
//
// Guarantees: virtual synchrony (members that install the same two views
// delivered the same messages in the first), self-inclusion and
// agreement on views, integrity, FIFO per sender, one total order per
// view for Total and Safe messages, and Safe messages delivered only once
// every member holds them. Backpressure comes through contexts: Multicast
// waits for the send window and returns ctx's error when it ends, never
// queueing without bound.
//
// The layers underneath, each a deterministic state machine, are package
// multicast (reliable FIFO multicast, SRM), package membership (views,
// the flush, total and safe order), and packages election and mutex (group
// protocols, fed with their services' messages and the views); package
// node composes them (Core, which routes what each hands back) and runs
// them with sockets and a clock (Node.Run). `huddle run` is this API with
// a command line: its control socket (cmd/huddle/internal/control) and its
// experiment workloads (cmd/huddle/internal/workload) are clients of a Group, like
// any program.
package huddle
