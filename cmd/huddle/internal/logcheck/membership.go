package logcheck

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MembershipOptions shape CheckMembership and CheckLiveness.
type MembershipOptions struct {
	// SelfDelivery says that senders deliver (and log) their own messages,
	// so that virtual synchrony and liveness require it of them too. By
	// default a life is taken to hold what it sent without delivering it,
	// as the multicast layer does.
	SelfDelivery bool
	// SkipViewless leaves out of the view checks the lives that installed
	// no view (nodes that ran without the membership layer): their
	// deliveries are then not held to any view. FIFO, duplicates and
	// integrity are checked for every life regardless.
	SkipViewless bool
	// Settle is how long before a member's leave began (its node.stopped
	// less two suspect timeouts) a message sent in its last view must
	// have been sent for CheckLiveness to require it there: the time to
	// repair and order it. Default DefaultSettle.
	Settle time.Duration
	// MaxViolations is how many violations the Result lists; default
	// DefaultMaxViolations. All are counted.
	MaxViolations int
}

// DefaultSettle is MembershipOptions.Settle's default: far above a LAN's
// repairs at any loss the lab runs (milliseconds), well below a run.
const DefaultSettle = time.Second

// ViewID is a view's ID, "epoch.coordinator" in the logs. IDs are ordered
// by epoch, then coordinator.
type ViewID struct{ Epoch, Coord uint64 }

// ParseViewID parses "epoch.coordinator", e.g. "3.1".
func ParseViewID(s string) (ViewID, bool) {
	e, c, ok := strings.Cut(s, ".")
	epoch, err1 := strconv.ParseUint(e, 10, 64)
	coord, err2 := strconv.ParseUint(c, 10, 64)
	return ViewID{epoch, coord}, ok && err1 == nil && err2 == nil
}

// Compare returns -1, 0 or +1 as v is below, equal to or above w.
func (v ViewID) Compare(w ViewID) int {
	return cmp.Or(cmp.Compare(v.Epoch, w.Epoch), cmp.Compare(v.Coord, w.Coord))
}

func (v ViewID) String() string { return fmt.Sprintf("%d.%d", v.Epoch, v.Coord) }

// CheckMembership checks the guarantees of the view-synchronous membership
// layer (docs/design.md, guarantees 1 to 4) from the view.installed, send and
// deliver events: self-inclusion, agreement on views, increasing view IDs,
// virtual synchrony, delivery in the receiver's current view and in the
// sending view, and the multicast safety checks (FIFO, Duplicate, Unsent,
// Corrupt, SendOrder). It does not require completeness; see CheckLiveness.
func (r *Run) CheckMembership(o MembershipOptions) *Result {
	m := r.newVcheck("membership", o)
	m.indexSends()
	m.checkDeliveries()
	m.walk()
	m.agreement()
	m.synchrony()
	m.fifoGaps()
	return m.res
}

// CheckLiveness checks that every message sent in a view reached every
// member that stayed (Missing and LeaveLoss, one violation per run of
// consecutive seqs; the sender itself only with SelfDelivery):
//
//   - a message a life sent in V, then installing V', was delivered in V
//     by every life that installed V then V';
//   - a message a member that left V gracefully sent in V (the next view
//     lists it in left) was delivered in V by every life that installed
//     V then that next view (LeaveLoss);
//   - in a view that two lives installed last and left gracefully
//     (node.stopped, typically every node stopped at the end of a run), a
//     message one sent was delivered by the other if it was sent at least
//     Settle before the other's leave began (its node.stopped less two
//     suspect timeouts).
//
// A sender that crashed in V is not held to it. Sends without a view are
// not checked. Safety is CheckMembership's to report.
func (r *Run) CheckLiveness(o MembershipOptions) *Result {
	m := r.newVcheck("liveness", o)
	res := m.res
	m.res = newResult("", 1) // the walk's violations are CheckMembership's
	m.indexSends()
	m.walk()
	res.Sent, res.Views = m.res.Sent, m.res.Views
	m.res = res
	for _, l := range r.Lives {
		res.Delivered += uint64(len(l.Delivers))
	}
	m.complete()
	return res
}

// vcheck is the state of a membership check, over that of the multicast
// check whose send index and safety checks it reuses.
type vcheck struct {
	*mcheck
	o      MembershipOptions
	walked []*lifeViews
	groups []*group // in order of first installation
}

// lifeViews is what one life delivered in each view, by the view the
// deliveries name.
type lifeViews struct {
	life *Life
	in   map[string]map[msgKey]int // view ID → message → index in life.Delivers
}

// msgKey names a message: its sender's node and incarnation (0 when
// unknown), and its seq.
type msgKey struct{ from, inc, seq uint64 }

