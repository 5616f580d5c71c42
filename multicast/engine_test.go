package multicast

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

var (
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	addr2 = netip.MustParseAddrPort("10.0.0.2:7468")
)

const (
	hb      = 50 * time.Millisecond
	suspect = 400 * time.Millisecond
)

func newEngine(self uint64) *Engine {
	return New(Options{Self: self, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect,
		Rand: rand.New(rand.NewPCG(1, self))}, t0)
}

// session builds a session message from peer `from` (incarnation inc).
func session(from, inc uint64, sent time.Time, peers ...wire.PeerState) *wire.Envelope {
	e := &wire.Envelope{Header: wire.Header{Group: 7, From: from, Inc: inc, Kind: wire.KindSession}}
	e.Session = wire.Session{Sent: sent.UnixNano(), Peers: peers}
	return e
}

func kinds(evs []Event) []EventKind {
	out := make([]EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

func TestSessionMessagesFollowTheHeartbeat(t *testing.T) {
	e := newEngine(1)
	if d := e.NextDeadline(); !d.Equal(t0) {
		t.Fatalf("first deadline %v, want the start", d.Sub(t0))
	}
	now := t0
	for i := range 100 {
		e.Tick(now)
		out := e.TakeOutput()
		if len(out) != 1 || out[0].Kind != wire.KindSession || out[0].From != 1 || out[0].Inc != 100 {
			t.Fatalf("tick %d sent %+v, want one session message from 1/100", i, out)
		}
		if out[0].Session.Sent != now.UnixNano() {
			t.Fatalf("session Sent = %d, want the send time %d", out[0].Session.Sent, now.UnixNano())
		}
		next := e.NextDeadline()
		if gap := next.Sub(now); gap < hb*9/10 || gap > hb*11/10 {
			t.Fatalf("next session after %v, want %v ± 10%%", gap, hb)
		}
		e.Tick(now.Add(time.Millisecond)) // early ticks send nothing
		if out := e.TakeOutput(); len(out) != 0 {
			t.Fatalf("a tick before the deadline sent %d envelopes", len(out))
		}
		now = next
	}
	if s := e.Stats(); s.SessionsSent != 100 {
		t.Fatalf("SessionsSent = %d, want 100", s.SessionsSent)
	}
}

func TestPeerSeenAndLost(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, session(2, 5, t0))
	e.Step(t0.Add(10*time.Millisecond), addr2, session(2, 5, t0))
	evs := e.TakeEvents()
	if len(evs) != 1 || evs[0] != (Event{Kind: PeerSeen, Peer: 2, Inc: 5, Addr: addr2}) {
		t.Fatalf("events %+v, want one PeerSeen of 2/5 from %v", evs, addr2)
	}
	last := t0.Add(10 * time.Millisecond)
	if d := e.NextDeadline(); d.After(last.Add(suspect)) {
		t.Fatalf("deadline %v is after the peer's suspect time", d.Sub(t0))
	}
	e.Tick(last.Add(suspect - time.Nanosecond))
	if evs := e.TakeEvents(); len(evs) != 0 {
		t.Fatalf("peer lost before the suspect timeout: %+v", evs)
	}
	e.Tick(last.Add(suspect))
	evs = e.TakeEvents()
	if len(evs) != 1 || evs[0].Kind != PeerLost || evs[0].Peer != 2 || evs[0].Silent != suspect {
		t.Fatalf("events %+v, want PeerLost of 2 after %v", evs, suspect)
	}
	if s := e.Stats(); s.Peers != 0 || s.SessionsRecv != 2 {
		t.Fatalf("stats %+v, want no peers and 2 sessions received", s)
	}
}

func TestIncarnations(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, session(2, 5, t0))
	e.Step(t0, addr2, session(2, 4, t0)) // an older incarnation: ignored
	e.Step(t0, addr2, session(2, 6, t0)) // restarted
	evs := e.TakeEvents()
	want := []Event{{Kind: PeerSeen, Peer: 2, Inc: 5, Addr: addr2}, {Kind: PeerSeen, Peer: 2, Inc: 6, Addr: addr2, Restarted: true}}
	if len(evs) != 2 || evs[0] != want[0] || evs[1] != want[1] {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
	if s := e.Stats(); s.StaleInc != 1 || s.SessionsRecv != 2 {
		t.Fatalf("stats %+v, want 1 stale datagram and 2 sessions received", s)
	}
	// The stale datagram must not have refreshed the peer.
	e.Tick(t0.Add(suspect))
	if k := kinds(e.TakeEvents()); len(k) != 1 || k[0] != PeerLost {
		t.Fatalf("events %v, want the peer lost", k)
	}
}

func TestStaleIncarnationDoesNotKeepPeerAlive(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, session(2, 6, t0))
	e.Step(t0.Add(suspect/2), addr2, session(2, 5, t0))
	e.TakeEvents()
	e.Tick(t0.Add(suspect))
	if k := kinds(e.TakeEvents()); len(k) != 1 || k[0] != PeerLost {
		t.Fatalf("events %v: an old incarnation's datagram kept the peer alive", k)
	}
}

