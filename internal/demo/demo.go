package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/lab"
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
	MaxLoss                  = 0.25 // liveness is promised below 30 %
	MinDuration, MaxDuration = 5 * time.Second, 10 * time.Minute
)

// Options configure a demo run.
type Options struct {
	Nodes    int           // group size, MinNodes..MaxNodes; 0 is DefaultNodes
	Loss     float64       // probability that a host drops a datagram it receives, 0..MaxLoss
	Duration time.Duration // from the start of the nodes to their stop; 0 is DefaultDuration
	// Bin is the huddle binary the nodes run as (`Bin run ...`) on a
	// virtual LAN. Empty: the nodes run in this process.
	Bin string
	// InProcess runs the nodes in this process over a simulated network
	// even where a virtual LAN could be built.
	InProcess bool
	// LogDir receives the nodes' logs; empty: a new temporary directory.
	LogDir string
	// RemoveLogs deletes the logs at the end when the check passed.
	RemoveLogs bool
	// Rate is each node's workload in messages per second; 0 picks one
	// that keeps the group near 200 msg/s.
	Rate  int
	Out   io.Writer // the console; nil is os.Stdout
	Color bool      // ANSI colours (for a terminal)
}

// Validate checks the options, naming the flag at fault.
func (o *Options) Validate() error {
	switch {
	case o.Nodes != 0 && (o.Nodes < MinNodes || o.Nodes > MaxNodes):
		return fmt.Errorf("demo: --nodes %d: want %d to %d", o.Nodes, MinNodes, MaxNodes)
	case o.Loss < 0 || o.Loss > MaxLoss:
		return fmt.Errorf("demo: --loss %v: want 0 to %v (a probability: 0.02 is 2 %%)", o.Loss, MaxLoss)
	case o.Duration != 0 && (o.Duration < MinDuration || o.Duration > MaxDuration):
		return fmt.Errorf("demo: --duration %v: want %v to %v", o.Duration, MinDuration, MaxDuration)
	case o.Rate < 0 || o.Rate > 2000:
		return fmt.Errorf("demo: rate %d: want 0 to 2000 messages per second", o.Rate)
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
	con     *console
	cl      cluster
	mode    string // "root", "rootless" or "in-process"
	why     string // why in-process
	dir     string
	start   time.Time
	cnt     *counts
	fol     *follower
	w       *watcher
	running map[uint64]bool
	victim  uint64
	killed  time.Time
	revived time.Time
	stopped time.Time
}

// ErrInterrupted is returned by Run when its context ended the demo early.
var ErrInterrupted = errors.New("demo: interrupted")

// Run runs the demo: it starts the group, shows what happens, crashes and
// restarts the coordinator on schedule, stops the nodes, checks their
// logs and prints a summary. The error is nil when it ran to the end,
// whatever the check found (see Summary.OK); ErrInterrupted when ctx
// ended it (the nodes are stopped and the summary printed all the same),
// and another error when it could not run at all.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.defaults()
	d := &demo{o: o, con: &console{w: o.Out, color: o.Color}, cnt: newCounts(), fol: newFollower(), running: map[uint64]bool{}}
	if err := d.setup(); err != nil {
		return nil, err
	}
	defer d.cl.close()
	d.header()
	interrupted := d.play(ctx)
	d.finish(interrupted)
	// After a Ctrl-C in a terminal, the rootless LAN's helper had the
	// SIGINT too and is gone, and its namespaces with it: the lab then
	// fails to list them, which is no news.
	if err := d.cl.close(); err != nil && !(interrupted && d.mode == "rootless") {
		d.con.say(bad, "cleaning up: %v", err)
	}
	s := d.summarize(interrupted)
	d.report(s)
	if interrupted {
		return s, ErrInterrupted
	}
	return s, nil
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
	// Logs are appended to (a restart adds a life): start from none.
	for id := uint64(1); id <= uint64(d.o.Nodes); id++ {
		for _, p := range []string{d.logPath(id), filepath.Join(d.dir, fmt.Sprintf("node%d.log", id))} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("demo: %w", err)
			}
		}
	}
	switch {
	case d.o.InProcess:
		d.why = "asked for with --in-process"
	case d.o.Bin == "":
		d.why = "no huddle binary to run as the nodes"
	default:
		lan, err := newLAN(d.o.Nodes, d.o.Loss, d.o.Bin, d.dir, d.flags)
		if err == nil {
			d.cl, d.mode = lan, lan.mode()
			return nil
		}
		d.why = "no virtual LAN here: " + strings.TrimPrefix(oneLine(err), lab.ErrUnavailable.Error()+": ")
	}
	d.cl, d.mode = newProcCluster(d.o.Loss, d.dir, d.config), "in-process"
	return nil
}

func (d *demo) logPath(id uint64) string { return filepath.Join(d.dir, fmt.Sprintf("node%d.json", id)) }

// order is the workload order of node id: node 1 fifo, node 2 safe, the
// others total (with two nodes: node 1 total, node 2 safe).
func (d *demo) order(id uint64) string {
	switch {
	case d.o.Nodes == 2:
		return Orders[id] // node 1 total, node 2 safe
	case id == 1:
		return "fifo"
	case id == 2:
		return "safe"
	}
	return "total"
}

