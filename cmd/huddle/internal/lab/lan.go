package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
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
	// pause and resume send node id SIGSTOP and SIGCONT.
	pause(id uint64) error
	resume(id uint64) error
	// setLoss changes what host id's ingress drops, from now on.
	setLoss(id uint64, m lan.LossModel) error
	// setMulticast makes the LAN forward multicast to host id or not.
	setMulticast(id uint64, on bool) error
	// setCPU holds node id to percent of one CPU (0: no longer), now
	// and across its restarts.
	setCPU(id uint64, percent float64) error
	// partition cuts the nodes of side off from the others; heal undoes
	// every partition.
	partition(side []uint64) error
	heal() error
	// call runs a control command (internal/control) on node id, as the
	// huddle commands do through its control socket.
	call(ctx context.Context, id uint64, cmd string, args any) (json.RawMessage, error)
}

// groupAddr is the multicast group of the demo's nodes; it exists only on
// the demo's own LAN.
const groupAddr = "239.192.72.68:7468"

// lanCluster runs `huddle run` processes, one per host of a lan.LAN,
// through the lab's runner of nodes.
type lanCluster struct {
	lan   *lan.LAN
	nodes *lan.Nodes
	args  func(id uint64) []string // the node's flags after "run"
	told  map[*lan.Node]bool       // exited, and said so (or killed)
	cpu   *lan.CPU                 // the nodes' CPU holds, once the first is asked for
	held  map[uint64]float64       // each held node's share of one CPU, in percent
}

var _ cluster = (*lanCluster)(nil)

