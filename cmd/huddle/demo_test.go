//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/testutil"
)

func TestDemoUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{[]string{"--help"}, exitOK, "-nodes number"},
		{[]string{"--nodes", "1"}, exitUsage, "--nodes 1: want 2 to 16"},
		{[]string{"--loss", "0.9"}, exitUsage, "--loss 0.9"},
		{[]string{"--duration", "1s"}, exitUsage, "--duration 1s"},
		{[]string{"--color", "purple"}, exitUsage, `--color "purple"`},
		{[]string{"now"}, exitUsage, `unexpected argument "now"`},
		{[]string{"--nodes", "x"}, exitUsage, "huddle demo: --nodes x: \"x\" is not a number\n  --nodes number: number of nodes, 2 to"},
		{[]string{"--duration", "30"}, exitUsage, "huddle demo: --duration 30: 30 has no unit; write --duration 30s (units: ns, us, ms, s, m, h)\n"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"demo"}, tc.args...), &stdout, &stderr)
		got := stderr.String()
		if tc.code == exitOK {
			got = stdout.String()
		}
		if code != tc.code || !strings.Contains(got, tc.out) {
			t.Errorf("huddle demo %v: exit %d, want %d with %q; stdout:\n%s\nstderr:\n%s",
				tc.args, code, tc.code, tc.out, stdout.String(), stderr.String())
		}
	}
}

// runDemo runs the huddle binary's demo with args and env (nil: this
// process's), and returns its exit code and output. Its logs are in
// demoLogs(t) afterwards.
func runDemo(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"demo", "--color", "never", "--log-dir", demoLogs(t)}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("huddle demo %s:\n%s", strings.Join(args, " "), out)
	if ctx.Err() != nil {
		t.Fatalf("the demo did not end within 60s")
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

var demoDirs sync.Map // of each test, its demo's log directory

// demoLogs returns the test's directory for a demo's logs.
func demoLogs(t *testing.T) string {
	d, _ := demoDirs.LoadOrStore(t.Name(), t.TempDir())
	return d.(string)
}

// wantLines fails for each fragment missing from out.
func wantLines(t *testing.T, out string, frags ...string) {
	t.Helper()
	for _, f := range frags {
		if !strings.Contains(out, f) {
			t.Errorf("the output lacks %q", f)
		}
	}
}

// The fragments of a complete, passing run: the checks, the crash of
// the coordinator and its return.
var demoPassed = []string{
	"ok    membership", "ok    liveness", "ok    scenario",
	"killed", "its first total-order sequencer", "crashed", "restarted with the same ID", "joined",
	"out of view", "back in view", "\nPASS",
}

// TestDemoOnAVirtualLAN runs `huddle demo` as a user would, with three
// nodes for 6 s: on a virtual LAN of network namespaces, it passes its
// checks, and its summary tells the crash and the rejoin.
func TestDemoOnAVirtualLAN(t *testing.T) {
	testutil.NeedLAN(t, lan.Available())
	bin := buildHuddle(t)
	code, out := runDemo(t, bin, nil, "--nodes", "3", "--duration", "6s", "--loss", "0.03")
	if code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
	wantLines(t, out, append(demoPassed, "network namespaces on a bridge", "killed (SIGKILL)")...)
}

// TestDemoUnicast runs the demo on the unicast transport, on a virtual
// LAN (the lab gives each node the others as its peers): it passes as
// over multicast, and every node sent by unicast to the two others. In
// this process, where the nodes share a simulated multicast network, the
// unicast transport is refused.
func TestDemoUnicast(t *testing.T) {
	testutil.NeedLAN(t, lan.Available())
	bin := buildHuddle(t)
	dir := t.TempDir()
	code, out := runDemo(t, bin, nil, "--nodes", "3", "--duration", "6s", "--loss", "0.03", "--transport", "unicast", "--log-dir", dir)
	if code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
	wantLines(t, out, append(demoPassed, "network namespaces on a bridge", "killed (SIGKILL)")...)
	for id := 1; id <= 3; id++ {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d.json", id)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `"unicast_dests":2`) {
			t.Errorf("node %d never logged node.stats with unicast_dests 2", id)
		}
	}
	if code, out := runDemo(t, bin, nil, "--in-process", "--transport", "unicast"); code != exitUsage || !strings.Contains(out, "needs a virtual LAN") {
		t.Errorf("--in-process --transport unicast: exit %d, want %d and why:\n%s", code, exitUsage, out)
	}
}

// TestDemoFallsBackInProcess runs the demo where no virtual LAN can be
// built (no ip, no unshare on the PATH nor in the system directories): it
// says why, runs the nodes in its own process, and passes all the same.
func TestDemoFallsBackInProcess(t *testing.T) {
	bin := buildHuddle(t)
	env := []string{"PATH=" + t.TempDir(), "HUDDLE_TEST_SYSTOOL_DIRS=none", "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	code, out := runDemo(t, bin, env, "--nodes", "3", "--duration", "5s")
	if code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
	wantLines(t, out, append(demoPassed, "simulated, in this process", "no virtual LAN here: ", "is not installed")...)
	checkDemoLogs(t, bin, demoLogs(t))
}
