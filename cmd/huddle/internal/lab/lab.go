package lab

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/config"
)

// Defaults of Options.
const (
	DefaultNodes    = 5
	DefaultLoss     = 0.02
	DefaultDuration = 25 * time.Second
)

// Limits of Options.
const (
	MinNodes, MaxNodes       = 2, 16
	MaxLabNodes              = 32   // with a Plan
	MaxLoss                  = 0.25 // liveness is promised below 30 %
	MinDuration, MaxDuration = 5 * time.Second, 10 * time.Minute
	MaxLabDuration           = 24 * time.Hour // with a Plan
)

// Options configure a run: the demo, or with Plan a lab run.
type Options struct {
	Nodes    int           // group size, MinNodes..MaxNodes (MaxLabNodes with a Plan); 0 is DefaultNodes
	Loss     float64       // the demo's loss: probability that a host drops a datagram it receives, 0..MaxLoss
	Duration time.Duration // from the start of the nodes to their stop; 0 is DefaultDuration
	// Plan replaces the demo's workload, loss and crash of the
	// coordinator with a lab run's own (huddle lab); Loss is then unused.
	Plan *Plan
	// Title names the run on the console; "" is "huddle demo".
	Title string
	// Bin is the huddle binary the nodes run as (`Bin run ...`) on a
	// virtual LAN. Empty: the nodes run in this process.
	Bin string
	// InProcess runs the nodes in this process over a simulated network
	// even where a virtual LAN could be built.
	InProcess bool
	// Seed seeds the simulated network's random loss when the nodes run
	// in this process; 0 draws one from the clock. The console prints it.
	Seed int64
	// LogDir receives the nodes' logs; empty: a new temporary directory.
	LogDir string
	// RemoveLogs deletes the logs at the end when the check passed.
	RemoveLogs bool
	// Rate is each node's workload in messages per second; 0 picks one
	// that keeps the group near 200 msg/s (the demo only).
	Rate  int
	Out   io.Writer // the console; nil is os.Stdout
	Color bool      // ANSI colours (for a terminal)
	// Live keeps a progress line at the bottom of the console (for a
	// terminal): time, view, deliveries/s, repairs, elections, lock
	// entries, faults applied.
	Live bool
	// Transport is the nodes' transport: "" or "multicast" (the
	// default), or "unicast", which needs a virtual LAN (the lab gives
	// each node the others as its peers).
	Transport string
}

// Validate checks the options, naming the flag at fault.
func (o *Options) Validate() error {
	maxNodes, maxDuration := MaxNodes, MaxDuration
	if o.Plan != nil {
		maxNodes, maxDuration = MaxLabNodes, MaxLabDuration
	}
	switch {
	case o.Nodes != 0 && (o.Nodes < MinNodes || o.Nodes > maxNodes):
		return fmt.Errorf("--nodes %d: want %d to %d", o.Nodes, MinNodes, maxNodes)
	case o.Loss < 0 || o.Loss > MaxLoss:
		return fmt.Errorf("--loss %v: want 0 to %v (a probability: 0.02 is 2 %%)", o.Loss, MaxLoss)
	case o.Duration != 0 && (o.Duration < MinDuration || o.Duration > maxDuration):
		return fmt.Errorf("--duration %v: want %v to %v", o.Duration, MinDuration, maxDuration)
	case o.Rate < 0 || o.Rate > 2000:
		return fmt.Errorf("rate %d: want 0 to 2000 messages per second", o.Rate)
	case o.Transport != "" && o.Transport != "multicast" && o.Transport != "unicast":
		return fmt.Errorf("--transport %q: want multicast or unicast", o.Transport)
	case o.Transport == "unicast" && o.InProcess:
		return errors.New("--transport unicast needs a virtual LAN: in this process (--in-process) the nodes share a simulated multicast network")
	}
	if o.Plan != nil {
		n := cmp.Or(o.Nodes, DefaultNodes)
		if err := o.Plan.validate(n, o.InProcess); err != nil {
			return err
		}
		if len(o.Plan.Actions) > 0 && o.Plan.Actions[len(o.Plan.Actions)-1].At >= cmp.Or(o.Duration, DefaultDuration) {
			last := o.Plan.Actions[len(o.Plan.Actions)-1]
			return fmt.Errorf("%s at %v: after the end of the run (--duration %v)", last.Do, last.At, cmp.Or(o.Duration, DefaultDuration))
		}
	}
	return nil
}

