package vm_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/vm"
)

// TestScriptInVM runs the busybox sh script that $HUDDLE_VM_SCRIPT names
// in the VM, as root, with a static huddle at /bin/huddle, and leaves what
// the script wrote to /out in $HUDDLE_VM_OUT (default: a new directory it
// names). It is the way to run an experiment of one's own in the VM:
//
//	HUDDLE_VM_SCRIPT=exp.sh HUDDLE_VM_OUT=/tmp/exp go test -run '^TestScriptInVM$' -v ./cmd/huddle/internal/vm
//
// It skips when the variable is unset.
func TestScriptInVM(t *testing.T) {
	path := os.Getenv("HUDDLE_VM_SCRIPT")
	if path == "" {
		t.Skip("set HUDDLE_VM_SCRIPT to a script to run it in the VM (docs/experiments.md, \"netem in a VM\")")
	}
	script, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.Available(); err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("HUDDLE_VM_OUT")
	timeout := 5 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) - 10*time.Second
	}
	res, err := vm.Run(context.Background(), vm.Options{
		Script: string(script), Files: map[string]string{"/bin/huddle": staticHuddle(t)},
		OutDir: out, Timeout: timeout, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("booted in %v, %v in all; the script exited %d; its files in %s: %v",
		res.Boot.Round(time.Millisecond), res.Elapsed.Round(time.Millisecond), res.Status, res.OutDir, res.Files)
	t.Logf("its output:\n%s", res.Output)
	if res.Status != 0 {
		t.Errorf("the script exited %d", res.Status)
	}
}
