package membership

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
)

// ledger checks, by code and independently of any golden output, the
// guarantees of docs/design.md ("Guarantees as implemented") on what the
// machines of a data-driven script did: every message sent, every view
// installed and every message delivered, node by node, in order. A bug that
// changed a script's output and its expected output alike would still be
// caught here.
//
// Checked as each thing happens (install, deliver):
//   - self-inclusion: an installed view contains its installer;
//   - agreement: one member list per view (ID and coordinator incarnation);
//   - a node's view IDs strictly increase;
//   - integrity: a delivery was sent, with those bytes and that order, in
//     the view it is delivered in, which is the receiver's installed view,
//     and a node delivers it once;
//   - FIFO with nothing skipped: a node delivers a sender's messages of a
//     view in the order sent, none left out before the last it delivers;
//   - a gseq on ordered (total, safe) messages, none on FIFO ones.
//
// Checked across nodes (check):
//   - virtual synchrony: nodes that install V and then the same V'
//     delivered the same messages in V;
//   - total order: within a view a gseq names one message everywhere (among
//     deliveries by record) and a message has one gseq; a node's gseqs in
//     a view increase; nodes that go from V to the same V' deliver V's
//     ordered messages in one sequence, the final ones included.
type ledger struct {
	sent   map[msgKey]sentMsg
	sentIn map[streamView][]uint64 // a sender's application messages in a view, by seq
	lives  map[uint64]*life
	views  map[viewKey][]wire.Member
	errs   []string
}

// msgKey names a message: its source's ID and incarnation, and its seq.
type msgKey struct{ src, inc, seq uint64 }

func (k msgKey) String() string { return fmt.Sprintf("%d/%d", k.src, k.seq) }

// viewKey names a view: its ID and its coordinator's incarnation.
type viewKey struct {
	id  wire.ViewID
	inc uint64
}

func (v viewKey) String() string { return v.id.String() }

type streamView struct {
	src, inc uint64
	view     wire.ViewID
}

type sentMsg struct {
	view    wire.ViewID
	order   wire.Order
	payload string
}

// delivered is one delivery as the ledger keeps it.
type delivered struct {
	msg   msgKey
	order wire.Order
	gseq  uint64
	final bool
}

// segment is what a node delivered in one installed view.
type segment struct {
	view viewKey
	dels []delivered
	next map[streamView]int // per sender: how many of its messages in the view were delivered
}

// life is one node's history: its views in the order installed.
type life struct {
	segs []*segment
	seen map[msgKey]bool
}

func newLedger() *ledger {
	return &ledger{sent: map[msgKey]sentMsg{}, sentIn: map[streamView][]uint64{},
		lives: map[uint64]*life{}, views: map[viewKey][]wire.Member{}}
}

func (l *ledger) errorf(format string, args ...any) {
	l.errs = append(l.errs, fmt.Sprintf(format, args...))
}

func (l *ledger) life(id uint64) *life {
	lf := l.lives[id]
	if lf == nil {
		lf = &life{seen: map[msgKey]bool{}}
		l.lives[id] = lf
	}
	return lf
}

// send records a message that node src (incarnation inc) multicast as seq
// in view v.
func (l *ledger) send(src, inc, seq uint64, v wire.ViewID, order wire.Order, payload string) {
	k := msgKey{src, inc, seq}
	if _, dup := l.sent[k]; dup {
		l.errorf("%d sent seq %d twice", src, seq)
	}
	l.sent[k] = sentMsg{view: v, order: order, payload: payload}
	sv := streamView{src, inc, v}
	l.sentIn[sv] = append(l.sentIn[sv], seq)
}

