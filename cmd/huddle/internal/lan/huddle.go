package lan

// The runner of huddle nodes on a LAN: the one way the benchmarks, the
// demo and the lab's own tests start `huddle run` processes, stop them and
// read their logs.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// HuddleBinEnv names a prebuilt huddle binary for BuildHuddle to return
// instead of building cmd/huddle (for a run as another user, say).
const HuddleBinEnv = "LAB_HUDDLE_BIN"

// ErrNoGo is BuildHuddle's error where no go command can build cmd/huddle.
var ErrNoGo = errors.New("go command not found: cannot build cmd/huddle")

// BuildHuddle returns the huddle binary the nodes run: $LAB_HUDDLE_BIN
// when set, else cmd/huddle built into dir with the go command.
func BuildHuddle(dir string) (string, error) {
	if bin := os.Getenv(HuddleBinEnv); bin != "" {
		return bin, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", ErrNoGo
	}
	bin := filepath.Join(dir, "huddle")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/huddle-lan/huddle/cmd/huddle").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build cmd/huddle: %v\n%s", err, out)
	}
	return bin, nil
}

// NodesOptions say how Nodes start their nodes.
type NodesOptions struct {
	Bin  string // the huddle binary (BuildHuddle)
	Addr string // the group's multicast address and port (--addr)
	// Prefix begins the name of each node's process: host h's node is
	// "<Prefix>node<h>", with its output in LAN.LogPath of that name and
	// its JSON log beside it, ending in .json.
	Prefix string
	// Sockets gives each node a control socket in a directory of the LAN
	// (Node.Socket); without it, --control-socket off.
	Sockets bool
	// Args are the flags every node gets after the runner's own (--id,
	// --iface, --addr, --control-socket, --log-format json, --log-file),
	// before the node's own; a later flag overrides an earlier one.
	Args []string
}

// Nodes runs huddle nodes on a LAN: one `huddle run` process per node,
// at most one running per host, node ID = host number. A node started
// again on its host (Start after it exited) has the same ID and appends
// to the same logs. LAN.Close stops whatever still runs.
type Nodes struct {
	lan   *LAN
	opts  NodesOptions
	mu    sync.Mutex
	nodes map[int]*Node // by host: the latest
}

// NewNodes returns a runner of nodes on l.
func NewNodes(l *LAN, o NodesOptions) *Nodes {
	return &Nodes{lan: l, opts: o, nodes: map[int]*Node{}}
}

// Node is one huddle process.
type Node struct {
	Host    int
	ID      uint64
	Name    string    // of its process (Proc.LogPath holds its output)
	Log     string    // its JSON log
	Socket  string    // its control socket; "" for none
	Proc    *Proc     // the process started, maybe a wrapper of huddle's (PID)
	Started time.Time // when Start was called
	bin     string
	mu      sync.Mutex
	pid     int
}

// Start starts a node on host (through LAN.StartNode, so that the
// built-in drop reaches it) with extra flags after the common ones. It
// fails while the host's previous node still runs.
func (ns *Nodes) Start(host int, extra ...string) (*Node, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if n := ns.nodes[host]; n != nil && !n.Proc.Exited() {
		return nil, fmt.Errorf("lab: node %d is running", host)
	}
	name := ns.opts.Prefix + "node" + strconv.Itoa(host)
	n := &Node{Host: host, ID: uint64(host), Name: name, bin: ns.opts.Bin,
		Log: strings.TrimSuffix(ns.lan.LogPath(name), ".log") + ".json"}
	sock := "off"
	if ns.opts.Sockets {
		ns.lan.mu.Lock()
		dir, err := ns.lan.socketDir()
		ns.lan.mu.Unlock()
		if err != nil {
			return nil, err
		}
		n.Socket = filepath.Join(dir, name+".sock")
		sock = n.Socket
	}
	argv := []string{ns.opts.Bin, "run", "--id", strconv.Itoa(host), "--iface", Iface, "--addr", ns.opts.Addr,
		"--control-socket", sock, "--log-format", "json", "--log-file", n.Log}
	argv = append(append(argv, ns.opts.Args...), extra...)
	argv = append(argv, ns.peerArgs(argv)...)
	n.Started = time.Now()
	p, err := ns.lan.StartNode(host, name, argv)
	if err != nil {
		return nil, err
	}
	n.Proc = p
	ns.nodes[host] = n
	return n, nil
}

