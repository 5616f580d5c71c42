package wire

import (
	"errors"
	"reflect"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	enc, dec := NewEncoder(), NewDecoder()
	runs := make([]OrderRun, MaxRecordRuns)
	for i := range runs {
		runs[i] = OrderRun{Source: ^uint64(0) - uint64(i), Seq: MaxSeq - 2 - uint64(i), Count: 1}
	}
	for _, r := range []OrderRecord{
		{First: 1, Runs: []OrderRun{{Source: 7, Seq: 1, Count: 3}}},
		{First: 1 << 40, Runs: runs},
		{First: 1 << 40, Runs: runs, Next: ^uint64(0)},
		{First: 9, Runs: nil, Next: 3},
	} {
		b := enc.AppendRecord(nil, &r)
		if len(b) > RecordSize(len(r.Runs)) {
			t.Errorf("%v: %d bytes, RecordSize says at most %d", r, len(b), RecordSize(len(r.Runs)))
		}
		var got OrderRecord
		if err := dec.DecodeRecord(b, &got); err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("decoded %v, sent %v", got, r)
		}
	}
}

func TestRecordRejects(t *testing.T) {
	enc, dec := NewEncoder(), NewDecoder()
	too := make([]OrderRun, MaxRecordRuns+1)
	for i := range too {
		too[i] = OrderRun{Source: 1, Seq: 1, Count: 1}
	}
	for name, r := range map[string]OrderRecord{
		"no runs":         {First: 1},
		"next 0, no runs": {First: 1, Runs: []OrderRun{}},
		"too many":        {First: 1, Runs: too},
		"empty run":       {First: 1, Runs: []OrderRun{{Source: 1, Seq: 1}}},
		"gseq 0":          {First: 0, Runs: []OrderRun{{Source: 1, Seq: 1, Count: 1}}},
		"seq overrun":     {First: 1, Runs: []OrderRun{{Source: 1, Seq: MaxSeq - 1, Count: 2}}},
	} {
		var got OrderRecord
		if err := dec.DecodeRecord(enc.AppendRecord(nil, &r), &got); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decode gave %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzRecord feeds arbitrary bytes to the order-record decoder: no panic,
// and what it accepts re-encodes to the same record.
func FuzzRecord(f *testing.F) {
	enc := NewEncoder()
	f.Add(enc.AppendRecord(nil, &OrderRecord{First: 1, Runs: []OrderRun{{Source: 7, Seq: 1, Count: 3}, {Source: 9, Seq: 4, Count: 1}}}))
	f.Add([]byte{0x92, 0x01, 0x90})
	f.Add(enc.AppendRecord(nil, &OrderRecord{First: 5, Runs: []OrderRun{{Source: 7, Seq: 1, Count: 3}}, Next: 9}))
	f.Add([]byte{0x93, 0x01, 0x90, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		var r OrderRecord
		if err := NewDecoder().DecodeRecord(data, &r); err != nil {
			return
		}
		var again OrderRecord
		if err := NewDecoder().DecodeRecord(NewEncoder().AppendRecord(nil, &r), &again); err != nil || !reflect.DeepEqual(r, again) {
			t.Fatalf("record %v re-decodes as %v, %v", r, again, err)
		}
	})
}

func TestUintsRoundTrip(t *testing.T) {
	enc, dec := NewEncoder(), NewDecoder()
	for _, vs := range [][]uint64{{1}, {4, 1 << 40, ^uint64(0)}, {0, 0}} {
		b := enc.AppendUints(nil, vs...)
		if len(b) > MaxUintsPayload(len(vs)) {
			t.Errorf("%v: %d bytes, more than %d", vs, len(b), MaxUintsPayload(len(vs)))
		}
		got := make([]uint64, len(vs))
		if err := dec.DecodeUints(b, got); err != nil || !reflect.DeepEqual(got, vs) {
			t.Errorf("%v decoded as %v, %v", vs, got, err)
		}
		if err := dec.DecodeUints(b, make([]uint64, len(vs)+1)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%v read as %d numbers: %v", vs, len(vs)+1, err)
		}
		if err := dec.DecodeUints(append(b, 0), got); !errors.Is(err, ErrMalformed) {
			t.Errorf("%v with a trailing byte: %v", vs, err)
		}
	}
	if err := dec.DecodeUints([]byte{0x92, 0xff, 0x01}, make([]uint64, 2)); !errors.Is(err, ErrMalformed) {
		t.Errorf("a negative int: %v", err)
	}
}
