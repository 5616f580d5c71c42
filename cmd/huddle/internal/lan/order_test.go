package lan_test

// Real-process tests of total and safe order (docs/design.md,
// guarantees 5 and 6): four nodes multicast ordered messages at 5 % loss,
// and the sequencer, the coordinator of their view, is killed mid-run.
// The survivors end the view it died in with a flush that delivers what
// it recorded, then what it did not, by (sender, seq), alike at every
// survivor; logcheck verifies from the logs that they agree. One run
// kills the member the order moved to instead (one node sending alone).

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// orderRun describes one sequencer-kill run.
type orderRun struct {
	orders [4]string // --send-order of hosts 1..4
	rate   int       // messages per second each node multicasts
	rates  [4]int    // when set, host h's rate instead
	// before and after are the ordered deliveries by record each node
	// waits for in the view of four, and each survivor in its view
	// without the sequencer: they set how long the run lasts.
	before, after int
}

// orderSuspect is the suspect timeout of the nodes. The local profile's
// 150ms is shorter than the stalls of a node's loop on a busy machine (two
// cores, test packages in parallel): the members then exclude live peers
// and merge them back, churn that checkTogether rightly flags and this
// test is not about. 500ms rides those out; the sequencer's crash is then
// detected half a second late, during which the survivors send some 450
// messages it never orders: the flush's share grows, which is the point.
const orderSuspect = "500ms"

// flags returns the flags of host h. node.stats every 200ms brackets the
// sequencer's crash closely enough to read how many messages the flush
// found unrecorded.
func (o orderRun) flags(h int) []string {
	rate := o.rate
	if o.rates[h-1] > 0 {
		rate = o.rates[h-1]
	}
	return []string{"--suspect-timeout", orderSuspect, "--send-order", o.orders[h-1], "--send-rate", strconv.Itoa(rate),
		"--send-size", "200", "--trace-deliveries", "--stats-interval", "200ms"}
}

// TestTotalOrderSurvivesSequencerKill: four nodes all send in total order
// at 5 % loss; the sequencer is killed mid-run.
func TestTotalOrderSurvivesSequencerKill(t *testing.T) {
	runSequencerKill(t, orderRun{orders: [4]string{"total", "total", "total", "total"}, rate: 300, before: 1200, after: 2000})
}

// TestMixedOrderSurvivesSequencerKill is the same, shorter, with two nodes
// sending in safe order and two in total order: one sequence for both.
func TestMixedOrderSurvivesSequencerKill(t *testing.T) {
	runSequencerKill(t, orderRun{orders: [4]string{"safe", "safe", "total", "total"}, rate: 300, before: 600, after: 800})
}

func runSequencerKill(t *testing.T, o orderRun) {
	const loss = 0.05
	g := startOrderGroup(t, lan.Options{Hosts: 4, Loss: loss}, o)
	t.Logf("loss %.0f %% on every host's ingress, by %s; send orders %v at %d msg/s each", loss*100, g.l.LossMethod(), o.orders, o.rate)
	all := []int{1, 2, 3, 4}
	formed := g.waitViews("group formed", all, ids(all...))
	g.waitOrdered("traffic in the view of four", all, formed[1].ID, o.before)

	views := g.waitViews("before the kill", all, ids(all...))
	dead := views[1]
	seq := int(dead.Members[0])
	if id, _ := logcheck.ParseViewID(dead.ID); id.Coord != uint64(seq) {
		t.Fatalf("view %s lists %v: its ID names coordinator %d, its first member is %d", dead.ID, dead.Members, id.Coord, seq)
	}
	rest := slices.DeleteFunc(slices.Clone(all), func(h int) bool { return h == seq })
	kill := g.kill(seq)
	t.Logf("killed node %d (SIGKILL): the coordinator of view %s %v, so its sequencer", seq, dead.ID, dead.Members)

	next := g.waitViews("after SIGKILL of the sequencer", rest, ids(rest...))
	g.installedAfter(fmt.Sprintf("SIGKILL of sequencer %d at 5 %% loss", seq), kill, next)
	for _, h := range rest {
		if !crashedIn(g.views(h), uint64(seq), kill) {
			t.Errorf("node %d: no view after the SIGKILL lists node %d as crashed", h, seq)
		}
	}
	g.waitOrdered("traffic in the survivors' view", rest, next[rest[0]].ID, o.after)
	if later := g.waitViews("survivors before the stop", rest, ids(rest...)); later[rest[0]].ID != next[rest[0]].ID {
		t.Errorf("the survivors changed views without a failure: %s after the kill, %s before the stop", next[rest[0]].ID, later[rest[0]].ID)
	}

	end := time.Now()
	g.stop(rest)
	g.checkTogether("before the kill", all, g.start, kill)
	g.checkTogether("after the kill", rest, kill, end)
	r := g.check(true)
	g.wantDeliveries(r)
	checkSequencerKill(t, r, o, dead, next, seq, rest, kill)
}

