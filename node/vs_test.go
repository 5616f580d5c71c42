package node

import (
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strings"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
)

// msgKey names one message: its sender's life and first sequence number.
type msgKey struct{ from, inc, seq uint64 }

func (k msgKey) String() string { return fmt.Sprintf("%d.%d/%d", k.from, k.inc, k.seq) }

// life is what one incarnation of a node installed and delivered.
type life struct {
	id, inc   uint64
	views     []membership.View
	delivered map[wire.ViewID][]msgKey // in delivery order
	seen      map[msgKey]bool
	lastSeq   map[[2]uint64]uint64 // (sender, inc) → last seq delivered
	ordered   map[viewKey][]ordDel // total and safe deliveries per view, in delivery order
	inView    map[[2]uint64]uint64 // (sender, inc) → last seq delivered in the current view
}

// ordDel is one total or safe delivery: its place in the view's order.
type ordDel struct {
	gseq  uint64
	k     msgKey
	final bool
}

// vsLedger checks guarantees 1–4 of docs/design.md after every
// simulator step, from what the nodes' cores hand out:
//  1. virtual synchrony: lives that install V and then V' delivered the
//     same messages in V;
//  2. every view a node installs contains it; one view ID, one member list;
//  3. integrity: a message is delivered at most once, only if it was sent,
//     with its bytes, and in the view it was sent in;
//  4. FIFO per sender;
//  5. total order: a view's total and safe messages delivered by their
//     order record have one number (gseq) everywhere, each member delivers
//     them in increasing gseq, and members that go from V to the same V'
//     deliver V's ordered messages in one sequence (those the flush
//     delivers at V's end included);
//  6. safe delivery: when a member delivers a safe message by its record,
//     every member still in the view holds it;
//  8. causal order: a causal message is delivered only after every
//     message its sender had delivered in the view before sending it.
type vsLedger struct {
	sent    map[msgKey]sentMsg
	gseqs   map[viewKey]map[uint64]msgKey // ordered deliveries by record: gseq → message
	w       *sim.World
	order   map[[2]uint64][]uint64 // (sender, inc) → seqs in send order
	lives   map[[2]uint64]*life
	members map[viewKey][]wire.Member
	trans   map[[2]viewKey][]msgKey // (V, V') → what the first life to make that step delivered in V
	transO  map[[2]viewKey][]ordDel // (V, V') → its ordered deliveries in V
	transBy map[[2]viewKey]*life
	onEvent func(id uint64, ev membership.Event) // sees every event the check drains
}

// keyOf is a view's key (viewKey): its ID and its coordinator's
// incarnation. A coordinator that restarts counts its epochs afresh; the
// incarnation tells its views from those of its earlier life (as JGroups'
// view IDs carry the coordinator's UUID).
func keyOf(v membership.View) viewKey { return viewKey{v.ID, v.Members[0].Inc} }

type sentMsg struct {
	crc    uint32
	view   wire.ViewID
	order  wire.Order
	causes map[[2]uint64]uint64 // a causal message's: what its sender had delivered in the view, last seq by sender
}

func newVSLedger() *vsLedger {
	return &vsLedger{sent: map[msgKey]sentMsg{}, order: map[[2]uint64][]uint64{}, lives: map[[2]uint64]*life{},
		members: map[viewKey][]wire.Member{}, trans: map[[2]viewKey][]msgKey{}, transBy: map[[2]viewKey]*life{},
		transO: map[[2]viewKey][]ordDel{}, gseqs: map[viewKey]map[uint64]msgKey{}}
}

// orders is what the schedules send: every order, alike.
var orders = []wire.Order{wire.FIFO, wire.Total, wire.Safe, wire.Causal}

