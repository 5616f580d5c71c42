package multicast

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
)

// FuzzEngine runs the engine under test (node 1, incarnation 100) with two
// honest peers, real engines (node 2/5 and node 3/1) that multicast
// messages, small and fragmented, and turns the fuzzer's bytes into a
// script: who sends what, which of the peers' datagrams reach node 1 and
// in which order (lost, duplicated, reordered), when time passes, and
// forged datagrams among them (well-formed envelopes of the engine's kinds
// with fuzzer-chosen fields, a burst of one from many IDs, raw bytes).
// The peers hear node 1 and each other at once; forgeries go to node 1
// only.
//
// Three modes, chosen by the first byte:
//
//   - Outsiders (the default): node 1 is in a view of the three, and
//     forgeries carry IDs outside it (or a member's ID with another
//     incarnation). Each peer's messages must be delivered exactly as sent
//     (bytes, service, order, addressee, fragments), once, in order, with
//     none skipped unless a StreamSkipped says so; nothing is delivered
//     from anyone else; and once the forging stops and the network heals,
//     every message the peers sent is delivered.
//   - Members: a view, and forgeries may carry the members' IDs and
//     incarnations, as a member holding the key could send them. A
//     datagram in a member's name may put any message in its stream.
//   - Alone: no view: the engine without membership admits every node.
//
// In every mode, after every step: each source's messages (per
// incarnation, and in Alone per life: a node heard anew is a new one) are
// delivered at most once, in increasing sequence order, only from a
// source node 1 heard in that incarnation, and each is made of data node
// 1 was given in its source's name at those sequence numbers (bytes
// included); and the memory bounds hold (checkBounds). No step may panic
// or loop.
//
// `go test ./multicast` runs the seeds (testdata/fuzz/FuzzEngine and
// engineSeeds); `go test -run '^$' -fuzz '^FuzzEngine$' ./multicast`
// searches further.
func FuzzEngine(f *testing.F) { testutil.FuzzScripts(f, engineSeeds(), runEngineScript) }

// Fuzz modes (FuzzEngine).
const (
	fuzzOutsiders = iota
	fuzzMembers
	fuzzAlone
)

var fuzzModes = [...]string{"outsiders", "members", "alone"}

// honest are the peers of FuzzEngine: ID and incarnation.
var honest = [2]wire.Member{{ID: 2, Inc: 5}, {ID: 3, Inc: 1}}

// engineRun is one run of FuzzEngine's script.
type engineRun struct {
	t     *testing.T
	s     *testutil.Script
	mode  int
	now   time.Time
	e     *Engine    // node 1, under test
	peers [2]*Engine // the honest peers
	enc   *wire.Encoder
	dec   *wire.Decoder
	env   *wire.Envelope
	queue []queued // the peers' datagrams on their way to node 1
	sent  map[wire.Member]map[uint64]sentMsg
	count int // messages multicast so far: each payload differs
	l     *deliveryLedger
	trace []string
}

// queued is a peer's datagram for node 1.
type queued struct {
	from int // index in peers
	b    []byte
}

// sentMsg is what a peer multicast: its first fragment's seq is the key.
type sentMsg struct {
	end            uint64
	order          wire.Order
	dest           uint64
	service, bytes []byte
}

func (r *engineRun) logf(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf("%v ", r.now.Sub(t0))+fmt.Sprintf(format, args...))
	if len(r.trace) > 80 {
		r.trace = r.trace[1:]
	}
}

func (r *engineRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("mode %s: %s\nthe last steps:\n%s", fuzzModes[r.mode], fmt.Sprintf(format, args...), strings.Join(r.trace, "\n"))
}

