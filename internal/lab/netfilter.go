package lab

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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
		return "iptables"
	case fwNft:
		return "nft"
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
// The method (netem, iptables or nft, see LossMethod) is chosen on first use.
func (l *LAN) SetLoss(host int, p float64) error {
	h, err := l.host(host)
	if err != nil {
		return err
	}
	if p < 0 || p > 1 {
		return fmt.Errorf("lab: loss %v outside 0..1", p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	if err := l.chooseLoss(h); err != nil {
		return err
	}
	if l.lossMeth == "netem" {
		return l.netemLoss(h, p)
	}
	return l.filterLoss(h, p)
}

// LossMethod says how loss is applied: "netem", "iptables" or "nft"; it
// probes on host 1 if SetLoss was not called yet, and is "" when none works.
func (l *LAN) LossMethod() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.chooseLoss(l.hosts[0])
	}
	return l.lossMeth
}

var errClosed = errors.New("lab: LAN closed")

// chooseLoss picks the loss method once, trying netem on the hub side of h,
// then the host firewall, and logs the choice.
func (l *LAN) chooseLoss(h Host) error {
	if l.lossMeth != "" {
		return nil
	}
	nerr := l.probeNetem(h)
	if nerr == nil {
		l.lossMeth = "netem"
		l.opts.Logf("lab: loss method: netem on the hub side of each host's veth")
		return nil
	}
	fw, ferr := l.firewall(h)
	if ferr != nil {
		return fmt.Errorf("lab: no way to apply loss: netem: %v; firewall: %w", nerr, ferr)
	}
	l.lossMeth = fw.String()
	l.opts.Logf("lab: loss method: %s random drop in the host namespaces (netem unavailable: %s)",
		l.lossMeth, oneLine(nerr))
	return nil
}

// probeNetem adds and removes a netem qdisc on the hub's port toward h.
func (l *LAN) probeNetem(h Host) error {
	if _, err := l.run.run("", "tc", "-n", l.hub, "qdisc", "add", "dev", h.Port, "root", "netem"); err != nil {
		return err
	}
	return l.netemLoss(h, 0)
}

// netemLoss sets netem loss p on the hub's port toward h (egress to h).
func (l *LAN) netemLoss(h Host, p float64) error {
	if p == 0 {
		_, err := l.run.run("", "tc", "-n", l.hub, "qdisc", "del", "dev", h.Port, "root")
		if err != nil && !strings.Contains(err.Error(), "handle of zero") && !isNotExist(err) {
			return err
		}
		return nil
	}
	pct := strconv.FormatFloat(p*100, 'f', -1, 64) + "%"
	_, err := l.run.run("", "tc", "-n", l.hub, "qdisc", "replace", "dev", h.Port, "root", "netem", "loss", pct)
	return err
}

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

// cutFrom makes every host of dst drop what comes from the hosts of src.
func (l *LAN) cutFrom(dst, src []int) error {
	if len(src) == 0 {
		return nil
	}
	var addrs []string
	for _, i := range src {
		addrs = append(addrs, l.hosts[i-1].Addr.String())
	}
	for _, i := range dst {
		h := l.hosts[i-1]
		fw, err := l.firewall(h)
		if err != nil {
			return err
		}
		if fw == fwIptables {
			script := "*filter\n"
			for _, a := range addrs {
				script += "-A HUDLAB-CUT -s " + a + " -j DROP\n"
			}
			err = l.iptables(h, script+"COMMIT\n")
		} else {
			err = l.nft(h, fmt.Sprintf("add rule inet hudlab cut ip saddr { %s } drop\n", strings.Join(addrs, ", ")))
		}
		if err != nil {
			return err
		}
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
		if !l.fwReady[h.Index] {
			continue
		}
		var err error
		if l.fw == fwIptables {
			err = l.iptables(h, "*filter\n-F HUDLAB-CUT\nCOMMIT\n")
		} else {
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
