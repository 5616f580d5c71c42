package logcheck

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Kind names a kind of violation.
type Kind string

// Kinds of violation of the multicast layer's guarantees (docs/design.md,
// "multicast" and "membership" guarantees 3 and 4).
const (
	// FIFO: a message delivered after a later message of the same sender.
	FIFO Kind = "fifo"
	// Duplicate: a message delivered twice.
	Duplicate Kind = "duplicate"
	// Corrupt: a message delivered with another length or CRC than sent.
	Corrupt Kind = "corrupt"
	// Unsent: a message delivered that its sender never logged sending.
	Unsent Kind = "unsent"
	// Missing: messages sent that a receiver never delivered; one
	// violation per run of consecutive messages.
	Missing Kind = "missing"
	// SendOrder: a sender logged sequence numbers out of order (a bug of
	// the sender, or two logs mixed up).
	SendOrder Kind = "send-order"
)

// Kinds of violation of the membership layer's guarantees found by
// CheckMembership (docs/design.md, guarantees 1 to 3; FIFO,
// Duplicate, Unsent, Corrupt and SendOrder are checked there too, and
// CheckLiveness reports Missing).
const (
	// SelfInclusion: a node installed a view that does not list it.
	SelfInclusion Kind = "self-inclusion"
	// ViewAgreement: two lives installed the same view ID with different
	// member lists.
	ViewAgreement Kind = "view-agreement"
	// VirtualSynchrony: two lives installed view V and then the same next
	// view, but one did not deliver in V a message the other delivered in
	// V; one violation per lacking life and pair of views.
	VirtualSynchrony Kind = "virtual-synchrony"
	// WrongView: a delivery names another view than the one its receiver
	// had installed last.
	WrongView Kind = "wrong-view"
	// CrossView: a message delivered in another view than it was sent in.
	CrossView Kind = "cross-view"
	// ViewOrder: a life installed a view ID not above its previous one, or
	// one that is not "epoch.coordinator".
	ViewOrder Kind = "view-order"
)

// Kinds of violation of ordered delivery found by CheckOrder (docs/design.md,
// "membership" guarantees 5 and 6).
const (
	// TotalOrder: ordered messages of a view delivered in another order
	// than elsewhere: one gseq for two messages, gseqs not increasing, or
	// two lives that went from V to the same V' with different ordered
	// sequences in V; or a message delivered in another order than sent.
	TotalOrder Kind = "total-order"
	// SafeDelivery: a safe message delivered by its record in view V that
	// a life which installed V and then a next view never delivered in V.
	SafeDelivery Kind = "safe-delivery"
	// OrderGap: a life delivered an ordered message of view V by its
	// record as gseq n+1 without gseq n: total and safe order have no
	// holes (only the flush at V's end may pass over positions past the
	// cut, which no member delivers).
	OrderGap Kind = "order-gap"
)

// Kinds of violation that hold in every run, whatever its views.
const (
	// FIFOGap: a life delivered a message of a sender in view V without
	// an earlier one the sender sent in V to it: FIFO has no holes. The
	// sender's send events tell its application's messages apart from
	// the sequence numbers its node's own protocols used.
	FIFOGap Kind = "fifo-gap"
	// LeaveLoss: a member left view V gracefully, and a member that
	// installed the next view never delivered in V a message the leaver
	// sent in V: a graceful leave's messages reach every member that
	// stays.
	LeaveLoss Kind = "leave-loss"
	// LogEnd: a life's log ends without node.stopped, and no crash the
	// check knows of (the lab's lab.json, --crashed) explains it.
	LogEnd Kind = "log-end"
	// NothingCompared: a check found nothing to compare in a run that
	// had traffic: no evidence either way, reported as a failure.
	NothingCompared Kind = "nothing-compared"
)

// ErrViolations is wrapped by Result.Err when a check found violations.
var ErrViolations = errors.New("logcheck: guarantees violated")

// Violation is one breach of a guarantee, located in the logs.
type Violation struct {
	Kind   Kind
	Node   uint64 // the receiver (the sender itself for SendOrder, the installer for view kinds)
	Sender uint64
	Seq    uint64 // the message; for Missing the first of the run, for VirtualSynchrony the first lacking
	Last   uint64 // Missing: the last message of the run
	Count  uint64 // Missing: messages in the run; VirtualSynchrony: messages lacking; otherwise 1
	File   string // the log holding the offending event (Missing: the receiver's)
	Line   int    // its line; 0 for CheckMulticast's Missing
	Detail string // what happened and what was expected
}

