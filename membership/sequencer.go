package membership

import (
	"maps"
	"slices"

	"github.com/huddle-lan/huddle/internal/wire"
)

// The sequencer moves (docs/design.md, "The sequencer moves"). Each view
// starts with its coordinator ordering its total and safe messages. When
// the sequencer has ordered moveAfter messages in a row of one other
// member, and none of anyone else in between, it hands the order to that
// member: its last record names it (wire.OrderRecord.Next). From the
// number after that record's last, the member orders, and a sender that
// orders its own messages delivers them without a round trip, as a
// token ring's holder does. One record after another, a single chain
// numbers the view's messages, so every member that delivers by record
// delivers in one order, and the view's end (orderer.end) is unchanged.
//
// A member takes records from the sequencer only (the view's member at
// index seqr), and the next one in turn. Records come in the streams of
// their senders, so a member may get the new sequencer's first record
// before the record that handed it the order. The new sequencer sends
// none until every member reports holding that record (members report
// early when they take it), so that in the view this does not happen;
// where messages are held and released later (a flush's cut), a record of
// another member is kept until its turn (keep).
type moving struct {
	seqr     int      // index in members of the member that orders now: 0, the coordinator, as the view starts
	handTo   uint64   // as the sequencer: the member this node hands the order to; it assigns nothing more
	handSent bool     // the record that hands it on went out
	handedBy Delivery // as the new sequencer: the record that handed it the order (source, incarnation, end; no payload)
	waitHand bool     // no record goes out until every member holds handedBy

	handed    map[uint64]uint64 // per source: its ordered messages handed to the orderer in this view
	numberedN map[uint64]uint64 // per source: its ordered messages the records taken so far number
	assigned  map[uint64]uint64 // as the sequencer, per source: its ordered messages numbered or queued for a record
	streakSrc uint64            // the source of the last messages assigned
	streak    int               // how many in a row
	streakRec int               // records sent since the streak began

	kept     []keptRecord // records of members other than the sequencer, in arrival order
	keptRuns int

	takenBy uint64 // the member that just handed this node the order, until the Machine says so (OrderTaken)
}

// MoveAfter is how many ordered messages in a row of one other member,
// and of no one else, make the sequencer hand the order to it, provided
// they span MoveTurns records at least: enough that two members sending
// together do not pass it back and forth (one bulk datagram holds 64
// messages of 1000 bytes, hence the records: one per turn of the loop
// that ordered something), few enough that a member that sends alone
// orders its own within a second at 100 msg/s.
const (
	MoveAfter = 64
	MoveTurns = 16
)

// keptRecord is a record of src kept until src orders.
type keptRecord struct {
	d   Delivery // its message, without payload
	rec wire.OrderRecord
}

// keep holds record rec of d's source, a member that does not order now,
// until it does; one that can never be next is counted bad.
func (o *orderer) keep(d *Delivery, rec *wire.OrderRecord) {
	if rec.First <= o.numbered || len(o.kept) >= maxRuns || o.keptRuns+len(rec.Runs) > maxRuns {
		o.stats.BadRecords++
		return
	}
	k := keptRecord{d: Delivery{Delivery: d.Delivery}, rec: wire.OrderRecord{First: rec.First, Runs: slices.Clone(rec.Runs), Next: rec.Next}}
	k.d.Payload, k.d.Service = nil, nil
	o.kept = append(o.kept, k)
	o.keptRuns += len(rec.Runs)
}

// takeKept applies the kept records of the sequencer, in their order,
// while the order moves to members whose records were kept.
func (o *orderer) takeKept() {
	for i := 0; i < len(o.kept); {
		if o.kept[i].d.Source != o.sequencerID() {
			i++
			continue
		}
		k := o.kept[i]
		o.kept = slices.Delete(o.kept, i, i+1)
		o.keptRuns -= len(k.rec.Runs)
		o.apply(&k.d, &k.rec)
		i = 0 // the order may have moved on
	}
}

// sequencerID is the ID of the member that orders now.
func (o *orderer) sequencerID() uint64 {
	if o.seqr >= len(o.members) {
		return 0
	}
	return o.members[o.seqr].ID
}

