package lan

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSubnet is the IPv4 subnet of a LAN when Options.Subnet is empty.
// It only exists inside the lab's namespaces.
const DefaultSubnet = "10.77.0.0/24"

// Iface is the name of every host's interface on the LAN.
const Iface = "eth0"

// Options configure a LAN.
type Options struct {
	Hosts  int                              // number of hosts, at least 1
	Subnet string                           // IPv4 prefix; host i gets address i; default DefaultSubnet
	Loss   float64                          // random ingress loss of every host, 0..1
	Logf   func(format string, args ...any) // progress and method choices; nil: silent

	// LogDir receives the output of started processes. When empty, New
	// creates a temporary directory that Close removes.
	LogDir string
	// Rootless forces the unprivileged mode (a private user namespace)
	// even when running as root.
	Rootless bool
	// Grace is how long Close waits after SIGTERM before SIGKILL; default 3s.
	Grace time.Duration
	// LossMethod forces how loss is applied (MethodNetem, MethodIptables,
	// MethodNft, MethodBuiltin); empty picks the first that works here.
	LossMethod string
	// CutMethod forces how cuts are made (MethodIptables, MethodNft,
	// MethodRoute); empty picks the first that works here.
	CutMethod string
	// Seed seeds the built-in drop of the nodes (host i's node gets
	// Seed*1000+i), so that a run's drop pattern repeats; default 1.
	Seed uint64
}

// Host is one machine of the LAN. Hosts are numbered 1..N, and host i has
// the i-th address of the subnet (10.77.0.i by default).
type Host struct {
	Index int        // 1..N
	Name  string     // "h1", "h2", ...
	Netns string     // network namespace name, unique per LAN and process
	Addr  netip.Addr // IPv4 address on Iface
	Iface string     // always "eth0"
	Port  string     // the host's veth end on the hub's bridge
}

// MAC is the Ethernet address of the host's Iface: locally administered,
// and the host's index in its last three bytes.
func (h Host) MAC() string {
	return fmt.Sprintf("02:68:75:%02x:%02x:%02x", byte(h.Index>>16), byte(h.Index>>8), byte(h.Index))
}

// LAN is a virtual Ethernet segment: a hub namespace holding a bridge and
// one namespace per host, each linked to the bridge by a veth pair.
type LAN struct {
	opts   Options
	id     int
	prefix string // namespace name prefix, "hud<pid>-<id>"
	hub    string
	hosts  []Host
	bits   int
	run    *runner
	logDir string
	ownDir bool

	mu       sync.Mutex
	procs    []*Proc
	fw       firewall // lazily probed
	fwReady  map[int]bool
	lossMeth string
	cutMeth  string
	cuts     bool
	// kernelLossWhyNot says why no kernel loss method works (builtin).
	kernelLossWhyNot string
	netemWhyNot      string                  // why the loss method is not netem
	models           map[int]LossModel       // host → its loss model in force
	sockets          map[int]string          // host → control socket of the node StartNode started there
	sockDir          string                  // holds those sockets; made on first use
	rpFilter         map[int]bool            // route cuts: strict reverse-path filtering is on in the host
	blackholes       map[int]map[string]bool // route cuts: host → addresses blackholed
	closed           bool
	closeErr         error
	closeOnce        sync.Once
}

// registry of the LANs alive in this process, so that the stale sweep never
// touches a LAN being built or used.
var (
	regMu  sync.Mutex
	regIDs = map[int]bool{}
	regSeq int
)

func register() int {
	regMu.Lock()
	defer regMu.Unlock()
	regSeq++
	regIDs[regSeq] = true
	return regSeq
}

func unregister(id int) {
	regMu.Lock()
	defer regMu.Unlock()
	delete(regIDs, id)
}

func registered(id int) bool {
	regMu.Lock()
	defer regMu.Unlock()
	return regIDs[id]
}

