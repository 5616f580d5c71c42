package membership

import (
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// maxFuture bounds the messages held for a view not installed yet: those a
// member sent in the next view before this node installed it. It is a
// window's worth; in practice the gap lasts one commit's flight.
const maxFuture = 1 << 14

// fromEngine takes one message the engine delivered in its source's order
// and decides, by the view it was sent in, whether this node delivers it
// now, holds it (a flush is deciding the cut; or it belongs to the view
// being installed) or drops it (another view's: integrity, guarantee 3).
func (m *Machine) fromEngine(d Delivery) {
	switch {
	case m.state != joining && d.View == m.view.ID:
		m.inView(d)
	case m.view.ID.Less(d.View) && m.expects(d.Source):
		if len(m.future) >= maxFuture {
			m.stats.FutureDropped++
			return
		}
		m.future = append(m.future, cloneDelivery(d))
	default:
		m.stats.WrongView++
	}
}

// inView handles a message of the installed view. Once this node reported
// to a flush what it holds, messages past that report wait for the cut:
// only the cut decides what the view delivers.
func (m *Machine) inView(d Delivery) {
	if !m.view.HasInc(d.Source, d.Inc) {
		m.stats.WrongView++ // no member sent it: it cannot be of this view
		return
	}
	if m.broken[d.Source] {
		m.stats.BeyondCut++ // its stream lost messages in this view: delivering more would leave a gap
		return
	}
	if p := m.participant; p != nil && p.hold(d) {
		return
	}
	m.hand(d)
}

// expects reports whether messages of a later view from src may be for
// this node: src is a member of its view or of the flush it takes part in.
func (m *Machine) expects(src uint64) bool {
	return m.view.Has(src) || m.participant != nil && containsMember(m.participant.members, src)
}

// releaseFuture delivers the held messages of the view just installed and
// drops those of views this node did not install.
func (m *Machine) releaseFuture() {
	keep := m.future[:0]
	for _, d := range m.future {
		switch {
		case d.View == m.view.ID:
			m.inView(d)
		case m.view.ID.Less(d.View):
			keep = append(keep, d)
		default:
			m.stats.FutureDropped++
		}
	}
	clear(m.future[len(keep):])
	m.future = keep
}

// cloneDelivery copies a delivery's bytes, which the engine may reuse.
func cloneDelivery(d Delivery) Delivery {
	d.Service = slices.Clone(d.Service)
	d.Payload = slices.Clone(d.Payload)
	return d
}

// sequencer reports whether this node orders its view's messages as
// they come.
func (m *Machine) sequencer() bool { return m.state == member && m.orderer.ordering() }

// hand passes one message of the installed view, in its source's order,
// to the orderer.
func (m *Machine) hand(d Delivery) {
	o := &m.orderer
	o.hand(d, m.sequencer())
	if o.takenBy != 0 {
		// One a second at most: members that take turns sending alone
		// could move the order often (sequencer_moves counts every move).
		if m.taken.allow(m.now, time.Second, 1) {
			m.emit(Event{Kind: OrderTaken, View: m.view.clone(), Member: o.takenBy, GSeq: o.recorded + 1})
		} else {
			m.stats.EventsSuppressed++
		}
		o.takenBy = 0
	}
}

// sendRecords multicasts the order of the messages the sequencer took
// since its last record, at most a datagram's worth of runs per record.
// While a flush holds sends, or the window is full, they wait; a view
// change drops them (the view's end orders them).
func (m *Machine) sendRecords() {
	o := &m.orderer
	if m.state != member || m.participant != nil || !o.recordDue(m.now) {
		return
	}
	per := max(1, min(wire.MaxRecordRuns, (m.opt.Engine.DatagramSize-2*wire.MaxHeader)/wire.RecordSize(1)))
	for {
		b, runs, ok := o.nextRecord(per)
		if !ok {
			return
		}
		if _, err := m.multicast(nil, b, wire.Record, 0); err != nil {
			o.recordBlocked(m.now) // the window is full: stability wakes us, or the retry
			return
		}
		m.stats.RecordsSent++
		o.recordSent(runs)
	}
}

// recordDeadline is when the sequencer's next record is due; zero when
// none waits.
func (m *Machine) recordDeadline() time.Time {
	if m.state != member || m.participant != nil {
		return time.Time{}
	}
	return m.orderer.recordDeadline()
}
