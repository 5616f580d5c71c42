// Package huddle is the front door of huddle, a group-communication node
// for LANs: join a group of nodes over IP multicast, multicast to it in
// FIFO, total or safe order, send to one member, receive the views and
// messages of a named service in the order the node delivers them, ask
// for the group's leader and take its lock (docs/design.md, "The node
// runtime and the Group API").
//
//	g, err := huddle.Join(ctx, cfg, log)     // a node of its own, in a view when it returns
//	chat := g.Service("chat")                // a named channel; the election and the lock have theirs
//	chat.Multicast(ctx, []byte("hi"), huddle.Total)
//	for ev := range chat.Events() {          // views and messages, in delivery order
//		...
//	}
//	g.Leave(ctx)
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
// protocols over the membership layer); package node composes them (Core)
// and runs them with sockets and a clock (Run). `huddle run` is this API
// with a command line. Network runs groups inside one process, for tests
// and examples.
package huddle
