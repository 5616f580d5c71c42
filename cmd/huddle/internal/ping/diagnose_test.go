package ping

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestDiagnose: each pattern of what gets through names its cause.
func TestDiagnose(t *testing.T) {
	lan := []netip.Prefix{netip.MustParsePrefix("10.77.0.1/24")}
	base := Observation{Peer: "h2", Addr: netip.MustParseAddr("10.77.0.2"), Port: 7470, Group: netip.MustParseAddr("239.192.72.68"),
		Iface: "eth0", Subnets: lan, TTL: 1, Heard: true, PeerHears: 1}
	all := func(o Observation) Observation {
		o.MulticastIn, o.MulticastOut, o.UnicastIn, o.UnicastOut = true, true, true, true
		return o
	}
	unicastOnly := func(o Observation) Observation {
		o.UnicastIn, o.UnicastOut = true, true
		return o
	}
	other := func(o Observation) Observation { o.Addr = netip.MustParseAddr("10.1.0.5"); return o }
	for _, c := range []struct {
		name  string
		o     Observation
		ok    bool
		cause string
		says  []string
	}{
		{"all through", all(base), true, "ok", []string{"multicast and unicast get through both ways"}},
		{"all through, with loss", func() Observation { o := all(base); o.MulticastLoss = 0.25; return o }(), true, "ok",
			[]string{"25% of the multicast probes unanswered"}},
		{"never heard", Observation{Peer: "10.1.0.5", Port: 7470, Seed: true}, false, "no-answer",
			[]string{"never answered", "firewall drops UDP to port 7470", "no route"}},
		{"silent", func() Observation { o := all(base); o.SilentFor, o.HeardFor = 5*time.Second, time.Minute; return o }(), false, "silent",
			[]string{"went silent for the last 5s after 1m0s", "killed"}},
		{"multicast stopped", func() Observation {
			o := all(base)
			o.MulticastStoppedAfter, o.MulticastStoppedFor = 260*time.Second, 30*time.Second
			return o
		}(), false, "igmp-snooping", []string{"multicast got through for 4m20s, then not for the last 30s while unicast went on", "IGMP snooping without a querier", "querier"}},
		{"unicast only, same subnet", unicastOnly(base), false, "multicast-blocked",
			[]string{"unicast gets through both ways, multicast in neither", "IGMP snooping without a querier", "239.192.72.68"}},
		{"unicast only, other subnet, ttl 1", unicastOnly(other(base)), false, "ttl",
			[]string{"10.1.0.5 is not in eth0's subnet (10.77.0.0/24) and the TTL is 1", "--ttl"}},
		{"unicast only, other subnet, ttl 8", func() Observation { o := unicastOnly(other(base)); o.TTL = 8; return o }(), false, "routing",
			[]string{"multicast router", "TTL (now 8)"}},
		{"multicast in only", func() Observation { o := unicastOnly(base); o.MulticastIn = true; return o }(), false, "multicast-one-way",
			[]string{"multicast gets through from h2 to here, not from here to h2", "IGMP snooping", "firewall on h2"}},
		{"multicast out only", func() Observation { o := unicastOnly(base); o.MulticastOut = true; return o }(), false, "multicast-one-way",
			[]string{"from here to h2, not from h2 to here", "this host's port", "another interface"}},
		{"our unicast blocked", func() Observation { o := all(base); o.UnicastOut = false; return o }(), false, "firewall",
			[]string{"unicast from here does not reach h2 though multicast does", "port 7470"}},
		{"nothing of ours gets there", Observation{Peer: "h2", Port: 7470, Heard: true, MulticastIn: true, UnicastIn: true}, false, "firewall",
			[]string{"h2's datagrams reach here, but nothing from here reaches h2"}},
		{"only its multicast, it hears no one", func() Observation { o := base; o.MulticastIn, o.PeerHears = true, 0; return o }(), false, "firewall",
			[]string{"only h2's multicast arrives", "h2 hears no one", "firewall on h2 drops what comes in"}},
		{"only its multicast", func() Observation { o := base; o.MulticastIn = true; return o }(), false, "firewall",
			[]string{"only h2's multicast arrives", "a firewall here drops unicast from h2"}},
		{"wrong interface", all(other(base)), true, "ok",
			[]string{"its address 10.1.0.5 is not in eth0's subnet (10.77.0.0/24)", "--iface"}},
		{"send error", func() Observation { o := unicastOnly(base); o.SendErr = "network is unreachable"; return o }(), false, "multicast-blocked",
			[]string{"sending to it fails: network is unreachable"}},
	} {
		d := Diagnose(c.o)
		if d.OK != c.ok || d.Cause != c.cause {
			t.Errorf("%s: ok %v, cause %s (%s); want %v, %s", c.name, d.OK, d.Cause, d, c.ok, c.cause)
		}
		for _, s := range c.says {
			if !strings.Contains(d.String(), s) {
				t.Errorf("%s: %q does not say %q", c.name, d, s)
			}
		}
	}
}

func TestReportOK(t *testing.T) {
	ok := PeerReport{Diagnosis: Diagnosis{OK: true}}
	bad := PeerReport{Diagnosis: Diagnosis{}}
	for _, c := range []struct {
		peers []PeerReport
		want  bool
	}{{nil, false}, {[]PeerReport{ok}, true}, {[]PeerReport{ok, bad}, false}} {
		if got := (Report{Peers: c.peers}).OK(); got != c.want {
			t.Errorf("%d peers: OK = %v, want %v", len(c.peers), got, c.want)
		}
	}
}
