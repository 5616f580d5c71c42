package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/multicast"
)

// Config is everything one huddle node needs. The zero value is not usable:
// start from a profile (LAN or Local) and override fields.
//
// The TOML key of each field is given in its `toml` tag; the environment
// variable is HUDDLE_ followed by the key in upper case with "." replaced by
// "_" (for example srm.c1 is HUDDLE_SRM_C1); the command-line flag is the key
// with "_" and "." replaced by "-" (for example --suspect-timeout).
type Config struct {
	// Profile names the set of defaults this configuration started from:
	// "lan" (real networks) or "local" (one host, tests). Default "lan".
	// Only the defaults differ between profiles; every field can still be set.
	Profile string `toml:"profile"`

	// ID is this node's identifier, unique in the group and totally ordered
	// (elections elect the highest). 0 means "derive it": the IPv4 address of
	// the interface the node runs on, read as a 32-bit number, which is
	// stable across restarts and unique on a LAN. Set it explicitly when
	// several nodes share one host. Allowed: 0 to 2^63-1.
	ID uint64 `toml:"id"`

	// Group is the group's name. Nodes with different names on the same
	// address and port ignore each other (the name travels as a 32-bit hash
	// in every datagram). Default "huddle". 1 to 64 bytes.
	Group string `toml:"group"`

	// Addr is the IPv4 multicast group and UDP port, "group:port". Default
	// "239.192.72.68:7468" (239.192.0.0/14 is the organisation-local scope,
	// RFC 2365, which routers at a site's edge do not forward). The address
	// must be in 224.0.0.0/4, outside the reserved and well-known groups
	// (224.0.0.0/24, 224.0.1.0/24, 232.0.0.0/8, SSDP's 239.255.255.250).
	Addr string `toml:"addr"`

	// Iface is the name of the network interface to join the group on
	// ("eth0"). Empty means: the interface of the default route, else the
	// first up, multicast-capable, non-loopback interface with an IPv4
	// address, else a multicast-capable loopback.
	Iface string `toml:"iface"`

	// Transport is how datagrams reach the other members: "multicast"
	// (the default: one datagram to the group address reaches every
	// member) or "unicast" (one datagram per member, for networks that
	// carry no multicast: container overlays, clouds, switches that stop
	// forwarding a group). The same on every member.
	Transport string `toml:"transport"`

	// Peers lists the nodes a unicast node sends to before it has heard
	// them, as "host:port" (a host name or an IPv4 address; without a
	// port, addr's). Names are resolved at start and again while a peer
	// they name stays unheard, so a DNS-based list works. A node also
	// learns the address of every node it hears, so a node that starts
	// later need only list nodes that run before it. Its own address may
	// be in the list. At most 1024 entries. Unicast only.
	Peers AddrList `toml:"peers"`

	// Listen is the unicast address this node receives on, "ip:port";
	// the repair traffic uses the next port. Default empty: the
	// interface's IPv4 address and addr's port. Set it to run several
	// unicast nodes on one host (each on its own port). Unicast only.
	Listen string `toml:"listen"`

	// PeersOnly drops datagrams from addresses that are neither in peers
	// nor members of the view (counted as unlisted), instead of learning
	// them. Default false. Unicast only.
	PeersOnly bool `toml:"peers_only"`

	// TTL is the IP time-to-live of multicast datagrams. Default 1: the
	// group stays on the local link, which is what huddle is built for.
	// Raise it only to cross multicast routers. 1 to 255.
	TTL int `toml:"ttl"`

	// Loopback delivers this host's own multicast datagrams back to sockets
	// on this host. Default true, so that several nodes can share one
	// machine; turning it off saves a little CPU when a host runs one node.
	Loopback bool `toml:"loopback"`

	// DatagramSize is the largest UDP payload huddle sends, in bytes.
	// Default 1400, which fits an Ethernet MTU of 1500 with IP and UDP
	// headers (and a VLAN tag) to spare, so a lost packet loses one
	// datagram. Larger values (up to 65000) batch more messages per datagram
	// on loss-free LANs, at the price of IP fragmentation: losing one
	// fragment loses the whole datagram. 512 to 65000.
	DatagramSize int `toml:"datagram_size"`

	// BulkDatagramSize is the largest datagram a busy sender packs its
	// messages into while no member has asked it for a repair in the last
	// ten heartbeats; at the first request it packs to datagram_size
	// again. Every message is still cut to fit datagram_size, so repairs
	// do; messages smaller than an eighth of datagram_size are not packed
	// in bulk (they gain nothing). Datagrams above the MTU cross the LAN
	// in IP fragments: fewer datagrams for the same messages (a sender's
	// cost is per datagram), but a lost fragment loses the whole
	// datagram, hence only while nothing is lost. 0 (or datagram_size)
	// turns it off: set 0 where IP fragments do not pass. Default 65000.
	// It may differ between members: every member reads datagrams of up
	// to 65000 bytes. 0, or datagram_size to 65000.
	BulkDatagramSize int `toml:"bulk_datagram_size"`

	// RecvBuffer is the socket receive buffer requested from the kernel, in
	// bytes. Default 8 MiB: enough to absorb about 50 ms of a saturated
	// gigabit link without drops while the node is descheduled. The kernel
	// caps it at net.core.rmem_max; huddle logs a warning when it does.
	// 65536 to 1 GiB.
	RecvBuffer int `toml:"recv_buffer"`

	// BusyPoll trades CPU for latency: after the node multicasts a
	// message in total or safe order, it reads its group socket without
	// sleeping until the message is delivered, for at most this long, so
	// that the sequencer's record is taken as it arrives instead of after
	// the kernel wakes the process. Default 0 (off: the node sleeps
	// whenever it waits). 0 to 100ms; about twice the group's round trip
	// is enough. This node's own: members may differ.
	BusyPoll Duration `toml:"busy_poll"`

	// Sequencer says who orders total and safe messages: "moving" (the
	// default: each view's coordinator first, and the order moves to a
	// member whose ordered messages the sequencer took 64 times in a row,
	// over 16 of its records, so that a member sending alone orders its own without a round
	// trip) or "coordinator" (each view's coordinator orders all, as
	// releases before 2026-11-29 did). The same on every member.
	Sequencer string `toml:"sequencer"`

	// Heartbeat is the interval between session messages, which carry each
	// member's receive state and double as heartbeats. LAN default 50ms,
	// local 20ms. Shorter detects loss of the last message and crashes
	// sooner, at the cost of one small datagram per member per interval.
	Heartbeat Duration `toml:"heartbeat"`

	// SuspectTimeout is how long a peer may stay silent before it is
	// considered lost (and, with membership, suspected). LAN default 400ms
	// (8 heartbeats, so that a false suspicion at 5 % loss needs 8
	// consecutive losses: about 4e-11 per interval), local 150ms. Must be at
	// least 3 heartbeats.
	SuspectTimeout Duration `toml:"suspect_timeout"`

	// JoinTimeout is how long a joining node waits for a coordinator to
	// admit it before it forms a group of its own. LAN default 500ms, local
	// 200ms. Shorter starts a lone node sooner; too short splits a group
	// that is merely slow to answer (merge heals that later).
	JoinTimeout Duration `toml:"join_timeout"`

	// Quorum is the primary-component policy (docs/design.md, "Primary
	// views"): "off" (the default: every view is primary, as in a group
	// that does not know its size), "majority" (a view is primary when it
	// holds a majority of the last primary view, less the members that
	// left it gracefully while it was primary: the group can shrink one failure at a time down
	// to a single node) or "static" (a majority of quorum_expected nodes).
	// In a view that is not primary, total and safe sends fail
	// (huddle.ErrNotPrimary) and the lock is not granted. The same on
	// every member.
	Quorum string `toml:"quorum"`
	// QuorumExpected is the number of nodes of the group, 1 to 1024,
	// required by "majority" and "static": a view of all of them is
	// always primary, and at first start (no member knew a primary view)
	// a view needs more than half of them, or all with
	// quorum_wait_for_all. Never run more nodes than this.
	QuorumExpected int `toml:"quorum_expected"`
	// QuorumTieBreaker is the node ID whose half wins an even split; 0:
	// with "majority" the lowest ID of the last primary view, with
	// "static" no half.
	QuorumTieBreaker uint64 `toml:"quorum_tie_breaker"`
	// QuorumWaitForAll makes the first primary view wait for all
	// quorum_expected nodes (Corosync's wait_for_all).
	QuorumWaitForAll bool `toml:"quorum_wait_for_all"`

	// StateMaxSize bounds a replicated service's snapshot, and the
	// messages a member behind holds back while it waits for one, in
	// bytes: 4096 to 1 TiB, default 1 GiB (state transfer, the Group
	// API's Replicated).
	StateMaxSize int `toml:"state_max_size"`

	// StatsInterval is the interval between node.stats log events. LAN
	// default 10s, local 2s. 0 logs stats only at exit.
	StatsInterval Duration `toml:"stats_interval"`

	// SendWindow is the largest number of this node's own messages that
	// may be unstable (not yet held by every receiver) at once. Past it,
	// sending blocks instead of buffering more. Default 4096: at 1000-byte
	// messages that bounds the retransmission buffer to about 4 MB, and
	// covers about 40 ms of traffic at 100 000 msg/s. Larger keeps a fast
	// sender busy across longer repair delays; smaller bounds memory
	// tighter. 16 to 1 048 576.
	SendWindow int `toml:"send_window"`

	// MaxMessageSize is the largest message a node sends or reassembles, in
	// bytes. Default 1 MiB. Larger messages are split into fragments of
	// one datagram each; all of a message's fragments must fit the send
	// window. 1 to 16 MiB.
	MaxMessageSize int `toml:"max_message_size"`

	// SendRate makes the node multicast messages for experiments: this
	// many per second, or as many as the send window allows when the
	// network cannot keep up. Default 0 (none). Sending starts one join
	// timeout after the node starts, once it has heard the group.
	SendRate int `toml:"send_rate"`

	// SendSize is the payload size of those messages, in bytes. Default
	// 1000. 8 to max_message_size: each payload starts with its 8-byte
	// message number.
	SendSize int `toml:"send_size"`

	// SendCount stops sending after this many messages. Default 0
	// (no limit).
	SendCount int `toml:"send_count"`

	// SendOrder is the delivery order of those messages: "fifo" (each
	// sender's order), "total" (one order for every member, through the
	// view's sequencer: see Sequencer), "safe" (total, and delivered only
	// once every member holds the message) or "causal" (after everything
	// its sender had delivered before it). Default "fifo".
	SendOrder string `toml:"send_order"`

	// Duration stops the node (as SIGTERM would) after this long. Default
	// 0 (run until stopped).
	Duration Duration `toml:"duration"`

	// TraceDeliveries logs every delivered message as an info event
	// "deliver" with from, seq, len and crc (CRC-32 of the payload), so
	// that a run can be checked from its logs alone. Default false: at
	// high rates it dominates the log.
	TraceDeliveries bool `toml:"trace_deliveries"`

	// ControlSocket is the path of the node's control socket, a Unix
	// socket through which `huddle status` and `huddle send` talk to the
	// running node. Default empty: $XDG_RUNTIME_DIR/huddle/<group>-<id>.sock,
	// or /tmp/huddle-<uid>/<group>-<id>.sock without XDG_RUNTIME_DIR. "off"
	// disables it. The socket is created with permission 0600.
	ControlSocket string `toml:"control_socket"`

	// SRM holds the request and repair timer constants (Floyd et al. 1997).
	SRM SRM `toml:"srm"`

	// Log configures the node's structured log.
	Log Log `toml:"log"`

	// Election configures the leader election protocol.
	Election Election `toml:"election"`

	// Mutex configures the lock.
	Mutex Mutex `toml:"mutex"`

	// KV is the experiment's replicated key-value store.
	KV KV `toml:"kv"`

	// Security configures datagram sealing with a group key.
	Security Security `toml:"security"`

	// Drop injects receive-side loss for experiments.
	Drop Drop `toml:"drop"`

	// Metrics configures the Prometheus endpoint.
	Metrics Metrics `toml:"metrics"`
}

