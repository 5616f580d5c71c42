// Package membership is the state machine under huddle's group membership:
// views, join, graceful leave, failure detection, flush, coordinator
// take-over, merge of partitions, restarts and refusals, and FIFO, total
// and safe delivery (docs/design.md, "Membership"). Applications use
// it through the Group API of the root package huddle, which runs it in a
// node's loop (package node).
//
// A Machine is a deterministic state machine that owns the reliable
// multicast engine beneath it: after every input it takes what the engine
// handed back (Engine.Ready) and filters and orders its deliveries. The
// node's Core (package node, also in the simulator) drives it, one turn
// at a time, and routes what it hands back; no callback leaves it:
//
//	m := membership.New(opt, now)
//	for {
//		// a datagram arrived, decoded into env:
//		m.Step(now, src, env)
//		// or the deadline passed:
//		m.Tick(now)
//		// or the application sends:
//		seq, err := m.Multicast(service, payload, wire.FIFO, 0) // ErrBlocked during a view change
//		// or it leaves:
//		m.Leave(now)
//
//		m.Pack()              // once per turn: the order record, and batching
//		rd := m.Ready()       // valid until the next call into m
//		send(rd.Envelopes)    // to multicast: the membership layer's, then the engine's
//		use(rd.Events)        // in order: views installed, messages (Delivered, with their service), suspicions, refusals...
//		arm(m.NextDeadline()) // zero once the node left
//	}
//
// Every view change is one flush: the coordinator proposes the members;
// each stops sending and reports how far it holds every sender of its
// view; the coordinator fixes the cut and sends it; each fetches what it
// misses up to the cut and confirms; the coordinator commits. Every member
// delivers exactly the cut in the old view before it installs the new one,
// which is virtual synchrony.
//
// testdata/*.txt are scenarios of a few Machines on an in-memory network
// (join, leave, crash, flush, merge, total order, sequencer crash), with
// their expected output; datadriven_test.go explains the commands, and a
// ledger (ledger_test.go) checks the guarantees by code after every one.
package membership