func (o *Options) defaults() {
	if o.Nodes == 0 {
		o.Nodes = DefaultNodes
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Rate == 0 {
		o.Rate = min(100, max(20, 200/o.Nodes))
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Title == "" {
		o.Title = "huddle demo"
	}
}

// The timeline, as fractions of Options.Duration.
const (
	killAt    = 0.40
	restartAt = 0.65
)

// sendSize is the payload of each workload message, in bytes.
const sendSize = 200

// The lock workload of every node (dist_sync's, faster): think a random
// time in lockThink, take the group's lock, hold it lockHold, release.
const (
	lockThink = "1s-4s"
	lockHold  = 400 * time.Millisecond
)

// demo is one run.
type demo struct {
	o       Options
	actions []Action
	con     *console
	cl      cluster
	mode    string // "root", "rootless" or "in-process"
	why     string // why in-process
	dir     string
	start   time.Time
	cnt     *counts
	fol     *follower
	w       *watcher
	jr      *journal
	cfgs    map[uint64]config.Config // in this process: each node's
	running map[uint64]bool
	dead    map[uint64]bool // killed, not restarted yet
	paused  map[uint64]bool
	deaths  []logcheck.Death
	applied int // actions applied
	calls   sync.WaitGroup
	replies chan string        // what a node's elect or lock call ended with, when it failed
	stopAll context.CancelFunc // ends the calls
	callCtx context.Context    // of the calls
	victim  uint64             // the first node killed (the demo's story)
	killed  time.Time          // when
	revived time.Time          // when it was started again
	stopped time.Time
}

// ErrInterrupted is returned by Run when its context ended the demo early.
var ErrInterrupted = errors.New("demo: interrupted")

// Run runs the demo (or with Options.Plan a lab run): it starts the group,
// shows what happens, applies the schedule's faults and requests, stops
// the nodes, checks their logs and prints a summary. The error is nil when
// it ran to the end, whatever the check found (see Summary.OK);
// ErrInterrupted when ctx ended it (the nodes are stopped and the summary
// printed all the same), and another error when it could not run at all.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.defaults()
	d := &demo{o: o, con: &console{w: o.Out, color: o.Color, live: o.Live}, cnt: newCounts(), fol: newFollower(),
		running: map[uint64]bool{}, dead: map[uint64]bool{}, paused: map[uint64]bool{}, replies: make(chan string, 64)}
	d.actions = demoPlan(o.Duration)
	if o.Plan != nil {
		d.actions = o.Plan.Actions
	}
	if err := d.setup(); err != nil {
		return nil, err
	}
	defer d.cl.close()
	defer d.jr.close()
	d.header()
	d.callCtx, d.stopAll = context.WithCancel(context.Background())
	interrupted := d.play(ctx)
	d.finish(interrupted)
	// After a Ctrl-C in a terminal, the rootless LAN's helper had the
	// SIGINT too and is gone, and its namespaces with it: the lab then
	// fails to list them, which is no news.
	if err := d.cl.close(); err != nil && !(interrupted && d.mode == "rootless") {
		d.con.say(bad, "cleaning up: %v", err)
	}
	s := d.summarize(interrupted)
	d.jr.end(s)
	d.report(s)
	if interrupted {
		return s, ErrInterrupted
	}
	return s, nil
}

// lossOf is host id's loss at the start.
func (d *demo) lossOf(id uint64) lan.LossModel {
	if d.o.Plan != nil {
		return d.o.Plan.lossOf(id)
	}
	return lan.LossModel{Loss: d.o.Loss}
}

// lossy says whether any host drops datagrams at the start.
func (d *demo) lossy() bool {
	for _, id := range d.ids() {
		if d.lossOf(id) != (lan.LossModel{}) {
			return true
		}
	}
	return false
}

// setup makes the log directory and the cluster: a virtual LAN where one
// can be built, else nodes in this process.
func (d *demo) setup() error {
	d.dir = d.o.LogDir
	if d.dir == "" {
		dir, err := os.MkdirTemp("", "huddle-demo-")
		if err != nil {
			return fmt.Errorf("demo: log directory: %w", err)
		}
		d.dir = dir
	} else if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return fmt.Errorf("demo: log directory: %w", err)
	}
	if abs, err := filepath.Abs(d.dir); err == nil {
		d.dir = abs // the nodes may not share our working directory
	}
	// Every node's settings are read as `huddle run` reads them, here and
	// now: a bad flag stops the run before anything starts.
	d.cfgs = map[uint64]config.Config{}
	for _, id := range d.ids() {
		c, err := d.config(id)
		if err != nil {
			return err
		}
		d.cfgs[id] = c
	}
	// Logs are appended to (a restart adds a life): start from none.
	for id := uint64(1); id <= uint64(d.o.Nodes); id++ {
		for _, p := range []string{d.logPath(id), filepath.Join(d.dir, fmt.Sprintf("node%d.log", id))} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("demo: %w", err)
			}
		}
	}
	jr, err := openJournal(filepath.Join(d.dir, JournalFile))
	if err != nil {
		return err
	}
	d.jr = jr
	switch {
	case d.o.InProcess:
		d.why = "asked for with --in-process"
	case d.o.Bin == "":
		d.why = "no huddle binary to run as the nodes"
	default:
		cl, err := newLAN(d.o.Nodes, d.lossOf, d.o.Bin, d.dir, d.flags)
		if err == nil && d.o.Plan.holdsCPU() {
			// Refused before anything runs where no CPU can be held.
			if err := cl.openCPU(); err != nil {
				cl.close()
				return err
			}
		}
		if err == nil {
			d.cl, d.mode = cl, cl.mode()
			return nil
		}
		if errors.Is(err, lan.ErrNoNetem) {
			return err // in this process there would be no delay either
		}
		d.why = "no virtual LAN here: " + strings.TrimPrefix(oneLine(err), lan.ErrUnavailable.Error()+": ")
	}
	for id := uint64(1); id <= uint64(d.o.Nodes); id++ {
		if c, err := NodeConfig(d.flags(id)); err == nil && c.Transport == "unicast" {
			return fmt.Errorf("the unicast transport needs a virtual LAN, and the nodes would run in this process (%s), over a simulated multicast network", d.why)
		}
	}
	if d.o.Plan != nil {
		// The schedule was checked for a LAN: what a LAN alone can do is
		// refused now, before anything runs.
		if err := d.o.Plan.validate(d.o.Nodes, true); err != nil {
			return fmt.Errorf("%w (the nodes would run in this process: %s)", err, d.why)
		}
	}
	loss := func(h uint64) float64 { return d.lossOf(h).Loss }
	if d.o.Seed == 0 {
		d.o.Seed = time.Now().UnixNano()%1_000_000_000 + 1
	}
	d.cl, d.mode = newProcCluster(d.o.Nodes, loss, d.o.Seed, d.dir, func(id uint64) config.Config { return d.cfgs[id] }), "in-process"
	return nil
}