// Metrics configures the node's HTTP endpoint for Prometheus.
type Metrics struct {
	// Addr is the HOST:PORT the node serves /metrics on (Prometheus text
	// and OpenMetrics). Default empty: no endpoint. A port of 0 picks a
	// free one, which node.started logs.
	Addr string `toml:"addr"`
	// Pprof adds Go's /debug/pprof handlers to the endpoint. Default
	// false: profiles show the node's internals to whoever reaches the
	// port.
	Pprof bool `toml:"pprof"`
}

// SRM holds the timer constants of Scalable Reliable Multicast (Floyd et
// al. 1997, section III). d is the estimated one-way delay to the source of
// the lost data, d' the delay to the member that asked for it.
type SRM struct {
	// C1 and C2 place the request (NACK) timer uniformly in
	// [C1·d, (C1+C2)·d]. Larger C2 spreads the timers of receivers that
	// share a loss, so that one request suppresses the others, at the cost
	// of slower recovery. C2 is where the spread starts: each node then
	// adapts it per sender between 1 and 12 (SRM §VI-A), wider while
	// losses draw duplicate requests, narrower while they do not.
	// Defaults C1=1, C2=3: the paper's C1=2 only delays recovery on a LAN,
	// where the spread C2·min_delay does the suppressing. 0 to 100; C2>0.
	C1 float64 `toml:"c1"`
	C2 float64 `toml:"c2"`
	// D1 and D2 place the repair timer uniformly in [D1·d', (D1+D2)·d'].
	// Defaults D1=1, D2=1 (the paper's). 0 to 100; D2>0.
	D1 float64 `toml:"d1"`
	D2 float64 `toml:"d2"`
	// MinDelay is the floor on the one-way delay d that the timers scale
	// with. Default 500µs. On a LAN the measured delay (tens of µs) is
	// below the time a host takes to process a datagram, so timers spread
	// by it fire together and suppress nothing; spreading them by more
	// than that processing time lets the first NACK or repair suppress the
	// others, at the price of recovery about C1·min_delay later. 0 to 100ms.
	MinDelay Duration `toml:"min_delay"`
}

