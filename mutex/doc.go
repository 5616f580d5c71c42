// Package mutex holds huddle's distributed lock: Ricart–Agrawala mutual
// exclusion (Ricart and Agrawala 1981) with Lamport clocks, run as a group
// protocol over the membership layer's views and a service of the group,
// with an optional quorum mode for partitions. See docs/design.md, "Mutual
// exclusion".
//
// RA, the Ricart–Agrawala machine, is a deterministic state machine: no
// goroutines, sockets, clock, timers or randomness, and no callback: what
// it needs to know it takes as inputs. The node's Core (package node; in the simulator too)
// drives it: it routes the views installed and the deliveries of the
// service "mutex" to it, and multicasts what it hands back:
//
//	m := mutex.NewRA(mutex.Options{Self: id, Quorum: 5, Lease: suspect})
//	for {
//		// a view was installed (heard: when each member was last heard in
//		// this view or the one before; quorum mode only, else nil):
//		m.SetView(now, view.ID.String(), view.IDs(), heard) // may grant, or take the lock away
//		// a mutex message arrived from a member:
//		m.Receive(now, from, payload)
//		// quorum mode: a datagram of member id was taken, in this view (at) or not (zero):
//		m.Heard(id, at)
//		// Group.Lock (huddle lock, the lock workload), Group.Unlock:
//		m.Request(now) // false while wanted or held
//		m.Release(now) // releases, or withdraws a pending request
//		// time passed (quorum mode: leases and quarantines):
//		m.Tick(now) // at m.NextDeadline()
//
//		rd := m.Ready()
//		for _, msg := range rd.Messages { // reliable, FIFO, on the service "mutex"
//			// To 0: a request, one multicast to every other member; else addressed
//			vs.Multicast([]byte("mutex"), msg.Payload, wire.FIFO, msg.To) // vs: the membership.Machine
//		}
//		log(rd.Events) // mutex.requested, mutex.acquired, mutex.released, ...
//	}
//
// A request goes, with its Lamport timestamp, to every other member of the
// view; a member replies at once unless it holds the lock or wants it with
// an earlier (timestamp, ID), and then defers its reply until it leaves.
// A node enters when every member it still needs replied: 2(n−1) messages
// per entry in a view of n. Every message is the msgpack array [kind, ts]:
// REQUEST [1, ts of the request], REPLY [2, ts of the request it
// answers], so that replies to a withdrawn request never count for a later
// one.
//
// The needed replies follow the view (see SetView): a member that left is
// no longer asked, a member that joined is asked too, and a view change
// asks again the members whose reply may have been lost with it. Safety
// holds per view: at most one holder among the members of a view. With
// Options.Quorum, a view below the majority of the cluster grants nothing
// and takes the lock from its holder; and since views overlap while
// members move from one to the next, the lock is also leased (see
// Options.Quorum): at most one holder exists in the whole cluster at any
// instant, for holders that run.
package mutex
