package lab

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/logs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		want event
	}{
		{`{"level":"info","node":1,"event":"deliver","view":"2.3","from":2,"seq":1,"order":"safe","gseq":1,"len":200,"crc":1,"time":"2026-11-22T14:14:17.626395661Z"}`,
			true, event{Event: logs.Deliver, Order: "safe"}},
		{`{"level":"info","node":1,"event":"deliver","view":"2.3","from":2,"seq":9,"order":"total","gseq":4,"final":true,"len":200}`,
			true, event{Event: logs.Deliver, Order: "total", Final: true, View: "2.3"}},
		{`{"level":"info","node":1,"event":"send","view":"2.3","seq":7,"order":"total","len":200,"crc":1}`,
			true, event{Event: logs.Send, Order: "total"}},
		{`panic: oops`, false, event{}},
		{`{"level":"info","node":1,"event":"view.installed","view":"2.3","coordinator_incarnation":9,"members":[3,1,2],"joined":[1,2],"left":[],"crashed":[],"flush_ms":8}`,
			true, event{Level: "info", Node: 1, Event: logs.ViewInstalled, View: "2.3", CoordInc: 9, Members: []uint64{3, 1, 2},
				Joined: []uint64{1, 2}, Left: []uint64{}, Crashed: []uint64{}, FlushMs: 8}},
		// node.stats logs "members" as a count: the counters still decode.
		{`{"level":"info","node":4,"event":"node.stats","why":"periodic","members":3,"nacks_sent":5,"repairs_sent":6,"gaps_detected":7,"gaps_recovered":8}`,
			true, event{Level: "info", Node: 4, Event: logs.NodeStats, Why: "periodic", NacksSent: 5, RepairsSent: 6, GapsDetected: 7, GapsRecovered: 8}},
	}
	for _, tc := range tests {
		got, ok := parseLine([]byte(tc.line))
		if ok != tc.ok || !eventEqual(got, tc.want) {
			t.Errorf("parseLine(%s)\n = %+v, %v\nwant %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func eventEqual(a, b event) bool {
	return a.Event == b.Event && a.Order == b.Order && a.Final == b.Final && a.Node == b.Node && a.View == b.View &&
		ids(a.Members) == ids(b.Members) && ids(a.Joined) == ids(b.Joined) && a.FlushMs == b.FlushMs &&
		a.CoordInc == b.CoordInc && a.NacksSent == b.NacksSent && a.RepairsSent == b.RepairsSent &&
		a.GapsDetected == b.GapsDetected && a.GapsRecovered == b.GapsRecovered && a.Why == b.Why
}

// TestFollowerReadsCompleteLines: a line written in two parts is read
// once whole, and a restarted node's lines appended later are read too.
func TestFollowerReadsCompleteLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node1.json")
	f := newFollower()
	f.add(1, path)
	c := newCounts()
	if evs := f.poll(c); len(evs) != 0 {
		t.Fatalf("poll of a missing file: %v", evs)
	}
	appendFile(t, path, `{"level":"info","node":1,"event":"node.started","incarnation":1,"time":"2026-01-01T00:00:00Z"}`+"\n"+
		`{"level":"info","node":1,"event":"deliver","order":"total"}`+"\n"+`{"level":"info","node":1,"event":"view.ins`)
	evs := f.poll(c)
	if len(evs) != 1 || evs[0].Event != logs.NodeStarted || evs[0].Inc != 1 {
		t.Fatalf("first poll: %+v", evs)
	}
	appendFile(t, path, `talled","view":"1.1","members":[1],"time":"2026-01-01T00:00:01Z"}`+"\n"+
		`{"level":"info","node":1,"event":"send","order":"fifo"}`+"\n"+
		`{"level":"info","node":1,"event":"deliver","view":"1.1","order":"safe","final":true}`+"\n")
	evs = f.poll(c)
	if len(evs) != 1 || evs[0].Event != logs.ViewInstalled || ids(evs[0].Members) != "[1]" {
		t.Fatalf("second poll: %+v", evs)
	}
	if got := of(c.delivered, 1); got != [4]int64{0, 1, 1, 0} {
		t.Errorf("deliveries %v, want one total and one safe", got)
	}
	if got := c.final[1]["1.1"]; got != 1 {
		t.Errorf("%d deliveries ordered at the end of view 1.1, want 1", got)
	}
	if got := of(c.sent, 1); got != [4]int64{1, 0, 0, 0} {
		t.Errorf("sends %v, want one fifo", got)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestWatcherTellsTheStory feeds the watcher the events of a crash and a
// rejoin and checks what the console says.
func TestWatcherTellsTheStory(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	var out bytes.Buffer
	cnt := newCounts()
	w := newWatcher(&console{w: &out}, start, cnt)
	view := func(ms int, node uint64, id string, inc uint64, m []uint64, joined, crashed []uint64, flush int64) event {
		return event{Time: at(ms), Node: node, Event: logs.ViewInstalled, View: id, CoordInc: inc, Members: m,
			Joined: joined, Crashed: crashed, FlushMs: flush}
	}
	w.handle([]event{
		view(200, 3, "1.3", 30, []uint64{3}, []uint64{3}, nil, 0),
		view(230, 3, "2.3", 30, []uint64{3, 1, 2}, []uint64{1, 2}, nil, 4),
		view(231, 1, "2.3", 30, []uint64{3, 1, 2}, []uint64{3, 1, 2}, nil, 4),
	})
	// Node 2 has not installed 2.3 yet: the view waits for it.
	if strings.Contains(out.String(), "view 2.3") {
		t.Fatalf("view 2.3 printed before every member installed it:\n%s", out.String())
	}
	for range 5 { // delivered at the end of view 2.3, as the flush ordered them
		cnt.addFinal(1, "2.3")
	}
	crash := view(4160, 1, "3.1", 10, []uint64{1, 2}, nil, []uint64{3}, 2)
	crash.Prior = "2.3"
	w.handle([]event{
		view(232, 2, "2.3", 30, []uint64{3, 1, 2}, []uint64{3, 1, 2}, nil, 4),
		{Time: at(4150), Node: 2, Event: logs.MemberSuspected, Member: 3, SilentMs: 150},
		{Time: at(4151), Node: 1, Event: logs.MemberSuspected, Member: 3, SilentMs: 151},
		{Time: at(4152), Node: 1, Event: logs.ViewFlushStarted, Epoch: 3, Attempt: 1, Proposed: []uint64{1, 2}},
		crash,
		view(4161, 2, "3.1", 10, []uint64{1, 2}, nil, []uint64{3}, 2),
		{Time: at(4500), Node: 3, Event: logs.NodeStarted, Inc: 31},
		{Time: at(4510), Node: 3, Event: logs.StreamSkipped, Level: "warn", Peer: 2, FromSeq: 1, Count: 100},
		view(4520, 1, "4.1", 10, []uint64{1, 2, 3}, []uint64{3}, nil, 1),
		view(4520, 2, "4.1", 10, []uint64{1, 2, 3}, []uint64{3}, nil, 1),
		view(4521, 3, "4.1", 10, []uint64{1, 2, 3}, []uint64{1, 2, 3}, nil, 1),
		{Time: at(4600), Node: 2, Event: logs.PeerLagging, Level: "warn", Message: "a live peer is slow"},
		{Time: at(4700), Node: 3, Event: logs.OrderTaken, View: "4.1", By: 1, GSeq: 65},
	})
	want := `   0.20s  view 1.3 [3]: node 3 alone, for now
          node 3 coordinates the group and sequences total order
   0.23s  view 2.3 [3 1 2]: nodes 1 and 2 joined; flush 4 ms; installed by all 3
   4.15s  node 2 suspects node 3: silent for 150 ms
   4.15s  node 1 starts a view change, proposing [1 2]
   4.16s  view 3.1 [1 2]: node 3 crashed; flush 2 ms; installed by both
          node 1 takes over as coordinator and total-order sequencer
          the flush ordered 5 total/safe messages of view 2.3 that had no order record yet
   4.51s  node 3 passes over messages 1-100 of node 2: sent before it joined
   4.52s  view 4.1 [1 2 3]: node 3 joined; flush 1 ms; installed by all 3
   4.60s  node 2: a live peer is slow (peer.lagging)
   4.70s  node 3 sends alone: node 1 hands it total order's sequencing (from number 65 of view 4.1)
`
	if got := out.String(); got != want {
		t.Errorf("console:\n%s\nwant:\n%s", got, want)
	}
	if v := w.current([]uint64{1, 2, 3}); v == nil || v.ID != "4.1" {
		t.Errorf("current view %+v, want 4.1", v)
	}
}

func TestValidate(t *testing.T) {
	for _, o := range []Options{{Nodes: 1}, {Nodes: 17}, {Loss: -0.1}, {Loss: 0.5}, {Duration: time.Second}, {Duration: time.Hour}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if err := (&Options{Nodes: 3, Loss: 0.1, Duration: 5 * time.Second}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestInProcess runs the whole demo with its nodes in this process (the
// fallback where no virtual LAN can be built): the checks pass, and the
// coordinator is excluded after its crash and taken back after its
// restart.
func TestInProcess(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	s, err := Run(context.Background(), Options{Nodes: 3, Loss: 0.05, Duration: 5 * time.Second, InProcess: true, LogDir: dir, Out: &out})
	t.Logf("console:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, s, out.String(), 3)
	if s.Mode != "in-process" || !strings.Contains(s.Fallback, "--in-process") {
		t.Errorf("mode %q, fallback %q; want in-process, asked for", s.Mode, s.Fallback)
	}
	if s.LogDir != dir {
		t.Errorf("logs in %q, want %q", s.LogDir, dir)
	}
}

// TestInProcessInterrupted: a cancelled context stops the nodes at once,
// and Run says so.
func TestInProcessInterrupted(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	begin := time.Now()
	s, err := Run(ctx, Options{Nodes: 3, Duration: 20 * time.Second, InProcess: true, LogDir: t.TempDir(), Out: &out})
	if !errors.Is(err, ErrInterrupted) || s == nil || s.OK || !s.Interrupted {
		t.Fatalf("Run: %v, summary %+v; want ErrInterrupted and a summary", err, s)
	}
	if took := time.Since(begin); took > 8*time.Second {
		t.Errorf("took %v after an interrupt at 1.5s", took)
	}
	if !strings.Contains(out.String(), "INTERRUPTED") {
		t.Errorf("console does not say INTERRUPTED:\n%s", out.String())
	}
}

// checkSummary checks what every complete demo run must show.
func checkSummary(t *testing.T, s *Summary, out string, nodes int) {
	t.Helper()
	if !s.OK {
		t.Errorf("summary not OK: %+v", s.Checks)
	}
	for _, c := range s.Checks {
		if c.Name != "order" && !c.Passed {
			t.Errorf("check %s: passed %v, skipped %q: %s", c.Name, c.Passed, c.Skipped, c.Detail)
		}
	}
	if s.Killed == 0 || s.ExcludedView == "" || s.RejoinView == "" {
		t.Errorf("killed node %d, excluded in view %q, back in view %q: want all three", s.Killed, s.ExcludedView, s.RejoinView)
	}
	if len(s.Nodes) != nodes {
		t.Errorf("%d nodes in the summary, want %d", len(s.Nodes), nodes)
	}
	for _, n := range s.Nodes {
		want := 1
		if n.ID == s.Killed {
			want = 2
		}
		if n.Lives != want {
			t.Errorf("node %d: %d lives, want %d", n.ID, n.Lives, want)
		}
	}
	for _, frag := range []string{"ok    membership", "ok    liveness", "ok    scenario", "crashed", "joined", "PASS"} {
		if !strings.Contains(out, frag) {
			t.Errorf("console lacks %q", frag)
		}
	}
}

// TestConsoleLive: on a terminal the progress line stays at the bottom:
// each line printed erases it first and draws it again after; without
// live, status writes nothing.
func TestConsoleLive(t *testing.T) {
	var b bytes.Buffer
	c := &console{w: &b, live: true}
	c.status("12.0s │ view 3.1")
	c.at(time.Second, plain, "node 1 suspects node 2")
	c.status("")
	want := "12.0s │ view 3.1" + clearLine + "   1.00s  node 1 suspects node 2\n12.0s │ view 3.1" + clearLine
	if b.String() != want {
		t.Errorf("live console wrote %q\nwant %q", b.String(), want)
	}
	b.Reset()
	c = &console{w: &b}
	c.status("anything")
	c.say(plain, "a line")
	if b.String() != "a line\n" {
		t.Errorf("plain console wrote %q", b.String())
	}
}

// TestPlanRefuses: a lab plan's mistakes are refused before anything runs,
// naming what is wrong.
func TestPlanRefuses(t *testing.T) {
	for _, tc := range []struct {
		p    Plan
		in   bool
		want string
	}{
		{Plan{Actions: []Action{{At: time.Second, Do: "explode"}}}, false, `do "explode"`},
		{Plan{Actions: []Action{{At: time.Second, Do: DoKill}}}, false, "name the nodes"},
		{Plan{Actions: []Action{{At: time.Second, Do: DoPartition, Nodes: []uint64{1, 2, 3}}}}, false, "one side holds every node"},
		{Plan{Actions: []Action{{At: 2 * time.Second, Do: DoHeal}, {At: time.Second, Do: DoHeal}}}, false, "not in time order"},
		{Plan{Actions: []Action{{At: time.Second, Do: DoStop, Nodes: []uint64{1}}}}, true, "need the nodes as processes"},
		{Plan{Actions: []Action{{At: time.Second, Do: DoCPU, CPU: 1}}}, false, "cpu at 1s: name the nodes"},
		{Plan{Actions: []Action{{At: time.Second, Do: DoCPU, Nodes: []uint64{1}, CPU: -1}}}, false, "want 0 (lift the hold)"},
		{Plan{Actions: []Action{{At: time.Second, Do: DoCPU, Nodes: []uint64{1}, CPU: 1}}}, true, "needs the nodes as processes"},
		{Plan{HostLoss: map[uint64]lan.LossModel{9: {}}}, false, "host 9"},
		{Plan{NodeArgs: map[uint64][]string{4: nil}}, false, "node 4"},
	} {
		o := Options{Nodes: 3, Duration: 10 * time.Second, Plan: &tc.p, InProcess: tc.in}
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.p, err, tc.want)
		}
	}
	if _, err := NodeConfig([]string{"--suspect-timeout", "soon"}); err == nil || !strings.Contains(err.Error(), "suspect-timeout") {
		t.Errorf("NodeConfig with a bad flag: %v", err)
	}
}