func runEngineScript(t *testing.T, data []byte) {
	s := testutil.NewScript(data)
	r := &engineRun{t: t, s: s, mode: int(s.Byte() % 3), now: t0, enc: wire.NewEncoder(), dec: wire.NewDecoder(),
		env: wire.NewEnvelope(65000), sent: map[wire.Member]map[uint64]sentMsg{}}
	r.l = newDeliveryLedger(r.mode == fuzzAlone)
	opt := Options{Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 64, BulkSize: 65000} // bulk datagrams while nothing is lost
	members := []wire.Member{{ID: 1, Inc: 100}, honest[0], honest[1]}
	others := func(id uint64) []wire.Member { // as membership tells its engine
		return slices.DeleteFunc(slices.Clone(members), func(m wire.Member) bool { return m.ID == id })
	}
	r.e = New(withSelf(opt, 1, 100), t0)
	for i, h := range honest {
		r.peers[i] = New(withSelf(opt, h.ID, h.Inc), t0)
		r.sent[h] = map[uint64]sentMsg{}
	}
	if r.mode != fuzzAlone {
		for _, e := range r.all() {
			e.SetMembers(others(e.opt.Self))
		}
	}
	for step := 0; step < 128 && !s.Done(); step++ {
		r.step()
	}
	if r.mode != fuzzOutsiders {
		return
	}
	// The forging stops and the network heals: every message sent is
	// delivered.
	for range 100 {
		r.deliver(len(r.queue))
		r.advance(10 * time.Millisecond)
	}
	for _, h := range honest {
		for seq := range r.sent[h] {
			if !r.l.delivered[lifeKey{h.ID, h.Inc, 0}][seq] {
				r.fail("%d.%d/%d never delivered once the network healed", h.ID, h.Inc, seq)
			}
		}
	}
}

func withSelf(o Options, id, inc uint64) Options {
	o.Self, o.Inc = id, inc
	return o
}

func (r *engineRun) all() []*Engine { return []*Engine{r.e, r.peers[0], r.peers[1]} }

// step does one thing of the script, then checks.
func (r *engineRun) step() {
	s := r.s
	switch op := s.Byte(); op % 8 {
	case 0:
		r.multicast(int(s.Byte() % 3))
	case 1:
		r.deliver(1 + int(s.Byte()%4))
	case 2: // lost
		if len(r.queue) > 0 {
			r.logf("lost: a datagram of %d", honest[r.queue[0].from].ID)
			r.queue = r.queue[1:]
		}
	case 3: // reordered, and perhaps duplicated
		if len(r.queue) > 0 {
			i, keep := int(s.Byte())%len(r.queue), s.Byte()%2 == 0
			q := r.queue[i]
			if !keep {
				r.queue = slices.Delete(r.queue, i, i+1)
			}
			r.feed(q.b, false)
		}
	case 4:
		r.inject(r.forge())
	case 5: // a burst: one envelope from many IDs
		env, n := r.forge(), 1+int(s.Byte()%64)
		from := env.From
		for i := range n {
			env.From = r.sender(from+uint64(i), env.Inc)
			r.inject(env)
		}
	case 6:
		r.feed(s.Bytes(255), true)
	case 7:
		r.advance(time.Duration(1+s.Byte()%100) * time.Millisecond)
	}
}

// multicast has node 1 (src 0) or a peer send a message: small, or in
// fragments.
func (r *engineRun) multicast(src int) {
	s := r.s
	size := int(s.Byte())
	if size >= 200 {
		size = 1400 + 16*(size-200) // 2 to 3 fragments
	}
	order, dest := wire.Order(s.Byte()%4), uint64(0)
	if order == wire.FIFO && s.Byte()%2 == 0 {
		dest = uint64(1 + s.Byte()%3)
	}
	service := []byte(nil)
	if s.Byte()%4 == 0 {
		service = []byte("svc")
	}
	r.count++
	payload := bytes.Repeat([]byte{byte(r.count), byte(src)}, size/2+1)[:size]
	e := r.e
	if src > 0 {
		e = r.peers[src-1]
	}
	seq, err := e.Multicast(service, payload, order, dest)
	if err != nil {
		r.logf("%d multicast %d bytes: %v", e.opt.Self, size, err)
		return
	}
	r.logf("%d multicast %d/%d..%d: %d bytes", e.opt.Self, e.opt.Inc, seq, e.own.next-1, size)
	if src > 0 {
		r.sent[honest[src-1]][seq] = sentMsg{end: e.own.next - 1, order: order, dest: dest, service: service, bytes: payload}
	}
	r.pump()
}

// deliver hands node 1 the first n datagrams on their way to it.
func (r *engineRun) deliver(n int) {
	for ; n > 0 && len(r.queue) > 0; n-- {
		q := r.queue[0]
		r.queue = r.queue[1:]
		r.feed(q.b, false)
	}
}

// advance lets d pass, ticking each engine at its deadlines. A Tick must
// move the engine's deadline past now: an engine that wants Tick again at
// the same instant would loop.
func (r *engineRun) advance(d time.Duration) {
	end := r.now.Add(d)
	for {
		next := end
		for _, e := range r.all() {
			if dl := e.NextDeadline(); dl.Before(next) {
				next = dl
			}
		}
		if next.After(r.now) {
			r.now = next
		}
		for _, e := range r.all() {
			if !e.NextDeadline().After(r.now) {
				e.Tick(r.now)
				if dl := e.NextDeadline(); !dl.After(r.now) {
					r.fail("node %d wants Tick again at %v, after a Tick at %v", e.opt.Self, dl.Sub(t0), r.now.Sub(t0))
				}
			}
		}
		r.pump()
		if !r.now.Before(end) {
			return
		}
	}
}

