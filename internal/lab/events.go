package lab

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Event is one line of a huddle JSON log.
type Event struct {
	Time   time.Time
	Level  string
	Event  string
	Node   uint64
	Fields map[string]any // the other fields; numbers are json.Number
}

// ReadEvents parses the JSON-lines log at path; see ParseEvents.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, _, err := ParseEvents(f)
	if err != nil {
		return events, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// ParseEvents reads zerolog JSON lines (time, level, node, event, ...).
// Lines that are not JSON objects (a panic trace, a partly written last
// line) are skipped and counted in skipped.
func ParseEvents(r io.Reader) (events []Event, skipped int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, ok := parseEvent(line)
		if !ok {
			skipped++
			continue
		}
		events = append(events, ev)
	}
	return events, skipped, sc.Err()
}

func parseEvent(line []byte) (Event, bool) {
	if line[0] != '{' {
		return Event{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return Event{}, false
	}
	ev := Event{Fields: m}
	ev.Level, _ = m["level"].(string)
	ev.Event, _ = m["event"].(string)
	if s, ok := m["time"].(string); ok {
		ev.Time, _ = time.Parse(time.RFC3339Nano, s)
	}
	ev.Node, _ = ev.Uint("node")
	for _, k := range []string{"time", "level", "event", "node"} {
		delete(m, k)
	}
	return ev, true
}

// Uint returns field key as an unsigned integer (a JSON number or a decimal
// string).
func (e Event) Uint(key string) (uint64, bool) {
	var s string
	switch v := e.Fields[key].(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// Str returns field key if it is a JSON string.
func (e Event) Str(key string) (string, bool) {
	s, ok := e.Fields[key].(string)
	return s, ok
}
