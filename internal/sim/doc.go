// Package sim runs huddle's protocol machines on a simulated LAN.
//
// docs/design.md asks every protocol to be a deterministic state machine fed
// with datagrams and time. World is the harness that exploits this: a
// virtual clock, an event queue and a seeded random network (delay,
// jitter, per-receiver and per-sender loss, duplication, reordering,
// partitions, per-link drops, crashes, restarts and stalls). One seed gives
// exactly one run, so a failure found among thousands of seeds replays
// from its seed alone. Invariants registered with Check run after every
// step; the first failure stops the run with a *RunError that carries the
// seed and a trace of the last steps:
//
//	w := sim.New(sim.Options{Seed: seed, Loss: 0.1, Jitter: time.Millisecond})
//	for id := uint64(1); id <= 5; id++ {
//		w.Add(id, func(id, inc uint64, seed int64, addr netip.AddrPort) sim.Machine {
//			return newPeer(id, inc, seed) // Restart calls this again later
//		})
//	}
//	w.Check("one leader", oneLeader)
//	w.Do(1, func(m sim.Machine) { m.(*peer).Send("m1") })
//	w.Crash(3)
//	if err := w.RunFor(2 * time.Second); err != nil {
//		t.Fatal(err) // seed, invariant, trace
//	}
//
// Each datagram a machine hands back from TakeOutbox is multicast to every
// other live node (never to itself); every copy meets its own fate, drawn
// by the fault model of internal/netmodel, and each Receive gets a private
// copy of the bytes. Node id's address is netmodel.Addr(id). A node is
// ticked once when it starts, then whenever the deadline from NextDeadline
// falls due.
//
// The node's tests run the real node.Core so, through a small adapter
// (simCore in node/ready_test.go) whose TakeOutbox takes the Core's one
// output, its Ready, after every step: the datagrams go to the network,
// the events to the test's ledger.
package sim
