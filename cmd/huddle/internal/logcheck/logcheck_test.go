package logcheck_test

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// logw writes a synthetic node log in the node's format.
type logw struct {
	node uint64
	b    strings.Builder
	t    time.Time
}

func newLog(node uint64) *logw {
	return &logw{node: node, t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (w *logw) line(event, fields string) *logw {
	w.t = w.t.Add(time.Millisecond)
	if fields != "" {
		fields = "," + fields
	}
	fmt.Fprintf(&w.b, `{"level":"info","node":%d,"event":%q%s,"time":%q,"message":"m"}`+"\n",
		w.node, event, fields, w.t.Format(time.RFC3339Nano))
	return w
}

func (w *logw) started(inc uint64) *logw {
	return w.line(logs.NodeStarted, fmt.Sprintf(`"incarnation":%d,"group":"huddle"`, inc))
}

func (w *logw) seen(peer, inc uint64) *logw {
	return w.line(logs.PeerSeen, fmt.Sprintf(`"peer":%d,"incarnation":%d,"addr":"10.77.0.%d:7468","restarted":false`, peer, inc, peer))
}

// payload is what node sends as message seq (its content depends on both).
func payload(node, seq uint64) []byte { return []byte(fmt.Sprintf("message %d of node %d", seq, node)) }

func (w *logw) send(seqs ...uint64) *logw {
	for _, s := range seqs {
		p := payload(w.node, s)
		w.line(logs.Send, fmt.Sprintf(`"seq":%d,"len":%d,"crc":%d`, s, len(p), crc32.ChecksumIEEE(p)))
	}
	return w
}

func (w *logw) deliver(from uint64, seqs ...uint64) *logw {
	for _, s := range seqs {
		p := payload(from, s)
		w.line(logs.Deliver, fmt.Sprintf(`"from":%d,"seq":%d,"len":%d,"crc":%d`, from, s, len(p), crc32.ChecksumIEEE(p)))
	}
	return w
}

func (w *logw) stopped() *logw {
	w.line(logs.NodeStats, `"why":"exit","msgs_sent":3,"recovery_p99_us":1500,"peers":2`)
	return w.line(logs.NodeStopped, `"reason":"duration elapsed"`)
}

func seqs(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// load reads the logs as files node<N>.json.
func load(t *testing.T, logs ...*logw) *logcheck.Run {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, w := range logs {
		p := filepath.Join(dir, fmt.Sprintf("node%d.json", w.node))
		if err := os.WriteFile(p, []byte(w.b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	r, err := logcheck.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// threeNodes is a clean run: node 1 sends 1..n, nodes 2 and 3 deliver all.
func threeNodes(n uint64) (*logw, *logw, *logw) {
	s := newLog(1).started(100).seen(2, 200).seen(3, 300).send(seqs(1, n)...)
	r2 := newLog(2).started(200).seen(1, 100).seen(3, 300).deliver(1, seqs(1, n)...)
	r3 := newLog(3).started(300).seen(1, 100).seen(2, 200).deliver(1, seqs(1, n)...)
	return s, r2, r3
}

func TestCleanRun(t *testing.T) {
	s, r2, r3 := threeNodes(50)
	s.stopped()
	r := load(t, s, r2, r3)
	res := r.CheckMulticast(logcheck.Options{})
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if res.Sent != 50 || res.Delivered != 100 || res.Lives != 3 || len(res.Pairs) != 2 {
		t.Errorf("result %+v", res)
	}
	for _, p := range res.Pairs {
		if p.Sender != 1 || p.SenderInc != 100 || p.Sent != 50 || p.Delivered != 50 || p.Missing != 0 {
			t.Errorf("pair %+v", p)
		}
	}
	if got := res.String(); got != "multicast: 3 lives, 50 sent, 100 delivered: ok" {
		t.Errorf("String() = %q", got)
	}
	l := r.Nodes(1)[0]
	if st, ok := l.LastStats(); !ok || st.Why != "exit" || st.Get("recovery_p99_us") != 1500 || st.Get("peers") != 2 {
		t.Errorf("last stats %+v", st)
	}
	if l.StopReason != "duration elapsed" || l.Stopped.IsZero() || l.Inc != 100 || len(l.Sends) != 50 {
		t.Errorf("life %+v", l)
	}
}

// check runs CheckMulticast and wants exactly the violations of want (by
// kind, count), and the listed ones to contain each of texts.
func check(t *testing.T, r *logcheck.Run, o logcheck.Options, want map[logcheck.Kind]int, texts ...string) *logcheck.Result {
	t.Helper()
	return expect(t, r.CheckMulticast(o), want, texts...)
}

// expect wants exactly the violations of want in res, and its report to
// contain each of texts.
func expect(t *testing.T, res *logcheck.Result, want map[logcheck.Kind]int, texts ...string) *logcheck.Result {
	t.Helper()
	total := 0
	for k, n := range want {
		total += n
		if res.ByKind[k] != n {
			t.Errorf("%d %s violations, want %d", res.ByKind[k], k, n)
		}
	}
	if res.Total != total {
		t.Errorf("%d violations, want %d", res.Total, total)
	}
	err := res.Err()
	if (err != nil) != (total > 0) || err != nil && !errors.Is(err, logcheck.ErrViolations) {
		t.Errorf("Err() = %v", err)
	}
	for _, s := range texts {
		if !strings.Contains(res.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, res)
		}
	}
	return res
}

func TestFIFO(t *testing.T) {
	s, r2, r3 := threeNodes(0)
	s.send(seqs(1, 4)...)
	r2.deliver(1, 1, 3, 2, 4)
	r3.deliver(1, 1, 2, 3, 4)
	res := check(t, load(t, s, r2, r3), logcheck.Options{}, map[logcheck.Kind]int{logcheck.FIFO: 1},
		"fifo: node 2 delivered node 1 seq 2: delivered after seq 3", "[node2.json:6]")
	v := res.Violations[0]
	if v.Node != 2 || v.Sender != 1 || v.Seq != 2 || v.File != "node2.json" || v.Line != 6 {
		t.Errorf("violation %+v", v)
	}
}

func TestDuplicate(t *testing.T) {
	s, r2, r3 := threeNodes(3)
	r2.deliver(1, 3)
	r3.deliver(1, 2)
	check(t, load(t, s, r2, r3), logcheck.Options{}, map[logcheck.Kind]int{logcheck.Duplicate: 2},
		"duplicate: node 2 delivered node 1 seq 3: delivered again", "node 3 delivered node 1 seq 2")
}

func TestCorrupt(t *testing.T) {
	s, r2, r3 := threeNodes(2)
	s.send(3)
	p := payload(1, 3)
	r2.line(logs.Deliver, fmt.Sprintf(`"from":1,"seq":3,"len":%d,"crc":%d`, len(p), crc32.ChecksumIEEE(p)^1))
	r3.line(logs.Deliver, fmt.Sprintf(`"from":1,"seq":3,"len":%d,"crc":%d`, len(p)+1, crc32.ChecksumIEEE(p)))
	want := fmt.Sprintf("delivered len %d crc %#08x; sent len %d crc %#08x (node1.json:6)",
		len(p), crc32.ChecksumIEEE(p)^1, len(p), crc32.ChecksumIEEE(p))
	check(t, load(t, s, r2, r3), logcheck.Options{}, map[logcheck.Kind]int{logcheck.Corrupt: 2}, want)
}

func TestUnsent(t *testing.T) {
	s, r2, r3 := threeNodes(2)
	r2.deliver(1, 7)
	r3.deliver(9, 1)
	check(t, load(t, s, r2, r3), logcheck.Options{}, map[logcheck.Kind]int{logcheck.Unsent: 2},
		"node 2 delivered node 1 seq 7: never sent: node 1 logged 2 sends, none with this seq",
		"node 3 delivered node 9 seq 1: never sent: node 9 logged no send events")
}

func TestMissing(t *testing.T) {
	s := newLog(1).started(100).send(seqs(1, 6)...)
	r2 := newLog(2).started(200).seen(1, 100).deliver(1, 1, 2, 5)
	r3 := newLog(3).started(300).seen(1, 100).deliver(1, seqs(1, 6)...)
	res := check(t, load(t, s, r2, r3), logcheck.Options{}, map[logcheck.Kind]int{logcheck.Missing: 2},
		"missing: node 2 never delivered seqs 3..4 (2 messages) of node 1 (it delivered 3 of its 6 messages) [node2.json]",
		"node 2 never delivered seq 6 of node 1", "3 messages missing")
	v := res.Violations[0]
	if v.Seq != 3 || v.Last != 4 || v.Count != 2 || v.Node != 2 || v.Sender != 1 {
		t.Errorf("violation %+v", v)
	}
	if res.Missing != 3 {
		t.Errorf("Missing = %d", res.Missing)
	}
	// Node 2 alone as receiver; node 3 alone; safety only.
	r := load(t, s, r2, r3)
	check(t, r, logcheck.Options{Receivers: []uint64{2}}, map[logcheck.Kind]int{logcheck.Missing: 2})
	check(t, r, logcheck.Options{Receivers: []uint64{3}}, nil)
	check(t, r, logcheck.Options{Senders: []uint64{2, 3}}, nil)
	check(t, r, logcheck.Options{SafetyOnly: true}, nil)
}

func TestSkipped(t *testing.T) {
	s := newLog(1).started(100).send(seqs(1, 6)...)
	r2 := newLog(2).started(200).seen(1, 100).deliver(1, 1, 2).
		line(logs.StreamSkipped, `"peer":1,"incarnation":100,"from_seq":3,"count":2`).deliver(1, 5)
	r := load(t, s, r2)
	check(t, r, logcheck.Options{}, map[logcheck.Kind]int{logcheck.Missing: 2}, "seqs 3..4")
	res := check(t, r, logcheck.Options{AllowSkipped: true}, map[logcheck.Kind]int{logcheck.Missing: 1},
		"node 2 never delivered seq 6 of node 1", "2 skipped (allowed)")
	if p := res.Pairs[0]; p.Skipped != 2 || p.Missing != 1 || p.Delivered != 3 || p.Sent != 6 {
		t.Errorf("pair %+v", p)
	}
	// A skip of another incarnation of the sender excuses nothing.
	r2 = newLog(2).started(200).seen(1, 100).deliver(1, 1, 2).
		line(logs.StreamSkipped, `"peer":1,"incarnation":99,"from_seq":3,"count":4`).deliver(1, 5)
	check(t, load(t, s, r2), logcheck.Options{AllowSkipped: true}, map[logcheck.Kind]int{logcheck.Missing: 2})
}

func TestSendOrder(t *testing.T) {
	s := newLog(1).started(100).send(1, 2, 2, 3)
	r2 := newLog(2).started(200).deliver(1, 1, 2, 3)
	check(t, load(t, s, r2), logcheck.Options{}, map[logcheck.Kind]int{logcheck.SendOrder: 1},
		"send-order: node 1 sent seq 2 after seq 2: want increasing sequence numbers [node1.json:4]")
}

func TestCap(t *testing.T) {
	s := newLog(1).started(100).send(seqs(1, 100)...)
	r2 := newLog(2).started(200)
	for i := uint64(100); i >= 1; i-- {
		r2.deliver(1, i)
	}
	res := check(t, load(t, s, r2), logcheck.Options{}, map[logcheck.Kind]int{logcheck.FIFO: 99}, "... and 79 more")
	if len(res.Violations) != logcheck.DefaultMaxViolations {
		t.Errorf("%d violations listed", len(res.Violations))
	}
	res = check(t, load(t, s, r2), logcheck.Options{MaxViolations: 3}, map[logcheck.Kind]int{logcheck.FIFO: 99}, "... and 96 more")
	if len(res.Violations) != 3 {
		t.Errorf("%d violations listed", len(res.Violations))
	}
}

// A restarted sender starts again at seq 1: its receivers tell the two
// incarnations apart by the peer.seen they logged.
func TestRestart(t *testing.T) {
	s := newLog(1).started(100).send(1, 2, 3).stopped().started(150).send(1, 2)
	// Payloads of the second life differ: the node's message number restarts,
	// but make them distinguishable by changing the log directly.
	r2 := newLog(2).started(200).seen(1, 100).deliver(1, 1, 2, 3).seen(1, 150).deliver(1, 1, 2)
	r := load(t, s, r2)
	if n := len(r.Nodes(1)); n != 2 {
		t.Fatalf("node 1 has %d lives, want 2", n)
	}
	res := check(t, r, logcheck.Options{}, nil)
	if len(res.Pairs) != 2 || res.Pairs[0].SenderInc != 100 || res.Pairs[1].SenderInc != 150 || res.Pairs[1].Sent != 2 {
		t.Errorf("pairs %+v", res.Pairs)
	}
	// Without the second peer.seen, seqs 1 and 2 count as delivered twice by
	// the first incarnation, and the second is missing.
	r2 = newLog(2).started(200).seen(1, 100).deliver(1, 1, 2, 3).deliver(1, 1, 2)
	check(t, load(t, s, r2), logcheck.Options{}, map[logcheck.Kind]int{logcheck.Duplicate: 2, logcheck.Missing: 1},
		"node 2 never delivered seqs 1..2 (2 messages) of node 1 (inc 150)")
	// A receiver life that ended early must deliver everything too, unless
	// left out with Receivers.
	r2 = newLog(2).started(200).seen(1, 100).deliver(1, 1).started(250).seen(1, 100).deliver(1, 2, 3).seen(1, 150).deliver(1, 1, 2)
	check(t, load(t, s, r2), logcheck.Options{}, map[logcheck.Kind]int{logcheck.Missing: 3},
		"node 2 (inc 200) never delivered seqs 2..3 (2 messages) of node 1 (inc 100)",
		"node 2 (inc 250) never delivered seq 1 of node 1 (inc 100)")
}

func TestMalformedLines(t *testing.T) {
	s, r2, _ := threeNodes(3)
	s.b.WriteString("panic: something\n\ngoroutine 1 [running]:\n")
	r2.b.WriteString(`{"level":"info","node":2,"event":"deliver","from":1,"se`)
	r := load(t, s, r2)
	if f := r.Files[0]; f.Malformed != 2 || f.FirstMalformed != 7 || f.Lines != 8 {
		t.Errorf("file %+v", f)
	}
	if f := r.Files[1]; f.Malformed != 1 || f.Lines != 7 {
		t.Errorf("file %+v", f)
	}
	res := check(t, r, logcheck.Options{Receivers: []uint64{2}}, nil, "3 malformed lines")
	if res.Malformed != 3 {
		t.Errorf("Malformed = %d", res.Malformed)
	}
}

// Lines without a node.started (the head of a log lost) form a life of
// incarnation 0 that deliveries naming an incarnation still match.
func TestNoStarted(t *testing.T) {
	s := newLog(1).send(1, 2)
	r2 := newLog(2).started(200).seen(1, 100).deliver(1, 1, 2)
	check(t, load(t, s, r2), logcheck.Options{}, nil)
}

func TestViewsAndFields(t *testing.T) {
	w := newLog(4).started(400).
		line(logs.ViewInstalled, `"view":"3.1","members":[1,2,{"x":"]"}],"joined":[4]`).
		line(logs.Deliver, `"view":"3.1","from":1,"seq":1,"len":3,"crc":7,"from_incarnation":100`).
		line(logs.NodeStats, `"why":"periodic","unstable":12,"buffered":-1,"ratio":2.5,"ok":true,"s":"x"`)
	w.b.WriteString(`{"level":"info","node":"4","event":"peer.seen","peer":5,"incarnation":500,"msg":"a \"quoted\" \\ text"}` + "\n")
	r, err := logcheck.Load()
	if err != nil || len(r.Lives) != 0 {
		t.Fatal(r, err)
	}
	r = load(t, w)
	l := r.Lives[0]
	if len(l.Views) != 1 || l.Views[0].ID != "3.1" {
		t.Errorf("views %+v", l.Views)
	}
	if d := l.Delivers[0]; d.View != "3.1" || d.FromInc != 100 || d.CRC != 7 || d.Len != 3 {
		t.Errorf("deliver %+v", d)
	}
	st := l.Stats[0]
	if st.Get("unstable") != 12 || st.Get("buffered") != -1 || st.Get("ratio") != 2 || len(st.Counters) != 3 {
		t.Errorf("stats %+v", st)
	}
	if len(l.Peers) != 1 || l.Peers[0].Peer != 5 || l.Peers[0].Inc != 500 {
		t.Errorf("peers %+v", l.Peers)
	}
}

func TestLoadError(t *testing.T) {
	if _, err := logcheck.Load(filepath.Join(t.TempDir(), "absent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(absent) = %v", err)
	}
}

// TestLifeEndsAtItsLastLine: the socket warning a restarted node logs
// before its node.started does not stretch the killed life before it.
func TestLifeEndsAtItsLastLine(t *testing.T) {
	log := `{"level":"info","node":5,"event":"node.started","incarnation":1,"time":"2026-01-01T00:00:00Z"}
{"level":"info","node":5,"event":"view.installed","view":"1.5","coordinator_incarnation":1,"members":[5],"joined":[5],"left":[],"crashed":[],"time":"2026-01-01T00:00:01Z"}
{"level":"warn","node":5,"event":"socket.rcvbuf_capped","requested":8,"granted":4,"time":"2026-01-01T00:00:09Z"}
{"level":"info","node":5,"event":"node.started","incarnation":2,"time":"2026-01-01T00:00:09.1Z"}
`
	r := &logcheck.Run{}
	if err := r.Read("node5.json", strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	lives := r.Nodes(5)
	if len(lives) != 2 {
		t.Fatalf("%d lives, want 2", len(lives))
	}
	if want := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC); !lives[0].LastTime.Equal(want) {
		t.Errorf("the first life ends at %v, want %v (its last line before the restart's socket warning)", lives[0].LastTime, want)
	}
}
