package config

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// netIface is what Resolve needs to know about one network interface.
type netIface struct {
	name                    string
	up, multicast, loopback bool
	ipv4                    []netip.Addr
}

// system is the read-only view of the host that Resolve chooses from, so
// that tests can hand it a made-up one.
type system struct {
	ifaces       []netIface
	defaultRoute string // interface of the default route; "" if unknown
}

// Resolve fills in what Load leaves to the host: Iface when empty, and ID
// when 0 (the interface's first IPv4 address as a big-endian number, so
// 10.0.0.5 is 167772165). It also checks that a named interface exists, is
// up and can multicast. It only reads the interface list and the routing
// table: it joins no group and sends nothing.
func (c *Config) Resolve() error {
	sys, err := readSystem()
	if err != nil {
		return err
	}
	return c.resolve(sys)
}

func (c *Config) resolve(sys system) error {
	ifc, err := pickIface(c.Iface, sys, c.Transport != "unicast")
	if err != nil {
		return err
	}
	c.Iface = ifc.name
	if c.ID != 0 {
		return nil
	}
	if len(ifc.ipv4) == 0 {
		return fmt.Errorf("config: id: cannot derive an ID from interface %s: it has no IPv4 address; set --id", ifc.name)
	}
	c.ID = uint64(binary.BigEndian.Uint32(ifc.ipv4[0].AsSlice()))
	return nil
}

// ResolvedTOML returns c as TOML, as TOML does, for huddle run
// --print-config, with what Resolve would derive on this host written
// beside the settings as comments:
//
//	id = 0
//	# id = 167772165   (derived from eth0's address 10.0.0.5; set it to pin this node's ID)
//
// Written as settings, a derived ID and interface would give every machine
// the file is copied to this machine's ID. An ID or interface set in c is
// written as a setting. The error is Resolve's: an interface that will not
// do, or an ID that cannot be derived.
func (c Config) ResolvedTOML() ([]byte, error) {
	sys, err := readSystem()
	if err != nil {
		return nil, err
	}
	return c.resolvedTOML(sys)
}

func (c Config) resolvedTOML(sys system) ([]byte, error) {
	r := c
	if err := r.resolve(sys); err != nil {
		return nil, err
	}
	doc := c.TOML()
	if c.ID == 0 {
		addr := netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, uint32(r.ID))))
		doc = annotate(doc, "id = ", fmt.Sprintf("# id = %d   (derived from %s's address %s; set it to pin this node's ID)", r.ID, r.Iface, addr))
	}
	if c.Iface == "" {
		doc = annotate(doc, "iface = ", fmt.Sprintf("# iface = %q   (picked on this host; set it to pin the interface)", r.Iface))
	}
	return doc, nil
}

// annotate inserts comment after the first line of doc that starts with
// prefix: a top-level setting, which toml.Marshal writes before any table.
func annotate(doc []byte, prefix, comment string) []byte {
	lines := strings.SplitAfter(string(doc), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return []byte(strings.Join(slices.Insert(lines, i+1, comment+"\n"), ""))
		}
	}
	return append(doc, comment+"\n"...)
}

// pickIface checks the named interface, or chooses one when name is empty:
// the default route's, because that is the link the other members are
// most likely on; else the first real multicast interface with an IPv4
// address; else a multicast loopback, which serves nodes on one host.
//
// The unicast transport needs no multicast: there any interface that is up
// will do.
func pickIface(name string, sys system, multicast bool) (netIface, error) {
	if name != "" {
		return checkIface(name, sys, multicast)
	}
	usable := func(i netIface) bool { return i.up && (i.multicast || !multicast) }
	for _, i := range sys.ifaces {
		if i.name == sys.defaultRoute && usable(i) {
			return i, nil
		}
	}
	for _, i := range sys.ifaces {
		if usable(i) && !i.loopback && len(i.ipv4) > 0 {
			return i, nil
		}
	}
	for _, i := range sys.ifaces {
		if usable(i) && i.loopback {
			return i, nil
		}
	}
	return netIface{}, fmt.Errorf("config: iface: no interface is up and multicast-capable (interfaces: %s); "+
		"set --iface, or for nodes on one host run: ip link set lo multicast on", describe(sys.ifaces, true))
}

func checkIface(name string, sys system, multicast bool) (netIface, error) {
	for _, i := range sys.ifaces {
		switch {
		case i.name != name:
		case !i.up:
			return i, fmt.Errorf("config: iface: %q is down (bring it up: ip link set %s up)", name, name)
		case !i.multicast && multicast:
			return i, fmt.Errorf("config: iface: %q is not multicast-capable (enable it: ip link set %s multicast on)", name, name)
		default:
			return i, nil
		}
	}
	return netIface{}, fmt.Errorf("config: iface: %q does not exist (interfaces: %s)", name, describe(sys.ifaces, false))
}

// describe lists interface names, with what is wrong with each if asked.
func describe(ifaces []netIface, state bool) string {
	if len(ifaces) == 0 {
		return "none"
	}
	names := make([]string, len(ifaces))
	for n, i := range ifaces {
		names[n] = i.name
		switch {
		case !state:
		case !i.up:
			names[n] += " (down)"
		case !i.multicast:
			names[n] += " (no multicast)"
		}
	}
	return strings.Join(names, ", ")
}

// readSystem reads the host's interfaces and default route.
func readSystem() (system, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return system{}, fmt.Errorf("config: iface: cannot list interfaces: %w", err)
	}
	sys := system{defaultRoute: defaultRoute()}
	for _, i := range ifaces {
		addrs, err := i.Addrs()
		if err != nil {
			return system{}, fmt.Errorf("config: iface: cannot list the addresses of %s: %w", i.Name, err)
		}
		sys.ifaces = append(sys.ifaces, netIface{
			name:      i.Name,
			up:        i.Flags&net.FlagUp != 0,
			multicast: i.Flags&net.FlagMulticast != 0,
			loopback:  i.Flags&net.FlagLoopback != 0,
			ipv4:      ipv4s(addrs),
		})
	}
	return sys, nil
}

func ipv4s(addrs []net.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// defaultRoute names the interface of the default route from Linux's
// /proc/net/route; elsewhere, or if it cannot be read, it returns "".
func defaultRoute() string {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return ""
	}
	defer f.Close()
	return parseRoutes(f)
}

// parseRoutes reads a /proc/net/route table and returns the interface of
// the default route (destination and mask 0, flag RTF_UP) with the lowest
// metric.
func parseRoutes(r io.Reader) string {
	const rtfUp = 0x1
	best, bestMetric := "", uint64(0)
	sc := bufio.NewScanner(r)
	sc.Scan() // header: Iface Destination Gateway Flags RefCnt Use Metric Mask ...
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		flags, err1 := strconv.ParseUint(f[3], 16, 32)
		metric, err2 := strconv.ParseUint(f[6], 10, 32)
		if err1 != nil || err2 != nil || flags&rtfUp == 0 {
			continue
		}
		if best == "" || metric < bestMetric {
			best, bestMetric = f[0], metric
		}
	}
	return best
}
