package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/report"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/scenario"
	"github.com/huddle-lan/huddle/config"
)

const labUsage = `Usage: huddle lab [flags] [SCENARIO.toml]
       huddle lab --replay DIR [--log-dir DIR2]
       huddle lab [flags] --sweep NAME=V1,V2,... [--repeat N]

With --report it writes the HTML report of the run (or sweep) at the end,
as huddle report DIR does. With --vm the whole run goes inside a VM with
Debian's kernel, which has netem (for --delay, --jitter and netem's
bursts where this kernel has none), and its logs come back here (see
docs/experiments.md, "netem in a VM").

Runs an experiment: 2 to 32 huddle run processes on a private virtual LAN
(network namespaces: as root, or unprivileged in a user namespace; where
neither works, in this process over a simulated network), with every
node's settings, each host's loss, and a schedule of faults and requests:
kill, restart with the same ID, stop and continue, partition and heal,
a change of loss, an election, a lock request, at given times or drawn at
random from a seed. It shows what happens as it happens, then checks the
nodes' logs (as huddle check does) and prints a summary; the exit code is
0 when every check passed.

Simple cases come from flags, the rest from a TOML scenario file (see
docs/experiments.md); flags given override the file. The logs go to
--log-dir, one JSON log per node (nodeN.json), with lab.json (the faults
as applied) and scenario.toml (the scenario, its random draws written out)
beside them: huddle lab --replay DIR runs it again.

Presets (--preset) reproduce the programs huddle grew from:
%s
A fault is AT:DO[:NODES[:VALUE]]: AT a time since the start (10s), DO one
of kill, restart, stop, continue, partition, heal, loss, elect, lock,
mcast-off, mcast-on (the bridge stops or resumes forwarding multicast to
hosts, unicast still passing), cpu (hold nodes to a share of one core
with a control group, 0 lifts it); NODES a list (2,3) or "coordinator";
VALUE the new loss for loss (0.1), the hold for lock (2s), the percent
of a core for cpu (1). For example:
  --fault 10s:kill:coordinator --fault 16s:restart
  --fault 8s:partition:1,2 --fault 14s:heal --fault 5s:loss:3:0.2
  --fault 5s:mcast-off:4 --fault 14s:mcast-on:4
  --fault 8s:cpu:4:1 --fault 28s:cpu:4:0
With --args "--transport unicast" every node runs on the unicast
transport, and the lab gives each the others' addresses as --peers.

Flags:
`

// labFlags are huddle lab's command line.
type labFlags struct {
	preset, logDir, replay, color, args, sweep string
	nodes, elections, repeat                   int
	duration, pause, down, delay, jitter, hold time.Duration
	seed                                       uint64
	loss, burst, crashRate                     float64
	think                                      string
	inProcess, report, vm                      bool
	nodeArgs, faults                           multiFlag
}