// Log configures logging.
type Log struct {
	// Level is the lowest level written: "debug", "info", "warn" or
	// "error". Default "info". "debug" logs every datagram and is meant for
	// small experiments.
	Level string `toml:"level"`
	// Format is "json" (one object per line, the default, which the lab
	// and the log checker read) or "console" (aligned and coloured, for
	// people).
	Format string `toml:"format"`
	// File is the path to append the log to. Empty (the default) writes to
	// standard error.
	File string `toml:"file"`
}

// Election configures leader election.
type Election struct {
	// Algorithm is "ring" (Chang–Roberts 1979) or "bully" (Garcia-Molina
	// 1982). Default "ring". Every member of a group must use the same one.
	Algorithm string `toml:"algorithm"`
	// Every starts an election periodically when non-zero (also
	// --election-interval). Default 0 (only when the group has no leader,
	// its leader left, or on request).
	Every Duration `toml:"every"`
	// Count stops the periodic elections after this many started by this
	// node (also --elections). Default 0 (no limit).
	Count int `toml:"count"`
	// RingOrder is the ring's order for the ring algorithm: "ascending"
	// (by ID, the default), "descending", or "join" (the order the members
	// joined, as ring_voting places its workers). Every member of a group
	// must use the same one.
	RingOrder string `toml:"ring_order"`
	// HopDelay holds every election message this node sends for this
	// long, to watch a round by eye (ring_voting's --worker-sleep).
	// Default 0; at most 10s.
	HopDelay Duration `toml:"hop_delay"`
	// AnswerTimeout (bully) is how long an initiator waits for a higher
	// member's ANSWER before it declares itself. Default 0: two
	// heartbeats and two hop delays.
	AnswerTimeout Duration `toml:"answer_timeout"`
	// CoordinatorTimeout (bully) is how long a member that got an ANSWER
	// waits for the COORDINATOR before it starts again, and how long a
	// member without a leader waits for one to be announced. Default 0:
	// the suspect timeout, the answer timeout and two hop delays.
	CoordinatorTimeout Duration `toml:"coordinator_timeout"`
}