// TestTotalOrderSurvivesMovedSequencerKill: node 1 multicasts in total
// order at 1000 msg/s, the others at 2 msg/s each, at 5 % loss, so that
// the order moves from the coordinator (the highest ID founds the group)
// to node 1, which logs order.taken; node 1, the sequencer by then, is
// killed mid-run. The
// survivors agree on the view, the checks of the logs hold (total order
// included), and they end the dead view alike: the same number of
// messages unrecorded, in (sender, seq) order.
func TestTotalOrderSurvivesMovedSequencerKill(t *testing.T) {
	const loss = 0.05
	o := orderRun{orders: [4]string{"total", "total", "total", "total"}, rates: [4]int{1000, 2, 2, 2}}
	g := startOrderGroup(t, lan.Options{Hosts: 4, Loss: loss}, o)
	t.Logf("loss %.0f %% on every host's ingress, by %s; total order at %v msg/s", loss*100, g.l.LossMethod(), o.rates)
	all := []int{1, 2, 3, 4}
	formed := g.waitViews("group formed", all, ids(all...))
	if c := formed[1].Members[0]; c == 1 {
		t.Fatalf("node 1 coordinates view %s %v: the order has nowhere to move (the highest ID should found the group)", formed[1].ID, formed[1].Members)
	}
	g.waitOrdered("traffic in the view of four", all, formed[1].ID, 1000)
	moved := func() bool {
		evs, _ := logs.ReadFile(nodeLog(g.l, 1))
		for _, ev := range evs {
			if n, _ := ev.Uint("sequencer_moves"); ev.Name == logs.NodeStats && n > 0 {
				return true
			}
		}
		return false
	}
	if _, err := poll(viewTimeout, moved, g.live(all)...); err != nil {
		t.Fatalf("node 1 sent alone but its node.stats never counted a move of the order to it: %v\n%s", err, g.trail())
	}
	evs, _ := logs.ReadFile(nodeLog(g.l, 1))
	if i := slices.IndexFunc(evs, func(ev logs.Event) bool { return ev.Name == logs.OrderTaken }); i < 0 {
		t.Errorf("node 1 took the order but logged no %s", logs.OrderTaken)
	} else if by, _ := evs[i].Uint(logs.ByKey); by != formed[1].Members[0] {
		t.Errorf("node 1's %s names node %d as the one that handed it the order, want the coordinator %d", logs.OrderTaken, by, formed[1].Members[0])
	}
	dead := g.waitViews("before the kill", all, ids(all...))[1]
	kill := g.kill(1)
	rest := []int{2, 3, 4}
	next := g.waitViews("after SIGKILL of the moved sequencer", rest, ids(rest...))
	g.installedAfter("SIGKILL of the moved sequencer at 5 % loss", kill, next)
	g.waitOrdered("traffic in the survivors' view", rest, next[2].ID, 4)
	g.stop(rest)
	r := g.check(true)
	g.wantDeliveries(r)
	var first int64 = -1
	for _, h := range rest {
		l, nv, dv, ok := survivorViews(t, r, h, next[h], dead.ID)
		if !ok {
			continue
		}
		in := tallyView(l, dead.ID, kill)
		u, err := unrecordedAt(l, dv, nv, kill)
		if err != nil {
			t.Errorf("node %d: %v", h, err)
			continue
		}
		if u > 0 {
			checkUnrecorded(t, h, in.finals, u)
		}
		if first < 0 {
			first = u
		} else if u != first {
			t.Errorf("the survivors' flushes found different numbers of messages unrecorded in view %s: %d and %d (node %d)", dead.ID, first, u, h)
		}
		t.Logf("node %d: view %s: %v by record, %d final at its end (%d unrecorded)", h, dead.ID, in.byRecord, len(in.finals), u)
	}
}

// startOrderGroup starts a node on each host with its own send order.
func startOrderGroup(t *testing.T, opts lan.Options, o orderRun) *cluster {
	t.Helper()
	l := newLAN(t, keepLogs(t, opts))
	g := &cluster{t: t, l: l, bin: buildHuddle(t), procs: map[int]*lan.Proc{}, lives: map[int]int{}}
	g.start = time.Now()
	for h := 1; h <= l.Hosts(); h++ {
		g.procs[h] = startNode(t, l, g.bin, h, o.flags(h)...)
		g.lives[h]++
	}
	return g
}

