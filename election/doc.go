// Package election holds huddle's leader elections, run as group
// protocols over a membership service: Chang–Roberts ring election
// (Chang and Roberts 1979) and Garcia-Molina's Bully algorithm
// (Garcia-Molina 1982). See docs/design.md, "Leader election".
//
// A Machine is a deterministic state machine: no goroutines, sockets,
// clock or randomness. The node loop (or the simulator) drives it:
//
//	m := election.New(election.Options{Self: id, Algorithm: election.Bully})
//	for {
//		// a view was installed:
//		m.SetView(now, view.ID, view.Members) // may start an election
//		// an election message arrived from a member:
//		m.Receive(now, from, payload)
//		// the deadline passed:
//		m.Tick(now)
//		// `huddle elect`, or a periodic election:
//		m.Start(now) // false while one runs here
//
//		rd := m.Ready()
//		for _, msg := range rd.Messages {
//			svc.Send(ctx, msg.To, msg.Payload) // addressed, reliable
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
