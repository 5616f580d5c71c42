package lab

// SetTestFirewall makes LANs built afterwards use the named packet filter
// ("iptables", "nft", or "" to choose) for loss and cuts.
func SetTestFirewall(name string) {
	testFirewall = map[string]firewall{"iptables": fwIptables, "nft": fwNft}[name]
}