// Timeouts returns the bully timeouts in force: the settings, or for those
// left at 0 the defaults derived from the heartbeat, the suspect timeout
// and the hop delay (election.Options.Timeouts).
func (e Election) Timeouts(heartbeat, suspect time.Duration) (answer, coordinator time.Duration) {
	return e.Options().Timeouts(heartbeat, suspect)
}

// KV configures the replicated key-value store huddle run keeps for
// experiments (the service "kv", replicated with state transfer): every
// node of the group must keep it or none.
type KV struct {
	// Keys is how many keys the store's workload puts into; 0 (the
	// default) keeps no store. 0 to 10000000.
	Keys int `toml:"keys"`
	// Rate is how many puts a second this node multicasts, in total
	// order, to random keys; 0 (the default) puts nothing. 0 to 1000000.
	Rate int `toml:"rate"`
	// Size is each value's size in bytes, 1 to 65536 (default 100).
	Size int `toml:"size"`
	// Fill, when true, starts the store full: every key 0 to Keys-1
	// holds a value of Size bytes derived from the key alone, the same
	// on every node, so that the state is about Keys × (Size + 10) bytes
	// from the start without a put (for measuring state transfers of a
	// given size). Default false: the store starts empty. The filled
	// store must fit state_max_size.
	Fill bool `toml:"fill"`
}

