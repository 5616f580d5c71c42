// Package scenario describes `huddle lab` runs: the group's size and
// length, every node's `huddle run` settings, each host's loss, and a
// schedule of faults and requests, given at fixed times or drawn at
// random from a seed. A Scenario is read from a TOML file, made by a
// preset of the seed programs (ring-voting, dist-sync,
// bully-crash-restart), or both with flags on top; Plan turns it into
// what internal/demo's engine runs, and Save writes it beside the logs
// with its random draws written out, so that `huddle lab --replay DIR`
// repeats the same run.
//
//	s, err := scenario.Load("flaky.toml") // or scenario.Preset("ring-voting")
//	o, err := s.Options()                 // lab.Options with a Plan
//	err = s.Save(dir)                     // dir/scenario.toml
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/config"
)

// File is the scenario's name in a run's log directory.
const File = "scenario.toml"

// Defaults of a scenario that does not say.
const (
	DefaultNodes    = 5
	DefaultDuration = 30 * time.Second
	// Settle is when the first fault drawn at random may come: the group
	// has formed by then.
	Settle = 3 * time.Second
)

// DefaultArgs are the nodes' settings when a scenario gives none: each
// node multicasts 50 messages a second in total order.
var DefaultArgs = []string{"--send-rate", "50", "--send-order", "total"}

// Scenario is a lab run.
type Scenario struct {
	Name      string          `toml:"name,omitempty"`
	Nodes     int             `toml:"nodes,omitempty"`
	Duration  config.Duration `toml:"duration,omitempty"`
	Seed      uint64          `toml:"seed,omitempty"` // of the random draws; 0: one is chosen and written
	InProcess bool            `toml:"in_process,omitempty"`
	Loss                      // every host's, at the start
	// Args are `huddle run` flags of every node; nil is DefaultArgs.
	Args   []string `toml:"args,omitempty"`
	Node   []Node   `toml:"node,omitempty"`
	Fault  []Fault  `toml:"fault,omitempty"`
	Random *Random  `toml:"random,omitempty"`
	// Elections and Pause: an election from a random running node every
	// Pause, Elections times, from Settle on (ring_voting's -n and --sleep).
	Elections int             `toml:"elections,omitempty"`
	Pause     config.Duration `toml:"pause,omitempty"`
}

// Loss is a host's loss model (lan.LossModel); delay and jitter need netem.
type Loss struct {
	Loss   float64         `toml:"loss,omitempty"`   // probability that the host drops a datagram it receives
	Burst  float64         `toml:"burst,omitempty"`  // mean length of a burst of drops (Gilbert–Elliott); 0 or 1: independent drops
	Delay  config.Duration `toml:"delay,omitempty"`  // added one-way delay
	Jitter config.Duration `toml:"jitter,omitempty"` // ± on the delay
}

func (l Loss) model() lan.LossModel {
	return lan.LossModel{Loss: l.Loss, Burst: l.Burst, Delay: l.Delay.D(), Jitter: l.Jitter.D()}
}

// Node is one node's own settings: flags after the scenario's Args, and
// its host's loss when it differs.
type Node struct {
	ID   uint64   `toml:"id"`
	Args []string `toml:"args,omitempty"`
	Loss *Loss    `toml:"loss,omitempty"`
}

// Fault is one step of the schedule: lab.Action in TOML.
type Fault struct {
	At          config.Duration `toml:"at"`
	Do          string          `toml:"do"`
	Nodes       []uint64        `toml:"nodes,omitempty"`
	Coordinator bool            `toml:"coordinator,omitempty"`
	Loss                        // do = "loss": the hosts' new loss
	Hold        config.Duration `toml:"hold,omitempty"`  // do = "lock"
	CPU         float64         `toml:"cpu,omitempty"`   // do = "cpu": percent of one CPU, 0 lifts the hold
	Drawn       bool            `toml:"drawn,omitempty"` // drawn from [random] by the seed (written by Save)
}