// multicast sends a message from node id's core and records it; it returns
// the core's error (window full, no view, blocked).
func (l *vsLedger) multicast(c *Core, id, inc uint64, payload []byte, order wire.Order) (msgKey, error) {
	view := c.View().ID
	lf := l.life(id, inc)
	if order == wire.Causal && l.w != nil {
		// What the core delivered before this send, and the ledger has
		// not taken yet, is among the causes too (once the check has
		// run: before, nothing was delivered).
		if err := l.drain(lf, c); err != nil {
			return msgKey{}, err
		}
	}
	seq, err := c.Multicast(nil, payload, order, 0)
	if err != nil {
		return msgKey{}, err
	}
	k := msgKey{id, inc, seq}
	l.sent[k] = sentMsg{crc: crc32.ChecksumIEEE(payload), view: view, order: order}
	if order == wire.Causal {
		s := l.sent[k]
		s.causes = maps.Clone(lf.inView)
		l.sent[k] = s
	}
	l.order[[2]uint64{id, inc}] = append(l.order[[2]uint64{id, inc}], seq)
	return k, nil
}

func (l *vsLedger) life(id, inc uint64) *life {
	k := [2]uint64{id, inc}
	if lf := l.lives[k]; lf != nil {
		return lf
	}
	lf := &life{id: id, inc: inc, delivered: map[wire.ViewID][]msgKey{}, seen: map[msgKey]bool{}, lastSeq: map[[2]uint64]uint64{},
		ordered: map[viewKey][]ordDel{}, inView: map[[2]uint64]uint64{}}
	l.lives[k] = lf
	return lf
}

// undelivered says which of nodes ids still has final messages to send
// (left) or has not delivered one of sent, and "" when none: the
// liveness condition of the schedules and the fuzzer once faults stop.
func (l *vsLedger) undelivered(w *sim.World, ids []uint64, left map[uint64]int, sent []msgKey) string {
	for _, id := range ids {
		if left[id] > 0 {
			return fmt.Sprintf("node %d could not send yet", id)
		}
		lf := l.life(id, core(w, id).inc)
		for _, k := range sent {
			if !lf.seen[k] {
				return fmt.Sprintf("node %d has not delivered %v", id, k)
			}
		}
	}
	return ""
}

// check is the simulator invariant: it drains every live core.
func (l *vsLedger) check(w *sim.World) error {
	for _, id := range w.IDs() {
		if !w.Alive(id) {
			continue
		}
		c := core(w, id)
		l.w = w
		if err := l.drain(l.life(id, c.inc), c); err != nil {
			return err
		}
	}
	return nil
}

