package election

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil"
)

func TestCodecRoundTrip(t *testing.T) {
	var c codec
	for _, msg := range []message{
		{kindElection, 1, 1},
		{kindElected, 127, 128},
		{kindAnswer, 1 << 16, 1<<32 - 1},
		{kindCoordinator, math.MaxUint64, math.MaxUint64},
	} {
		b := c.append(nil, msg)
		got, err := c.decode(b)
		if err != nil || got != msg {
			t.Errorf("%+v: encoded %x, decoded %+v, %v", msg, b, got, err)
		}
		if len(b) > maxPayload {
			t.Errorf("%+v: %d bytes", msg, len(b))
		}
	}
	if b := c.append([]byte{0xff}, message{kindElection, 3, 7}); string(b) != "\xff\x93\x01\x03\x07" {
		t.Errorf("append: %x, want ff 93 01 03 07 (a 4-byte message after dst)", b)
	}
}

func TestCodecRejects(t *testing.T) {
	mp := func(vs ...any) []byte { return testutil.Msgpack(t, vs...) }
	var c codec
	cases := testutil.NotArrays(maxPayload)
	maps.Copy(cases, map[string][]byte{
		"two fields":       mp(1, 1),
		"four fields":      mp(1, 1, 1, 1),
		"truncated":        mp(1, 1, 300)[:5],
		"negative":         mp(1, -1, 1),
		"nil field":        mp(1, nil, 1),
		"float":            mp(1, 1.5, 1),
		"string":           mp(1, "1", 1),
		"kind 0":           mp(0, 1, 1),
		"kind 7":           mp(7, 1, 1),
		"tally of round 0": mp(5, 0, 1),
		"round 0":          mp(1, 0, 1),
		"id 0":             mp(1, 1, 0),
		"trailing byte":    append(mp(1, 1, 1), 0),
	})
	for name, p := range cases {
		if msg, err := c.decode(p); !errors.Is(err, errMalformed) {
			t.Errorf("%s (%x): %+v, %v; want errMalformed", name, p, msg, err)
		}
	}
}

// FuzzReceive feeds arbitrary payloads, from arbitrary senders (members,
// this node, outsiders), with time passing, to a member of a view of
// five, ring or bully. It must not panic, and its state must stay sane:
// a leader of its view or none, from its round; nothing sent to itself
// or outside the view; every payload it sends decodes; no event of a
// round it does not know; every Receive counted.
// `go test -run '^$' -fuzz FuzzReceive ./election` searches further.
func FuzzReceive(f *testing.F) {
	var c codec
	for _, k := range []kind{kindElection, kindElected, kindAnswer, kindCoordinator} {
		for _, id := range []uint64{1, 3, 5, 9} {
			p := c.append(nil, message{k, 1 + id%3, id})
			f.Add(false, append([]byte{byte(id), byte(len(p))}, p...))
			f.Add(true, append([]byte{byte(id), byte(len(p))}, p...))
		}
	}
	f.Add(true, []byte{0xfe, 0, 5, 4, 0x93, 1, 2, 5, 0xff, 30, 4, 4, 0x93, 3, 2, 4, 0xff, 30})
	f.Add(false, []byte{2, 4, 0x93, 1, 9, 3, 0xff, 4, 4, 4, 0x93, 2, 9, 5, 0xfe, 0})
	members := []uint64{1, 2, 3, 4, 5}
	f.Fuzz(func(t *testing.T, bully bool, data []byte) {
		opt := Options{Self: 3, Algorithm: Ring, AnswerTimeout: 10 * time.Millisecond, CoordinatorTimeout: 20 * time.Millisecond}
		if bully {
			opt.Algorithm = Bully
		}
		m := New(opt)
		now := time.Unix(1_800_000_000, 0)
		m.SetView(now, "1.1", members)
		calls, round := 0, uint64(0)
		// data: steps of two bytes and a payload. 0xff n: n ms pass, and
		// Tick. 0xfe _: Start. s n: a payload of n bytes from s%8 (3 is
		// this node; 0, 6 and 7 are outside the view).
		for len(data) >= 2 {
			op, n := data[0], int(data[1])
			data = data[2:]
			switch op {
			case 0xff:
				now = now.Add(time.Duration(n) * time.Millisecond)
				m.Tick(now)
			case 0xfe:
				m.Start(now)
			default:
				n = min(n, len(data))
				m.Receive(now, uint64(op%8), data[:n])
				data = data[n:]
				calls++
			}
			checkSane(t, m, members, &round)
		}
		if s := m.Stats(); s.Received.Total()+s.Malformed+s.AccountingRecv != uint64(calls) {
			t.Fatalf("%d Receive calls, stats %+v", calls, s)
		}
	})
}

func checkSane(t *testing.T, m *Machine, members []uint64, round *uint64) {
	t.Helper()
	if m.round < *round {
		t.Fatalf("round went back from %d to %d", *round, m.round)
	}
	if err := m.invariants(); err != nil {
		t.Fatal(err)
	}
	*round = m.round
	var c codec
	for _, out := range m.TakeOutput() {
		msg, err := c.decode(out.Payload)
		if err == nil && msg.kind >= kindTally {
			if out.To == m.self || out.To != 0 && !m.isMember(out.To) || msg.round > m.round || (msg.kind == kindResult) != (out.To == 0) {
				t.Fatalf("sent %+v (%+v)", out, msg)
			}
			continue
		}
		if out.To == m.self || !m.isMember(out.To) || err != nil || msg.round > m.round || !m.uses(msg, m.self) {
			t.Fatalf("sent %+v (%+v, %v)", out, msg, err)
		}
	}
	for _, e := range m.TakeEvents() {
		if e.Round > m.round || e.Round == 0 {
			t.Fatalf("event %+v in round %d", e, m.round)
		}
	}
}

// invariants checks a machine's state against itself: a leader of its
// view or none, from its round; no leader while it takes part in a round,
// but a ring winner's own; timers only in the states that use them.
func (m *Machine) invariants() error {
	ld, r := m.Leader()
	switch {
	case ld != 0 && (!m.isMember(ld) || r != m.round):
		return fmt.Errorf("node %d: leader %d of round %d in round %d, view %v", m.self, ld, r, m.round, m.members)
	case ld == 0 && r != 0:
		return fmt.Errorf("node %d: no leader, round %d", m.self, r)
	case m.busy() && ld != 0 && !(m.state == elected && ld == m.self):
		return fmt.Errorf("node %d: state %d with leader %d", m.self, m.state, ld)
	case !m.answerAt.IsZero() && m.state != candidate, !m.coordAt.IsZero() && m.state != waiting:
		return fmt.Errorf("node %d: state %d with answer timer %v, coordinator timer %v", m.self, m.state, m.answerAt, m.coordAt)
	case !m.hasView && (m.busy() || !m.NextDeadline().IsZero()):
		return fmt.Errorf("node %d: no view, state %d, deadline %v", m.self, m.state, m.NextDeadline())
	}
	return nil
}
