package logcheck_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// at sets the time of w's next line to ms milliseconds after the logs'
// common start: every synthetic log shares one clock, as a LAN's
// namespaces do.
func (w *logw) at(ms int) *logw {
	w.t = newLog(0).t.Add(time.Duration(ms-1) * time.Millisecond)
	return w
}

// msAt is the time of a line written at(ms).
func msAt(ms int) time.Time { return newLog(0).t.Add(time.Duration(ms) * time.Millisecond) }

func (w *logw) req(ms int, clock uint64) *logw {
	return w.at(ms).line(logs.MutexRequested, fmt.Sprintf(`"clock":%d,"view":"1.3"`, clock))
}

func (w *logw) acq(ms int, clock uint64, waitMs float64, msgs int) *logw {
	return w.at(ms).line(logs.MutexAcquired, fmt.Sprintf(`"clock":%d,"view":"1.3","wait_ms":%g,"messages":%d`, clock, waitMs, msgs))
}

func (w *logw) rel(ms int, clock uint64, heldMs float64) *logw {
	return w.at(ms).line(logs.MutexReleased, fmt.Sprintf(`"clock":%d,"view":"1.3","held_ms":%g`, clock, heldMs))
}

// lost logs a mutex.released of a lock taken away, at level warn.
func (w *logw) lost(ms int, clock uint64, heldMs float64) *logw {
	w.t = msAt(ms)
	fmt.Fprintf(&w.b, `{"level":"warn","node":%d,"clock":%d,"view":"1.3","event":"mutex.released","held_ms":%g,"lost":true,"time":%q,"message":"m"}`+"\n",
		w.node, clock, heldMs, w.t.Format(time.RFC3339Nano))
	return w
}

func (w *logw) withdraw(ms int, clock uint64, waitMs float64) *logw {
	return w.at(ms).line(logs.MutexWithdrawn, fmt.Sprintf(`"clock":%d,"view":"1.3","wait_ms":%g`, clock, waitMs))
}

func (w *logw) deferred(ms int, clock, peer uint64) *logw {
	return w.at(ms).line(logs.MutexDeferred, fmt.Sprintf(`"clock":%d,"view":"1.3","peer":%d`, clock, peer))
}

// lockBase is the first 200ms of a clean run of three nodes that take
// turns: node 1 holds [12, 40] and [150, 180], node 2 [45, 80] and
// [185, 200], node 3 [85, 95] until the lock is taken away from it; node
// 3 withdraws a request. Cases add events from 210ms on, then finish.
func lockBase() (n1, n2, n3 *logw) {
	n1 = newLog(1).started(100).req(10, 1).acq(12, 1, 2, 4).rel(40, 1, 28).
		req(100, 4).acq(150, 4, 50, 4).rel(180, 4, 30)
	n2 = newLog(2).started(200).req(20, 2).acq(45, 2, 25, 4).rel(80, 2, 35).
		req(110, 5).deferred(120, 6, 3).acq(185, 5, 75, 4).rel(200, 5, 15)
	n3 = newLog(3).started(300).req(30, 3).acq(85, 3, 55, 4).lost(95, 3, 10).
		req(120, 6).withdraw(130, 6, 10)
	return n1, n2, n3
}

// finish ends node 3 with a request that is pending when its log ends
// (it is killed) at stop ms, when every other node of logs exits.
func finish(stop int, ws ...*logw) []*logw {
	for _, w := range ws {
		if w.node == 3 {
			w.req(stop-10, 20).at(stop).line(logs.NodeStats, `"why":"periodic"`)
			continue
		}
		w.at(stop).stopped()
	}
	return ws
}