// install records that node id (incarnation inc) installed view v.
func (l *ledger) install(id, inc uint64, v View) {
	if !v.HasInc(id, inc) {
		l.errorf("self-inclusion: %d installed %v without itself", id, v)
	}
	if len(v.Members) == 0 {
		l.errorf("%d installed an empty view %v", id, v.ID)
		return
	}
	k := viewKey{v.ID, v.Members[0].Inc}
	if ms, ok := l.views[k]; ok && !slices.Equal(ms, v.Members) {
		l.errorf("agreement: view %v is %v at %d but %v elsewhere", v.ID, v, id, View{ID: v.ID, Members: ms})
	} else if !ok {
		l.views[k] = slices.Clone(v.Members)
	}
	lf := l.life(id)
	if n := len(lf.segs); n > 0 && !lf.segs[n-1].view.id.Less(v.ID) {
		l.errorf("%d installed %v after %v: view IDs must increase", id, v.ID, lf.segs[n-1].view.id)
	}
	lf.segs = append(lf.segs, &segment{view: k, next: map[streamView]int{}})
}

// deliver records that node id delivered d, and checks it on its own.
func (l *ledger) deliver(id uint64, d Delivery) {
	k := msgKey{d.Source, d.Inc, d.Seq}
	lf := l.life(id)
	if len(lf.segs) == 0 {
		l.errorf("%d delivered %v before it installed a view", id, k)
		return
	}
	seg := lf.segs[len(lf.segs)-1]
	s, ok := l.sent[k]
	switch {
	case !ok:
		l.errorf("integrity: %d delivered %v, which was never sent", id, k)
		return
	case s.payload != string(d.Payload) || s.order != d.Order:
		l.errorf("integrity: %d delivered %v as %s %q, sent as %s %q", id, k, d.Order, d.Payload, s.order, s.payload)
	case s.view != d.View:
		l.errorf("integrity: %d delivered %v as of view %v, sent in %v", id, k, d.View, s.view)
	case seg.view.id != d.View:
		l.errorf("integrity: %d delivered %v of view %v in view %v", id, k, d.View, seg.view.id)
	}
	if lf.seen[k] {
		l.errorf("integrity: %d delivered %v twice", id, k)
		return
	}
	lf.seen[k] = true
	if ordered(d.Order) != (d.GSeq != 0) {
		l.errorf("%d delivered %s message %v with gseq %d", id, d.Order, k, d.GSeq)
	}
	sv := streamView{d.Source, d.Inc, d.View}
	want := l.sentIn[sv]
	if n := seg.next[sv]; n >= len(want) || want[n] != d.Seq {
		l.errorf("FIFO: %d delivered %v; of %d's messages in %v it had delivered %d of %v", id, k, d.Source, d.View, n, want)
	} else {
		seg.next[sv] = n + 1
	}
	seg.dels = append(seg.dels, delivered{msg: k, order: d.Order, gseq: d.GSeq, final: d.Final})
}

