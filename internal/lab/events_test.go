package lab_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/lab"
)

func TestReadEvents(t *testing.T) {
	log := `{"level":"info","node":18446744073709551615,"event":"peer.seen","peer":2,"time":"2025-01-02T03:04:05.123456789Z"}
not json
{"level":"info","node":"3","event":"node.stopped","reason":"signal","time":"2025-01-02T03:04:06Z"}
{"truncated":
`
	path := filepath.Join(t.TempDir(), "n.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, err := lab.ReadEvents(path)
	if err != nil || len(evs) != 2 {
		t.Fatalf("ReadEvents: %d events, %v", len(evs), err)
	}
	want := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)
	if e := evs[0]; e.Node != 1<<64-1 || e.Event != "peer.seen" || e.Level != "info" || !e.Time.Equal(want) {
		t.Errorf("first event %+v", e)
	}
	if peer, ok := evs[0].Uint("peer"); !ok || peer != 2 {
		t.Errorf("peer = %d, %v", peer, ok)
	}
	if r, _ := evs[1].Str("reason"); r != "signal" || evs[1].Node != 3 {
		t.Errorf("second event %+v", evs[1])
	}
	if _, ok := evs[1].Fields["time"]; ok {
		t.Error("Fields keeps time")
	}
	f, _ := os.Open(path)
	defer f.Close()
	if _, skipped, _ := lab.ParseEvents(f); skipped != 2 {
		t.Errorf("skipped %d lines, want 2", skipped)
	}
}