func TestConflictingID(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, session(1, 99, t0))
	evs := e.TakeEvents()
	if len(evs) != 1 || evs[0].Kind != PeerConflict || evs[0].Addr != addr2 || evs[0].Inc != 99 {
		t.Fatalf("events %+v, want a PeerConflict naming %v", evs, addr2)
	}
	if s := e.Stats(); s.Peers != 0 {
		t.Fatal("a node with our ID was taken for a peer")
	}
}

// TestRoundTripTime checks the SRM §III-A delay estimate: A's session
// message is echoed by B with the time B held it; A subtracts that.
func TestRoundTripTime(t *testing.T) {
	a, b := newEngine(1), newEngine(2)
	a.Tick(t0)
	fromA := a.TakeOutput()[0]
	// B hears A 1 ms later, and sends its own session message 3 ms after that.
	b.Step(t0.Add(time.Millisecond), netip.MustParseAddrPort("10.0.0.1:7468"), &fromA)
	b.Tick(t0.Add(4 * time.Millisecond))
	var fromB wire.Envelope
	for _, env := range b.TakeOutput() {
		fromB = env
	}
	ps := fromB.Session.Peers
	if len(ps) != 1 || ps[0].ID != 1 || ps[0].Inc != 100 || ps[0].Echo != t0.UnixNano() || ps[0].Held != int64(3*time.Millisecond) {
		t.Fatalf("B's session message says %+v about A, want echo of A's time held 3ms", ps)
	}
	if _, ok := a.RTT(2); ok {
		t.Fatal("RTT known before any echo")
	}
	// A hears B 1 ms after B sent: 1 ms out + 1 ms back.
	a.Step(t0.Add(5*time.Millisecond), addr2, &fromB)
	if rtt, ok := a.RTT(2); !ok || rtt != 2*time.Millisecond {
		t.Fatalf("RTT = %v, %v; want 2ms", rtt, ok)
	}
	// A sample inflated by queueing (a session message read 10 s late)
	// does not raise the estimate: it is the least of recent samples.
	late := func(at, rtt time.Duration) {
		sent := t0.Add(at - rtt)
		a.Step(t0.Add(at), addr2, session(2, 100, t0.Add(at), wire.PeerState{ID: 1, Inc: 100, Echo: sent.UnixNano()}))
	}
	late(10*time.Second, 10*time.Second)
	if rtt, _ := a.RTT(2); rtt != 2*time.Millisecond {
		t.Fatalf("RTT after a 10s sample = %v, want still 2ms", rtt)
	}
	// Once the small samples are older than the last rttSamples, the
	// estimate follows the network.
	for i := range rttSamples {
		late(11*time.Second+time.Duration(i)*time.Second, 5*time.Millisecond)
	}
	if rtt, _ := a.RTT(2); rtt != 5*time.Millisecond {
		t.Fatalf("RTT after %d samples of 5ms = %v", rttSamples, rtt)
	}
}

