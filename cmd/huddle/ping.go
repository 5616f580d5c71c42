package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/ping"
	"github.com/huddle-lan/huddle/config"
)

// pingPortOffset puts huddle ping beside the group's two ports (data,
// and repair on port + 1): on the group's address, so that switches and
// routers treat its multicast as the group's (IGMP snooping and multicast
// routing look at the address, not the port), on a port of its own, so
// that it does not disturb a node running there.
const pingPortOffset = 2

const pingAbout = `Tells whether multicast and unicast get through between the machines of
a LAN, the counterpart of omping. Run it on two or more machines at once:
each multicasts a probe every interval, probes every peer it heard of by
unicast, and answers every probe by unicast; it prints a line per answer
(h2 (10.77.0.2) multicast: seq=5 time=0.210 ms) and, when done (--count,
--duration, Ctrl-C), a summary per peer: probes sent and answered, loss,
round-trip times, and a diagnosis naming the likely cause of what does
not get through (TTL, IGMP snooping without a querier, a firewall, the
wrong interface).

It pings on the group's address, interface and TTL as huddle run would
use them (--config, HUDDLE_* variables, the flags), on the group's port
+ 2. Exit code 0 when peers were heard and every one got multicast and
unicast through both ways, 1 otherwise or when no peer was heard, 2 for
a bad command line.`

// peerList is the repeatable --peer flag, as given.
type peerList []string

func (p *peerList) String() string { return strings.Join(*p, ",") }

func (p *peerList) Set(s string) error { *p = append(*p, s); return nil }

func cmdPing(args []string, stdout, stderr io.Writer) int {
	fs, parseOut := newFlagSet("huddle ping")
	fs.String("config", "", "TOML `file` of the node's settings, whose addr, iface and ttl are used (default $HUDDLE_CONFIG)")
	fs.String("addr", "", "multicast group and UDP port to ping on, `ipv4:port` in 224.0.0.0/4; default the group's address, port + 2")
	fs.String("iface", "", "network `interface` to join and send on; empty picks the default route's, as huddle run does")
	fs.String("ttl", "", "IP time-to-live of the multicast probes in `hops`, 1 to 255; default the group's (1: the link)")
	interval := fs.Duration("interval", time.Second, "`time` between probes, 10ms to 1m")
	count := fs.Int("count", 0, "stop after this many `probes`; 0 is no limit")
	duration := fs.Duration("duration", 0, "stop after probing this `long`; 0 is no limit")
	id := fs.String("id", "", "`name` of this pinger in the others' lines; default the host name")
	jsonOut := fs.Bool("json", false, "print JSON objects, one per line: the events, a summary per peer, the end")
	var peers peerList
	fs.Var(&peers, "peer", "also probe `address[:port]` by unicast before hearing it (a machine behind a router); repeatable")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: huddle ping [flags]\n\n%s\n\nFlags:\n\n", pingAbout)
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, parseOut, args, stdout, stderr); done {
		return code
	}
	o, err := pingOptions(fs, *interval, *count, *duration, *id, peers)
	if err != nil {
		fmt.Fprintln(stderr, "huddle ping:", err)
		return exitUsage
	}
	if !nodeRuns {
		return notSupported("huddle ping", stderr)
	}
	// Resolve picks the interface as huddle run does; a missing or down
	// one is the machine's state. A node ID is not wanted here: a dummy
	// one keeps Resolve from deriving it (and failing without an IPv4
	// address, which opening the socket reports in its own words).
	cfg := config.Config{ID: 1, Iface: o.Iface}
	if err := cfg.Resolve(); err != nil {
		fmt.Fprintln(stderr, "huddle ping:", err)
		return exitFailure
	}
	o.Iface = cfg.Iface

	enc := json.NewEncoder(stdout)
	if *jsonOut {
		o.OnEvent = func(e ping.Event) { enc.Encode(e.JSON()) }
	} else {
		o.OnEvent = func(e ping.Event) { fmt.Fprintln(stdout, e) }
		fmt.Fprintf(stdout, "huddle ping %s on %s to %v, ttl %d, every %v\n", cmp.Or(o.ID, "(named by its address)"), o.Iface, o.Group, o.TTL, o.Interval)
	}
	ctx, stop := signalContext()
	defer stop()
	r, err := ping.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "huddle ping:", err)
		return exitFailure
	}
	if *jsonOut {
		for _, v := range r.JSON() {
			enc.Encode(v)
		}
	} else {
		r.WriteText(stdout)
	}
	if !r.OK() {
		return exitFailure
	}
	return exitOK
}