// feed decodes a datagram and steps node 1 with it. Forged ones are
// held to the mode first.
func (r *engineRun) feed(b []byte, forged bool) {
	if err := r.dec.Decode(b, r.env); err != nil {
		return
	}
	env := r.env
	if forged && r.mode == fuzzOutsiders && r.honestName(env.From, env.Inc) {
		return // a forgery in a member's name: not this mode's
	}
	r.l.given(env)
	r.logf("1 gets %s", describe(env))
	r.e.Step(r.now, addr2, env)
	r.pump()
}

// inject encodes a forged envelope and feeds it to node 1.
func (r *engineRun) inject(env *wire.Envelope) {
	b, err := r.enc.Append(nil, env)
	if err != nil {
		return
	}
	r.feed(b, true)
}

func (r *engineRun) honestName(id, inc uint64) bool {
	return slices.Contains(honest[:], wire.Member{ID: id, Inc: inc})
}

// sender keeps a forgery out of the members' names in Outsiders.
func (r *engineRun) sender(id, inc uint64) uint64 {
	if r.mode == fuzzOutsiders && r.honestName(id, inc) {
		return id + 10
	}
	return id
}

// pump passes on what the engines produced until none produces more:
// node 1's datagrams go to both peers, a peer's to the other at once and
// into the queue for node 1. Node 1's deliveries and events are checked.
func (r *engineRun) pump() {
	for round := 0; ; round++ {
		if round > 1000 {
			r.fail("the engines answer each other without end")
		}
		busy := false
		for i, e := range r.all() {
			e.Pack()
			rd := e.Ready()
			if i == 0 {
				if err := r.l.check(rd, r.honestSent()); err != nil {
					r.fail("%v", err)
				}
			}
			for k := range rd.Envelopes {
				b, err := r.enc.Append(nil, &rd.Envelopes[k])
				if err != nil {
					r.fail("encode %+v: %v", rd.Envelopes[k].Header, err)
				}
				busy = true
				for j, p := range r.peers {
					if j+1 != i {
						r.stepPeer(p, b)
					}
				}
				if i > 0 {
					r.queue = append(r.queue, queued{from: i - 1, b: b})
				}
			}
		}
		if err := checkBounds(r.e, r.l.forgedIDs); err != nil {
			r.fail("%v", err)
		}
		if !busy {
			return
		}
	}
}

func (r *engineRun) stepPeer(p *Engine, b []byte) {
	if err := r.dec.Decode(b, r.env); err != nil {
		r.fail("decode what an engine sent: %v", err)
	}
	p.Step(r.now, addr2, r.env)
}

// honestSent is what the peers sent, for the ledger to compare with in
// Outsiders.
func (r *engineRun) honestSent() map[wire.Member]map[uint64]sentMsg {
	if r.mode != fuzzOutsiders {
		return nil
	}
	return r.sent
}

// context returns the numbers that matter now: the IDs, incarnations,
// and sequence numbers sent and held.
func (r *engineRun) context() []uint64 {
	ctx := []uint64{1, 100, wire.MaxSeq - 1, r.e.own.next}
	for i, h := range honest {
		ctx = append(ctx, h.ID, h.Inc, r.peers[i].own.next, r.e.Received(h.ID, h.Inc))
	}
	return ctx
}

