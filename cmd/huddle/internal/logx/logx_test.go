package logx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/internal/logs"
)

func TestJSONLines(t *testing.T) {
	var buf bytes.Buffer
	log, _, err := New(Options{Level: "info", Format: "json"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str(logs.EventKey, logs.NodeStarted).Msg("hello")
	log.Debug().Str(logs.EventKey, "hidden").Msg("below the level")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON object: %q", buf.String())
	}
	ts, err := time.Parse(time.RFC3339Nano, line[logs.TimeKey].(string))
	if err != nil || line[logs.LevelKey] != "info" || line[logs.EventKey] != logs.NodeStarted || time.Since(ts).Abs() > time.Minute {
		t.Fatalf("line %v (time: %v)", line, err)
	}
	if strings.Contains(buf.String(), "hidden") {
		t.Fatal("a debug line passed the info level")
	}
}

// The names zerolog writes itself are those of internal/logs, which the
// readers look up.
func TestZerologNames(t *testing.T) {
	for _, c := range [][2]string{
		{zerolog.TimestampFieldName, logs.TimeKey}, {zerolog.LevelFieldName, logs.LevelKey},
		{zerolog.MessageFieldName, logs.MessageKey}, {zerolog.ErrorFieldName, logs.ErrorKey},
		{zerolog.LevelDebugValue, logs.LevelDebug}, {zerolog.LevelInfoValue, logs.LevelInfo},
		{zerolog.LevelWarnValue, logs.LevelWarn}, {zerolog.LevelErrorValue, logs.LevelError},
	} {
		if got, want := c[0], c[1]; got != want {
			t.Errorf("zerolog writes %q where internal/logs has %q", got, want)
		}
	}
}

// setClock makes the log lines' clock read the times given, one per line.
func setClock(t *testing.T, times ...time.Time) {
	old := clock
	t.Cleanup(func() { clock = old })
	clock = func() time.Time {
		if len(times) == 0 {
			t.Fatal("more log lines than times")
		}
		tm := times[0]
		times = times[1:]
		return tm
	}
}

// jsonTimes logs a line per time of the clock and returns their time fields.
func jsonTimes(t *testing.T, times ...time.Time) []string {
	t.Helper()
	setClock(t, times...)
	var buf bytes.Buffer
	log, _, err := New(Options{Level: "info", Format: "json"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	for range times {
		log.Info().Str(logs.EventKey, "tick").Send()
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var line struct{ Time string }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("not one JSON object: %q", l)
		}
		out = append(out, line.Time)
	}
	return out
}

func TestTimeHasNineDigitsInUTC(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), "2026-01-02T03:04:05.123456789Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 100000000, time.UTC), "2026-01-02T03:04:05.100000000Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000000000Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 120000, cet), "2026-01-02T02:04:05.000120000Z"},
	} {
		got := jsonTimes(t, c.at)[0]
		if got != c.want {
			t.Errorf("%v is logged as %q, want %q", c.at, got, c.want)
		}
		if back, err := time.Parse(time.RFC3339Nano, got); err != nil || !back.Equal(c.at) {
			t.Errorf("%q parses back as %v, %v; want %v", got, back, err, c.at)
		}
	}
}

// TestTimesSortAsText: lines of nodes in several time zones, merged and
// sorted as text, are in time order. With RFC3339Nano ".1Z" sorted after
// ".12Z", and a zone's offset sorted by local time.
func TestTimesSortAsText(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var times []time.Time
	for i, ns := range []int{0, 1, 10, 100_000_000, 120_000_000, 123_000_000, 123_456_789, 999_999_999, 1_000_000_000, 3_600_000_000_000} {
		zone := time.UTC
		if i%2 == 1 {
			zone = time.FixedZone("UTC-5", -5*3600)
		}
		times = append(times, t0.Add(time.Duration(ns)).In(zone))
	}
	logged := jsonTimes(t, times...)
	if !slices.IsSorted(logged) {
		t.Fatalf("times in time order do not sort as text: %q", logged)
	}
	for i, s := range logged {
		if back, err := time.Parse(time.RFC3339Nano, s); err != nil || !back.Equal(times[i]) {
			t.Errorf("%q parses back as %v, %v; want %v", s, back, err, times[i])
		}
	}
}

func TestConsoleLineStartsWithTheEvent(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	setClock(t, t0, t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second))
	var buf bytes.Buffer
	l, _, err := New(Options{Level: "debug", Format: "console"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	l = l.With().Uint64(logs.NodeKey, 3).Logger()
	l.Info().Str(logs.EventKey, logs.ViewInstalled).Str(logs.ViewKey, "2.5").Uint64(logs.CoordinatorIncarnationKey, 17).Msg("view 2.5 installed")
	l.Info().Str(logs.EventKey, logs.Deliver).Uint64(logs.SeqKey, 4).Uint64(logs.FromKey, 2).Msg("delivered")
	l.Warn().Str(logs.EventKey, logs.MutexReleased).Bool(logs.LostKey, true).Msg("lock lost: the view no longer holds this node")
	l.Info().Msg("no event")
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	at := func(s int) string { return t0.Add(time.Duration(s) * time.Second).Local().Format("15:04:05.000000") }
	want := []string{
		// The message repeats the event's name: left out. Fields in the
		// order logged, node last.
		at(0) + " INF view.installed view=2.5 coordinator_incarnation=17 node=3",
		at(1) + " INF deliver seq=4 from=2 node=3",
		// The message says more: kept, after the event.
		at(2) + " WRN mutex.released lock lost: the view no longer holds this node lost=true node=3",
		at(3) + " INF no event node=3",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("console lines:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestMessageSaysNoMore(t *testing.T) {
	for _, c := range []struct {
		msg, event string
		want       bool
	}{
		{"node started", logs.NodeStarted, true},
		{"delivered", logs.Deliver, true},
		{"sent", logs.Send, true},
		{"stats", logs.NodeStats, true},
		{"view 2.5 installed", logs.ViewInstalled, true},
		{"", logs.PeerSeen, true},
		{"peer seen", logs.PeerSeen, true},
		{"lock acquired", logs.MutexAcquired, false},
		{"elected leader", logs.ElectionWon, false},
		{"started", logs.NodeStats, false},
		{"cannot open the group socket", logs.NodeFailed, false},
	} {
		if got := saysNoMore(c.msg, c.event); got != c.want {
			t.Errorf("saysNoMore(%q, %q) = %v, want %v", c.msg, c.event, got, c.want)
		}
	}
}

func TestConsoleAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.log")
	log, closer, err := New(Options{Level: "debug", Format: "console", File: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Str(logs.EventKey, logs.PeerSeen).Msg("a peer seen again")
	closer.Close()
	b, _ := os.ReadFile(path)
	if json.Valid(bytes.TrimSpace(b)) || !strings.Contains(string(b), "DBG peer.seen a peer seen again") {
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

// TestCheckFile: a log file New could append to passes and is left as it
// was (a new one is not left behind); one in a missing directory fails,
// naming the cause alone.
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.json")
	if err := CheckFile(fresh); err != nil {
		t.Fatalf("a new file: %v", err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckFile left %s behind: %v", fresh, err)
	}
	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckFile(old); err != nil {
		t.Fatalf("an existing file: %v", err)
	}
	if b, _ := os.ReadFile(old); string(b) != "{}\n" {
		t.Errorf("CheckFile changed %s: %q", old, b)
	}
	if err := CheckFile(filepath.Join(dir, "none", "x.json")); err == nil || err.Error() != "no such file or directory" {
		t.Errorf("a missing directory: %v, want no such file or directory", err)
	}
}