// drain takes every event of core c (life lf), in the order they happened.
func (l *vsLedger) drain(lf *life, c *Core) error {
	for _, ev := range c.takeMembership() {
		if ev.Kind == membership.Delivered {
			if err := l.deliver(l.w, lf, ev.Delivery); err != nil {
				return err
			}
			continue
		}
		if l.onEvent != nil {
			l.onEvent(lf.id, ev)
		}
		if ev.Kind == membership.ViewInstalled {
			clear(lf.inView)
			if err := l.install(lf, ev.View); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *vsLedger) deliver(w *sim.World, lf *life, d membership.Delivery) error {
	k := msgKey{d.Source, d.Inc, d.Seq}
	s, ok := l.sent[k]
	switch {
	case !ok:
		return fmt.Errorf("node %d delivered %v, which was never sent", lf.id, k)
	case crc32.ChecksumIEEE(d.Payload) != s.crc:
		return fmt.Errorf("node %d delivered %v with other bytes than were sent", lf.id, k)
	case d.View != s.view:
		return fmt.Errorf("node %d delivered %v in view %v; it was sent in %v", lf.id, k, d.View, s.view)
	case len(lf.views) == 0 || lf.views[len(lf.views)-1].ID != d.View:
		return fmt.Errorf("node %d delivered %v of view %v outside that view", lf.id, k, d.View)
	case lf.seen[k]:
		return fmt.Errorf("node %d delivered %v twice", lf.id, k)
	case d.Order != s.order:
		return fmt.Errorf("node %d delivered %v as %v; it was sent %v", lf.id, k, d.Order, s.order)
	case (d.GSeq != 0) != (d.Order != wire.FIFO && d.Order != wire.Causal):
		return fmt.Errorf("node %d delivered %v message %v with gseq %d", lf.id, d.Order, k, d.GSeq)
	}
	if d.Order != wire.FIFO && d.Order != wire.Causal {
		if err := l.ordered(w, lf, d, k); err != nil {
			return err
		}
	}
	for src, seq := range s.causes {
		if got := lf.inView[src]; got < seq {
			return fmt.Errorf("causal order: node %d delivered %v before %d.%d/%d, which its sender had delivered before sending it (it delivered that sender to seq %d in the view)", lf.id, k, src[0], src[1], seq, got)
		}
	}
	src := [2]uint64{d.Source, d.Inc}
	if last := lf.lastSeq[src]; d.Seq < last {
		return fmt.Errorf("node %d delivered %v after seq %d of the same sender: not FIFO", lf.id, k, last)
	}
	if next := l.nextSent(src, lf.lastSeq[src]); lf.lastSeq[src] != 0 && d.View == l.sent[msgKey{d.Source, d.Inc, lf.lastSeq[src]}].view && next != d.Seq {
		return fmt.Errorf("node %d delivered %v after %d of the same sender and view, skipping %d: not FIFO", lf.id, k, lf.lastSeq[src], next)
	}
	lf.seen[k] = true
	lf.lastSeq[src] = d.Seq
	lf.inView[src] = d.Seq
	lf.delivered[d.View] = append(lf.delivered[d.View], k)
	return nil
}

// ordered checks a total or safe delivery (guarantees 5 and 6).
func (l *vsLedger) ordered(w *sim.World, lf *life, d membership.Delivery, k msgKey) error {
	v := lf.views[len(lf.views)-1]
	vk := keyOf(v)
	od := ordDel{d.GSeq, k, d.Final}
	if prev := lf.ordered[vk]; len(prev) > 0 && prev[len(prev)-1].gseq >= d.GSeq {
		return fmt.Errorf("total order: node %d delivered %v as gseq %d of %v after gseq %d", lf.id, k, d.GSeq, v.ID, prev[len(prev)-1].gseq)
	}
	lf.ordered[vk] = append(lf.ordered[vk], od)
	if d.Final {
		return nil // the same sequence as the others that go to the same next view: install checks
	}
	g := l.gseqs[vk]
	if g == nil {
		g = map[uint64]msgKey{}
		l.gseqs[vk] = g
	}
	if other, ok := g[d.GSeq]; ok && other != k {
		return fmt.Errorf("total order: node %d delivered %v as gseq %d of %v; elsewhere gseq %d is %v", lf.id, k, d.GSeq, v.ID, d.GSeq, other)
	}
	g[d.GSeq] = k
	if d.Order != wire.Safe {
		return nil
	}
	for _, x := range v.Members {
		if x.ID == lf.id || x.ID == d.Source || !w.Alive(x.ID) {
			continue
		}
		c := core(w, x.ID)
		if c.inc != x.Inc || c.View().ID != v.ID {
			continue // gone on, or not there yet: its holdings are another view's
		}
		if got := c.engine.Received(d.Source, d.Inc); got < d.End {
			return fmt.Errorf("safe delivery: node %d delivered %v (up to seq %d) while member %d holds that sender only to %d", lf.id, k, d.End, x.ID, got)
		}
	}
	return nil
}

// nextSent is the seq the sender sent after seq (0 if none).
func (l *vsLedger) nextSent(src [2]uint64, seq uint64) uint64 {
	o := l.order[src]
	i, found := slices.BinarySearch(o, seq)
	if !found || i+1 >= len(o) {
		return 0
	}
	return o[i+1]
}

func (l *vsLedger) install(lf *life, v membership.View) error {
	if !v.HasInc(lf.id, lf.inc) {
		return fmt.Errorf("node %d installed %v without itself", lf.id, v)
	}
	if ms, ok := l.members[keyOf(v)]; ok && !slices.Equal(ms, v.Members) {
		return fmt.Errorf("view %v installed by node %d with members %v, elsewhere with %v", v.ID, lf.id, v.Members, ms)
	}
	l.members[keyOf(v)] = slices.Clone(v.Members)
	if n := len(lf.views); n > 0 {
		prev := lf.views[n-1]
		if !prev.ID.Less(v.ID) {
			return fmt.Errorf("node %d installed %v after %v", lf.id, v.ID, prev.ID)
		}
		// Only the coordinator's own step is checked: a member merged into
		// a view of its old members went through the change on the other
		// side (the coordinator's view did not hold it).
		if v.ID.Coord == lf.id && slices.Equal(prev.Members, v.Members) {
			return fmt.Errorf("node %d coordinates %v, installed with the very members of its view %v: a view that changes nothing (docs/design.md, \"Flushes that change nothing\")", lf.id, v, prev.ID)
		}
		if err := l.synchrony(lf, prev, v); err != nil {
			return err
		}
	}
	lf.views = append(lf.views, v)
	return nil
}

// synchrony compares what lf delivered in prev with what the first life
// that also went from prev to next delivered there.
func (l *vsLedger) synchrony(lf *life, pv, nv membership.View) error {
	prev, next := pv.ID, nv.ID
	step := [2]viewKey{keyOf(pv), keyOf(nv)}
	got := slices.Clone(lf.delivered[prev])
	slices.SortFunc(got, cmpKey)
	first, ok := l.trans[step]
	if !ok {
		l.trans[step], l.transBy[step], l.transO[step] = got, lf, lf.ordered[keyOf(pv)]
		return nil
	}
	same := func(a, b ordDel) bool { return a.gseq == b.gseq && a.k == b.k } // final or not may differ
	if a, b := lf.ordered[keyOf(pv)], l.transO[step]; slices.Equal(got, first) && !slices.EqualFunc(a, b, same) {
		i := 0
		for i < min(len(a), len(b)) && same(a[i], b[i]) {
			i++
		}
		return fmt.Errorf("total order: nodes %d and %d both went from %v to %v but delivered its ordered messages differently, from the %dth on:\n  %d: %v\n  %d: %v",
			lf.id, l.transBy[step].id, prev, next, i+1, lf.id, a[i:min(len(a), i+5)], l.transBy[step].id, b[i:min(len(b), i+5)])
	}
	if !slices.Equal(got, first) {
		other := l.transBy[step]
		return fmt.Errorf("virtual synchrony: nodes %d and %d both went from %v to %v but delivered different messages in %v:\n  %d: %s\n  %d: %s\n  only at %d: %s\n  only at %d: %s",
			lf.id, other.id, prev, next, prev, lf.id, keys(got), other.id, keys(first),
			lf.id, keys(minus(got, first)), other.id, keys(minus(first, got)))
	}
	return nil
}

func cmpKey(a, b msgKey) int {
	if a.from != b.from {
		return int(a.from) - int(b.from)
	}
	if a.inc != b.inc {
		if a.inc < b.inc {
			return -1
		}
		return 1
	}
	if a.seq < b.seq {
		return -1
	} else if a.seq > b.seq {
		return 1
	}
	return 0
}

func keys(ks []msgKey) string {
	if len(ks) > 40 {
		return fmt.Sprintf("%d messages, first %v, last %v", len(ks), ks[0], ks[len(ks)-1])
	}
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k.String())
	}
	return b.String()
}

// minus returns the keys of a that b lacks.
func minus(a, b []msgKey) []msgKey {
	in := map[msgKey]bool{}
	for _, k := range b {
		in[k] = true
	}
	var out []msgKey
	for _, k := range a {
		if !in[k] {
			out = append(out, k)
		}
	}
	return out
}
