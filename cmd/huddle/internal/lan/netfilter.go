package lan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/huddle-lan/huddle/internal/systool"
)

// The ways to apply loss (LossMethod) and cuts (CutMethod).
const (
	MethodNetem    = "netem"    // loss: a netem qdisc on the hub's port toward the host
	MethodIptables = "iptables" // loss and cuts: iptables rules in the host
	MethodNft      = "nft"      // loss and cuts: nft rules in the host
	MethodBuiltin  = "builtin"  // loss: the huddle nodes' own drop (--drop-rate), for nodes started with StartNode
	MethodRoute    = "route"    // cuts: blackhole routes to the other side and strict reverse-path filtering
)

// firewall is the packet filter used in host namespaces for loss and cuts.
type firewall int

const (
	fwUnknown firewall = iota
	fwIptables
	fwNft
)

func (f firewall) String() string {
	switch f {
	case fwIptables:
		return MethodIptables
	case fwNft:
		return MethodNft
	}
	return "none"
}

// Chains of the lab in each host: cuts first, then loss, both on INPUT.
const iptablesInit = `*filter
:HUDLAB-CUT - [0:0]
:HUDLAB-LOSS - [0:0]
-A INPUT -j HUDLAB-CUT
-A INPUT -j HUDLAB-LOSS
-A HUDLAB-LOSS -i eth0 -m statistic --mode random --probability 0 -j DROP
-F HUDLAB-LOSS
COMMIT
`

const nftInit = `table inet hudlab {
	chain cut { type filter hook input priority -10; policy accept; }
	chain loss { type filter hook input priority -5; policy accept; }
}
add rule inet hudlab loss iifname "eth0" numgen random mod 1000000 < 0 drop
flush chain inet hudlab loss
`

// testFirewall, when set, is the packet filter new LANs use (tests only).
var testFirewall firewall

// nftScale is the resolution of nft loss probabilities.
const nftScale = 1000000

// SetLoss makes host drop each datagram it receives on eth0 with
// probability p, independently of the other hosts; p=0 removes the loss.
// It is SetLossModel(host, LossModel{Loss: p}). The method (see
// LossMethod) is chosen on first use: netem, else iptables or nft, else
// the nodes' built-in drop, which reaches only huddle nodes started with
// StartNode (a node started later gets the loss in force).
func (l *LAN) SetLoss(host int, p float64) error {
	return l.SetLossModel(host, LossModel{Loss: p})
}

// LossMethod says how loss is applied: "netem", "iptables", "nft" or
// "builtin"; it probes on host 1 if SetLoss was not called yet, and is ""
// when none works (only when Options.LossMethod forces one).
func (l *LAN) LossMethod() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.chooseLoss(l.hosts[0])
	}
	return l.lossMeth
}

// LossDescription says in one line how loss is applied, and for the
// built-in drop why the kernel could not apply it.
func (l *LAN) LossDescription() string {
	switch m := l.LossMethod(); m {
	case MethodNetem:
		return "netem on each host's port of the bridge"
	case MethodIptables, MethodNft:
		return m + " random drop in each host (loss in bursts: the nodes' built-in drop)"
	case MethodBuiltin:
		return "the nodes' built-in drop (--drop-rate), since " + l.kernelLossWhyNot
	}
	return "none"
}

var errClosed = errors.New("lab: LAN closed")

// chooseLoss picks the loss method once, trying netem on the hub side of h,
// then the host firewall, then the built-in drop, and logs the choice; the
// caller holds l.mu.
func (l *LAN) chooseLoss(h Host) error {
	if l.lossMeth != "" {
		return nil
	}
	want := l.opts.LossMethod
	var why []string
	if want == "" || want == MethodNetem {
		err := l.probeNetem(h)
		if err == nil {
			l.lossMeth = MethodNetem
			l.opts.Logf("lab: loss method: netem on the hub side of each host's veth")
			return nil
		}
		why = append(why, toolProblem(err, "the kernel has no netem"))
		l.netemWhyNot = "here: " + why[0]
	} else {
		l.netemWhyNot = "the loss method is " + want + ", by Options.LossMethod"
	}
	if want == "" || want == MethodIptables || want == MethodNft {
		fw, err := l.firewall(h)
		if err == nil {
			l.lossMeth = fw.String()
			l.opts.Logf("lab: loss method: %s random drop in the host namespaces (%s)", l.lossMeth, strings.Join(why, ", "))
			return nil
		}
		why = append(why, toolProblem(err, "firewall rules cannot be installed"))
	}
	l.kernelLossWhyNot = strings.Join(why, ", ")
	if want == MethodBuiltin {
		l.kernelLossWhyNot = "forced by Options.LossMethod"
	}
	if want == "" || want == MethodBuiltin {
		l.lossMeth = MethodBuiltin
		l.opts.Logf("lab: loss method: the nodes' built-in drop (%s)", l.kernelLossWhyNot)
		return nil
	}
	return fmt.Errorf("lab: loss method %s unavailable: %s", want, l.kernelLossWhyNot)
}