// peerArgs gives a node whose flags choose the unicast transport, and list
// no peers, the peer list of the LAN: every host's address at the group's
// port.
func (ns *Nodes) peerArgs(argv []string) []string {
	unicast := false
	for i, a := range argv {
		switch {
		case a == "--peers" || strings.HasPrefix(a, "--peers="):
			return nil
		case a == "--transport=unicast", a == "--transport" && i+1 < len(argv) && argv[i+1] == "unicast":
			unicast = true
		case strings.HasPrefix(a, "--transport"):
			unicast = false // a later flag wins
		}
	}
	if !unicast {
		return nil
	}
	_, port, _ := net.SplitHostPort(ns.opts.Addr)
	peers := make([]string, 0, ns.lan.Hosts())
	for h := 1; h <= ns.lan.Hosts(); h++ {
		peers = append(peers, net.JoinHostPort(ns.lan.Host(h).Addr.String(), port))
	}
	return []string{"--peers", strings.Join(peers, ",")}
}

// Node returns host's latest node, nil if none was started.
func (ns *Nodes) Node(host int) *Node {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.nodes[host]
}

// All returns the latest node of every host, by host.
func (ns *Nodes) All() []*Node {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []*Node
	for _, h := range slices.Sorted(func(yield func(int) bool) {
		for h := range ns.nodes {
			if !yield(h) {
				return
			}
		}
	}) {
		out = append(out, ns.nodes[h])
	}
	return out
}

// Stop asks every running node to stop as SIGTERM does (after SIGCONT,
// should it be stopped: it leaves the group), waits up to grace, and
// kills those still running. The error names the nodes it killed and
// those that failed.
func (ns *Nodes) Stop(grace time.Duration) error {
	var running []*Node
	for _, n := range ns.All() {
		if !n.Exited() {
			if sigCont != nil {
				n.Signal(sigCont)
			}
			n.Signal(syscall.SIGTERM)
			running = append(running, n)
		}
	}
	var errs []error
	deadline := time.Now().Add(grace)
	for _, n := range running {
		err := n.Proc.WaitTimeout(max(time.Until(deadline), 0))
		switch {
		case !n.Proc.Exited():
			n.Proc.Kill()
			n.Proc.Wait()
			errs = append(errs, fmt.Errorf("%s did not stop within %v of SIGTERM and was killed", n.Name, grace))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %v (see %s)", n.Name, err, n.Proc.LogPath()))
		}
	}
	return errors.Join(errs...)
}

// Kill stops the node at once, without a word to the group (SIGKILL to
// the huddle process), and waits until it died.
func (n *Node) Kill() error {
	if err := n.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL %s: %w", n.Name, err)
	}
	if err := n.Proc.WaitTimeout(5 * time.Second); err == nil || !n.Proc.Exited() {
		return fmt.Errorf("%s did not die of SIGKILL: %v", n.Name, err)
	}
	return nil
}

