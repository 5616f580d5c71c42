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
// Load (or Run.Read, for any io.Reader) streams each log once and keeps
// only what the checks need, grouped into node lives: a life runs from a
// node.started event to the next one of the same node. Lines that are not
// JSON objects (a crash trace, the last line of a killed node) are counted
// in File.Malformed and skipped. Reading costs about a microsecond a line.
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
// the node, so the incarnation is taken from the event's "inc" field if
// present, else from the receiver's last peer.seen of that node (logged
// before its first delivery), else the sender's only life.
//
// Violations name the receiver, the sender, the seq, what was expected and
// the log line; a Result lists the first Options.MaxViolations (20) and
// counts all. Result.Pairs sums up each receiver × sender.
//
// # Views
//
// view.installed events are read into Life.Views, and a deliver event's
// "view" field into Deliver.View. Checks of the membership layer's
// guarantees (virtual synchrony, delivery in the sending view, total
// order) are meant to be added as further Check methods on Run reading
// them, with completeness then scoped per view instead of per life.
package logcheck