// forge builds an envelope of a fuzzer-chosen kind with fuzzer-chosen
// fields, as from a node the mode allows.
func (r *engineRun) forge() *wire.Envelope {
	s, ctx := r.s, r.context()
	u := func() uint64 { return s.U64(ctx) }
	env := &wire.Envelope{Header: wire.Header{Group: 7}}
	env.From, env.Inc = r.node(u)
	env.From = r.sender(env.From, env.Inc)
	env.View = wire.ViewID{Epoch: u() % 4, Coord: u() % 4}
	switch s.Byte() % 6 {
	case 0:
		env.Kind, env.Data = wire.KindData, r.forgeData(u, env.From, env.Inc)
	case 1:
		env.Kind = wire.KindBatch
		for k := 1 + s.Byte()%4; k > 0; k-- {
			env.Batch = append(env.Batch, r.forgeData(u, env.From, env.Inc))
		}
	case 2:
		env.Kind = wire.KindNack
		env.Nack.Source, env.Nack.SourceInc = r.node(u)
		env.Nack.Attempt = u() % (wire.MaxAttempt + 1)
		for k := 1 + s.Byte()%4; k > 0; k-- {
			first := r.seq(u, env.Nack.Source, env.Nack.SourceInc)
			env.Nack.Ranges = append(env.Nack.Ranges, wire.SeqRange{First: first, Last: first + u()%1024})
		}
	case 3:
		env.Kind = wire.KindRepair
		env.Repair.Source, env.Repair.SourceInc = r.node(u)
		env.Repair.View, env.Repair.Data = env.View, r.forgeData(u, env.Repair.Source, env.Repair.SourceInc)
	case 4:
		env.Kind = wire.KindSession
		env.Session = wire.Session{Sent: r.now.UnixNano() - int64(s.Byte())*int64(time.Millisecond),
			Seq: r.seq(u, env.From, env.Inc), Low: r.seq(u, env.From, env.Inc)}
		for k := s.Byte() % 4; k > 0; k-- {
			ps := wire.PeerState{Seq: u(), Echo: r.now.UnixNano()}
			ps.ID, ps.Inc = r.node(u)
			env.Session.Peers = append(env.Session.Peers, ps)
		}
	default:
		env.Kind = wire.KindLeave // not the engine's
		env.Leave = wire.Leave{Member: u(), MemberInc: u()}
	}
	return env
}

// node picks a node to name: one of the three with its incarnation, or
// any numbers.
func (r *engineRun) node(u func() uint64) (id, inc uint64) {
	switch k := r.s.Byte(); k % 4 {
	case 0, 1:
		return honest[k%2].ID, honest[k%2].Inc
	case 2:
		return 1, 100
	}
	return u(), u()
}

// seq picks a sequence number of source id's incarnation inc: just past
// what node 1 delivered of it, or any number.
func (r *engineRun) seq(u func() uint64, id, inc uint64) uint64 {
	if k := r.s.Byte(); k%4 != 0 {
		return r.e.Received(id, inc) + uint64(k%8)
	}
	return u()
}

// forgeData is a forged data message of source id's incarnation inc: any
// numbers, and fragments often.
func (r *engineRun) forgeData(u func() uint64, id, inc uint64) wire.Data {
	s := r.s
	d := wire.Data{Seq: r.seq(u, id, inc), Order: wire.Order(s.Byte() % 4), Payload: s.Bytes(64)}
	if f := s.Byte(); f%2 == 1 {
		d.FragCount, d.FragIndex = uint32(2+f%5), uint32(s.Byte()%6)
	}
	if s.Byte()%4 == 0 {
		d.Dest, d.Service = u(), s.Bytes(8)
	}
	return d
}

// describe formats a datagram for the trace.
func describe(env *wire.Envelope) string {
	h := fmt.Sprintf("%s from %d.%d", env.Kind, env.From, env.Inc)
	switch env.Kind {
	case wire.KindData:
		return fmt.Sprintf("%s seq %d frag %d/%d, %d bytes", h, env.Data.Seq, env.Data.FragIndex, env.Data.FragCount, len(env.Data.Payload))
	case wire.KindBatch:
		seqs := make([]uint64, len(env.Batch))
		for i, d := range env.Batch {
			seqs[i] = d.Seq
		}
		return fmt.Sprintf("%s seqs %v", h, seqs)
	case wire.KindNack:
		return fmt.Sprintf("%s for %d.%d %v", h, env.Nack.Source, env.Nack.SourceInc, env.Nack.Ranges)
	case wire.KindRepair:
		return fmt.Sprintf("%s of %d.%d/%d", h, env.Repair.Source, env.Repair.SourceInc, env.Repair.Data.Seq)
	case wire.KindSession:
		return fmt.Sprintf("%s seq %d low %d peers %v", h, env.Session.Seq, env.Session.Low, env.Session.Peers)
	}
	return h
}

// deliveryLedger checks what node 1 delivers against what it was given.
type deliveryLedger struct {
	lives     bool                        // Alone: a node heard anew starts a new life
	life      map[uint64]int              // by node: its life, counted by PeerSeen events
	heard     map[wire.Member]bool        // the (ID, incarnation) of every datagram given
	data      map[dataKey][]wire.Data     // data given in a source's name, by seq
	last      map[lifeKey]uint64          // the last seq delivered
	delivered map[lifeKey]map[uint64]bool // by first seq
	skipped   map[lifeKey]bool            // a StreamSkipped since the last delivery
	forgedIDs map[uint64]bool             // IDs datagrams were given from
}

