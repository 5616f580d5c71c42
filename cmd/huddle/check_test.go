//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCheckUsage: a bad command line is exit code 2 and says what is
// wanted; a log that cannot be read is exit code 1 and names it, and logs
// without a node's events say where a node's log is (standard error, the
// journal).
func TestCheckUsage(t *testing.T) {
	empty := t.TempDir()
	notLogs := filepath.Join(t.TempDir(), "node1.json")
	if err := os.WriteFile(notLogs, []byte("huddle: starting\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, exitUsage, "want the logs to check"},
		{[]string{"--skew", "-1s", "x.json"}, exitUsage, "--skew -1s: want a duration of 0 or more"},
		{[]string{"--bogus", "x.json"}, exitUsage, "huddle check: unknown flag --bogus (huddle check --help lists the flags)\n"},
		{[]string{"/nonexistent/node1.json"}, exitFailure, "/nonexistent/node1.json"},
		{[]string{empty}, exitFailure, "holds no *.json logs"},
		{[]string{"--help"}, exitOK, "Usage: huddle check"},
		{[]string{notLogs}, exitFailure, "(--log-file, or huddle run's standard error; from the journal: journalctl -u huddle -o cat > node1.json)"},
		{[]string{"--skew", "2", "x.json"}, exitUsage, "huddle check: --skew 2: 2 has no unit; write --skew 2ms"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"check"}, tc.args...), &stdout, &stderr)
		if out := stdout.String() + stderr.String(); code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("huddle check %v: exit code %d, want %d; output %q lacks %q", tc.args, code, tc.code, out, tc.out)
		}
	}
}

// checkDemoLogs runs huddle check on a passing demo's logs: every check
// holds (exit 0). Then it damages one delivery in a copy (another CRC than
// the sender's): the check fails (exit 1) and names the violation and the
// log line.
func checkDemoLogs(t *testing.T, bin, dir string) {
	t.Helper()
	out, code := runCheck(t, bin, dir)
	if code != exitOK {
		t.Fatalf("huddle check on the demo's logs: exit code %d, want 0:\n%s", code, out)
	}
	wantLines(t, out, "ok    membership", "ok    liveness", "ok    order", "ok    election", "ok    lock", "PASS")

	bad := t.TempDir()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	crc := regexp.MustCompile(`"crc":\d+`)
	damaged := ""
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if damaged == "" {
			lines := strings.Split(string(b), "\n")
			for i, l := range lines {
				if strings.Contains(l, `"event":"deliver"`) && crc.MatchString(l) {
					lines[i] = crc.ReplaceAllString(l, `"crc":1`)
					damaged = filepath.Base(p)
					break
				}
			}
			b = []byte(strings.Join(lines, "\n"))
		}
		if err := os.WriteFile(filepath.Join(bad, filepath.Base(p)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if damaged == "" {
		t.Fatalf("the demo's logs in %s hold no delivery to damage", dir)
	}
	out, code = runCheck(t, bin, bad)
	if code != exitFailure {
		t.Fatalf("huddle check on logs with a damaged delivery: exit code %d, want 1:\n%s", code, out)
	}
	wantLines(t, out, "FAIL  membership", "corrupt", damaged, "FAIL\n")
}

func runCheck(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"check"}, args...)...).CombinedOutput()
	t.Logf("huddle check %s:\n%s", strings.Join(args, " "), out)
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
