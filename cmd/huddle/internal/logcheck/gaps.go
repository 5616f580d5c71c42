package logcheck

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// The checks that hold in every view, whether or not its members go on
// to a next one: FIFO has no holes (fifoGaps, in CheckMembership), and
// neither has total order (orderGaps, in CheckOrder).

// sendsIn returns the indexes of src's sends in view, in send order.
func (s *source) sendsIn(view string) []int {
	if s.byView == nil {
		s.byView = map[string][]int{}
		for i := range s.life.Sends {
			if j := s.bySeq[s.life.Sends[i].Seq]; j == i { // a repeated seq is a SendOrder
				v := s.life.Sends[i].View
				s.byView[v] = append(s.byView[v], i)
			}
		}
	}
	return s.byView[view]
}

// sourceOf returns the sender life of messages of node from, incarnation
// inc (0: unknown, which names the node's only life).
func (c *mcheck) sourceOf(from, inc uint64) *source {
	cands := c.byNode[from]
	for _, s := range cands {
		if s.life.Inc == inc {
			return s
		}
	}
	if inc == 0 && len(cands) == 1 {
		return cands[0]
	}
	return nil
}

// fifoGaps checks, for every life R, view V and sender life S, that R
// delivered in V every message S sent in V to R before the last one of S
// that R delivered in V (FIFOGap, one per hole). The sender's send
// events tell the application's messages, which R must deliver, from the
// sequence numbers its node's own protocols used; a sender whose log is
// not among the logs cannot be checked.
func (m *vcheck) fifoGaps() {
	for _, lv := range m.walked {
		for _, view := range sortedViews(lv.in) {
			got := lv.in[view]
			last := map[*source]msgKey{}
			for k := range got {
				src := m.sourceOf(k.from, k.inc)
				if src == nil {
					continue // its sender's log is not among them: Unsent
				}
				if _, sent := src.bySeq[k.seq]; sent && k.seq > last[src].seq {
					last[src] = k
				}
			}
			for _, src := range slices.SortedFunc(maps.Keys(last), bySender) {
				m.fifoGap(lv, view, src, last[src])
			}
		}
	}
}

// fifoGap checks one life's deliveries of src in view, up to the last.
func (m *vcheck) fifoGap(lv *lifeViews, view string, src *source, last msgKey) {
	l := lv.life
	m.res.count("sender streams", 1)
	var hole []int // sends of src that l lacks, in order
	var next msgKey
	for _, i := range src.sendsIn(view) {
		s := &src.life.Sends[i]
		if s.Seq >= last.seq {
			break
		}
		if !s.For(l.Node) {
			continue
		}
		m.res.count("messages", 1)
		k := msgKey{src.life.Node, last.inc, s.Seq}
		if _, ok := got(lv, view, k); ok {
			if len(hole) > 0 && next.seq == 0 {
				next = k
			}
			continue
		}
		if next.seq == 0 {
			hole = append(hole, i)
		}
	}
	if len(hole) == 0 {
		return
	}
	if next.seq == 0 {
		next = last
	}
	first := &src.life.Sends[hole[0]]
	j, _ := got(lv, view, next)
	d := &l.Delivers[j]
	what := fmt.Sprintf("seq %d", first.Seq)
	if len(hole) > 1 {
		what = fmt.Sprintf("seqs %d..%d (%d messages)", first.Seq, src.life.Sends[hole[len(hole)-1]].Seq, len(hole))
	}
	m.res.add(Violation{Kind: FIFOGap, Node: l.Node, Sender: src.life.Node, Seq: first.Seq, Count: uint64(len(hole)), File: l.File, Line: d.Line,
		Detail: fmt.Sprintf("%s delivered %s seq %d in view %s without %s, which %s sent before it in %s (%s:%d): FIFO has no holes",
			m.name(l), m.name(src.life), d.Seq, view, what, m.name(src.life), view, src.life.File, first.Line)})
}

// got returns the index in lv's Delivers of message k delivered in view.
func got(lv *lifeViews, view string, k msgKey) (int, bool) {
	i, ok := lv.in[view][k]
	return i, ok
}

// sortedViews returns the views of in by ID (epoch, then coordinator),
// those that are not view IDs last.
func sortedViews(in map[string]map[msgKey]int) []string {
	return slices.SortedFunc(maps.Keys(in), func(a, b string) int {
		va, oka := ParseViewID(a)
		vb, okb := ParseViewID(b)
		switch {
		case oka && okb:
			return cmp.Or(va.Compare(vb), cmp.Compare(a, b))
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
}

// bySender orders sender lives by node, then incarnation.
func bySender(a, b *source) int {
	return cmp.Or(cmp.Compare(a.life.Node, b.life.Node), cmp.Compare(a.life.Inc, b.life.Inc))
}
