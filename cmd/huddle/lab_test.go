//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/scenario"
	"github.com/huddle-lan/huddle/internal/testutil"
)

func TestLabUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("nodes = 3\nlos = 0.1\n"), 0o644)
	tests := []struct {
		args []string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{[]string{"--help"}, exitOK, "ring-voting"},
		{[]string{"--nodes", "1"}, exitUsage, "--nodes 1: want 2 to 32"},
		{[]string{"--nodes", "33"}, exitUsage, "--nodes 33: want 2 to 32"},
		{[]string{"--preset", "chess"}, exitUsage, `preset "chess": want one of ring-voting`},
		{[]string{"--fault", "10s:explode"}, exitUsage, `"explode": want one of kill`},
		{[]string{"--duration", "10s", "--fault", "12s:heal"}, exitUsage, "after the end of the run"},
		{[]string{"--args", "--suspect-timeout soon"}, exitUsage, "settings of node 1"},
		{[]string{"--node", "x:--send-rate 1"}, exitUsage, `--node "x:--send-rate 1": want ID:FLAGS`},
		{[]string{"--replay", t.TempDir(), "--nodes", "3"}, exitUsage, "--nodes: --replay runs the saved scenario as it was"},
		{[]string{"--replay", t.TempDir()}, exitUsage, "no scenario.toml"},
		{[]string{bad}, exitUsage, "los"},
		{[]string{bad, "--preset", "dist-sync"}, exitUsage, "not both"},
		{[]string{"--sweep", "loss"}, exitUsage, "want NAME=V1,V2"},
		{[]string{"--sweep", "warp=1,2"}, exitUsage, "nor of huddle run"},
		{[]string{"--in-process", "--fault", "2s:stop:1"}, exitUsage, "need the nodes as processes"},
		{[]string{"--color", "purple"}, exitUsage, `--color "purple"`},
		{[]string{"--vm", "--in-process"}, exitUsage, "--vm runs the nodes on a virtual LAN in a VM: not with --in-process"},
		{[]string{"--vm", "--nodes", "1"}, exitUsage, "--nodes 1: want 2 to 32"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"lab"}, tc.args...), &stdout, &stderr)
		got := stderr.String()
		if tc.code == exitOK {
			got = stdout.String()
		}
		if code != tc.code || !strings.Contains(got, tc.out) {
			t.Errorf("huddle lab %v: exit %d, want %d with %q; stdout:\n%s\nstderr:\n%s",
				tc.args, code, tc.code, tc.out, stdout.String(), stderr.String())
		}
	}
}