// group is the lives that installed view ID then next, with the line of
// each one's next.
type group struct {
	view, next string
	lives      []*lifeViews
	nexts      []*View
}

func (r *Run) newVcheck(check string, o MembershipOptions) *vcheck {
	return &vcheck{mcheck: r.newMcheck(check, Options{SafetyOnly: true, MaxViolations: o.MaxViolations}), o: o}
}

// walk checks each life's views and deliveries in log order, collects
// what it delivered in each view, and groups lives by pairs of
// successive views.
func (m *vcheck) walk() {
	byPair := map[[2]string]*group{}
	for _, l := range m.run.Lives {
		if m.o.SkipViewless && len(l.Views) == 0 {
			continue
		}
		m.res.Views += len(l.Views)
		m.checkViews(l)
		lv := m.deliveries(l)
		m.walked = append(m.walked, lv)
		for j := 0; j+1 < len(l.Views); j++ {
			k := [2]string{l.Views[j].Key(), l.Views[j+1].Key()}
			g := byPair[k]
			if g == nil {
				g = &group{view: l.Views[j].ID, next: l.Views[j+1].ID}
				byPair[k] = g
				m.groups = append(m.groups, g)
			}
			if !slices.Contains(g.lives, lv) { // a view installed twice is a ViewOrder
				g.lives, g.nexts = append(g.lives, lv), append(g.nexts, &l.Views[j+1])
			}
		}
	}
}

// checkViews checks that each view of l lists l's node and that their IDs
// increase.
func (m *vcheck) checkViews(l *Life) {
	var prev *View
	var prevID ViewID
	for i := range l.Views {
		v := &l.Views[i]
		if !slices.Contains(v.Members, l.Node) {
			m.viewViolation(l, v, SelfInclusion, fmt.Sprintf("with members %v: want itself among them", v.Members))
		}
		id, ok := ParseViewID(v.ID)
		switch {
		case !ok:
			m.viewViolation(l, v, ViewOrder, "(not epoch.coordinator): want IDs like 3.1")
			continue
		case prev != nil && id.Compare(prevID) <= 0:
			m.viewViolation(l, v, ViewOrder, fmt.Sprintf("after view %s (%s:%d): want increasing view IDs (epoch, then coordinator)",
				prev.ID, l.File, prev.Line))
		}
		prev, prevID = v, id
	}
}

func (m *vcheck) viewViolation(l *Life, v *View, k Kind, what string) {
	m.res.add(Violation{Kind: k, Node: l.Node, Count: 1, File: l.File, Line: v.Line,
		Detail: fmt.Sprintf("%s installed view %s %s", m.name(l), viewName(v.ID), what)})
}

// viewName is id, quoted when it is not a view ID.
func viewName(id string) string {
	if _, ok := ParseViewID(id); ok {
		return id
	}
	return strconv.Quote(id)
}

// deliveries checks that each delivery of l is in the view l had
// installed last and in the view its message was sent in, and returns
// what l delivered in each view. A delivery that names no view (an older
// log) is taken to be in the current one.
func (m *vcheck) deliveries(l *Life) *lifeViews {
	lv := &lifeViews{life: l, in: map[string]map[msgKey]int{}}
	v := 0 // views l.Views[:v] were installed before the delivery
	for i := range l.Delivers {
		d := &l.Delivers[i]
		for v < len(l.Views) && l.Views[v].Line < d.Line {
			v++
		}
		cur := ""
		if v > 0 {
			cur = l.Views[v-1].ID
		}
		in := cmp.Or(d.View, cur)
		if in != cur {
			m.wrongView(l, d, v)
		}
		k := msgKey{d.From, d.FromInc, d.Seq}
		if src := m.resolve(d); src != nil {
			k.inc = src.life.Inc
			m.sentIn(l, d, src, in)
		}
		set := lv.in[in]
		if set == nil {
			set = map[msgKey]int{}
			lv.in[in] = set
		}
		if _, dup := set[k]; !dup { // a Duplicate
			set[k] = i
		}
	}
	return lv
}

// wrongView reports d, delivered after l installed its views[:v], as
// naming another view.
func (m *vcheck) wrongView(l *Life, d *Deliver, v int) {
	what := fmt.Sprintf("in view %s before installing any view", d.View)
	if v > 0 {
		cur := l.Views[v-1]
		what = fmt.Sprintf("in view %s while in view %s (installed at %s:%d)", d.View, cur.ID, l.File, cur.Line)
	}
	m.violation(l, d, WrongView, what+": want deliveries in the receiver's current view")
}