// waitOrdered waits until each node of hosts delivered n ordered messages
// by record in view.
func (g *cluster) waitOrdered(what string, hosts []int, view string, n int) {
	g.t.Helper()
	took, err := poll(viewTimeout, func() bool {
		for _, h := range hosts {
			if countByRecord(nodeLog(g.l, h), view) < n {
				return false
			}
		}
		return true
	}, g.live(hosts)...)
	if err != nil {
		var got []string
		for _, h := range hosts {
			got = append(got, fmt.Sprintf("node %d: %d", h, countByRecord(nodeLog(g.l, h), view)))
		}
		g.t.Fatalf("%s: %d ordered deliveries by record in view %s at each node: %v; got %v\n%s", what, n, view, err, got, g.trail())
	}
	g.t.Logf("%s: %d ordered deliveries by record in view %s at nodes %v (waited %v)", what, n, view, hosts, took.Round(time.Millisecond))
}

// countByRecord counts the deliver lines of the log at path in view that
// carry a gseq and are not final.
func countByRecord(path, view string) int {
	b, _ := os.ReadFile(path)
	n := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(line, logs.Tag(logs.Deliver)) {
			continue
		}
		ev, _ := logs.Parse(line)
		v, _ := ev.Str(logs.ViewKey)
		final, _ := ev.Bool(logs.FinalKey)
		if ev.Name == logs.Deliver && v == view && ev.Has(logs.GSeqKey) && !final {
			n++
		}
	}
	return n
}

// viewTally is what one life delivered in one view, by order.
type viewTally struct {
	byRecord   map[string]int // by the sequencer's records
	beforeKill int            // of those, before the kill
	finals     []logcheck.Deliver
}

func tallyView(l *logcheck.Life, view string, kill time.Time) viewTally {
	vt := viewTally{byRecord: map[string]int{}}
	for _, d := range l.Delivers {
		switch {
		case d.View != view || d.Order != "total" && d.Order != "safe" || d.GSeq == 0:
		case d.Final:
			vt.finals = append(vt.finals, d)
		default:
			vt.byRecord[d.Order]++
			if d.Time.Before(kill) {
				vt.beforeKill++
			}
		}
	}
	return vt
}

// checkSequencerKill checks, beyond logcheck, what the run is about: each
// survivor went from the view the sequencer died in straight to one
// without it; it delivered messages of every order by record in both, some
// before the kill; and the flush ended the dead view with the messages
// the sequencer left unrecorded last, in (sender, seq) order, as many at
// every survivor. That the survivors deliver them in one sequence is
// CheckOrder's to verify.
func checkSequencerKill(t *testing.T, r *logcheck.Run, o orderRun, dead logcheck.View, next map[int]logcheck.View, seq int, rest []int, kill time.Time) {
	t.Helper()
	want := map[string]bool{}      // orders sent in the dead view
	wantAfter := map[string]bool{} // orders the survivors send
	for h := 1; h <= 4; h++ {
		want[o.orders[h-1]] = true
		if h != seq {
			wantAfter[o.orders[h-1]] = true
		}
	}
	st := tallyView(onlyLife(t, r, uint64(seq)), dead.ID, kill)
	t.Logf("sequencer %d: %v ordered deliveries by record in view %s before its death", seq, st.byRecord, dead.ID)
	unrecorded := map[int]int64{}
	finals := map[int]int{}
	for _, h := range rest {
		l, nv, dv, ok := survivorViews(t, r, h, next[h], dead.ID)
		if !ok {
			continue
		}
		in, after := tallyView(l, dead.ID, kill), tallyView(l, nv.ID, kill)
		for ord := range want {
			if in.byRecord[ord] == 0 {
				t.Errorf("node %d: no %s delivery by record in view %s, the sequencer's", h, ord, dead.ID)
			}
		}
		for ord := range wantAfter {
			if after.byRecord[ord] == 0 {
				t.Errorf("node %d: no %s delivery by record in view %s, after the kill", h, ord, nv.ID)
			}
		}
		if in.beforeKill == 0 {
			t.Errorf("node %d: no ordered delivery by record before the kill", h)
		}
		u, err := unrecordedAt(l, dv, nv, kill)
		if err != nil {
			t.Errorf("node %d: %v", h, err)
		} else {
			checkUnrecorded(t, h, in.finals, u)
		}
		unrecorded[h], finals[h] = u, len(in.finals)
		t.Logf("node %d: view %s: %v by record (%d before the kill), %d final at its end (%d of them unrecorded, by (sender, seq)%s); view %s: %v by record, flush %.0fms",
			h, dead.ID, in.byRecord, in.beforeKill, len(in.finals), u, gseqSpan(in.finals), nv.ID, after.byRecord, nv.FlushMs)
	}
	// The final deliveries may differ in number: a recorded message one
	// survivor delivered by its record (a safe one the dead sequencer
	// reported holding to it, one it held the data of earlier) another
	// delivers at the view's end. The unrecorded ones may not: every
	// survivor holds the same messages and records after the flush.
	for _, h := range rest[1:] {
		if unrecorded[h] != unrecorded[rest[0]] {
			t.Errorf("the survivors' flushes found different numbers of messages unrecorded in view %s: node %d %d (of %d final), node %d %d (of %d final)",
				dead.ID, rest[0], unrecorded[rest[0]], finals[rest[0]], h, unrecorded[h], finals[h])
		}
	}
}