func (d *demo) logPath(id uint64) string { return filepath.Join(d.dir, fmt.Sprintf("node%d.json", id)) }

// order is the demo's workload order of node id: node 1 fifo, node 2 safe,
// node 3 causal when there are 4 nodes or more, the others total (with two
// nodes: node 1 total, node 2 safe).
func (d *demo) order(id uint64) string {
	switch {
	case d.o.Nodes == 2:
		return Orders[id] // node 1 total, node 2 safe
	case id == 1:
		return "fifo"
	case id == 2:
		return "safe"
	case id == 3 && d.o.Nodes >= 4:
		return "causal"
	}
	return "total"
}

// flags are the `huddle run` flags of node id on a LAN, besides those
// the lab's runner gives every node (--id, --iface, --addr, the control
// socket, the JSON log): the engine's own, then the demo's workload or
// the plan's settings.
func (d *demo) flags(id uint64) []string {
	f := []string{"--profile", "local", "--trace-deliveries", "--stats-interval", "1s",
		// A safety net: the nodes stop by themselves should the run vanish.
		"--duration", (d.o.Duration + 30*time.Second).String()}
	if d.o.Transport != "" {
		f = append(f, "--transport", d.o.Transport)
	}
	if p := d.o.Plan; p != nil {
		return append(append(f, p.Args...), p.NodeArgs[id]...)
	}
	return append(f, "--send-rate", strconv.Itoa(d.o.Rate), "--send-size", strconv.Itoa(sendSize),
		"--send-order", d.order(id), "--lock-think", lockThink, "--lock-hold", lockHold.String())
}

