//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
)

// TestReportUsage: a bad command line is exit code 2 and says what is
// wanted; a directory without logs is exit code 1 and says what it
// lacks.
func TestReportUsage(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, exitUsage, "want the directory of a run or a sweep"},
		{[]string{"a", "b"}, exitUsage, `2 directories given ("a", "b"…): want one`},
		{[]string{"--bogus", "a"}, exitUsage, "huddle report: unknown flag --bogus (huddle report --help lists the flags)\n"},
		{[]string{"--out"}, exitUsage, "huddle report: --out needs a value (huddle report --help)\n"},
		{[]string{empty}, exitFailure, "no node logs (node<ID>.json)"},
		{[]string{"/nonexistent/run"}, exitFailure, "cannot read the run's directory"},
		{[]string{"--help"}, exitOK, "Usage: huddle report [--out FILE] DIR"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"report"}, tc.args...), &stdout, &stderr)
		if out := stdout.String() + stderr.String(); code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("huddle report %v: exit code %d, want %d; output %q lacks %q", tc.args, code, tc.code, out, tc.out)
		}
	}
}

// TestReportOfDemo runs the demo in this process (real nodes, real logs,
// no namespaces) and huddle report on its logs: the page is written
// where --out says, its figures are those of the logs (every node
// delivered, the killed coordinator's life has no node.stopped, the
// demo's lab.json gives the kill and the failover), and
// every plot is drawn.
func TestReportOfDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for 5 s (-short)")
	}
	dir := t.TempDir()
	s, err := lab.Run(context.Background(), lab.Options{InProcess: true, Duration: 5 * time.Second, Nodes: 3, LogDir: dir, Out: io.Discard})
	if err != nil || !s.OK {
		t.Fatalf("the demo: %v (passed: %v)", err, s != nil && s.OK)
	}
	out := filepath.Join(t.TempDir(), "demo.html")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"report", dir, "--out", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("huddle report: exit code %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != out {
		t.Errorf("huddle report printed %q, want the report's path %s", got, out)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, string(page), "<h2>Headline</h2>", "throughput at the slowest member", "kill the coordinator", "ms on average over 1 kill", "ring")
	if n := strings.Count(string(page), `<svg class="plot"`); n != 7 {
		t.Errorf("%d plots drawn, want 7 (a demo has deliveries, loss, elections and the lock)", n)
	}
	assets := filepath.Join(filepath.Dir(out), "demo")
	rows := readCSV(t, filepath.Join(assets, "deliveries.csv"))
	totals := make([]int, len(rows[0])-1)
	for _, row := range rows[1:] {
		for i, cell := range row[1:] {
			n, err := strconv.Atoi(cell)
			if err != nil {
				t.Fatalf("deliveries.csv: %q: %v", cell, err)
			}
			totals[i] += n
		}
	}
	for i, n := range totals {
		if n < 100 {
			t.Errorf("deliveries.csv: %s delivered %d messages in 5 s, want the workload's hundreds", rows[0][i+1], n)
		}
	}
	lat := readCSV(t, filepath.Join(assets, "latency.csv"))
	if len(lat) < 300 {
		t.Errorf("latency.csv: %d deliveries matched to their send, want hundreds", len(lat)-1)
	}
	// The demo kills the coordinator (node 1 of 3) and restarts it: a
	// life of it ends without node.stopped.
	killed := false
	for _, row := range readCSV(t, filepath.Join(assets, "timeline.csv"))[1:] {
		killed = killed || row[2] == "life" && row[5] == "killed or running"
	}
	if !killed {
		t.Error("timeline.csv: no life ended without node.stopped, yet the demo killed its coordinator")
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %v, %d rows", path, err, len(rows))
	}
	return rows
}