// FilledSize is the size in bytes of the store's snapshot when Fill
// starts it full: a count, then each entry's key, length and value.
func (k KV) FilledSize() int64 {
	n := int64(1)
	for v := k.Size >> 7; v > 0; v >>= 7 {
		n++ // the value's length, a uvarint
	}
	return 8 + int64(k.Keys)*(8+n+int64(k.Size))
}

// Mutex configures the lock.
type Mutex struct {
	// Quorum, when non-zero, is the expected cluster size N: the lock is
	// granted only while the view holds a majority of N members, so that
	// the two sides of a partition cannot both hold it. Default 0 (off).
	// 0 to 1024. Ricart–Agrawala only.
	Quorum int `toml:"quorum"`
	// Algorithm is the lock's algorithm: "ra" (Ricart–Agrawala 1981, the
	// default), "central" (the view's coordinator grants) or "token" (a
	// token ring). Every member of a group must use the same one.
	Algorithm string `toml:"algorithm"`
	// Think makes the node use the lock for experiments (the seed program
	// dist_sync): it waits a time drawn uniformly from "MIN-MAX" (or
	// exactly "D"), requests the lock, holds it for Hold, releases it, and
	// again. Also --lock-think. Default empty (off).
	Think string `toml:"think"`
	// Hold is how long that workload holds the lock (also --lock-hold).
	// Default 0.
	Hold Duration `toml:"hold"`
}

// ThinkRange returns Think parsed: the least and the most time between
// two uses of the lock; ok is false when Think is empty.
func (m Mutex) ThinkRange() (lo, hi time.Duration, ok bool, err error) {
	if m.Think == "" {
		return 0, 0, false, nil
	}
	a, b, two := strings.Cut(m.Think, "-")
	if lo, err = time.ParseDuration(strings.TrimSpace(a)); err != nil {
		return 0, 0, false, err
	}
	hi = lo
	if two {
		if hi, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
			return 0, 0, false, err
		}
	}
	if lo < 0 || hi < lo {
		return 0, 0, false, fmt.Errorf("%v to %v is not a range", lo, hi)
	}
	return lo, hi, true, nil
}

