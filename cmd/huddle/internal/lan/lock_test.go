package lan_test

// Real-process tests of the Ricart–Agrawala lock (docs/design.md, "Mutual exclusion"):
// five nodes on a virtual LAN at 5 % loss take the lock in turns, and one
// holder is killed with SIGKILL in the middle of its hold. From the logs
// (every namespace shares the machine's clock) no two nodes held the lock
// at once, every request was granted or ended by its node's death or
// exit, and the lock went on working without the dead holder.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// The lock workload of every node: think a random 200–800 ms, then ask
// for the lock and hold it 300 ms. Five nodes then want it about 6 times
// a second (5 / (0.5 s + 0.3 s)) while it serves at most 3.3 holds a
// second: it is always contended, a queue of two or three waits behind
// every holder, and requests cross each other in flight, which is what
// Ricart–Agrawala's timestamp order has to settle. A 60 s run gives some
// 180 entries, and a kill lands in a hold whatever the moment.
const (
	lockThink = "200ms-800ms"
	lockHold  = 300 * time.Millisecond
)

// lockSlack forgives overlaps this short between a hold that ended by a
// release (or by its node's exit) and the next: a holder writes the
// replies its release sends before it logs mutex.released, and a node
// that leaves holding the lock logs its exit once the others installed a
// view without it; so the next holder may log mutex.acquired first. On an
// idle machine that lag is below 3 ms; CI runs other packages' tests at
// the same time. A double grant in these runs would last up to a hold
// (300 ms) or a suspect timeout (500 ms), and the killed holder's hold
// gets no slack at all.
const lockSlack = 20 * time.Millisecond

// TestLockOnTheLAN: five nodes run the think/hold workload at 5 % loss on
// every host; around the middle of the run a node is killed a third into
// a hold. The logs must show no two holds overlapping (the killed one
// lasting until the kill), every request granted or ended by its node's
// death or exit, entries on at least four nodes and on every survivor
// after the kill, and the membership guarantees. Without a quorum (the
// default) for 60 s, and with --mutex-quorum 5 (leased lock) for 30 s;
// the central server and the token ring (--mutex-algorithm) for 30 s each,
// where the kill frees the central server's lock with the view that drops
// the holder, and makes the next view regenerate the token. -short runs
// each for 20 s.
func TestLockOnTheLAN(t *testing.T) {
	for _, v := range []struct {
		name   string
		alg    string
		quorum int
		run    time.Duration
	}{
		{"default", "ra", 0, 60 * time.Second},
		{"quorum5", "ra", 5, 30 * time.Second},
		{"central", "central", 0, 30 * time.Second},
		{"token", "token", 0, 30 * time.Second},
	} {
		t.Run(v.name, func(t *testing.T) {
			run := v.run
			if testing.Short() {
				run = 20 * time.Second
			}
			runLockKill(t, v.alg, v.quorum, run)
		})
	}
}

func runLockKill(t *testing.T, alg string, quorum int, run time.Duration) {
	const loss = 0.05
	extra := []string{"--suspect-timeout", orderSuspect, "--lock-think", lockThink, "--lock-hold", lockHold.String(),
		"--duration", run.String(), "--mutex-algorithm", alg}
	if quorum > 0 {
		extra = append(extra, "--mutex-quorum", strconv.Itoa(quorum))
	}
	g := startGroup(t, lan.Options{Hosts: 5, Loss: loss}, append(extra, memberWorkload...)...)
	t.Logf("loss %.0f %% on every host's ingress, by %s; lock workload: think %s, hold %v, quorum %d; the nodes stop after %v",
		loss*100, g.l.LossMethod(), lockThink, lockHold, quorum, run)
	all := []int{1, 2, 3, 4, 5}
	g.waitViews("group formed", all, ids(all...))
	mid := g.start.Add(run / 2)
	waitUntil(t, "the middle of the run", run, func() bool { return time.Now().After(mid) }, g.live(all)...)

	victim, acquired, kill := g.killHolder(all)
	rest := slices.DeleteFunc(slices.Clone(all), func(h int) bool { return h == victim })
	t.Logf("killed node %d (SIGKILL) %v into its hold (acquired at %s)", victim, kill.Sub(acquired).Round(time.Millisecond), acquired.Format("15:04:05.000"))
	views := g.waitViews("after SIGKILL of the holder", rest, ids(rest...))
	g.installedAfter(fmt.Sprintf("SIGKILL of holder %d", victim), kill, views)

	g.waitDuration(rest, run)
	stop := g.start.Add(run) // no node stops earlier: each counts its duration from its own start
	g.checkTogether("before the kill", all, g.start, kill)
	g.checkTogether("after the kill", rest, kill, stop)
	r := g.check(true)
	g.wantDeliveries(r)
	checkLockRun(t, g, victim, kill, stop)
}

