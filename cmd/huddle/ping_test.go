package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/ping"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// TestPingBadCommandLine: every bad flag is exit 2 with a message naming
// the flag, the value and what is allowed, before any socket is opened.
func TestPingBadCommandLine(t *testing.T) {
	t.Setenv("HUDDLE_CONFIG", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "1ms"}, "--interval: 1ms is out of range (10ms to 1m)"},
		{[]string{"--count", "-1"}, "--count: -1 is negative"},
		{[]string{"--duration", "-1s"}, "--duration: -1s is negative"},
		{[]string{"--id", "a b"}, `--id: "a b": ID has the character U+0020`},
		{[]string{"--id", strings.Repeat("x", 65)}, "ID of 65 bytes, more than 64"},
		{[]string{"--addr", "10.0.0.1:7470"}, "--addr"},
		{[]string{"--ttl", "0"}, "--ttl"},
		{[]string{"--peer", "239.1.2.3"}, `--peer: "239.1.2.3": not the unicast address of a machine`},
		{[]string{"--peer", "nowhere"}, `--peer: "nowhere": not an IPv4 address`},
		{[]string{"--peer", "::1"}, `--peer: "::1": not an IPv4 address`},
		{[]string{"--no-such-flag"}, "huddle ping: unknown flag --no-such-flag (huddle ping --help lists the flags)\n"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"ping"}, c.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("huddle ping %q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("huddle ping %q printed on stdout: %q", c.args, stdout.String())
		}
	}
}

// TestPingNoInterface: an interface that is missing is the machine's
// state, exit 1, found before any socket is opened.
func TestPingNoInterface(t *testing.T) {
	if !nodeRuns {
		t.Skip("huddle ping runs on Linux only")
	}
	t.Setenv("HUDDLE_CONFIG", "")
	var stdout, stderr bytes.Buffer
	code := run([]string{"ping", "--iface", "nosuch0"}, &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), `iface: "nosuch0" does not exist`) {
		t.Errorf("huddle ping --iface nosuch0: exit %d, stderr %q; want 1 and the interface named", code, stderr.String())
	}
}

func TestPingHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"ping", "--help"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("huddle ping --help: exit %d, stderr %q", code, stderr.String())
	}
	for _, want := range []string{"Usage: huddle ping [flags]", "omping", "port\n+ 2", "-count", "-duration", "-interval", "-peer", "-json", "-iface", "-ttl", "-addr", "-id"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("huddle ping --help does not mention %q:\n%s", want, stdout.String())
		}
	}
}

