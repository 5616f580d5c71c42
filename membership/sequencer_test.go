package membership

import (
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// The sequencer moves: the orderer on its own, node 1 in a view [2 1 3].

// recordOf is src's record seq, numbering runs from first and handing the
// order to next (0: not).
func recordOf(src, seq, first, next uint64, runs ...wire.OrderRun) Delivery {
	d := msg(src, seq, wire.Record)
	d.Payload = wire.NewEncoder().AppendRecord(nil, &wire.OrderRecord{First: first, Runs: runs, Next: next})
	return d
}

// sentRecords takes the records o has to send now, as the Machine would,
// and hands each back to o (a node takes its own records too).
func sentRecords(t *testing.T, o *orderer, now time.Time, seq *uint64) []wire.OrderRecord {
	t.Helper()
	var out []wire.OrderRecord
	if !o.recordDue(now) {
		return nil
	}
	for {
		b, n, ok := o.nextRecord(wire.MaxRecordRuns)
		if !ok {
			return out
		}
		var r wire.OrderRecord
		if err := wire.NewDecoder().DecodeRecord(b, &r); err != nil {
			t.Fatal(err)
		}
		r.Runs = append([]wire.OrderRun(nil), r.Runs...)
		out = append(out, r)
		o.recordSent(n)
		*seq++
		d := msg(o.self, *seq, wire.Record)
		d.Payload = b
		o.hand(d, o.ordering())
	}
}

// A member handed the order takes over at the number after the handing
// record's last: it orders what it holds that no record numbered, sends
// nothing until every member holds that record, and then orders its own
// messages without waiting for anyone.
func TestOrdererTakesTheOrder(t *testing.T) {
	h := holdsMap{}
	o, st := testOrderer(h)
	now := time.Unix(1, 0)
	o.hand(msg(3, 1, wire.Total), o.ordering())
	o.hand(msg(3, 2, wire.Total), o.ordering())
	o.hand(msg(3, 3, wire.FIFO), o.ordering())
	o.hand(msg(3, 4, wire.Total), o.ordering())
	// Node 2 numbered 3/1 and hands the order to node 1.
	o.hand(recordOf(2, 1, 1, 1, wire.OrderRun{Source: 3, Seq: 1, Count: 1}), o.ordering())
	if got := orderedOut(o); got != "3/1#1" {
		t.Fatalf("delivered %q, want 3/1#1", got)
	}
	if !o.ordering() || st.SequencerMoves != 1 {
		t.Fatalf("node 1 should order now: ordering %v, moves %d", o.ordering(), st.SequencerMoves)
	}
	if !o.safeReportDue(now) {
		t.Fatal("taking the order should ask for an early session message")
	}
	var seq uint64
	if rs := sentRecords(t, o, now, &seq); len(rs) != 0 {
		t.Fatalf("records %v went out before member 3 held the record that handed the order on", rs)
	}
	h[[2]uint64{3, 2}], h[[2]uint64{2, 2}] = 1, 1
	o.hand(msg(1, 1, wire.Total), o.ordering())
	rs := sentRecords(t, o, now, &seq)
	want := "[record 2 [{3 2 2} {1 1 1}]]"
	if got := formatRecords(rs); got != want {
		t.Fatalf("records %s, want %s", got, want)
	}
	if got := orderedOut(o); got != "3/2#2, 3/3, 3/4#3, 1/1#4" {
		t.Fatalf("delivered %q", got)
	}
	if st.BadRecords != 0 || o.outstanding() {
		t.Fatalf("bad records %d, outstanding %v", st.BadRecords, o.outstanding())
	}
}

// A message numbered by the handing record that has not reached the new
// sequencer yet is not numbered again when it comes.
func TestOrdererTakesTheOrderAheadOfMessages(t *testing.T) {
	h := holdsMap{{3, 2}: 1, {2, 2}: 1}
	o, _ := testOrderer(h)
	now := time.Unix(1, 0)
	o.hand(recordOf(2, 1, 1, 1, wire.OrderRun{Source: 3, Seq: 1, Count: 2}), o.ordering())
	o.hand(msg(3, 1, wire.Total), o.ordering())
	o.hand(msg(3, 2, wire.Total), o.ordering())
	o.hand(msg(3, 3, wire.Total), o.ordering())
	var seq uint64
	if got, want := formatRecords(sentRecords(t, o, now, &seq)), "[record 3 [{3 3 1}]]"; got != want {
		t.Fatalf("records %s, want %s", got, want)
	}
	if got := orderedOut(o); got != "3/1#1, 3/2#2, 3/3#3" {
		t.Fatalf("delivered %q", got)
	}
}

// The sequencer hands the order to a member after MoveAfter of its
// messages in a row: what it assigned goes out first, the last record
// names the member, and it assigns nothing more.
func TestOrdererHandsTheOrderOn(t *testing.T) {
	o, st := testOrderer(holdsMap{})
	o.seqr, o.moveAfter = 1, 3 // moveTurns 0: the messages of one turn count
	now := time.Unix(1, 0)
	var seq uint64
	o.hand(msg(3, 1, wire.Total), o.ordering())
	o.hand(msg(1, 1, wire.Total), o.ordering()) // its own break the streak
	for s := uint64(2); s <= 5; s++ {
		o.hand(msg(3, s, wire.Total), o.ordering())
	}
	if o.ordering() || o.handTo != 3 {
		t.Fatalf("after three of node 3's in a row: ordering %v, handing to %d", o.ordering(), o.handTo)
	}
	rs := sentRecords(t, o, now, &seq)
	if got, want := formatRecords(rs), "[record 1 [{3 1 1} {1 1 1} {3 2 3}] next 3]"; got != want {
		t.Fatalf("records %s, want %s", got, want)
	}
	if o.sequencerID() != 3 || o.sending() || st.SequencerMoves != 1 {
		t.Fatalf("the order should be node 3's: sequencer %d, sending %v, moves %d", o.sequencerID(), o.sending(), st.SequencerMoves)
	}
	// 3/5 waits for node 3's record.
	if got := orderedOut(o); got != "3/1#1, 1/1#2, 3/2#3, 3/3#4, 3/4#5" {
		t.Fatalf("delivered %q", got)
	}
	o.hand(recordOf(3, 6, 6, 0, wire.OrderRun{Source: 3, Seq: 5, Count: 1}), o.ordering())
	if got := orderedOut(o); got != "3/5#6" {
		t.Fatalf("delivered %q, want 3/5#6", got)
	}
	// The handing record goes alone when nothing waits for a record.
	o2, _ := testOrderer(holdsMap{})
	o2.seqr, o2.moveAfter = 1, 1
	o2.hand(msg(3, 1, wire.Total), o2.ordering())
	if rs := formatRecords(sentRecords(t, o2, now, &seq)); rs != "[record 1 [{3 1 1}] next 3]" {
		t.Fatalf("records %s", rs)
	}
}

// Messages in a row that came in fewer than MoveTurns records (one bulk
// datagram's, in one turn) do not move the order: a member that sends a
// burst among others is no member that sends alone.
func TestOrdererMovesOnlyOverTurns(t *testing.T) {
	o, _ := testOrderer(holdsMap{})
	o.seqr, o.moveAfter, o.moveTurns = 1, 4, 3
	now := time.Unix(1, 0)
	var seq uint64
	s := uint64(0)
	burst := func(n int) {
		for range n {
			s++
			o.hand(msg(3, s, wire.Total), o.ordering())
		}
		sentRecords(t, o, now, &seq)
	}
	burst(10)
	burst(1)
	burst(1)
	if o.handTo != 0 || o.sequencerID() != 1 {
		t.Fatalf("12 messages in 3 records moved the order (to %d)", o.handTo)
	}
	burst(1) // the first after 3 records
	if o.sequencerID() != 3 {
		t.Fatalf("13 messages over 3 records: the order is still node %d's", o.sequencerID())
	}
	// Another source's message starts the count again.
	o2, _ := testOrderer(holdsMap{})
	o2.seqr, o2.moveAfter, o2.moveTurns = 1, 2, 2
	for i, src := range []uint64{3, 2, 3, 2, 3} {
		o2.hand(msg(src, uint64(i/2+1), wire.Total), o2.ordering())
		sentRecords(t, o2, now, &seq)
	}
	if o2.sequencerID() != 1 || o2.handTo != 0 {
		t.Fatalf("two members taking turns moved the order to %d", o2.sequencerID())
	}
}

// A record of the member the order moves to may come before the record
// that moves it there (they come in two streams): it is kept, and taken
// in its turn; so is one of a member the order moves to after that.
func TestOrdererKeepsRecordsForTheirTurn(t *testing.T) {
	o, st := testOrderer(holdsMap{})
	for s := uint64(1); s <= 4; s++ {
		o.hand(msg(3, s, wire.Total), false)
	}
	o.hand(recordOf(3, 5, 2, 0, wire.OrderRun{Source: 3, Seq: 2, Count: 1}), false)
	o.hand(recordOf(3, 6, 3, 2, wire.OrderRun{Source: 3, Seq: 3, Count: 1}), false) // node 3 hands back to node 2
	if got := orderedOut(o); got != "" || len(o.kept) != 2 {
		t.Fatalf("delivered %q, kept %d", got, len(o.kept))
	}
	o.hand(recordOf(2, 1, 1, 3, wire.OrderRun{Source: 3, Seq: 1, Count: 1}), false)
	if got := orderedOut(o); got != "3/1#1, 3/2#2, 3/3#3" {
		t.Fatalf("delivered %q", got)
	}
	o.hand(recordOf(2, 2, 4, 0, wire.OrderRun{Source: 3, Seq: 4, Count: 1}), false)
	if got := orderedOut(o); got != "3/4#4" {
		t.Fatalf("delivered %q", got)
	}
	if st.SequencerMoves != 2 || o.sequencerID() != 2 || len(o.kept) != 0 || st.BadRecords != 0 {
		t.Fatalf("moves %d, sequencer %d, kept %d, bad %d", st.SequencerMoves, o.sequencerID(), len(o.kept), st.BadRecords)
	}
	// A kept record that can never be next is bad.
	o.hand(recordOf(3, 7, 2, 0, wire.OrderRun{Source: 3, Seq: 9, Count: 1}), false)
	if st.BadRecords != 1 || len(o.kept) != 0 {
		t.Fatalf("a stale record: bad %d, kept %d", st.BadRecords, len(o.kept))
	}
	// The view's end forgets what is kept.
	o.hand(recordOf(3, 8, 9, 0, wire.OrderRun{Source: 3, Seq: 9, Count: 1}), false)
	o.end()
	if len(o.kept) != 0 || o.seqr != 0 {
		t.Fatalf("after the view: kept %d, sequencer index %d", len(o.kept), o.seqr)
	}
}

func formatRecords(rs []wire.OrderRecord) string {
	s := "["
	for i, r := range rs {
		if i > 0 {
			s += " "
		}
		s += r.String()
	}
	return s + "]"
}