// multiFlag is a flag given once per value.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func cmdLab(args []string, stdout, stderr io.Writer) int {
	fs, parseOut := newFlagSet("huddle lab")
	var f labFlags
	fs.StringVar(&f.preset, "preset", "", "start from a `preset`: "+strings.Join(scenario.Presets(), ", "))
	fs.IntVar(&f.nodes, "nodes", 0, fmt.Sprintf("`number` of nodes, %d to %d (default %d, or the preset's)", lab.MinNodes, lab.MaxLabNodes, scenario.DefaultNodes))
	fs.DurationVar(&f.duration, "duration", 0, fmt.Sprintf("`time` from the start of the nodes to their stop (default %v, or the preset's)", scenario.DefaultDuration))
	fs.Uint64Var(&f.seed, "seed", 0, "`seed` of the random faults and choices; 0 draws one (the scenario written beside the logs keeps it)")
	fs.Float64Var(&f.loss, "loss", 0, "`probability` that each host drops a datagram it receives")
	fs.Float64Var(&f.burst, "burst", 0, "mean `length` of a burst of drops (Gilbert–Elliott; netem, else the nodes' built-in drop); 0 or 1: independent drops")
	fs.DurationVar(&f.delay, "delay", 0, "one-way `delay` added on each host's ingress (needs netem)")
	fs.DurationVar(&f.jitter, "jitter", 0, "± `jitter` on the delay (needs netem)")
	fs.StringVar(&f.args, "args", "", "huddle run `flags` for every node, after the scenario's (e.g. \"--send-rate 200 --send-order safe\")")
	fs.Var(&f.nodeArgs, "node", "`ID:FLAGS`: huddle run flags of one node, e.g. 2:\"--suspect-timeout 1s\" (repeatable)")
	fs.Var(&f.faults, "fault", "`AT:DO[:NODES[:VALUE]]`: a fault or request of the schedule (repeatable; see above)")
	fs.IntVar(&f.elections, "elections", 0, "start this many `elections`, one every --pause from a random node, from 3s on")
	fs.DurationVar(&f.pause, "pause", 0, "`time` between the --elections (default 5s)")
	fs.StringVar(&f.think, "think", "", "lock workload of every node: think a `range` (3s-5s), take the group's lock, hold it --hold, release it")
	fs.DurationVar(&f.hold, "hold", 0, "how `long` the lock workload holds the lock (with --think; default 4s)")
	fs.Float64Var(&f.crashRate, "crash-rate", 0, "random crashes (SIGKILL) per node per `minute`; a crashed node restarts after --down")
	fs.DurationVar(&f.down, "down", 0, "how `long` a node crashed at random stays down before it restarts with the same ID (default 3s)")
	fs.BoolVar(&f.inProcess, "in-process", false, "run the nodes in this process over a simulated network, even where a virtual LAN can be built")
	fs.BoolVar(&f.vm, "vm", false, "run the lab inside a VM with Debian's kernel, which has netem (for --delay, --jitter and --burst where this kernel has no netem): "+
		"qemu (package qemu-system-x86) boots linux-image-amd64 (or $HUDDLE_VM_KERNEL_DIR) with busybox (busybox-static) and this program; the logs come back to --log-dir")
	fs.StringVar(&f.logDir, "log-dir", "", "`directory` for the logs (created); default: a new temporary directory")
	fs.StringVar(&f.replay, "replay", "", "run again the scenario a run wrote in `DIR` (its scenario.toml)")
	fs.StringVar(&f.sweep, "sweep", "", "run a series over a numeric setting: `NAME=V1,V2,...`, NAME a scenario setting (nodes, loss, burst, delay, crash_rate, ...) or a huddle run flag (send-rate)")
	fs.BoolVar(&f.report, "report", false, "write the HTML report of the run or the sweep at the end (huddle report DIR)")
	fs.IntVar(&f.repeat, "repeat", 1, "with --sweep: runs of each `value`")
	fs.StringVar(&f.color, "color", "auto", "`when` to colour the output and show a live progress line: auto (stdout a terminal and NO_COLOR unset), always or never")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), labUsage, scenario.PresetHelp())
		fs.PrintDefaults()
	}
	files, code, done := parseOperands(fs, parseOut, args, stdout, stderr)
	if done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "huddle lab: "+format+"\n", a...)
		return code
	}
	if len(files) > 1 {
		return fail(exitUsage, "one scenario file at most, not %d", len(files))
	}
	if !nodeRuns {
		return notSupported("huddle lab", stderr)
	}
	s, err := f.scenario(fs, files)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	o := lab.Options{Out: stdout}
	if o.Color, err = colorMode(f.color, stdout); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if f.vm {
		if s.InProcess {
			return fail(exitUsage, "--vm runs the nodes on a virtual LAN in a VM: not with --in-process")
		}
		ctx, stop := signalContext()
		defer stop()
		return runInVM(ctx, s, f, stdout, stderr)
	}
	o.Live = o.Color
	if !s.InProcess {
		bin, err := os.Executable()
		if err != nil {
			return fail(exitFailure, "cannot find this program to run the nodes: %v", err)
		}
		o.Bin = bin
	}
	ctx, stop := signalContext()
	defer stop()
	if f.sweep != "" {
		return runSweep(ctx, s, f, o, stdout, stderr)
	}
	if _, err := s.Options(); err != nil { // checked before a directory is made
		return fail(exitUsage, "%v", err)
	}
	dir, err := logDir(f.logDir, "huddle-lab-")
	if err != nil {
		return fail(exitFailure, "%v", err)
	}
	sum, err := runOne(ctx, s, dir, o)
	if f.report && sum != nil {
		writeReport(dir, stdout, stderr)
	}
	switch {
	case errors.Is(err, lab.ErrInterrupted):
		return exitFailure
	case err != nil:
		return fail(exitFailure, "%v", withVMHint(err))
	case !sum.OK:
		return exitFailure
	}
	return exitOK
}

