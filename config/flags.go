package config

import (
	"flag"
	"reflect"
)

// Flags holds the configuration flags registered on a flag.FlagSet by
// AddFlags, as text: Load parses them, so that a bad flag value is
// reported like a bad value from any other source.
type Flags struct {
	path   string               // --config
	byName map[string]*textFlag // flag name → flag, aliases included
}

// textFlag is a flag.Value that keeps the text it was given.
type textFlag struct {
	key    string // TOML key of the setting
	value  string
	isBool bool
}

func (t *textFlag) String() string {
	if t == nil {
		return ""
	}
	return t.value
}

func (t *textFlag) Set(s string) error { t.value = s; return nil }

// IsBoolFlag lets a boolean be set by its name alone: --loopback.
func (t *textFlag) IsBoolFlag() bool { return t.isBool }

// usage is the one-line help of each setting. A backquoted word names the
// flag's argument in fs.PrintDefaults.
var usage = map[string]string{
	"profile":                      "`profile` of defaults to start from: lan or local",
	"id":                           "node `ID`, unique in the group; 0 derives it from the interface's IPv4 address",
	"group":                        "group `name`, 1 to 64 bytes; groups with other names are ignored",
	"addr":                         "multicast group and UDP port, `ipv4:port` in 224.0.0.0/4",
	"iface":                        "network `interface` to join on; empty picks the default route's",
	"transport":                    "`multicast` or unicast (one datagram per member, where multicast does not reach)",
	"peers":                        "unicast: nodes to reach before hearing them, `host:port,...` (names resolved again when unheard)",
	"listen":                       "unicast: the `ip:port` to receive on; empty: the interface's address and addr's port",
	"peers_only":                   "unicast: drop datagrams from addresses neither listed nor members",
	"ttl":                          "IP time-to-live of multicast datagrams in `hops`, 1 to 255; 1 stays on the link",
	"loopback":                     "deliver this host's own datagrams to other nodes on this host",
	"datagram_size":                "largest UDP payload in `bytes`, 512 to 65000",
	"bulk_datagram_size":           "largest datagram in `bytes` a busy sender packs while nothing is lost (IP-fragmented), 0 (off) or datagram_size to 65000",
	"recv_buffer":                  "socket receive buffer in `bytes`, 65536 to 1 GiB",
	"sequencer":                    "who orders total and safe messages: `moving` (to a member that sends alone) or coordinator",
	"busy_poll":                    "after a total or safe send, read the group socket without sleeping until its delivery, at most this `long`, 0 (off) to 100ms",
	"heartbeat":                    "`interval` between session messages (heartbeats), 1ms to 10s",
	"suspect_timeout":              "`silence` after which a peer is suspected, 3 heartbeats to 10m",
	"join_timeout":                 "`time` to wait for admission before forming a group alone, 10ms to 1m",
	"quorum":                       "primary-component `policy`: off (every view is primary), majority (of the last primary view, less graceful leavers) or static (of quorum_expected), the same on every member",
	"quorum_expected":              "the group's number of `nodes`, 1 to 1024, for quorum majority and static; never run more",
	"quorum_tie_breaker":           "node `ID` whose half wins an even split; 0: the last primary view's lowest ID (majority), none (static)",
	"quorum_wait_for_all":          "the first primary view waits for all quorum_expected nodes",
	"state_max_size":               "largest snapshot of a replicated service, and what a member waiting for one holds back, in `bytes`, 4096 to 1 TiB",
	"stats_interval":               "`interval` between node.stats events; 0 logs them only at exit",
	"send_window":                  "most unstable own `messages` before sending blocks, 16 to 1048576",
	"max_message_size":             "largest message in `bytes`, sent in fragments when over one datagram, 1 to 16 MiB",
	"send_rate":                    "experiment workload: multicast this many `messages` per second; 0 is none",
	"send_size":                    "experiment workload: payload `bytes` of each message, 8 to max_message_size",
	"send_count":                   "experiment workload: stop sending after this many `messages`; 0 is no limit",
	"send_order":                   "experiment workload: delivery `order` of each message: fifo, total, safe or causal",
	"control_socket":               "`path` of the control socket for huddle status/send; empty picks one per group and ID, off disables it",
	"duration":                     "stop the node after this `time`, as SIGTERM would; 0 runs until stopped",
	"trace_deliveries":             "log every delivered message as an info event \"deliver\" with from, seq, len, crc",
	"srm.min_delay":                "SRM floor on the one-way `delay` the timers scale with, 0 to 100ms",
	"srm.c1":                       "SRM request timer start in one-way `delays`, 0 to 100",
	"srm.c2":                       "SRM request timer spread in one-way `delays`, above 0 up to 100",
	"srm.d1":                       "SRM repair timer start in one-way `delays`, 0 to 100",
	"srm.d2":                       "SRM repair timer spread in one-way `delays`, above 0 up to 100",
	"log.level":                    "lowest log `level`: trace (every election and lock message), debug (the effective configuration at start), info, warn or error",
	"log.format":                   "log `format`: json or console",
	"log.file":                     "`path` to append the log to; empty writes to standard error",
	"election.algorithm":           "election `algorithm`: ring or bully, the same on every member",
	"election.every":               "start an election every `interval`; 0 is off, else at least 100ms",
	"election.count":               "stop the periodic elections after this many `elections`; 0 is no limit",
	"election.ring_order":          "ring election's `order`: ascending, descending or join (the order members joined), the same on every member",
	"election.hop_delay":           "hold every election message this `long` before it goes out, to watch a round (0 to 10s)",
	"election.answer_timeout":      "bully: how `long` an initiator waits for a higher member's ANSWER; 0 derives it (2 heartbeats + 2 hop delays)",
	"election.coordinator_timeout": "bully: how `long` a member waits for the COORDINATOR after an ANSWER; 0 derives it (suspect timeout + answer timeout + 2 hop delays)",
	"kv.keys":                      "experiment: keep the replicated key-value store \"kv\" with this many `keys` (0: none); every node of the group, or none",
	"kv.rate":                      "experiment: put to the store this many `times` a second, in total order",
	"kv.size":                      "experiment: each value's size in `bytes`, 1 to 65536",
	"kv.fill":                      "experiment: start the store full, every key holding a value of kv.size bytes derived from the key (the same on every node)",
	"mutex.think":                  "lock workload: wait a `time` or MIN-MAX range (e.g. 3s-5s) between uses of the lock; empty is off",
	"mutex.hold":                   "lock workload: hold the lock this `long` each time",
	"mutex.quorum":                 "expected cluster `size`: lock only with a majority of it; 0 is off",
	"mutex.algorithm":              "lock `algorithm`: ra (Ricart–Agrawala), central (the coordinator grants) or token (a token ring), the same on every member",
	"security.key":                 "group `key` sealing every datagram (huddle keygen's, or a passphrase of 16 bytes or more); prefer key_file or HUDDLE_SECURITY_KEY: flags show in ps",
	"security.key_file":            "`file` holding the group key (0600 or 0400, owned by this user); two lines during a rollover",
	"drop.rate":                    "experiment: drop each received datagram with this `probability`, 0 to 1 (built-in loss, counted as injected_drops)",
	"drop.from":                    "experiment: drop only datagrams from these node `IDs` (e.g. 3,4); empty is every sender",
	"drop.seed":                    "experiment: `seed` of the drop's random choices; 0 derives one from the node's incarnation",
	"drop.burst":                   "experiment: drop in bursts of this mean `length` in datagrams, 1 to 1000, at the same long-run rate; 0 or 1 drops independently",
	"metrics.addr":                 "serve Prometheus metrics on `host:port` (/metrics); empty is off",
	"metrics.pprof":                "also serve Go's /debug/pprof on the metrics endpoint",
}