// sentIn checks that d, delivered in view in, was sent in that view, when
// its send names one.
func (m *vcheck) sentIn(l *Life, d *Deliver, src *source, in string) {
	i, ok := src.bySeq[d.Seq]
	if !ok {
		return // Unsent
	}
	if s := src.life.Sends[i]; s.View != "" && s.View != in {
		m.violation(l, d, CrossView, fmt.Sprintf("delivered in view %s; %s sent it in view %s (%s:%d): want delivery in the sending view",
			in, m.name(src.life), s.View, src.life.File, s.Line))
	}
}

// agreement checks that every life that installed a view ID listed the
// same members as the first life that installed it.
func (m *vcheck) agreement() {
	type first struct {
		life *Life
		view *View
	}
	firsts := map[string]first{}
	for _, lv := range m.walked {
		l := lv.life
		for i := range l.Views {
			v := &l.Views[i]
			f, ok := firsts[v.Key()]
			if !ok {
				firsts[v.Key()] = first{l, v}
				continue
			}
			if !slices.Equal(f.view.Members, v.Members) {
				m.viewViolation(l, v, ViewAgreement, fmt.Sprintf("with members %v; %s installed it with %v (%s:%d): want the same members in the same order",
					v.Members, m.name(f.life), f.view.Members, f.life.File, f.view.Line))
			}
		}
	}
}

// synchrony checks, for each pair of successive views V, V', that every
// life that installed both delivered in V every message that another such
// life delivered in V.
func (m *vcheck) synchrony() {
	for _, g := range m.groups {
		if len(g.lives) < 2 {
			continue
		}
		holder := m.union(g)
		for i, lv := range g.lives {
			if lack := m.lacking(lv, g.view, holder); len(lack) > 0 {
				m.unsynced(g, lv, g.nexts[i], lack, holder)
			}
		}
	}
}

// union returns every message some life of g delivered in g.view, with
// the first life that did.
func (m *vcheck) union(g *group) map[msgKey]*lifeViews {
	holder := map[msgKey]*lifeViews{}
	for _, lv := range g.lives {
		for k := range lv.in[g.view] {
			if _, ok := holder[k]; !ok {
				holder[k] = lv
			}
		}
	}
	return holder
}

// lacking returns, in order, the messages of holder that lv did not
// deliver in view and that are not its own (unless SelfDelivery).
func (m *vcheck) lacking(lv *lifeViews, view string, holder map[msgKey]*lifeViews) []msgKey {
	var lack []msgKey
	got := lv.in[view]
	for k := range holder {
		if _, ok := got[k]; !ok && !m.own(lv.life, k) {
			lack = append(lack, k)
		}
	}
	slices.SortFunc(lack, func(a, b msgKey) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.inc, b.inc), cmp.Compare(a.seq, b.seq))
	})
	return lack
}

// own reports whether k was sent by l and l is not expected to deliver it.
func (m *vcheck) own(l *Life, k msgKey) bool {
	return !m.o.SelfDelivery && k.from == l.Node && k.inc == l.Inc
}

// maxListed is how many messages a VirtualSynchrony violation names.
const maxListed = 5

func (m *vcheck) unsynced(g *group, lv *lifeViews, next *View, lack []msgKey, holder map[msgKey]*lifeViews) {
	l, h := lv.life, holder[lack[0]]
	hd := &h.life.Delivers[h.in[g.view][lack[0]]]
	what := fmt.Sprintf("%s lacks %s that %s delivered (%s:%d)", m.name(l), m.msgName(lack[0]), m.name(h.life), h.life.File, hd.Line)
	if len(lack) > 1 {
		names := make([]string, 0, maxListed)
		for _, k := range lack[1:min(len(lack), maxListed)] {
			names = append(names, m.msgName(k))
		}
		if len(lack) > maxListed {
			names = append(names, "...")
		}
		what = fmt.Sprintf("%s lacks %d messages that others delivered: %s that %s delivered (%s:%d), then %s",
			m.name(l), len(lack), m.msgName(lack[0]), m.name(h.life), h.life.File, hd.Line, strings.Join(names, ", "))
	}
	m.res.add(Violation{Kind: VirtualSynchrony, Node: l.Node, Sender: lack[0].from, Seq: lack[0].seq, Count: uint64(len(lack)),
		File: l.File, Line: next.Line,
		Detail: fmt.Sprintf("%s and %s both installed view %s then %s but delivered different messages in %s: %s",
			m.name(l), m.name(h.life), g.view, g.next, g.view, what)})
}

// msgName is e.g. "node 2 seq 17", with the incarnation when the node has
// several lives.
func (m *vcheck) msgName(k msgKey) string {
	if m.lives[k.from] > 1 {
		return fmt.Sprintf("node %d (inc %d) seq %d", k.from, k.inc, k.seq)
	}
	return fmt.Sprintf("node %d seq %d", k.from, k.seq)
}