// pingOptions checks the flags and reads the group's settings as huddle run
// does: --addr, --iface and --ttl override the environment (HUDDLE_ADDR,
// ...), which overrides the --config file. Only --addr is taken as it is;
// the group's address from elsewhere gets its port + pingPortOffset.
func pingOptions(fs *flag.FlagSet, interval time.Duration, count int, duration time.Duration, id string, peers []string) (ping.Options, error) {
	switch {
	case interval < 10*time.Millisecond || interval > time.Minute:
		return ping.Options{}, fmt.Errorf("--interval: %v is out of range (10ms to 1m)", interval)
	case count < 0:
		return ping.Options{}, fmt.Errorf("--count: %d is negative (0 is no limit)", count)
	case duration < 0:
		return ping.Options{}, fmt.Errorf("--duration: %v is negative (0 is no limit)", duration)
	}
	if id == "" {
		id, _ = os.Hostname()
		if ping.CheckID(id) != nil {
			id = "" // Run names it by its address
		}
	} else if err := ping.CheckID(id); err != nil {
		return ping.Options{}, fmt.Errorf("--id: %q: %v", id, err)
	}
	// The group's settings through config.Load, on a flag set of its
	// own holding the few flags huddle ping shares with huddle run.
	cfs := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	cfs.SetOutput(io.Discard)
	cflags := config.AddFlags(cfs)
	addrGiven := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "config", "addr", "iface", "ttl":
			cfs.Set(f.Name, f.Value.String())
			addrGiven = addrGiven || f.Name == "addr"
		}
	})
	cfg, warnings, err := config.Load(cfs, cflags, os.Environ())
	for _, w := range warnings {
		fmt.Fprintln(fs.Output(), "huddle: warning:", w)
	}
	if err != nil {
		return ping.Options{}, err
	}
	group := cfg.GroupAddr()
	if !addrGiven {
		if group.Port() > 65535-pingPortOffset {
			return ping.Options{}, fmt.Errorf("--addr: the group's port %d leaves no room for port + %d; give --addr", group.Port(), pingPortOffset)
		}
		group = netip.AddrPortFrom(group.Addr(), group.Port()+pingPortOffset)
	}
	o := ping.Options{Group: group, Iface: cfg.Iface, TTL: cfg.TTL, ID: id, Interval: interval, Count: count, Duration: duration}
	for _, s := range peers {
		ap, err := parsePeer(s, group.Port())
		if err != nil {
			return ping.Options{}, fmt.Errorf("--peer: %q: %v", s, err)
		}
		o.Peers = append(o.Peers, ap)
	}
	return o, nil
}

// parsePeer reads address[:port], with port defaulting to the pinging port.
func parsePeer(s string, port uint16) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		a, err2 := netip.ParseAddr(s)
		if err2 != nil {
			return netip.AddrPort{}, fmt.Errorf("not an IPv4 address or address:port")
		}
		ap = netip.AddrPortFrom(a, port)
	}
	a := ap.Addr()
	switch {
	case !a.Is4():
		return netip.AddrPort{}, fmt.Errorf("not an IPv4 address")
	case a.IsMulticast() || a.IsUnspecified() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return netip.AddrPort{}, fmt.Errorf("not the unicast address of a machine")
	case ap.Port() == 0:
		return netip.AddrPort{}, fmt.Errorf("port 0")
	}
	return ap, nil
}