// New builds a LAN. The caller must Close it, typically with
// t.Cleanup(func() { lan.Close() }). Errors wrap ErrUnavailable when the
// machine cannot host a virtual LAN at all.
func New(opts Options) (*LAN, error) {
	l, err := newLAN(opts)
	if err != nil {
		return nil, err
	}
	if err := l.build(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// newLAN validates the options and picks the mode, without building.
func newLAN(opts Options) (*LAN, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Grace <= 0 {
		opts.Grace = 3 * time.Second
	}
	if opts.Subnet == "" {
		opts.Subnet = DefaultSubnet
	}
	if opts.Loss < 0 || opts.Loss > 1 {
		return nil, fmt.Errorf("lab: loss %v outside 0..1", opts.Loss)
	}
	if !slices.Contains([]string{"", MethodNetem, MethodIptables, MethodNft, MethodBuiltin}, opts.LossMethod) {
		return nil, fmt.Errorf("lab: loss method %q: want netem, iptables, nft or builtin", opts.LossMethod)
	}
	if !slices.Contains([]string{"", MethodIptables, MethodNft, MethodRoute}, opts.CutMethod) {
		return nil, fmt.Errorf("lab: cut method %q: want iptables, nft or route", opts.CutMethod)
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	prefix, err := netip.ParsePrefix(opts.Subnet)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 30 {
		return nil, fmt.Errorf("lab: subnet %q: want an IPv4 prefix of at most /30", opts.Subnet)
	}
	if max := 1<<(32-prefix.Bits()) - 2; opts.Hosts < 1 || opts.Hosts > max {
		return nil, fmt.Errorf("lab: %d hosts: want 1..%d for subnet %s", opts.Hosts, max, opts.Subnet)
	}
	run, err := pickRunner(opts.Rootless)
	if err != nil {
		return nil, err
	}
	l := &LAN{opts: opts, run: run, bits: prefix.Bits(), fw: testFirewall, fwReady: map[int]bool{},
		models: map[int]LossModel{}, sockets: map[int]string{}, rpFilter: map[int]bool{}, blackholes: map[int]map[string]bool{}}
	for _, m := range []string{opts.LossMethod, opts.CutMethod} {
		switch m {
		case MethodIptables:
			l.fw = fwIptables
		case MethodNft:
			l.fw = fwNft
		}
	}
	l.id = register()
	l.prefix = fmt.Sprintf("hud%d-%d", selfPID, l.id)
	l.hub = l.prefix + "-hub"
	addr := prefix.Masked().Addr()
	for i := 1; i <= opts.Hosts; i++ {
		addr = addr.Next()
		l.hosts = append(l.hosts, Host{
			Index: i, Name: "h" + strconv.Itoa(i), Netns: fmt.Sprintf("%s-h%d", l.prefix, i),
			Addr: addr, Iface: Iface, Port: "port" + strconv.Itoa(i),
		})
	}
	return l, nil
}

// pickRunner returns the root runner when it works, else a rootless one.
func pickRunner(forceRootless bool) (*runner, error) {
	if !forceRootless {
		if rootReason() == nil {
			return rootRunner(), nil
		}
		if err := Available(); err != nil {
			return nil, err
		}
	}
	run, err := rootlessRunner()
	if err != nil {
		return nil, fmt.Errorf("%w: unprivileged user namespaces are unusable (%s)", ErrUnavailable, oneLine(err))
	}
	return run, nil
}

// build creates the namespaces, the bridge, the veths and the addresses.
func (l *LAN) build() error {
	start := time.Now()
	if !l.run.rootless() {
		l.sweepStale()
	}
	if err := l.setupDir(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "netns add %s\n", l.hub)
	for _, h := range l.hosts {
		fmt.Fprintf(&b, "netns add %s\n", h.Netns)
	}
	if _, err := l.run.run(b.String(), "ip", "-b", "-"); err != nil {
		return err
	}
	if err := l.buildHub(); err != nil {
		return err
	}
	for _, h := range l.hosts {
		if err := l.buildHost(h); err != nil {
			return err
		}
	}
	if l.opts.Loss > 0 {
		for _, h := range l.hosts {
			if err := l.SetLoss(h.Index, l.opts.Loss); err != nil {
				return err
			}
		}
	}
	l.opts.Logf("lab: LAN %s: %d hosts on %s (%s mode) built in %v, logs in %s",
		l.prefix, len(l.hosts), l.opts.Subnet, l.Mode(), time.Since(start).Round(time.Millisecond), l.logDir)
	return nil
}

func (l *LAN) setupDir() error {
	if l.opts.LogDir != "" {
		l.logDir = l.opts.LogDir
		return os.MkdirAll(l.logDir, 0o755)
	}
	dir, err := os.MkdirTemp("", "huddle-lab-"+l.prefix+"-")
	if err != nil {
		return fmt.Errorf("lab: log dir: %w", err)
	}
	l.logDir, l.ownDir = dir, true
	return nil
}

// buildHub creates the bridge (multicast snooping off, so multicast floods
// without an IGMP querier) and one veth pair per host, whose far end lands
// in the host namespace as eth0.
func (l *LAN) buildHub() error {
	var b strings.Builder
	b.WriteString("link add br0 type bridge stp_state 0 mcast_snooping 0\n")
	b.WriteString("link set br0 up\n")
	for _, h := range l.hosts {
		fmt.Fprintf(&b, "link add %s type veth peer name %s address %s netns %s\n", h.Port, h.Iface, h.MAC(), h.Netns)
		fmt.Fprintf(&b, "link set %s master br0 up\n", h.Port)
	}
	if _, err := l.run.run(b.String(), "ip", "-n", l.hub, "-b", "-"); err != nil {
		return err
	}
	// Where br_netfilter is loaded, every frame the bridge forwards goes
	// through the hub's iptables hooks, once per port it floods to: a cost
	// per datagram and receiver that a LAN's switch does not have (it cut
	// the raw ceiling by about a quarter). Nothing of the lab filters in
	// the hub, so the hooks are turned off there, as far as they exist.
	if _, err := l.run.run("", "ip", "netns", "exec", l.hub, "sh", "-c",
		`for f in /proc/sys/net/bridge/bridge-nf-call-*; do [ -e "$f" ] && echo 0 > "$f"; done; `+noIPv6); err != nil {
		l.opts.Logf("lab: the bridge's netfilter hooks stay on: %v", err)
	}
	return nil
}

// noIPv6 turns IPv6 off in a namespace, as far as it can: huddle is IPv4,
// and IPv6's own chatter (duplicate address detection, MLD reports,
// router solicitations) is traffic a benchmark's LAN does without.
const noIPv6 = `for f in /proc/sys/net/ipv6/conf/all/disable_ipv6 /proc/sys/net/ipv6/conf/default/disable_ipv6; do [ -e "$f" ] && echo 1 > "$f"; done; true`

// buildHost brings up lo (with multicast) and eth0 with its address and a
// multicast route, and gives it every other host's MAC address for good.
// The kernel keeps one neighbour table for all namespaces, and refuses
// new entries past net.ipv4.neigh.default.gc_thresh3 (1024) in all of them
// together: a LAN of 32 hosts, each resolving the other 31, reaches it
// alone (and two LANs at once pass it), and then sends fail with ENOBUFS,
// multicast too, since the group's address takes an entry of its own.
// Permanent entries do not count towards that limit, and a LAN's hosts
// keep their addresses, so no host of the lab resolves another by ARP.
func (l *LAN) buildHost(h Host) error {
	var b strings.Builder
	b.WriteString("link set lo multicast on up\n")
	fmt.Fprintf(&b, "addr add %s/%d dev %s\n", h.Addr, l.bits, h.Iface)
	fmt.Fprintf(&b, "link set %s up\n", h.Iface)
	fmt.Fprintf(&b, "route add 224.0.0.0/4 dev %s\n", h.Iface)
	for _, o := range l.hosts {
		if o.Index != h.Index {
			fmt.Fprintf(&b, "neigh replace %s lladdr %s dev %s nud permanent\n", o.Addr, o.MAC(), h.Iface)
		}
	}
	if _, err := l.run.run("", "ip", "netns", "exec", h.Netns, "sh", "-c", noIPv6); err != nil {
		l.opts.Logf("lab: IPv6 stays on in %s: %v", h.Netns, err)
	}
	if _, err := l.run.run(b.String(), "ip", "-n", h.Netns, "-b", "-"); err != nil {
		return err
	}
	// One datagram per frame, as on a wire: a veth would otherwise carry
	// a sender's run of datagrams (UDP segmentation offload) to the bridge
	// and the receivers whole, to be cut apart only at each receiving
	// socket, after the INPUT hook where the lab drops at random: a loss
	// would take the whole run. With one segment at most the sender's
	// kernel cuts the run before the device, as a card without UDP
	// segmentation does. A kernel or an ip that cannot change it on a
	// device that exists (older ones) leaves the LAN working, with that
	// caveat.
	if _, err := l.run.run("", "ip", "-n", h.Netns, "link", "set", h.Iface, "gso_max_segs", "1"); err != nil {
		l.opts.Logf("lab: %s carries runs of datagrams whole (%v): a random drop there takes a run", h.Netns, err)
	}
	return nil
}

// SetMulticast makes the bridge forward multicast to host's port (on) or
// not, as a switch with IGMP snooping whose querier is gone stops
// forwarding a group to its members after a few minutes: unicast and
// broadcast (ARP) still pass, and the host's own multicast still reaches
// the others. It needs only ip(8): the bridge port's mcast_flood flag,
// which the bridge obeys for every multicast frame while its own snooping
// is off (buildHub).
func (l *LAN) SetMulticast(host int, on bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	h, err := l.host(host)
	if err != nil {
		return err
	}
	flag := "on"
	if !on {
		flag = "off"
	}
	_, err = l.run.run("", "ip", "-n", l.hub, "link", "set", "dev", h.Port, "type", "bridge_slave", "mcast_flood", flag)
	return err
}

// Hosts returns the number of hosts.
func (l *LAN) Hosts() int { return len(l.hosts) }

// Host returns host i (1..N); it panics when i is out of range.
func (l *LAN) Host(i int) Host {
	if i < 1 || i > len(l.hosts) {
		panic(fmt.Sprintf("lab: host %d out of range 1..%d", i, len(l.hosts)))
	}
	return l.hosts[i-1]
}

func (l *LAN) host(i int) (Host, error) {
	if i < 1 || i > len(l.hosts) {
		return Host{}, fmt.Errorf("lab: host %d out of range 1..%d", i, len(l.hosts))
	}
	return l.hosts[i-1], nil
}

// Prefix is the prefix of every namespace name of this LAN.
func (l *LAN) Prefix() string { return l.prefix }

// LogDir is the directory holding the logs of started processes.
func (l *LAN) LogDir() string { return l.logDir }

// Mode is "root" or "rootless".
func (l *LAN) Mode() string {
	if l.run.rootless() {
		return "rootless"
	}
	return "root"
}

// Close stops every process started with Start (SIGTERM, then SIGKILL after
// the grace period), deletes the namespaces and with them the bridge and
// veths, and removes the log directory if New created it. It is idempotent.
func (l *LAN) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		procs := append([]*Proc(nil), l.procs...)
		l.mu.Unlock()
		stopAll(procs, l.opts.Grace)
		errs := []error{l.deleteNamespaces(), l.run.close()}
		if l.ownDir {
			errs = append(errs, os.RemoveAll(l.logDir))
		}
		if l.sockDir != "" {
			errs = append(errs, os.RemoveAll(l.sockDir))
		}
		unregister(l.id)
		l.closeErr = errors.Join(errs...)
		l.opts.Logf("lab: LAN %s closed", l.prefix)
	})
	return l.closeErr
}