// ordering reports whether this node assigns numbers to the view's
// ordered messages as they come: it is the sequencer and is not handing
// the order on.
func (o *orderer) ordering() bool { return o.sequencerID() == o.self && o.handTo == 0 }

// sending reports whether this node sends the view's records: it is the
// sequencer, or is handing the order on and has not yet sent the record
// that does.
func (o *orderer) sending() bool { return o.sequencerID() == o.self && !o.handSent }

// recordWaits reports whether this node has a record to send and may
// send it: a new sequencer's first once every member holds the record
// that handed it the order.
func (o *orderer) recordWaits() bool {
	return o.sending() && (len(o.toOrder) > 0 || o.handTo != 0) && (!o.waitHand || o.safe(&o.handedBy))
}

// index returns the index of member id in the view, or -1.
func (o *orderer) index(id uint64) int {
	for i, m := range o.members {
		if m.ID == id {
			return i
		}
	}
	return -1
}

// member reports whether (id, inc) is a member of the view.
func (o *orderer) member(id, inc uint64) bool {
	i := o.index(id)
	return i >= 0 && o.members[i].Inc == inc
}

// handOrdered counts an ordered message of src handed to the orderer, in
// src's order, and reports whether it is one no record numbers and this
// node has not assigned: the sequencer assigns it.
func (o *orderer) handOrdered(src uint64) bool {
	o.counts()
	o.handed[src]++
	return o.handed[src] > o.assigned[src]
}

// counted notes that a record taken numbers n more ordered messages of src.
func (o *orderer) counted(src, n uint64) {
	o.counts()
	o.numberedN[src] += n
}

// counts makes the view's counts, at their first use in it.
func (o *orderer) counts() {
	if o.handed == nil {
		o.handed, o.numberedN, o.assigned = map[uint64]uint64{}, map[uint64]uint64{}, map[uint64]uint64{}
	}
}

// assigned1 notes that the sequencer assigned src's next ordered message,
// and decides whether to hand the order on: after moveAfter of one other
// member's in a row.
func (o *orderer) assigned1(src uint64) {
	o.assigned[src]++
	if src != o.streakSrc {
		o.streakSrc, o.streak, o.streakRec = src, 0, 0
	}
	o.streak++
	if o.moveAfter > 0 && o.streak >= o.moveAfter && o.streakRec >= o.moveTurns && src != o.self && o.handTo == 0 && o.index(src) >= 0 {
		o.handTo = src
	}
}

// moveTo makes the member at index next the sequencer, as the record d
// says. When that is this node, it orders from the number after the
// record's last: what it holds that no record numbers, source by source
// in the view's order, and what comes later as it comes.
func (o *orderer) moveTo(next int, d *Delivery) {
	o.stats.SequencerMoves++
	o.seqr = next
	o.handTo, o.handSent, o.streakSrc, o.streak = 0, false, 0, 0
	o.safeNews = true // tell the others soon that this node holds the record, so that the new sequencer may go on
	if o.members[next].ID != o.self {
		return
	}
	o.recorded = o.numbered
	o.takenBy = d.Source
	o.handedBy, o.waitHand = Delivery{Delivery: d.Delivery}, true
	o.handedBy.Payload, o.handedBy.Service = nil, nil
	o.counts()
	o.assigned = maps.Clone(o.numberedN)
	for _, m := range o.members {
		q := o.held[m.ID]
		k := uint64(0)
		for i := range q {
			if ordered(q[i].Order) {
				k++
			}
		}
		n := o.handed[m.ID] - k // the ordinal of the message before the first held
		for i := range q {
			if !ordered(q[i].Order) {
				continue
			}
			if n++; n > o.assigned[m.ID] {
				o.assign(m.ID, q[i].Seq)
			}
		}
	}
}

// recordFor is the record that numbers runs, the sequencer's next, which
// hands the order on when last and the node is handing it.
func (o *orderer) recordFor(runs []wire.OrderRun, last bool) wire.OrderRecord {
	r := wire.OrderRecord{First: o.recorded + 1, Runs: runs}
	if last {
		r.Next = o.handTo
	}
	return r
}
