package logcheck_test

import (
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// osend logs the send of seq in view as order.
func (w *logw) osend(view, order string, seq uint64) *logw {
	p := payload(w.node, seq)
	return w.line(logs.Send, fmt.Sprintf(`"seq":%d,"len":%d,"crc":%d,"view":%q,"order":%q`, seq, len(p), crc32.ChecksumIEEE(p), view, order))
}

// odeliver logs the delivery in view of from's seq as order, with gseq
// (0: none), final or not.
func (w *logw) odeliver(view, order string, from, seq, gseq uint64, final bool) *logw {
	p := payload(from, seq)
	f := fmt.Sprintf(`"from":%d,"seq":%d,"len":%d,"crc":%d,"view":%q,"order":%q`, from, seq, len(p), crc32.ChecksumIEEE(p), view, order)
	if gseq != 0 {
		f += fmt.Sprintf(`,"gseq":%d`, gseq)
	}
	if final {
		f += `,"final":true`
	}
	return w.line(logs.Deliver, f)
}

// orderedRun is three nodes in view 1.1; node 3 crashes after sending
// (safe) seq 2, and 1 and 2 go on to view 2.1. Records ordered 2/1, 1/1
// and 3/1; the rest is delivered at the view's end. change edits it.
func orderedRun(change func(n1, n2, n3 *logw)) []*logw {
	n1 := newLog(1).started(100).view("1.1", 1, 2, 3).osend("1.1", "total", 1)
	n2 := newLog(2).started(200).view("1.1", 1, 2, 3).osend("1.1", "total", 1).osend("1.1", "fifo", 2)
	n3 := newLog(3).started(300).view("1.1", 1, 2, 3).osend("1.1", "safe", 1).osend("1.1", "total", 2)
	for _, w := range []*logw{n1, n2, n3} {
		w.odeliver("1.1", "total", 2, 1, 1, false).odeliver("1.1", "fifo", 2, 2, 0, false).
			odeliver("1.1", "total", 1, 1, 2, false).odeliver("1.1", "safe", 3, 1, 3, false)
	}
	change(n1, n2, n3)
	for _, w := range []*logw{n1, n2} {
		w.odeliver("1.1", "total", 3, 2, 10, true).viewChange("2.1", ids(1, 2), nil, nil, ids(3))
	}
	return []*logw{n1, n2, n3}
}

// causalRun: node 1 sends seq 9 (fifo); node 2 delivers it and replies
// with causal seq 3; node 3 delivers the reply after seq 9, or before it
// (early).
func causalRun(n1, n2, n3 *logw, early bool) {
	n1.osend("1.1", "fifo", 9).odeliver("1.1", "fifo", 1, 9, 0, false).odeliver("1.1", "causal", 2, 3, 0, false)
	n2.odeliver("1.1", "fifo", 1, 9, 0, false).osend("1.1", "causal", 3).odeliver("1.1", "causal", 2, 3, 0, false)
	if early {
		n3.odeliver("1.1", "causal", 2, 3, 0, false).odeliver("1.1", "fifo", 1, 9, 0, false)
		return
	}
	n3.odeliver("1.1", "fifo", 1, 9, 0, false).odeliver("1.1", "causal", 2, 3, 0, false)
}

func TestCheckOrder(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(n1, n2, n3 *logw)
		want   map[logcheck.Kind]int
		text   string
	}{
		{"clean", func(_, _, _ *logw) {}, nil, ""},
		{"gseq twice", func(n1, n2, _ *logw) {
			n1.osend("1.1", "total", 9).odeliver("1.1", "total", 1, 9, 5, false)
			n2.osend("1.1", "total", 9).odeliver("1.1", "total", 2, 9, 5, false)
		}, map[logcheck.Kind]int{logcheck.TotalOrder: 2, logcheck.OrderGap: 2}, "delivered as gseq 5 of view 1.1; node 1 delivered node 1 seq 9 as that gseq"},
		{"gseq backwards", func(n1, _, _ *logw) {
			n1.osend("1.1", "total", 9).odeliver("1.1", "total", 1, 9, 3, false)
		}, map[logcheck.Kind]int{logcheck.TotalOrder: 3}, "after gseq 3: want increasing gseqs"},
		{"no gseq", func(_, n2, _ *logw) {
			n2.osend("1.1", "total", 9).odeliver("1.1", "total", 2, 9, 0, false)
		}, map[logcheck.Kind]int{logcheck.TotalOrder: 1}, "total message delivered without a gseq"},
		{"sent as another order", func(n1, _, _ *logw) {
			n1.osend("1.1", "fifo", 9).odeliver("1.1", "total", 1, 9, 5, false)
		}, map[logcheck.Kind]int{logcheck.TotalOrder: 2, logcheck.OrderGap: 1}, "delivered as total; sent as fifo"},
		{"safe lost by a survivor", func(n1, n2, n3 *logw) {
			n3.osend("1.1", "safe", 3)
			n1.odeliver("1.1", "safe", 3, 3, 5, false)
		}, map[logcheck.Kind]int{logcheck.SafeDelivery: 1, logcheck.TotalOrder: 1, logcheck.OrderGap: 1}, "without delivering safe node 3 seq 3"},
		{"a hole in the order", func(_, n2, _ *logw) {
			n2.osend("1.1", "total", 9).odeliver("1.1", "total", 2, 9, 5, false)
		}, map[logcheck.Kind]int{logcheck.OrderGap: 1, logcheck.TotalOrder: 1}, "delivered as gseq 5 of view 1.1 by its record, without gseq 4: total order has no holes"},
		{"causal after its cause", func(n1, n2, n3 *logw) { causalRun(n1, n2, n3, false) }, nil, ""},
		{"causal before its cause", func(n1, n2, n3 *logw) { causalRun(n1, n2, n3, true) },
			map[logcheck.Kind]int{logcheck.CausalOrder: 1}, "delivered node 2 seq 3: before node 1 seq 9, which node 2 had delivered in view 1.1 before sending it (delivered here up to seq 1)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := orderedRun(tt.change)
			res := load(t, ws...).CheckOrder(logcheck.MembershipOptions{SelfDelivery: true})
			texts := []string{}
			if tt.text != "" {
				texts = append(texts, tt.text)
			}
			expect(t, res, tt.want, texts...)
		})
	}
}