// config is the configuration of node id in this process: flags, read as
// `huddle run` reads them.
func (d *demo) config(id uint64) (config.Config, error) {
	c, err := NodeConfig(d.flags(id))
	if err != nil {
		return c, fmt.Errorf("settings of node %d: %w", id, err)
	}
	c.ID, c.Iface, c.ControlSocket = id, "sim0", "off"
	return c, nil
}

// NodeConfig reads args, `huddle run` flags, as huddle run does (without
// the environment and without resolving the interface): the check of a
// lab's node settings.
func NodeConfig(args []string) (config.Config, error) {
	fs := flag.NewFlagSet("huddle run", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	f := config.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return config.Config{}, fmt.Errorf("%v", strings.TrimSpace(cmp.Or(firstLine(out.String()), err.Error())))
	}
	if fs.NArg() > 0 {
		return config.Config{}, fmt.Errorf("%q is not a flag of huddle run", fs.Arg(0))
	}
	c, _, err := config.Load(fs, f, nil)
	return c, err
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func (d *demo) ids() []uint64 {
	var out []uint64
	for id := uint64(1); id <= uint64(d.o.Nodes); id++ {
		out = append(out, id)
	}
	return out
}

func (d *demo) header() {
	o, c := d.o, d.con
	if o.Plan == nil {
		c.say(action, "%s: %d nodes, %s loss, %v", o.Title, o.Nodes, pct(o.Loss), o.Duration)
	} else {
		c.say(action, "%s: %d nodes, %v", o.Title, o.Nodes, o.Duration)
	}
	c.say(plain, "  network  %s", d.network())
	if o.Plan != nil {
		d.planHeader()
		c.say(plain, "  logs     %s", d.dir)
		c.say(plain, "")
		return
	}
	local := config.Local()
	c.say(plain, "  loss     %s on each host's ingress", pct(o.Loss))
	c.say(plain, "  nodes    huddle run --profile local (heartbeat %v, suspect timeout %v); each multicasts %d msg/s of %d bytes:",
		local.Heartbeat.D(), local.SuspectTimeout.D(), o.Rate, sendSize)
	byOrder := map[string][]uint64{}
	var seen []string
	for _, id := range d.ids() {
		ord := d.order(id)
		if byOrder[ord] == nil {
			seen = append(seen, ord)
		}
		byOrder[ord] = append(byOrder[ord], id)
	}
	var parts []string
	for _, ord := range seen {
		parts = append(parts, nodeList(byOrder[ord])+" "+ord)
	}
	c.say(plain, "           %s", strings.Join(parts, ", "))
	c.say(plain, "           and each takes the group's lock now and then: waits %s, holds it %v, releases it", lockThink, lockHold)
	c.say(plain, "  plan     at %s kill the coordinator (SIGKILL), at %s restart it with the same ID, at %s stop every node and check the logs",
		secs(d.actions[0].At), secs(d.actions[1].At), secs(o.Duration))
	c.say(plain, "  logs     %s", d.dir)
	c.say(plain, "")
}

// network says what the nodes run on: the virtual LAN and its loss
// method, or the simulated network.
func (d *demo) network() string {
	if cl, ok := d.cl.(*lanCluster); ok {
		return cl.describe(d.lossy())
	}
	return fmt.Sprintf("simulated, in this process, loss drawn from seed %d (%s)", d.o.Seed, d.why)
}

// planHeader describes a lab run's nodes, loss and schedule.
func (d *demo) planHeader() {
	p, c := d.o.Plan, d.con
	byLoss := map[string][]uint64{}
	var models []string
	for _, id := range d.ids() {
		m := "none"
		if l := d.lossOf(id); l != (lan.LossModel{}) {
			m = l.String()
		}
		if byLoss[m] == nil {
			models = append(models, m)
		}
		byLoss[m] = append(byLoss[m], id)
	}
	for i, m := range models {
		label := "  loss"
		if i > 0 {
			label = ""
		}
		hosts := ""
		if len(models) > 1 {
			hosts = " on " + strings.Replace(nodeList(byLoss[m]), "node", "host", 1)
		}
		c.say(plain, "%-11s%s%s", label, m, hosts)
	}
	c.say(plain, "  nodes    huddle run %s", strings.Join(d.flags(0), " "))
	for _, id := range d.ids() {
		if a := p.NodeArgs[id]; len(a) > 0 {
			c.say(plain, "           node %d also %s", id, strings.Join(a, " "))
		}
	}
	if len(d.actions) == 0 {
		c.say(plain, "  plan     no faults; at %s stop every node and check the logs", secs(d.o.Duration))
		return
	}
	for i, a := range d.actions {
		label := "  plan"
		if i > 0 {
			label = ""
		}
		c.say(plain, "%-11sat %s %s", label, secs(a.At), a)
	}
	c.say(plain, "           at %s stop every node and check the logs", secs(d.o.Duration))
}

func secs(t time.Duration) string { return fmt.Sprintf("%.1fs", t.Seconds()) }

// poll reads the logs and shows what they say.
func (d *demo) poll() {
	d.w.handle(d.fol.poll(d.cnt))
}

// play starts the nodes and runs the schedule; it reports whether ctx
// cut it short.
func (d *demo) play(ctx context.Context) (interrupted bool) {
	for _, id := range d.ids() {
		d.fol.add(id, d.cl.logPath(id))
	}
	d.start = time.Now()
	d.w = newWatcher(d.con, d.start, d.cnt)
	d.jr.begin(d)
	var started []uint64
	for _, id := range d.ids() {
		if err := d.cl.start(id); err != nil {
			d.con.at(time.Since(d.start), bad, "cannot start node %d: %v", id, err)
			continue
		}
		d.running[id] = true
		started = append(started, id)
	}
	d.con.at(time.Since(d.start), action, "started %s", nodeList(started))
	period := max(2*time.Second, d.o.Duration/10)
	nextTraffic := d.start.Add(period)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			d.poll()
			d.con.at(time.Since(d.start), bad, "interrupted")
			return true
		case msg := <-d.replies:
			d.con.at(time.Since(d.start), bad, "%s", msg)
		case now := <-tick.C:
			d.poll()
			for _, msg := range d.cl.exits() {
				d.con.at(now.Sub(d.start), bad, "%s", msg)
			}
			if !now.Before(nextTraffic) {
				d.w.trafficLine(now)
				nextTraffic = nextTraffic.Add(period)
			}
			el := now.Sub(d.start)
			for d.applied < len(d.actions) && el >= d.actions[d.applied].At {
				d.apply(d.actions[d.applied])
				d.applied++
			}
			d.progress(now)
			if el >= d.o.Duration {
				return false
			}
		}
	}
}

