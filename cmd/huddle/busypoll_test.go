//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// TestLabBusyPoll runs three nodes with busy_poll on a virtual LAN, total
// order at the lab's rate, with loss: the run passes its checks; nodes 1
// and 2 took datagrams while they polled and were woken by their sends to
// poll; node 3, the sequencer (the highest ID coordinates), orders its own
// messages at once and neither polls nor wakes; the same run without
// busy_poll counts none of it.
func TestLabBusyPoll(t *testing.T) {
	testutil.NeedLAN(t, lan.Available())
	bin := buildHuddle(t)
	for _, poll := range []string{"2ms", "0s"} {
		dir := t.TempDir()
		code, out := runLab(t, bin, "--nodes", "3", "--duration", "5s", "--loss", "0.02", "--log-dir", dir,
			"--args", "--busy-poll "+poll)
		if code != exitOK {
			t.Errorf("busy_poll %s: exit code %d, want 0", poll, code)
		}
		wantLines(t, out, "--busy-poll "+poll, "ok    membership", "ok    order", "\nPASS")
		for id := 1; id <= 3; id++ {
			st, _ := lastStats(t, filepath.Join(dir, fmt.Sprintf("node%d.json", id)))
			t.Logf("busy_poll %s, node %d: %v", poll, id, st)
			if on := poll != "0s" && id != 3; on != (st["busy_polled"] > 0) || on != (st["busy_poll_wakes"] > 0) {
				t.Errorf("busy_poll %s: node %d polled %v batches of %v, woken %v times", poll, id, st["busy_polled"], st["datagrams_in"], st["busy_poll_wakes"])
			}
		}
	}
}
