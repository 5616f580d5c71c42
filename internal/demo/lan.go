package demo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/huddle-lan/huddle/internal/lab"
)

// cluster runs the demo's nodes: as processes on a virtual LAN of network
// namespaces (lanCluster), or as goroutines over a simulated network in
// this process (procCluster). Both write one JSON log per node, appended
// to by a restart, in the same format.
type cluster interface {
	// start starts node id, or starts it again after kill.
	start(id uint64) error
	// kill stops node id at once, without a word to the group (SIGKILL).
	kill(id uint64) error
	// stop asks the running nodes to stop as SIGTERM does (each leaves
	// the group) and waits; one still running after grace is killed.
	// After an interrupt the nodes may have had the terminal's SIGINT
	// already, and a second signal would kill them: they get a moment to
	// stop by themselves first.
	stop(grace time.Duration, interrupted bool) error
	// logPath is node id's JSON log.
	logPath(id uint64) string
	// exits describes the nodes that exited by themselves since the last
	// call (a node that could not start, say).
	exits() []string
	// close releases everything the cluster made, killing what still runs.
	close() error
}

// groupAddr is the multicast group of the demo's nodes; it exists only on
// the demo's own LAN.
const groupAddr = "239.192.72.68:7468"

// lanCluster runs `huddle run` processes, one per host of a lab.LAN.
type lanCluster struct {
	lan   *lab.LAN
	bin   string
	dir   string
	args  func(id uint64) []string // the node's flags after "run"
	procs map[uint64]*lab.Proc
	told  map[*lab.Proc]bool // exited, and said so (or killed)
}

var _ cluster = (*lanCluster)(nil)

// newLAN builds a LAN of n hosts with loss on every host's ingress. The
// error explains in one line why no LAN can be built here.
func newLAN(n int, loss float64, bin, dir string, args func(uint64) []string) (*lanCluster, error) {
	if err := lab.Available(); err != nil {
		return nil, err
	}
	l, err := lab.New(lab.Options{Hosts: n, LogDir: dir, Grace: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	if loss > 0 {
		for h := 1; h <= n; h++ {
			if err := l.SetLoss(h, loss); err != nil {
				l.Close()
				return nil, fmt.Errorf("cannot apply loss on the virtual LAN: %w", err)
			}
		}
	}
	return &lanCluster{lan: l, bin: bin, dir: dir, args: args, procs: map[uint64]*lab.Proc{}, told: map[*lab.Proc]bool{}}, nil
}

// describe says what the LAN is made of, for the console.
func (c *lanCluster) describe(loss float64) string {
	mode := "as root"
	if c.lan.Mode() == "rootless" {
		mode = "unprivileged, in a user namespace"
	}
	s := fmt.Sprintf("%d network namespaces on a bridge (%s), subnet %s", c.lan.Hosts(), mode, c.lan.Subnet())
	if loss > 0 {
		s += fmt.Sprintf("; %s loss on each host's ingress by %s", pct(loss), c.lan.LossDescription())
	}
	return s
}

func (c *lanCluster) mode() string { return c.lan.Mode() }

func (c *lanCluster) logPath(id uint64) string {
	return filepath.Join(c.dir, fmt.Sprintf("node%d.json", id))
}

func (c *lanCluster) start(id uint64) error {
	argv := append([]string{c.bin, "run"}, c.args(id)...)
	argv = append(argv, "--iface", lab.Iface, "--addr", groupAddr, "--loopback=false",
		"--log-format", "json", "--log-file", c.logPath(id))
	p, err := c.lan.StartNode(int(id), "node"+strconv.FormatUint(id, 10), argv)
	if err != nil {
		return err
	}
	c.procs[id] = p
	return nil
}

func (c *lanCluster) kill(id uint64) error {
	p := c.procs[id]
	if p == nil || p.Exited() {
		return fmt.Errorf("node %d is not running", id)
	}
	c.told[p] = true
	if err := signalPID(nodePID(p, c.bin), syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL node %d: %w", id, err)
	}
	if err := p.WaitTimeout(5 * time.Second); err == nil || !p.Exited() {
		return fmt.Errorf("node %d did not die of SIGKILL: %v", id, err)
	}
	return nil
}

// settle is how long stop waits, after an interrupt, for nodes stopping
// by themselves: a graceful leave takes at most two suspect timeouts.
const settle = time.Second

func (c *lanCluster) stop(grace time.Duration, interrupted bool) error {
	if interrupted {
		c.waitExits(settle)
	}
	var running []*lab.Proc
	for _, p := range c.procs {
		c.told[p] = true
		if !p.Exited() {
			signalPID(nodePID(p, c.bin), syscall.SIGTERM)
			running = append(running, p)
		}
	}
	var errs []error
	deadline := time.Now().Add(grace)
	for _, p := range running {
		err := p.WaitTimeout(max(time.Until(deadline), 0))
		if !p.Exited() {
			p.Kill()
			p.Wait()
			errs = append(errs, fmt.Errorf("%s did not stop within %v of SIGTERM and was killed", p.Name, grace))
		} else if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v (see %s)", p.Name, err, p.LogPath()))
		}
	}
	return errors.Join(errs...)
}

// waitExits waits until every node has exited, or for d.
func (c *lanCluster) waitExits(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		done := true
		for _, p := range c.procs {
			done = done && p.Exited()
		}
		if done {
			return
		}
	}
}

func (c *lanCluster) exits() []string {
	var out []string
	for id, p := range c.procs {
		if p.Exited() && !c.told[p] {
			c.told[p] = true
			out = append(out, fmt.Sprintf("node %d exited by itself (exit code %d)%s", id, p.ExitCode(), lastLine(p.LogPath())))
		}
	}
	return out
}

// lastLine returns ": " and the last line of the file at path, if any.
func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := lines[len(lines)-1]; last != "" {
		return ": " + last
	}
	return ""
}

func (c *lanCluster) close() error { return c.lan.Close() }

// nodePID returns the PID of the huddle process p runs: p's own when
// `ip netns exec` (and nsenter) exec'd it in place, else p's only child
// running bin. Signals must reach the node, not a wrapper.
func nodePID(p *lab.Proc, bin string) int {
	pid := p.PID()
	want, err := os.Stat(bin)
	if err != nil {
		return pid
	}
	cur := pid
	for range 3 {
		if exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", cur)); err == nil && os.SameFile(exe, want) {
			return cur
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cur, cur))
		f := strings.Fields(string(b))
		if err != nil || len(f) != 1 {
			return pid
		}
		cur, _ = strconv.Atoi(f[0])
	}
	return pid
}

// signalPID sends sig to the process with this PID. (os.Process, unlike
// syscall.Kill, builds on every system; a LAN runs only on Linux.)
func signalPID(pid int, sig os.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Signal(sig)
}

// pct formats a probability as a percentage: "2%", "0.5%".
func pct(p float64) string {
	return strconv.FormatFloat(p*100, 'f', -1, 64) + "%"
}
