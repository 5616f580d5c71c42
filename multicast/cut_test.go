package multicast

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
)

// turn multicasts the payloads in one turn of node 1 and packs them: the
// data datagrams that turn sends, encoded, and their envelopes.
func turn(t *testing.T, e *Engine, order wire.Order, payloads ...[]byte) ([][]byte, []wire.Envelope) {
	t.Helper()
	for i, p := range payloads {
		if _, err := e.Multicast(nil, p, order, 0); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	e.Pack()
	out := slices.DeleteFunc(e.TakeOutput(), func(env wire.Envelope) bool {
		return env.Kind != wire.KindData && env.Kind != wire.KindBatch
	})
	enc := wire.NewEncoder()
	var dgs [][]byte
	for i := range out {
		b, err := enc.Append(nil, &out[i])
		if err != nil {
			t.Fatal(err)
		}
		dgs = append(dgs, b)
	}
	return dgs, out
}

func payloads(n, size int) [][]byte {
	ps := make([][]byte, n)
	for i := range ps {
		ps[i] = bytes.Repeat([]byte{byte(i + 1)}, size)
	}
	return ps
}

// TestCutFillsDatagrams: messages of 1000 bytes sent in one turn go out in
// datagrams filled to the byte (so that they go in runs), about three for
// four messages; a receiver delivers each whole, in order, once, with the
// sequence number of its first fragment as the sender's Multicast gave it.
func TestCutFillsDatagrams(t *testing.T) {
	e := newEngine(1)
	ps := payloads(40, 1000)
	var firsts []uint64
	for _, p := range ps {
		s, err := e.Multicast(nil, p, wire.FIFO, 0)
		if err != nil {
			t.Fatal(err)
		}
		firsts = append(firsts, s)
	}
	e.Pack()
	out := e.TakeOutput()
	enc := wire.NewEncoder()
	for i := range out {
		b, _ := enc.Append(nil, &out[i])
		if i < len(out)-1 && len(b) != DefaultDatagramSize {
			t.Fatalf("datagram %d of %d is %d bytes, want all but the last %d", i, len(out), len(b), DefaultDatagramSize)
		}
	}
	if len(out) > 31 {
		t.Fatalf("40 messages of 1000 bytes took %d datagrams, want at most 31", len(out))
	}
	r := newEngine(2)
	for i := range out {
		r.Step(t0, addr2, &out[i])
	}
	got := r.TakeDeliveries()
	if len(got) != len(ps) {
		t.Fatalf("delivered %d of %d messages", len(got), len(ps))
	}
	for i, d := range got {
		if d.Seq != firsts[i] || !bytes.Equal(d.Payload, ps[i]) {
			t.Fatalf("delivery %d: seq %d (%d bytes), want seq %d and message %d", i, d.Seq, len(d.Payload), firsts[i], i)
		}
	}
}

// TestWhatIsNotCut: a message alone in its turn goes whole; the
// sequencer's records are never cut, nor messages smaller than an eighth
// of a datagram; a message that fits what is left of the datagram goes
// whole beside the others.
func TestWhatIsNotCut(t *testing.T) {
	frags := func(out []wire.Envelope) (n int) {
		for _, env := range out {
			if env.Data.FragCount > 1 {
				n++
			}
			for _, d := range env.Batch {
				if d.FragCount > 1 {
					n++
				}
			}
		}
		return n
	}
	e := newEngine(1)
	for _, c := range []struct {
		what              string
		order             wire.Order
		n, size           int
		datagrams, pieces int
	}{
		{"a message alone in its turn", wire.Total, 1, 1200, 1, 0},
		{"two records", wire.Record, 2, 1000, 2, 0},
		{"13 messages of 170 bytes", wire.FIFO, 13, 170, 2, 0},
		{"13 messages of 180 bytes (one cut)", wire.FIFO, 13, 180, 2, 2},
		{"two messages of 600 bytes", wire.FIFO, 2, 600, 1, 0},
		{"two messages of 1000 bytes (the second cut)", wire.FIFO, 2, 1000, 2, 2},
	} {
		if _, out := turn(t, e, c.order, payloads(c.n, c.size)...); len(out) != c.datagrams || frags(out) != c.pieces {
			t.Fatalf("%s: %d datagrams, %d fragments, want %d and %d", c.what, len(out), frags(out), c.datagrams, c.pieces)
		}
	}
}

// TestFitsAgreesWithMulticast: whatever the queue holds, Fits says exactly
// whether Multicast would take the message, cut as it would be cut, so
// that a sender told it fits is never refused (a refusal would reach the
// application as an error); and no datagram is longer than datagram_size,
// or than BulkSize where the engine has one.
// Random sizes, services, orders and destinations, turns of random
// length, a window that fills because the one member reports nothing
// for a while, then all it holds.
func TestFitsAgreesWithMulticast(t *testing.T) {
	testutil.ForSeeds(t, 20, func(t *testing.T, seed int64) {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		bulk := 0 // datagram_size alone, or bulk datagrams too, with a member's requests now and then
		if r.IntN(2) == 0 {
			bulk = DefaultDatagramSize + r.IntN(bulkSize-DefaultDatagramSize)
		}
		e := New(Options{Self: 1, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 64 + r.IntN(512), BulkSize: bulk}, t0)
		longest := max(DefaultDatagramSize, bulk)
		e.SetMembers([]wire.Member{{ID: 2, Inc: 5}})
		e.Step(t0, addr2, session(2, 5, t0))
		orders := []wire.Order{wire.FIFO, wire.Total, wire.Safe, wire.Record}
		enc := wire.NewEncoder()
		refused := 0
		for i := range 3000 {
			size := r.IntN(1500)
			if r.IntN(10) == 0 {
				size = r.IntN(5000)
			}
			svc := make([]byte, r.IntN(3)*r.IntN(40))
			order, dest := orders[r.IntN(len(orders))], uint64(0)
			if r.IntN(4) == 0 {
				dest = r.Uint64N(1 << 40)
			}
			fits := e.Fits(len(svc), size, order, dest)
			_, err := e.Multicast(svc, make([]byte, size), order, dest)
			if fits != (err == nil) {
				t.Fatalf("message %d (%d bytes, service %d, order %v, dest %d): Fits said %v, Multicast %v",
					i, size, len(svc), order, dest, fits, err)
			}
			if err != nil && !errors.Is(err, ErrWindowFull) {
				t.Fatalf("message %d: %v", i, err)
			}
			if err != nil {
				refused++
				if r.IntN(4) == 0 { // the member catches up: the window reopens
					e.Step(t0, addr2, session(2, 5, t0, wire.PeerState{ID: 1, Inc: 100, Seq: e.own.next - 1}))
				}
			}
			if r.IntN(6) == 0 {
				e.Pack()
				for _, env := range e.TakeOutput() {
					if b, err := enc.Append(nil, &env); err != nil || len(b) > longest {
						t.Fatalf("after message %d: a datagram of %d bytes (%v), more than %d", i, len(b), err, longest)
					}
				}
			}
			if r.IntN(200) == 0 { // a member asks for a repair: no cuts, no bulk for a while
				e.Step(e.lastNow, addr2, nackEnv(2, 5, 1, 100, 0, wire.SeqRange{First: 1, Last: 1}))
			}
			if r.IntN(50) == 0 { // time passes
				now := e.lastNow.Add(hb)
				e.Tick(now)
				e.TakeOutput()
			}
		}
		if refused == 0 || e.stats.MsgsSent < 1000 {
			t.Fatalf("%d messages sent, %d refused: the test tested too little", e.stats.MsgsSent, refused)
		}
	})
}

// TestNoCutUnderLoss: once a member asks for a repair of this node's
// data, it cuts no message for cutQuiet heartbeats (a lost datagram with
// the pieces of two messages would cost two repairs); after that quiet,
// it cuts again. A stranger's request changes nothing.
func TestNoCutUnderLoss(t *testing.T) {
	e := New(Options{Self: 1, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect}, t0)
	e.SetMembers([]wire.Member{{ID: 2, Inc: 5}})
	e.Step(t0, addr2, session(2, 5, t0))
	if _, out := turn(t, e, wire.FIFO, payloads(4, 1000)...); len(out) != 3 {
		t.Fatalf("before any loss: 4 messages took %d datagrams, want 3", len(out))
	}
	e.Step(t0, addrX, nackEnv(99, 1, 1, 100, 0, wire.SeqRange{First: 1, Last: 1}))
	if _, out := turn(t, e, wire.FIFO, payloads(4, 1000)...); len(out) != 3 {
		t.Fatalf("after a stranger's request: %d datagrams, want 3", len(out))
	}
	e.Step(t0, addr2, nackEnv(2, 5, 1, 100, 0, wire.SeqRange{First: 1, Last: 1}))
	if _, out := turn(t, e, wire.FIFO, payloads(4, 1000)...); len(out) != 4 {
		t.Fatalf("after a member's request: %d datagrams, want 4, one a message", len(out))
	}
	now := t0.Add(cutQuiet*hb - time.Millisecond)
	e.Step(now, addr2, session(2, 5, now))
	if _, out := turn(t, e, wire.FIFO, payloads(4, 1000)...); len(out) != 4 {
		t.Fatalf("just before the quiet ends: %d datagrams, want 4", len(out))
	}
	now = t0.Add(cutQuiet * hb)
	e.Step(now, addr2, session(2, 5, now))
	if _, out := turn(t, e, wire.FIFO, payloads(4, 1000)...); len(out) != 3 {
		t.Fatalf("after the quiet: %d datagrams, want 3 again", len(out))
	}
}

// TestCutDatagramLostAndRepaired: the datagram that carries the end of
// one message and the start of the next is lost to the only receiver;
// it asks for both fragments, the source repairs them, and the receiver
// delivers all four messages whole and in order.
func TestCutDatagramLostAndRepaired(t *testing.T) {
	s, r := newEngine(1), newEngine(2)
	addr1 := netip.MustParseAddrPort("10.0.0.1:7468")
	for _, e := range []*Engine{s, r} {
		e.SetMembers([]wire.Member{{ID: 1, Inc: 100}, {ID: 2, Inc: 100}})
	}
	s.Step(t0, addr2, session(2, 100, t0))
	r.Step(t0, addr1, session(1, 100, t0))
	ps := payloads(4, 1000)
	_, out := turn(t, s, wire.FIFO, ps...)
	if len(out) != 3 || len(out[1].Batch) != 2 || out[1].Batch[0].FragIndex != 1 || out[1].Batch[1].FragIndex != 0 {
		t.Fatalf("4 messages of 1000 bytes went in %d datagrams, want 3, the second with the end of one and the start of the next", len(out))
	}
	r.Step(t0, addr1, &out[0])
	r.Step(t0, addr1, &out[2])
	repairUntilDelivered(t, s, r, ps, func(wire.Envelope) {})
	if st := s.Stats(); st.RepairsSent < 2 {
		t.Fatalf("the source sent %d repairs, want the two fragments the lost datagram carried", st.RepairsSent)
	}
}

// repairUntilDelivered runs source s (node 1) and receiver r (node 2),
// which lost some of ps, for up to two virtual seconds, each envelope of
// s passing through seen first, and fails unless r then delivered every
// one of ps, in order.
func repairUntilDelivered(t *testing.T, s, r *Engine, ps [][]byte, seen func(wire.Envelope)) {
	t.Helper()
	addr1 := netip.MustParseAddrPort("10.0.0.1:7468")
	var got []Delivery
	for now := t0; now.Before(t0.Add(2 * time.Second)); now = now.Add(time.Millisecond) {
		s.Tick(now)
		r.Tick(now)
		for _, env := range s.TakeOutput() {
			seen(env)
			r.Step(now, addr1, &env)
		}
		for _, env := range r.TakeOutput() {
			s.Step(now, addr2, &env)
		}
		if got = append(got, r.TakeDeliveries()...); len(got) == len(ps) {
			break
		}
	}
	if len(got) != len(ps) {
		t.Fatalf("delivered %d of %d messages after the loss", len(got), len(ps))
	}
	for i, d := range got {
		if !bytes.Equal(d.Payload, ps[i]) {
			t.Fatalf("delivery %d is not message %d", i, i)
		}
	}
}