// scenario builds the run's scenario: the file or the replayed run's, or
// the preset, or the defaults; then the flags given, over it.
func (f *labFlags) scenario(fs *flag.FlagSet, files []string) (*scenario.Scenario, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var s *scenario.Scenario
	var err error
	switch {
	case f.replay != "" && (len(files) > 0 || f.preset != ""):
		return nil, errors.New("--replay runs a saved scenario as it was: give no scenario file and no --preset with it")
	case f.replay != "":
		for name := range set {
			if !slices.Contains([]string{"replay", "log-dir", "color", "in-process", "vm"}, name) {
				return nil, fmt.Errorf("--%s: --replay runs the saved scenario as it was (only --log-dir, --color, --in-process and --vm go with it)", name)
			}
		}
		s, err = scenario.ReplayDir(f.replay)
	case len(files) > 0 && f.preset != "":
		return nil, errors.New("a scenario file or a --preset, not both")
	case len(files) > 0:
		s, err = scenario.Load(files[0])
	case f.preset != "":
		s, err = scenario.Preset(f.preset)
	default:
		s = &scenario.Scenario{}
	}
	if err != nil {
		return nil, err
	}
	if set["nodes"] {
		s.Nodes = f.nodes
	}
	if set["duration"] {
		s.Duration = config.Duration(f.duration)
	}
	if set["seed"] {
		s.Seed = f.seed
	}
	if set["loss"] {
		s.Loss.Loss = f.loss
	}
	if set["burst"] {
		s.Burst = f.burst
	}
	if set["delay"] {
		s.Delay = config.Duration(f.delay)
	}
	if set["jitter"] {
		s.Jitter = config.Duration(f.jitter)
	}
	if set["in-process"] {
		s.InProcess = f.inProcess
	}
	if set["elections"] {
		s.Elections = f.elections
	}
	if set["pause"] {
		s.Pause = config.Duration(f.pause)
	}
	if f.args != "" {
		if s.Args == nil {
			s.Args = slices.Clone(scenario.DefaultArgs)
		}
		s.Args = append(s.Args, strings.Fields(f.args)...)
	}
	if set["think"] || set["hold"] {
		if f.think == "" && s.Args == nil {
			return nil, errors.New("--hold: give the lock workload's --think too")
		}
		if s.Args == nil {
			s.Args = slices.Clone(scenario.DefaultArgs)
		}
		if f.think != "" {
			s.Args = append(s.Args, "--lock-think", f.think)
		}
		if set["hold"] || f.think != "" && !slices.Contains(s.Args, "--lock-hold") {
			s.Args = append(s.Args, "--lock-hold", cmp.Or(f.hold, 4*time.Second).String())
		}
	}
	if set["crash-rate"] || set["down"] {
		r := scenario.Random{}
		if s.Random != nil {
			r = *s.Random
		}
		if set["crash-rate"] {
			r.CrashRate = f.crashRate
		}
		if set["down"] {
			r.Down = config.Duration(f.down)
		}
		s.Random = &r
	}
	for _, spec := range f.nodeArgs {
		id, flags, ok := strings.Cut(spec, ":")
		n, err := strconv.ParseUint(id, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("--node %q: want ID:FLAGS, e.g. 2:\"--suspect-timeout 1s\"", spec)
		}
		s.Node = append(s.Node, scenario.Node{ID: n, Args: strings.Fields(flags)})
	}
	for _, spec := range f.faults {
		ft, err := scenario.ParseFault(spec)
		if err != nil {
			return nil, err
		}
		s.Fault = append(s.Fault, ft)
	}
	return s, nil
}

