package multicast

import (
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// The attacks of issue 14 on the reliable multicast layer, each against an
// engine in a view (as membership runs it), each with what it achieved
// before the defence. Without a key, any host can send datagrams in any
// name: the defences limit what IDs outside the view can do, and what a
// forged member ID can cost.

var addrX = netip.MustParseAddrPort("10.0.0.66:7468") // the attacker's

// inView returns node 1 (incarnation 100) in a view with members 2/5 and
// 3/1, both heard.
func inView(t *testing.T) *Engine {
	t.Helper()
	e := newEngine(1)
	e.SetMembers([]wire.Member{{ID: 2, Inc: 5}, {ID: 3, Inc: 1}})
	e.Step(t0, addr2, session(2, 5, t0))
	e.Step(t0, addr2, session(3, 1, t0))
	e.TakeOutput()
	e.TakeEvents()
	return e
}

func nackEnv(from, inc, src, srcInc, attempt uint64, ranges ...wire.SeqRange) *wire.Envelope {
	env := &wire.Envelope{Header: wire.Header{Group: 7, From: from, Inc: inc, Kind: wire.KindNack}}
	env.Nack = wire.Nack{Source: src, SourceInc: srcInc, Attempt: attempt, Ranges: ranges}
	return env
}

func repairEnv(from, inc, src, srcInc, seq uint64, payload string) *wire.Envelope {
	env := &wire.Envelope{Header: wire.Header{Group: 7, From: from, Inc: inc, Kind: wire.KindRepair}}
	env.Repair = wire.Repair{Source: src, SourceInc: srcInc, Data: wire.Data{Seq: seq, Payload: []byte(payload)}}
	return env
}

func count(out []wire.Envelope, k wire.Kind) int {
	n := 0
	for _, o := range out {
		if o.Kind == k {
			n++
		}
	}
	return n
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Attack: a new ID sends data 1 and 8192 (two 33-byte datagrams). Before,
// the engine made a stream for it and opened 8190 gaps with their timers,
// about 2.7 MiB of heap per forged ID, and multicast NACKs for them. Now a
// node outside the view is only heard: no stream, no gap, no timer, no
// NACK; 50 forged IDs cost less than 256 KiB.
func TestForgedSourcesCostNoState(t *testing.T) {
	e := inView(t)
	const forged = 50
	before := heapInUse()
	for i := range uint64(forged) {
		e.Step(t0, addrX, data(1000+i, 1, 1))
		e.Step(t0, addrX, data(1000+i, 1, 8192))
	}
	grown := int64(heapInUse()) - int64(before)
	if grown > 256<<10 {
		t.Errorf("%d forged sources grew the heap by %d KiB, want < 256 KiB", forged, grown>>10)
	}
	for id, st := range e.streams {
		if id >= 1000 || len(st.gaps) > 0 {
			t.Fatalf("stream of %d with %d gaps after forged data", id, len(st.gaps))
		}
	}
	if n := e.timers.Len(); n != 0 {
		t.Errorf("%d timers armed by forged data", n)
	}
	if s := e.Stats(); s.ForeignData != 2*forged || s.Strangers != forged {
		t.Errorf("foreign_data %d, strangers %d; want %d and %d", s.ForeignData, s.Strangers, 2*forged, forged)
	}
	for now := t0; now.Before(t0.Add(2 * hb)); now = now.Add(time.Millisecond) {
		e.Tick(now)
		if n := count(e.TakeOutput(), wire.KindNack); n != 0 {
			t.Fatalf("%d NACKs sent for forged sources", n)
		}
	}
	runtime.KeepAlive(e)
}

// Attack, with a member's ID (without a key anyone can use one): data far
// ahead in its stream. Before, data 8192 in a stream that holds 1 opened
// 8190 gaps (twice the window) and a session message claiming 2^61
// messages as many; now at most gapSpan (512) gaps open past what the
// stream holds, NACKs ask only within them, at most 32 messages each, and
// a jump beyond the ring's reach costs nothing.
func TestJumpInAMemberStreamIsBounded(t *testing.T) {
	e := inView(t)
	w := uint64(gapSpan)
	e.Step(t0, addr2, data(2, 5, 1))
	e.Step(t0, addrX, data(2, 5, 8192))
	st := e.streams[2]
	if n := uint64(len(st.gaps)); n > w {
		t.Fatalf("%d gaps open after one forged datagram, want at most the window, %d", n, w)
	}
	e.Step(t0, addrX, session(2, 5, t0))
	e.Step(t0, addrX, func() *wire.Envelope { s := session(2, 5, t0); s.Session.Seq = 1 << 61; return s }())
	slots := len(st.ring.slots)
	e.Step(t0, addrX, data(2, 5, 1<<40))
	if n := uint64(len(st.gaps)); n > w || len(st.ring.slots) != slots {
		t.Fatalf("%d gaps and %d ring slots (from %d) after a claim and a jump far ahead", n, len(st.ring.slots), slots)
	}
	if e.Stats().Overrun == 0 {
		t.Error("a message beyond the ring's reach was not counted as overrun")
	}
	for now := t0; now.Before(t0.Add(hb / 2)); now = now.Add(100 * time.Microsecond) {
		e.Tick(now)
		for _, o := range e.TakeOutput() {
			if o.Kind != wire.KindNack {
				continue
			}
			if n := countSeqs(o.Nack.Ranges); n > maxNackRepairs {
				t.Fatalf("a NACK asks for %d messages, more than %d", n, maxNackRepairs)
			}
			for _, r := range o.Nack.Ranges {
				if r.Last > st.received()+w {
					t.Fatalf("a NACK asks for %d, beyond gapSpan past %d", r.Last, st.received())
				}
			}
		}
	}
}

// heldSource returns node 1 in a view with member 2/5, holding n of its own
// messages of 1000 bytes, none stable (2 has not reported them), each
// sent in a turn of its own (so each is one fragment, uncut).
func heldSource(t *testing.T, n int) *Engine {
	t.Helper()
	e := New(Options{Self: 1, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 4096}, t0)
	e.SetMembers([]wire.Member{{ID: 2, Inc: 5}})
	e.Step(t0, addr2, session(2, 5, t0))
	payload := make([]byte, 1000)
	for i := range n {
		if _, err := e.Multicast(nil, payload, wire.FIFO, 0); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		e.Pack()
	}
	e.TakeOutput()
	return e
}

// Attack: forged NACKs at the source. Before, each NACK cost up to 512
// repairs: 8 forged NACKs (230 bytes) brought 3,584 repairs (2.4 MB), and
// as many again after every hold-down. Now a NACK from outside the view
// gets nothing, and one from a member at most maxNackRepairs (32) repairs.
func TestNackAmplificationIsBounded(t *testing.T) {
	e := heldSource(t, 3000)
	// From an ID outside the view: nothing.
	e.Step(t0, addrX, nackEnv(99, 1, 1, 100, 0, wire.SeqRange{First: 1, Last: 3000}))
	if n := count(e.TakeOutput(), wire.KindRepair); n != 0 || e.Stats().NackRefused != 1 {
		t.Fatalf("a stranger's NACK brought %d repairs (nack_refused %d)", n, e.Stats().NackRefused)
	}
	// In a member's name: 32 repairs per NACK at most.
	total := 0
	for i := range uint64(8) {
		e.Step(t0, addrX, nackEnv(2, 5, 1, 100, 0, wire.SeqRange{First: 1 + 375*i, Last: 375 * (i + 1)}))
		n := count(e.TakeOutput(), wire.KindRepair)
		if n > maxNackRepairs {
			t.Fatalf("NACK %d brought %d repairs, more than %d", i, n, maxNackRepairs)
		}
		total += n
	}
	if total != 8*maxNackRepairs || e.Stats().RepairBudget == 0 {
		t.Fatalf("8 NACKs brought %d repairs (repair_budget %d), want %d", total, e.Stats().RepairBudget, 8*maxNackRepairs)
	}
}

// Attack: NACKs in a member's name, kept up through the hold-downs. Before,
// every hold-down (a quarter of the suspect timeout) let the whole buffer
// be repaired again: 3,000 messages of 1000 bytes every 100 ms, 60 MB in
// 2 s. Now the member's repairs cost at most repairBurst bytes at once and
// repairRate bytes per second.
func TestRepairBudgetPerRequester(t *testing.T) {
	e := heldSource(t, 3000)
	var bytes int
	const period = 2 * time.Second
	for now := t0; now.Before(t0.Add(period)); now = now.Add(10 * time.Millisecond) {
		for first := uint64(1); first <= 3000; first += maxNackRepairs {
			e.Step(now, addrX, nackEnv(2, 5, 1, 100, 0, wire.SeqRange{First: first, Last: first + maxNackRepairs - 1}))
		}
		for _, o := range e.TakeOutput() {
			if o.Kind == wire.KindRepair {
				bytes += wire.MaxHeader + wire.DataSize(&o.Repair.Data) + wire.RepairExtra
			}
		}
	}
	limit := repairBurst + repairRate*period.Seconds()
	if float64(bytes) > limit {
		t.Fatalf("%d MB of repairs for one requester in %v, over the budget of %.0f MB", bytes>>20, period, limit/(1<<20))
	}
	if e.Stats().RepairBudget == 0 {
		t.Fatal("no repair refused for the budget")
	}
	t.Logf("%.1f MB of repairs in %v (budget %.1f MB)", float64(bytes)/(1<<20), period, limit/(1<<20))
}

// An honest member's NACK is repaired at once, as before.
func TestMemberNackIsRepaired(t *testing.T) {
	e := heldSource(t, 100)
	e.Step(t0, addr2, nackEnv(2, 5, 1, 100, 0, wire.SeqRange{First: 3, Last: 7}, wire.SeqRange{First: 50, Last: 50}))
	if n := count(e.TakeOutput(), wire.KindRepair); n != 6 {
		t.Fatalf("a member's NACK for 6 messages brought %d repairs", n)
	}
}

// Attack: a forged repair in another member's stream. Before, a repair from
// any ID was taken into the source's stream and delivered: an outsider
// could inject messages (and with them order records, election and lock
// messages) into any member's stream. Now a repair is taken only from the
// source itself or a member of the view; another's is dropped and counted.
func TestForgedRepairIsDropped(t *testing.T) {
	e := inView(t)
	e.Step(t0, addr2, data(2, 5, 1))
	e.TakeDeliveries()
	e.Step(t0, addrX, repairEnv(99, 1, 2, 5, 2, "forged"))
	if ds := e.TakeDeliveries(); len(ds) != 0 {
		t.Fatalf("a stranger's repair was delivered: %q", ds[0].Payload)
	}
	e.Expect(t0, []wire.Member{{ID: 4, Inc: 1}})
	e.Step(t0, addrX, repairEnv(4, 1, 2, 5, 2, "forged"))
	if ds := e.TakeDeliveries(); len(ds) != 0 {
		t.Fatalf("a repair from a node that is not a member yet was delivered: %q", ds[0].Payload)
	}
	if s := e.Stats(); s.ForeignData != 2 {
		t.Fatalf("foreign_data %d, want 2", s.ForeignData)
	}
	// Any member holding the message may repair it (SRM), the source too.
	e.Step(t0, addr2, repairEnv(3, 1, 2, 5, 2, "m2"))
	e.Step(t0, addr2, repairEnv(2, 5, 2, 5, 3, "m3"))
	if ds := e.TakeDeliveries(); len(ds) != 2 || string(ds[0].Payload) != "m2" || string(ds[1].Payload) != "m3" {
		t.Fatalf("repairs from a member and from the source delivered %+v", ds)
	}
}

// Attack: fragments in a member's name that break its stream (found by
// FuzzEngine). Before, a fragment continuing a message already delivered
// was taken as the next piece of it, and the message delivered again with
// its first sequence number; and a whole message among a message's
// fragments was delivered, then the message it interrupted, with a
// sequence number below it. Now a message's fragments end with its last,
// a whole message among them drops the one it interrupts
// (bad_fragments), and each sequence number is delivered once, in order.
func TestForgedFragmentsKeepTheOrder(t *testing.T) {
	frag := func(seq uint64, index, count uint32, payload string) *wire.Envelope {
		env := data(2, 5, seq)
		env.Data.FragIndex, env.Data.FragCount, env.Data.Payload = index, count, []byte(payload)
		return env
	}
	for name, c := range map[string]struct {
		envs []*wire.Envelope
		want []string
	}{
		"a fragment after its message": {[]*wire.Envelope{frag(1, 0, 2, "a"), frag(2, 1, 2, "b"), frag(3, 2, 3, "c")}, []string{"1..2 ab"}},
		"a message among fragments":    {[]*wire.Envelope{frag(1, 0, 3, "a"), frag(2, 0, 0, "b"), frag(3, 1, 2, "c")}, []string{"2..2 b"}},
	} {
		e := inView(t)
		for _, env := range c.envs {
			e.Step(t0, addr2, env)
		}
		var got []string
		for _, d := range e.TakeDeliveries() {
			got = append(got, fmt.Sprintf("%d..%d %s", d.Seq, d.End, d.Payload))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: delivered %q, want %q", name, got, c.want)
		}
	}
}

// Attack: a datagram with a node's ID and incarnation 2^64−1. Before, it
// replaced the node's state, and the engine took the node's real datagrams
// for an older incarnation's: the node went unheard, and was lost after the
// suspect timeout (suspected, if a member); every later restart of it was
// "older" too. Now an incarnation more than MaxIncSkew ahead of the clock is
// dropped (future_inc), and a member's state is its view's incarnation's,
// which no other incarnation touches.
func TestForgedIncarnationSilencesNobody(t *testing.T) {
	heardThrough := func(e *Engine, id, inc uint64, forge func(now time.Time)) {
		t.Helper()
		lost := false
		for now := t0; now.Before(t0.Add(3 * suspect)); now = now.Add(hb) {
			forge(now)
			e.Step(now, addr2, session(id, inc, now))
			e.Tick(now)
			for _, ev := range e.TakeEvents() {
				lost = lost || ev.Kind == PeerLost && ev.Peer == id
			}
		}
		if lost {
			t.Fatalf("node %d/%d was lost while it kept sending", id, inc)
		}
	}
	// Without a view, and for a node outside the view (a joiner).
	for _, e := range []*Engine{newEngine(1), inView(t)} {
		heardThrough(e, 4, 7, func(now time.Time) { e.Step(now, addrX, session(4, math.MaxUint64, now)) })
		if e.Stats().FutureInc == 0 {
			t.Fatal("no datagram counted as future_inc")
		}
	}
	// A member, with a forged incarnation within the bound.
	e := inView(t)
	heardThrough(e, 2, 5, func(now time.Time) { e.Step(now, addrX, session(2, uint64(now.Add(time.Minute).UnixMicro()), now)) })
	// A real restart, within the bound, still replaces the old incarnation
	// without a view.
	e = newEngine(1)
	e.Step(t0, addr2, session(2, uint64(t0.UnixMicro()), t0))
	e.Step(t0, addr2, session(2, uint64(t0.Add(time.Second).UnixMicro()), t0))
	if evs := e.TakeEvents(); len(evs) != 2 || !evs[1].Restarted {
		t.Fatalf("events %+v, want the restart seen", evs)
	}
}

// Attack: 20,000 forged IDs. Before, each got a peer entry (and with a
// session message, a stream): 20,002 peers. Now the nodes outside the view
// share a table of MaxStrangers entries, the oldest evicted, pruned after
// the suspect timeout; their PeerSeen events (each a log line) are
// limited to a burst of 64 and 4 per second, the rest counted.
func TestStrangerTableIsCapped(t *testing.T) {
	e := inView(t)
	const forged = 20_000
	now := t0
	seen := 0
	for i := range uint64(forged) {
		now = now.Add(time.Microsecond)
		e.Step(now, addrX, session(10_000+i, 1, now))
		if s := e.Stats(); s.Strangers > MaxStrangers {
			t.Fatalf("%d strangers after %d forged IDs, over the cap %d", s.Strangers, i+1, MaxStrangers)
		}
		for _, ev := range e.TakeEvents() {
			if ev.Kind == PeerSeen {
				seen++
			}
		}
	}
	s := e.Stats()
	if len(e.peers) != 2 || len(e.streams) != 2 || s.PeersEvicted != forged-MaxStrangers {
		t.Fatalf("%d peers, %d streams, %d evicted; want the 2 members, their 2 streams, %d evicted",
			len(e.peers), len(e.streams), s.PeersEvicted, forged-MaxStrangers)
	}
	if limit := seenBurst + seenRate*now.Sub(t0).Seconds() + 1; float64(seen) > limit || s.PeersUnannounced != uint64(forged-seen) {
		t.Fatalf("%d PeerSeen events for forged IDs (limit %.0f), %d unannounced", seen, limit, s.PeersUnannounced)
	}
	// The members are still heard; the strangers are gone after the
	// suspect timeout.
	for end := now.Add(suspect); !now.After(end); now = now.Add(hb / 2) {
		e.Step(now, addr2, session(2, 5, now))
		e.Step(now, addr2, session(3, 1, now))
		e.Tick(now)
	}
	lost := 0
	for _, ev := range e.TakeEvents() {
		if ev.Kind == PeerLost {
			lost++
			if ev.Peer < 10_000 {
				t.Fatalf("member %d lost", ev.Peer)
			}
		}
	}
	if s := e.Stats(); s.Strangers != 0 || s.Peers != 2 || len(e.Peers()) != 2 {
		t.Fatalf("%d strangers and %d peers a suspect timeout later", s.Strangers, s.Peers)
	}
	if lost > seen {
		t.Fatalf("%d PeerLost events for %d strangers announced", lost, seen)
	}
}

// Attack: flushes naming many nodes (without a key an outsider can send
// one, and membership takes part in it). The nodes a flush proposes get
// state as members do, until the view; but only those of the flush this
// node takes part in now: a flush's proposal replaces the last one's, so
// forged flushes cannot pile up expected nodes. Each stream such a node
// opens costs at most gapSpan (512) gaps.
func TestExpectationsDoNotPileUp(t *testing.T) {
	e := inView(t)
	proposal := func(first uint64) []wire.Member {
		ms := []wire.Member{{ID: 1, Inc: 100}, {ID: 2, Inc: 5}, {ID: 3, Inc: 1}}
		for i := range uint64(100) {
			ms = append(ms, wire.Member{ID: first + i, Inc: 1})
		}
		return ms
	}
	for round := range uint64(10) {
		e.Expect(t0, proposal(1000+100*round))
		for i := range uint64(100) {
			e.Step(t0, addrX, data(1000+100*round+i, 1, 1))
			e.Step(t0, addrX, data(1000+100*round+i, 1, 1000))
		}
	}
	if len(e.expected) != 102 || len(e.peers) != 102 || len(e.streams) != 102 {
		t.Fatalf("%d expected, %d peers, %d streams after 10 forged proposals of 100 nodes; want 102 (the members too), 102, 102",
			len(e.expected), len(e.peers), len(e.streams))
	}
	for id, st := range e.streams {
		if len(st.gaps) > gapSpan {
			t.Fatalf("stream of %d has %d gaps, over %d", id, len(st.gaps), gapSpan)
		}
	}
	if s := e.Stats(); s.ForeignData != 0 {
		t.Fatalf("foreign_data %d: an expected node's data was dropped", s.ForeignData)
	}
	// The members are untouched; a view without the proposed nodes drops
	// their state.
	e.SetMembers([]wire.Member{{ID: 2, Inc: 5}, {ID: 3, Inc: 1}})
	if len(e.expected) != 0 || len(e.peers) != 2 || len(e.streams) != 2 {
		t.Fatalf("%d expected, %d peers, %d streams after the view", len(e.expected), len(e.peers), len(e.streams))
	}
}

// A node merged in from another partition sends the first messages of the
// new view before this node installs it, and the first of them are lost:
// its stream must not begin at the first message that arrives, or the
// lost ones could never be asked for (the view begins before it), and this
// node would deliver the view's messages of that node without its first
// ones. Its data are held; once the view places the stream (Start), the
// messages from its beginning are asked for and delivered in order.
func TestProposedNodesFirstMessagesAreNotLost(t *testing.T) {
	const base = 1 << 20 // past the first window: not a young stream, which starts at 1
	e := inView(t)
	e.Expect(t0, []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 5}, {ID: 3, Inc: 1}, {ID: 4, Inc: 9}})
	for _, seq := range []uint64{base + 361, base + 362} { // 359 and 360 were lost
		e.Step(t0, addr2, data(4, 9, seq))
	}
	if ds := e.TakeDeliveries(); len(ds) != 0 {
		t.Fatalf("delivered %d messages of a node not placed yet", len(ds))
	}
	e.SetMembers([]wire.Member{{ID: 2, Inc: 5}, {ID: 3, Inc: 1}, {ID: 4, Inc: 9}})
	e.Start(t0, 4, 9, base+359)
	var got []uint64
	for i, seq := range []uint64{base + 359, base + 360} {
		r := &wire.Envelope{Header: wire.Header{Group: 7, From: 4, Inc: 9, Kind: wire.KindRepair}}
		r.Repair = wire.Repair{Source: 4, SourceInc: 9, Data: data(4, 9, seq).Data}
		e.Step(t0.Add(time.Duration(1+i)*time.Millisecond), addr2, r)
		for _, d := range e.TakeDeliveries() {
			got = append(got, d.Seq)
		}
	}
	if !slices.Equal(got, []uint64{base + 359, base + 360, base + 361, base + 362}) {
		t.Fatalf("delivered %v of the proposed node, want %d to %d in order", got, base+359, base+362)
	}
	if s := e.Stats(); s.Unplaced != 2 {
		t.Errorf("data_unplaced %d, want 2", s.Unplaced)
	}
}

