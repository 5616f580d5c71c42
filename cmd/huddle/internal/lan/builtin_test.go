package lan_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/logs"
)

// TestBuiltinLoss forces the nodes' built-in drop, the method of machines
// where the kernel cannot apply loss, so that it is tested everywhere.
func TestBuiltinLoss(t *testing.T) {
	l := newLAN(t, lan.Options{Hosts: 3, LossMethod: lan.MethodBuiltin})
	if m := l.LossMethod(); m != lan.MethodBuiltin {
		t.Fatalf("LossMethod() = %q, want builtin", m)
	}
	checkBuiltinLoss(t, l)
}

// checkBuiltinLoss runs three huddle nodes on a LAN whose loss method is
// the built-in drop: loss set while they run reaches node 2 (and only it)
// through its control socket, a third of what it receives is dropped and
// counted as injected_drops, and removing the loss stops the drops. A node
// started afterwards gets the loss in force at its start.
func checkBuiltinLoss(t *testing.T, l *lan.LAN) {
	t.Helper()
	bin := buildHuddle(t)
	dir := t.TempDir()
	sock := func(host int) string { return filepath.Join(dir, fmt.Sprintf("h%d.sock", host)) }
	var procs []*lan.Proc
	for host := 1; host <= 2; host++ {
		procs = append(procs, startNode(t, l, bin, host, "--control-socket", sock(host)))
	}
	for host := 1; host <= 2; host++ {
		waitPeers(t, l, host, procs[host-1], 10*time.Second, 2)
	}
	if err := l.SetLoss(2, 1.0/3); err != nil {
		t.Fatal(err)
	}
	if err := l.SetLoss(3, 0.5); err != nil { // no node there yet
		t.Fatal(err)
	}
	procs = append(procs, startNode(t, l, bin, 3)) // the LAN picks its socket
	waitPeers(t, l, 3, procs[2], 10*time.Second, 3)
	before := counters(t, sock(2))
	time.Sleep(2 * time.Second)
	after := counters(t, sock(2))
	in, drops := after["datagrams_in"]-before["datagrams_in"], after["injected_drops"]-before["injected_drops"]
	t.Logf("node 2 dropped %d of %d datagrams", drops, in)
	if in < 100 || float64(drops) < 0.2*float64(in) || float64(drops) > 0.47*float64(in) {
		t.Errorf("node 2 dropped %d of %d datagrams in 2 s, want about a third", drops, in)
	}
	if c := counters(t, sock(1)); c["injected_drops"] != 0 {
		t.Errorf("node 1, without loss, dropped %d datagrams", c["injected_drops"])
	}
	if err := l.SetLoss(2, 0); err != nil {
		t.Fatal(err)
	}
	before = counters(t, sock(2))
	time.Sleep(500 * time.Millisecond)
	if after := counters(t, sock(2)); after["injected_drops"] != before["injected_drops"] {
		t.Errorf("node 2 dropped %d datagrams after the loss was removed", after["injected_drops"]-before["injected_drops"])
	}
	log := nodeLog(l, 3)
	if n := countEvents(log, logs.NodeDrop); n == 0 {
		t.Errorf("node 3, started with loss in force, logged no node.drop")
	}
	stopNodes(t, procs...)
}

// controlCall calls cmd without arguments on the node at sock and decodes
// its result into v.
func controlCall(t *testing.T, sock, cmd string, v any) {
	t.Helper()
	res, err := control.Call(context.Background(), sock, 5*time.Second, cmd, nil)
	if err != nil {
		t.Fatalf("%s at %s: %v", cmd, sock, err)
	}
	if err := json.Unmarshal(res, v); err != nil {
		t.Fatal(err)
	}
}

// counters reads a node's counters through its control socket.
func counters(t *testing.T, sock string) map[string]uint64 {
	t.Helper()
	var st huddle.Status
	controlCall(t, sock, "status", &st)
	out := map[string]uint64{}
	for _, c := range st.Counters {
		var n uint64
		fmt.Sscan(fmt.Sprint(c.Value), &n)
		out[c.Name] = n
	}
	return out
}
