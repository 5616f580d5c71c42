package lan_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/seal"
)

// writeKeys writes a key file holding keys, one per line, mode 0600.
func writeKeys(t *testing.T, path string, keys ...string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

func newKey(t *testing.T) (seal.Key, string) {
	t.Helper()
	k, text, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k, text
}

// TestSealedGroupOnTheLAN runs a group whose every datagram is sealed
// with a key file, on a virtual LAN at 2 % loss: it forms and delivers; a
// node with another key is refused (exit code 3, naming both
// fingerprints); the group rolls over to a new key through huddle key
// reload on every member without a view change; and the logs pass the
// checker (virtual synchrony, FIFO, integrity, total order).
func TestSealedGroupOnTheLAN(t *testing.T) {
	l := newLAN(t, keepLogs(t, lan.Options{Hosts: 4, Loss: 0.02}))
	bin := buildHuddle(t)
	dir := t.TempDir()
	keyFile, otherFile := filepath.Join(dir, "group.key"), filepath.Join(dir, "other.key")
	oldKey, oldText := newKey(t)
	newK, newText := newKey(t)
	other, otherText := newKey(t)
	writeKeys(t, keyFile, oldText)
	writeKeys(t, otherFile, otherText)
	ns := lan.NewNodes(l, lan.NodesOptions{Bin: bin, Addr: group, Sockets: true,
		Args: []string{"--profile", "local", "--loopback=false", "--trace-deliveries"}})
	for h := 1; h <= 3; h++ {
		if _, err := ns.Start(h, "--security-key-file", keyFile, "--send-rate", "100", "--send-size", "200", "--send-order", "total"); err != nil {
			t.Fatal(err)
		}
	}
	views, err := ns.WaitView([]int{1, 2, 3}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := views[1].ID

	// A node with another key is refused and stops with exit code 3.
	stranger, err := ns.Start(4, "--security-key-file", otherFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.Proc.WaitTimeout(10 * time.Second); stranger.Proc.ExitCode() != 3 {
		t.Fatalf("the node with another key: %v, exit code %d; want 3\n%s", err, stranger.Proc.ExitCode(), stranger.Proc.Output(4000))
	}
	out := stranger.Proc.Output(4000)
	if !strings.Contains(out, "key fingerprint mismatch") || !strings.Contains(out, other.Fingerprint()) || !strings.Contains(out, oldKey.Fingerprint()) {
		t.Fatalf("the refusal does not name both fingerprints (%s, %s):\n%s", oldKey.Fingerprint(), other.Fingerprint(), out)
	}

	// The rollover: add the new key second, then first, then alone.
	reload := func(want ...string) {
		t.Helper()
		for h := 1; h <= 3; h++ {
			res, err := control.Call(context.Background(), ns.Node(h).Socket, 5*time.Second, "key", control.KeyArgs{Reload: true})
			if err != nil {
				t.Fatalf("node %d: key reload: %v", h, err)
			}
			var r control.KeyResult
			if err := json.Unmarshal(res, &r); err != nil || !slices.Equal(r.Fingerprints, want) {
				t.Fatalf("node %d after the reload: %s (%v), want %v", h, res, err, want)
			}
		}
		time.Sleep(500 * time.Millisecond) // traffic under these keys
	}
	writeKeys(t, keyFile, oldText, newText)
	reload(oldKey.Fingerprint(), newK.Fingerprint())
	writeKeys(t, keyFile, newText, oldText)
	reload(newK.Fingerprint(), oldKey.Fingerprint())
	writeKeys(t, keyFile, newText)
	reload(newK.Fingerprint())
	for h := 1; h <= 3; h++ {
		if v := ns.Node(h).Views(); v[len(v)-1].ID != first {
			t.Fatalf("node %d changed views during the rollover: %v", h, v[len(v)-1])
		}
	}
	if err := ns.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	r, err := logcheck.Load(ns.Node(1).Log, ns.Node(2).Log, ns.Node(3).Log)
	if err != nil {
		t.Fatal(err)
	}
	o := logcheck.MembershipOptions{SelfDelivery: true}
	for _, res := range []*logcheck.Result{r.CheckMembership(o), r.CheckOrder(o)} {
		t.Log(res)
		if !res.OK() {
			t.Fatalf("%v", res)
		}
	}
	for _, life := range r.Lives {
		st, _ := life.LastStats()
		t.Logf("%s: %s", life, statsLine(st, "replays", "seal_failed", "unknown_key", "cleartext_dropped", "seal_mismatch"))
		if st.Get("replays") != 0 || st.Get("seal_failed") != 0 || st.Get("unknown_key") == 0 {
			t.Errorf("%s: replays %d, seal_failed %d, unknown_key %d (want the stranger's datagrams counted, nothing else)",
				life, st.Get("replays"), st.Get("seal_failed"), st.Get("unknown_key"))
		}
	}
}