// flags are the `huddle run` flags of node id on a LAN, besides those
// the lab's runner gives every node (--id, --iface, --addr, no control
// socket, the JSON log).
func (d *demo) flags(id uint64) []string {
	return []string{"--profile", "local",
		"--trace-deliveries", "--send-rate", strconv.Itoa(d.o.Rate), "--send-size", strconv.Itoa(sendSize),
		"--send-order", d.order(id), "--stats-interval", "1s",
		"--lock-think", lockThink, "--lock-hold", lockHold.String(),
		// A safety net: the nodes stop by themselves should the demo vanish.
		"--duration", (d.o.Duration + 30*time.Second).String()}
}

// config is the configuration of node id in this process: the same as
// flags says.
func (d *demo) config(id uint64) config.Config {
	c := config.Local()
	c.ID, c.Iface, c.ControlSocket = id, "sim0", "off"
	c.TraceDeliveries, c.StatsInterval = true, config.Duration(time.Second)
	c.SendRate, c.SendSize, c.SendOrder = d.o.Rate, sendSize, d.order(id)
	c.Mutex.Think, c.Mutex.Hold = lockThink, config.Duration(lockHold)
	c.Duration = config.Duration(d.o.Duration + 30*time.Second)
	return c
}

func (d *demo) ids() []uint64 {
	var out []uint64
	for id := uint64(1); id <= uint64(d.o.Nodes); id++ {
		out = append(out, id)
	}
	return out
}

func (d *demo) header() {
	o, c := d.o, d.con
	c.say(action, "huddle demo: %d nodes, %s loss, %v", o.Nodes, pct(o.Loss), o.Duration)
	if lan, ok := d.cl.(*lanCluster); ok {
		c.say(plain, "  network  %s", lan.describe(o.Loss))
	} else {
		c.say(plain, "  network  simulated, in this process, %s loss per receiver (%s)", pct(o.Loss), d.why)
	}
	local := config.Local()
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
		secs(d.at(killAt)), secs(d.at(restartAt)), secs(o.Duration))
	c.say(plain, "  logs     %s", d.dir)
	c.say(plain, "")
}

func (d *demo) at(frac float64) time.Duration {
	return time.Duration(frac * float64(d.o.Duration)).Round(100 * time.Millisecond)
}

func secs(t time.Duration) string { return fmt.Sprintf("%.1fs", t.Seconds()) }

// poll reads the logs and shows what they say.
func (d *demo) poll() {
	d.w.handle(d.fol.poll(d.cnt))
}

// play starts the nodes and runs the timeline; it reports whether ctx
// cut it short.
func (d *demo) play(ctx context.Context) (interrupted bool) {
	for _, id := range d.ids() {
		d.fol.add(id, d.cl.logPath(id))
	}
	d.start = time.Now()
	d.w = newWatcher(d.con, d.start, d.cnt)
	for _, id := range d.ids() {
		if err := d.cl.start(id); err != nil {
			d.con.at(time.Since(d.start), bad, "cannot start node %d: %v", id, err)
			continue
		}
		d.running[id] = true
	}
	d.con.at(time.Since(d.start), action, "started %s", nodeList(d.ids()))
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
			switch {
			case d.victim == 0 && el >= d.at(killAt):
				d.kill()
			case d.victim != 0 && d.revived.IsZero() && el >= d.at(restartAt):
				d.restart()
			case el >= d.o.Duration:
				return false
			}
		}
	}
}

// kill crashes the coordinator of the current view.
func (d *demo) kill() {
	var running []uint64
	for _, id := range d.ids() {
		if d.running[id] {
			running = append(running, id)
		}
	}
	if len(running) == 0 {
		d.victim = ^uint64(0)
		d.revived = time.Now() // nothing to restart
		return
	}
	d.victim = running[len(running)-1]
	what := "the highest ID: no view yet"
	if v := d.w.current(running); v != nil && len(v.Members) > 0 && d.running[v.Members[0]] {
		d.victim = v.Members[0]
		what = "it was the coordinator of view " + v.ID + ", and so the total-order sequencer"
	}
	if d.w.holder == d.victim {
		what += "; it holds the lock"
	}
	d.killed = time.Now()
	d.w.down[d.victim] = true
	if err := d.cl.kill(d.victim); err != nil {
		d.con.at(time.Since(d.start), bad, "killing node %d: %v", d.victim, err)
		d.revived, d.killed = d.killed, time.Time{} // nothing killed, nothing to restart
		return
	}
	delete(d.running, d.victim)
	how := "SIGKILL"
	if d.mode == "in-process" {
		how = "as by SIGKILL: its sockets and its log cut off at once"
	}
	d.con.at(d.killed.Sub(d.start), action, "✖ node %d killed (%s): %s", d.victim, how, what)
}

// restart starts the killed node again, with the same ID.
func (d *demo) restart() {
	d.revived = time.Now()
	if err := d.cl.start(d.victim); err != nil {
		d.con.at(time.Since(d.start), bad, "restarting node %d: %v", d.victim, err)
		return
	}
	d.running[d.victim] = true
	delete(d.w.down, d.victim)
	d.con.at(d.revived.Sub(d.start), action, "↻ node %d restarted with the same ID (a new incarnation): it asks to join", d.victim)
}

// finish stops every node gracefully and reads the rest of their logs.
func (d *demo) finish(interrupted bool) {
	d.poll()
	if time.Since(d.w.tick.at) > time.Second {
		d.w.trafficLine(time.Now())
	}
	d.w.stop = true
	d.con.at(time.Since(d.start), action, "stopping every node (SIGTERM: each leaves the group, then exits)")
	if err := d.cl.stop(3*time.Second, interrupted); err != nil {
		d.con.at(time.Since(d.start), bad, "%v", err)
	}
	d.stopped = time.Now()
	d.poll()
	d.w.printViews(time.Now(), true)
	d.w.print()
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
