package membership

import (
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// orderer delivers one view's messages in their order (docs/design.md, total
// order). FIFO messages go up as they come, each source's in its stream
// order. Total and safe messages wait for the order records of the view's
// sequencer, its coordinator or the member the order moved to
// (sequencer.go), which multicasts them in its own reliable stream; a
// safe message waits, besides, until every member reports holding it. A
// source's messages after one that waits wait behind it, so every
// source's messages stay in its order whatever their kind.
//
// At the end of the view, what the records order is delivered first, then
// what they do not order, by (source, seq), numbered on from the last
// record. Every member that installs the same next view holds the same
// messages of this view (the flush's cut) and the same records (they are
// part of the sequencers' streams, inside the cut), so every one of them
// ends the view in the same order. These deliveries are marked Final.
//
// The limit of a sequencer: when a partition splits the view, the side
// without the sequencer orders what it never saw recorded by (source,
// seq), and the sequencer's side by its records, so the two sides may
// order those messages differently, as they may deliver different sets.
// Everything delivered before the view's end (by record) is in one order
// everywhere, and so is everything delivered by members that install the
// same next view, which covers a sequencer crash.
//
// The orderer takes the view's messages (hand) and records, and the
// Machine takes what it delivered (take), in the order delivered, between
// its own events. It asks the engine beneath only how far the members hold
// a stream (holder), for safe delivery.
type orderer struct {
	self      uint64
	holds     holder
	stats     *Stats
	moveAfter int                   // hand the order to a member after this many ordered messages in a row of its; 0: never
	moveTurns int                   // and as many records sent since the first of them at least
	members   []wire.Member         // the installed view's, its sequencer first
	held      map[uint64][]Delivery // per source: messages waiting, in stream order; the head is ordered
	out       []Delivery            // delivered, not taken yet
	viewOrder                       // this view's; cleared when it ends
	dec       *wire.Decoder
	enc       *wire.Encoder
	rec       wire.OrderRecord
	buf       []byte
}

// viewOrder is what the orderer knows of one view's order.
type viewOrder struct {
	runs     []run  // recorded, not yet delivered; runs[0] is next
	started  bool   // runs[0]'s first message was delivered: its Seq is behind us
	numbered uint64 // messages the records received so far have numbered

	// As the sequencer.
	toOrder  []wire.OrderRun // ordered messages handed to the sequencer, not recorded yet
	recorded uint64          // messages the records it sent have numbered
	recordAt time.Time       // the last record's time, or after one could not go out the next try

	moving // who orders: the sequencer moves (sequencer.go)

	safeNews bool      // a safe message of another source arrived: tell the others this node holds it
	reportAt time.Time // not before then (a session message per step at most, and not too often)

	causal causalState // causal order's counts and vectors (causal.go)
	given  uint64      // messages passed (given) in this view: pump's measure of progress
}

// holder tells how far member id holds the stream of source src
// (incarnation inc), as its session messages report: the engine.
type holder interface {
	Holds(id, src, inc uint64) uint64
}

// run is a recorded run with the total-order number of its next message.
type run struct {
	wire.OrderRun
	gseq uint64
}

// maxRuns bounds the runs this node holds for delivery: far more than the
// messages the senders' windows let be in flight, so only forged records
// reach it.
const maxRuns = 1 << 16

// recordRetry is how long a sequencer whose record could not go out (its
// window was full) waits before it tries again, unless stability frees
// room first. Otherwise a record goes out in every turn of the node's
// loop that ordered something: under load a turn takes many datagrams,
// and its one record orders them all. (Records held back to 300 µs apart
// spared a datagram per few messages at 10 000 msg/s, and made each
// wait 150 µs on average: total order's p50 was 0.31 ms there, 0.08 to
// 0.11 ms without.)
const recordRetry = 300 * time.Microsecond

// safeReportGap is the least time between two session messages sent early
// for safe delivery.
const safeReportGap = 200 * time.Microsecond

// newOrderer returns the orderer of node self, which counts into stats.
func newOrderer(self uint64, holds holder, stats *Stats) orderer {
	return orderer{self: self, holds: holds, stats: stats, held: map[uint64][]Delivery{}, dec: wire.NewDecoder(), enc: wire.NewEncoder()}
}

// ordered reports whether a message waits for the sequencer.
func ordered(o wire.Order) bool { return o == wire.Total || o == wire.Safe }

// hand takes one message of the installed view, in its source's order,
// and delivers it as its order allows; sequencer says whether this node
// orders the view's messages.
func (o *orderer) hand(d Delivery, sequencer bool) {
	if d.Order == wire.Record {
		o.onRecord(&d)
		return
	}
	if d.Order == wire.Causal {
		if err := o.readCausal(&d); err != nil {
			o.stats.BadCausal++
			d.causes, d.bad = nil, true
		}
	}
	if ordered(d.Order) {
		if o.handOrdered(d.Source) && sequencer {
			o.assign(d.Source, d.Seq)
		}
		if d.Order == wire.Safe && d.Source != o.self {
			o.safeNews = true
		}
	}
	q := o.held[d.Source]
	if len(q) == 0 && o.free(&d) {
		o.give(d)
		if o.causal.waiting > 0 {
			o.pump(false) // a causal message may have waited for this one
		}
		return
	}
	if d.Order == wire.Causal {
		o.causal.waiting++
		if len(q) == 0 && !d.bad {
			o.stats.CausalWaited++
		}
	}
	o.held[d.Source] = append(q, cloneDelivery(d))
	if len(q) == 0 {
		o.pump(false) // its record may have come first
	}
}

// give delivers d to the layer above, if it is addressed to everyone or to
// this node.
func (o *orderer) give(d Delivery) {
	o.given++
	if o.causal.passed == nil {
		o.causal.passed = map[uint64]uint64{}
	}
	o.causal.passed[d.Source]++
	if d.bad {
		return // a malformed causal header: passed, not delivered
	}
	if d.Order == wire.Causal {
		o.stats.CausalDelivered++
	}
	if d.Dest != 0 && d.Dest != o.self {
		if d.Source != o.self { // the engine counts only others' messages as delivered
			o.stats.ForOthers++
		}
		return
	}
	o.out = append(o.out, d)
}

// take appends what the orderer delivered since the last take to events,
// as Delivered events, in the order delivered.
func (o *orderer) take(events []Event) []Event {
	for _, d := range o.out {
		events = append(events, Event{Kind: Delivered, Delivery: d})
	}
	clear(o.out)
	o.out = o.out[:0]
	return events
}

// assign queues (src, seq) for the next record: it extends the last run
// when that run is src's, since a run is src's next ordered messages.
func (o *orderer) assign(src, seq uint64) {
	o.assigned1(src)
	if n := len(o.toOrder); n > 0 && o.toOrder[n-1].Source == src {
		o.toOrder[n-1].Count++
		return
	}
	o.toOrder = append(o.toOrder, wire.OrderRun{Source: src, Seq: seq, Count: 1})
}

// onRecord takes an order record of the view's sequencer, or keeps one of
// another member for when the order moves to it (sequencer.go).
func (o *orderer) onRecord(d *Delivery) {
	if err := o.dec.DecodeRecord(d.Payload, &o.rec); err != nil || !o.member(d.Source, d.Inc) {
		o.stats.BadRecords++ // a forgery, or a bug
		return
	}
	if d.Source != o.sequencerID() {
		o.keep(d, &o.rec) // the order may move to d's source
		return
	}
	if o.apply(d, &o.rec) {
		if len(o.kept) > 0 {
			o.takeKept()
		}
		o.pump(false)
	}
}

// apply takes record rec, the payload of d, of the sequencer: its runs
// are numbered next, and when it hands the order on, the member it names
// orders next. It reports false, counting a bad record, when rec is not
// the next in turn, would hold too many runs, or hands the order to no
// other member.
func (o *orderer) apply(d *Delivery, rec *wire.OrderRecord) bool {
	src := d.Source
	next := -1
	if rec.Next != 0 {
		next = o.index(rec.Next)
	}
	if rec.First != o.numbered+1 || len(o.runs)+len(rec.Runs) > maxRuns || rec.Next != 0 && (next < 0 || rec.Next == src) {
		o.stats.BadRecords++ // records come exactly once, in order: a forgery, or a bug
		return false
	}
	o.stats.RecordsReceived++
	for _, r := range rec.Runs {
		o.runs = append(o.runs, run{r, o.numbered + 1})
		o.numbered += r.Count
		o.counted(r.Source, r.Count)
	}
	if next >= 0 {
		o.moveTo(next, d)
	}
	return true
}

// advance delivers the ordered messages whose turn has come, with the
// FIFO messages behind them. At the end of the view (final), a safe
// message no longer waits for every member (those that install the next
// view all hold it), and a run whose messages this node does not hold is
// dropped: they are past the cut, and no member delivers them.
func (o *orderer) advance(final bool) {
	for len(o.runs) > 0 {
		r := &o.runs[0]
		q := o.held[r.Source]
		if len(q) > 0 && !ordered(q[0].Order) {
			return // a causal message waits for its causes first (pump)
		}
		if len(q) == 0 || !o.started && q[0].Seq != r.Seq {
			if final || len(q) > 0 && q[0].Seq > r.Seq {
				o.stats.Unheld += r.Count
				o.runs, o.started = o.runs[1:], false
				continue
			}
			return
		}
		if q[0].Order == wire.Safe && !final && !o.safe(&q[0]) {
			return
		}
		o.deliverHead(r.Source, r.gseq, final)
		o.started = true
		r.gseq++
		if r.Count--; r.Count == 0 {
			o.runs, o.started = o.runs[1:], false
		}
	}
}

// deliverHead delivers src's first waiting message, which is ordered, as
// number gseq of the view's total order, and the FIFO messages behind it.
func (o *orderer) deliverHead(src, gseq uint64, final bool) {
	q := o.held[src]
	q[0].GSeq, q[0].Final = gseq, final
	o.give(q[0])
	o.stats.OrderedDelivered++
	q[0] = Delivery{}
	o.held[src] = q[1:]
	o.drain(src, final)
}

// safe reports whether every other member of the view reports holding d.
func (o *orderer) safe(d *Delivery) bool {
	for _, x := range o.members {
		if x.ID != o.self && o.holds.Holds(x.ID, d.Source, d.Inc) < d.End {
			return false
		}
	}
	return true
}

// end delivers what waits when the view ends: the recorded messages in
// their order, then the rest by (source, seq). It leaves the orderer
// empty for the next view, whose members come with setView.
func (o *orderer) end() {
	o.pump(true)
	for moved := true; moved; {
		moved = false
		for _, src := range o.heldSources() {
			for q := o.held[src]; len(q) > 0; q = o.held[src] {
				if ordered(q[0].Order) {
					o.stats.Unrecorded++
					o.numbered++
					o.deliverHead(src, o.numbered, true)
				} else if o.ready(&q[0]) {
					o.drain(src, true)
				} else {
					break // its causes are not in the view's cut: see below
				}
				moved = true
			}
		}
	}
	// A causal message whose causes no member that installs the next view
	// holds (their senders crashed before any of them got those) is
	// delivered by none of them, nor what its source sent after it: every
	// one of them holds the same messages (the cut), so every one drops
	// the same ones. A member that delivered it earlier had its causes,
	// and they would be in the cut.
	for src, q := range o.held {
		o.stats.CausalDropped += uint64(len(q))
		delete(o.held, src)
	}
	o.viewOrder, o.rec, o.buf = viewOrder{}, wire.OrderRecord{}, o.buf[:0]
}

// setView starts the order of a view of these members, its sequencer first.
func (o *orderer) setView(members []wire.Member) { o.members = members }

// outstanding reports whether messages wait for their order, or for a
// record to be sent.
func (o *orderer) outstanding() bool {
	return len(o.held) > 0 || len(o.runs) > 0 || len(o.toOrder) > 0 || o.recordWaits()
}

// recordDue reports whether the sequencer has a record to send now.
// (What it then leaves unrecorded is due at once: recordDeadline.)
func (o *orderer) recordDue(now time.Time) bool {
	if !o.recordWaits() || now.Before(o.recordAt) {
		return false
	}
	o.recordAt = now
	return true
}

// recordBlocked holds the next record back for recordRetry: the last one
// could not go out.
func (o *orderer) recordBlocked(now time.Time) { o.recordAt = now.Add(recordRetry) }

// nextRecord encodes the next order record, of at most per runs, into the
// orderer's buffer (valid until the next call); ok is false when every
// run is recorded.
func (o *orderer) nextRecord(per int) (b []byte, runs int, ok bool) {
	if !o.recordWaits() {
		if len(o.toOrder) == 0 {
			o.toOrder = nil
		}
		return nil, 0, false
	}
	n := min(len(o.toOrder), per)
	r := o.recordFor(o.toOrder[:n], n == len(o.toOrder))
	o.buf = o.enc.AppendRecord(o.buf[:0], &r)
	return o.buf, n, true
}

// recordSent notes that the record of the next runs went out.
func (o *orderer) recordSent(runs int) {
	for _, r := range o.toOrder[:runs] {
		o.recorded += r.Count
	}
	o.toOrder = o.toOrder[runs:]
	o.waitHand, o.handedBy = false, Delivery{}
	o.streakRec++
	if len(o.toOrder) == 0 && o.handTo != 0 {
		o.handSent = true
	}
}

// recordDeadline is when the sequencer's next record is due; zero when
// none waits.
func (o *orderer) recordDeadline() time.Time {
	if !o.recordWaits() {
		return time.Time{}
	}
	return o.recordAt
}

// safeReportDue reports whether a session message should go out now, early,
// because a safe message of another source arrived, so that its members
// learn soon that this node holds it.
func (o *orderer) safeReportDue(now time.Time) bool {
	if !o.safeNews || now.Before(o.reportAt) {
		return false
	}
	o.safeNews = false
	o.reportAt = now.Add(safeReportGap)
	return true
}

// safeDeadline is when safeReportDue must be asked again; zero when it
// need not.
func (o *orderer) safeDeadline() time.Time {
	if o.safeNews {
		return o.reportAt
	}
	return time.Time{}
}
