package lan_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/logs"
)

// TestHuddleThreeNodes runs the real node on three hosts and checks that
// each one sees the two others, and that all stop cleanly on SIGTERM.
func TestHuddleThreeNodes(t *testing.T) {
	l := newLAN(t, lan.Options{Hosts: 3})
	bin := buildHuddle(t)
	nodes := lan.NewNodes(l, lan.NodesOptions{Bin: bin, Addr: group, Args: []string{"--profile", "local"}})
	var procs []*lan.Proc
	for i := 1; i <= l.Hosts(); i++ {
		n, err := nodes.Start(i)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, n.Proc)
	}
	for i := 1; i <= l.Hosts(); i++ {
		waitPeers(t, l, i, procs[i-1], 10*time.Second, l.Hosts())
	}
	for _, p := range procs {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM %s: %v", p.Name, err)
		}
	}
	for i, p := range procs {
		if err := p.WaitTimeout(10 * time.Second); err != nil {
			t.Errorf("%s: %v\n%s", p.Name, err, readLog(t, p))
		}
		if !hasEvent(t, nodeLog(l, i+1), logs.NodeStopped) {
			t.Errorf("%s logged no node.stopped", p.Name)
		}
	}
	prefix := l.Prefix()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, prefix)
}

// buildHuddle builds cmd/huddle into a temporary directory, or returns
// $LAB_HUDDLE_BIN when set (lan.BuildHuddle).
func buildHuddle(t *testing.T) string {
	t.Helper()
	bin, err := lan.BuildHuddle(t.TempDir())
	if errors.Is(err, lan.ErrNoGo) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func nodeLog(l *lan.LAN, host int) string {
	return filepath.Join(l.LogDir(), fmt.Sprintf("node%d.json", host))
}

// waitPeers polls host's node log until it has peer.seen for every other
// host of the first n.
func waitPeers(t *testing.T, l *lan.LAN, host int, p *lan.Proc, timeout time.Duration, n int) {
	t.Helper()
	var seen map[uint64]bool
	for end := time.Now().Add(timeout); time.Now().Before(end) && !p.Exited(); time.Sleep(50 * time.Millisecond) {
		seen = map[uint64]bool{}
		evs, _ := logs.ReadFile(nodeLog(l, host))
		for _, ev := range evs {
			if peer, ok := ev.Uint(logs.PeerKey); ok && ev.Name == logs.PeerSeen {
				seen[peer] = true
			}
		}
		if all := allPeers(seen, host, n); all {
			return
		}
	}
	log, _ := os.ReadFile(nodeLog(l, host))
	t.Fatalf("node %d saw peers %v within %v (exited: %v); stderr:\n%s\nlog:\n%s",
		host, seen, timeout, p.Exited(), readLog(t, p), log)
}

func allPeers(seen map[uint64]bool, self, n int) bool {
	for i := 1; i <= n; i++ {
		if i != self && !seen[uint64(i)] {
			return false
		}
	}
	return true
}

func hasEvent(t *testing.T, path, name string) bool {
	t.Helper()
	evs, err := logs.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
	}
	for _, ev := range evs {
		if ev.Name == name {
			return true
		}
	}
	return false
}