func TestEchoForAnotherIncarnationIsIgnored(t *testing.T) {
	a := newEngine(1)
	a.Step(t0.Add(5*time.Millisecond), addr2, session(2, 100, t0, wire.PeerState{ID: 1, Inc: 99, Echo: t0.UnixNano()}))
	if _, ok := a.RTT(2); ok {
		t.Fatal("an echo of an older incarnation of this node set the RTT")
	}
}

func TestSessionListsPeersInIDOrder(t *testing.T) {
	e := newEngine(1)
	for _, id := range []uint64{9, 3, 5} {
		e.Step(t0, addr2, session(id, 1, t0))
	}
	e.Tick(t0)
	out := e.TakeOutput()
	var got []uint64
	for _, p := range out[0].Session.Peers {
		got = append(got, p.ID)
	}
	if len(got) != 3 || got[0] != 3 || got[1] != 5 || got[2] != 9 {
		t.Fatalf("session lists peers %v, want [3 5 9]", got)
	}
}

func TestUnhandledKindsAreCounted(t *testing.T) {
	e := newEngine(1)
	env := &wire.Envelope{Header: wire.Header{Group: 7, From: 2, Inc: 1, Kind: wire.KindJoin}}
	e.Step(t0, addr2, env)
	if s := e.Stats(); s.Unhandled != 1 || s.Peers != 1 {
		t.Fatalf("stats %+v: a membership message should count as unhandled and still show the peer alive", s)
	}
}

func TestPauseIsNotSilence(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, session(2, 5, t0))
	e.TakeEvents()
	// The node itself was stalled for most of the suspect timeout.
	e.Paused(t0.Add(suspect-10*time.Millisecond), suspect-10*time.Millisecond)
	e.Tick(t0.Add(suspect))
	if evs := e.TakeEvents(); len(evs) != 0 {
		t.Fatalf("events %+v: a peer was lost for this node's own pause", evs)
	}
	e.Tick(t0.Add(2*suspect - 10*time.Millisecond))
	if k := kinds(e.TakeEvents()); len(k) != 1 || k[0] != PeerLost {
		t.Fatalf("events %v: silence after the pause must still count", k)
	}
}

func TestLargeGroupSessionsFitDatagrams(t *testing.T) {
	e := New(Options{Self: 1, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, DatagramSize: 1400}, t0)
	for id := uint64(2); id < 200; id++ {
		e.Step(t0, addr2, session(id, 1, t0))
	}
	e.Tick(t0)
	enc, listed := wire.NewEncoder(), map[uint64]bool{}
	for _, env := range e.TakeOutput() {
		b, err := enc.Append(nil, &env)
		if err != nil || len(b) > 1400 {
			t.Fatalf("session datagram of %d bytes (%v), want at most 1400", len(b), err)
		}
		for _, p := range env.Session.Peers {
			listed[p.ID] = true
		}
	}
	if len(listed) != 198 {
		t.Fatalf("the session messages list %d of 198 peers", len(listed))
	}
}

// data builds a data message of peer `from` (incarnation inc).
func data(from, inc, seq uint64) *wire.Envelope {
	e := &wire.Envelope{Header: wire.Header{Group: 7, From: from, Inc: inc, Kind: wire.KindData}}
	e.Data = wire.Data{Seq: seq, Payload: []byte{byte(seq)}}
	return e
}

func TestAloneTheWindowDrains(t *testing.T) {
	e := New(Options{Self: 1, Inc: 1, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 16}, t0)
	for i := range 100 {
		if _, err := e.Multicast(nil, []byte{byte(i)}, wire.FIFO, 0); err != nil {
			t.Fatalf("message %d of a node alone: %v", i, err)
		}
		e.TakeOutput()
	}
}

