package logcheck_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// The checks that hold in every run, on synthetic logs: the holes, a
// leaver's messages, the last view, how a log ends, nothing compared.

// oneView is three nodes in view 1.1 that each send seqs 1..3 and deliver
// everything, then stop: a run without a view change.
func oneView() (a, b, c *logw) {
	mk := func(id uint64) *logw { return newLog(id).started(100*id).view("1.1", 1, 2, 3).vsend("1.1", 1, 2, 3) }
	a, b, c = mk(1), mk(2), mk(3)
	for _, w := range []*logw{a, b, c} {
		for from := uint64(1); from <= 3; from++ {
			w.vdeliver("1.1", from, 1, 2, 3)
		}
	}
	return a, b, c
}

// stopAll stops every node a few seconds later, so that the last view's
// messages are due (MembershipOptions.Settle).
func stopAll(ws ...*logw) []*logw {
	for _, w := range ws {
		w.t = w.t.Add(5 * time.Second)
		w.stopped()
	}
	return ws
}

func TestFIFOGap(t *testing.T) {
	a, b, c := oneView()
	b.vsend("1.1", 4, 5)
	a.vdeliver("1.1", 2, 5) // not 4
	c.vdeliver("1.1", 2, 4, 5)
	r := load(t, stopAll(a, b, c)...)
	expect(t, r.CheckMembership(logcheck.MembershipOptions{SelfDelivery: true}), map[logcheck.Kind]int{logcheck.FIFOGap: 1},
		"fifo-gap: node 1 delivered node 2 seq 5 in view 1.1 without seq 4, which node 2 sent before it in 1.1 (node2.json:")
	// Only what the sender logged as sent is expected: its node's own
	// protocols use sequence numbers too.
	a, b, c = oneView()
	b.vsend("1.1", 5)
	a.vdeliver("1.1", 2, 5)
	c.vdeliver("1.1", 2, 5)
	expect(t, load(t, stopAll(a, b, c)...).CheckMembership(logcheck.MembershipOptions{SelfDelivery: true}), nil)
}

func TestOrderGapAndFinalView(t *testing.T) {
	a, b, c := oneView()
	for _, w := range []*logw{a, b, c} {
		w.osend("1.1", "total", 10+w.node)
	}
	a.odeliver("1.1", "total", 2, 12, 1, false).odeliver("1.1", "total", 3, 13, 3, false) // gseq 2 is missing
	b.odeliver("1.1", "total", 2, 12, 1, false).odeliver("1.1", "total", 1, 11, 2, false).odeliver("1.1", "total", 3, 13, 3, false)
	c.odeliver("1.1", "total", 2, 12, 1, false).odeliver("1.1", "total", 1, 11, 2, false).odeliver("1.1", "total", 3, 13, 3, false)
	r := load(t, stopAll(a, b, c)...)
	o := logcheck.MembershipOptions{SelfDelivery: true}
	expect(t, r.CheckOrder(o), map[logcheck.Kind]int{logcheck.OrderGap: 1},
		"node 1 delivered node 3 seq 13: delivered as gseq 3 of view 1.1 by its record, without gseq 2: total order has no holes [node1.json:")
	// Every node stayed in view 1.1 until it stopped, seconds later: node
	// 1 had to deliver node 1's seq 11, its own.
	expect(t, r.CheckLiveness(o), map[logcheck.Kind]int{logcheck.Missing: 1},
		"node 1 stayed in view 1.1 until it stopped, as did node 1, but never delivered seq 11 that node 1 sent in 1.1")
}

func TestLeaveLoss(t *testing.T) {
	a, b, c := oneView()
	c.vsend("1.1", 4)
	a.vdeliver("1.1", 3, 4)
	c.stopped() // node 3 leaves
	for _, w := range []*logw{a, b} {
		w.viewChange("2.1", ids(1, 2), nil, ids(3), nil)
	}
	r := load(t, stopAll(a, b)[0], b, c)
	expect(t, r.CheckLiveness(logcheck.MembershipOptions{SelfDelivery: true}), map[logcheck.Kind]int{logcheck.LeaveLoss: 1},
		"node 2 installed view 1.1 then 2.1, which says node 3 left gracefully, but never delivered seq 4 that node 3 sent in 1.1")
}

func TestLogEnd(t *testing.T) {
	a, b, c := oneView()
	stopAll(a, b)
	r := load(t, a, b, c)
	expect(t, r.CheckLives(logcheck.LivesOptions{}), map[logcheck.Kind]int{logcheck.LogEnd: 1},
		"the log of node 3 (incarnation 300, started at node3.json:1) ends at line 14", "without node.stopped")
	// A crash the check knows of explains it: by its time, or by name.
	expect(t, r.CheckLives(logcheck.LivesOptions{Deaths: []logcheck.Death{{Node: 3, At: c.t.Add(time.Millisecond)}}}), nil)
	expect(t, r.CheckLives(logcheck.LivesOptions{Crashed: []logcheck.Crash{{Node: 3}}}), nil)
	expect(t, r.CheckLives(logcheck.LivesOptions{Crashed: []logcheck.Crash{{Node: 3, Inc: 300}}}), nil)
	expect(t, r.CheckLives(logcheck.LivesOptions{Crashed: []logcheck.Crash{{Node: 3, Inc: 301}}}), map[logcheck.Kind]int{logcheck.LogEnd: 1})
}

