package vm_test

import (
	"os"
	"testing"

	"github.com/huddle-lan/huddle/internal/testutil"
)

// TestMain: the emulated CPU needs a core of its own, so the VM's tests
// do not run beside the LAN's or the simulator's heaviest package
// (testutil.Exclusive).
func TestMain(m *testing.M) {
	testutil.Exclusive()
	os.Exit(m.Run())
}