// TestPingOptions: the group's address from the configuration gets its
// port + 2; --addr is taken as given; --peer's port defaults to the ping's.
func TestPingOptions(t *testing.T) {
	t.Setenv("HUDDLE_CONFIG", "")
	t.Setenv("HUDDLE_ADDR", "239.1.2.3:9000")
	parse := func(args ...string) (string, string) {
		fs, _ := newFlagSet("huddle ping")
		for _, n := range []string{"config", "addr", "iface", "ttl"} {
			fs.String(n, "", "")
		}
		var peers peerList
		fs.Var(&peers, "peer", "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		o, err := pingOptions(fs, 1e9, 0, 0, "h1", peers)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		ps := ""
		for _, p := range o.Peers {
			ps += p.String() + " "
		}
		return o.Group.String(), ps
	}
	if g, _ := parse(); g != "239.1.2.3:9002" {
		t.Errorf("from HUDDLE_ADDR 239.1.2.3:9000: group %s, want port + 2", g)
	}
	if g, p := parse("--addr", "239.9.9.9:5000", "--peer", "10.1.0.5", "--peer", "10.1.0.6:6000"); g != "239.9.9.9:5000" || p != "10.1.0.5:5000 10.1.0.6:6000 " {
		t.Errorf("--addr 239.9.9.9:5000: group %s, peers %s", g, p)
	}
	t.Setenv("HUDDLE_ADDR", "239.1.2.3:65534")
	fs, _ := newFlagSet("huddle ping")
	if _, err := pingOptions(fs, 1e9, 0, 0, "h1", nil); err == nil || !strings.Contains(err.Error(), "no room for port + 2") {
		t.Errorf("group port 65534: err %v", err)
	}
}

// pingRun is what one huddle ping process printed, as JSON lines.
type pingRun struct {
	code      int
	summaries map[string]ping.SummaryJSON // by peer ID
	end       ping.EndJSON
	out       string
}

// runPings runs huddle ping on the given hosts of l at once, host h
// named "h<h>", and reads their JSON output.
func runPings(t *testing.T, l *lan.LAN, bin string, name string, hosts []int, args ...string) map[int]pingRun {
	t.Helper()
	procs := map[int]*lan.Proc{}
	for _, h := range hosts {
		argv := append([]string{bin, "ping", "--iface", lan.Iface, "--json", "--id", fmt.Sprintf("h%d", h)}, args...)
		p, err := l.Start(h, fmt.Sprintf("%s-h%d", name, h), argv)
		if err != nil {
			t.Fatal(err)
		}
		procs[h] = p
	}
	runs := map[int]pingRun{}
	for h, p := range procs {
		p.WaitTimeout(20 * time.Second)
		r := pingRun{code: p.ExitCode(), summaries: map[string]ping.SummaryJSON{}, out: p.Output(1 << 20)}
		for _, line := range strings.Split(r.out, "\n") {
			var ev struct{ Event string }
			if json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			switch ev.Event {
			case "summary":
				var s ping.SummaryJSON
				json.Unmarshal([]byte(line), &s)
				r.summaries[s.Peer] = s
			case "end":
				json.Unmarshal([]byte(line), &r.end)
			}
		}
		runs[h] = r
	}
	return runs
}

// TestPingOnAVirtualLAN runs huddle ping on three hosts of a virtual LAN:
// with nothing in the way each reports the two others with no loss either
// way and exits 0; with the bridge no longer flooding multicast to host 3's
// port (what a snooping switch does to a port it saw no IGMP report from),
// each names the one-way multicast and its causes, and exits 1.
func TestPingOnAVirtualLAN(t *testing.T) {
	testutil.NeedLAN(t, lan.Available())
	bin, err := lan.BuildHuddle(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := lan.New(lan.Options{Hosts: 3, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	const count = 10
	args := []string{"--count", fmt.Sprint(count), "--interval", "100ms"}

	t.Run("all through", func(t *testing.T) {
		runs := runPings(t, l, bin, "clear", []int{1, 2, 3}, append(args, "--addr", "239.192.72.68:7470")...)
		for h, r := range runs {
			if r.code != exitOK || !r.end.OK || r.end.Peers != 2 || r.end.Sent != count {
				t.Errorf("h%d: exit %d, end %+v; want 0, ok, 2 peers, %d probes\n%s", h, r.code, r.end, count, r.out)
			}
			for o := 1; o <= 3; o++ {
				if o == h {
					continue
				}
				s, ok := r.summaries[fmt.Sprintf("h%d", o)]
				switch {
				case !ok:
					t.Errorf("h%d reports no h%d", h, o)
				case s.Cause != "ok" || s.Addr != fmt.Sprintf("10.77.0.%d:7470", o):
					t.Errorf("h%d on h%d: %+v", h, o, s)
				default:
					for _, p := range []ping.PathJSON{s.Multicast, s.Unicast} {
						// The first probes may leave before the peer
						// runs, and are not counted; most are.
						if p.LossPct != 0 || p.Answered < count/2 || p.Heard < count/2 || p.Heard != p.HeardOf || p.RTTMaxMS <= 0 {
							t.Errorf("h%d on h%d: %+v", h, o, p)
						}
					}
				}
			}
		}
	})

	t.Run("alone", func(t *testing.T) {
		r := runPings(t, l, bin, "alone", []int{1}, "--count", "3", "--interval", "50ms", "--addr", "239.192.72.68:7490")[1]
		if r.code != exitFailure || r.end.OK || r.end.Peers != 0 || !strings.Contains(r.end.Problem, "no peer was heard") ||
			!strings.Contains(r.end.Problem, "IGMP snooping") || !strings.Contains(r.end.Problem, "eth0's link (10.77.0.0/24)") {
			t.Errorf("exit %d, end %+v; want 1 and the causes to check\n%s", r.code, r.end, r.out)
		}
	})

	t.Run("multicast not forwarded to h3", func(t *testing.T) {
		if err := l.SetMulticast(3, false); err != nil {
			t.Fatalf("cannot turn multicast flooding off on the bridge: %v", err)
		}
		t.Cleanup(func() { l.SetMulticast(3, true) })
		runs := runPings(t, l, bin, "blocked", []int{1, 2, 3}, append(args, "--addr", "239.192.72.68:7480")...)
		want := map[[2]int]string{ // viewer, peer → what the diagnosis says
			{1, 3}: "multicast gets through from h3 to here, not from here to h3: the switch does not forward 239.192.72.68 to h3's port (IGMP snooping without a querier), or a firewall on h3",
			{2, 3}: "multicast gets through from h3 to here, not from here to h3",
			{3, 1}: "multicast gets through from here to h1, not from h1 to here: the switch does not forward 239.192.72.68 to this host's port (IGMP snooping without a querier), a firewall here",
			{3, 2}: "multicast gets through from here to h2, not from h2 to here",
		}
		for h, r := range runs {
			if r.code != exitFailure || r.end.OK {
				t.Errorf("h%d: exit %d, end %+v; want 1, not ok\n%s", h, r.code, r.end, r.out)
			}
			for o := 1; o <= 3; o++ {
				s := r.summaries[fmt.Sprintf("h%d", o)]
				w, blocked := want[[2]int{h, o}]
				switch {
				case o == h:
				case !blocked && s.Cause != "ok":
					t.Errorf("h%d on h%d: %+v; want ok", h, o, s)
				case blocked && (s.Cause != "multicast-one-way" || !strings.Contains(s.Diagnosis, w) || !strings.Contains(s.Diagnosis, `transport = "unicast"`)):
					t.Errorf("h%d on h%d: cause %s, diagnosis %q; want multicast-one-way, %q and the unicast transport's hint", h, o, s.Cause, s.Diagnosis, w)
				case blocked && (s.Unicast.LossPct != 0 || s.Multicast.Answered != 0 && h != 3 || s.Multicast.Heard != 0 && h == 3):
					t.Errorf("h%d on h%d: multicast %+v, unicast %+v", h, o, s.Multicast, s.Unicast)
				}
			}
		}
	})

	t.Run("interface without multicast", func(t *testing.T) {
		if _, err := l.Exec(3, "ip", "link", "set", lan.Iface, "multicast", "off"); err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { l.Exec(3, "ip", "link", "set", lan.Iface, "multicast", "on") })
		r := runPings(t, l, bin, "nomulticast", []int{3}, "--count", "1")[3]
		if r.code != exitFailure || !strings.Contains(r.out, `"eth0" is not multicast-capable (enable it: ip link set eth0 multicast on)`) {
			t.Errorf("exit %d; want 1 and the fix\n%s", r.code, r.out)
		}
	})
}