// toolProblem says briefly why a probe failed: a missing command by name,
// else what the command said, else fallback.
func toolProblem(err error, fallback string) string {
	var missing []string
	for _, e := range flatten(err) {
		var nf *systool.NotFoundError
		if errors.As(e, &nf) {
			missing = append(missing, strings.TrimSuffix(nf.Name, "-restore"))
		}
	}
	if len(missing) > 0 {
		return strings.Join(missing, " and ") + " not installed"
	}
	var ce *CommandError
	if errors.As(err, &ce) && strings.Contains(ce.Output, "qdisc kind is unknown") {
		return fallback
	}
	msg := oneLine(err)
	if len(msg) > 120 {
		msg = fallback
	}
	return msg
}

// flatten returns err and the errors it joins.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// probeNetem adds and removes a netem qdisc on the hub's port toward h.
func (l *LAN) probeNetem(h Host) error {
	if _, err := l.run.run("", "tc", "-n", l.hub, "qdisc", "add", "dev", h.Port, "root", "netem"); err != nil {
		return err
	}
	return l.netemModel(h, LossModel{})
}

func percent(p float64) string { return strconv.FormatFloat(p*100, 'f', -1, 64) + "%" }

// filterLoss replaces h's loss rule.
func (l *LAN) filterLoss(h Host, p float64) error {
	fw, err := l.firewall(h)
	if err != nil {
		return err
	}
	if fw == fwIptables {
		script := "*filter\n-F HUDLAB-LOSS\n"
		if p > 0 {
			script += fmt.Sprintf("-A HUDLAB-LOSS -i %s -m statistic --mode random --probability %s -j DROP\n",
				h.Iface, strconv.FormatFloat(p, 'f', -1, 64))
		}
		return l.iptables(h, script+"COMMIT\n")
	}
	script := "flush chain inet hudlab loss\n"
	if p > 0 {
		script += fmt.Sprintf("add rule inet hudlab loss iifname %q numgen random mod %d < %d drop\n",
			h.Iface, nftScale, int(p*nftScale+0.5))
	}
	return l.nft(h, script)
}

// Cut drops all traffic between the hosts of a and those of b, in both
// directions, by source address at the receiver. Cuts add up until Heal.
// The method (CutMethod) is the host firewall where it works, else
// blackhole routes with strict reverse-path filtering, which needs only ip.
func (l *LAN) Cut(a, b []int) error {
	if err := l.checkSides(a, b); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	l.cuts = true
	if err := l.cutFrom(a, b); err != nil {
		return err
	}
	return l.cutFrom(b, a)
}

// CutMethod says how Cut works here: "iptables", "nft" or "route"; it
// probes on host 1 if Cut was not called yet.
func (l *LAN) CutMethod() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.chooseCut(l.hosts[0])
	}
	return l.cutMeth
}

func (l *LAN) checkSides(a, b []int) error {
	seen := map[int]bool{}
	for _, i := range a {
		if _, err := l.host(i); err != nil {
			return err
		}
		seen[i] = true
	}
	for _, i := range b {
		if _, err := l.host(i); err != nil {
			return err
		}
		if seen[i] {
			return fmt.Errorf("lab: cut: host %d is on both sides", i)
		}
	}
	return nil
}

// chooseCut picks the cut method once; the caller holds l.mu.
func (l *LAN) chooseCut(h Host) error {
	if l.cutMeth != "" {
		return nil
	}
	want := l.opts.CutMethod
	var why string
	if want == "" || want == MethodIptables || want == MethodNft {
		fw, err := l.firewall(h)
		if err == nil {
			l.cutMeth = fw.String()
			return nil
		}
		why = toolProblem(err, "firewall rules cannot be installed")
	}
	if want == "" || want == MethodRoute {
		l.cutMeth = MethodRoute
		if why != "" {
			l.opts.Logf("lab: cut method: blackhole routes and reverse-path filtering (firewall: %s)", why)
		}
		return nil
	}
	return fmt.Errorf("lab: cut method %s unavailable: %s", want, why)
}

