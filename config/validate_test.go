package config

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   string // "" for valid
	}{
		{"lan", func(c *Config) {}, ""},
		{"local", func(c *Config) { *c = Local() }, ""},
		{"everything", func(c *Config) { *c = everything() }, ""},
		{"profile", func(c *Config) { c.Profile = "wan" }, `config: profile: "wan" is not a profile (lan, local)`},
		{"id max", func(c *Config) { c.ID = math.MaxInt64 }, ""},
		{"id", func(c *Config) { c.ID = math.MaxInt64 + 1 }, `config: id: 9223372036854775808 is out of range (0 to 2^63-1)`},
		{"group empty", func(c *Config) { c.Group = "" }, `config: group: "" is 0 bytes long (1 to 64 bytes)`},
		{"group 64", func(c *Config) { c.Group = strings.Repeat("g", 64) }, ""},
		{"group 65", func(c *Config) { c.Group = strings.Repeat("g", 65) }, `config: group: "` + strings.Repeat("g", 65) + `" is 65 bytes long (1 to 64 bytes)`},
		{"addr unicast", func(c *Config) { c.Addr = "10.0.0.1:7468" }, `config: addr: 10.0.0.1 is not a multicast address (224.0.0.0/4)`},
		{"addr no port", func(c *Config) { c.Addr = "239.1.1.1" }, `config: addr: "239.1.1.1" has no port (an IPv4 multicast group and port, e.g. 239.192.72.68:7468)`},
		{"addr garbage", func(c *Config) { c.Addr = "nowhere" }, `config: addr: "nowhere" is not group:port (an IPv4 multicast group and port, e.g. 239.192.72.68:7468)`},
		{"addr ipv6", func(c *Config) { c.Addr = "[ff02::1]:7468" }, `config: addr: ff02::1 is not an IPv4 address (an IPv4 multicast group and port, e.g. 239.192.72.68:7468)`},
		{"addr port 0", func(c *Config) { c.Addr = "239.1.1.1:0" }, `config: addr: port "0" is out of range (1 to 65534: huddle also uses the next port, for repairs)`},
		{"addr port big", func(c *Config) { c.Addr = "239.1.1.1:65536" }, `config: addr: port "65536" is out of range (1 to 65534: huddle also uses the next port, for repairs)`},
		{"addr edges", func(c *Config) { c.Addr = "224.0.2.0:1" }, ""},
		{"addr space", func(c *Config) { c.Addr = "239.1.2.3:7468 " }, `config: addr: "239.1.2.3:7468 " has spaces around it; write 239.1.2.3:7468`},
		{"addr link-local", func(c *Config) { c.Addr = "224.0.0.5:7468" }, `config: addr: 224.0.0.5 is in 224.0.0.0/24, the link-local control block (routing protocols, IGMP, all-hosts: never forwarded, and flooded to every port by switches, whatever IGMP snooping says); use a group in 239.192.0.0/14, the organisation-local scope, such as 239.192.72.68`},
		{"addr mdns", func(c *Config) { c.Addr = "224.0.0.251:5353" }, `config: addr: 224.0.0.251 is mDNS's group (multicast DNS, RFC 6762); use a group in 239.192.0.0/14, the organisation-local scope, such as 239.192.72.68`},
		{"addr ssdp", func(c *Config) { c.Addr = "239.255.255.250:1900" }, `config: addr: 239.255.255.250 is SSDP's group (UPnP discovery); use a group in 239.192.0.0/14, the organisation-local scope, such as 239.192.72.68`},
		{"addr ntp", func(c *Config) { c.Addr = "224.0.1.1:7468" }, `config: addr: 224.0.1.1 is in 224.0.1.0/24, the internetwork control block (NTP, among others); use a group in 239.192.0.0/14, the organisation-local scope, such as 239.192.72.68`},
		{"addr ssm", func(c *Config) { c.Addr = "232.1.1.1:7468" }, `config: addr: 232.1.1.1 is in 232.0.0.0/8, source-specific multicast, which needs a source filter huddle does not set; use a group in 239.192.0.0/14, the organisation-local scope, such as 239.192.72.68`},
		{"addr top", func(c *Config) { c.Addr = "239.255.255.255:65534" }, ""},
		{"addr last port", func(c *Config) { c.Addr = "239.1.1.1:65535" }, `config: addr: port "65535" is out of range (1 to 65534: huddle also uses the next port, for repairs)`},
		{"transport", func(c *Config) { c.Transport = "tcp" }, `config: transport: "tcp" is not a transport (multicast, unicast)`},
		{"transport empty", func(c *Config) { c.Transport = "" }, ""},
		{"sequencer", func(c *Config) { c.Sequencer = "token" }, `config: sequencer: "token" is not a sequencer (moving, coordinator)`},
		{"sequencer empty", func(c *Config) { c.Sequencer = "" }, ""},
		{"sequencer coordinator", func(c *Config) { c.Sequencer = "coordinator" }, ""},
		{"unicast", func(c *Config) {
			c.Transport, c.Peers, c.Listen, c.PeersOnly = "unicast", AddrList{"10.0.0.2:7468", "node3", "node4.example:9000"}, "10.0.0.1:7500", true
		}, ""},
		{"peers without unicast", func(c *Config) { c.Peers = AddrList{"10.0.0.2"} }, `config: peers: "10.0.0.2" is set but transport is "multicast" (peers are for transport = "unicast")`},
		{"listen without unicast", func(c *Config) { c.Listen = "10.0.0.1:7468" }, `config: listen: "10.0.0.1:7468" is set but transport is "multicast" (listen is for transport = "unicast")`},
		{"peers_only without unicast", func(c *Config) { c.PeersOnly = true }, `config: peers_only: true is set but transport is "multicast" (peers_only is for transport = "unicast")`},
		{"peer multicast", func(c *Config) { c.Transport, c.Peers = "unicast", AddrList{"239.1.1.1:7468"} }, `config: peers: "239.1.1.1:7468" is not a unicast IPv4 address (host:port or host, e.g. "10.0.0.2:7468" or "node2")`},
		{"peer port", func(c *Config) { c.Transport, c.Peers = "unicast", AddrList{"node2:65535"} }, `config: peers: port "65535" of "node2:65535" is out of range (1 to 65534: huddle also uses the next port, for repairs)`},
		{"peer garbage", func(c *Config) { c.Transport, c.Peers = "unicast", AddrList{"a b"} }, `config: peers: "a b" is not a peer address (host:port or host, e.g. "10.0.0.2:7468" or "node2")`},
		{"peers too many", func(c *Config) { c.Transport, c.Peers = "unicast", make(AddrList, 1025) }, `config: peers: 1025 entries are too many (at most 1024)`},
		{"listen garbage", func(c *Config) { c.Transport, c.Listen = "unicast", "node1:7468" }, `config: listen: "node1:7468" is not an IPv4 address and port (ip:port, e.g. 10.0.0.1:7468; empty: the interface's address and addr's port)`},
		{"listen multicast", func(c *Config) { c.Transport, c.Listen = "unicast", "239.1.1.1:7468" }, `config: listen: 239.1.1.1 is a multicast address (ip:port, e.g. 10.0.0.1:7468; empty: the interface's address and addr's port)`},
		{"ttl 0", func(c *Config) { c.TTL = 0 }, `config: ttl: 0 is out of range (1 to 255)`},
		{"ttl 256", func(c *Config) { c.TTL = 256 }, `config: ttl: 256 is out of range (1 to 255)`},
		{"datagram_size", func(c *Config) { c.DatagramSize = 511 }, `config: datagram_size: 511 is out of range (512 to 65000)`},
		{"datagram_size max", func(c *Config) { c.DatagramSize = 65000 }, ""},
		{"bulk_datagram_size off", func(c *Config) { c.BulkDatagramSize = 0 }, ""},
		{"bulk_datagram_size below datagram_size", func(c *Config) { c.DatagramSize, c.BulkDatagramSize = 8000, 4000 },
			`config: bulk_datagram_size: 4000 is out of range (0 for off, or datagram_size 8000 to 65000)`},
		{"bulk_datagram_size over the most", func(c *Config) { c.BulkDatagramSize = 65001 },
			`config: bulk_datagram_size: 65001 is out of range (0 for off, or datagram_size 1400 to 65000)`},
		{"bulk_datagram_size equal to datagram_size", func(c *Config) { c.BulkDatagramSize = 1400 }, ""},
		{"recv_buffer", func(c *Config) { c.RecvBuffer = 1<<30 + 1 }, `config: recv_buffer: 1073741825 is out of range (65536 to 1073741824)`},
		{"heartbeat 0", func(c *Config) { c.Heartbeat = 0 }, `config: heartbeat: 0s is out of range (1ms to 10s)`},
		{"heartbeat long", func(c *Config) { c.Heartbeat = ms(10001); c.SuspectTimeout = ms(40000) }, `config: heartbeat: 10.001s is out of range (1ms to 10s)`},
		{"suspect_timeout 3 heartbeats", func(c *Config) { c.SuspectTimeout = ms(150) }, ""},
		{"suspect_timeout short", func(c *Config) { c.SuspectTimeout = ms(149) }, `config: suspect_timeout: 149ms is out of range (150ms, 3 heartbeats of 50ms, to 10m0s)`},
		{"suspect_timeout long", func(c *Config) { c.SuspectTimeout = Duration(11 * time.Minute) }, `config: suspect_timeout: 11m0s is out of range (150ms, 3 heartbeats of 50ms, to 10m0s)`},
		{"join_timeout", func(c *Config) { c.JoinTimeout = ms(9) }, `config: join_timeout: 9ms is out of range (10ms to 1m0s)`},
		{"stats_interval 0", func(c *Config) { c.StatsInterval = 0 }, ""},
		{"stats_interval", func(c *Config) { c.StatsInterval = ms(99) }, `config: stats_interval: 99ms is out of range (0 for off, or at least 100ms)`},
		{"stats_interval negative", func(c *Config) { c.StatsInterval = ms(-1) }, `config: stats_interval: -1ms is out of range (0 for off, or at least 100ms)`},
		{"send_window", func(c *Config) { c.SendWindow = 15 }, `config: send_window: 15 is out of range (16 to 1048576)`},
		{"max_message_size", func(c *Config) { c.MaxMessageSize = 16<<20 + 1 }, `config: max_message_size: 16777217 is out of range (1 to 16777216)`},
		{"send_rate", func(c *Config) { c.SendRate = -1 }, `config: send_rate: -1 is out of range (0 to 10000000)`},
		{"send_size", func(c *Config) { c.SendSize = 7 }, `config: send_size: 7 is out of range (8 to 1048576)`},
		{"send_size over max message", func(c *Config) { c.MaxMessageSize = 100; c.SendSize = 101 }, `config: send_size: 101 is out of range (8 to 100)`},
		{"duration", func(c *Config) { c.Duration = ms(5) }, `config: duration: 5ms is out of range (0 for off, or at least 10ms)`},
		{"kv.fill fits", func(c *Config) { c.KV = KV{Keys: 1000, Size: 1024, Fill: true}; c.StateMaxSize = 1_034_008 }, ""},
		{"kv.fill", func(c *Config) { c.KV = KV{Keys: 1000, Size: 1024, Fill: true}; c.StateMaxSize = 1_034_007 },
			`config: kv.fill: true fills a store of 1034008 bytes, kv.keys × (kv.size + 10) (at most state_max_size, 1034007: fewer kv.keys, a smaller kv.size, or a larger state_max_size)`},
		{"kv.fill without keys", func(c *Config) { c.KV = KV{Size: 1024, Fill: true}; c.StateMaxSize = 4096 }, ""},
		{"srm.min_delay", func(c *Config) { c.SRM.MinDelay = ms(101) }, `config: srm.min_delay: 101ms is out of range (0s to 100ms)`},
		{"srm.c1 0", func(c *Config) { c.SRM.C1 = 0 }, ""},
		{"srm.c1", func(c *Config) { c.SRM.C1 = -0.5 }, `config: srm.c1: -0.5 is out of range (0 to 100)`},
		{"srm.c2", func(c *Config) { c.SRM.C2 = 0 }, `config: srm.c2: 0 is out of range (above 0, up to 100)`},
		{"srm.d1", func(c *Config) { c.SRM.D1 = math.NaN() }, `config: srm.d1: NaN is out of range (0 to 100)`},
		{"srm.d2", func(c *Config) { c.SRM.D2 = 100.5 }, `config: srm.d2: 100.5 is out of range (above 0, up to 100)`},
		{"send_order", func(c *Config) { c.SendOrder = "agreed" }, `config: send_order: "agreed" is not a delivery order (fifo, total, safe, causal)`},
		{"log.level", func(c *Config) { c.Log.Level = "verbose" }, `config: log.level: "verbose" is not a log level (trace, debug, info, warn, error)`},
		{"log.level trace", func(c *Config) { c.Log.Level = "trace" }, ""},
		{"ring order", func(c *Config) { c.Election.RingOrder = "random" }, `config: election.ring_order: "random" is not a ring order (ascending, descending, join)`},
		{"hop delay", func(c *Config) { c.Election.HopDelay = Duration(11 * time.Second) }, `config: election.hop_delay: 11s is out of range (0s to 10s)`},
		{"answer timeout", func(c *Config) { c.Election.AnswerTimeout = Duration(2 * time.Minute) }, `config: election.answer_timeout: 2m0s is out of range (0 for the default, or 1ms to 1m0s)`},
		{"answer timeout within hops", func(c *Config) {
			c.Election.HopDelay, c.Election.AnswerTimeout = Duration(time.Second), Duration(time.Second)
		},
			`config: election.answer_timeout: 1s is not above two hop delays (election.hop_delay is 1s): every ANSWER would come too late`},
		{"coordinator timeout", func(c *Config) {
			c.Election.AnswerTimeout, c.Election.CoordinatorTimeout = Duration(time.Second), Duration(time.Second)
		},
			`config: election.coordinator_timeout: 1s is not above the answer timeout in force (1s): a higher member's own election takes that long before it announces itself`},
		{"coordinator timeout above the derived answer", func(c *Config) { c.Election.CoordinatorTimeout = Duration(50 * time.Millisecond) },
			`config: election.coordinator_timeout: 50ms is not above the answer timeout in force (100ms): a higher member's own election takes that long before it announces itself`},
		{"log.format", func(c *Config) { c.Log.Format = "text" }, `config: log.format: "text" is not a log format (json, console)`},
		{"election.algorithm", func(c *Config) { c.Election.Algorithm = "raft" }, `config: election.algorithm: "raft" is not an election algorithm (ring, bully)`},
		{"election.every", func(c *Config) { c.Election.Every = ms(50) }, `config: election.every: 50ms is out of range (0 for off, or at least 100ms)`},
		{"mutex.quorum", func(c *Config) { c.Mutex.Quorum = 1025 }, `config: mutex.quorum: 1025 is out of range (0 to 1024)`},
		{"security.key", func(c *Config) { c.Security.Key = "secret" }, `config: security.key: a key of 6 bytes is too short (at least 16 bytes, or one written by huddle keygen)`},
		{"security.key and key_file", func(c *Config) { c.Security = Security{Key: strings.Repeat("k", 16), KeyFile: "/k"} }, `config: security.key: is set, and so is security.key_file: set one of them`},
		{"security.key 16", func(c *Config) { c.Security.Key = strings.Repeat("k", 16) }, ""},
		{"drop.burst 0", func(c *Config) { c.Drop = Drop{Rate: 0.5} }, ""},
		{"drop.burst 4", func(c *Config) { c.Drop = Drop{Rate: 0.2, Burst: 4} }, ""},
		{"drop.burst 1000", func(c *Config) { c.Drop = Drop{Rate: 0.2, Burst: 1000} }, ""},
		{"drop.burst at the loss limit", func(c *Config) { c.Drop = Drop{Rate: 0.75, Burst: 3} }, ""},
		{"drop.burst rate 1", func(c *Config) { c.Drop = Drop{Rate: 1, Burst: 3} }, ""},
		{"drop.burst fraction", func(c *Config) { c.Drop = Drop{Rate: 0.2, Burst: 0.5} }, `config: drop.burst: 0.5 is out of range (0 or 1 for independent losses, else 1 to 1000)`},
		{"drop.burst negative", func(c *Config) { c.Drop.Burst = -2 }, `config: drop.burst: -2 is out of range (0 or 1 for independent losses, else 1 to 1000)`},
		{"drop.burst long", func(c *Config) { c.Drop.Burst = 1001 }, `config: drop.burst: 1001 is out of range (0 or 1 for independent losses, else 1 to 1000)`},
		{"drop.burst NaN", func(c *Config) { c.Drop.Burst = math.NaN() }, `config: drop.burst: NaN is out of range (0 or 1 for independent losses, else 1 to 1000)`},
		{"drop.burst too short for the rate", func(c *Config) { c.Drop = Drop{Rate: 0.9, Burst: 3} }, `config: drop.burst: 3 is too short for a loss of 0.9 (bursts of 3 allow a loss of at most 0.75, beyond which the gaps between bursts would be shorter than one datagram)`},
		{"several", func(c *Config) { c.TTL = 0; c.Log.Format = "" }, "config: ttl: 0 is out of range (1 to 255)\n" +
			`config: log.format: "" is not a log format (json, console)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := LAN()
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}

// TestValidateSources: Load passes where each value came from, and each
// problem names it; a key without a source (a default) names none.
func TestValidateSources(t *testing.T) {
	c := LAN()
	c.TTL, c.Log.Format, c.Heartbeat, c.SRM.C2 = 0, "", ms(200), 0
	err := c.validate(map[string]string{"ttl": "HUDDLE_TTL", "log.format": "huddle.toml:7", "srm.c2": "--srm-c2", "heartbeat": "--heartbeat"}, nil)
	want := "config: HUDDLE_TTL: ttl: 0 is out of range (1 to 255)\n" +
		"config: suspect_timeout: 400ms is out of range (600ms, 3 heartbeats of 200ms, to 10m0s)\n" +
		"config: --srm-c2: srm.c2: 0 is out of range (above 0, up to 100)\n" +
		`config: huddle.toml:7: log.format: "" is not a log format (json, console)`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	// Validate itself names no source.
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "HUDDLE_TTL") {
		t.Errorf("Validate: %v", err)
	}
}

func TestValidateZero(t *testing.T) {
	var c Config
	err := c.Validate()
	if err == nil {
		t.Fatal("the zero Config is valid")
	}
	for _, key := range []string{"profile", "group", "addr", "ttl", "heartbeat", "log.level", "election.algorithm"} {
		if !strings.Contains(err.Error(), "config: "+key+": ") {
			t.Errorf("no problem reported for %s in:\n%v", key, err)
		}
	}
}

func TestGroupAddr(t *testing.T) {
	c := LAN()
	if got := c.GroupAddr().String(); got != "239.192.72.68:7468" {
		t.Errorf("GroupAddr() = %s", got)
	}
}
