package membership

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
)

// The orderer on its own: node 1 in a view [2 1 3], node 2 sequencing.

// holdsMap is a holder: how far each member holds each source's stream.
type holdsMap map[[2]uint64]uint64

func (h holdsMap) Holds(id, src, _ uint64) uint64 { return h[[2]uint64{id, src}] }

func testOrderer(h holdsMap) (*orderer, *Stats) {
	st := &Stats{}
	o := newOrderer(1, h, st)
	o.setView([]wire.Member{{ID: 2, Inc: 1}, {ID: 1, Inc: 1}, {ID: 3, Inc: 1}})
	return &o, st
}

func msg(src, seq uint64, order wire.Order) Delivery {
	return Delivery{Delivery: multicast.Delivery{Source: src, Inc: 1, Seq: seq, End: seq, Order: order,
		Payload: []byte(fmt.Sprintf("%d/%d", src, seq))}}
}

// record is the sequencer's (node 2's) record seq numbering runs from first.
func record(seq, first uint64, runs ...wire.OrderRun) Delivery {
	d := msg(2, seq, wire.Record)
	d.Payload = wire.NewEncoder().AppendRecord(nil, &wire.OrderRecord{First: first, Runs: runs})
	return d
}

// orderedOut lists what o delivered since the last call: src/seq, #gseq
// for ordered messages, and "final" for those of the view's end.
func orderedOut(o *orderer) string {
	var out []string
	for _, ev := range o.take(nil) {
		d := ev.Delivery
		s := fmt.Sprintf("%d/%d", d.Source, d.Seq)
		if d.GSeq != 0 {
			s += fmt.Sprintf("#%d", d.GSeq)
		}
		if d.Final {
			s += " final"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func TestOrdererWaitsForRecords(t *testing.T) {
	o, st := testOrderer(nil)
	steps := []struct {
		d    Delivery
		want string
	}{
		{msg(3, 1, wire.FIFO), "3/1"}, // FIFO: at once
		{msg(3, 2, wire.Total), ""},   // waits for its record
		{msg(3, 3, wire.FIFO), ""},    // waits behind it
		{msg(2, 1, wire.FIFO), "2/1"}, // another source's FIFO does not wait
		{record(2, 1, wire.OrderRun{Source: 3, Seq: 2, Count: 1}), "3/2#1, 3/3"},
		{record(3, 2, wire.OrderRun{Source: 3, Seq: 4, Count: 1}), ""}, // the record came first
		{msg(3, 4, wire.Total), "3/4#2"},
	}
	for i, s := range steps {
		o.hand(s.d, false)
		if got := orderedOut(o); got != s.want {
			t.Fatalf("step %d: delivered %q, want %q", i, got, s.want)
		}
	}
	if st.RecordsReceived != 2 || st.OrderedDelivered != 2 || o.outstanding() {
		t.Fatalf("records %d, ordered %d, outstanding %v", st.RecordsReceived, st.OrderedDelivered, o.outstanding())
	}
}

func TestOrdererRefusesRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Delivery
	}{
		{"not a member", func() Delivery { d := record(1, 1, wire.OrderRun{Source: 3, Seq: 1, Count: 1}); d.Source = 4; return d }()},
		{"handed to a stranger", func() Delivery {
			d := record(1, 1, wire.OrderRun{Source: 3, Seq: 1, Count: 1})
			d.Payload = wire.NewEncoder().AppendRecord(nil, &wire.OrderRecord{First: 1, Runs: []wire.OrderRun{{Source: 3, Seq: 1, Count: 1}}, Next: 4})
			return d
		}()},
		{"handed to itself", func() Delivery {
			d := record(1, 1, wire.OrderRun{Source: 3, Seq: 1, Count: 1})
			d.Payload = wire.NewEncoder().AppendRecord(nil, &wire.OrderRecord{First: 1, Runs: []wire.OrderRun{{Source: 3, Seq: 1, Count: 1}}, Next: 2})
			return d
		}()},
		{"another incarnation", func() Delivery { d := record(1, 1, wire.OrderRun{Source: 3, Seq: 1, Count: 1}); d.Inc = 2; return d }()},
		{"out of turn", record(1, 2, wire.OrderRun{Source: 3, Seq: 1, Count: 1})},
		{"malformed", func() Delivery { d := record(1, 1); d.Payload = []byte{0xc1}; return d }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, st := testOrderer(nil)
			o.hand(msg(3, 1, wire.Total), false)
			o.hand(tc.d, false)
			if got := orderedOut(o); got != "" || st.BadRecords != 1 {
				t.Fatalf("delivered %q, bad_records %d", got, st.BadRecords)
			}
		})
	}
}