// progress redraws the live line.
func (d *demo) progress(now time.Time) {
	if !d.con.live {
		return
	}
	view := "no view"
	if v := d.w.current(d.up()); v != nil {
		view = fmt.Sprintf("view %s/%d", v.ID, len(v.Members))
	}
	_, delivered := total(d.cnt.delivered)
	rate := d.w.rate(now, delivered)
	entries := 0
	for _, n := range d.w.entries {
		entries += n
	}
	// Short enough for an 80-column terminal: a line that wraps could not
	// be erased.
	d.con.status(fmt.Sprintf("%6.1fs  %s  %.0f dlv/s  %d NACK %d rep  %d elect  %d lock  fault %d/%d",
		now.Sub(d.start).Seconds(), view, rate, d.w.rep[repNacks], d.w.rep[repRepairs], len(d.w.rounds), entries, d.applied, len(d.actions)))
}

// up returns the nodes running and not paused.
func (d *demo) up() []uint64 {
	var out []uint64
	for _, id := range d.ids() {
		if d.running[id] && !d.paused[id] {
			out = append(out, id)
		}
	}
	return out
}

// coordinator returns the coordinator of the view the running nodes
// installed last, if it runs; else the running node of the highest ID
// (and why).
func (d *demo) coordinator() (uint64, string) {
	up := d.up()
	if len(up) == 0 {
		return 0, "no node runs"
	}
	if v := d.w.current(up); v != nil && len(v.Members) > 0 && d.running[v.Members[0]] {
		return v.Members[0], "it was the coordinator of view " + v.ID + ", and so its first total-order sequencer"
	}
	return up[len(up)-1], "the highest ID: no view yet"
}