type dataKey struct{ src, inc, seq uint64 }

type lifeKey struct {
	src, inc uint64
	life     int
}

func newDeliveryLedger(lives bool) *deliveryLedger {
	return &deliveryLedger{lives: lives, life: map[uint64]int{}, heard: map[wire.Member]bool{}, data: map[dataKey][]wire.Data{},
		last: map[lifeKey]uint64{}, delivered: map[lifeKey]map[uint64]bool{}, skipped: map[lifeKey]bool{}, forgedIDs: map[uint64]bool{}}
}

// given records a datagram given to node 1: who it is from, and the data
// it carries in a source's name.
func (l *deliveryLedger) given(env *wire.Envelope) {
	l.heard[wire.Member{ID: env.From, Inc: env.Inc}] = true
	l.forgedIDs[env.From] = true
	add := func(src, inc uint64, d *wire.Data) {
		k := dataKey{src, inc, d.Seq}
		for _, g := range l.data[k] {
			if sameData(&g, d) {
				return
			}
		}
		l.data[k] = append(l.data[k], owned(d))
	}
	switch env.Kind {
	case wire.KindData:
		add(env.From, env.Inc, &env.Data)
	case wire.KindBatch:
		for i := range env.Batch {
			add(env.From, env.Inc, &env.Batch[i])
		}
	case wire.KindRepair:
		add(env.Repair.Source, env.Repair.SourceInc, &env.Repair.Data)
	}
}

func sameData(a, b *wire.Data) bool {
	return a.Order == b.Order && a.Dest == b.Dest && a.FragIndex == b.FragIndex && a.FragCount == b.FragCount &&
		bytes.Equal(a.Service, b.Service) && bytes.Equal(a.Payload, b.Payload)
}

// check takes node 1's Ready: its events, then its deliveries. sent, when
// not nil, is what the honest peers sent, which is all that may be
// delivered, exactly.
func (l *deliveryLedger) check(rd Ready, sent map[wire.Member]map[uint64]sentMsg) error {
	for _, ev := range rd.Events {
		switch ev.Kind {
		case PeerSeen:
			if l.lives {
				l.life[ev.Peer]++
			}
		case StreamSkipped:
			l.skipped[lifeKey{ev.Peer, ev.Inc, l.life[ev.Peer]}] = true
		}
	}
	for i := range rd.Deliveries {
		if err := l.deliver(&rd.Deliveries[i], sent); err != nil {
			return err
		}
	}
	return nil
}

func (l *deliveryLedger) deliver(d *Delivery, sent map[wire.Member]map[uint64]sentMsg) error {
	name := fmt.Sprintf("%d.%d/%d..%d", d.Source, d.Inc, d.Seq, d.End)
	k := lifeKey{d.Source, d.Inc, l.life[d.Source]}
	switch last := l.last[k]; {
	case !l.heard[wire.Member{ID: d.Source, Inc: d.Inc}]:
		return fmt.Errorf("delivered %s from a source never heard in that incarnation", name)
	case d.End < d.Seq || d.Seq <= last:
		return fmt.Errorf("delivered %s after seq %d: twice, or out of order", name, last)
	case !l.made(d):
		return fmt.Errorf("delivered %s (%d bytes, order %d, dest %d, service %q): not made of data given in its name at those seqs", name, len(d.Payload), d.Order, d.Dest, d.Service)
	case sent != nil:
		msgs, ok := sent[wire.Member{ID: d.Source, Inc: d.Inc}]
		m, found := msgs[d.Seq]
		switch {
		case !ok:
			return fmt.Errorf("delivered %s from outside the view", name)
		case !found || m.end != d.End || m.order != d.Order || m.dest != d.Dest || !bytes.Equal(m.service, d.Service) || !bytes.Equal(m.bytes, d.Payload):
			return fmt.Errorf("delivered %s (%d bytes): not what its source sent (%d bytes to seq %d)", name, len(d.Payload), len(m.bytes), m.end)
		case d.Seq != last+1 && !l.skipped[k]:
			return fmt.Errorf("delivered %s after seq %d: skipped what was not reported lost", name, last)
		}
	}
	l.last[k] = d.End
	l.skipped[k] = false
	if l.delivered[k] == nil {
		l.delivered[k] = map[uint64]bool{}
	}
	l.delivered[k][d.Seq] = true
	return nil
}