func TestIncarnationGoingBackwards(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, data(2, 200, 1))
	e.Tick(t0.Add(suspect)) // 2 is lost, then restarts with a clock set back
	e.Step(t0.Add(suspect+time.Millisecond), addr2, data(2, 100, 1))
	var got []uint64
	for _, d := range e.TakeDeliveries() {
		got = append(got, d.Inc)
	}
	if len(got) != 2 || got[1] != 100 {
		t.Fatalf("delivered incarnations %v, want 200 then 100", got)
	}
}

func TestEveryGapIsRequested(t *testing.T) {
	e := newEngine(1)
	// 300 isolated gaps: more than one NACK's 64 ranges.
	for s := uint64(1); s <= 601; s += 2 {
		e.Step(t0, addr2, data(2, 5, s))
	}
	asked := map[uint64]bool{}
	for now := t0; now.Before(t0.Add(50 * time.Millisecond)); now = now.Add(100 * time.Microsecond) {
		e.Tick(now)
		for _, env := range e.TakeOutput() {
			if env.Kind == wire.KindNack {
				for _, r := range env.Nack.Ranges {
					for s := r.First; s <= r.Last; s++ {
						asked[s] = true
					}
				}
			}
		}
	}
	for s := uint64(2); s <= 600; s += 2 {
		if !asked[s] {
			t.Fatalf("gap %d was never requested (%d of 300 were)", s, len(asked))
		}
	}
}

func TestForgedAttemptHoldsNothingForLong(t *testing.T) {
	e := newEngine(1)
	e.Multicast(nil, []byte("m"), wire.FIFO, 0)
	e.Step(t0, addr2, session(2, 5, t0)) // 2 is a peer, and holds the window
	e.TakeOutput()
	nack := func(at time.Time, attempt uint64) int {
		env := &wire.Envelope{Header: wire.Header{Group: 7, From: 2, Inc: 5, Kind: wire.KindNack}}
		env.Nack = wire.Nack{Source: 1, SourceInc: 100, Attempt: attempt, Ranges: []wire.SeqRange{{First: 1, Last: 1}}}
		e.Step(at, addr2, env)
		n := 0
		for _, o := range e.TakeOutput() {
			if o.Kind == wire.KindRepair {
				n++
			}
		}
		return n
	}
	if nack(t0, wire.MaxAttempt) != 1 {
		t.Fatal("the first request was not repaired")
	}
	if nack(t0.Add(time.Millisecond), 0) != 0 {
		t.Fatal("a request of an answered round was repaired again")
	}
	if nack(t0.Add(suspect), 0) != 1 {
		t.Fatal("a forged attempt number still holds the message down after a while")
	}
}

func TestForgedRepairsDoNotGrowState(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, data(2, 5, 1))
	for s := uint64(100_000); s < 110_000; s++ {
		env := &wire.Envelope{Header: wire.Header{Group: 7, From: 3, Inc: 1, Kind: wire.KindRepair}}
		env.Repair = wire.Repair{Source: 2, SourceInc: 5, Data: wire.Data{Seq: s}}
		e.Step(t0, addr2, env)
	}
	if n := len(e.streams[2].repairs); n != 0 {
		t.Fatalf("%d repair records for messages out of the ring's reach", n)
	}
}

func TestLostSourceIsNotRequestedForever(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, data(2, 5, 1))
	e.Step(t0, addr2, data(2, 5, 10)) // 2..9 missing, and 2 dies
	nacks := 0
	for now := t0; now.Before(t0.Add(20 * suspect)); now = now.Add(time.Millisecond) {
		e.Tick(now)
		for _, env := range e.TakeOutput() {
			if env.Kind == wire.KindNack && now.After(t0.Add(suspect+time.Millisecond)) {
				nacks++
			}
		}
	}
	if nacks != 0 {
		t.Fatalf("%d NACKs for a source lost long ago", nacks)
	}
	if _, ok := e.streams[2]; ok {
		t.Fatal("the lost source's stream is still kept")
	}
}