// Random draws faults from the seed: each kind comes as a Poisson process
// of the given rate, between From and Until.
type Random struct {
	CrashRate float64         `toml:"crash_rate,omitempty"` // crashes (SIGKILL) per node per minute
	Down      config.Duration `toml:"down,omitempty"`       // a crashed node restarts with the same ID this long after; 0 is 3s
	StopRate  float64         `toml:"stop_rate,omitempty"`  // SIGSTOPs per node per minute
	Stopped   config.Duration `toml:"stopped,omitempty"`    // how long a node stays stopped; 0 is 2s
	CutRate   float64         `toml:"partition_rate,omitempty"`
	CutFor    config.Duration `toml:"partitioned,omitempty"` // how long a partition lasts; 0 is 3s
	ElectRate float64         `toml:"elect_rate,omitempty"`  // elections per minute, from a random running node
	LockRate  float64         `toml:"lock_rate,omitempty"`   // lock requests per minute, from a random running node
	Hold      config.Duration `toml:"hold,omitempty"`        // of a random lock request; 0 is 500ms
	// MinUp is the fewest nodes left running (not killed, not stopped)
	// by random faults; 0 is a majority.
	MinUp int             `toml:"min_up,omitempty"`
	From  config.Duration `toml:"from,omitempty"`  // 0 is Settle
	Until config.Duration `toml:"until,omitempty"` // 0 is 3 s before the end
}

