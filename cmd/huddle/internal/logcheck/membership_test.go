package logcheck_test

import (
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"
	"testing"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// view logs a view.installed of id with members (changes left empty).
func (w *logw) view(id string, members ...uint64) *logw {
	return w.viewChange(id, members, nil, nil, nil)
}

func (w *logw) viewChange(id string, members, joined, left, crashed []uint64) *logw {
	list := func(ids []uint64) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = fmt.Sprint(id)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	return w.line(logs.ViewInstalled, fmt.Sprintf(`"view":%q,"members":%s,"joined":%s,"left":%s,"crashed":%s,"flush_ms":1.5`,
		id, list(members), list(joined), list(left), list(crashed)))
}

// vsend logs the sends of seqs in view.
func (w *logw) vsend(view string, seqs ...uint64) *logw {
	for _, s := range seqs {
		p := payload(w.node, s)
		w.line(logs.Send, fmt.Sprintf(`"seq":%d,"len":%d,"crc":%d,"view":%q`, s, len(p), crc32.ChecksumIEEE(p), view))
	}
	return w
}

// vdeliver logs the deliveries in view of seqs of from.
func (w *logw) vdeliver(view string, from uint64, seqs ...uint64) *logw {
	return w.vdeliverInc(view, from, 0, seqs...)
}

// vdeliverInc is vdeliver naming the sender's incarnation when inc != 0.
func (w *logw) vdeliverInc(view string, from, inc uint64, seqs ...uint64) *logw {
	for _, s := range seqs {
		p := payload(from, s)
		f := fmt.Sprintf(`"from":%d,"seq":%d,"len":%d,"crc":%d,"view":%q`, from, s, len(p), crc32.ChecksumIEEE(p), view)
		if inc != 0 {
			f += fmt.Sprintf(`,"from_incarnation":%d`, inc)
		}
		w.line(logs.Deliver, f)
	}
	return w
}

func ids(s ...uint64) []uint64 { return s }

// cleanViews is a clean run: nodes 1 and 2 join, 3 joins, 2 crashes, 4
// and 5 form a view of their own that merges with 1 and 3's, 3 leaves and
// 2 comes back.
func cleanViews() []*logw {
	n1 := newLog(1).started(100).view("1.1", 1).
		viewChange("2.1", ids(1, 2), ids(2), nil, nil).vsend("2.1", 1, 2).vdeliver("2.1", 2, 1).
		viewChange("3.1", ids(1, 2, 3), ids(3), nil, nil).vsend("3.1", 3).vdeliver("3.1", 3, 1).vdeliver("3.1", 2, 2).
		viewChange("4.1", ids(1, 3), nil, nil, ids(2)).vsend("4.1", 4).
		viewChange("5.1", ids(1, 3, 4, 5), ids(4, 5), nil, nil).vdeliver("5.1", 4, 2).vdeliver("5.1", 5, 1).
		viewChange("6.1", ids(1, 4, 5, 2), ids(2), ids(3), nil).vsend("6.1", 5).vdeliverInc("6.1", 2, 201, 1)
	n2 := newLog(2).started(200).viewChange("2.1", ids(1, 2), ids(2), nil, nil).vdeliver("2.1", 1, 1, 2).vsend("2.1", 1).
		viewChange("3.1", ids(1, 2, 3), ids(3), nil, nil).vdeliver("3.1", 1, 3).vdeliver("3.1", 3, 1).vsend("3.1", 2).
		started(201).viewChange("6.1", ids(1, 4, 5, 2), ids(2), ids(3), nil).vsend("6.1", 1).vdeliver("6.1", 1, 5)
	n3 := newLog(3).started(300).viewChange("3.1", ids(1, 2, 3), ids(3), nil, nil).vsend("3.1", 1).
		vdeliver("3.1", 1, 3).vdeliver("3.1", 2, 2).
		viewChange("4.1", ids(1, 3), nil, nil, ids(2)).vdeliver("4.1", 1, 4).
		viewChange("5.1", ids(1, 3, 4, 5), ids(4, 5), nil, nil).vdeliver("5.1", 4, 2).
		line(logs.NodeStopped, `"reason":"left"`)
	n4 := newLog(4).started(400).view("1.4", 4).viewChange("2.4", ids(4, 5), ids(5), nil, nil).vsend("2.4", 1).
		viewChange("5.1", ids(1, 3, 4, 5), ids(1, 3), nil, nil).vsend("5.1", 2).vdeliver("5.1", 5, 1).
		viewChange("6.1", ids(1, 4, 5, 2), ids(2), ids(3), nil).vdeliver("6.1", 1, 5).vdeliverInc("6.1", 2, 201, 1)
	n5 := newLog(5).started(500).viewChange("2.4", ids(4, 5), ids(5), nil, nil).vdeliver("2.4", 4, 1).
		viewChange("5.1", ids(1, 3, 4, 5), ids(1, 3), nil, nil).vdeliver("5.1", 4, 2).vsend("5.1", 1).
		viewChange("6.1", ids(1, 4, 5, 2), ids(2), ids(3), nil).vdeliver("6.1", 1, 5).vdeliverInc("6.1", 2, 201, 1)
	return []*logw{n1, n2, n3, n4, n5}
}

func TestMembershipClean(t *testing.T) {
	r := load(t, cleanViews()...)
	res := expect(t, r.CheckMembership(logcheck.MembershipOptions{}), nil,
		"membership: 6 lives, 12 sent, 22 delivered, 19 views installed; compared 21 sender streams, 1 messages: ok")
	if res.Views != 19 || res.Lives != 6 {
		t.Errorf("result %+v", res)
	}
	expect(t, r.CheckLiveness(logcheck.MembershipOptions{}), nil, "liveness: 6 lives, 12 sent, 22 delivered, 19 views installed; compared 11 deliveries required: ok")
	// The multicast check agrees on safety.
	check(t, r, logcheck.Options{SafetyOnly: true}, nil)

	// Without node 3's delivery of the message node 2 sent before
	// crashing, node 3 and node 1 disagree on view 3.1.
	ws := cleanViews()
	n3 := ws[2]
	kept := strings.ReplaceAll(n3.b.String(), lineWith(n3.b.String(), `"from":2,"seq":2,`), "")
	n3.b.Reset()
	n3.b.WriteString(kept)
	r = load(t, ws...)
	expect(t, r.CheckMembership(logcheck.MembershipOptions{}), map[logcheck.Kind]int{logcheck.VirtualSynchrony: 1},
		"node 3 and node 1 both installed view 3.1 then 4.1 but delivered different messages in 3.1: "+
			"node 3 lacks node 2 (inc 200) seq 2 that node 1 delivered (node1.json:10) [node3.json:5]")
	expect(t, r.CheckLiveness(logcheck.MembershipOptions{}), nil) // node 2 crashed in 3.1
}

// lineWith returns the line of log holding s, newline included.
func lineWith(log, s string) string {
	for _, l := range strings.SplitAfter(log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	panic("no line with " + s)
}

func TestMembershipOldLogs(t *testing.T) {
	// Logs from before views: nothing to hold to a view.
	s, r2, r3 := threeNodes(5)
	expect(t, load(t, s, r2, r3).CheckMembership(logcheck.MembershipOptions{}), nil)
}

// A view change in the base run below: node 1 sends 1..3 in view 1.1 and
// nodes 2 and 3 deliver them, then all three install 2.1.
func viewBase() (n1, n2, n3 *logw) {
	n1 = newLog(1).started(100).view("1.1", 1, 2, 3).vsend("1.1", 1, 2, 3)
	n2 = newLog(2).started(200).view("1.1", 1, 2, 3)
	n3 = newLog(3).started(300).view("1.1", 1, 2, 3)
	return n1, n2, n3
}

func TestMembershipViolations(t *testing.T) {
	type kinds = map[logcheck.Kind]int
	for _, tc := range []struct {
		name  string
		logs  func() []*logw
		o     logcheck.MembershipOptions
		want  kinds
		texts []string
	}{{
		name: "base",
		logs: func() []*logw {
			n1, n2, n3 := viewBase()
			n2.vdeliver("1.1", 1, 1, 2, 3).view("2.1", 1, 2, 3)
			n3.vdeliver("1.1", 1, 1, 2, 3).view("2.1", 1, 2, 3)
			return []*logw{n1.view("2.1", 1, 2, 3), n2, n3}
		},
	}, {
		name: "self-inclusion",
		logs: func() []*logw {
			return []*logw{newLog(1).started(100).view("1.1", 1), newLog(2).started(200).view("1.1", 1)}
		},
		want:  kinds{logcheck.SelfInclusion: 1},
		texts: []string{"self-inclusion: node 2 installed view 1.1 with members [1]: want itself among them [node2.json:2]"},
	}, {
		name: "view-agreement",
		logs: func() []*logw {
			n1, n2, n3 := viewBase()
			n3.view("2.1", 1, 2, 3)
			return []*logw{n1.view("2.1", 1, 2, 3), n2.view("2.1", 1, 3, 2), n3}
		},
		want: kinds{logcheck.ViewAgreement: 1},
		texts: []string{"view-agreement: node 2 installed view 2.1 with members [1 3 2]; node 1 installed it with [1 2 3] (node1.json:6): " +
			"want the same members in the same order [node2.json:3]"},
	}, {
		name: "view-order",
		logs: func() []*logw {
			return []*logw{newLog(1).started(100).view("2.9", 1).view("2.10", 1).view("2.10", 1).view("10.1", 1).view("9.1", 1).view("x", 1)}
		},
		want: kinds{logcheck.ViewOrder: 3},
		texts: []string{
			"view-order: node 1 installed view 2.10 after view 2.10 (node1.json:3): want increasing view IDs (epoch, then coordinator) [node1.json:4]",
			"node 1 installed view 9.1 after view 10.1 (node1.json:5)",
			`node 1 installed view "x" (not epoch.coordinator): want IDs like 3.1 [node1.json:7]`},
	}, {
		name: "virtual-synchrony",
		logs: func() []*logw {
			n1, n2, n3 := viewBase()
			n2.vdeliver("1.1", 1, 1, 2, 3).view("2.1", 1, 2, 3)
			n3.vdeliver("1.1", 1, 1, 2).view("2.1", 1, 2, 3)
			return []*logw{n1.view("2.1", 1, 2, 3), n2, n3}
		},
		want: kinds{logcheck.VirtualSynchrony: 1},
		texts: []string{"virtual-synchrony: node 3 and node 2 both installed view 1.1 then 2.1 but delivered different messages in 1.1: " +
			"node 3 lacks node 1 seq 3 that node 2 delivered (node2.json:5) [node3.json:5]"},
	}, {
		name: "virtual-synchrony several",
		logs: func() []*logw {
			n1, n2, n3 := viewBase()
			n2.vsend("1.1", 1).vdeliver("1.1", 1, 1, 2, 3).view("2.1", 1, 2, 3)
			n3.vdeliver("1.1", 1, 1).view("2.1", 1, 2, 3)
			return []*logw{n1.vdeliver("1.1", 2, 1).view("2.1", 1, 2, 3), n2, n3}
		},
		want: kinds{logcheck.VirtualSynchrony: 1},
		texts: []string{"node 3 lacks 3 messages that others delivered: node 1 seq 2 that node 2 delivered (node2.json:5), " +
			"then node 1 seq 3, node 2 seq 1 [node3.json:4]"},
	}, {
		// A sender need not deliver its own messages, unless SelfDelivery.
		name: "self-delivery",
		logs: func() []*logw {
			n1, n2, _ := viewBase()
			n2.vdeliver("1.1", 1, 1, 2, 3).view("2.1", 1, 2, 3)
			n1.vdeliver("1.1", 1, 1).view("2.1", 1, 2, 3)
			return []*logw{n1, n2}
		},
		o:     logcheck.MembershipOptions{SelfDelivery: true},
		want:  kinds{logcheck.VirtualSynchrony: 1},
		texts: []string{"node 1 lacks 2 messages that others delivered: node 1 seq 2 that node 2 delivered"},
	}, {
		name: "wrong-view",
		logs: func() []*logw {
			n1, n2, n3 := viewBase()
			n2.vdeliver("1.1", 1, 1, 2).view("2.1", 1, 2, 3).vdeliver("1.1", 1, 3)
			n3 = newLog(3).started(300).vdeliver("1.1", 1, 1, 2, 3).view("2.1", 1, 2, 3)
			return []*logw{n1.view("2.1", 1, 2, 3), n2, n3}
		},
		want: kinds{logcheck.WrongView: 4},
		texts: []string{
			"wrong-view: node 2 delivered node 1 seq 3: in view 1.1 while in view 2.1 (installed at node2.json:5): " +
				"want deliveries in the receiver's current view [node2.json:6]",
			"wrong-view: node 3 delivered node 1 seq 1: in view 1.1 before installing any view: want deliveries in the receiver's current view [node3.json:2]"},
	}, {
		name: "cross-view",
		logs: func() []*logw {
			n1, n2, _ := viewBase()
			n2.vdeliver("1.1", 1, 1, 2).view("2.1", 1, 2).vdeliver("2.1", 1, 3)
			return []*logw{n1.view("2.1", 1, 2), n2}
		},
		want: kinds{logcheck.CrossView: 1},
		texts: []string{"cross-view: node 2 delivered node 1 seq 3: delivered in view 2.1; node 1 sent it in view 1.1 (node1.json:5): " +
			"want delivery in the sending view [node2.json:6]"},
	}, {
		name: "multicast safety",
		logs: func() []*logw {
			n1, n2, _ := viewBase()
			n2.vdeliver("1.1", 1, 2, 1, 1, 9)
			return []*logw{n1, n2}
		},
		want: kinds{logcheck.FIFO: 1, logcheck.Duplicate: 1, logcheck.Unsent: 1},
		texts: []string{"fifo: node 2 delivered node 1 seq 1: delivered after seq 2", "[node2.json:4]",
			"duplicate: node 2 delivered node 1 seq 1", "unsent: node 2 delivered node 1 seq 9"},
	}, {
		// A life without views that delivers in a view breaks nothing when
		// left out.
		name: "skip viewless",
		logs: func() []*logw {
			n1, _, _ := viewBase()
			return []*logw{n1, newLog(3).started(300).vdeliver("1.1", 1, 1, 2, 3)}
		},
		o: logcheck.MembershipOptions{SkipViewless: true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := expect(t, load(t, tc.logs()...).CheckMembership(tc.o), tc.want, tc.texts...)
			if t.Failed() {
				t.Log(res)
			}
		})
	}
}

func TestMembershipViolationFields(t *testing.T) {
	n1, n2, n3 := viewBase()
	n2.vdeliver("1.1", 1, 1, 2, 3).view("2.1", 1, 2, 3)
	n3.vdeliver("1.1", 1, 1).view("2.1", 1, 2, 3)
	res := load(t, n1.view("2.1", 1, 2, 3), n2, n3).CheckMembership(logcheck.MembershipOptions{})
	if len(res.Violations) != 1 {
		t.Fatal(res)
	}
	v := res.Violations[0]
	if v.Kind != logcheck.VirtualSynchrony || v.Node != 3 || v.Sender != 1 || v.Seq != 2 || v.Count != 2 ||
		v.File != "node3.json" || v.Line != 4 {
		t.Errorf("violation %+v", v)
	}
}

func TestLiveness(t *testing.T) {
	n1, n2, n3 := viewBase()
	n2.vdeliver("1.1", 1, 1).view("2.1", 1, 2, 3)
	n3.vdeliver("1.1", 1, 1, 2, 3).vsend("1.1", 1).view("2.1", 1, 2, 3)
	// Node 4 crashes in 1.1: its message need not be delivered.
	n4 := newLog(4).started(400).view("1.1", 1, 2, 3).vsend("1.1", 1)
	r := load(t, n1.view("2.1", 1, 2, 3), n2, n3, n4)
	res := expect(t, r.CheckLiveness(logcheck.MembershipOptions{}), map[logcheck.Kind]int{logcheck.Missing: 3},
		"missing: node 2 installed view 1.1 then 2.1, as did node 1, but never delivered seqs 2..3 (2 messages) that node 1 sent in 1.1 [node2.json:4]",
		"node 1 installed view 1.1 then 2.1, as did node 3, but never delivered seq 1 that node 3 sent in 1.1 [node1.json:6]",
		"node 2 installed view 1.1 then 2.1, as did node 3, but never delivered seq 1",
		"4 messages missing")
	if res.Missing != 4 {
		t.Errorf("Missing = %d", res.Missing)
	}
	// Safety is CheckMembership's: liveness reports no view violations.
	n2.vdeliver("1.1", 1, 3)
	expect(t, load(t, n1, n2, n3, n4).CheckLiveness(logcheck.MembershipOptions{}),
		map[logcheck.Kind]int{logcheck.Missing: 3}, "3 messages missing")
}

func TestViewFields(t *testing.T) {
	w := newLog(3).started(300).
		line(logs.ViewInstalled, `"view":"4.1","members":[1,"2", 3],"joined":[3],"left":[],"crashed":[7],"flush_ms":12.5`).
		line(logs.ViewInstalled, `"view":"5.1","members":[1,2,{"x":"]"}],"joined":null`).
		line(logs.ViewInstalled, `"view":"6.1","members":[1,-2]`).
		line(logs.Send, `"seq":1,"len":3,"crc":7,"view":"4.1"`)
	l := load(t, w).Lives[0]
	v := l.Views[0]
	if fmt.Sprint(v.Members, v.Joined, v.Left, v.Crashed) != "[1 2 3] [3] [] [7]" || v.FlushMs != 12.5 || v.Line != 2 {
		t.Errorf("view %+v", v)
	}
	if v := l.Views[1]; v.Members != nil || v.Joined != nil || v.ID != "5.1" {
		t.Errorf("garbled view %+v", v)
	}
	if v := l.Views[2]; v.Members != nil {
		t.Errorf("garbled view %+v", v)
	}
	if s := l.Sends[0]; s.View != "4.1" {
		t.Errorf("send %+v", s)
	}
}

func TestParseViewID(t *testing.T) {
	for _, s := range []string{"", "3", "3.", ".1", "3.1.2", "-3.1", "+3.1", "3.x", " 3.1"} {
		if _, ok := logcheck.ParseViewID(s); ok {
			t.Errorf("ParseViewID(%q) ok", s)
		}
	}
	a, ok1 := logcheck.ParseViewID("2.10")
	b, ok2 := logcheck.ParseViewID("10.2")
	c, _ := logcheck.ParseViewID("2.9")
	if !ok1 || !ok2 || a != (logcheck.ViewID{Epoch: 2, Coord: 10}) || a.String() != "2.10" {
		t.Fatalf("ParseViewID: %v %v", a, b)
	}
	if a.Compare(b) != -1 || b.Compare(a) != 1 || c.Compare(a) != -1 || a.Compare(a) != 0 {
		t.Errorf("Compare wrong for %v, %v, %v", a, b, c)
	}
}

// TestMembershipCoordinatorIncarnation: a coordinator that restarts counts
// its epochs afresh. Its new life's view 1.5 is not its old life's 1.5:
// with coordinator_incarnation they are told apart, and differing members
// are not a disagreement; without it they would be.
func TestMembershipCoordinatorIncarnation(t *testing.T) {
	viewInc := func(w *logw, id string, inc uint64, members ...uint64) *logw {
		s := make([]string, len(members))
		for i, m := range members {
			s[i] = fmt.Sprint(m)
		}
		return w.line(logs.ViewInstalled, fmt.Sprintf(`"view":%q,"coordinator_incarnation":%d,"members":[%s],"joined":[],"left":[],"crashed":[],"flush_ms":0`,
			id, inc, strings.Join(s, ",")))
	}
	old := newLog(5).started(100)
	viewInc(old, "1.5", 100, 5)
	viewInc(old, "2.5", 100, 5, 1)
	restarted := newLog(5).started(900)
	viewInc(restarted, "1.5", 900, 5)
	viewInc(restarted, "2.5", 900, 5, 2)
	n1 := newLog(1).started(10)
	viewInc(n1, "2.5", 100, 5, 1)
	n2 := newLog(2).started(20)
	viewInc(n2, "2.5", 900, 5, 2)
	expect(t, load(t, old, restarted, n1, n2).CheckMembership(logcheck.MembershipOptions{}), nil)

	strip := func(w *logw) *logw {
		c := newLog(w.node)
		c.b.WriteString(regexp.MustCompile(`"coordinator_incarnation":\d+,`).ReplaceAllString(w.b.String(), ""))
		return c
	}
	res := load(t, strip(old), strip(restarted), strip(n1), strip(n2)).CheckMembership(logcheck.MembershipOptions{})
	if res.Total == 0 {
		t.Fatal("without coordinator_incarnation the two views 2.5 should disagree")
	}
}