// Signal sends sig to the huddle process; os.ErrProcessDone once it exited.
func (n *Node) Signal(sig os.Signal) error {
	if n.Exited() {
		return os.ErrProcessDone
	}
	pid, err := n.PID()
	if err != nil {
		return err
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Signal(sig)
}

// Exited reports whether the node's process has exited.
func (n *Node) Exited() bool { return n.Proc.Exited() }

// Pause freezes the node with SIGSTOP: it neither sends nor reads, and
// its socket's buffer fills, as a hung process's.
func (n *Node) Pause() error { return n.Signal(sigStop) }

// Resume lets a paused node go on (SIGCONT).
func (n *Node) Resume() error { return n.Signal(sigCont) }

// PID returns the ID of the huddle process (HuddlePID).
func (n *Node) PID() (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pid == 0 {
		pid, err := HuddlePID(n.Proc, n.bin)
		if err != nil {
			return 0, err
		}
		n.pid = pid
	}
	return n.pid, nil
}

// HuddlePID returns the ID of the huddle process p runs: p's own when `ip
// netns exec` (and nsenter) exec'd huddle in place, as iproute2 does
// outside batch mode, else that of its only child running bin, waited for
// up to 2 s. Signals and /proc reads must go there, not to a wrapper.
func HuddlePID(p *Proc, bin string) (int, error) {
	want, err := os.Stat(bin)
	if err != nil {
		return 0, err
	}
	pid := p.PID()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && os.SameFile(exe, want) {
			return pid, nil
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if f := strings.Fields(string(b)); len(f) == 1 {
			if c, err := strconv.Atoi(f[0]); err == nil {
				pid = c
			}
		}
		if p.Exited() {
			return 0, fmt.Errorf("%s exited (code %d):\n%s", p.Name, p.ExitCode(), p.Output(2000))
		}
	}
	return 0, fmt.Errorf("%s: PID %d is not huddle and has no single huddle child", p.Name, p.PID())
}

// PeakRSS is the huddle process's peak resident memory (VmHWM), in kB.
func (n *Node) PeakRSS() (int64, error) {
	pid, err := n.PID()
	if err != nil {
		return 0, err
	}
	return ProcStatus(pid, "VmHWM")
}

// Events reads the node's JSON log so far, leaving out a line being
// written: every event, or only those named (without decoding the other
// lines, which keeps polling a long log cheap). A log not written yet
// has none.
func (n *Node) Events(names ...string) []logs.Event {
	if len(names) == 0 {
		evs, _ := logs.ReadFile(n.Log)
		return evs
	}
	data, err := os.ReadFile(n.Log)
	if err != nil {
		return nil
	}
	var evs []logs.Event
	for line := range bytes.Lines(data) {
		for _, name := range names {
			if !bytes.Contains(line, logs.Tag(name)) {
				continue
			}
			if ev, ok := logs.Parse(line); ok && ev.Name == name {
				evs = append(evs, ev) // line is data's: no need to clone
			}
			break
		}
	}
	return evs
}

// LastEvent is the last complete line of the node's log that is the
// named event, looked for in the log's last 256 KiB only: what a poll
// that waits for a node's progress needs, at a cost that does not grow
// with the log (re-reading a long log every few milliseconds takes CPU
// from the nodes being measured).
func (n *Node) LastEvent(name string) (logs.Event, bool) {
	f, err := os.Open(n.Log)
	if err != nil {
		return logs.Event{}, false
	}
	defer f.Close()
	const tail = 256 << 10
	st, err := f.Stat()
	if err != nil {
		return logs.Event{}, false
	}
	off := max(0, st.Size()-tail)
	data := make([]byte, st.Size()-off)
	k, _ := f.ReadAt(data, off)
	data = data[:k]
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1] // leave out a line being written
	} else {
		return logs.Event{}, false
	}
	tag := logs.Tag(name)
	for len(data) > 0 {
		i := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
		line := data[i:]
		data = data[:i]
		if bytes.Contains(line, tag) {
			if ev, ok := logs.Parse(line); ok && ev.Name == name {
				return ev, true
			}
		}
	}
	return logs.Event{}, false
}

// View is a view.installed event of a node.
type View struct {
	Host                           int // of the node that installed it
	At                             time.Time
	ID, Prior                      string
	Members, Joined, Left, Crashed []uint64
	FlushMs                        int64
}

// ViewOf reads a view.installed event that host's node logged.
func ViewOf(host int, ev logs.Event) View {
	ids := func(key string) []uint64 {
		if v, _ := ev.Uints(key); v != nil {
			return v
		}
		return []uint64{}
	}
	v := View{Host: host, At: ev.Time, Members: ids(logs.MembersKey), Joined: ids(logs.JoinedKey),
		Left: ids(logs.LeftKey), Crashed: ids(logs.CrashedKey)}
	v.ID, _ = ev.Str(logs.ViewKey)
	v.Prior, _ = ev.Str(logs.PriorKey)
	if f, ok := ev.Uint(logs.FlushMsKey); ok {
		v.FlushMs = int64(f)
	}
	return v
}