// A proposed node's stream placed where its first data began (nothing
// was lost) delivers what it held at once.
func TestProposedNodesHeldDataAreDelivered(t *testing.T) {
	const base = 1 << 20
	e := inView(t)
	e.Expect(t0, []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 5}, {ID: 3, Inc: 1}, {ID: 4, Inc: 9}})
	for _, seq := range []uint64{base, base + 1} {
		e.Step(t0, addr2, data(4, 9, seq))
	}
	e.SetMembers([]wire.Member{{ID: 2, Inc: 5}, {ID: 3, Inc: 1}, {ID: 4, Inc: 9}})
	e.Start(t0, 4, 9, base)
	var got []uint64
	for _, d := range e.TakeDeliveries() {
		got = append(got, d.Seq)
	}
	if !slices.Equal(got, []uint64{base, base + 1}) {
		t.Fatalf("delivered %v at the view, want %d and %d", got, base, base+1)
	}
}

// A stream not placed yet is not reported in session messages: what it
// holds may begin after the messages the view will hold it to, and a
// report of them would let their source count them held everywhere and
// drop them before this node could ask (TestStateUnderFaults found it: a
// merged node's first state piece was lost for good).
func TestUnplacedStreamsAreNotReported(t *testing.T) {
	const base = 1 << 20
	e := inView(t)
	e.Expect(t0, []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 5}, {ID: 3, Inc: 1}, {ID: 4, Inc: 9}})
	e.Step(t0, addr2, data(4, 9, base+361))
	reported := func(at time.Time) bool {
		e.Tick(at)
		for _, env := range e.TakeOutput() {
			if env.Kind != wire.KindSession {
				continue
			}
			for _, p := range env.Session.Peers {
				if p.ID == 4 {
					return true
				}
			}
		}
		return false
	}
	if reported(t0.Add(hb)) {
		t.Fatal("a session message reports the unplaced stream of node 4")
	}
	e.SetMembers([]wire.Member{{ID: 2, Inc: 5}, {ID: 3, Inc: 1}, {ID: 4, Inc: 9}})
	e.Start(t0.Add(hb), 4, 9, base+359)
	if !reported(t0.Add(3 * hb)) {
		t.Fatal("once placed, node 4's stream is not reported")
	}
}

