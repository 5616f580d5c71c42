package lan_test

// Helpers for the tests that run the real node with a workload and check
// its logs with logcheck.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// keepLogs sets opts.LogDir to a directory under $LAB_KEEP_LOGS, when set,
// so that the node logs of a run survive it for a closer look.
func keepLogs(t *testing.T, opts lan.Options) lan.Options {
	if dir := os.Getenv("LAB_KEEP_LOGS"); dir != "" {
		opts.LogDir = filepath.Join(dir, fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()))
		t.Logf("keeping the logs in %s", opts.LogDir)
	}
	return opts
}

// startNode starts huddle on host (node ID = host number) with the local
// profile, a JSON log in nodeLog(l, host), and extra flags, through the
// lab's runner.
func startNode(t *testing.T, l *lan.LAN, bin string, host int, extra ...string) *lan.Proc {
	t.Helper()
	nodes := lan.NewNodes(l, lan.NodesOptions{Bin: bin, Addr: group, Args: []string{"--profile", "local", "--loopback=false"}})
	n, err := nodes.Start(host, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return n.Proc
}

// countEvents counts the lines of the log at path holding event name,
// without parsing them (cheap enough to poll a log of 100k lines).
func countEvents(path, name string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, logs.Tag(name))
}

// waitUntil polls cond every 50ms until it holds or timeout passes; it
// fails the test, naming what, if a process of procs exits meanwhile or the
// time runs out.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool, procs ...*lan.Proc) time.Duration {
	t.Helper()
	took, err := poll(timeout, cond, procs...)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return took
}

// poll polls cond every 50ms until it holds; it fails if a process of
// procs exits meanwhile or timeout passes.
func poll(timeout time.Duration, cond func() bool, procs ...*lan.Proc) (time.Duration, error) {
	start := time.Now()
	for end := start.Add(timeout); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return time.Since(start), nil
		}
		for _, p := range procs {
			if p.Exited() {
				return 0, fmt.Errorf("%s exited (code %d) while waiting", p.Name, p.ExitCode())
			}
		}
	}
	return 0, fmt.Errorf("not within %v", timeout)
}

// stopNodes sends SIGTERM to procs and wants each to exit 0 within 10s.
// One that hangs gets SIGQUIT, so that the Go runtime writes its
// goroutines' stacks to its stderr, which the failure quotes.
func stopNodes(t *testing.T, procs ...*lan.Proc) {
	t.Helper()
	for _, p := range procs {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM %s: %v", p.Name, err)
		}
	}
	for _, p := range procs {
		err := p.WaitTimeout(10 * time.Second)
		if err == nil {
			continue
		}
		if !p.Exited() {
			p.Signal(syscall.SIGQUIT)
			p.WaitTimeout(3 * time.Second)
		}
		t.Errorf("%s did not stop cleanly on SIGTERM: %v; its stderr (stacks after SIGQUIT):\n%s", p.Name, err, tail(readLog(t, p), 6000))
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// loadLogs reads the node logs of hosts.
func loadLogs(t *testing.T, l *lan.LAN, hosts ...int) *logcheck.Run {
	t.Helper()
	var paths []string
	for _, h := range hosts {
		paths = append(paths, nodeLog(l, h))
	}
	r, err := logcheck.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// onlyLife returns node's single life in r.
func onlyLife(t *testing.T, r *logcheck.Run, node uint64) *logcheck.Life {
	t.Helper()
	ls := r.Nodes(node)
	if len(ls) != 1 {
		t.Fatalf("node %d: %d lives in its log, want 1", node, len(ls))
	}
	return ls[0]
}

// statsLine formats counters of a node.stats event for t.Log.
func statsLine(s logcheck.Stats, names ...string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", n, s.Get(n))
	}
	return b.String()
}

// huddlePID returns the PID of the huddle process p runs (lan.HuddlePID).
func huddlePID(t *testing.T, p *lan.Proc, bin string) int {
	t.Helper()
	pid, err := lan.HuddlePID(p, bin)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