func (v View) String() string { return fmt.Sprintf("%s%v", v.ID, v.Members) }

// Is reports whether the view's members are exactly the nodes of hosts.
func (v View) Is(hosts []int) bool {
	if len(v.Members) != len(hosts) {
		return false
	}
	for _, h := range hosts {
		if !slices.Contains(v.Members, uint64(h)) {
			return false
		}
	}
	return true
}

// Views returns the views the node installed so far, in order.
func (n *Node) Views() []View {
	var vs []View
	for _, ev := range n.Events(logs.ViewInstalled) {
		vs = append(vs, ViewOf(n.Host, ev))
	}
	return vs
}

// latest returns the node's latest view.
func (n *Node) latest() (View, bool) {
	vs := n.Views()
	if len(vs) == 0 {
		return View{}, false
	}
	return vs[len(vs)-1], true
}

// WaitViews waits until the node of each of hosts installed, at or after
// since, a view that ok accepts, and returns the first such view of each.
// It fails when one of those nodes exits meanwhile, or after timeout,
// saying where the nodes without one stand.
func (ns *Nodes) WaitViews(hosts []int, since time.Time, timeout time.Duration, ok func(host int, v View) bool) (map[int]View, error) {
	var found map[int]View
	err := ns.poll(hosts, timeout, func() bool {
		found = map[int]View{}
		for _, h := range hosts {
			if n := ns.Node(h); n != nil {
				vs := n.Views()
				if i := slices.IndexFunc(vs, func(v View) bool { return !v.At.Before(since) && ok(h, v) }); i >= 0 {
					found[h] = vs[i]
				}
			}
		}
		return len(found) == len(hosts)
	})
	if err == errNotYet {
		var missing []string
		for _, h := range hosts {
			if _, ok := found[h]; !ok {
				missing = append(missing, fmt.Sprintf("h%d (latest view %s)", h, ns.latestOf(h)))
			}
		}
		err = fmt.Errorf("not within %v at %s", timeout, strings.Join(missing, ", "))
	}
	return found, err
}

// WaitView waits until the nodes of hosts share a view: the latest view
// of each is the same view, whose members are exactly those nodes. It
// returns that view as each installed it.
func (ns *Nodes) WaitView(hosts []int, timeout time.Duration) (map[int]View, error) {
	var latest map[int]View
	err := ns.poll(hosts, timeout, func() bool {
		latest = map[int]View{}
		ids := map[string]bool{}
		for _, h := range hosts {
			if n := ns.Node(h); n != nil {
				if v, ok := n.latest(); ok && v.Is(hosts) {
					latest[h], ids[v.ID] = v, true
				}
			}
		}
		return len(latest) == len(hosts) && len(ids) == 1
	})
	if err == errNotYet {
		var at []string
		for _, h := range hosts {
			at = append(at, fmt.Sprintf("h%d %s", h, ns.latestOf(h)))
		}
		err = fmt.Errorf("no view shared by %v within %v: latest views %s", hosts, timeout, strings.Join(at, ", "))
	}
	if err != nil {
		return nil, err
	}
	return latest, nil
}

// errNotYet is poll's error when the time ran out.
var errNotYet = errors.New("not yet")

// poll calls done every 10 ms until it reports true; it fails when a node
// of hosts exits meanwhile, or with errNotYet after timeout.
func (ns *Nodes) poll(hosts []int, timeout time.Duration, done func() bool) error {
	for end := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		if done() {
			return nil
		}
		for _, h := range hosts {
			if n := ns.Node(h); n != nil && n.Exited() {
				return fmt.Errorf("h%d exited (code %d):\n%s", h, n.Proc.ExitCode(), n.Proc.Output(2000))
			}
		}
		if time.Now().After(end) {
			return errNotYet
		}
	}
}

// latestOf describes host's latest view.
func (ns *Nodes) latestOf(host int) string {
	if n := ns.Node(host); n != nil {
		if v, ok := n.latest(); ok {
			return v.String()
		}
	}
	return "none"
}