func TestOrdererSafeWaitsForEveryMember(t *testing.T) {
	h := holdsMap{}
	o, _ := testOrderer(h)
	o.hand(msg(3, 1, wire.Safe), false)
	o.hand(record(1, 1, wire.OrderRun{Source: 3, Seq: 1, Count: 1}), false)
	if got := orderedOut(o); got != "" {
		t.Fatalf("delivered %q before anyone reported holding it", got)
	}
	h[[2]uint64{2, 3}] = 1
	o.advance(false)
	if got := orderedOut(o); got != "" {
		t.Fatalf("delivered %q while member 3 had not reported", got)
	}
	h[[2]uint64{3, 3}] = 1
	o.advance(false)
	if got := orderedOut(o); got != "3/1#1" {
		t.Fatalf("delivered %q once every member holds it, want 3/1#1", got)
	}
	if now := time.Unix(1, 0); !o.safeReportDue(now) || o.safeReportDue(now) {
		t.Fatal("a safe message of another source should ask for one early session message")
	}
}

// At the view's end the records' order comes first, then what no record
// ordered, by (source, seq), numbered on; a recorded message this node
// does not hold is past the cut.
func TestOrdererEnd(t *testing.T) {
	o, st := testOrderer(holdsMap{})
	o.hand(msg(3, 2, wire.Total), false)
	o.hand(msg(3, 3, wire.FIFO), false)
	o.hand(msg(2, 1, wire.Safe), false)
	o.hand(record(1, 1, wire.OrderRun{Source: 2, Seq: 1, Count: 1}, wire.OrderRun{Source: 1, Seq: 1, Count: 1}), false)
	o.end()
	if got, want := orderedOut(o), "2/1#1 final, 3/2#3 final, 3/3 final"; got != want {
		t.Fatalf("at the end delivered %q, want %q", got, want)
	}
	if st.Unheld != 1 || st.Unrecorded != 1 || o.outstanding() || o.numbered != 0 {
		t.Fatalf("unheld %d, unrecorded %d, outstanding %v, numbered %d", st.Unheld, st.Unrecorded, o.outstanding(), o.numbered)
	}
}

func TestOrdererRecordsAsSequencer(t *testing.T) {
	o, _ := testOrderer(nil)
	o.seqr = 1 // node 1 orders
	for _, d := range []Delivery{msg(3, 1, wire.Total), msg(3, 2, wire.Safe), msg(2, 1, wire.Total), msg(3, 3, wire.Total)} {
		o.hand(d, true)
	}
	now := time.Unix(1, 0)
	if !o.recordDue(now) || o.recordDeadline().After(now) {
		t.Fatalf("a record is due at once: deadline %v", o.recordDeadline())
	}
	if o.recordBlocked(now); o.recordDue(now.Add(recordRetry-1)) || !o.recordDue(now.Add(recordRetry)) || o.recordDeadline() != now.Add(recordRetry) {
		t.Fatalf("a record that could not go out is tried again after recordRetry: deadline %v", o.recordDeadline())
	}
	dec, got := wire.NewDecoder(), wire.OrderRecord{}
	var firsts []uint64
	for {
		b, n, ok := o.nextRecord(2)
		if !ok {
			break
		}
		if err := dec.DecodeRecord(b, &got); err != nil || len(got.Runs) != n {
			t.Fatalf("record %x: %v, %d runs", b, err, n)
		}
		firsts = append(firsts, got.First)
		o.recordSent(n)
	}
	// Runs: 3/1×2, 2/1×1, 3/3×1; two per record.
	if fmt.Sprint(firsts) != "[1 4]" || o.recorded != 4 || o.recordDeadline() != (time.Time{}) {
		t.Fatalf("records from %v, %d recorded", firsts, o.recorded)
	}
}

func TestOrdererAddressed(t *testing.T) {
	o, st := testOrderer(nil)
	for _, tc := range []struct {
		src, dest uint64
	}{{3, 1}, {3, 2}, {1, 3}, {3, 0}} {
		d := msg(tc.src, 1, wire.FIFO)
		d.Dest = tc.dest
		o.hand(d, false)
	}
	if got := orderedOut(o); got != "3/1, 3/1" || st.ForOthers != 1 {
		t.Fatalf("delivered %q, for_others %d: want this node's and everyone's, and the other's counted", got, st.ForOthers)
	}
}
