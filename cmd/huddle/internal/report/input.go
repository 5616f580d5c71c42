package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// ErrNoLogs is returned for a directory that holds neither node logs nor
// a sweep.json.
var ErrNoLogs = errors.New("no node logs")

// The files of a run directory and of a sweep directory.
const (
	LabFile      = "lab.json"
	ScenarioFile = "scenario.toml"
	SweepFile    = "sweep.json"
	logPattern   = "node*.json"
)

// Run is what one run directory holds: the nodes' logs, read by
// internal/logcheck, and what the lab wrote beside them.
type Run struct {
	Dir  string
	Logs *logcheck.Run
	// Lab are the lab.json lines that were events, in file order; nil
	// without a lab.json (a demo's directory).
	Lab []LabEvent
	// Scenario are the top-level fields of scenario.toml that the report
	// shows, in a fixed order; nil without the file.
	Scenario []Field
	// Notes say what could not be read (a garbled lab.json line, a
	// scenario.toml that does not parse), for the report.
	Notes []string
}

// LabEvent is one line of lab.json: a fault or action the lab runner
// applied, or the start or end of the run. Every field is optional.
type LabEvent struct {
	Time   time.Time // zero if absent or not RFC 3339
	Event  string    // "lab.fault", "lab.start", "lab.end"
	Fault  string    // kill, restart, stop, continue, partition, heal, loss, elect, lock
	Nodes  []uint64
	Value  string // as written: "0.05", or a number's text
	Detail string
}

// Fault event names of lab.json.
const (
	labStart  = "lab.start"
	labFault  = "lab.fault"
	faultKill = "kill"
)

// Label names the event in a few words: "kill 3", "loss 0.05 2,3".
func (e LabEvent) Label() string {
	s := e.Fault
	if s == "" {
		s = strings.TrimPrefix(e.Event, "lab.")
	}
	if e.Value != "" {
		s += " " + e.Value
	}
	if len(e.Nodes) > 0 {
		s += " " + idList(e.Nodes)
	}
	return s
}

// Field is a name and its value as text.
type Field struct{ Name, Value string }

// LoadRun reads a run directory: its node<ID>.json logs (required), and
// lab.json and scenario.toml when there. Only the logs can fail it.
func LoadRun(dir string) (*Run, error) {
	files, err := filepath.Glob(filepath.Join(dir, logPattern))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("cannot read the run's directory: %w", err)
		}
		return nil, fmt.Errorf("%s: %w (node<ID>.json): want the directory of huddle demo --log-dir or of a huddle lab run, or a sweep's (sweep.json)", dir, ErrNoLogs)
	}
	slices.Sort(files)
	lr, err := logcheck.Load(files...)
	if err != nil {
		return nil, err
	}
	if len(lr.Lives) == 0 {
		return nil, fmt.Errorf("%s: %w: its node*.json files hold no event of a node (huddle's JSON logs have one object a line with \"event\" and \"node\")", dir, ErrNoLogs)
	}
	r := &Run{Dir: dir, Logs: lr}
	for _, f := range lr.Files {
		if f.Malformed > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d lines are not log events (the first at line %d): skipped", f.Name, f.Malformed, f.FirstMalformed))
		}
	}
	r.readLab(filepath.Join(dir, LabFile))
	r.readScenario(filepath.Join(dir, ScenarioFile))
	return r, nil
}

// readLab reads lab.json, if there: one JSON object a line. Lines that
// are not objects are counted in a note; unknown fields are ignored.
func (r *Run) readLab(path string) {
	f, err := os.Open(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", LabFile, err))
		}
		return
	}
	defer f.Close()
	r.Lab = []LabEvent{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), logs.MaxLine)
	bad, first, n := 0, 0, 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, ok := parseLabLine(line)
		if !ok {
			if bad++; first == 0 {
				first = n
			}
			continue
		}
		r.Lab = append(r.Lab, ev)
	}
	if err := sc.Err(); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %v after line %d", LabFile, err, n))
	}
	if bad > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %d lines are not JSON objects (the first at line %d): skipped", LabFile, bad, first))
	}
}