// targets returns the nodes a acts on now.
func (d *demo) targets(a Action) (ids []uint64, why string) {
	switch {
	case a.Coordinator:
		id, why := d.coordinator()
		if id == 0 {
			return nil, why
		}
		return []uint64{id}, why
	case len(a.Nodes) > 0:
		return a.Nodes, ""
	case a.Do == DoRestart:
		return slices.Sorted(maps.Keys(d.dead)), ""
	case a.Do == DoContinue:
		return slices.Sorted(maps.Keys(d.paused)), ""
	}
	return nil, ""
}

// apply carries out one action of the schedule, says so on the console and
// records it in the journal.
func (d *demo) apply(a Action) {
	now := time.Now()
	at := now.Sub(d.start)
	ids, why := d.targets(a)
	var errs []error
	each := func(f func(id uint64) error) {
		for _, id := range ids {
			if err := f(id); err != nil {
				errs = append(errs, fmt.Errorf("node %d: %w", id, err))
			}
		}
	}
	text := a.String()
	switch a.Do {
	case DoKill:
		each(d.kill)
		text = "✖ " + nodeList(ids) + " killed (SIGKILL)"
		if d.mode == "in-process" {
			text = "✖ " + nodeList(ids) + " killed (as by SIGKILL: its sockets and its log cut off at once)"
		}
		if why != "" {
			text += ": " + why
		}
		for _, id := range ids {
			if d.w.holder == id {
				text += fmt.Sprintf("; node %d holds the lock", id)
			}
		}
	case DoRestart:
		each(d.restart)
		text = "↻ " + nodeList(ids) + " restarted with the same ID (a new incarnation): it asks to join"
		if len(ids) > 1 {
			text = "↻ " + nodeList(ids) + " restarted with the same IDs (new incarnations): each asks to join"
		}
	case DoStop:
		each(func(id uint64) error {
			if err := d.cl.pause(id); err != nil {
				return err
			}
			d.paused[id], d.w.down[id] = true, true
			return nil
		})
		text = "⏸ " + nodeList(ids) + " stopped (SIGSTOP): it hangs, neither sends nor reads"
	case DoContinue:
		each(func(id uint64) error {
			if err := d.cl.resume(id); err != nil {
				return err
			}
			delete(d.paused, id)
			delete(d.w.down, id)
			return nil
		})
		text = "▶ " + nodeList(ids) + " continued (SIGCONT)"
	case DoPartition:
		if len(ids) == 0 {
			errs = append(errs, errors.New("no node to cut off: "+why))
		} else if err := d.cl.partition(ids); err != nil {
			errs = append(errs, err)
		}
		text = fmt.Sprintf("✂ partition: %v | %v", ids, d.others(ids))
	case DoHeal:
		if err := d.cl.heal(); err != nil {
			errs = append(errs, err)
		}
		text = "✚ partition healed"
	case DoLoss:
		hosts := ids
		if len(hosts) == 0 {
			hosts = d.ids()
		}
		for _, h := range hosts {
			if err := d.cl.setLoss(h, a.Loss); err != nil {
				errs = append(errs, fmt.Errorf("host %d: %w", h, err))
			}
		}
		ids = hosts
	case DoMcastOff, DoMcastOn:
		hosts := ids
		if len(hosts) == 0 {
			hosts = d.ids()
		}
		for _, h := range hosts {
			if err := d.cl.setMulticast(h, a.Do == DoMcastOn); err != nil {
				errs = append(errs, fmt.Errorf("host %d: %w", h, err))
			}
		}
		ids = hosts
		text = "⊘ multicast no longer forwarded to " + strings.Replace(nodeList(ids), "node", "host", 1) + " (unicast still passes)"
		if a.Do == DoMcastOn {
			text = "◎ multicast forwarded again to " + strings.Replace(nodeList(ids), "node", "host", 1)
		}
	case DoCPU:
		each(func(id uint64) error { return d.cl.setCPU(id, a.CPU) })
		text = fmt.Sprintf("⏚ %s held to %v %% of one core (a control group's quota)", nodeList(ids), a.CPU)
		if a.CPU == 0 {
			text = "⏚ " + nodeList(ids) + ": CPU no longer held"
		}
	case DoElect:
		each(func(id uint64) error { d.callLater(id, "elect", nil); return nil })
	case DoLock:
		each(func(id uint64) error {
			d.callLater(id, "lock", control.LockArgs{HoldMs: a.Hold.Milliseconds()})
			return nil
		})
	}
	err := errors.Join(errs...)
	d.jr.action(now, a, ids, err)
	if err != nil {
		d.con.at(at, bad, "%s: %v", text, err)
		return
	}
	d.con.at(at, action, "%s", text)
}