// runLab runs the huddle binary's lab with args and returns its exit code
// and output.
func runLab(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"lab", "--color", "never"}, args...)...).CombinedOutput()
	t.Logf("huddle lab %s:\n%s", strings.Join(args, " "), out)
	if ctx.Err() != nil {
		t.Fatalf("the lab did not end within 90s")
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// journal reads a run's lab.json.
func journal(t *testing.T, dir string) []lab.JournalLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, lab.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []lab.JournalLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l lab.JournalLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("lab.json: %v: %s", err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

// faults returns the kinds and errors of a journal's faults, in order.
func faults(t *testing.T, lines []lab.JournalLine) []string {
	var out []string
	for _, l := range lines {
		if l.Event == lab.JournalFault {
			if l.Error != "" {
				t.Errorf("fault %s (%s) failed: %s", l.Fault, l.Detail, l.Error)
			}
			out = append(out, l.Fault)
		}
	}
	return out
}

// TestLab runs huddle lab as a user would: a schedule of faults and
// requests on a virtual LAN (SIGSTOP and SIGCONT, a partition, a change
// of loss, a lock, an election) and in this process (a crash of the
// coordinator and its restart), a replay of the latter from its
// directory, and a sweep; every run passes its checks, and huddle check
// agrees on the logs.
func TestLab(t *testing.T) {
	bin := buildHuddle(t)
	t.Run("virtual LAN", func(t *testing.T) {
		testutil.NeedLAN(t, lan.Available())
		dir := t.TempDir()
		code, out := runLab(t, bin, "--nodes", "4", "--duration", "9s", "--loss", "0.02", "--log-dir", dir,
			"--fault", "2s:stop:4", "--fault", "3.5s:continue", "--fault", "4s:lock:2:300ms", "--fault", "4.5s:partition:1",
			"--fault", "6s:heal", "--fault", "6.5s:loss:3:0.1", "--fault", "7s:elect:coordinator")
		if code != exitOK {
			t.Errorf("exit code %d, want 0", code)
		}
		wantLines(t, out, "network namespaces on a bridge", "node 4 stopped (SIGSTOP)", "node 4 continued (SIGCONT)",
			"partition: [1] | [2 3 4]", "partition healed", "node 2 takes the lock", "ok    membership", "ok    lock", "\nPASS")
		got := strings.Join(faults(t, journal(t, dir)), " ")
		if got != "stop continue lock partition heal loss elect" {
			t.Errorf("lab.json faults %q", got)
		}
		if out, code := runCheck(t, bin, dir); code != exitOK {
			t.Errorf("huddle check: exit %d:\n%s", code, out)
		}
	})
	t.Run("in this process, and replayed", func(t *testing.T) {
		dir := t.TempDir()
		code, out := runLab(t, bin, "--in-process", "--nodes", "3", "--duration", "7s", "--seed", "5", "--log-dir", dir,
			"--args", "--send-order safe", "--fault", "2s:kill:coordinator", "--fault", "4s:restart", "--fault", "5s:lock:1:200ms")
		if code != exitOK {
			t.Errorf("exit code %d, want 0", code)
		}
		wantLines(t, out, "simulated, in this process", "killed", "restarted with the same ID", "takes the lock", "\nPASS",
			"huddle lab --replay "+dir)
		first := journal(t, dir)
		again := t.TempDir()
		code, out = runLab(t, bin, "--replay", dir, "--log-dir", again)
		if code != exitOK {
			t.Errorf("replay: exit code %d, want 0", code)
		}
		a, b := faults(t, first), faults(t, journal(t, again))
		if strings.Join(a, " ") != "kill restart lock" || strings.Join(a, " ") != strings.Join(b, " ") {
			t.Errorf("faults %v, replayed %v", a, b)
		}
		s1, _ := os.ReadFile(filepath.Join(dir, scenario.File))
		s2, _ := os.ReadFile(filepath.Join(again, scenario.File))
		if body := func(b []byte) string { _, rest, _ := strings.Cut(string(b), "\n\n"); return rest }; body(s1) != body(s2) {
			t.Errorf("the replay's scenario differs:\n%s\nwant\n%s", s2, s1)
		}
		if out, code := runCheck(t, bin, again); code != exitOK {
			t.Errorf("huddle check: exit %d:\n%s", code, out)
		}
	})
	t.Run("sweep", func(t *testing.T) {
		dir := t.TempDir()
		code, out := runLab(t, bin, "--in-process", "--nodes", "3", "--duration", "5s", "--log-dir", dir, "--sweep", "loss=0,0.05")
		if code != exitOK {
			t.Errorf("exit code %d, want 0", code)
		}
		wantLines(t, out, "sweep of loss, 1 run(s) per value", "sweep.csv")
		csv, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(strings.TrimSpace(string(csv)), "\n")
		if len(rows) != 3 || !strings.HasPrefix(rows[1], "0,1,PASS,") || !strings.HasPrefix(rows[2], "0.05,1,PASS,") {
			t.Errorf("sweep.csv:\n%s", csv)
		}
		for _, d := range []string{"loss=0/1", "loss=0.05/1"} {
			if _, err := os.Stat(filepath.Join(dir, d, "node1.json")); err != nil {
				t.Errorf("run %s: %v", d, err)
			}
		}
		var sw struct {
			Param string
			Runs  []scenario.SweepRun
		}
		b, _ := os.ReadFile(filepath.Join(dir, scenario.SweepFile))
		if err := json.Unmarshal(b, &sw); err != nil || sw.Param != "loss" || len(sw.Runs) != 2 || sw.Runs[1].Value != 0.05 {
			t.Errorf("sweep.json: %v\n%s", err, b)
		}
	})
}