// check runs the checks across nodes and returns every failure so far.
func (l *ledger) check() []string {
	errs := slices.Clone(l.errs)
	errorf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	// Virtual synchrony and one ordered sequence, for each step V → V'.
	type step struct{ from, to viewKey }
	first := map[step]uint64{}
	ids := sortedKeys(l.lives)
	for _, id := range ids {
		segs := l.lives[id].segs
		for i := 0; i+1 < len(segs); i++ {
			s := step{segs[i].view, segs[i+1].view}
			o, ok := first[s]
			if !ok {
				first[s] = id
				continue
			}
			other := l.segment(o, s.from)
			mine, theirs := msgSet(segs[i].dels), msgSet(other.dels)
			if !slices.Equal(mine, theirs) {
				errorf("virtual synchrony: %d and %d went from %v to %v; in %v %d delivered %v, %d delivered %v",
					id, o, s.from, s.to, s.from, id, mine, o, theirs)
			}
			if a, b := orderedSeq(segs[i].dels), orderedSeq(other.dels); !slices.Equal(a, b) {
				errorf("total order: %d and %d went from %v to %v; in %v %d delivered %v, %d delivered %v",
					id, o, s.from, s.to, s.from, id, a, o, b)
			}
		}
	}

	// One message per gseq and one gseq per message among deliveries by
	// record; increasing gseqs at each node.
	type slot struct {
		v    viewKey
		gseq uint64
	}
	type placed struct {
		v   viewKey
		msg msgKey
	}
	bySlot, byMsg := map[slot]msgKey{}, map[placed]uint64{}
	for _, id := range ids {
		for _, seg := range l.lives[id].segs {
			var last uint64
			for _, d := range seg.dels {
				if d.gseq == 0 {
					continue
				}
				if d.gseq <= last {
					errorf("total order: %d delivered %v as gseq %d after gseq %d in %v", id, d.msg, d.gseq, last, seg.view)
				}
				last = d.gseq
				if d.final {
					continue
				}
				if m, ok := bySlot[slot{seg.view, d.gseq}]; ok && m != d.msg {
					errorf("total order: gseq %d of %v is %v at %d, %v elsewhere", d.gseq, seg.view, d.msg, id, m)
				}
				bySlot[slot{seg.view, d.gseq}] = d.msg
				if g, ok := byMsg[placed{seg.view, d.msg}]; ok && g != d.gseq {
					errorf("total order: %v is gseq %d of %v at %d, gseq %d elsewhere", d.msg, d.gseq, seg.view, id, g)
				}
				byMsg[placed{seg.view, d.msg}] = d.gseq
			}
		}
	}
	return errs
}

// current returns the view node id installed last.
func (l *ledger) current(id uint64) viewKey {
	if lf := l.lives[id]; lf != nil && len(lf.segs) > 0 {
		return lf.segs[len(lf.segs)-1].view
	}
	return viewKey{}
}

// liveness checks guarantee 7 once the group is at rest in the views
// given, each with its members: every message sent in such a view was
// delivered by every member.
func (l *ledger) liveness(views map[viewKey][]uint64) []string {
	var errs []string
	for v, ids := range views {
		for k, s := range l.sent {
			if s.view != v.id || !slices.Contains(ids, k.src) {
				continue
			}
			for _, id := range ids {
				if l.current(id) != v || !l.lives[id].seen[k] {
					errs = append(errs, fmt.Sprintf("liveness: %d sent %v in %v, which %d did not deliver", k.src, k, v, id))
				}
			}
		}
	}
	slices.Sort(errs)
	return errs
}

// segment returns node id's segment of view v.
func (l *ledger) segment(id uint64, v viewKey) *segment {
	for _, s := range l.lives[id].segs {
		if s.view == v {
			return s
		}
	}
	return nil
}

// msgSet is the delivered messages as a sorted list.
func msgSet(ds []delivered) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.msg.String())
	}
	slices.Sort(out)
	return out
}

// orderedSeq is the ordered messages in delivery order, with their gseqs.
func orderedSeq(ds []delivered) []string {
	var out []string
	for _, d := range ds {
		if d.gseq != 0 {
			out = append(out, fmt.Sprintf("%v#%d", d.msg, d.gseq))
		}
	}
	return out
}