// A joiner hears the first message of a member of the view it is about
// to install before the view arrives (its commit was lost once). Before,
// with no member of its own view (only itself) to wait for, it took the
// message for stable at once and let it go; a member that lost it could
// then ask this node alone, in vain, and the next flush waited for it for
// ever (TestPrimarySplit, seed 770144000003). A source outside the view
// keeps its messages until the view counts who holds them.
func TestExpectedSourceIsNotStableBeforeTheView(t *testing.T) {
	e := newEngine(4)
	e.SetMembers([]wire.Member{}) // a joiner's: no view yet
	e.Expect(t0, []wire.Member{{ID: 5, Inc: 1}, {ID: 2, Inc: 1}, {ID: 4, Inc: 1}})
	e.Step(t0, addr2, session(5, 1, t0))
	e.Step(t0, addr2, data(2, 1, 1))
	e.Start(t0, 2, 1, 1) // the view begins its stream at 1
	e.Step(t0, addr2, session(2, 1, t0))
	e.Tick(t0.Add(hb))
	st := e.streams[2]
	if st == nil || st.received() != 1 {
		t.Fatal("the expected source's message was not taken")
	}
	if st.stable != 0 || st.ring.get(1) == nil {
		t.Fatalf("stable %d before the view: the message may be the only copy a member can ask for", st.stable)
	}
	// In the view, it goes once every member holds it.
	e.SetMembers([]wire.Member{{ID: 5, Inc: 1}, {ID: 2, Inc: 1}})
	e.Step(t0.Add(hb), addr2, session(5, 1, t0.Add(hb), wire.PeerState{ID: 2, Inc: 1, Seq: 1}))
	if st.stable != 1 {
		t.Fatalf("stable %d once every member holds it, want 1", st.stable)
	}
}

