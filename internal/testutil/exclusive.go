package testutil

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Exclusive makes the test binary that calls it from TestMain wait until
// no other binary that calls it runs, and hold the machine until it
// exits (the lock goes with the process). `go test ./...` runs two test
// binaries at once on a machine of two cores; the emulated CPU of the
// netem VM (cmd/huddle/internal/vm), whose guest runs eight nodes and
// netem on one core, and the tests of real processes on a virtual LAN
// (cmd/huddle/internal/lan), whose timers are real, fail when the
// simulator's heaviest package (node) or each other takes the cores. A
// -short run does not wait: it runs neither the VM nor the long LAN
// tests; nor does a fuzzing run, whose workers are the same binary (they
// would wait for their coordinator's lock for ever), nor a child that a
// holder started. TestMain calls flag.Parse first.
func Exclusive() {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() || flagSet("test.fuzz") || flagSet("test.fuzzworker") || os.Getenv(heldEnv) != "" {
		return
	}
	lockExclusive(filepath.Join(os.TempDir(), "huddle-tests-exclusive.lock"))
	// A test that runs its own binary as a child (a helper, a test that
	// must fail) passes its environment on: the child runs under this
	// process's lock rather than waiting for it.
	os.Setenv(heldEnv, "1")
}

// heldEnv is set in the environment of a process that holds the lock.
const heldEnv = "HUDDLE_TEST_EXCLUSIVE_HELD"

// flagSet reports whether the test flag name is given a value other than
// its zero ("" or false).
func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != "" && f.Value.String() != "false"
}
