package bench

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
)

// Datagrams dropped by the lab's loss are counted exactly, whatever rule
// the lab installed (iptables statistic or nft numgen, on INPUT): an nft
// table of ours counts what enters the host from eth0 before every other
// INPUT hook (priority -300) and after them (priority 300). The difference
// is what the loss rule dropped (the lab's cut chain is empty here), both
// in total and for datagrams from the sender. Counting happens after IP
// reassembly, so the counts are datagrams, not fragments.

const counterTable = "hudbench"

var counterRE = regexp.MustCompile(`counter packets (\d+)`)

// inputCounters installs (or resets) the counters in host.
func inputCounters(l *lan.LAN, host int, sender netip.Addr) error {
	l.Exec(host, "nft", "delete", "table", "inet", counterTable) // absent the first time
	rules := fmt.Sprintf(`iifname %q counter
		iifname %q ip saddr %s counter`, lan.Iface, lan.Iface, sender)
	script := fmt.Sprintf(`table inet %s {
	chain pre { type filter hook input priority -300; policy accept;
		%s
	}
	chain post { type filter hook input priority 300; policy accept;
		%s
	}
}
`, counterTable, rules, rules)
	_, err := l.Exec(host, "sh", "-c", "printf '%s' \"$1\" | nft -f -", "sh", script)
	return err
}

// inputDrops reads the counters: datagrams dropped on the way in, in total
// and of those sent by the sender.
func inputDrops(l *lan.LAN, host int) (all, fromSender int64, err error) {
	out, err := l.Exec(host, "nft", "list", "table", "inet", counterTable)
	if err != nil {
		return 0, 0, err
	}
	m := counterRE.FindAllStringSubmatch(string(out), -1)
	if len(m) != 4 {
		return 0, 0, fmt.Errorf("host %d: want 4 counters in:\n%s", host, out)
	}
	var c [4]int64
	for i := range c {
		c[i], _ = strconv.ParseInt(m[i][1], 10, 64)
	}
	return c[0] - c[2], c[1] - c[3], nil
}

// lossRuleDrops reads the lab's own iptables loss rule counter in host (a
// cross-check of inputDrops); -1 when the lab does not use iptables.
func lossRuleDrops(l *lan.LAN, host int) int64 {
	out, err := l.Exec(host, "iptables", "-L", "HUDLAB-LOSS", "-v", "-x", "-n")
	if err != nil {
		return -1
	}
	var sum int64 = -1
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[2] == "DROP" {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum = max(sum, 0) + n
		}
	}
	return sum
}

// Shared loss: the sender's datagrams are dropped as they leave its host,
// so every receiver loses the same ones. An nft netdev egress rule drops
// silently, as a wire would; an iptables OUTPUT rule (the fallback) makes
// the send call fail with EPERM instead, which the sender sees.

const egressTable = "hudbenchloss"

// egressLoss installs the sender's loss at probability p and says how.
func egressLoss(l *lan.LAN, host int, p float64) (string, error) {
	script := fmt.Sprintf(`table netdev %s {
	chain egress { type filter hook egress device %q priority 0; policy accept;
		numgen random mod 1000000 < %d counter drop
	}
}
`, egressTable, lan.Iface, int(p*1e6+0.5))
	_, nerr := l.Exec(host, "sh", "-c", "printf '%s' \"$1\" | nft -f -", "sh", script)
	if nerr == nil {
		return "nft egress", nil
	}
	_, ierr := l.Exec(host, "iptables", "-A", "OUTPUT", "-o", lan.Iface, "-p", "udp", "-m", "statistic",
		"--mode", "random", "--probability", strconv.FormatFloat(p, 'f', -1, 64), "-j", "DROP")
	if ierr == nil {
		return "iptables OUTPUT", nil
	}
	return "", fmt.Errorf("no egress loss: nft: %v; iptables: %v", nerr, ierr)
}

// egressDrops reads the sender's loss counter.
func egressDrops(l *lan.LAN, host int, method string) (int64, error) {
	if method == "nft egress" {
		out, err := l.Exec(host, "nft", "list", "table", "netdev", egressTable)
		if err != nil {
			return 0, err
		}
		m := counterRE.FindStringSubmatch(string(out))
		if m == nil {
			return 0, fmt.Errorf("no counter in:\n%s", out)
		}
		return strconv.ParseInt(m[1], 10, 64)
	}
	out, err := l.Exec(host, "iptables", "-L", "OUTPUT", "-v", "-x", "-n")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "DROP" {
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no DROP rule in:\n%s", out)
}

// clearEgressLoss removes the sender's loss.
func clearEgressLoss(l *lan.LAN, host int, method string) {
	if method == "nft egress" {
		l.Exec(host, "nft", "delete", "table", "netdev", egressTable)
		return
	}
	l.Exec(host, "iptables", "-F", "OUTPUT")
}

// socketDrops reads the kernel's drops of the UDP sockets on port in host
// (receive buffer overflows), which huddle must repair like any loss.
func socketDrops(l *lan.LAN, host, port int) int64 {
	out, err := l.Exec(host, "cat", "/proc/net/udp")
	if err != nil {
		return -1
	}
	n, ok := parseUDPDrops(string(out), port)
	if !ok {
		return -1
	}
	return n
}