// Load reads a scenario file; unknown keys are errors, so that a typo
// does not silently change the run.
func Load(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := new(Scenario)
	dec := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return nil, fmt.Errorf("%s: %s", path, strings.TrimSpace(strict.String()))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: %v", path, row, col, de)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Save writes the scenario to dir/scenario.toml, its random draws written
// out as faults (marked drawn) in place of [random], so that a replay
// runs the same schedule.
func (s *Scenario) Save(dir string) error {
	c := *s
	acts, err := s.expand()
	if err != nil {
		return err
	}
	c.Fault, c.Random = nil, nil
	c.Elections, c.Pause = 0, 0
	for _, a := range acts {
		c.Fault = append(c.Fault, faultOf(a))
	}
	b, err := toml.Marshal(&c)
	if err != nil {
		return err
	}
	head := fmt.Sprintf("# The scenario of a huddle lab run, written %s.\n"+
		"# Its random faults are written out (drawn = true): `huddle lab --replay %s` runs it again.\n\n",
		time.Now().UTC().Format(time.RFC3339), dir)
	return os.WriteFile(filepath.Join(dir, File), append([]byte(head), b...), 0o644)
}

// WriteFile writes the scenario to path as it is, [random] and all (not
// its draws, as Save does): Load reads the same scenario back. huddle lab
// --vm hands its scenario so to the lab inside the VM.
func (s *Scenario) WriteFile(path string) error {
	b, err := toml.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// ReplayDir returns the scenario saved in a run's log directory.
func ReplayDir(dir string) (*Scenario, error) {
	s, err := Load(filepath.Join(dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: is it the --log-dir of a huddle lab run?", dir, File)
	}
	return s, err
}

// defaults fills what the scenario leaves out.
func (s *Scenario) defaults() {
	if s.Nodes == 0 {
		s.Nodes = DefaultNodes
	}
	if s.Duration == 0 {
		s.Duration = config.Duration(DefaultDuration)
	}
	if s.Seed == 0 {
		s.Seed = rand.Uint64()>>12 + 1 // fits a TOML integer
	}
	if s.Args == nil {
		s.Args = slices.Clone(DefaultArgs)
	}
	if s.Pause == 0 {
		s.Pause = config.Duration(5 * time.Second)
	}
}

// Options returns what the engine runs: lab.Options with a Plan. The
// scenario gets its defaults (a seed among them) first.
func (s *Scenario) Options() (lab.Options, error) {
	s.defaults()
	p := &lab.Plan{Name: s.Name, Args: s.Args, Loss: s.Loss.model(), NodeArgs: map[uint64][]string{}, HostLoss: map[uint64]lan.LossModel{}}
	for _, n := range s.Node {
		if _, dup := p.NodeArgs[n.ID]; dup {
			return lab.Options{}, fmt.Errorf("[[node]] id %d: given twice", n.ID)
		}
		p.NodeArgs[n.ID] = n.Args
		if n.Loss != nil {
			p.HostLoss[n.ID] = n.Loss.model()
		}
	}
	acts, err := s.expand()
	if err != nil {
		return lab.Options{}, err
	}
	p.Actions = acts
	o := lab.Options{Nodes: s.Nodes, Duration: s.Duration.D(), Plan: p, InProcess: s.InProcess, Title: "huddle lab", Seed: int64(s.Seed >> 1)}
	if s.Name != "" {
		o.Title += " " + s.Name
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	// Every node's flags are read as huddle run reads them, now.
	for id := uint64(1); id <= uint64(s.Nodes); id++ {
		args := append(slices.Clone(s.Args), p.NodeArgs[id]...)
		if _, err := lab.NodeConfig(args); err != nil {
			return o, fmt.Errorf("settings of node %d (%s): %w", id, strings.Join(args, " "), err)
		}
	}
	return o, nil
}

// expand returns the schedule: the faults given, the elections, and the
// random draws, in time order.
func (s *Scenario) expand() ([]lab.Action, error) {
	s.defaults()
	var out []lab.Action
	for i, f := range s.Fault {
		if !slices.Contains(lab.Kinds, f.Do) {
			return nil, fmt.Errorf("[[fault]] %d: do %q: want one of %s", i+1, f.Do, strings.Join(lab.Kinds, ", "))
		}
		out = append(out, lab.Action{At: f.At.D(), Do: f.Do, Nodes: f.Nodes, Coordinator: f.Coordinator, Loss: f.Loss.model(), Hold: f.Hold.D(), CPU: f.CPU, Drawn: f.Drawn})
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6c6162)) // "lab"
	for i := range s.Elections {
		at := Settle + time.Duration(i)*s.Pause.D()
		out = append(out, lab.Action{At: at, Do: lab.DoElect, Nodes: []uint64{1 + rng.Uint64N(uint64(s.Nodes))}})
	}
	if s.Random != nil {
		drawn, err := s.Random.draw(rng, s.Nodes, s.Duration.D())
		if err != nil {
			return nil, err
		}
		out = append(out, drawn...)
	}
	slices.SortStableFunc(out, func(a, b lab.Action) int { return int(a.At - b.At) })
	return out, nil
}

func faultOf(a lab.Action) Fault {
	f := Fault{At: config.Duration(a.At), Do: a.Do, Nodes: a.Nodes, Coordinator: a.Coordinator, Hold: config.Duration(a.Hold), CPU: a.CPU, Drawn: a.Drawn}
	if a.Do == lab.DoLoss {
		f.Loss = Loss{Loss: a.Loss.Loss, Burst: a.Loss.Burst, Delay: config.Duration(a.Loss.Delay), Jitter: config.Duration(a.Loss.Jitter)}
	}
	return f
}

// maxRate bounds every rate of [random], per minute.
const maxRate = 600

// draw returns the random faults of a run of n nodes lasting d.
func (r *Random) draw(rng *rand.Rand, n int, d time.Duration) ([]lab.Action, error) {
	for name, v := range map[string]float64{"crash_rate": r.CrashRate, "stop_rate": r.StopRate, "partition_rate": r.CutRate,
		"elect_rate": r.ElectRate, "lock_rate": r.LockRate} {
		if !(v >= 0 && v <= maxRate) {
			return nil, fmt.Errorf("[random] %s = %v: want 0 to %d a minute", name, v, maxRate)
		}
	}
	from, until := Settle, d-Settle
	if r.From > 0 {
		from = r.From.D()
	}
	if r.Until > 0 {
		until = r.Until.D()
	}
	if until > d || from >= until {
		return nil, fmt.Errorf("[random] from %v until %v: want 0 <= from < until <= the run's duration %v", from, until, d)
	}
	minUp := r.MinUp
	if minUp == 0 {
		minUp = n/2 + 1
	}
	if minUp < 1 || minUp > n {
		return nil, fmt.Errorf("[random] min_up = %d: want 1 to %d", minUp, n)
	}
	down := orDefault(r.Down, 3*time.Second)
	stopped := orDefault(r.Stopped, 2*time.Second)
	cutFor := orDefault(r.CutFor, 3*time.Second)
	hold := orDefault(r.Hold, 500*time.Millisecond)

	// Each kind is a Poisson process: exponential gaps of mean 1/rate.
	type event struct {
		at   time.Duration
		kind string
	}
	var evs []event
	arrivals := func(kind string, perMinute float64) {
		if perMinute <= 0 {
			return
		}
		for t := from; ; {
			t += time.Duration(rng.ExpFloat64() / perMinute * float64(time.Minute))
			if t >= until {
				return
			}
			evs = append(evs, event{t, kind})
		}
	}
	arrivals(lab.DoKill, r.CrashRate*float64(n))
	arrivals(lab.DoStop, r.StopRate*float64(n))
	arrivals(lab.DoPartition, r.CutRate)
	arrivals(lab.DoElect, r.ElectRate)
	arrivals(lab.DoLock, r.LockRate)
	slices.SortStableFunc(evs, func(a, b event) int { return int(a.at - b.at) })

	// Who is out, and until when; a fault that would leave fewer than
	// minUp nodes up, or that overlaps a partition, is not drawn.
	back := map[uint64]time.Duration{}
	var cutUntil time.Duration
	var out []lab.Action
	up := func(t time.Duration) []uint64 {
		var ids []uint64
		for id := uint64(1); id <= uint64(n); id++ {
			if back[id] <= t {
				ids = append(ids, id)
			}
		}
		return ids
	}
	for _, e := range evs {
		ids := up(e.at)
		switch e.kind {
		case lab.DoKill, lab.DoStop:
			if len(ids) <= minUp {
				continue
			}
			id := ids[rng.IntN(len(ids))]
			length, again := down, lab.DoRestart
			if e.kind == lab.DoStop {
				length, again = stopped, lab.DoContinue
			}
			back[id] = e.at + length
			out = append(out, lab.Action{At: e.at, Do: e.kind, Nodes: []uint64{id}, Drawn: true},
				lab.Action{At: min(e.at+length, d-time.Second), Do: again, Nodes: []uint64{id}, Drawn: true})
		case lab.DoPartition:
			if e.at < cutUntil || n < 2 {
				continue
			}
			perm := rng.Perm(n)
			k := 1 + rng.IntN(n/2) // the smaller side
			var side []uint64
			for _, i := range perm[:k] {
				side = append(side, uint64(i+1))
			}
			slices.Sort(side)
			cutUntil = min(e.at+cutFor, d-time.Second)
			out = append(out, lab.Action{At: e.at, Do: lab.DoPartition, Nodes: side, Drawn: true},
				lab.Action{At: cutUntil, Do: lab.DoHeal, Drawn: true})
		case lab.DoElect, lab.DoLock:
			if len(ids) == 0 {
				continue
			}
			a := lab.Action{At: e.at, Do: e.kind, Nodes: []uint64{ids[rng.IntN(len(ids))]}, Drawn: true}
			if e.kind == lab.DoLock {
				a.Hold = hold
			}
			out = append(out, a)
		}
	}
	return out, nil
}

func orDefault(d config.Duration, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d.D()
}

// ParseFault reads a fault of the command line, AT:DO[:NODES[:VALUE]]:
// 10s:kill:coordinator, 16s:restart, 8s:partition:1,2, 5s:loss:3:0.2,
// 6s:lock:2:1s.
func ParseFault(spec string) (Fault, error) {
	bad := func(format string, a ...any) (Fault, error) {
		return Fault{}, fmt.Errorf("--fault %q: "+format, append([]any{spec}, a...)...)
	}
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return bad("want AT:DO[:NODES[:VALUE]], e.g. 10s:kill:3")
	}
	at, err := time.ParseDuration(parts[0])
	if err != nil {
		return bad("the time %q: want a duration since the start, e.g. 10s", parts[0])
	}
	f := Fault{At: config.Duration(at), Do: parts[1]}
	if !slices.Contains(lab.Kinds, f.Do) {
		return bad("%q: want one of %s", f.Do, strings.Join(lab.Kinds, ", "))
	}
	if len(parts) > 2 && parts[2] != "" {
		if parts[2] == "coordinator" {
			f.Coordinator = true
		} else {
			for _, n := range strings.Split(parts[2], ",") {
				id, err := strconv.ParseUint(n, 10, 64)
				if err != nil || id == 0 {
					return bad("node %q: want node IDs (1,2) or coordinator", n)
				}
				f.Nodes = append(f.Nodes, id)
			}
		}
	}
	if len(parts) == 4 {
		switch f.Do {
		case lab.DoLoss:
			p, err := strconv.ParseFloat(parts[3], 64)
			if err != nil {
				return bad("loss %q: want a probability, e.g. 0.1", parts[3])
			}
			f.Loss.Loss = p
		case lab.DoLock:
			d, err := time.ParseDuration(parts[3])
			if err != nil {
				return bad("hold %q: want a duration, e.g. 2s", parts[3])
			}
			f.Hold = config.Duration(d)
		case lab.DoCPU:
			p, err := strconv.ParseFloat(strings.TrimSuffix(parts[3], "%"), 64)
			if err != nil || p < 0 {
				return bad("CPU share %q: want a percentage of one core, e.g. 1 (0 lifts the hold)", parts[3])
			}
			f.CPU = p
		default:
			return bad("%s takes no value", f.Do)
		}
	} else if f.Do == lab.DoLoss {
		return bad("loss needs the new loss: AT:loss:NODES:P (NODES empty for every host)")
	} else if f.Do == lab.DoCPU {
		return bad("cpu needs the share: AT:cpu:NODES:PERCENT (1 holds them to 1 %% of a core, 0 lifts the hold)")
	}
	return f, nil
}
