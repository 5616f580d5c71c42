package logcheck

import (
	"fmt"
	"slices"
)

// CheckOrder checks ordered delivery (docs/design.md, guarantees 5
// and 6) from the deliver events' order, gseq and final fields:
//
//   - every total or safe delivery has a gseq, and a life's gseqs increase
//     within a view;
//   - total order has no holes: the gseqs a life delivers by their record
//     in a view are 1, 2, 3... (OrderGap; the flush at the view's end
//     may pass over positions past the cut, which no member delivers);
//   - a gseq of a view delivered by its order record (not final) names one
//     message wherever it is delivered;
//   - lives that installed V and then the same next view delivered V's
//     ordered messages in one sequence, those delivered at V's end too;
//   - a safe message that some life delivered by its record in V was
//     delivered in V by every life that installed V and then any next
//     view (it was held by every member when it was delivered);
//   - a message is delivered in the order its send names;
//   - a causal message is delivered after every message its sender had
//     delivered in the view before sending it (CausalOrder).
//
// Lives that log no order field (older logs) are not checked.
func (r *Run) CheckOrder(o MembershipOptions) *Result {
	m := r.newVcheck("order", o)
	m.indexSends()
	m.checkCausal()
	m.res.Sent = 0
	type slot struct {
		k    msgKey
		life *Life
		line int
	}
	gseqs := map[string]map[uint64]slot{}     // view key → gseq → first delivery by record
	seqs := map[*Life]map[string][]ordered{}  // life → view key → ordered deliveries
	safe := map[string]map[msgKey]slot{}      // view key → safe messages delivered by record
	recorded := map[*Life]map[string]uint64{} // life → view key → the highest gseq delivered by record
	for _, l := range r.Lives {
		if o.SkipViewless && len(l.Views) == 0 {
			continue
		}
		seqs[l], recorded[l] = map[string][]ordered{}, map[string]uint64{}
		v := 0
		for i := range l.Delivers {
			d := &l.Delivers[i]
			for v < len(l.Views) && l.Views[v].Line < d.Line {
				v++
			}
			if d.Order == "" || v == 0 {
				continue // no order logged, or no view: CheckMembership reports the latter
			}
			m.res.Delivered++
			k := msgKey{d.From, d.FromInc, d.Seq}
			if src := m.resolve(d); src != nil {
				k.inc = src.life.Inc
				if j, ok := src.bySeq[d.Seq]; ok && src.life.Sends[j].Order != "" && src.life.Sends[j].Order != d.Order {
					m.violation(l, d, TotalOrder, fmt.Sprintf("delivered as %s; sent as %s (%s:%d)", d.Order, src.life.Sends[j].Order, src.life.File, src.life.Sends[j].Line))
				}
			}
			if d.Order != "total" && d.Order != "safe" {
				continue
			}
			vk := l.Views[v-1].Key()
			prev := seqs[l][vk]
			switch {
			case d.GSeq == 0:
				m.violation(l, d, TotalOrder, fmt.Sprintf("%s message delivered without a gseq", d.Order))
				continue
			case len(prev) > 0 && prev[len(prev)-1].gseq >= d.GSeq:
				m.violation(l, d, TotalOrder, fmt.Sprintf("delivered as gseq %d of view %s after gseq %d: want increasing gseqs",
					d.GSeq, l.Views[v-1].ID, prev[len(prev)-1].gseq))
			}
			seqs[l][vk] = append(prev, ordered{d.GSeq, k})
			m.res.count("ordered positions", 1)
			if d.Final {
				continue
			}
			if want := recorded[l][vk] + 1; d.GSeq > want {
				m.violation(l, d, OrderGap, fmt.Sprintf("delivered as gseq %d of view %s by its record, without gseq %d: total order has no holes",
					d.GSeq, l.Views[v-1].ID, want))
			}
			recorded[l][vk] = max(recorded[l][vk], d.GSeq)
			g := gseqs[vk]
			if g == nil {
				g = map[uint64]slot{}
				gseqs[vk] = g
			}
			if s, ok := g[d.GSeq]; ok && s.k != k {
				m.violation(l, d, TotalOrder, fmt.Sprintf("delivered as gseq %d of view %s; %s delivered %s as that gseq (%s:%d)",
					d.GSeq, l.Views[v-1].ID, m.name(s.life), m.msgName(s.k), s.life.File, s.line))
			} else if !ok {
				g[d.GSeq] = slot{k, l, d.Line}
			}
			if d.Order == "safe" {
				if safe[vk] == nil {
					safe[vk] = map[msgKey]slot{}
				}
				if _, ok := safe[vk][k]; !ok {
					safe[vk][k] = slot{k, l, d.Line}
				}
			}
		}
	}
	m.walk() // groups lives by pairs of successive views
	m.res.Views = 0
	for _, g := range m.groups {
		var first []ordered
		var firstLife *Life
		for i, lv := range g.lives {
			l, next := lv.life, g.nexts[i]
			vk := viewKeyOf(l, g.view, next)
			got := seqs[l][vk]
			if firstLife == nil {
				first, firstLife = got, l
			} else if !slices.Equal(got, first) {
				j := 0
				for j < min(len(got), len(first)) && got[j] == first[j] {
					j++
				}
				m.res.add(Violation{Kind: TotalOrder, Node: l.Node, Count: 1, File: l.File, Line: next.Line,
					Detail: fmt.Sprintf("%s and %s both installed view %s then %s but delivered its ordered messages differently from the %dth on: %v against %v",
						m.name(l), m.name(firstLife), g.view, g.next, j+1, clip(got[j:]), clip(first[j:]))})
			}
			delivered := lv.in[g.view]
			for k, s := range safe[vk] {
				if _, ok := delivered[k]; !ok && !m.own(l, k) {
					m.res.add(Violation{Kind: SafeDelivery, Node: l.Node, Sender: k.from, Seq: k.seq, Count: 1, File: l.File, Line: next.Line,
						Detail: fmt.Sprintf("%s installed view %s then %s without delivering safe %s, which %s delivered in %s by its record (%s:%d): a safe message is delivered only once every member holds it",
							m.name(l), g.view, g.next, m.msgName(k), m.name(s.life), g.view, s.life.File, s.line)})
				}
			}
		}
	}
	return m.res
}

// ordered is one total or safe delivery: its gseq and message.
type ordered struct {
	gseq uint64
	k    msgKey
}

// viewKeyOf returns the key of the view with ID id that l installed right
// before next.
func viewKeyOf(l *Life, id string, next *View) string {
	for i := 1; i < len(l.Views); i++ {
		if &l.Views[i] == next && l.Views[i-1].ID == id {
			return l.Views[i-1].Key()
		}
	}
	return id
}

func clip(os []ordered) string {
	if len(os) > 3 {
		return fmt.Sprintf("%v...", os[:3])
	}
	return fmt.Sprint(os)
}
