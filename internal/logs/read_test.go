package logs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// A log read whole: lines that are not events are skipped and counted, a
// partly written last line among them; IDs may be numbers or strings.
func TestReadFile(t *testing.T) {
	log := `{"level":"info","node":18446744073709551615,"event":"peer.seen","peer":2,"time":"2025-01-02T03:04:05.123456789Z"}
not json

{"level":"info","node":"3","event":"node.stopped","reason":"signal","time":"2025-01-02T03:04:06Z"}
{"level":"info","node":3,"message":"no event"}
{"truncated":
`
	path := filepath.Join(t.TempDir(), "n.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, err := logs.ReadFile(path)
	if err != nil || len(evs) != 2 {
		t.Fatalf("ReadFile: %d events, %v", len(evs), err)
	}
	want := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)
	if e := evs[0]; e.Node != 1<<64-1 || e.Name != logs.PeerSeen || e.Level != logs.LevelInfo || !e.Time.Equal(want) || e.Line != 1 {
		t.Errorf("first event %+v", e)
	}
	if peer, ok := evs[0].Uint(logs.PeerKey); !ok || peer != 2 {
		t.Errorf("peer = %d, %v", peer, ok)
	}
	if r, _ := evs[1].Str(logs.ReasonKey); r != "signal" || evs[1].Node != 3 || evs[1].Line != 4 {
		t.Errorf("second event %+v", evs[1])
	}
	f, _ := os.Open(path)
	defer f.Close()
	if _, skipped, _ := logs.Read(f); skipped != 3 {
		t.Errorf("skipped %d lines, want 3", skipped)
	}
	s := logs.NewScanner(strings.NewReader(log))
	for s.Scan() {
	}
	if n, first := s.Skipped(); n != 3 || first != 2 || s.Lines() != 5 || s.Err() != nil {
		t.Errorf("scanner: %d lines, skipped %d from line %d, %v", s.Lines(), n, first, s.Err())
	}
	if _, err := logs.ReadFile(filepath.Join(t.TempDir(), "absent")); !os.IsNotExist(err) {
		t.Errorf("ReadFile(absent) = %v", err)
	}
}

func TestAccessors(t *testing.T) {
	line := `{"level":"warn","node":1,"event":"view.installed","view":"3.1","members":[1,"2", 3],"joined":[],` +
		`"left":null,"crashed":[1,-2],"flush_ms":12.5,"count":-3,"final":true,"lost":false,"x":{"a":[1]},` +
		`"msg":"a \"quoted\" \\ text","time":"not a time"}`
	ev, ok := logs.Parse([]byte(line))
	if !ok || ev.Name != logs.ViewInstalled || ev.Level != logs.LevelWarn || ev.Node != 1 || !ev.Time.IsZero() {
		t.Fatalf("Parse = %+v, %v", ev, ok)
	}
	if v, ok := ev.Str(logs.ViewKey); v != "3.1" || !ok {
		t.Errorf("view %q %v", v, ok)
	}
	if v, ok := ev.Str("msg"); v != `a "quoted" \ text` || !ok {
		t.Errorf("msg %q %v", v, ok)
	}
	if v, ok := ev.Uints(logs.MembersKey); !slices.Equal(v, []uint64{1, 2, 3}) || !ok {
		t.Errorf("members %v %v", v, ok)
	}
	for _, k := range []string{logs.JoinedKey, logs.LeftKey} {
		if v, ok := ev.Uints(k); v != nil || !ok {
			t.Errorf("%s %v %v, want an empty list", k, v, ok)
		}
	}
	for _, k := range []string{logs.CrashedKey, logs.ViewKey, "x", "absent"} {
		if v, ok := ev.Uints(k); v != nil || ok {
			t.Errorf("%s %v %v, want none", k, v, ok)
		}
	}
	if v, ok := ev.Float(logs.FlushMsKey); v != 12.5 || !ok {
		t.Errorf("flush_ms %v %v", v, ok)
	}
	if v, ok := ev.Int(logs.FlushMsKey); v != 12 || !ok {
		t.Errorf("flush_ms as int %v %v", v, ok)
	}
	if v, ok := ev.Int(logs.CountKey); v != -3 || !ok {
		t.Errorf("count %v %v", v, ok)
	}
	if _, ok := ev.Uint(logs.CountKey); ok {
		t.Error("a negative count read as a uint")
	}
	if v, ok := ev.Bool(logs.FinalKey); !v || !ok {
		t.Errorf("final %v %v", v, ok)
	}
	if v, ok := ev.Bool(logs.LostKey); v || !ok {
		t.Errorf("lost %v %v", v, ok)
	}
	if _, ok := ev.Bool(logs.ViewKey); ok {
		t.Error("a string read as a bool")
	}
	for k, want := range map[string]string{"x": `{"a":[1]}`, logs.MembersKey: `[1,"2", 3]`, logs.FlushMsKey: "12.5", logs.ViewKey: "3.1"} {
		if v, ok := ev.Text(k); v != want || !ok {
			t.Errorf("Text(%s) = %q %v, want %q", k, v, ok, want)
		}
	}
	if _, ok := ev.Text("absent"); ok || ev.Has("absent") || !ev.Has("x") {
		t.Error("an absent field is there")
	}
	keys := slices.Collect(ev.Keys())
	if len(keys) != 15 || keys[0] != logs.LevelKey || keys[14] != logs.TimeKey {
		t.Errorf("keys %v", keys)
	}
	if ev.String() != line {
		t.Errorf("String() = %s", ev.String())
	}
	for _, bad := range []string{`{"event":3}`, `{"level":"info"}`, `[1]`, `{"event":"x"`, ``} {
		if ev, ok := logs.Parse([]byte(bad)); ok {
			t.Errorf("Parse(%s) = %+v, want no event", bad, ev)
		}
	}
}

// An event the Scanner read lasts past the next line once cloned.
func TestClone(t *testing.T) {
	s := logs.NewScanner(strings.NewReader(`{"event":"send","seq":1}` + "\n" + `{"event":"deliver","seq":2,"from":9}` + "\n"))
	var kept []logs.Event
	for s.Scan() {
		kept = append(kept, s.Event().Clone())
	}
	if len(kept) != 2 || kept[0].Name != logs.Send || kept[1].Name != logs.Deliver {
		t.Fatalf("events %v", kept)
	}
	if seq, _ := kept[0].Uint(logs.SeqKey); seq != 1 || kept[0].Has(logs.FromKey) {
		t.Errorf("first event %s", kept[0])
	}
}

func TestTag(t *testing.T) {
	line := []byte(`{"level":"info","node":1,"event":"peer.seen","peer":2}`)
	if ev, _ := logs.Parse(line); !bytes.Contains(line, logs.Tag(ev.Name)) || bytes.Contains(line, logs.Tag(logs.PeerLost)) {
		t.Errorf("Tag(%s) = %s", ev.Name, logs.Tag(ev.Name))
	}
}