// cutFrom makes every host of dst drop what comes from the hosts of src.
func (l *LAN) cutFrom(dst, src []int) error {
	if len(src) == 0 || len(dst) == 0 {
		return nil
	}
	if err := l.chooseCut(l.hosts[dst[0]-1]); err != nil {
		return err
	}
	var addrs []string
	for _, i := range src {
		addrs = append(addrs, l.hosts[i-1].Addr.String())
	}
	for _, i := range dst {
		h := l.hosts[i-1]
		var err error
		if l.cutMeth != MethodRoute {
			if _, err := l.firewall(h); err != nil { // the lab's chains, once per host
				return err
			}
		}
		switch l.cutMeth {
		case MethodRoute:
			err = l.routeCut(h, addrs)
		case MethodIptables:
			script := "*filter\n"
			for _, a := range addrs {
				script += "-A HUDLAB-CUT -s " + a + " -j DROP\n"
			}
			err = l.iptables(h, script+"COMMIT\n")
		default:
			err = l.nft(h, fmt.Sprintf("add rule inet hudlab cut ip saddr { %s } drop\n", strings.Join(addrs, ", ")))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// routeCut makes h drop datagrams from addrs without a firewall: a
// blackhole route to each address, and strict reverse-path filtering,
// under which the kernel drops what arrives from an address it would not
// route back out of the interface it came in on.
func (l *LAN) routeCut(h Host, addrs []string) error {
	if !l.rpFilter[h.Index] {
		script := fmt.Sprintf("echo 1 > /proc/sys/net/ipv4/conf/all/rp_filter && echo 1 > /proc/sys/net/ipv4/conf/%s/rp_filter", h.Iface)
		if _, err := l.run.run("", "ip", "netns", "exec", h.Netns, "sh", "-c", script); err != nil {
			return err
		}
		l.rpFilter[h.Index] = true
	}
	var b strings.Builder
	for _, a := range addrs {
		if !l.blackholes[h.Index][a] {
			fmt.Fprintf(&b, "route add blackhole %s/32\n", a)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if _, err := l.run.run(b.String(), "ip", "-n", h.Netns, "-b", "-"); err != nil {
		return err
	}
	if l.blackholes[h.Index] == nil {
		l.blackholes[h.Index] = map[string]bool{}
	}
	for _, a := range addrs {
		l.blackholes[h.Index][a] = true
	}
	return nil
}

// Heal removes every cut.
func (l *LAN) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	if !l.cuts {
		return nil
	}
	for _, h := range l.hosts {
		var err error
		switch {
		case l.cutMeth == MethodRoute && len(l.blackholes[h.Index]) > 0:
			var b strings.Builder
			for a := range l.blackholes[h.Index] {
				fmt.Fprintf(&b, "route del blackhole %s/32\n", a)
			}
			_, err = l.run.run(b.String(), "ip", "-n", h.Netns, "-b", "-")
			delete(l.blackholes, h.Index)
		case l.cutMeth == MethodRoute || !l.fwReady[h.Index]:
		case l.fw == fwIptables:
			err = l.iptables(h, "*filter\n-F HUDLAB-CUT\nCOMMIT\n")
		default:
			err = l.nft(h, "flush chain inet hudlab cut\n")
		}
		if err != nil {
			return err
		}
	}
	l.cuts = false
	return nil
}

// firewall installs the lab's chains in h once, choosing iptables or nft
// on first use; the caller holds l.mu.
func (l *LAN) firewall(h Host) (firewall, error) {
	if l.fwReady[h.Index] {
		return l.fw, nil
	}
	var errs []error
	for _, fw := range []firewall{fwIptables, fwNft} {
		if l.fw != fwUnknown && l.fw != fw {
			continue
		}
		var err error
		if fw == fwIptables {
			err = l.iptables(h, iptablesInit)
		} else {
			err = l.nft(h, nftInit)
		}
		if err == nil {
			l.fw, l.fwReady[h.Index] = fw, true
			return fw, nil
		}
		errs = append(errs, err)
	}
	return fwUnknown, errors.Join(errs...)
}

func (l *LAN) iptables(h Host, script string) error {
	_, err := l.run.run(script, "ip", "netns", "exec", h.Netns, "iptables-restore", "--noflush")
	return err
}

func (l *LAN) nft(h Host, script string) error {
	_, err := l.run.run(script, "ip", "netns", "exec", h.Netns, "nft", "-f", "-")
	return err
}