func TestSkipDeliversWhatIsHeld(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, data(2, 5, 1))
	for _, s := range []uint64{3, 4, 5} {
		e.Step(t0, addr2, data(2, 5, s))
	}
	// The source no longer holds 2: it says its lowest is 3.
	env := session(2, 5, t0)
	env.Session.Seq, env.Session.Low = 5, 3
	e.Step(t0, addr2, env)
	var got []uint64
	for _, d := range e.TakeDeliveries() {
		got = append(got, d.Seq)
	}
	if fmt.Sprint(got) != "[1 3 4 5]" {
		t.Fatalf("delivered %v, want [1 3 4 5]", got)
	}
	if s := e.Stats(); s.Skipped != 1 {
		t.Fatalf("skipped %d, want just message 2", s.Skipped)
	}
}

func TestLaggingPeerIsReported(t *testing.T) {
	e := New(Options{Self: 1, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 16}, t0)
	e.Step(t0, addr2, session(2, 5, t0))                                           // 2 reports nothing of ours
	e.Step(t0, addr2, session(3, 5, t0, wire.PeerState{ID: 1, Inc: 100, Seq: 16})) // 3 keeps up
	for i := range 14 {                                                            // the window of application messages: 16 less an eighth kept for order records
		if _, err := e.Multicast(nil, []byte{byte(i)}, wire.FIFO, 0); err != nil {
			t.Fatal(err)
		}
	}
	e.TakeEvents()
	var lagging []Event
	for now := t0; now.Before(t0.Add(suspect + 2*hb)); now = now.Add(hb / 2) {
		e.Step(now, addr2, session(2, 5, now))
		e.Step(now, addr2, session(3, 5, now, wire.PeerState{ID: 1, Inc: 100, Seq: 16}))
		e.Tick(now)
		for _, ev := range e.TakeEvents() {
			if ev.Kind == PeerLagging {
				lagging = append(lagging, ev)
			}
		}
	}
	if len(lagging) != 1 || lagging[0].Peer != 2 || lagging[0].Behind != 14 || lagging[0].Held < suspect {
		t.Fatalf("lagging events %+v, want one for peer 2, 14 behind, after the suspect timeout", lagging)
	}
}

func TestSpreadAdapts(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, data(2, 5, 1))
	st := e.streams[2]
	start := st.c2
	for range 40 {
		e.adapt(st, 3) // shared losses: every loss drew three extra requests
	}
	wide := st.c2
	for range 400 {
		e.adapt(st, 0) // independent losses: one request each
	}
	narrow := st.c2
	if !(wide > start && wide <= maxSpread && narrow < wide && narrow >= minSpread) {
		t.Fatalf("spread %v -> %v with duplicates -> %v without; want it to widen, then narrow, within [%v, %v]",
			start, wide, narrow, minSpread, maxSpread)
	}
}

// TestSendersShareTheWindow: the members sending at the same time share
// the window, so that together they fill a receiver's socket buffer no
// more than one sender does; a sender quiet for two heartbeats gives its
// share back, and order records keep their eighth.
func TestSendersShareTheWindow(t *testing.T) {
	e := New(Options{Self: 1, Inc: 1, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 1024}, t0)
	for id := uint64(2); id <= 4; id++ {
		e.Step(t0, addr2, session(id, 1, t0)) // three live peers, which report nothing of ours
	}
	send := func() int {
		n := 0
		for ; n < 2000; n++ {
			if _, err := e.Multicast(nil, []byte{1}, wire.FIFO, 0); err != nil {
				break
			}
		}
		return n
	}
	if n := send(); n != 896 {
		t.Fatalf("alone sending: %d messages fit, want 896 (1024 less the eighth for order records)", n)
	}
	if _, err := e.Multicast(nil, []byte{1}, wire.Record, 0); err != nil {
		t.Fatalf("an order record on a full window: %v", err)
	}
	e2 := New(Options{Self: 1, Inc: 1, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 1024}, t0)
	for id := uint64(2); id <= 4; id++ {
		e2.Step(t0, addr2, session(id, 1, t0))
		e2.Step(t0, addr2, data(id, 1, 1))
	}
	e = e2
	if n := send(); n != 224 {
		t.Fatalf("with three others sending: %d messages fit, want 896/4 = 224", n)
	}
	later := t0.Add(3 * hb)
	for id := uint64(2); id <= 4; id++ {
		e.Step(later, addr2, session(id, 1, later, wire.PeerState{ID: 1, Inc: 1, Seq: 224}))
	}
	e.Tick(later)
	if n := send(); n != 896 {
		t.Fatalf("the others quiet for two heartbeats: %d more fit, want the whole 896 back", n)
	}
}