// made reports whether d is made of data given in its source's name: a
// piece given at each seq from d.Seq to d.End, whose payloads make d's
// (in order), the last with d's service, order and addressee.
func (l *deliveryLedger) made(d *Delivery) bool {
	offsets := map[int]bool{0: true} // how much of d's payload the seqs so far can make
	for s := d.Seq; s <= d.End && len(offsets) > 0; s++ {
		next := map[int]bool{}
		for off := range offsets {
			for _, g := range l.data[dataKey{d.Source, d.Inc, s}] {
				if s == d.End && (g.Order != d.Order || g.Dest != d.Dest || !bytes.Equal(g.Service, d.Service)) {
					continue
				}
				if bytes.HasPrefix(d.Payload[off:], g.Payload) {
					next[off+len(g.Payload)] = true
				}
			}
		}
		offsets = next
	}
	return offsets[len(d.Payload)]
}

// checkBounds reports a limit the engine promises whatever it is fed, if
// it is broken: state only for the members in a view, or without one for
// the nodes heard (heard, the IDs datagrams came from).
func checkBounds(e *Engine, heard map[uint64]bool) error {
	peers := 2
	if e.members == nil {
		peers = len(heard)
	}
	switch {
	case len(e.peers) > peers || len(e.streams) > peers:
		return fmt.Errorf("%d peers and %d streams, over %d", len(e.peers), len(e.streams), peers)
	case e.strangers.len() > MaxStrangers:
		return fmt.Errorf("%d strangers, over %d", e.strangers.len(), MaxStrangers)
	case e.Unstable() > e.opt.Window:
		return fmt.Errorf("%d unstable messages over a window of %d", e.Unstable(), e.opt.Window)
	}
	for _, st := range append(e.streamList(), e.own) {
		limit := int(st.ring.max)
		if len(st.gaps) > min(limit, gapSpan) || len(st.repairs) > limit || len(st.ring.slots) > limit || len(st.ahead) > maxAhead {
			return fmt.Errorf("stream %d holds %d gaps, %d repair records, %d slots, %d requests ahead: over its ring's %d (gaps %d, ahead %d)",
				st.src, len(st.gaps), len(st.repairs), len(st.ring.slots), len(st.ahead), limit, gapSpan, maxAhead)
		}
	}
	for _, p := range e.peers {
		if len(p.reports) > peers+1 { // a report per source heard, and this node
			return fmt.Errorf("peer %d keeps %d reports", p.id, len(p.reports))
		}
	}
	return nil
}

func (e *Engine) streamList() []*stream {
	var out []*stream
	for _, id := range e.streamIDs() {
		out = append(out, e.streams[id])
	}
	return out
}

// engineSeeds are the seed corpus's scripts, besides testdata/fuzz: each
// mode with traffic, loss, reordering and time; a burst of data from 40
// strangers; a message in two fragments forged in a member's name; NACKs
// for node 1's messages, from a member and from a stranger.
func engineSeeds() [][]byte {
	traffic := []byte{
		0, 1, 10, 0, 1, 1, // 2 sends 10 bytes
		0, 2, 250, 1, 1, // 3 sends fragments, in total order
		0, 0, 5, 0, 1, 1, // 1 sends
		2,       // lost
		3, 1, 1, // reordered
		1, 3, // delivered
		7, 60, // time passes
		0, 1, 220, 0, 0, 2, 1, // 2 sends fragments to 3
		1, 3, 7, 99, 1, 3, 7, 99,
	}
	burst := []byte{5, 3, 2, 40, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 39}
	fragments := []byte{4, 0, 0, 0, 0, 1, 0, 1, 'a', 5, 0, 1, 4, 0, 0, 0, 0, 1, 0, 1, 'b', 5, 1, 1}
	sends := []byte{0, 0, 5, 1, 1, 0, 0, 5, 1, 1, 0, 0, 5, 1, 1}
	nack := []byte{4, 1, 0, 0, 2, 2, 0, 0, 0, 1, 2, 200} // from 3, for 1's first 200
	var seeds [][]byte
	for mode := range byte(3) {
		seeds = append(seeds, append([]byte{mode}, traffic...))
	}
	seeds = append(seeds,
		slices.Concat([]byte{fuzzOutsiders}, burst, traffic),
		slices.Concat([]byte{fuzzMembers}, fragments, traffic),
		slices.Concat([]byte{fuzzMembers}, sends, nack, traffic),
		slices.Concat([]byte{fuzzOutsiders}, sends, nack, traffic))
	return seeds
}
