package lan

// SetTestFirewall makes LANs built afterwards use the named packet filter
// ("iptables", "nft", or "" to choose) for loss and cuts.
func SetTestFirewall(name string) {
	testFirewall = map[string]firewall{"iptables": fwIptables, "nft": fwNft}[name]
}

// NetemArgs is netemArgs, for its unit test.
var NetemArgs = netemArgs

// ApplyNetem sets m with netem on host's port whatever the loss method,
// and returns what tc shows of the port's qdisc: for testing the
// arguments tc takes, even on a kernel without netem, where tc parses
// them and then fails with "qdisc kind is unknown".
func (l *LAN) ApplyNetem(host int, m LossModel) (string, error) {
	h := l.hosts[host-1]
	if err := l.netemModel(h, m); err != nil {
		return "", err
	}
	out, err := l.run.run("", "tc", "-n", l.hub, "qdisc", "show", "dev", h.Port)
	return string(out), err
}