// TestWindowInBytes: besides its messages, a sender's unstable payload
// bytes are bounded (WindowBytes, less the order records' eighth), so
// that a window of large messages fits the receivers' socket buffers; a
// window of small ones is bounded by its count as before.
func TestWindowInBytes(t *testing.T) {
	fill := func(size int) int {
		e := New(Options{Self: 1, Inc: 1, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 1024, WindowBytes: 64000}, t0)
		e.Step(t0, addr2, session(2, 1, t0)) // a live peer that reports nothing of ours
		n := 0
		for ; n < 2000; n++ {
			if _, err := e.Multicast(nil, make([]byte, size), wire.FIFO, 0); err != nil {
				break
			}
		}
		return n
	}
	if n := fill(1000); n != 56 {
		t.Fatalf("1000-byte messages: %d fit, want 56 (64000 bytes less the eighth)", n)
	}
	if n := fill(10); n != 896 {
		t.Fatalf("10-byte messages: %d fit, want the 896 the count allows", n)
	}
}

// TestEarlyAck: a receiver reports as soon as a quarter of a source's
// share of the window arrived, in messages or in bytes, rather than at
// its next heartbeat, so that the source's window reopens within a round
// trip.
func TestEarlyAck(t *testing.T) {
	for _, tc := range []struct {
		name        string
		size, after int
		opt         Options
	}{
		// The source and this node send: shares of 896/2, a quarter 112.
		{"messages", 1, 112, Options{Window: 1024}},
		// 350000 bytes less the eighth, shared by 2: a quarter 43750,
		// the 44th of 1000 bytes.
		{"bytes", 1000, 44, Options{Window: 1024, WindowBytes: 400000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opt
			o.Self, o.Inc, o.Group, o.Heartbeat, o.SuspectTimeout = 1, 1, 7, hb, suspect
			e := New(o, t0)
			e.Step(t0, addr2, session(2, 5, t0))
			e.Tick(t0)
			e.TakeOutput()
			for seq := uint64(1); seq <= uint64(tc.after); seq++ {
				d := data(2, 5, seq)
				d.Data.Payload = make([]byte, tc.size)
				e.Step(t0, addr2, d)
				out := e.TakeOutput()
				if seq < uint64(tc.after) && len(out) != 0 {
					t.Fatalf("after %d messages: sent %+v, want nothing yet", seq, out)
				}
				if seq == uint64(tc.after) {
					if len(out) != 1 || out[0].Kind != wire.KindSession || len(out[0].Session.Peers) != 1 || out[0].Session.Peers[0].Seq != seq {
						t.Fatalf("after %d messages: sent %+v, want a session message reporting %d", seq, out, seq)
					}
				}
			}
			if s := e.Stats(); s.EarlyAcks != 1 {
				t.Fatalf("EarlyAcks = %d, want 1", s.EarlyAcks)
			}
			// Another quarter at once waits: early acks are at least a
			// thirty-second of a heartbeat apart.
			seq := uint64(tc.after)
			for range tc.after {
				seq++
				d := data(2, 5, seq)
				d.Data.Payload = make([]byte, tc.size)
				e.Step(t0, addr2, d)
			}
			if out := e.TakeOutput(); len(out) != 0 {
				t.Fatalf("a second quarter at once: sent %+v, want nothing", out)
			}
			d := data(2, 5, seq+1)
			d.Data.Payload = make([]byte, tc.size)
			e.Step(t0.Add(hb/32), addr2, d)
			if out := e.TakeOutput(); len(out) != 1 || out[0].Session.Peers[0].Seq != seq+1 {
				t.Fatalf("a thirty-second of a heartbeat later: sent %+v, want a session message reporting %d", out, seq+1)
			}
		})
	}
}

