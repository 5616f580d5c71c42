package lab

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
)

// The kinds of Action.
const (
	DoKill      = "kill"      // SIGKILL: the node vanishes without a word
	DoRestart   = "restart"   // start a killed or exited node again, with the same ID
	DoStop      = "stop"      // SIGSTOP: the node hangs, its sockets fill
	DoContinue  = "continue"  // SIGCONT
	DoPartition = "partition" // cut the LAN in two
	DoHeal      = "heal"      // undo every partition
	DoLoss      = "loss"      // change hosts' loss
	DoElect     = "elect"     // start an election from a node (huddle elect)
	DoLock      = "lock"      // take the group's lock on a node, hold it, release it (huddle lock)
	DoMcastOff  = "mcast-off" // the bridge stops forwarding multicast to hosts (a snooping switch without a querier)
	DoMcastOn   = "mcast-on"  // and forwards it again
	DoCPU       = "cpu"       // hold nodes to a share of one CPU (a control group's quota), or lift the hold (0)
)

// Kinds lists the kinds of Action, in the order the docs give them.
var Kinds = []string{DoKill, DoRestart, DoStop, DoContinue, DoPartition, DoHeal, DoLoss, DoElect, DoLock, DoMcastOff, DoMcastOn, DoCPU}

// Action is one step of a run's schedule: a fault, or a request to a node.
type Action struct {
	At time.Duration // since the nodes were started
	Do string        // one of Kinds
	// Nodes are what it acts on: the nodes to kill, restart, stop,
	// continue, or to elect or lock from; one side of a partition (the
	// other nodes are the other side); the hosts whose loss changes, or
	// that multicast is taken from or given back to. Empty means: for
	// restart, the nodes killed and not restarted yet; for continue, the
	// nodes stopped; for loss, mcast-off and mcast-on, every host.
	Nodes []uint64
	// Coordinator acts on the coordinator of the view the running nodes
	// installed last, instead of Nodes (kill, stop, elect, lock, and the
	// side of a partition).
	Coordinator bool
	Loss        lan.LossModel // loss: the hosts' new loss
	Hold        time.Duration // lock: how long to hold the lock
	CPU         float64       // cpu: the share of one CPU the nodes get, in percent; 0 lifts the hold
	Drawn       bool          // drawn at random from a seed (for the record)
}

// String says what the action does, for the console and lab.json.
func (a Action) String() string {
	who := nodeList(a.Nodes)
	if a.Coordinator {
		who = "the coordinator"
	}
	switch a.Do {
	case DoRestart:
		if len(a.Nodes) == 0 {
			return "restart the nodes killed"
		}
	case DoContinue:
		if len(a.Nodes) == 0 {
			return "continue the nodes stopped"
		}
	case DoPartition:
		return "partition " + who + " from the others"
	case DoHeal:
		return "heal the partition"
	case DoLoss:
		where := "every host"
		if len(a.Nodes) > 0 {
			where = strings.Replace(who, "node", "host", 1)
		}
		return fmt.Sprintf("%s on %s", a.Loss, where)
	case DoLock:
		return fmt.Sprintf("lock from %s, hold %v", who, a.Hold)
	case DoMcastOff, DoMcastOn:
		where := "every host"
		if len(a.Nodes) > 0 {
			where = strings.Replace(who, "node", "host", 1)
		}
		if a.Do == DoMcastOff {
			return "multicast no longer forwarded to " + where
		}
		return "multicast forwarded again to " + where
	case DoElect:
		return "election from " + who
	case DoCPU:
		if a.CPU == 0 {
			return "CPU of " + who + " no longer held"
		}
		return fmt.Sprintf("CPU of %s held to %v %% of one core", who, a.CPU)
	}
	return a.Do + " " + who
}