// parseLabLine reads one lab.json line, taking each field only when it
// has the type it should.
func parseLabLine(line []byte) (LabEvent, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || m == nil {
		return LabEvent{}, false
	}
	str := func(k string) string {
		var s string
		if json.Unmarshal(m[k], &s) != nil {
			return ""
		}
		return s
	}
	ev := LabEvent{Event: str("event"), Fault: str("fault"), Detail: str("detail")}
	if t, err := time.Parse(time.RFC3339Nano, str("time")); err == nil {
		ev.Time = t
	}
	var ids []uint64
	if json.Unmarshal(m["nodes"], &ids) == nil {
		ev.Nodes = ids
	} else {
		var id uint64 // one node, not in a list
		if json.Unmarshal(m["nodes"], &id) == nil {
			ev.Nodes = []uint64{id}
		}
	}
	if v, ok := m["value"]; ok {
		if s := str("value"); s != "" {
			ev.Value = s
		} else if len(v) > 0 && v[0] != '"' && string(v) != "null" {
			ev.Value = string(v)
		}
	}
	return ev, true
}

// readScenario reads the fields of scenario.toml the report shows. A
// field of another type than expected is left out, with a note.
func (r *Run) readScenario(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", ScenarioFile, err))
		}
		return
	}
	var m map[string]any
	if err := toml.Unmarshal(b, &m); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", ScenarioFile, err))
		return
	}
	r.Scenario = []Field{}
	for _, k := range []string{"name", "nodes", "duration", "seed", "loss"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		var s string
		switch x := v.(type) {
		case string:
			if k == "duration" {
				if _, err := time.ParseDuration(x); err != nil {
					ok = false
				}
			}
			ok = ok && (k == "name" || k == "duration")
			s = x
		case int64:
			ok = k == "nodes" || k == "seed" || k == "loss"
			s = strconv.FormatInt(x, 10)
		case float64:
			ok = k == "loss" && !math.IsNaN(x)
			s = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			ok = false
		}
		if !ok {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %s = %v: not shown (want %s)", ScenarioFile, k, v, scenarioWant[k]))
			continue
		}
		r.Scenario = append(r.Scenario, Field{k, s})
	}
}

var scenarioWant = map[string]string{
	"name": "a string", "nodes": "an integer", "duration": `a Go duration string such as "2m"`,
	"seed": "an integer", "loss": "a number",
}

// Sweep is a sweep directory's sweep.json: runs of one scenario with one
// parameter set to each of Values, Repeat times each.
type Sweep struct {
	Dir    string
	Param  string     `json:"param"`
	Values []float64  `json:"values"`
	Repeat int        `json:"repeat"`
	Runs   []SweepRun `json:"runs"`
}

// SweepRun is one run of a sweep: its value, its repeat (from 1) and its
// directory, relative to the sweep's.
type SweepRun struct {
	Value  float64 `json:"value"`
	Repeat int     `json:"repeat"`
	Dir    string  `json:"dir"`
}

// LoadSweep reads dir/sweep.json. A run's dir must stay inside the
// sweep's directory.
func LoadSweep(dir string) (*Sweep, error) {
	b, err := os.ReadFile(filepath.Join(dir, SweepFile))
	if err != nil {
		return nil, err
	}
	s := &Sweep{Dir: dir}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SweepFile), err)
	}
	if len(s.Runs) == 0 {
		return nil, fmt.Errorf("%s: \"runs\" is empty: want the sweep's runs, each {\"value\", \"repeat\", \"dir\"}", filepath.Join(dir, SweepFile))
	}
	for i, run := range s.Runs {
		if run.Dir == "" || filepath.IsAbs(run.Dir) || !filepath.IsLocal(filepath.FromSlash(run.Dir)) {
			return nil, fmt.Errorf("%s: runs[%d].dir %q: want a directory inside the sweep's, relative to it", filepath.Join(dir, SweepFile), i, run.Dir)
		}
	}
	if s.Param == "" {
		s.Param = "value"
	}
	return s, nil
}

// idList writes IDs as "1,2,3".
func idList(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ",")
}