// Security configures datagram sealing. With a group key every datagram
// of every kind is sealed with AES-256-GCM; anything that fails to open,
// replays, and datagrams in the clear are dropped and counted. Without one
// (the default) datagrams travel in the clear. Every member must hold the
// key: a joiner with another key, or none, is refused. See
// docs/security.md.
type Security struct {
	// Key is the group key: a key written by huddle keygen
	// ("huddle-key-v1:..."), or a passphrase of at least 16 bytes
	// (derived with HKDF, and only as strong as it is hard to guess).
	// Prefer key_file, or the environment (HUDDLE_SECURITY_KEY): a flag's
	// value shows in ps. Default empty.
	Key string `toml:"key"`
	// KeyFile is a file holding the group key, as huddle keygen writes
	// it, or two keys during a rollover, one per line: the first seals,
	// both open. Its owner must be this user (or root) and its mode 0600
	// or 0400, as Corosync checks its authkey. huddle key reload, or
	// SIGHUP, reads it again. Default empty.
	KeyFile string `toml:"key_file"`
}

// Drop configures the node's built-in fault injection, the analogue of
// JGroups' DISCARD: datagrams this node receives are dropped at random
// before the protocol sees them, as if the network had lost them. It is an
// experiment tool for machines where kernel loss (netem, iptables, nft)
// cannot be had; each dropped datagram is counted as injected_drops. A
// running node's rule can be changed with huddle drop.
type Drop struct {
	// Rate is the probability that a received datagram is dropped, 0 to 1.
	// Default 0 (off).
	Rate float64 `toml:"rate"`
	// From limits the drop to datagrams from these node IDs; with Rate 1 it
	// cuts this node off from them (one side of a partition). Default empty:
	// datagrams from every sender.
	From IDList `toml:"from"`
	// Seed seeds the drop's random choices, so that a run's drop pattern
	// can be repeated. Default 0: derived from the node's incarnation, a
	// new pattern each start.
	Seed uint64 `toml:"seed"`
	// Burst makes the drops come in bursts of consecutive datagrams of
	// this mean length, Rate staying the long-run fraction dropped (the
	// simple Gilbert model of netem's "loss gemodel"): 0 or 1 drops each
	// datagram independently, else 1 to 1000, and Rate at most
	// Burst/(Burst+1). Default 0.
	Burst float64 `toml:"burst"`
}

// IDList is a list of node IDs, written "3,4" in flags and the
// environment, and as a string or an array of numbers in TOML.
type IDList []uint64

// String formats the list as its IDs separated by commas.
func (l IDList) String() string {
	parts := make([]string, len(l))
	for i, id := range l {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(parts, ",")
}

// MarshalText implements encoding.TextMarshaler.
func (l IDList) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: IDs separated by
// commas (spaces allowed); empty is the empty list.
func (l *IDList) UnmarshalText(b []byte) error {
	var out IDList
	for _, f := range strings.Split(string(b), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a list of node IDs (e.g. 3,4; each 1 to 2^63-1)", b)
		}
		out = append(out, uint64(n))
	}
	*l = out
	return nil
}

// AddrList is a list of network addresses ("host:port" or "host"),
// written "a:7468,b:7468" in flags and the environment and as a list of
// strings in a TOML file.
type AddrList []string

// String implements fmt.Stringer.
func (l AddrList) String() string { return strings.Join(l, ",") }

// MarshalText implements encoding.TextMarshaler.
func (l AddrList) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: addresses separated
// by commas (spaces allowed); empty is the empty list. Validate checks
// each.
func (l *AddrList) UnmarshalText(b []byte) error {
	var out AddrList
	for _, f := range strings.Split(string(b), ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	*l = out
	return nil
}

// Duration is a time.Duration that reads and writes as text such as
// "400ms" or "1.5s" in TOML files, environment variables and flags. In a
// TOML file, write it as a string. A number without a unit (heartbeat = 50,
// HUDDLE_HEARTBEAT=50) is an error that shows the fix, instead of a guess
// at the unit; only 0 may go without one.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		if isDecimal(string(b)) {
			if e := noUnit(string(b), string(b)); e != nil {
				return e
			}
		}
		return fmt.Errorf("%q is not a duration (examples: 400ms, 1.5s)", b)
	}
	*d = Duration(v)
	return nil
}

