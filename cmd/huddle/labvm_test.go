//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/vm"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// TestLabInVM runs huddle lab --vm as a user would where the kernel has
// no netem: three nodes for 8 s, every host losing 5 % of what it
// receives in bursts of 3 and delaying it 2 ms ±1 ms, which only netem
// does. The lab runs in the VM (package vm); its output comes through,
// it passes its checks, and its logs come back to --log-dir: lab.json
// says the loss was netem's, and every node that shared a view with
// another found gaps and recovered them with no drop of its own
// (injected_drops 0: the kernel dropped). Under software emulation one
// CPU runs the three nodes, and a node whose loop is held up twice in a
// row is starved and taken into no view (node.health), as it should be;
// so at least two of the three must share a view, not all three.
func TestLabInVM(t *testing.T) {
	testutil.NeedVM(t, vm.Available())
	bin := buildHuddle(t)
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	code, out := runLab(t, bin, "--vm", "--nodes", "3", "--duration", "8s", "--loss", "0.05", "--burst", "3",
		"--delay", "2ms", "--jitter", "1ms", "--args", "--suspect-timeout 2s --join-timeout 2s", "--log-dir", dir)
	t.Logf("huddle lab --vm took %v", time.Since(start).Round(100*time.Millisecond))
	if code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
	wantLines(t, out, "huddle lab --vm: the lab runs in a VM", "package linux-image-amd64",
		"loss on the hosts' ingress by netem", "5% loss in bursts of 3, delay 2ms ±1ms",
		"ok    membership", "ok    liveness", "ok    order", "\nPASS  logs in "+dir, "huddle lab --replay "+dir, "vm: booted in")
	lines := journal(t, dir)
	if len(lines) < 2 || lines[0].Event != lab.JournalStart || !strings.Contains(lines[0].Network, "by netem") ||
		lines[len(lines)-1].Event != lab.JournalEnd || lines[len(lines)-1].OK == nil || !*lines[len(lines)-1].OK {
		t.Errorf("lab.json: %+v", lines)
	}
	shared := 0
	for id := 1; id <= 3; id++ {
		st, most := lastStats(t, filepath.Join(dir, fmt.Sprintf("node%d.json", id)))
		t.Logf("node %d: %v; at most %d members in its views", id, st, most)
		if st["injected_drops"] != 0 {
			t.Errorf("node %d dropped datagrams itself: %v", id, st)
		}
		if most < 2 {
			continue
		}
		shared++
		if st["gaps_detected"] == 0 || st["gaps_recovered"] == 0 || st["repairs_recv"] == 0 {
			t.Errorf("node %d's last node.stats: want gaps found and recovered and repairs received: %v", id, st)
		}
	}
	if shared < 2 {
		t.Errorf("%d nodes shared a view with another, want at least 2", shared)
	}
	if out, code := runCheck(t, bin, dir); code != exitOK {
		t.Errorf("huddle check: exit %d:\n%s", code, out)
	}
}

// lastStats returns the counters of a node log's last node.stats and the
// most members any view it installed had.
func lastStats(t *testing.T, path string) (map[string]float64, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last map[string]any
	most := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev["event"] {
		case "node.stats":
			last = ev
		case "view.installed":
			if m, ok := ev["members"].([]any); ok {
				most = max(most, len(m))
			}
		}
	}
	st := map[string]float64{}
	for _, k := range []string{"gaps_detected", "gaps_recovered", "repairs_recv", "injected_drops", "busy_polled", "busy_poll_wakes", "datagrams_in"} {
		st[k], _ = last[k].(float64)
	}
	return st, most
}

// TestLabDelayNeedsNetem: where the kernel has no netem, a lab run with
// a delay fails, naming --vm as the way to have one.
func TestLabDelayNeedsNetem(t *testing.T) {
	testutil.NeedLAN(t, lan.Available())
	bin := buildHuddle(t)
	code, out := runLab(t, bin, "--nodes", "2", "--duration", "5s", "--delay", "5ms", "--log-dir", t.TempDir())
	if code == exitOK {
		t.Skip("this kernel has netem: the lab delayed the datagrams itself")
	}
	wantLines(t, out, "delay and jitter need netem", "huddle lab --vm runs the lab in a VM whose kernel has netem")
}

// TestFalseSuspicions: the hint after a run in the VM counts the
// suspicions before the stop of nodes no fault killed or stopped.
func TestFalseSuspicions(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(s float64) string {
		return start.Add(time.Duration(s * float64(time.Second))).Format(time.RFC3339Nano)
	}
	susp := func(s float64, node, member int) string {
		return fmt.Sprintf(`{"level":"info","node":%d,"event":"member.suspected","member":%d,"silent_ms":300,"time":%q}`, node, member, at(s))
	}
	write := func(dir, name string, lines ...string) {
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	startLine := fmt.Sprintf(`{"time":%q,"event":"lab.start","duration":"10s"}`, at(0))
	root := t.TempDir()
	// Run a: node 3 killed; node 1 suspected by 2 at 4s (false), node 3
	// (killed), node 2 at 11s (after the stop).
	a := filepath.Join(root, "a")
	write(a, lab.JournalFile, startLine, fmt.Sprintf(`{"time":%q,"event":"lab.fault","fault":"kill","nodes":[3]}`, at(5)))
	write(a, "node2.json", susp(4, 2, 1), susp(6, 2, 3), susp(11, 2, 1))
	write(a, "node1.json", `{"event":"node.started"}`)
	// Run b: a partition: nothing counts.
	b := filepath.Join(root, "b")
	write(b, lab.JournalFile, startLine, fmt.Sprintf(`{"time":%q,"event":"lab.fault","fault":"partition","nodes":[1]}`, at(5)))
	write(b, "node2.json", susp(4, 2, 1))
	if n, ex := falseSuspicions(root); n != 1 || ex != "node 2 suspected node 1, silent for 300 ms" {
		t.Errorf("falseSuspicions: %d, %q; want 1", n, ex)
	}
}