// deleteNamespaces kills what still runs in this LAN's namespaces and
// deletes them (hosts first, then the hub).
func (l *LAN) deleteNamespaces() error {
	names, err := l.listNetns()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if strings.HasPrefix(name, l.prefix+"-") && name != l.hub {
			errs = append(errs, l.deleteNetns(name))
		}
	}
	for _, name := range names {
		if name == l.hub {
			errs = append(errs, l.deleteNetns(name))
		}
	}
	return errors.Join(errs...)
}

// deleteNetns kills the processes left in a namespace of ours, then deletes it.
func (l *LAN) deleteNetns(name string) error {
	if out, err := l.run.run("", "ip", "netns", "pids", name); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				killPID(pid) // ours: it runs in our namespace
			}
		}
	}
	_, err := l.run.run("", "ip", "netns", "del", name)
	if isNotExist(err) {
		return nil
	}
	return err
}

func (l *LAN) listNetns() ([]string, error) {
	return listNetns(l.run)
}

// listNetns returns the names of the namespaces `ip netns list` shows.
func listNetns(r *runner) ([]string, error) {
	out, err := r.run("", "ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

var staleName = regexp.MustCompile(`^hud(\d+)-(\d+)-`)

// sweepStale deletes lab namespaces left by processes that no longer exist
// (or by an earlier process that had our PID), killing what runs in them.
func (l *LAN) sweepStale() {
	names, err := l.listNetns()
	if err != nil {
		return
	}
	for _, name := range names {
		m := staleName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		id, _ := strconv.Atoi(m[2])
		if pidAlive(pid) && (pid != selfPID || registered(id)) {
			continue
		}
		l.opts.Logf("lab: removing stale namespace %s", name)
		if err := l.deleteNetns(name); err != nil {
			l.opts.Logf("lab: %v", err)
		}
	}
}

// Subnet returns the LAN's prefix as given or defaulted.
func (l *LAN) Subnet() string { return l.opts.Subnet }

// LogPath returns the path a process called name logs to.
func (l *LAN) LogPath(name string) string {
	return filepath.Join(l.logDir, name+".log")
}