// noUnitError is the error for a duration written as a bare number, such
// as 50: rather than guess the unit, Load asks for one. withFix spells
// out the fix in the syntax of where the number came from.
type noUnitError struct {
	number string // as written: "50", "1_000"
	fixed  string // with a unit: "50ms", "1000ms"
}

func (e *noUnitError) Error() string {
	return fmt.Sprintf("%s has no unit (units: ns, us, ms, s, m, h; e.g. %s)", e.number, e.fixed)
}

// noUnit returns the error for the bare number written as number, whose
// value in decimal is value; nil if value with a unit is no duration
// either (too large), which the caller then reports as such.
func noUnit(number, value string) *noUnitError {
	fixed := value + "ms"
	if _, err := time.ParseDuration(fixed); err != nil {
		return nil
	}
	return &noUnitError{number, fixed}
}

// withFix completes err, if it is a noUnitError, with the fix written as
// write writes a value: `heartbeat = "50ms"` in a file,
// HUDDLE_HEARTBEAT=50ms in the environment.
func withFix(err error, write func(value string) string) error {
	var e *noUnitError
	if errors.As(err, &e) {
		return fmt.Errorf("%s has no unit; write %s (units: ns, us, ms, s, m, h)", e.number, write(e.fixed))
	}
	return err
}

// isDecimal reports whether s is a plain decimal number: 50, -1.5, .5.
func isDecimal(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	digits, dots := 0, 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// Profile names.
const (
	ProfileLAN   = "lan"
	ProfileLocal = "local"
)

// LAN returns the defaults for a real local network: heartbeats every 50ms,
// a peer suspected after 400ms of silence.
func LAN() Config {
	return Config{
		Profile:          ProfileLAN,
		Group:            "huddle",
		Addr:             "239.192.72.68:7468",
		Transport:        "multicast",
		Sequencer:        "moving",
		TTL:              1,
		Loopback:         true,
		DatagramSize:     multicast.DefaultDatagramSize,
		BulkDatagramSize: MaxDatagramSize,
		RecvBuffer:       8 << 20,
		Heartbeat:        Duration(50 * time.Millisecond),
		SuspectTimeout:   Duration(400 * time.Millisecond),
		JoinTimeout:      Duration(500 * time.Millisecond),
		Quorum:           "off",
		StateMaxSize:     1 << 30,
		StatsInterval:    Duration(10 * time.Second),
		SendWindow:       multicast.DefaultWindow,
		MaxMessageSize:   multicast.DefaultMaxMessage,
		SendSize:         1000,
		SendOrder:        "fifo",
		SRM: SRM{C1: multicast.DefaultC1, C2: multicast.DefaultC2, D1: multicast.DefaultD1, D2: multicast.DefaultD2,
			MinDelay: Duration(multicast.DefaultMinDelay)},
		Log:      Log{Level: "info", Format: "json"},
		Election: Election{Algorithm: string(election.DefaultAlgorithm), RingOrder: string(election.Ascending)},
		Mutex:    Mutex{Algorithm: "ra"},
		KV:       KV{Size: 100},
	}
}

// Local returns the defaults for nodes on one host or in tests: the same as
// LAN with faster timers.
func Local() Config {
	c := LAN()
	c.Profile = ProfileLocal
	c.Heartbeat = Duration(20 * time.Millisecond)
	c.SuspectTimeout = Duration(150 * time.Millisecond)
	c.JoinTimeout = Duration(200 * time.Millisecond)
	c.StatsInterval = Duration(2 * time.Second)
	return c
}

// ForProfile returns the defaults of the named profile.
func ForProfile(name string) (Config, error) {
	switch name {
	case ProfileLAN, "":
		return LAN(), nil
	case ProfileLocal:
		return Local(), nil
	}
	return Config{}, fmt.Errorf("config: profile: %q is not a profile (lan, local)", name)
}
