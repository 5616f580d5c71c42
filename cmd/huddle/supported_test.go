package main

import (
	"runtime"
	"strings"
	"testing"
)

// On a system where the node does not run, huddle run and huddle demo say
// so in one line and exit 1; their help, huddle run --print-config and the
// other commands still work.
func TestNotSupported(t *testing.T) {
	if got := supported(); got != (runtime.GOOS == "linux") {
		t.Errorf("supported() = %v on %s", got, runtime.GOOS)
	}
	t.Cleanup(func() { nodeRuns = supported() })
	nodeRuns = false
	for _, args := range [][]string{{"run"}, {"run", "--id", "1"}, {"demo"}, {"demo", "--in-process"}} {
		code, stdout, stderr := runMain(t, args...)
		want := "huddle: huddle " + args[0] + " needs Linux (this is " + runtime.GOOS + "/" + runtime.GOARCH +
			"); the library packages build here, but the node does not run here yet\n"
		if code != exitFailure || stdout != "" || stderr != want {
			t.Errorf("huddle %s: exit %d, stdout %q, stderr %q; want %d and %q", strings.Join(args, " "), code, stdout, stderr, exitFailure, want)
		}
	}
	for _, args := range [][]string{{"run", "--help"}, {"demo", "--help"}, {"run", "--print-config", "--iface", "lo", "--id", "1"}, {"version"}, {"help"}} {
		if code, _, stderr := runMain(t, args...); strings.Contains(stderr, "needs Linux") {
			t.Errorf("huddle %s: exit %d, stderr %q; want it to work", strings.Join(args, " "), code, stderr)
		}
	}
}
