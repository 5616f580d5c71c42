package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
	"github.com/huddle-lan/huddle/config"
)

// SweepFile describes a sweep in its directory: the setting swept, its
// values, and the run directory of each value and repeat.
const SweepFile = "sweep.json"

// Sweep is a series of runs of one scenario over the values of one
// numeric setting, each repeated.
type Sweep struct {
	Param  string     `json:"param"`
	Unit   string     `json:"unit,omitempty"` // "s" for a duration, given in seconds
	Values []string   `json:"-"`              // as given
	Nums   []float64  `json:"-"`
	Repeat int        `json:"repeat"`
	Runs   []SweepRun `json:"runs"`
}

// SweepRun is one run of a sweep.
type SweepRun struct {
	Value  float64 `json:"value"`
	Repeat int     `json:"repeat"` // 1..Sweep.Repeat
	Dir    string  `json:"dir"`    // relative to the sweep's directory
}

// The scenario's own numeric settings a sweep can vary; any other name
// is a `huddle run` flag given to every node.
var sweepKeys = []string{"nodes", "duration", "loss", "burst", "delay", "jitter", "crash_rate", "elections", "pause"}

// ParseSweep reads NAME=V1,V2,...: a numeric setting of the scenario
// (sweepKeys) or of huddle run (a flag name, as --send-rate's
// send-rate), and its values: numbers, or durations such as 200ms.
func ParseSweep(spec string, repeat int) (*Sweep, error) {
	name, list, ok := strings.Cut(spec, "=")
	name = strings.TrimLeft(strings.TrimSpace(name), "-")
	if !ok || name == "" || list == "" {
		return nil, fmt.Errorf("--sweep %q: want NAME=V1,V2,... (e.g. loss=0,0.01,0.05)", spec)
	}
	if repeat < 1 || repeat > 100 {
		return nil, fmt.Errorf("--repeat %d: want 1 to 100", repeat)
	}
	sw := &Sweep{Param: name, Repeat: repeat}
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			d, derr := time.ParseDuration(v)
			if derr != nil {
				return nil, fmt.Errorf("--sweep %s: value %q: want a number or a duration", name, v)
			}
			x, sw.Unit = d.Seconds(), "s"
		}
		if slices.Contains(sw.Values, v) {
			return nil, fmt.Errorf("--sweep %s: value %q given twice", name, v)
		}
		sw.Values, sw.Nums = append(sw.Values, v), append(sw.Nums, x)
	}
	if len(sw.Values) > 50 {
		return nil, fmt.Errorf("--sweep %s: %d values: want at most 50", name, len(sw.Values))
	}
	return sw, nil
}

// With returns a copy of s with the swept setting at value v.
func (s *Scenario) With(param, v string) (*Scenario, error) {
	c := *s
	c.Args = slices.Clone(s.Args)
	if c.Args == nil {
		c.Args = slices.Clone(DefaultArgs)
	}
	num := func() (float64, error) {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("--sweep %s: %q is not a number", param, v)
		}
		return x, nil
	}
	dur := func() (config.Duration, error) {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("--sweep %s: %q is not a duration (e.g. 500ms)", param, v)
		}
		return config.Duration(d), nil
	}
	var err error
	var x float64
	switch param {
	case "nodes", "elections":
		x, err = num()
		if err == nil && x != float64(int(x)) {
			err = fmt.Errorf("--sweep %s: %q is not a whole number", param, v)
		}
		if param == "nodes" {
			c.Nodes = int(x)
		} else {
			c.Elections = int(x)
		}
	case "duration":
		c.Duration, err = dur()
	case "pause":
		c.Pause, err = dur()
	case "delay":
		c.Delay, err = dur()
	case "jitter":
		c.Jitter, err = dur()
	case "loss":
		c.Loss.Loss, err = num()
	case "burst":
		c.Burst, err = num()
	case "crash_rate", "crash-rate":
		x, err = num()
		r := Random{}
		if s.Random != nil {
			r = *s.Random
		}
		r.CrashRate = x
		c.Random = &r
	default:
		c.Args = append(c.Args, "--"+param, v)
		if _, ferr := lab.NodeConfig(c.Args); ferr != nil {
			return nil, fmt.Errorf("--sweep %s: not a setting of the lab (%s) nor of huddle run: %v", param, strings.Join(sweepKeys, ", "), ferr)
		}
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// RunDir is the directory of one run of the sweep, relative to its own.
func (sw *Sweep) RunDir(i, repeat int) string {
	return filepath.Join(sw.Param+"="+sw.Values[i], strconv.Itoa(repeat))
}

// Save writes dir/sweep.json.
func (sw *Sweep) Save(dir string) error {
	b, err := json.MarshalIndent(struct {
		*Sweep
		Values []float64 `json:"values"`
	}{sw, sw.Nums}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SweepFile), append(b, '\n'), 0o644)
}