// TestNothingCompared: a run with traffic in which a check finds nothing
// to compare fails it, rather than passing it on no evidence.
func TestNothingCompared(t *testing.T) {
	// A run of a few milliseconds: every message was sent too close to
	// the nodes' stop for the liveness check to require it, and nobody
	// stayed in the view long enough to have to know a leader.
	a, b, c := oneView()
	r := load(t, a.stopped(), b.stopped(), c.stopped())
	for _, v := range r.CheckAll(logcheck.AllOptions{}) {
		want := 0
		if v.Name == "liveness" || v.Name == "election" {
			want = 1
		}
		if v.Result.ByKind[logcheck.NothingCompared] != want || v.Result.Total != want {
			t.Errorf("%s, want %d nothing-compared: %s", v.Name, want, v.Text)
		}
		if want == 1 && !strings.Contains(v.Text, "compared nothing in a run with 9 sends, 27 deliveries and 3 views installed") {
			t.Errorf("%s: %s", v.Name, v.Text)
		}
	}
	// Seconds later, both have something to compare.
	a, b, c = oneView()
	for _, v := range load(t, stopAll(a, b, c)...).CheckAll(logcheck.AllOptions{}) {
		if v.Result.ByKind[logcheck.NothingCompared] != 0 {
			t.Errorf("%s: %s", v.Name, v.Text)
		}
	}
}

func TestLeaders(t *testing.T) {
	late := func(w *logw) *logw { w.t = w.t.Add(4 * time.Second); return w }
	a := newLog(1).started(100).view("1.3", 3, 1, 2).elected(logs.LeaderChanged, "1.3", 1, 3, 0)
	b := newLog(2).started(200).view("1.3", 3, 1, 2) // never learns it
	c := newLog(3).started(300).view("1.3", 3, 1, 2).elected(logs.ElectionWon, "1.3", 1, 3, 0)
	res := load(t, late(a).stopped(), late(b).stopped(), late(c).stopped()).CheckElection(logcheck.ElectionOptions{})
	expect(t, res.Result, map[logcheck.Kind]int{logcheck.LeaderUnknown: 1},
		"node 2 stayed in view 1.3 (installed at node2.json:2) for 4.002s and knew no leader at its end: want every member to learn the view's leader, its highest member 3, within 3s")

	a = newLog(1).started(100).view("1.3", 3, 1, 2).elected(logs.LeaderChanged, "1.3", 1, 2, 0)
	b = newLog(2).started(200).view("1.3", 3, 1, 2).elected(logs.ElectionWon, "1.3", 1, 2, 0)
	res = load(t, a, b).CheckElection(logcheck.ElectionOptions{})
	expect(t, res.Result, map[logcheck.Kind]int{logcheck.LeaderNotHighest: 1},
		"ring round 1 of view 1.3 elected node 2, not the view's highest member 3 of [3 1 2]: the election elects the highest ID")
}

// TestSchemaVersion1: the checker reads logs of schema version 1, whose
// incarnation fields had other names.
func TestSchemaVersion1(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		old := map[string][]string{}
		for name, lines := range fx.files {
			for _, l := range lines {
				l = strings.Replace(l, `"from_incarnation":`, `"inc":`, 1)
				l = strings.Replace(l, `"coordinator_incarnation":`, `"coordinator_inc":`, 1)
				l = strings.Replace(l, `,"schema":2`, ``, 1)
				old[name] = append(old[name], l)
			}
		}
		now, then := fx.check(t, fx.files), fx.check(t, old)
		for i := range now {
			if now[i].Text != then[i].Text {
				t.Errorf("%s: %s reads version 1 differently:\n%s\nagainst version 2:\n%s", fx.name, now[i].Name, then[i].Text, now[i].Text)
			}
		}
		r := &logcheck.Run{}
		r.Read("node1.json", strings.NewReader(strings.Join(old["node1.json"], "\n")))
		if r.Lives[0].Schema != 1 {
			t.Errorf("%s: a node.started without schema reads as version %d, want 1", fx.name, r.Lives[0].Schema)
		}
	}
}

// TestStateHashes: a state installed must be the one its provider sent at
// that view's cut, by the hash both logged.
func TestStateHashes(t *testing.T) {
	sent := func(w *logw, view, hash string) *logw {
		return w.line(logs.StateSent, fmt.Sprintf(`"service":"kv","view":%q,"members":[2],"bytes":10,"hash":%q,"duration_ms":1`, view, hash))
	}
	installed := func(w *logw, view string, from uint64, hash string) *logw {
		return w.line(logs.StateInstalled, fmt.Sprintf(`"service":"kv","view":%q,"from":%d,"bytes":10,"hash":%q,"duration_ms":1,"held":0`, view, from, hash))
	}
	a := sent(newLog(1).started(100), "2.1", "aaaa").stopped()
	b := installed(newLog(2).started(200), "2.1", 1, "aaaa").stopped()
	res := load(t, a, b).CheckState()
	expect(t, res, map[logcheck.Kind]int{})
	if !res.ComparedAny() {
		t.Fatal("one transfer, compared nothing")
	}
	a = sent(newLog(1).started(100), "2.1", "aaaa").stopped()
	b = installed(installed(newLog(2).started(200), "2.1", 1, "bbbb"), "3.1", 1, "cccc").stopped()
	expect(t, load(t, a, b).CheckState(), map[logcheck.Kind]int{logcheck.StateMismatch: 1, logcheck.StateUnsent: 1},
		"node 2 installed the state of kv at view 2.1 with hash bbbb; its provider, node 1, sent hash aaaa: want the snapshot of the view's cut")
}