func (v Violation) String() string {
	loc := v.File
	if v.Line > 0 {
		loc = fmt.Sprintf("%s:%d", v.File, v.Line)
	}
	return fmt.Sprintf("%s: %s [%s]", v.Kind, v.Detail, loc)
}

// Pair sums up what one receiver life delivered of one sender life.
type Pair struct {
	Receiver, ReceiverInc uint64
	Sender, SenderInc     uint64
	Sent                  uint64 // messages the sender logged
	Delivered             uint64 // of those, delivered (once or more)
	Missing               uint64 // not delivered, not excused
	Skipped               uint64 // not delivered, excused by stream.skipped (Options.AllowSkipped)
}

// Result is the outcome of a check.
type Result struct {
	Check      string      // "multicast", "membership" or "liveness"
	Violations []Violation // the first MaxViolations found
	Total      int         // violations found, listed or not
	ByKind     map[Kind]int
	Pairs      []Pair // receiver × sender lives checked for completeness

	Lives     int    // node lives in the logs
	Sent      uint64 // send events
	Delivered uint64 // deliver events
	Views     int    // view.installed events (membership checks)
	Missing   uint64 // messages missing over all pairs (Missing violations count runs)
	Skipped   uint64 // messages excused as skipped
	Malformed int    // malformed lines in the logs (not violations: a killed node cuts its last line)
	// Compared says how much the check compared, in the units it
	// compares (views, pairs, positions...): a check that compared
	// nothing in a run with traffic proves nothing.
	Compared []Count

	max int
}

// Count is an amount of something compared: N and what it counts.
type Count struct {
	N    int
	What string
}

// count adds n to the amount compared of what.
func (r *Result) count(what string, n int) {
	for i := range r.Compared {
		if r.Compared[i].What == what {
			r.Compared[i].N += n
			return
		}
	}
	r.Compared = append(r.Compared, Count{n, what})
}

// ComparedAny reports whether the check compared anything.
func (r *Result) ComparedAny() bool {
	for _, c := range r.Compared {
		if c.N > 0 {
			return true
		}
	}
	return false
}

// comparedText is ", compared 3 view changes, 12 pairs", or "" when the
// check counts nothing.
func (r *Result) comparedText() string {
	if len(r.Compared) == 0 {
		return ""
	}
	parts := make([]string, len(r.Compared))
	for i, c := range r.Compared {
		parts[i] = fmt.Sprintf("%d %s", c.N, c.What)
	}
	return "; compared " + strings.Join(parts, ", ")
}

func newResult(check string, max int) *Result {
	if max <= 0 {
		max = DefaultMaxViolations
	}
	return &Result{Check: check, ByKind: map[Kind]int{}, Violations: make([]Violation, 0, min(max, 64)), max: max}
}

// DefaultMaxViolations is how many violations a Result lists by default.
const DefaultMaxViolations = 20

func (r *Result) add(v Violation) {
	r.Total++
	r.ByKind[v.Kind]++
	if len(r.Violations) < r.max {
		r.Violations = append(r.Violations, v)
	}
}

// OK reports whether no violation was found.
func (r *Result) OK() bool { return r.Total == 0 }

// Err returns nil when no violation was found, else an error wrapping
// ErrViolations whose text is String.
func (r *Result) Err() error {
	if r.OK() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrViolations, r.String())
}

// String is a summary line, then one line per listed violation.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d lives, %d sent, %d delivered", r.Check, r.Lives, r.Sent, r.Delivered)
	if r.Views > 0 {
		fmt.Fprintf(&b, ", %d views installed", r.Views)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped (allowed)", r.Skipped)
	}
	if r.Malformed > 0 {
		fmt.Fprintf(&b, ", %d malformed lines", r.Malformed)
	}
	b.WriteString(r.comparedText())
	extra := ""
	if r.Missing > 0 {
		extra = fmt.Sprintf(", %d messages missing", r.Missing)
	}
	r.writeVerdict(&b, extra)
	return b.String()
}

// writeVerdict ends a summary line: ": ok", or the violations by kind
// (then extra), and one line per violation listed.
func (r *Result) writeVerdict(b *strings.Builder, extra string) {
	if r.OK() {
		b.WriteString(": ok")
		return
	}
	kinds := make([]string, 0, len(r.ByKind))
	for k, n := range r.ByKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(b, ": %d violations (%s)%s", r.Total, strings.Join(kinds, ", "), extra)
	for _, v := range r.Violations {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	if n := r.Total - len(r.Violations); n > 0 {
		fmt.Fprintf(b, "\n  ... and %d more", n)
	}
}