// survivorViews returns survivor h's life, its view next after the kill
// and the view before it, which must be dead, the sequencer's last.
func survivorViews(t *testing.T, r *logcheck.Run, h int, next logcheck.View, dead string) (*logcheck.Life, logcheck.View, logcheck.View, bool) {
	t.Helper()
	l := onlyLife(t, r, uint64(h))
	nv, dv, ok := viewPair(l, next.ID)
	if !ok || dv.ID != dead {
		t.Errorf("node %d: view %s does not follow view %s, the sequencer's last, in its log", h, next.ID, dead)
		return l, nv, dv, false
	}
	return l, nv, dv, true
}

// viewPair returns l's view with ID id and the view before it.
func viewPair(l *logcheck.Life, id string) (v, prev logcheck.View, ok bool) {
	for i := 1; i < len(l.Views); i++ {
		if l.Views[i].ID == id {
			return l.Views[i], l.Views[i-1], true
		}
	}
	return v, prev, false
}

// unrecordedAt returns how many messages l's flush between views dv and
// nv delivered without an order record: the growth of the "unrecorded"
// counter from the last node.stats in dv before the kill to the first in
// nv.
func unrecordedAt(l *logcheck.Life, dv, nv logcheck.View, kill time.Time) (int64, error) {
	var before, after *logcheck.Stats
	for i := range l.Stats {
		s := &l.Stats[i]
		if s.Line > dv.Line && s.Line < nv.Line && s.Time.Before(kill) {
			before = s
		}
		if s.Line > nv.Line && after == nil {
			after = s
		}
	}
	if before == nil || after == nil {
		return 0, fmt.Errorf("no node.stats in view %s before the kill (%v) or none in view %s (%v): cannot tell what its flush found unrecorded",
			dv.ID, before != nil, nv.ID, after != nil)
	}
	u := after.Get("unrecorded") - before.Get("unrecorded")
	if u < 0 {
		return 0, fmt.Errorf("counter unrecorded fell from %d (line %d) to %d (line %d)", before.Get("unrecorded"), before.Line, after.Get("unrecorded"), after.Line)
	}
	return u, nil
}

// checkUnrecorded wants the last u final deliveries, those the sequencer
// left without a record, in (sender, seq) order: the order every survivor
// gives them alike.
func checkUnrecorded(t *testing.T, h int, finals []logcheck.Deliver, u int64) {
	t.Helper()
	if u == 0 {
		// The survivors send on until they suspect the dead sequencer:
		// those messages have no record.
		t.Errorf("node %d: its flush found no message unrecorded (is the unrecorded counter logged?): the (sender, seq) order went untested", h)
		return
	}
	if u > int64(len(finals)) {
		t.Errorf("node %d: %d messages unrecorded at the view's end, but only %d final deliveries", h, u, len(finals))
		return
	}
	tail := finals[len(finals)-int(u):]
	for i := 1; i < len(tail); i++ {
		a, b := tail[i-1], tail[i]
		if a.From > b.From || a.From == b.From && a.Seq >= b.Seq {
			t.Errorf("node %d: unrecorded message %d of node %d (gseq %d, line %d) after message %d of node %d (gseq %d): want (sender, seq) order",
				h, b.Seq, b.From, b.GSeq, b.Line, a.Seq, a.From, a.GSeq)
			return
		}
	}
}

// gseqSpan describes the gseqs of the final deliveries.
func gseqSpan(finals []logcheck.Deliver) string {
	if len(finals) == 0 {
		return ""
	}
	return fmt.Sprintf("; gseq %d to %d", finals[0].GSeq, finals[len(finals)-1].GSeq)
}