// logDir makes the directory of a run's logs: dir, or a new temporary one.
func logDir(dir, pattern string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", pattern)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--log-dir: %w", err)
	}
	return filepath.Abs(dir)
}

// runOne runs the scenario with its logs in dir, and writes the scenario
// beside them.
func runOne(ctx context.Context, s *scenario.Scenario, dir string, o lab.Options) (*lab.Summary, error) {
	so, err := s.Options()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := s.Save(dir); err != nil {
		return nil, fmt.Errorf("writing the scenario: %w", err)
	}
	so.Bin, so.Out, so.Color, so.Live, so.LogDir = o.Bin, o.Out, o.Color, o.Live, dir
	if so.InProcess {
		so.Bin = ""
	}
	sum, err := lab.Run(ctx, so)
	if sum != nil {
		fmt.Fprintf(o.Out, "scenario: %s (huddle lab --replay %s runs it again)\n", filepath.Join(dir, scenario.File), dir)
	}
	return sum, err
}

// runSweep runs the scenario once per value of the swept setting and
// repeat, each in a directory of its own under the sweep's, and prints a
// table of the figures against the value.
func runSweep(ctx context.Context, s *scenario.Scenario, f labFlags, o lab.Options, stdout, stderr io.Writer) int {
	sw, err := scenario.ParseSweep(f.sweep, f.repeat)
	if err != nil {
		fmt.Fprintln(stderr, "huddle lab:", err)
		return exitUsage
	}
	// Every run is checked before the first starts.
	runs := make([]*scenario.Scenario, len(sw.Values))
	for i, v := range sw.Values {
		if runs[i], err = s.With(sw.Param, v); err == nil {
			_, err = runs[i].Options()
		}
		if err != nil {
			fmt.Fprintf(stderr, "huddle lab: --sweep %s=%s: %v\n", sw.Param, v, err)
			return exitUsage
		}
	}
	dir, err := logDir(f.logDir, "huddle-sweep-")
	if err != nil {
		fmt.Fprintln(stderr, "huddle lab:", err)
		return exitFailure
	}
	var rows []sweepRow
	code := exitOK
	for i := range sw.Values {
		for r := 1; r <= sw.Repeat; r++ {
			rel := sw.RunDir(i, r)
			fmt.Fprintf(stdout, "\n=== sweep %s=%s, run %d of %d: %s\n", sw.Param, sw.Values[i], r, sw.Repeat, rel)
			run := *runs[i]
			if r > 1 {
				run.Seed = 0 // each repeat draws its own
			}
			sum, err := runOne(ctx, &run, filepath.Join(dir, rel), o)
			if err != nil && !errors.Is(err, lab.ErrInterrupted) {
				fmt.Fprintln(stderr, "huddle lab:", withVMHint(err))
				return exitFailure
			}
			sw.Runs = append(sw.Runs, scenario.SweepRun{Value: sw.Nums[i], Repeat: r, Dir: rel})
			if err := sw.Save(dir); err != nil {
				fmt.Fprintln(stderr, "huddle lab:", err)
				return exitFailure
			}
			rows = append(rows, figures(sw.Values[i], r, sum))
			if !sum.OK {
				code = exitFailure
			}
			if errors.Is(err, lab.ErrInterrupted) {
				printSweep(stdout, sw, rows, dir)
				return exitFailure
			}
		}
	}
	printSweep(stdout, sw, rows, dir)
	if f.report {
		writeReport(dir, stdout, stderr)
	}
	return code
}

// writeReport writes the report of a run's or a sweep's directory, as
// huddle report does, and says where.
func writeReport(dir string, stdout, stderr io.Writer) {
	rep, err := report.Write(dir, report.Options{})
	if err != nil {
		fmt.Fprintln(stderr, "huddle lab: the report:", err)
		return
	}
	fmt.Fprintln(stdout, "report:", rep.HTML)
}

