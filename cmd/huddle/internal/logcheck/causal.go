package logcheck

import (
	"fmt"
	"maps"
)

// CausalOrder: a causal message delivered before a message that its
// sender had delivered in the same view before sending it.
const CausalOrder Kind = "causal-order"

// causes is what a causal send's sender had delivered in its view before
// it: the last seq of each other sender life.
type causes map[*source]uint64

// indexCauses walks each sender life's log in order and notes, for each
// causal send, the last message of every other sender it had delivered
// in the send's view (a message addressed to it alone excepted: no other
// member delivers that one).
func (c *mcheck) indexCauses() map[*source]map[uint64]causes {
	out := map[*source]map[uint64]causes{}
	for _, srcs := range c.byNode {
		for _, s := range srcs {
			l := s.life
			if !hasCausal(l) {
				continue
			}
			byView := map[string]causes{}
			sends := map[uint64]causes{}
			di := 0
			for si := range l.Sends {
				send := &l.Sends[si]
				for ; di < len(l.Delivers) && l.Delivers[di].Line < send.Line; di++ {
					d := &l.Delivers[di]
					from := c.resolve(d)
					if from == nil || from == s || d.View == "" {
						continue
					}
					if j, ok := from.bySeq[d.Seq]; ok && from.life.Sends[j].To != 0 {
						continue
					}
					if byView[d.View] == nil {
						byView[d.View] = causes{}
					}
					byView[d.View][from] = max(byView[d.View][from], d.Seq)
				}
				if send.Order == "causal" {
					sends[send.Seq] = maps.Clone(byView[send.View])
				}
			}
			out[s] = sends
		}
	}
	return out
}

func hasCausal(l *Life) bool {
	for i := range l.Sends {
		if l.Sends[i].Order == "causal" {
			return true
		}
	}
	return false
}

// checkCausal checks every causal delivery: the receiver had delivered,
// in the same view and before it, each message its sender had delivered
// before sending it (docs/design.md, guarantee 8). FIFO makes the last
// of each sender enough.
func (c *mcheck) checkCausal() {
	idx := c.indexCauses()
	if len(idx) == 0 {
		return
	}
	for _, l := range c.run.Lives {
		last := map[string]map[*source]uint64{} // view → sender life → last seq delivered
		for i := range l.Delivers {
			d := &l.Delivers[i]
			src := c.resolve(d)
			if src == nil || d.View == "" {
				continue
			}
			if last[d.View] == nil {
				last[d.View] = map[*source]uint64{}
			}
			if d.Order == "causal" {
				c.res.count("causal deliveries", 1)
				for from, seq := range idx[src][d.Seq] {
					if from.life == l {
						continue // its own messages: delivered as it sent them
					}
					if got, ok := last[d.View][from]; !ok || got < seq {
						c.violation(l, d, CausalOrder, fmt.Sprintf("before %s seq %d, which node %d had delivered in view %s before sending it (delivered here up to seq %d)",
							c.name(from.life), seq, d.From, d.View, got))
						break
					}
				}
			}
			last[d.View][src] = max(last[d.View][src], d.Seq)
		}
	}
}