// A node that stretches its suspicions (local health) loses a silent
// peer only after stretch+1 suspect timeouts.
func TestStretchDelaysLoss(t *testing.T) {
	for _, k := range []int{0, 3} {
		e := inView(t)
		e.Stretch(k)
		lostAt := time.Duration(0)
		for at := time.Duration(0); at <= 5*suspect && lostAt == 0; at += hb {
			e.Tick(t0.Add(at))
			for _, ev := range e.TakeEvents() {
				if ev.Kind == PeerLost {
					lostAt = at
				}
			}
		}
		if want := time.Duration(k+1) * suspect; lostAt < want || lostAt > want+hb {
			t.Fatalf("stretch %d: a silent peer lost after %v, want %v", k, lostAt, want)
		}
	}
}

// A joiner that installs a view and sends at once may not have heard
// every member yet. SetMembers presumes such a member live, so it holds
// the window as one heard that reports nothing would: else the others'
// reports would let the first messages go stable, and the member not
// heard might lack them with nobody left to repair them.
func TestUnheardMemberHoldsOwnWindow(t *testing.T) {
	e := newEngine(1)
	e.SetMembers([]wire.Member{{ID: 1, Inc: 100}, {ID: 2, Inc: 5}, {ID: 3, Inc: 1}})
	e.Step(t0, addr2, session(2, 5, t0))
	if _, err := e.Multicast(nil, []byte("x"), wire.FIFO, 0); err != nil {
		t.Fatal(err)
	}
	e.Tick(t0)
	e.Step(t0.Add(hb), addr2, session(2, 5, t0.Add(hb), wire.PeerState{ID: 1, Inc: 100, Seq: 1}))
	if e.own.stable != 0 {
		t.Fatalf("own message stable once member 2 holds it, though member 3 was never heard")
	}
	e.Step(t0.Add(hb), addr2, session(3, 1, t0.Add(hb), wire.PeerState{ID: 1, Inc: 100, Seq: 1}))
	if e.own.stable != 1 {
		t.Fatalf("own stable %d once every member holds it, want 1", e.own.stable)
	}
}