// TestLedgerCatches feeds the ledger histories that break each guarantee,
// so that a script whose machines broke one would fail.
func TestLedgerCatches(t *testing.T) {
	v1 := View{ID: wire.ViewID{Epoch: 1, Coord: 3}, Members: []wire.Member{{ID: 3, Inc: 1}, {ID: 1, Inc: 1}, {ID: 2, Inc: 1}}}
	v2 := View{ID: wire.ViewID{Epoch: 2, Coord: 3}, Members: []wire.Member{{ID: 3, Inc: 1}, {ID: 1, Inc: 1}}}
	del := func(src, seq uint64, order wire.Order, gseq uint64, final bool, p string) Delivery {
		return Delivery{Delivery: deliveryOf(src, seq, v1.ID, order, p), GSeq: gseq, Final: final}
	}
	base := func() *ledger {
		l := newLedger()
		l.send(3, 1, 1, v1.ID, wire.FIFO, "m1")
		l.send(2, 1, 1, v1.ID, wire.Total, "t1")
		l.send(1, 1, 1, v1.ID, wire.Total, "t2")
		for _, id := range []uint64{3, 1} {
			l.install(id, 1, v1)
		}
		return l
	}
	// deliverThenMove has node id deliver ds in order, then install v2.
	deliverThenMove := func(l *ledger, id uint64, ds ...Delivery) {
		for _, d := range ds {
			l.deliver(id, d)
		}
		l.install(id, 1, v2)
	}
	m1 := del(3, 1, wire.FIFO, 0, false, "m1")
	cases := []struct {
		name, want string
		run        func(l *ledger)
	}{
		{"a message missing at one survivor", "virtual synchrony", func(l *ledger) {
			deliverThenMove(l, 3, m1)
			deliverThenMove(l, 1)
		}},
		{"two orders of the final messages", "total order", func(l *ledger) {
			deliverThenMove(l, 3, del(2, 1, wire.Total, 1, true, "t1"), del(1, 1, wire.Total, 2, true, "t2"))
			deliverThenMove(l, 1, del(1, 1, wire.Total, 1, true, "t2"), del(2, 1, wire.Total, 2, true, "t1"))
		}},
		{"one gseq, two messages", "total order", func(l *ledger) {
			l.deliver(3, del(2, 1, wire.Total, 1, false, "t1"))
			l.deliver(1, del(1, 1, wire.Total, 1, false, "t2"))
		}},
		{"a gseq going down", "total order", func(l *ledger) {
			l.deliver(3, del(1, 1, wire.Total, 2, false, "t2"))
			l.deliver(3, del(2, 1, wire.Total, 1, false, "t1"))
		}},
		{"two member lists for one view", "agreement", func(l *ledger) {
			l.install(1, 1, View{ID: v2.ID, Members: []wire.Member{{ID: 3, Inc: 1}, {ID: 1, Inc: 1}, {ID: 2, Inc: 1}}})
			l.install(3, 1, v2)
		}},
		{"a view without its installer", "self-inclusion", func(l *ledger) {
			l.install(2, 1, v2)
		}},
		{"a skipped message", "FIFO", func(l *ledger) {
			l.send(3, 1, 2, v1.ID, wire.FIFO, "m2")
			l.deliver(3, del(3, 2, wire.FIFO, 0, false, "m2"))
		}},
		{"other bytes", "integrity", func(l *ledger) {
			l.deliver(3, del(3, 1, wire.FIFO, 0, false, "m2"))
		}},
		{"twice", "integrity", func(l *ledger) {
			l.deliver(3, m1)
			l.deliver(3, m1)
		}},
		{"of another view", "integrity", func(l *ledger) {
			deliverThenMove(l, 3)
			l.deliver(3, m1)
		}},
	}
	for _, c := range cases {
		l := base()
		c.run(l)
		errs := l.check()
		if len(errs) == 0 || slices.ContainsFunc(errs, func(e string) bool { return !strings.HasPrefix(e, c.want) }) {
			t.Errorf("%s: the ledger found %q, want %s failures only", c.name, errs, c.want)
		}
	}
	// And a history that keeps every guarantee passes.
	l := base()
	for _, id := range []uint64{3, 1} {
		deliverThenMove(l, id, m1, del(2, 1, wire.Total, 1, false, "t1"), del(1, 1, wire.Total, 2, true, "t2"))
	}
	if errs := l.check(); len(errs) > 0 {
		t.Errorf("a sound history fails: %q", errs)
	}
}

func deliveryOf(src, seq uint64, v wire.ViewID, order wire.Order, payload string) multicast.Delivery {
	return multicast.Delivery{Source: src, Inc: 1, Seq: seq, End: seq, View: v, Order: order, Payload: []byte(payload)}
}
