// Package membership is huddle's Group API: join a group of nodes on a
// LAN, multicast to it in FIFO, total or safe order, send to one member,
// and receive the views and messages of a named service in the order the
// node delivers them (docs/design.md, "The node runtime and the Group API").
//
//	g, err := membership.Join(ctx, cfg, log)  // a node of its own, in a view when it returns
//	chat := g.Service("chat")                 // a named channel; election and mutex have theirs
//	chat.Multicast(ctx, []byte("hi"), membership.Total)
//	for ev := range chat.Events() {           // views and messages, in delivery order
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
// The state machine underneath is package vsync; the node loop that runs
// it, with its sockets and clock, is the one `huddle run` uses. Network
// runs groups inside one process, for tests and examples.
package membership