// TestTailProbe: a message followed by silence is announced by a session
// message two one-way delays later (the floor, 500 µs, doubled), not at
// the next heartbeat, so a receiver that lost it finds the gap at once;
// messages that keep coming push the probe on, and a heartbeat that
// comes first takes its place.
func TestTailProbe(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, session(2, 5, t0)) // a peer to tell
	e.Tick(t0)
	e.TakeOutput() // the first session message
	now := t0.Add(10 * time.Millisecond)
	e.Tick(now)
	if _, err := e.Multicast([]byte("svc"), []byte("last"), wire.FIFO, 0); err != nil {
		t.Fatal(err)
	}
	if out := e.TakeOutput(); len(out) != 1 || out[0].Kind != wire.KindData {
		t.Fatalf("sent %+v, want the data", out)
	}
	if d := e.NextDeadline(); d.Sub(now) != time.Millisecond {
		t.Fatalf("next deadline %v after the data, want the probe after 1ms", d.Sub(now))
	}
	e.Tick(now.Add(time.Millisecond))
	out := e.TakeOutput()
	if len(out) != 1 || out[0].Kind != wire.KindSession || out[0].Session.Seq != 1 {
		t.Fatalf("sent %+v, want a session message announcing seq 1", out)
	}
	if s := e.Stats(); s.TailProbes != 1 || s.SessionsSent != 2 {
		t.Fatalf("stats %+v, want 1 probe of 2 sessions", s)
	}
	if d := e.NextDeadline(); d.Sub(now) < hb/2 {
		t.Fatalf("a second probe due %v after the data", d.Sub(now))
	}

	// Steady traffic: each message moves the probe on; none fires.
	for i := range 20 {
		now = now.Add(500 * time.Microsecond)
		e.Tick(now)
		if _, err := e.Multicast([]byte("svc"), []byte(fmt.Sprint(i)), wire.FIFO, 0); err != nil {
			t.Fatal(err)
		}
		for _, env := range e.TakeOutput() {
			if env.Kind == wire.KindSession {
				t.Fatalf("message %d: a session message under steady traffic", i)
			}
		}
	}
	if s := e.Stats(); s.TailProbes != 1 {
		t.Fatalf("%d probes under steady traffic", s.TailProbes-1)
	}
}

// held is what Ready handed out that a test has not looked at yet, per
// engine: tests take the output, the events and the deliveries apart.
var held = map[*Engine]*Ready{}

func collect(e *Engine) *Ready {
	h := held[e]
	if h == nil {
		h = &Ready{}
		held[e] = h
	}
	rd := e.Ready()
	h.Envelopes = append(h.Envelopes, rd.Envelopes...)
	h.Events = append(h.Events, rd.Events...)
	for _, d := range rd.Deliveries {
		d.Payload = append([]byte(nil), d.Payload...)
		h.Deliveries = append(h.Deliveries, d)
	}
	return h
}

// TakeOutput packs the queued data and returns every envelope not taken yet.
func (e *Engine) TakeOutput() []wire.Envelope {
	e.Pack()
	h := collect(e)
	out := h.Envelopes
	h.Envelopes = nil
	return out
}

// TakeEvents returns the events not taken yet.
func (e *Engine) TakeEvents() []Event {
	h := collect(e)
	evs := h.Events
	h.Events = nil
	return evs
}

// TakeDeliveries returns the deliveries not taken yet.
func (e *Engine) TakeDeliveries() []Delivery {
	h := collect(e)
	ds := h.Deliveries
	h.Deliveries = nil
	return ds
}

