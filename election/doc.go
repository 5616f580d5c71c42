// Package election holds huddle's leader elections, run as group
// protocols over the membership layer's views and a service of the group: Chang–Roberts ring election
// (Chang and Roberts 1979) and Garcia-Molina's Bully algorithm
// (Garcia-Molina 1982). See docs/design.md, "Leader election".
//
// A Machine is a deterministic state machine: no goroutines, sockets,
// clock or randomness, and it knows nothing of the layers around it. The
// node's Core (package node; in the simulator too) drives it: it routes
// the views installed and the deliveries of the service "election" to it
// as inputs, and multicasts what it hands back:
//
//	m := election.New(election.Options{Self: id, Algorithm: election.Bully})
//	for {
//		// a view was installed:
//		m.SetView(now, view.ID.String(), view.IDs()) // may start an election
//		// an election message arrived from a member:
//		m.Receive(now, from, payload)
//		// the deadline passed:
//		m.Tick(now)
//		// Group.Elect (huddle elect, or a periodic election of the workload):
//		m.Start(now) // false while one runs here
//
//		rd := m.Ready()
//		for _, msg := range rd.Messages { // addressed, reliable, FIFO, on the service "election"
//			vs.Multicast([]byte("election"), msg.Payload, wire.FIFO, msg.To) // vs: the membership.Machine
//		}
//		log(rd.Events) // election.started, election.won, leader.changed, election.done
//		arm(m.NextDeadline())
//	}
//
// Every message is the msgpack array [kind, round, id]. Rounds order
// elections: a node joins a newer round on its first message, forgetting
// the old round and leader, and ignores older rounds' messages, so an
// election that a view change interrupts restarts cleanly in the new view
// and nodes that start together run one election. Leader reports the
// leader and the round that elected it; Stats counts messages by kind,
// stale and malformed ones.
//
// Messages may be lost only in a view change (or with a crashed node). A
// view change restarts an election in progress; a joiner waits for the
// leader's announcement; a member that missed a round's result hears it
// from a member that knows it when its own, older election reaches one.
package election
