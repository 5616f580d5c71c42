package wire

import (
	"errors"
	"fmt"
)

// OrderRecord is the payload of a Record message, which the sequencer of a
// view (its coordinator, or the member it handed the order to) multicasts
// in its own reliable stream. It assigns the next total-order numbers of
// the view, from First on, to the runs it lists, one run after the other:
// [first, [source, seq, count, ...]], or [first, runs, next] when it hands
// the order on: then the member next orders the view's messages from the
// number after this record's last, and the record may list no runs.
type OrderRecord struct {
	First uint64 // the view-local total-order number (gseq) of the first run's first message
	Runs  []OrderRun
	Next  uint64 // the ID of the member that orders after this record; 0: the sender goes on
}

// OrderRun is Count ordered (total or safe) messages of Source, in its
// stream order, the first of which has sequence number Seq.
type OrderRun struct {
	Source, Seq, Count uint64
}

// MaxRecordRuns bounds the runs of one record; a sequencer sends more
// records rather than longer ones, and a receiver rejects longer ones.
const MaxRecordRuns = 64

// RecordSize is the most bytes a record of n runs takes.
func RecordSize(n int) int { return 2 + 9 + 3 + n*(1+3*9) + 9 }

// AppendRecord appends the encoding of r to dst.
func (e *Encoder) AppendRecord(dst []byte, r *OrderRecord) []byte {
	e.buf.b = dst
	e.array(2 + int(min(r.Next, 1)))
	e.uints(r.First)
	e.array(len(r.Runs))
	for _, run := range r.Runs {
		e.array(3)
		e.uints(run.Source, run.Seq, run.Count)
	}
	if r.Next != 0 {
		e.uints(r.Next)
	}
	out := e.buf.b
	e.buf.b = nil
	return out
}

// errRecord is what a well-formed record that makes no sense wraps.
var errRecord = errors.New("order record")

// DecodeRecord parses a record into r, reusing r.Runs. It rejects what no
// sequencer sends: no runs (unless it hands the order on), more than
// MaxRecordRuns, an empty run, numbers that would overflow, a Next of 0.
func (d *Decoder) DecodeRecord(data []byte, r *OrderRecord) (err error) {
	d.data = data
	d.r.Reset(data)
	d.dec.ResetReader(&d.r)
	defer func() { d.data = nil }()
	fields, err := d.countOf(1)
	if err != nil {
		return err
	}
	if fields != 2 && fields != 3 {
		return d.fail("%v of %d fields (2 or 3)", errRecord, fields)
	}
	if r.First, err = d.seq(); err != nil {
		return err
	}
	n, err := d.countOf(4)
	if err != nil {
		return err
	}
	if n == 0 && fields == 2 || n > MaxRecordRuns {
		return d.fail("%v of %d runs (1 to %d)", errRecord, n, MaxRecordRuns)
	}
	r.Runs = grow(r.Runs, n)
	total := uint64(0)
	for i := range r.Runs {
		run := &r.Runs[i]
		if _, err := d.arrayLen(3); err != nil {
			return err
		}
		if run.Source, err = d.uint(); err != nil {
			return err
		}
		if run.Seq, err = d.seq(); err != nil {
			return err
		}
		if run.Count, err = d.uintMax(MaxSeq - 1); err != nil {
			return err
		}
		if run.Count == 0 || run.Seq+run.Count > MaxSeq {
			return d.fail("%v run %d: %d messages from %d", errRecord, i, run.Count, run.Seq)
		}
		total += run.Count
	}
	r.Next = 0
	if fields == 3 {
		if r.Next, err = d.uint(); err != nil {
			return err
		}
		if r.Next == 0 {
			return d.fail("%v handed to member 0", errRecord)
		}
	}
	if r.First == 0 || total > MaxSeq-r.First {
		return d.fail("%v numbering %d messages from %d", errRecord, total, r.First)
	}
	if d.r.Len() != 0 {
		return d.fail("%d trailing bytes", d.r.Len())
	}
	return nil
}

// String is for tests and logs.
func (r OrderRecord) String() string {
	if r.Next != 0 {
		return fmt.Sprintf("record %d %v next %d", r.First, r.Runs, r.Next)
	}
	return fmt.Sprintf("record %d %v", r.First, r.Runs)
}