// TestSlotsArePermutations: for each message, the members take the
// request slots in an order they all compute alike, a permutation of
// 0..n-1, and over many messages each member is first about as often as
// any other.
func TestSlotsArePermutations(t *testing.T) {
	const src, members = 1, 8
	var es []*Engine
	for id := uint64(2); id <= members+1; id++ {
		e := newEngine(id)
		for p := uint64(1); p <= members+1; p++ {
			if p != id {
				e.Step(t0, addr2, session(p, 5, t0))
			}
		}
		es = append(es, e)
	}
	lo, hi := time.Millisecond, 9*time.Millisecond
	width := (hi - lo) / members
	first := map[uint64]int{}
	const messages = 4000
	for s := uint64(1); s <= messages; s++ {
		taken := map[time.Duration]uint64{}
		st := &stream{src: src}
		for _, e := range es {
			a, b := e.slot(st, s, lo, hi)
			if b-a != width/8 || (a-lo)%width != 0 {
				t.Fatalf("message %d: node %d's timer in [%v, %v], want the first eighth of a slot of %v from %v", s, e.opt.Self, a, b, width, lo)
			}
			if other, ok := taken[a]; ok {
				t.Fatalf("message %d: nodes %d and %d took the same slot at %v", s, other, e.opt.Self, a)
			}
			taken[a] = e.opt.Self
			if a == lo {
				first[e.opt.Self]++
			}
		}
	}
	for id := uint64(2); id <= members+1; id++ {
		if n := first[id]; n < messages/members*3/4 || n > messages/members*5/4 {
			t.Fatalf("node %d was first for %d of %d messages, want about %d: %v", id, n, messages, messages/members, first)
		}
	}
}

// TestRequestHeardAheadSuppresses: a NACK that overtakes the data (it
// asks for a message this node does not yet know is missing) is kept, and
// when the gap opens, this node's request waits as if suppressed by it.
func TestRequestHeardAheadSuppresses(t *testing.T) {
	e := newEngine(1)
	e.Step(t0, addr2, data(2, 5, 1))
	e.Step(t0, addr2, session(3, 7, t0)) // another receiver
	nack := &wire.Envelope{Header: wire.Header{Group: 7, From: 3, Inc: 7, Kind: wire.KindNack}}
	nack.Nack = wire.Nack{Source: 2, SourceInc: 5, Ranges: []wire.SeqRange{{First: 2, Last: 2}}}
	e.Step(t0.Add(100*time.Microsecond), addr2, nack)
	if e.stats.NacksAhead != 1 {
		t.Fatalf("nacks_ahead %d, want 1", e.stats.NacksAhead)
	}
	e.Step(t0.Add(200*time.Microsecond), addr2, data(2, 5, 3)) // reveals the gap at 2
	g := e.streams[2].gaps[2]
	if g == nil || g.backoff != 1 || e.stats.NacksSuppressed != 1 {
		t.Fatalf("gap %+v, nacks_suppressed %d: want the gap open and backed off once", g, e.stats.NacksSuppressed)
	}
	if len(e.streams[2].ahead) != 0 {
		t.Fatalf("%d requests still kept after the gap opened", len(e.streams[2].ahead))
	}
	// Requests for what could not be buffered are not kept, nor more than
	// maxAhead of them.
	for s := uint64(10); s < 10+2*maxAhead; s++ {
		nack.Nack.Ranges = []wire.SeqRange{{First: s, Last: s}}
		e.Step(t0.Add(time.Millisecond), addr2, nack)
	}
	nack.Nack.Ranges = []wire.SeqRange{{First: wire.MaxSeq - 1, Last: wire.MaxSeq - 1}}
	e.Step(t0.Add(time.Millisecond), addr2, nack)
	if n := len(e.streams[2].ahead); n != maxAhead {
		t.Fatalf("%d requests kept, want the bound %d", n, maxAhead)
	}
}