// killHolder watches the logs for the next mutex.acquired and SIGKILLs its
// node a third of a hold later. It returns the node, when it acquired the
// lock (its log's time) and when it was killed.
func (g *cluster) killHolder(hosts []int) (int, time.Time, time.Time) {
	g.t.Helper()
	w := newAcquiredWatch(g.l, hosts)
	var h int
	var at time.Time
	_, err := poll(viewTimeout, func() bool {
		for _, a := range w.next() {
			// Too late to land a third into this hold: wait for another.
			if time.Since(a.at) < lockHold/4 {
				h, at = a.host, a.at
				return true
			}
		}
		return false
	}, g.live(hosts)...)
	if err != nil {
		g.t.Fatalf("waiting for a node to acquire the lock: %v\n%s", err, g.lockTrail())
	}
	time.Sleep(time.Until(at.Add(lockHold / 3)))
	return h, at, g.kill(h)
}

// acquisition is a mutex.acquired line: its node's host and log time.
type acquisition struct {
	host int
	at   time.Time
}

// acquiredWatch follows the nodes' logs for mutex.acquired lines, reading
// only what each log gained since the last look: the logs hold every
// delivery, and a poll every 50 ms must not read megabytes.
type acquiredWatch struct {
	l      *lan.LAN
	hosts  []int
	offset map[int]int64
	part   map[int][]byte // a line still being written
}

// newAcquiredWatch starts watching at the logs' current ends.
func newAcquiredWatch(l *lan.LAN, hosts []int) *acquiredWatch {
	w := &acquiredWatch{l: l, hosts: hosts, offset: map[int]int64{}, part: map[int][]byte{}}
	for _, h := range hosts {
		if fi, err := os.Stat(nodeLog(l, h)); err == nil {
			w.offset[h] = fi.Size()
		}
	}
	return w
}

// next returns the acquisitions logged since the last call.
func (w *acquiredWatch) next() []acquisition {
	var out []acquisition
	for _, h := range w.hosts {
		buf := append(w.part[h], w.read(h)...)
		end := bytes.LastIndexByte(buf, '\n') + 1
		w.part[h] = slices.Clone(buf[end:])
		for _, line := range bytes.Split(buf[:end], []byte("\n")) {
			if !bytes.Contains(line, logs.Tag(logs.MutexAcquired)) {
				continue
			}
			if ev, ok := logs.Parse(line); ok && ev.Name == logs.MutexAcquired {
				out = append(out, acquisition{host: h, at: ev.Time})
			}
		}
	}
	return out
}

// read returns what host h's log gained since the last read.
func (w *acquiredWatch) read(h int) []byte {
	f, err := os.Open(nodeLog(w.l, h))
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(w.offset[h], io.SeekStart); err != nil {
		return nil
	}
	b, _ := io.ReadAll(f)
	w.offset[h] += int64(len(b))
	return b
}

// waitDuration waits for the nodes of hosts to stop by themselves once
// their --duration run is over, and wants each to exit 0.
func (g *cluster) waitDuration(hosts []int, run time.Duration) {
	g.t.Helper()
	limit := time.Until(g.start.Add(run)) + 15*time.Second
	for _, p := range g.live(hosts) {
		if err := p.WaitTimeout(limit); err != nil {
			g.t.Fatalf("%s did not stop by itself after %v: %v\n%s", p.Name, run, err, tail(readLog(g.t, p), 3000))
		}
	}
}

