package config

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// Interfaces of made-up hosts.
var (
	lo       = netIface{name: "lo", up: true, multicast: true, loopback: true, ipv4: addrs("127.0.0.1")}
	loNoMC   = netIface{name: "lo", up: true, loopback: true, ipv4: addrs("127.0.0.1")}
	eth0     = netIface{name: "eth0", up: true, multicast: true, ipv4: addrs("10.0.0.5", "10.0.0.6")}
	eth0Down = netIface{name: "eth0", multicast: true, ipv4: addrs("10.0.0.5")}
	wlan0    = netIface{name: "wlan0", up: true, multicast: true, ipv4: addrs("192.168.1.20")}
	tun0     = netIface{name: "tun0", up: true, ipv4: addrs("172.16.0.2")} // no multicast
	v6only   = netIface{name: "eth1", up: true, multicast: true}
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name      string
		iface     string
		id        uint64
		sys       system
		wantIface string
		wantID    uint64
		wantErr   string
	}{
		{
			name:      "default route",
			sys:       system{[]netIface{lo, eth0, wlan0}, "wlan0"},
			wantIface: "wlan0", wantID: 3232235796, // 192.168.1.20
		},
		{
			name:      "default route down: first multicast interface with IPv4",
			sys:       system{[]netIface{lo, tun0, v6only, eth0Down, wlan0}, "eth0"},
			wantIface: "wlan0", wantID: 3232235796,
		},
		{
			name:      "default route without multicast",
			sys:       system{[]netIface{lo, tun0, eth0}, "tun0"},
			wantIface: "eth0", wantID: 167772165, // 10.0.0.5, the first address
		},
		{
			name:      "no default route",
			sys:       system{[]netIface{lo, eth0}, ""},
			wantIface: "eth0", wantID: 167772165,
		},
		{
			name:      "only loopback",
			sys:       system{[]netIface{tun0, lo}, ""},
			wantIface: "lo", wantID: 2130706433,
		},
		{
			name:    "nothing usable",
			sys:     system{[]netIface{loNoMC, eth0Down, tun0}, ""},
			wantErr: "config: iface: no interface is up and multicast-capable (interfaces: lo (no multicast), eth0 (down), tun0 (no multicast)); set --iface, or for nodes on one host run: ip link set lo multicast on",
		},
		{
			name:    "no interfaces at all",
			wantErr: "config: iface: no interface is up and multicast-capable (interfaces: none); set --iface, or for nodes on one host run: ip link set lo multicast on",
		},
		{
			name: "named", iface: "eth0",
			sys:       system{[]netIface{lo, eth0, wlan0}, "wlan0"},
			wantIface: "eth0", wantID: 167772165,
		},
		{
			name: "named, ID kept", iface: "lo", id: 9,
			sys:       system{[]netIface{lo, eth0}, "eth0"},
			wantIface: "lo", wantID: 9,
		},
		{
			name: "named but missing", iface: "eth9",
			sys:     system{[]netIface{lo, eth0}, "eth0"},
			wantErr: `config: iface: "eth9" does not exist (interfaces: lo, eth0)`,
		},
		{
			name: "named loopback without multicast", iface: "lo", id: 1,
			sys:     system{[]netIface{loNoMC, eth0}, "eth0"},
			wantErr: `config: iface: "lo" is not multicast-capable (enable it: ip link set lo multicast on)`,
		},
		{
			name: "named but down", iface: "eth0", id: 1,
			sys:     system{[]netIface{lo, eth0Down}, ""},
			wantErr: `config: iface: "eth0" is down (bring it up: ip link set eth0 up)`,
		},
		{
			name: "no IPv4 to derive the ID from", iface: "eth1",
			sys:     system{[]netIface{lo, v6only}, ""},
			wantErr: "config: id: cannot derive an ID from interface eth1: it has no IPv4 address; set --id",
		},
		{
			name: "no IPv4 but ID given", iface: "eth1", id: 5,
			sys:       system{[]netIface{lo, v6only}, ""},
			wantIface: "eth1", wantID: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := LAN()
			c.Iface, c.ID = tt.iface, tt.id
			err := c.resolve(tt.sys)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error:\n%v\nwant:\n%s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Iface != tt.wantIface || c.ID != tt.wantID {
				t.Errorf("got iface %s id %d, want %s %d", c.Iface, c.ID, tt.wantIface, tt.wantID)
			}
		})
	}
}

func TestParseRoutes(t *testing.T) {
	const header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	tests := []struct{ name, table, want string }{
		{"empty", "", ""},
		{"no default", header + "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", ""},
		{"default", header +
			"eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" +
			"eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n", "eth0"},
		{"lowest metric wins", header +
			"wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n" +
			"eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n", "eth0"},
		{"route not up", header + "eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n", ""},
		{"garbage", header + "eth0 00000000 x zz\n\x00\n", ""},
	}
	for _, tt := range tests {
		if got := parseRoutes(strings.NewReader(tt.table)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestResolvedTOMLTravels copies the --print-config output of one host to
// another: the ID and interface derived on the first are comments in it,
// so the second derives its own.
func TestResolvedTOMLTravels(t *testing.T) {
	hostA := system{[]netIface{lo, eth0}, "eth0"}      // 10.0.0.5
	hostB := system{[]netIface{lo, wlan0}, "wlan0"}    // 192.168.1.20
	c, err := load(t, []string{"--group", "lab"}, nil) // neither ID nor interface set
	if err != nil {
		t.Fatal(err)
	}
	doc, err := c.resolvedTOML(hostA)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"id = 0\n# id = 167772165   (derived from eth0's address 10.0.0.5; set it to pin this node's ID)\n",
		"iface = ''\n# iface = \"eth0\"   (picked on this host; set it to pin the interface)\n",
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the printed configuration lacks\n%s\nin\n%s", want, doc)
		}
	}

	copied, err := load(t, []string{"--config", writeFile(t, string(doc))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(copied, c) || copied.ID != 0 || copied.Iface != "" {
		t.Errorf("read back on another host:\ngot  %+v\nwant %+v", copied, c)
	}
	if err := copied.resolve(hostB); err != nil || copied.ID != 3232235796 || copied.Iface != "wlan0" {
		t.Errorf("resolved on another host: id %d iface %q, %v; want its own 3232235796 and wlan0", copied.ID, copied.Iface, err)
	}

	// What the user set stays a setting, and the round trip keeps it.
	c.ID, c.Iface = 9, "eth0"
	doc, err = c.resolvedTOML(hostA)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), "# id") || strings.Contains(string(doc), "# iface") {
		t.Errorf("explicit settings written as comments:\n%s", doc)
	}
	if got, err := load(t, []string{"--config", writeFile(t, string(doc))}, nil); err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, c)
	}

	// An interface that will not do is reported, as by Resolve.
	c.Iface = "eth9"
	if _, err := c.resolvedTOML(hostA); err == nil || !strings.Contains(err.Error(), `"eth9" does not exist`) {
		t.Errorf("error %v, want eth9 does not exist", err)
	}
}