// Validate checks an action against a group of n nodes; in says whether
// the nodes run in this process (no signals, no burst or delay there).
func (a Action) Validate(n int, inProcess bool) error {
	if !slices.Contains(Kinds, a.Do) {
		return fmt.Errorf("do %q: want one of %s", a.Do, strings.Join(Kinds, ", "))
	}
	if a.At < 0 {
		return fmt.Errorf("%s at %v: the time must not be negative", a.Do, a.At)
	}
	for _, id := range a.Nodes {
		if id < 1 || id > uint64(n) {
			return fmt.Errorf("%s: node %d: want 1 to %d", a.Do, id, n)
		}
	}
	needs := len(a.Nodes) == 0 && !a.Coordinator
	switch a.Do {
	case DoKill, DoStop, DoElect:
		if needs {
			return fmt.Errorf("%s at %v: name the nodes, or the coordinator", a.Do, a.At)
		}
	case DoPartition:
		if needs {
			return fmt.Errorf("partition at %v: name the nodes of one side, or the coordinator", a.At)
		}
		if len(a.Nodes) >= n {
			return fmt.Errorf("partition at %v: one side holds every node; leave some for the other", a.At)
		}
	case DoLoss:
		if err := a.Loss.Validate(); err != nil {
			return fmt.Errorf("loss at %v: %w", a.At, err)
		}
		if inProcess && !randomOnly(a.Loss) {
			return fmt.Errorf("loss at %v: %w", a.At, errRandomOnly)
		}
	case DoCPU:
		if needs {
			return fmt.Errorf("cpu at %v: name the nodes, or the coordinator", a.At)
		}
		if a.CPU < 0 || a.CPU > 100*1024 {
			return fmt.Errorf("cpu at %v: %v %%: want 0 (lift the hold), or the share of one CPU in percent (1 holds a node to 1 %% of a core)", a.At, a.CPU)
		}
		if inProcess {
			return fmt.Errorf("cpu at %v: holding a node's CPU needs the nodes as processes, on a virtual LAN", a.At)
		}
	case DoLock:
		if needs {
			return fmt.Errorf("lock at %v: name the nodes, or the coordinator", a.At)
		}
		if a.Hold < 0 || a.Hold > time.Hour {
			return fmt.Errorf("lock at %v: hold %v: want 0 to 1h", a.At, a.Hold)
		}
	}
	if a.Coordinator && (a.Do == DoMcastOff || a.Do == DoMcastOn) {
		return fmt.Errorf("%s at %v: name the hosts (or none for every host), not the coordinator", a.Do, a.At)
	}
	if inProcess && (a.Do == DoMcastOff || a.Do == DoMcastOn) {
		return fmt.Errorf("%s at %v: taking multicast away needs a virtual LAN's bridge", a.Do, a.At)
	}
	if inProcess && (a.Do == DoStop || a.Do == DoContinue) {
		return fmt.Errorf("%s at %v: SIGSTOP and SIGCONT need the nodes as processes, on a virtual LAN", a.Do, a.At)
	}
	return nil
}

// holdsCPU says whether the plan holds a node's CPU at some point.
func (p *Plan) holdsCPU() bool {
	if p == nil {
		return false
	}
	return slices.ContainsFunc(p.Actions, func(a Action) bool { return a.Do == DoCPU })
}

// randomOnly says whether m is random loss alone, all that the nodes in
// this process can have (memnet's per-link loss).
func randomOnly(m lan.LossModel) bool { return m.Burst <= 1 && m.Delay == 0 && m.Jitter == 0 }

var errRandomOnly = errors.New("bursts, delay and jitter need a virtual LAN; in this process loss is random only")

// Plan is what a lab run does instead of the demo's own story: the
// nodes' settings, the network's loss and the schedule of faults and
// requests. The engine's own flags come first (--profile local, logs,
// --trace-deliveries, stats every second), then Args, then the node's
// NodeArgs: a later flag wins.
type Plan struct {
	Name     string
	Args     []string            // `huddle run` flags of every node
	NodeArgs map[uint64][]string // a node's own flags
	Loss     lan.LossModel       // every host's loss at the start
	HostLoss map[uint64]lan.LossModel
	Actions  []Action // in time order
}

// lossOf is host id's loss at the start.
func (p *Plan) lossOf(id uint64) lan.LossModel {
	if m, ok := p.HostLoss[id]; ok {
		return m
	}
	return p.Loss
}

// validate checks the plan for a group of n nodes.
func (p *Plan) validate(n int, inProcess bool) error {
	for id, m := range p.HostLoss {
		if id < 1 || id > uint64(n) {
			return fmt.Errorf("loss of host %d: want a host of 1 to %d", id, n)
		}
		if err := m.Validate(); err != nil {
			return fmt.Errorf("loss of host %d: %w", id, err)
		}
	}
	for id := range p.NodeArgs {
		if id < 1 || id > uint64(n) {
			return fmt.Errorf("settings of node %d: want a node of 1 to %d", id, n)
		}
	}
	if err := p.Loss.Validate(); err != nil {
		return err
	}
	for i := range p.Actions {
		if err := p.Actions[i].Validate(n, inProcess); err != nil {
			return err
		}
		if i > 0 && p.Actions[i].At < p.Actions[i-1].At {
			return fmt.Errorf("the actions are not in time order: %s at %v comes after %v", p.Actions[i].Do, p.Actions[i].At, p.Actions[i-1].At)
		}
	}
	if inProcess {
		for id := uint64(0); id <= uint64(n); id++ {
			if m := p.lossOf(id); !randomOnly(m) {
				return fmt.Errorf("loss %s: %w", m, errRandomOnly)
			}
		}
	}
	return nil
}

// demoPlan is the demo's own story as actions: the coordinator killed at
// 40 % of the run and restarted at 65 %.
func demoPlan(d time.Duration) []Action {
	at := func(f float64) time.Duration { return time.Duration(f * float64(d)).Round(100 * time.Millisecond) }
	return []Action{{At: at(killAt), Do: DoKill, Coordinator: true}, {At: at(restartAt), Do: DoRestart}}
}