// checkLockRun checks the lock from every node's log, the killed node's
// hold ending at its death, and what the run is about: the lock served
// at least four nodes, and every survivor after the kill.
func checkLockRun(t *testing.T, g *cluster, victim int, kill, stop time.Time) {
	t.Helper()
	var paths []string
	for h := 1; h <= g.l.Hosts(); h++ {
		paths = append(paths, nodeLog(g.l, h))
	}
	r, err := logcheck.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	res := r.CheckMutex(logcheck.MutexOptions{Deaths: []logcheck.Death{{Node: uint64(victim), At: kill}}, Slack: lockSlack})
	t.Log(res)
	if err := res.Err(); err != nil {
		t.Errorf("mutex check: %v\n%s", err, g.lockTrail())
	}
	if len(res.PerNode) < 4 {
		t.Errorf("entries on %d nodes %v: want at least 4", len(res.PerNode), res.PerNode)
	}
	var held *logcheck.Interval // the victim's last hold
	for i, iv := range res.Intervals {
		if iv.Node == uint64(victim) {
			held = &res.Intervals[i]
		}
	}
	if held == nil || held.Ended != "death" || !held.Start.Before(kill) {
		t.Fatalf("node %d: its last hold %+v: want one open at its death (SIGKILL at %s)", victim, held, kill.Format("15:04:05.000"))
	}
	after := map[uint64]int{} // entries after the kill, by node
	var next time.Time        // the first of them
	for _, iv := range res.Intervals {
		if iv.Node == uint64(victim) || !iv.Start.After(held.Start) {
			continue
		}
		if iv.Start.Before(held.End) {
			t.Errorf("node %d acquired the lock at %s, while killed node %d held it (from %s until its death at %s)",
				iv.Node, iv.Start.Format("15:04:05.000"), victim, held.Start.Format("15:04:05.000"), held.End.Format("15:04:05.000"))
		}
		after[iv.Node]++
		if next.IsZero() {
			next = iv.Start
		}
	}
	for h := 1; h <= g.l.Hosts(); h++ {
		if h != victim && after[uint64(h)] == 0 {
			t.Errorf("node %d: no entry after the kill of node %d: the lock stopped working for it (entries after the kill %v)", h, victim, after)
		}
	}
	t.Logf("lock: %d entries over %d nodes %v; %d after the kill, the first %v after it; %d requests; wait p50 %v p99 %v max %v; "+
		"hold p50 %v; messages per entry p50 %d; %d lost, %d withdrawn, %d pending at a death or exit; %d overlaps within %v (longest %v)",
		res.Entries, len(res.PerNode), res.PerNode, sum(after), durationOrNone(next.Sub(kill), !next.IsZero()), res.Requests,
		logcheck.Quantile(res.Waits, 0.5), logcheck.Quantile(res.Waits, 0.99), logcheck.Quantile(res.Waits, 1),
		logcheck.Quantile(res.Holds, 0.5), medianInt(res.Messages), res.Lost, res.Withdrawn, res.Ended, res.Forgiven, lockSlack, res.MaxForgiven)
}

func sum(m map[uint64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func medianInt(ns []int) int {
	if len(ns) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ns))
	return s[(len(s)-1)/2]
}

func durationOrNone(d time.Duration, ok bool) string {
	if !ok {
		return "none"
	}
	return d.Round(time.Millisecond).String()
}

// lockTrail returns the last lock and view events of each node, for a
// failure.
func (g *cluster) lockTrail() string {
	var b strings.Builder
	for h := 1; h <= g.l.Hosts(); h++ {
		raw, _ := os.ReadFile(nodeLog(g.l, h))
		var lines []string
		for _, line := range bytes.Split(raw, []byte("\n")) {
			switch ev, _ := logs.Parse(line); ev.Name {
			case logs.MutexRequested, logs.MutexAcquired, logs.MutexReleased, logs.MutexWithdrawn, logs.MutexDeferred,
				logs.ViewInstalled, logs.NodeStarted, logs.NodeStopped:
				lines = append(lines, string(line))
			}
		}
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(&b, "--- node %d (last %d lock and view events):\n%s\n", h, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}