// loadMutex reads the logs as files node<N>.json.
func loadMutex(t *testing.T, ws ...*logw) *logcheck.Run {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, w := range ws {
		p := filepath.Join(dir, fmt.Sprintf("node%d.json", w.node))
		if slices.ContainsFunc(ws[:i], func(o *logw) bool { return o.node == w.node }) {
			p = filepath.Join(dir, fmt.Sprintf("node%d-%d.json", w.node, i))
		}
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

// expectMutex wants exactly the violations of want in res, and its report
// to contain each of texts.
func expectMutex(t *testing.T, res *logcheck.MutexResult, want map[logcheck.Kind]int, texts ...string) {
	t.Helper()
	total := 0
	for k, n := range want {
		total += n
		if res.ByKind[k] != n {
			t.Errorf("%d %s violations, want %d", res.ByKind[k], k, n)
		}
	}
	if res.Total != total {
		t.Errorf("%d violations, want %d:\n%s", res.Total, total, res)
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
}

func TestCheckMutex(t *testing.T) {
	seq := func(n int) map[logcheck.Kind]int { return map[logcheck.Kind]int{logcheck.MutexSequence: n} }
	for _, tt := range []struct {
		name  string
		build func() []*logw
		o     logcheck.MutexOptions
		want  map[logcheck.Kind]int
		texts []string
		check func(t *testing.T, res *logcheck.MutexResult)
	}{
		{name: "clean", build: func() []*logw {
			n1, n2, n3 := lockBase()
			return finish(300, n1, n2, n3)
		}, texts: []string{"mutex: 3 lives, 7 requests, 5 entries (node 1: 2, node 2: 2, node 3: 1), 5 released (1 lost), 1 withdrawn, " +
			"1 pending at a death or exit; wait p50 50ms p99 75ms; compared 5 holds, 7 requests: ok"},
			check: func(t *testing.T, res *logcheck.MutexResult) {
				ms := func(ns ...int) []time.Duration {
					var ds []time.Duration
					for _, n := range ns {
						ds = append(ds, time.Duration(n)*time.Millisecond)
					}
					return ds
				}
				if !slices.Equal(res.Waits, ms(2, 50, 25, 75, 55)) || !slices.Equal(res.Holds, ms(28, 30, 35, 15, 10)) ||
					!slices.Equal(res.Messages, []int{4, 4, 4, 4, 4}) || res.Deferred != 1 || res.Lost != 1 || res.Ended != 1 {
					t.Errorf("figures %+v", res)
				}
				var got []string
				for _, iv := range res.Intervals {
					got = append(got, fmt.Sprintf("%d[%d,%d]%s", iv.Node, iv.Start.Sub(msAt(0)).Milliseconds(), iv.End.Sub(msAt(0)).Milliseconds(), iv.Ended))
				}
				want := []string{"1[12,40]released", "2[45,80]released", "3[85,95]lost", "1[150,180]released", "2[185,200]released"}
				if !slices.Equal(got, want) {
					t.Errorf("intervals %v, want %v", got, want)
				}
			}},
		{name: "overlap", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8).acq(212, 8, 2, 4).rel(240, 8, 28)
			n3.req(215, 9).acq(230, 9, 15, 4).rel(235, 9, 5)
			return finish(300, n1, n2, n3)
		}, want: map[logcheck.Kind]int{logcheck.MutexOverlap: 1},
			texts: []string{"mutex-overlap: node 3 acquired the lock (clock 9, view 1.3) at 03:04:05.230000, held until 03:04:05.235000 (released), " +
				"while node 2 held it (clock 8, view 1.3) from 03:04:05.212000 (node2.json:10) until 03:04:05.240000 (released): both held it for 5ms [node3.json:8]"},
			check: func(t *testing.T, res *logcheck.MutexResult) {
				v := res.Violations[0]
				if v.Node != 3 || v.Sender != 2 || v.Seq != 9 || len(res.Overlaps) != 1 || res.Overlaps[0].Length != 5*time.Millisecond ||
					res.Overlaps[0].A.Node != 2 || res.Overlaps[0].B.Node != 3 {
					t.Errorf("violation %+v, overlaps %+v", v, res.Overlaps)
				}
			}},
		{name: "overlap within the slack", o: logcheck.MutexOptions{Slack: 5 * time.Millisecond}, build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8).acq(212, 8, 2, 4).rel(240, 8, 28)
			n3.req(215, 9).acq(230, 9, 15, 4).rel(235, 9, 5)
			return finish(300, n1, n2, n3)
		}, texts: []string{"1 overlaps within the slack (longest 5ms)"}},
		{name: "overlap beyond the slack", o: logcheck.MutexOptions{Slack: 4 * time.Millisecond}, build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8).acq(212, 8, 2, 4).rel(240, 8, 28)
			n3.req(215, 9).acq(230, 9, 15, 4).rel(235, 9, 5)
			return finish(300, n1, n2, n3)
		}, want: map[logcheck.Kind]int{logcheck.MutexOverlap: 1}},
		{name: "release logged late, held_ms ends the hold", o: logcheck.MutexOptions{Slack: 4 * time.Millisecond, EndAtHeld: true}, build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8).acq(212, 8, 2, 4).rel(240, 8, 15) // released at 227, logged at 240
			n3.req(215, 9).acq(230, 9, 15, 4).rel(235, 9, 5)
			return finish(300, n1, n2, n3)
		}},
		{name: "three holders at once", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(205, 8).acq(210, 8, 5, 4).rel(250, 8, 40)
			n2.req(205, 9).acq(220, 9, 15, 4).rel(260, 9, 40)
			n3.req(205, 10).acq(230, 10, 25, 4).rel(240, 10, 10)
			return finish(300, n1, n2, n3)
		}, want: map[logcheck.Kind]int{logcheck.MutexOverlap: 3}, texts: []string{
			"node 2 acquired the lock (clock 9, view 1.3) at 03:04:05.220000", "while node 1 held it (clock 8, view 1.3)", "both held it for 30ms",
			"node 3 acquired the lock (clock 10, view 1.3) at 03:04:05.230000", "both held it for 10ms"}},
		{name: "killed holder, its death unknown", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n3.req(210, 8).acq(220, 8, 10, 4) // killed after this line
			n1.req(230, 9).acq(400, 9, 170, 4).rel(420, 9, 20)
			return append(finish(500, n1, n2), n3)
		}, check: func(t *testing.T, res *logcheck.MutexResult) {
			if iv := res.Intervals[len(res.Intervals)-2]; iv.Node != 3 || iv.Ended != "log end" || !iv.Open() || !iv.End.Equal(msAt(220)) {
				t.Errorf("node 3's hold %+v: want it open, ending at its last line", iv)
			}
		}},
		{name: "killed holder, its death known", o: logcheck.MutexOptions{Deaths: []logcheck.Death{{Node: 3, At: msAt(410)}}}, build: func() []*logw {
			n1, n2, n3 := lockBase()
			n3.req(210, 8).acq(220, 8, 10, 4)
			n1.req(230, 9).acq(400, 9, 170, 4).rel(420, 9, 20)
			return append(finish(500, n1, n2), n3)
		}, want: map[logcheck.Kind]int{logcheck.MutexOverlap: 1},
			texts: []string{"node 1 acquired the lock (clock 9, view 1.3) at 03:04:05.400000, held until 03:04:05.420000 (released), " +
				"while node 3 held it (clock 8, view 1.3) from 03:04:05.220000 (node3.json:8) until 03:04:05.410000 (death): both held it for 10ms [node1.json:9]"}},
		{name: "killed holder, no slack for its death", o: logcheck.MutexOptions{Slack: 50 * time.Millisecond, Deaths: []logcheck.Death{{Node: 3, At: msAt(410)}}},
			build: func() []*logw {
				n1, n2, n3 := lockBase()
				n3.req(210, 8).acq(220, 8, 10, 4)
				n1.req(230, 9).acq(400, 9, 170, 4).rel(420, 9, 20)
				return append(finish(500, n1, n2), n3)
			}, want: map[logcheck.Kind]int{logcheck.MutexOverlap: 1}, texts: []string{"(death): both held it for 10ms"}},
		{name: "holder exits holding, within the slack", o: logcheck.MutexOptions{Slack: 5 * time.Millisecond}, build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).acq(220, 8, 10, 4)
			n2.req(215, 9).acq(296, 9, 81, 4).rel(299, 9, 3)
			return finish(300, n1, n2, n3)
		}, texts: []string{"1 overlaps within the slack (longest 3ms)"}},
		{name: "holder exits holding", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).acq(220, 8, 10, 4)
			n2.req(215, 9).acq(290, 9, 75, 4).rel(295, 9, 5)
			return finish(300, n1, n2, n3) // node 1 holds it until its node.stopped at 301ms
		}, want: map[logcheck.Kind]int{logcheck.MutexOverlap: 1}, texts: []string{"until 03:04:05.301000 (exit): both held it for 5ms"}},
		{name: "acquired without a request", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.acq(210, 8, 1, 4).rel(220, 8, 10)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"mutex-sequence: node 1 logged mutex.acquired (clock 8) without a pending request: want mutex.requested first [node1.json:8]"}},
		{name: "acquired with another clock", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).acq(215, 9, 5, 4).rel(220, 9, 5)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.acquired (clock 9) for request clock 8 (line 8): want the request's clock"}},
		{name: "released with another clock", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).acq(215, 8, 5, 4).rel(220, 7, 5)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.released (clock 7) for the lock acquired with clock 8 (line 9): want the grant's clock"}},
		{name: "released without holding", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).rel(220, 8, 5)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.released (clock 8) without holding the lock: want mutex.acquired first"}},
		{name: "acquired twice", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).acq(212, 8, 2, 4).acq(214, 8, 4, 4).rel(220, 8, 8)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.acquired (clock 8) while holding it already (acquired at line 9)"}},
		{name: "request while holding", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).acq(215, 8, 5, 4).req(220, 9).acq(225, 9, 5, 4).rel(230, 9, 5)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.requested (clock 9) while holding the lock of request clock 8 (line 9): want a release first"}},
		{name: "request while pending", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).req(215, 9).acq(220, 9, 5, 4).rel(225, 9, 5)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.requested (clock 9) while request clock 8 (line 8) was pending"}},
		{name: "withdrawn without a request", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.withdraw(210, 8, 5)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.withdrawn (clock 8) without a pending request"}},
		{name: "withdrawn while holding", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 8).acq(215, 8, 5, 4).withdraw(220, 8, 10)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.withdrawn (clock 8) while holding the lock (acquired at line 9): want mutex.released"}},
		{name: "request clocks not increasing", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n1.req(210, 3).acq(215, 3, 5, 4).rel(220, 3, 5)
			return finish(300, n1, n2, n3)
		}, want: seq(1), texts: []string{"node 1 logged mutex.requested (clock 3) after a request with clock 4: want increasing clocks"}},
		{name: "pending at its node's exit", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8).at(15000).line(logs.NodeStats, `"why":"periodic"`)
			return finish(20000, n1, n2, n3)
		}, want: map[logcheck.Kind]int{logcheck.MutexPending: 1},
			texts: []string{"mutex-pending: node 2 requested the lock (clock 8, view 1.3) at 03:04:05.210000 and stopped at 03:04:25.001000 (node2.json:12) " +
				"with the request neither granted nor withdrawn: a node that leaves withdraws its request (mutex.withdrawn) first [node2.json:9]"}},
		{name: "pending at its node's exit, a moment after the request", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(19990, 8)
			return finish(20000, n1, n2, n3)
		}, want: map[logcheck.Kind]int{logcheck.MutexPending: 1}, texts: []string{"a node that leaves withdraws its request"}},
		{name: "pending while its node ran on, then its log ends", build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8).at(15000).line(logs.NodeStats, `"why":"periodic"`)
			return append(finish(20000, n1, n3), n2)
		}, want: map[logcheck.Kind]int{logcheck.MutexPending: 1}, texts: []string{"waited 14.79s, neither granted nor withdrawn, until its life ended (log end)"}},
		{name: "pending within MaxPending", o: logcheck.MutexOptions{MaxPending: 30 * time.Second}, build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8).at(15000).line(logs.NodeStats, `"why":"periodic"`)
			return append(finish(20000, n1, n3), n2)
		}, texts: []string{"2 pending at a death or exit"}},
		{name: "pending at its node's death", o: logcheck.MutexOptions{Deaths: []logcheck.Death{{Node: 2, At: msAt(5000)}}}, build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8)
			return append(finish(20000, n1, n3), n2)
		}, texts: []string{"2 pending at a death or exit"}},
		{name: "pending long before its node's death", o: logcheck.MutexOptions{Deaths: []logcheck.Death{{Node: 2, At: msAt(15000)}}}, build: func() []*logw {
			n1, n2, n3 := lockBase()
			n2.req(210, 8)
			return append(finish(20000, n1, n3), n2)
		}, want: map[logcheck.Kind]int{logcheck.MutexPending: 1}, texts: []string{"waited 14.79s, neither granted nor withdrawn, until its life ended (death)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := loadMutex(t, tt.build()...).CheckMutex(tt.o)
			expectMutex(t, res, tt.want, tt.texts...)
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

// A node killed holding the lock and restarted: its first life's hold
// ends at the death given for it, and its second life counts clocks
// afresh; events go to the life they were logged in.
func TestCheckMutexRestart(t *testing.T) {
	n1, n2, n3 := lockBase()
	n3.req(210, 8).acq(220, 8, 10, 4)                                      // killed at 230
	n1.req(225, 9).acq(240, 9, 15, 4).rel(260, 9, 20)                      // granted once node 3 is gone
	n3.at(299).line(logs.SocketRcvbufCapped, "")                           // the new process, before its node.started
	n3.at(300).started(301).req(310, 1).acq(320, 1, 10, 4).rel(330, 1, 10) // the new life starts its clock again
	ws := finish(400, n1, n2)
	n3.at(400).stopped()
	r := loadMutex(t, append(ws, n3)...)
	if ls := r.Nodes(3); len(ls) != 2 || len(ls[0].Locks) != 7 || len(ls[1].Locks) != 3 {
		t.Fatalf("node 3's lives %v, lock events %d and %d", ls, len(ls[0].Locks), len(ls[1].Locks))
	}
	deaths := []logcheck.Death{{Node: 3, At: msAt(230)}}
	res := r.CheckMutex(logcheck.MutexOptions{Deaths: deaths})
	expectMutex(t, res, nil, "8 entries (node 1: 3, node 2: 2, node 3: 3)")
	// Killed later, its hold overlaps node 1's: the report names the life.
	res = r.CheckMutex(logcheck.MutexOptions{Deaths: []logcheck.Death{{Node: 3, At: msAt(250)}}})
	expectMutex(t, res, map[logcheck.Kind]int{logcheck.MutexOverlap: 1},
		"while node 3 (inc 300) held it (clock 8, view 1.3) from 03:04:05.220000 (node3.json:8) until 03:04:05.250000 (death): both held it for 10ms [node1.json:9]")
}

// Lock events of a node logged before its node.started belong to its
// first life, as its other events do; a log read from any io.ReadSeeker.
func TestReadMutex(t *testing.T) {
	w := newLog(5).req(10, 1).acq(11, 1, 1, 0).at(12).started(500).rel(20, 1, 9).stopped()
	r := &logcheck.Run{}
	if err := r.Read("node5.json", strings.NewReader(w.b.String())); err != nil {
		t.Fatal(err)
	}
	if len(r.Lives) != 1 || len(r.Lives[0].Locks) != 3 {
		t.Fatalf("lives %v, lock events %v", r.Lives, r.Lives[0].Locks)
	}
	ev := r.Lives[0].Locks[1]
	if ev.Event != logs.MutexAcquired || ev.Clock != 1 || ev.View != "1.3" || ev.Wait != time.Millisecond || ev.Line != 2 || !ev.Time.Equal(msAt(11)) {
		t.Errorf("event %+v", ev)
	}
	expectMutex(t, r.CheckMutex(logcheck.MutexOptions{}), nil, "1 entries (node 5: 1)")
	if _, err := logcheck.Load(filepath.Join(t.TempDir(), "absent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(absent) = %v", err)
	}
}

func TestQuantile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for q, want := range map[float64]time.Duration{0: 1, 0.5: 3, 0.99: 5, 1: 5} {
		if got := logcheck.Quantile(ds, q); got != want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", ds, q, got, want)
		}
	}
	if !slices.Equal(ds, []time.Duration{5, 1, 4, 2, 3}) || logcheck.Quantile(nil, 0.5) != 0 {
		t.Errorf("Quantile changed its input, or is not 0 for none")
	}
}
