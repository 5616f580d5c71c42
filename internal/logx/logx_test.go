package logx

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJSONLinesWithNanosecondTime(t *testing.T) {
	var buf bytes.Buffer
	log, _, err := New(Options{Level: "info", Format: "json"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str("event", "node.started").Msg("hello")
	log.Debug().Str("event", "hidden").Msg("below the level")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON object: %q", buf.String())
	}
	ts, err := time.Parse(time.RFC3339Nano, line["time"].(string))
	if err != nil || line["level"] != "info" || line["event"] != "node.started" {
		t.Fatalf("line %v (time: %v)", line, err)
	}
	if !strings.Contains(line["time"].(string), ".") && ts.Nanosecond() != 0 {
		t.Fatalf("time %q lacks sub-second digits", line["time"])
	}
	if strings.Contains(buf.String(), "hidden") {
		t.Fatal("a debug line passed the info level")
	}
}

func TestConsoleAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.log")
	log, closer, err := New(Options{Level: "debug", Format: "console", File: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Str("event", "peer.seen").Msg("peer seen")
	closer.Close()
	b, _ := os.ReadFile(path)
	if json.Valid(bytes.TrimSpace(b)) || !strings.Contains(string(b), "peer seen") {
		t.Fatalf("console log is %q", b)
	}
}

func TestBadOptions(t *testing.T) {
	if _, _, err := New(Options{Level: "loud", Format: "json"}, nil); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Fatalf("bad level: %v", err)
	}
	if _, _, err := New(Options{Level: "info", File: "/nonexistent/dir/x.log"}, nil); err == nil {
		t.Fatal("unwritable log file accepted")
	}
}
