// Package logcheck checks the guarantees of huddle's layers from the JSON
// logs of a run: one log per node (a restarted node appends to its log),
// written with --trace-deliveries so that every message sent and delivered
// is an event.
//
//	r, err := logcheck.Load("node1.json", "node2.json", "node3.json")
//	if err != nil { ... }                   // I/O only; bad lines are counted
//	res := r.CheckMulticast(logcheck.Options{Senders: []uint64{1}})
//	fmt.Println(res)                        // summary, then the first violations
//	if err := res.Err(); err != nil { ... } // wraps ErrViolations
//
// Load (or Run.Read, for any io.Reader) streams each log once, with
// internal/logs's Scanner, and keeps only what the checks need, grouped
// into node lives: a life runs from a node.started event to the next one
// of the same node. Lines that are not events (a crash trace, the last
// line of a killed node) are counted in File.Malformed and skipped.
// Reading costs about a microsecond a line.
//
// # The multicast check
//
// CheckMulticast reads the events "send" (seq, len, crc; logged by a sender
// for each message it multicasts) and "deliver" (from, seq, len, crc;
// logged by a receiver for each message delivered) and checks:
//
//   - FIFO: per receiver and sender, delivered seqs strictly increase
//     (Kind FIFO; a seq delivered twice is a Duplicate);
//   - integrity: every delivered (from, seq) was sent by from, with the same
//     len and crc (Unsent, Corrupt);
//   - completeness: every receiver delivered every message of every sender
//     (Missing, one violation per run of consecutive messages), restricted
//     by Options.Senders and Options.Receivers, and excusing with
//     Options.AllowSkipped what a receiver logged as stream.skipped;
//   - that each sender's own seqs increase (SendOrder).
//
// A sender is identified by node and incarnation. Deliver events name only
// the node, so the incarnation is taken from the event's "from_incarnation"
// field if present, else from the receiver's last peer.seen of that node
// (logged before its first delivery), else the sender's only life.
//
// Violations name the receiver, the sender, the seq, what was expected and
// the log line; a Result lists the first Options.MaxViolations (20) and
// counts all. Result.Pairs sums up each receiver × sender.
//
// # The membership check
//
// CheckMembership reads view.installed events (view "epoch.coordinator",
// members oldest first, joined, left, crashed, flush_ms) into Life.Views,
// and the "view" field of send and deliver events, and checks per life
// and across lives:
//
//   - self-inclusion: each view a life installs lists its node
//     (SelfInclusion);
//   - agreement: lives that install the same view ID list the same members
//     in the same order (ViewAgreement);
//   - a life's view IDs strictly increase, by epoch then coordinator
//     (ViewOrder);
//   - virtual synchrony: lives that install V and then the same V'
//     delivered the same messages in V (VirtualSynchrony, one violation
//     per lacking life); a delivery is in the view its event names, and a
//     sender is taken to hold its own messages unless
//     MembershipOptions.SelfDelivery;
//   - a delivery names the view its receiver installed last (WrongView)
//     and the view its message was sent in (CrossView);
//   - FIFO, Duplicate, Unsent, Corrupt and SendOrder, as CheckMulticast.
//
// And FIFO has no holes (FIFOGap): a life that delivered a sender's
// message in a view delivered every earlier message the sender sent in
// it to it; the sender's send events tell its application's messages
// from the sequence numbers its node's own protocols used.
//
// It does not require completeness: CheckLiveness does (Missing,
// LeaveLoss): for the messages a sender sent in V when it and the
// receiver both went on to the same V'; for those of a member that left V
// gracefully, at every member that installed the next view; and in the
// view two lives installed last and left gracefully, for those sent
// MembershipOptions.Settle before the receiver's leave began. A sender
// that crashed in V, and deliveries that name no view, escape these
// checks.
//
// CheckOrder (order.go) checks total order and safe delivery from the
// deliver events' gseq and order, holes included (OrderGap), and causal
// order (causal.go: CausalOrder) from each sender's log, what it had
// delivered before each causal send.
//
// # How the logs end, and what was compared
//
// CheckLives checks that every life's log ends with node.stopped or at a
// crash the caller names (LivesOptions: the lab's kills, huddle check
// --crashed); LogEnd otherwise. Every Result counts what it compared
// (Result.Compared), and CheckAll fails a check that compared nothing in
// a run that had what it checks (NothingCompared).
//
// The checker is tested by mutation (mutation_test.go): the logs of real
// lab runs (testdata/runs) are corrupted one corruption at a time, and
// every mutant must fail a check naming its node and line.
//
// # The election check
//
// Load keeps election.started, election.won, leader.changed and
// election.done of each life in Life.Elections. Run.CheckElection checks
// that every node that learned the leader of a round of a view learned
// the same one (LeaderAgreement), a member of that view as its nodes
// installed it (LeaderOutsideView) and its highest (LeaderNotHighest),
// that every member that stayed in a view long enough knew its leader
// (LeaderUnknown), and sums each round's messages (the
// election.done events' sent) per view into ElectionResult.Rounds, with
// the formulas of the literature for one initiator beside them.
// Run.CheckAll runs every check of the package, the one list that huddle
// check and huddle demo use.
//
// # The lock check
//
// Load keeps the lock's events (mutex.requested, mutex.acquired,
// mutex.released, mutex.withdrawn, mutex.deferred) of each life in
// Life.Locks. Run.CheckMutex checks them:
//
//   - safety: no two lives' acquired…released intervals overlap in time
//     (MutexOverlap; all namespaces of a lab share one clock). A hold still
//     open when its log ends lasts until the node's death, if
//     MutexOptions.Deaths names it, else until the log's last line;
//     MutexOptions.Slack forgives short overlaps after a release or an
//     exit (each node writes its own log), never after a death;
//   - sequence: per life, requested → acquired → released, or requested →
//     withdrawn, with matching clocks (MutexSequence);
//   - liveness: no request stays neither granted nor withdrawn while its
//     node runs on for longer than MutexOptions.MaxPending, nor at its
//     node's exit (MutexPending).
//
// MutexResult also carries the figures the tests and benchmarks print:
// entries per node, waits, holds, messages per entry, lost releases.
package logcheck