// others returns the nodes not in side.
func (d *demo) others(side []uint64) []uint64 {
	var out []uint64
	for _, id := range d.ids() {
		if !slices.Contains(side, id) {
			out = append(out, id)
		}
	}
	return out
}

// callLater runs a control command on node id without waiting: a failure
// is printed when it comes.
func (d *demo) callLater(id uint64, cmd string, args any) {
	d.calls.Add(1)
	go func() {
		defer d.calls.Done()
		if _, err := d.cl.call(d.callCtx, id, cmd, args); err != nil && d.callCtx.Err() == nil {
			select {
			case d.replies <- fmt.Sprintf("%s on node %d failed: %v", cmd, id, err):
			default:
			}
		}
	}()
}

// kill crashes node id.
func (d *demo) kill(id uint64) error {
	if err := d.cl.kill(id); err != nil {
		return err
	}
	now := time.Now()
	if d.victim == 0 {
		d.victim, d.killed = id, now
	}
	d.deaths = append(d.deaths, logcheck.Death{Node: id, At: now})
	d.w.down[id], d.dead[id] = true, true
	delete(d.running, id)
	delete(d.paused, id)
	return nil
}

// restart starts node id again, with the same ID.
func (d *demo) restart(id uint64) error {
	if err := d.cl.start(id); err != nil {
		return err
	}
	if id == d.victim && d.revived.IsZero() {
		d.revived = time.Now()
	}
	d.running[id] = true
	delete(d.dead, id)
	delete(d.w.down, id)
	return nil
}

// finish stops every node gracefully and reads the rest of their logs.
func (d *demo) finish(interrupted bool) {
	d.poll()
	if time.Since(d.w.tick.at) > time.Second {
		d.w.trafficLine(time.Now())
	}
	d.w.stop = true
	d.con.at(time.Since(d.start), action, "stopping every node (SIGTERM: each leaves the group, then exits)")
	d.stopAll()
	if err := d.cl.stop(3*time.Second, interrupted); err != nil {
		d.con.at(time.Since(d.start), bad, "%v", err)
	}
	d.calls.Wait()
	d.stopped = time.Now()
	d.poll()
	d.w.printViews(time.Now(), true)
	d.w.print()
	d.con.status("")
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