// newLAN builds a LAN of n hosts with loss(h) on host h's ingress. The
// error explains in one line why no LAN can be built here.
func newLAN(n int, loss func(h uint64) lan.LossModel, bin, dir string, args func(uint64) []string) (*lanCluster, error) {
	if err := lan.Available(); err != nil {
		return nil, err
	}
	l, err := lan.New(lan.Options{Hosts: n, LogDir: dir, Grace: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	for h := 1; h <= n; h++ {
		if m := loss(uint64(h)); m != (lan.LossModel{}) {
			if err := l.SetLossModel(h, m); err != nil {
				l.Close()
				return nil, fmt.Errorf("cannot apply loss on the virtual LAN: %w", err)
			}
		}
	}
	nodes := lan.NewNodes(l, lan.NodesOptions{Bin: bin, Addr: groupAddr, Sockets: true, Args: []string{"--loopback=false"}})
	return &lanCluster{lan: l, nodes: nodes, args: args, told: map[*lan.Node]bool{}, held: map[uint64]float64{}}, nil
}

// openCPU makes ready to hold the nodes' CPU, or says why this system
// cannot: the run refuses a plan with cpu faults before it starts.
func (c *lanCluster) openCPU() error {
	if c.cpu != nil {
		return nil
	}
	cpu, err := lan.OpenCPU("huddle-lab-" + filepath.Base(c.lan.LogDir()) + "-")
	if err != nil {
		return err
	}
	c.cpu = cpu
	return nil
}

func (c *lanCluster) setCPU(id uint64, percent float64) error {
	if err := c.openCPU(); err != nil {
		return err
	}
	c.held[id] = percent
	n, err := c.running(id)
	if err != nil {
		return nil // held from its next start
	}
	return c.holdCPU(n)
}

// holdCPU puts node n's process under its CPU hold, if it has one.
func (c *lanCluster) holdCPU(n *lan.Node) error {
	percent, ok := c.held[n.ID]
	if !ok {
		return nil
	}
	pid, err := n.PID()
	if err != nil {
		return err
	}
	return c.cpu.Limit(fmt.Sprintf("node%d", n.ID), pid, percent)
}

// describe says what the LAN is made of, for the console; lossy says
// whether any host drops datagrams.
func (c *lanCluster) describe(lossy bool) string {
	mode := "as root"
	if c.lan.Mode() == "rootless" {
		mode = "unprivileged, in a user namespace"
	}
	s := fmt.Sprintf("%d network namespaces on a bridge (%s), subnet %s", c.lan.Hosts(), mode, c.lan.Subnet())
	if lossy {
		s += fmt.Sprintf("; loss on the hosts' ingress by %s", c.lan.LossDescription())
	}
	return s
}

func (c *lanCluster) mode() string { return c.lan.Mode() }

// logPath is node id's JSON log, where the runner puts it.
func (c *lanCluster) logPath(id uint64) string {
	return filepath.Join(c.lan.LogDir(), fmt.Sprintf("node%d.json", id))
}

func (c *lanCluster) start(id uint64) error {
	n, err := c.nodes.Start(int(id), c.args(id)...)
	if err != nil {
		return err
	}
	return c.holdCPU(n)
}

func (c *lanCluster) kill(id uint64) error {
	n := c.nodes.Node(int(id))
	if n == nil || n.Exited() {
		return fmt.Errorf("node %d is not running", id)
	}
	c.told[n] = true
	return n.Kill()
}

// settle is how long stop waits, after an interrupt, for nodes stopping
// by themselves: a graceful leave takes at most two suspect timeouts.
const settle = time.Second

func (c *lanCluster) stop(grace time.Duration, interrupted bool) error {
	if interrupted {
		c.waitExits(settle)
	}
	for _, n := range c.nodes.All() {
		c.told[n] = true
	}
	return c.nodes.Stop(grace)
}

// waitExits waits until every node has exited, or for d.
func (c *lanCluster) waitExits(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		done := true
		for _, n := range c.nodes.All() {
			done = done && n.Exited()
		}
		if done {
			return
		}
	}
}

func (c *lanCluster) exits() []string {
	var out []string
	for _, n := range c.nodes.All() {
		if n.Exited() && !c.told[n] {
			c.told[n] = true
			out = append(out, fmt.Sprintf("node %d exited by itself (exit code %d)%s", n.ID, n.Proc.ExitCode(), lastLine(n.Proc.LogPath())))
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

func (c *lanCluster) close() error {
	var err error
	if c.cpu != nil {
		err = c.cpu.Close()
	}
	return errors.Join(err, c.lan.Close())
}

// running returns node id if it runs.
func (c *lanCluster) running(id uint64) (*lan.Node, error) {
	n := c.nodes.Node(int(id))
	if n == nil || n.Exited() {
		return nil, fmt.Errorf("node %d is not running", id)
	}
	return n, nil
}

func (c *lanCluster) pause(id uint64) error {
	n, err := c.running(id)
	if err != nil {
		return err
	}
	return n.Pause()
}

func (c *lanCluster) resume(id uint64) error {
	n, err := c.running(id)
	if err != nil {
		return err
	}
	return n.Resume()
}

func (c *lanCluster) setLoss(id uint64, m lan.LossModel) error {
	return c.lan.SetLossModel(int(id), m)
}

func (c *lanCluster) setMulticast(id uint64, on bool) error {
	return c.lan.SetMulticast(int(id), on)
}

func (c *lanCluster) partition(side []uint64) error {
	var a, b []int
	for h := 1; h <= c.lan.Hosts(); h++ {
		if slices.Contains(side, uint64(h)) {
			a = append(a, h)
		} else {
			b = append(b, h)
		}
	}
	return c.lan.Cut(a, b)
}

func (c *lanCluster) heal() error { return c.lan.Heal() }

func (c *lanCluster) call(ctx context.Context, id uint64, cmd string, args any) (json.RawMessage, error) {
	n, err := c.running(id)
	if err != nil {
		return nil, err
	}
	return control.Call(ctx, n.Socket, callTimeout, cmd, args)
}

// callTimeout bounds a control command of the schedule: an election, or
// a lock's wait and hold.
const callTimeout = 2 * time.Minute

// pct formats a probability as a percentage: "2%", "0.5%".
func pct(p float64) string {
	return strconv.FormatFloat(p*100, 'f', -1, 64) + "%"
}
