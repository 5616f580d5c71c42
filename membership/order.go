package membership

import (
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// orderer delivers one view's messages in their order (docs/design.md, total
// order). FIFO messages go up as they come, each source's in its stream
// order. Total and safe messages wait for the order records of the view's
// sequencer, its coordinator, which multicasts them in its own reliable
// stream; a safe message waits, besides, until every member reports
// holding it. A source's messages after one that waits wait behind it, so
// every source's messages stay in its order whatever their kind.
//
// At the end of the view, what the records order is delivered first, then
// what they do not order, by (source, seq), numbered on from the last
// record. Every member that installs the same next view holds the same
// messages of this view (the flush's cut) and the same records (they are
// part of the sequencer's stream, inside the cut), so every one of them
// ends the view in the same order. These deliveries are marked Final.
//
// The limit of a sequencer: when a partition splits the view, the side
// without the sequencer orders what it never saw recorded by (source,
// seq), and the sequencer's side by its records, so the two sides may
// order those messages differently, as they may deliver different sets.
// Everything delivered before the view's end (by record) is in one order
// everywhere, and so is everything delivered by members that install the
// same next view, which covers a sequencer crash.
type orderer struct {
	held     map[uint64][]Delivery // per source: messages waiting, in stream order; the head is ordered
	runs     []run                 // recorded, not yet delivered; runs[0] is next
	started  bool                  // runs[0]'s first message was delivered: its Seq is behind us
	numbered uint64                // messages the records received so far have numbered

	// As the sequencer.
	toOrder  []wire.OrderRun // ordered messages handed to the sequencer, not recorded yet
	recorded uint64          // messages the records it sent have numbered
	recordAt time.Time       // the next record goes out then at the earliest

	safeNews bool      // a safe message of another source arrived: tell the others this node holds it
	reportAt time.Time // not before then (a session message per step at most, and not too often)

	dec *wire.Decoder
	enc *wire.Encoder
	rec wire.OrderRecord
	buf []byte
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

// recordGap is the least time between two order records. A sequencer
// that hears a message now and then records each at once; under load,
// it records what arrived in the gap together, which spares every
// member a datagram per few messages.
const recordGap = 300 * time.Microsecond

// safeReportGap is the least time between two session messages sent early
// for safe delivery.
const safeReportGap = 200 * time.Microsecond

func newOrderer() orderer {
	return orderer{held: map[uint64][]Delivery{}, dec: wire.NewDecoder(), enc: wire.NewEncoder()}
}

// ordered reports whether a message waits for the sequencer.
func ordered(o wire.Order) bool { return o == wire.Total || o == wire.Safe }

// sequencer reports whether this node orders its view's messages.
func (m *Machine) sequencer() bool {
	return m.state == member && len(m.view.Members) > 0 && m.view.Members[0].ID == m.self
}

// hand takes one message of the installed view, in its source's order,
// and delivers it as its order allows.
func (m *Machine) hand(d Delivery) {
	o := &m.orderer
	if d.Order == wire.Record {
		m.onRecord(&d)
		return
	}
	if ordered(d.Order) {
		if m.sequencer() {
			o.assign(d.Source, d.Seq)
		}
		if d.Order == wire.Safe && d.Source != m.self {
			o.safeNews = true
		}
	}
	q := o.held[d.Source]
	if len(q) == 0 && !ordered(d.Order) {
		m.give(d)
		return
	}
	o.held[d.Source] = append(q, cloneDelivery(d))
	if len(q) == 0 {
		m.advance(false) // its record may have come first
	}
}

// give delivers d to the layer above, if it is addressed to everyone or to
// this node.
func (m *Machine) give(d Delivery) {
	if d.Dest != 0 && d.Dest != m.self {
		if d.Source != m.self { // the engine counts only others' messages as delivered
			m.stats.ForOthers++
		}
		return
	}
	m.events = append(m.events, Event{Kind: Delivered, Delivery: d})
}

// assign queues (src, seq) for the next record: it extends the last run
// when that run is src's, since a run is src's next ordered messages.
func (o *orderer) assign(src, seq uint64) {
	if n := len(o.toOrder); n > 0 && o.toOrder[n-1].Source == src {
		o.toOrder[n-1].Count++
		return
	}
	o.toOrder = append(o.toOrder, wire.OrderRun{Source: src, Seq: seq, Count: 1})
}

// onRecord takes an order record of the view's sequencer.
func (m *Machine) onRecord(d *Delivery) {
	o := &m.orderer
	if c := m.view.Members[0]; d.Source != c.ID || d.Inc != c.Inc {
		m.stats.BadRecords++ // only the coordinator orders
		return
	}
	if err := o.dec.DecodeRecord(d.Payload, &o.rec); err != nil || o.rec.First != o.numbered+1 || len(o.runs)+len(o.rec.Runs) > maxRuns {
		m.stats.BadRecords++ // records come exactly once, in order: a forgery, or a bug
		return
	}
	m.stats.RecordsReceived++
	for _, r := range o.rec.Runs {
		o.runs = append(o.runs, run{r, o.numbered + 1})
		o.numbered += r.Count
	}
	m.advance(false)
}

// advance delivers the ordered messages whose turn has come, with the
// FIFO messages behind them. At the end of the view (final), a safe
// message no longer waits for every member (those that install the next
// view all hold it), and a run whose messages this node does not hold is
// dropped: they are past the cut, and no member delivers them.
func (m *Machine) advance(final bool) {
	o := &m.orderer
	for len(o.runs) > 0 {
		r := &o.runs[0]
		q := o.held[r.Source]
		if len(q) == 0 || !o.started && q[0].Seq != r.Seq {
			if final || len(q) > 0 && q[0].Seq > r.Seq {
				m.stats.Unheld += r.Count
				o.runs, o.started = o.runs[1:], false
				continue
			}
			return
		}
		if q[0].Order == wire.Safe && !final && !m.safe(&q[0]) {
			return
		}
		m.deliverHead(r.Source, r.gseq, final)
		o.started = true
		r.gseq++
		if r.Count--; r.Count == 0 {
			o.runs, o.started = o.runs[1:], false
		}
	}
}

// deliverHead delivers src's first waiting message, which is ordered, as
// number gseq of the view's total order, and the FIFO messages behind it.
func (m *Machine) deliverHead(src, gseq uint64, final bool) {
	o := &m.orderer
	q := o.held[src]
	q[0].GSeq, q[0].Final = gseq, final
	m.give(q[0])
	m.stats.OrderedDelivered++
	q[0] = Delivery{}
	q = q[1:]
	for len(q) > 0 && !ordered(q[0].Order) {
		q[0].Final = final
		m.give(q[0])
		q[0] = Delivery{}
		q = q[1:]
	}
	if len(q) == 0 {
		delete(o.held, src)
		return
	}
	o.held[src] = q
}

// safe reports whether every other member of the view reports holding d.
func (m *Machine) safe(d *Delivery) bool {
	for _, x := range m.view.Members {
		if x.ID != m.self && m.engine.Holds(x.ID, d.Source, d.Inc) < d.End {
			return false
		}
	}
	return true
}

// endOrder delivers what waits when the view ends: the recorded messages
// in their order, then the rest by (source, seq). It leaves the orderer
// empty for the next view.
func (m *Machine) endOrder() {
	o := &m.orderer
	m.advance(true)
	srcs := make([]uint64, 0, len(o.held))
	for src := range o.held {
		srcs = append(srcs, src)
	}
	slices.Sort(srcs)
	for _, src := range srcs {
		for len(o.held[src]) > 0 {
			m.stats.Unrecorded++
			o.numbered++
			m.deliverHead(src, o.numbered, true)
		}
	}
	dec, enc, buf := o.dec, o.enc, o.buf
	*o = orderer{held: o.held, dec: dec, enc: enc, buf: buf[:0]}
}

// sendRecords multicasts the order of the messages the sequencer took
// since its last record, at most a datagram's worth of runs per record.
// While a flush holds sends, or the window is full, they wait; a view
// change drops them (the view's end orders them).
func (m *Machine) sendRecords() {
	o := &m.orderer
	if len(o.toOrder) == 0 || !m.sequencer() || m.participation != nil || m.now.Before(o.recordAt) {
		return
	}
	o.recordAt = m.now.Add(recordGap)
	per := max(1, min(wire.MaxRecordRuns, (m.opt.Engine.DatagramSize-2*wire.MaxHeader)/wire.RecordSize(1)))
	for len(o.toOrder) > 0 {
		n := min(len(o.toOrder), per)
		rec := wire.OrderRecord{First: o.recorded + 1, Runs: o.toOrder[:n]}
		o.buf = o.enc.AppendRecord(o.buf[:0], &rec)
		if _, err := m.multicast(nil, o.buf, wire.Record, 0); err != nil {
			return // the window is full: stability wakes us
		}
		m.stats.RecordsSent++
		for _, r := range rec.Runs {
			o.recorded += r.Count
		}
		o.toOrder = o.toOrder[n:]
	}
	o.toOrder = nil
}

// reportSafe sends a session message early when a safe message of another
// source arrived, so that its members learn soon that this node holds it.
func (m *Machine) reportSafe(now time.Time) {
	o := &m.orderer
	if o.safeNews && !now.Before(o.reportAt) {
		o.safeNews = false
		o.reportAt = now.Add(safeReportGap)
		m.engine.Report(now)
	}
}

// recordDeadline is when the sequencer's next record is due; zero when
// none waits.
func (m *Machine) recordDeadline() time.Time {
	if len(m.orderer.toOrder) == 0 || !m.sequencer() || m.participation != nil {
		return time.Time{}
	}
	return m.orderer.recordAt
}

// safeDeadline is when reportSafe must run; zero when it need not.
func (m *Machine) safeDeadline() time.Time {
	if m.orderer.safeNews {
		return m.orderer.reportAt
	}
	return time.Time{}
}
