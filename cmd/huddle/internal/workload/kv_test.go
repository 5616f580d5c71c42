package workload_test

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/workload"
	"github.com/huddle-lan/huddle/config"
)

// TestKVFill: with kv.fill the store starts with every key, the same on
// every node, its snapshot the size config.KV.FilledSize says, and a
// snapshot restores into an empty store as the same state; without it
// the store starts empty.
func TestKVFill(t *testing.T) {
	cfg := config.LAN()
	cfg.KV = config.KV{Keys: 300, Size: 1024, Fill: true}
	snap := func(cfg config.Config, id uint64) []byte {
		cfg.ID = id
		var b bytes.Buffer
		if err := workload.NewKV(cfg, zerolog.Nop()).Snapshot(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := snap(cfg, 1), snap(cfg, 2)
	if !bytes.Equal(a, b) {
		t.Error("two nodes' filled stores differ")
	}
	if int64(len(a)) != cfg.KV.FilledSize() {
		t.Errorf("the filled snapshot has %d bytes, FilledSize says %d", len(a), cfg.KV.FilledSize())
	}
	// No two values alike: the first 16 bytes of each differ.
	seen := map[string]bool{}
	for k := range 300 {
		off := 8 + k*(8+2+1024) + 10
		v := string(a[off : off+16])
		if seen[v] {
			t.Fatalf("key %d's value repeats another's", k)
		}
		seen[v] = true
	}
	empty := cfg
	empty.KV.Fill = false
	s := workload.NewKV(empty, zerolog.Nop())
	var e bytes.Buffer
	s.Snapshot(&e)
	if e.Len() != 8 {
		t.Errorf("without kv.fill the store's snapshot has %d bytes, want 8 (no keys)", e.Len())
	}
	if err := s.Restore(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	e.Reset()
	s.Snapshot(&e)
	if !bytes.Equal(e.Bytes(), a) {
		t.Error("a filled snapshot restored into an empty store is not the same state")
	}
}
