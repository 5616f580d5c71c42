package mutex

import (
	"errors"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil"
)

func TestCodecRoundTrip(t *testing.T) {
	var c codec
	for _, msg := range []message{{kindRequest, 1}, {kindReply, 128}, {kindRequest, 1 << 40}, {kindReply, math.MaxUint64}} {
		b := c.append(nil, msg)
		got, err := c.decode(b)
		if err != nil || got != msg || len(b) > maxPayload {
			t.Errorf("%+v: encoded %x, decoded %+v, %v", msg, b, got, err)
		}
	}
	if b := c.append([]byte{0xff}, message{kindReply, 7}); string(b) != "\xff\x92\x02\x07" {
		t.Errorf("append: %x, want ff 92 02 07 (a 3-byte message after dst)", b)
	}
}

func TestCodecRejects(t *testing.T) {
	mp := func(vs ...any) []byte { return testutil.Msgpack(t, vs...) }
	var c codec
	cases := testutil.NotArrays(maxPayload)
	maps.Copy(cases, map[string][]byte{
		"one field":     mp(1),
		"three fields":  mp(1, 1, 1),
		"truncated":     mp(1, 300)[:3],
		"negative":      mp(1, -1),
		"nil field":     mp(1, nil),
		"float":         mp(1, 1.5),
		"string":        mp("1", 1),
		"kind 0":        mp(0, 1),
		"kind 3":        mp(3, 1),
		"ts 0":          mp(1, 0),
		"trailing byte": append(mp(1, 1), 0),
	})
	for name, p := range cases {
		if msg, err := c.decode(p); !errors.Is(err, errMalformed) {
			t.Errorf("%s (%x): %+v, %v; want errMalformed", name, p, msg, err)
		}
	}
}

// FuzzReceive feeds arbitrary payloads from arbitrary senders (members,
// this node, outsiders), with views changing and requests and releases in
// between, to a member of a view of up to five, with or without a quorum,
// ticked at its deadlines as the runtime ticks it.
// It must not panic, and its state must stay sane: the invariants hold,
// nothing is sent to itself or outside the view, every payload it sends
// decodes, the clock never goes back, every Receive is counted.
// `go test -run '^$' -fuzz FuzzReceive ./mutex` searches further.
func FuzzReceive(f *testing.F) {
	for _, k := range []kind{kindRequest, kindReply} {
		for _, ts := range []uint64{1, 2, 5, 300} {
			p := payload(k, ts)
			f.Add(false, append([]byte{0xfe, 0, 2, byte(len(p))}, p...))
			f.Add(true, append([]byte{4, byte(len(p))}, p...))
		}
	}
	f.Add(true, []byte{0xfe, 0, 2, 2, 0x92, 2, 1, 0xfc, 0x07, 0xfd, 0, 4, 3, 0x92, 1, 9})
	f.Add(false, []byte{0xfc, 0x13, 0xfe, 0, 5, 3, 0x92, 1, 1, 0xfc, 0x1f, 0xfd, 0})
	f.Fuzz(func(t *testing.T, quorum bool, data []byte) {
		opt := Options{Self: 3}
		now := time.Unix(1_800_000_000, 0)
		silent := 0 // members not heard, by bit
		if quorum {
			opt.Quorum, opt.Lease = 5, 5*time.Millisecond
		}
		// Every member is heard at every instant but the silent ones.
		heardAt := func(id uint64) time.Time {
			if id < 8 && silent&(1<<id) != 0 {
				return time.Time{}
			}
			return now
		}
		heard := func(ms []uint64) []time.Time {
			var at []time.Time
			for _, id := range ms {
				at = append(at, heardAt(id))
			}
			return at
		}
		m := NewRA(opt)
		m.SetView(now, "1.1", []uint64{1, 2, 3, 4, 5}, heard([]uint64{1, 2, 3, 4, 5}))
		calls, clock, views := 0, uint64(0), 1
		// data: steps of two bytes and a payload. 0xfe _: Request. 0xfd _:
		// Release. 0xfc b: a view of the members 1..5 whose bit is set in
		// b (3 is this node). 0xfb b: the members whose bit is set in b
		// go silent (quorum mode). s n: a payload of n bytes from s%8 (0,
		// 6 and 7 are outside the view). Each step is 1 ms, and ticks.
		for len(data) >= 2 {
			op, n := data[0], int(data[1])
			data = data[2:]
			now = now.Add(time.Millisecond)
			if d := m.NextDeadline(); !d.IsZero() && !d.After(now) {
				m.Tick(now) // as the runtime does: a deadline passed comes first
				checkSane(t, m, now, &clock)
			}
			for id := range uint64(8) {
				m.Heard(id, heardAt(id))
			}
			switch op {
			case 0xfe:
				m.Request(now)
			case 0xfd:
				m.Release(now)
			case 0xfc:
				var ms []uint64
				for i := range 5 {
					if n&(1<<i) != 0 {
						ms = append(ms, uint64(i+1))
					}
				}
				views++
				m.SetView(now, string(rune('0'+views%10)), ms, heard(ms))
			case 0xfb:
				silent = n
				for id := range uint64(8) {
					m.Heard(id, heardAt(id))
				}
			default:
				n = min(n, len(data))
				m.Receive(now, uint64(op%8), data[:n])
				data = data[n:]
				calls++
			}
			checkSane(t, m, now, &clock)
			m.Tick(now)
			checkSane(t, m, now, &clock)
		}
		if s := m.Stats(); s.Received.Total()+s.Malformed+s.Foreign != uint64(calls) {
			t.Fatalf("%d Receive calls, stats %+v", calls, s)
		}
	})
}

func checkSane(t *testing.T, m *RA, now time.Time, clock *uint64) {
	t.Helper()
	if err := m.invariants(now); err != nil {
		t.Fatal(err)
	}
	if m.Clock() < *clock {
		t.Fatalf("clock went back from %d to %d", *clock, m.Clock())
	}
	*clock = m.Clock()
	var c codec
	for _, out := range m.TakeOutput() {
		msg, err := c.decode(out.Payload)
		if out.To == m.self || out.To != 0 && !m.isMember(out.To) || out.To == 0 && msg.kind != kindRequest || err != nil || msg.ts > m.clock {
			t.Fatalf("sent %+v (%+v, %v)", out, msg, err)
		}
	}
	for _, e := range m.TakeEvents() {
		if e.Clock == 0 || (e.Kind == Deferred) != (e.Peer != 0) {
			t.Fatalf("event %+v", e)
		}
	}
}