// sweepRow is one run's figures.
type sweepRow struct {
	value                  string
	repeat                 int
	ok                     bool
	throughput             float64 // deliveries/s at the slowest member
	nacksPerLoss, repPerLs float64 // per message found missing
	failoverMs             float64 // first kill to the view without it; NaN without a kill
	electionMsgs           float64 // per round
	lockMsgs, lockWaitMs   float64 // per entry
}

func figures(value string, repeat int, s *lab.Summary) sweepRow {
	row := sweepRow{value: value, repeat: repeat, ok: s.OK, failoverMs: math.NaN(), electionMsgs: math.NaN(), lockMsgs: math.NaN(), lockWaitMs: math.NaN()}
	slowest := math.Inf(1)
	var nacks, repairs, found int64
	for _, n := range s.Nodes {
		var d int64
		for _, x := range n.Delivered {
			d += x
		}
		slowest = min(slowest, float64(d))
		nacks, repairs, found = nacks+n.Nacks, repairs+n.Repairs, found+n.Found
	}
	if s.Seconds > 0 && !math.IsInf(slowest, 1) {
		row.throughput = slowest / s.Seconds
	}
	row.nacksPerLoss, row.repPerLs = ratio(nacks, found), ratio(repairs, found)
	if s.Killed != 0 && s.ExcludedView != "" {
		row.failoverMs = float64((s.ExcludedAt - s.KilledAt).Milliseconds())
	}
	if len(s.Rounds) > 0 {
		sum := 0
		for _, r := range s.Rounds {
			sum += r.Messages
		}
		row.electionMsgs = float64(sum) / float64(len(s.Rounds))
	}
	if len(s.Entries) > 0 {
		var msgs, wait float64
		for _, e := range s.Entries {
			msgs, wait = msgs+float64(e.Messages), wait+e.WaitMs
		}
		row.lockMsgs, row.lockWaitMs = msgs/float64(len(s.Entries)), wait/float64(len(s.Entries))
	}
	return row
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// printSweep prints the runs' figures and writes them to sweep.csv.
func printSweep(w io.Writer, sw *scenario.Sweep, rows []sweepRow, dir string) {
	head := []string{sw.Param, "run", "check", "deliveries/s (slowest)", "NACKs/loss", "repairs/loss", "failover ms", "election msgs/round", "lock msgs/entry", "lock wait ms"}
	csv := strings.Join(head, ",") + "\n"
	fmt.Fprintf(w, "\nsweep of %s, %d run(s) per value (figures per run; - where it does not apply):\n", sw.Param, sw.Repeat)
	fmt.Fprintf(w, "  %10s %4s %5s %12s %10s %12s %11s %12s %10s %12s\n", sw.Param, "run", "check", "deliv/s", "NACKs/loss", "repairs/loss", "failover ms", "elect msgs", "lock msgs", "lock wait ms")
	num := func(x float64, prec int) string {
		if math.IsNaN(x) {
			return "-"
		}
		return strconv.FormatFloat(x, 'f', prec, 64)
	}
	for _, r := range rows {
		check := "PASS"
		if !r.ok {
			check = "FAIL"
		}
		cells := []string{r.value, strconv.Itoa(r.repeat), check, num(r.throughput, 0), num(r.nacksPerLoss, 2), num(r.repPerLs, 2),
			num(r.failoverMs, 0), num(r.electionMsgs, 1), num(r.lockMsgs, 1), num(r.lockWaitMs, 0)}
		fmt.Fprintf(w, "  %10s %4s %5s %12s %10s %12s %11s %12s %10s %12s\n", toAny(cells)...)
		csv += strings.Join(cells, ",") + "\n"
	}
	path := filepath.Join(dir, "sweep.csv")
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		fmt.Fprintln(w, "huddle lab: writing", path+":", err)
		return
	}
	fmt.Fprintf(w, "figures in %s; the runs' logs under %s (%s lists them)\n", path, dir, scenario.SweepFile)
}

func toAny(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}