// AddFlags registers one flag per Config field on fs, named after its TOML
// key (--suspect-timeout, --srm-c1), plus --election, --election-interval
// and --elections as short forms of --election-algorithm, --election-every
// and --election-count, and --config for the TOML file. The defaults shown
// in the help are the LAN profile's; the usage of a field whose Local
// default differs says so. Call Load after fs.Parse.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{byName: make(map[string]*textFlag)}
	fs.StringVar(&f.path, "config", "", "TOML `file` to read settings from (default $HUDDLE_CONFIG)")
	lan, local := LAN(), Local()
	localByKey := settingsByKey(&local)
	for _, s := range settings(&lan) {
		help := usage[s.key]
		if l := localByKey[s.key]; s.key != "profile" && l.String() != s.String() {
			help += "; local profile: " + l.String()
		}
		t := &textFlag{key: s.key, value: s.String(), isBool: s.v.Kind() == reflect.Bool}
		f.add(fs, flagName(s.key), t, help)
	}
	f.add(fs, "election", f.byName["election-algorithm"], "election `algorithm`, short for --election-algorithm")
	f.add(fs, "election-interval", f.byName["election-every"], "start an election every `interval`, short for --election-every")
	f.add(fs, "elections", f.byName["election-count"], "stop the periodic elections after this many `elections`, short for --election-count")
	f.add(fs, "lock-think", f.byName["mutex-think"], "wait a `time` or MIN-MAX range between uses of the lock, short for --mutex-think")
	f.add(fs, "lock-hold", f.byName["mutex-hold"], "hold the lock this `long` each time, short for --mutex-hold")
	return f
}

func (f *Flags) add(fs *flag.FlagSet, name string, t *textFlag, help string) {
	f.byName[name] = t
	fs.Var(t, name, help)
}

// set returns the configuration flags that were given on the command line,
// in the order of fs.Visit, each with the flag as its source (--election,
// not --election-algorithm, if that is what was typed).
func (f *Flags) set(fs *flag.FlagSet) []assignment {
	var out []assignment
	if f == nil || fs == nil {
		return nil
	}
	fs.Visit(func(fl *flag.Flag) {
		if t, ok := f.byName[fl.Name]; ok {
			out = append(out, assignment{t.key, t.value, "--" + fl.Name})
		}
	})
	return out
}
