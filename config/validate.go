package config

import (
	"cmp"
	"errors"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/internal/seal"
)

// Validate checks every field and reports every problem, joined, each as
// "config: <key>: <value> <what is wrong> (<what is allowed>)". It does not
// look at the system: an interface that does not exist is Resolve's to find.
func (c *Config) Validate() error {
	return c.validate(nil, nil)
}

// validate is Validate with each problem saying where its setting's value
// came from: sources maps a key to "huddle.toml:3", "HUDDLE_TTL", "--ttl".
// The problems of the keys in skip, whose values could not be read, are
// left out.
func (c *Config) validate(sources map[string]string, skip map[string]bool) error {
	var errs []error
	for _, err := range c.problems() {
		if p, ok := err.(*problemError); ok {
			if skip[p.key] {
				continue
			}
			if p.source == "" {
				p.source = sources[p.key]
			}
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// problems lists the result of every check, nil for those that pass.
func (c *Config) problems() []error {
	ms := Duration(time.Millisecond)
	return []error{
		oneOf("profile", "a profile", c.Profile, ProfileLAN, ProfileLocal),
		inRange("id", c.ID, 0, math.MaxInt64),
		checkGroup(c.Group),
		checkAddr(c.Addr),
		oneOf("transport", "a transport", cmp.Or(c.Transport, "multicast"), "multicast", "unicast"),
		oneOf("sequencer", "a sequencer", cmp.Or(c.Sequencer, "moving"), "moving", "coordinator"),
		checkPeers(c.Peers),
		checkListen(c.Listen),
		unicastOnly(c),
		inRange("ttl", c.TTL, 1, 255),
		inRange("datagram_size", c.DatagramSize, 512, MaxDatagramSize),
		c.checkBulkDatagramSize(),
		inRange("recv_buffer", c.RecvBuffer, 65536, 1<<30),
		inRange("busy_poll", c.BusyPoll, 0, 100*ms),
		inRange("heartbeat", c.Heartbeat, ms, 10*Duration(time.Second)),
		c.checkSuspectTimeout(),
		inRange("join_timeout", c.JoinTimeout, 10*ms, Duration(time.Minute)),
		zeroOrAtLeast("stats_interval", c.StatsInterval, 100*ms),
		inRange("send_window", c.SendWindow, 16, 1<<20),
		inRange("max_message_size", c.MaxMessageSize, 1, 16<<20),
		inRange("send_rate", c.SendRate, 0, 10_000_000),
		inRange("send_size", c.SendSize, 8, max(8, c.MaxMessageSize)),
		inRange("send_count", c.SendCount, 0, math.MaxInt),
		oneOf("send_order", "a delivery order", c.SendOrder, "fifo", "total", "safe", "causal"),
		zeroOrAtLeast("duration", c.Duration, 10*ms),
		inRange("srm.min_delay", c.SRM.MinDelay, 0, 100*ms),
		factor("srm.c1", c.SRM.C1, true),
		factor("srm.c2", c.SRM.C2, false),
		factor("srm.d1", c.SRM.D1, true),
		factor("srm.d2", c.SRM.D2, false),
		oneOf("log.level", "a log level", c.Log.Level, "trace", "debug", "info", "warn", "error"),
		oneOf("log.format", "a log format", c.Log.Format, "json", "console"),
		oneOf("election.algorithm", "an election algorithm", c.Election.Algorithm, "ring", "bully"),
		zeroOrAtLeast("election.every", c.Election.Every, 100*ms),
		inRange("election.count", c.Election.Count, 0, math.MaxInt32),
		oneOf("election.ring_order", "a ring order", c.Election.RingOrder, "ascending", "descending", "join"),
		inRange("election.hop_delay", c.Election.HopDelay, 0, Duration(10*time.Second)),
		zeroOrIn("election.answer_timeout", c.Election.AnswerTimeout, ms, Duration(time.Minute)),
		zeroOrIn("election.coordinator_timeout", c.Election.CoordinatorTimeout, ms, Duration(10*time.Minute)),
		checkBullyTimeouts(c),
		oneOf("quorum", "a quorum policy", c.Quorum, "off", "majority", "static"),
		checkQuorum(*c),
		inRange("state_max_size", c.StateMaxSize, 4096, 1<<40),
		inRange("kv.keys", c.KV.Keys, 0, 10_000_000),
		inRange("kv.rate", c.KV.Rate, 0, 1_000_000),
		inRange("kv.size", c.KV.Size, 1, 65536),
		checkFill(c),
		inRange("mutex.quorum", c.Mutex.Quorum, 0, 1024),
		oneOf("mutex.algorithm", "a lock algorithm", c.Mutex.Algorithm, "ra", "central", "token"),
		quorumWithRA(c.Mutex),
		checkThink(c.Mutex),
		inRange("mutex.hold", c.Mutex.Hold, 0, Duration(time.Hour)),
		checkKey(c.Security),
		inRange("drop.rate", c.Drop.Rate, 0, 1),
		checkIDs("drop.from", c.Drop.From),
		checkBurst("drop.burst", c.Drop.Burst, c.Drop.Rate),
		checkMetrics(c.Metrics),
	}
}

// checkMetrics: the endpoint's address is host:port with a port from 0
// (any free one) to 65535, and pprof needs the endpoint.
func checkMetrics(m Metrics) error {
	const allowed = "host:port, e.g. 127.0.0.1:9468 or :9468; empty is off"
	if m.Addr == "" {
		if m.Pprof {
			return problem("metrics.pprof", "", "true needs metrics.addr (pprof is served on the metrics endpoint)")
		}
		return nil
	}
	_, port, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return problem("metrics.addr", "", "%q is not host:port (%s)", m.Addr, allowed)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return problem("metrics.addr", "", "port %q is out of range (0 to 65535; %s)", port, allowed)
	}
	return nil
}

// GroupAddr returns Addr parsed; it is valid once Validate has passed.
func (c *Config) GroupAddr() netip.AddrPort {
	ap, _ := netip.ParseAddrPort(c.Addr)
	return ap
}

func inRange[T cmp.Ordered](key string, v, lo, hi T) error {
	// Written as a negation so that a NaN float fails too.
	if !(v >= lo && v <= hi) {
		return problem(key, "", "%v is out of range (%v to %v)", v, lo, bound(hi))
	}
	return nil
}

// checkBulkDatagramSize: 0 (off), or datagram_size to 65000.
func (c *Config) checkBulkDatagramSize() error {
	if b := c.BulkDatagramSize; b != 0 && !(b >= c.DatagramSize && b <= MaxDatagramSize) {
		return problem("bulk_datagram_size", "", "%d is out of range (0 for off, or datagram_size %d to %d)", b, c.DatagramSize, MaxDatagramSize)
	}
	return nil
}

// bound writes the largest ID, 2^63-1, as the docs do.
func bound(v any) any {
	switch v {
	case uint64(math.MaxInt64), math.MaxInt:
		return "2^63-1"
	}
	return v
}

// checkBurst checks a mean burst length of drops at rate (see
// netmodel.BurstProblem).
func checkBurst(key string, burst, rate float64) error {
	if p := netmodel.BurstProblem(rate, burst); p != "" {
		return problem(key, "", "%s", p)
	}
	return nil
}

// zeroOrIn: a duration that is 0 (derived) or within lo and hi.
func zeroOrIn(key string, v, lo, hi Duration) error {
	if v != 0 && (v < lo || v > hi) {
		return problem(key, "", "%v is out of range (0 for the default, or %v to %v)", v, lo, hi)
	}
	return nil
}

// checkQuorum: a quorum policy needs the group's size; mutex.quorum,
// the lock's older form of the static policy, must agree with it.
func checkQuorum(c Config) error {
	q := c.QuorumOptions()
	switch {
	case c.Quorum != "off" && c.Quorum != "" && (c.QuorumExpected < 1 || c.QuorumExpected > 1024):
		return problem("quorum_expected", strconv.Itoa(c.QuorumExpected), "%d is out of range: quorum %q needs the group's number of nodes, 1 to 1024", c.QuorumExpected, c.Quorum)
	case c.Mutex.Quorum > 0 && c.Quorum != "off" && c.Quorum != "" && c.Mutex.Quorum != c.QuorumExpected:
		return problem("mutex.quorum", strconv.Itoa(c.Mutex.Quorum), "%d differs from quorum_expected %d: mutex.quorum is the static quorum's older spelling; leave it 0 with quorum %q", c.Mutex.Quorum, c.QuorumExpected, c.Quorum)
	case q.TieBreaker > 0 && !q.On():
		return problem("quorum_tie_breaker", strconv.FormatUint(q.TieBreaker, 10), "%d needs quorum majority or static (it is off)", q.TieBreaker)
	}
	return nil
}

// checkFill: a store that starts full fits a snapshot, which
// state_max_size bounds (else no node could ever take it).
func checkFill(c *Config) error {
	if !c.KV.Fill || c.KV.Keys <= 0 || c.KV.Size <= 0 {
		return nil
	}
	if size := c.KV.FilledSize(); size > int64(c.StateMaxSize) {
		return problem("kv.fill", "", "true fills a store of %d bytes, kv.keys × (kv.size + %d) (at most state_max_size, %d: fewer kv.keys, a smaller kv.size, or a larger state_max_size)",
			size, (size-8)/int64(c.KV.Keys)-int64(c.KV.Size), c.StateMaxSize)
	}
	return nil
}

// quorumWithRA: quorum mode is Ricart–Agrawala's.
func quorumWithRA(m Mutex) error {
	if m.Quorum > 0 && m.Algorithm != "ra" {
		return problem("mutex.quorum", "", "%d needs mutex.algorithm \"ra\" (it is %q): the quorum and its lease are Ricart–Agrawala's", m.Quorum, m.Algorithm)
	}
	return nil
}

// checkBullyTimeouts: the answer timeout in force exceeds a round trip of
// hop delays, and the coordinator timeout exceeds the answer timeout (a
// higher member runs its own election, answer timeout included, before it
// announces itself).
func checkBullyTimeouts(c *Config) error {
	answer, coord := c.Election.Timeouts(c.Heartbeat.D(), c.SuspectTimeout.D())
	switch {
	case c.Election.AnswerTimeout != 0 && answer <= 2*c.Election.HopDelay.D():
		return problem("election.answer_timeout", "", "%v is not above two hop delays (election.hop_delay is %v): every ANSWER would come too late", answer, c.Election.HopDelay)
	case c.Election.CoordinatorTimeout != 0 && coord <= answer:
		return problem("election.coordinator_timeout", "", "%v is not above the answer timeout in force (%v): a higher member's own election takes that long before it announces itself", coord, answer)
	}
	return nil
}

func zeroOrAtLeast(key string, v, lo Duration) error {
	if v != 0 && v < lo {
		return problem(key, "", "%v is out of range (0 for off, or at least %v)", v, lo)
	}
	return nil
}

// factor checks an SRM timer constant. A zero spread (C2, D2) would fire
// every member's timer at once and defeat suppression, hence zeroOK.
func factor(key string, v float64, zeroOK bool) error {
	if zeroOK {
		return inRange(key, v, 0, 100)
	}
	if !(v > 0 && v <= 100) {
		return problem(key, "", "%v is out of range (above 0, up to 100)", v)
	}
	return nil
}

func oneOf(key, what, v string, allowed ...string) error {
	if !slices.Contains(allowed, v) {
		return problem(key, "", "%q is not %s (%s)", v, what, strings.Join(allowed, ", "))
	}
	return nil
}

// maxPeers bounds the peer list: a unicast node sends to each listed
// node it has not heard, paced.
const maxPeers = 1024

// checkPeers: each entry is host:port or host (addr's port), a host name
// or an IPv4 address, the port 1 to 65534 (the next is the repair's).
func checkPeers(l AddrList) error {
	const allowed = `host:port or host, e.g. "10.0.0.2:7468" or "node2"`
	if len(l) > maxPeers {
		return problem("peers", "", "%d entries are too many (at most %d)", len(l), maxPeers)
	}
	for _, a := range l {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			host, port = a, ""
		}
		if strings.ContainsAny(host, "[]: /") || host == "" {
			return problem("peers", "", "%q is not a peer address (%s)", a, allowed)
		}
		if ip, err := netip.ParseAddr(host); err == nil && (!ip.Is4() || ip.IsMulticast() || ip.IsUnspecified()) {
			return problem("peers", "", "%q is not a unicast IPv4 address (%s)", a, allowed)
		}
		if port != "" {
			if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || p == 65535 {
				return problem("peers", "", "port %q of %q is out of range (1 to 65534: huddle also uses the next port, for repairs)", port, a)
			}
		}
	}
	return nil
}

// checkListen: empty, or an IPv4 unicast address and port.
func checkListen(a string) error {
	if a == "" {
		return nil
	}
	const allowed = "ip:port, e.g. 10.0.0.1:7468; empty: the interface's address and addr's port"
	ap, err := netip.ParseAddrPort(a)
	switch {
	case err != nil || !ap.Addr().Is4():
		return problem("listen", "", "%q is not an IPv4 address and port (%s)", a, allowed)
	case ap.Addr().IsMulticast():
		return problem("listen", "", "%s is a multicast address (%s)", ap.Addr(), allowed)
	case ap.Port() == 0 || ap.Port() == 65535:
		return problem("listen", "", "port %d is out of range (1 to 65534: huddle also uses the next port, for repairs)", ap.Port())
	}
	return nil
}

// unicastOnly refuses the unicast settings with the multicast transport,
// where they would silently do nothing.
func unicastOnly(c *Config) error {
	if c.Transport == "unicast" {
		return nil
	}
	switch {
	case len(c.Peers) > 0:
		return problem("peers", "", "%q is set but transport is %q (peers are for transport = \"unicast\")", c.Peers.String(), c.Transport)
	case c.Listen != "":
		return problem("listen", "", "%q is set but transport is %q (listen is for transport = \"unicast\")", c.Listen, c.Transport)
	case c.PeersOnly:
		return problem("peers_only", "", "true is set but transport is %q (peers_only is for transport = \"unicast\")", c.Transport)
	}
	return nil
}

func checkGroup(g string) error {
	if len(g) < 1 || len(g) > 64 {
		return problem("group", "", "%q is %d bytes long (1 to 64 bytes)", g, len(g))
	}
	return nil
}

func checkAddr(addr string) error {
	const allowed = "an IPv4 multicast group and port, e.g. 239.192.72.68:7468"
	if t := strings.TrimSpace(addr); t != addr {
		return problem("addr", "", "%q has spaces around it; write %s", addr, t)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if _, perr := netip.ParseAddr(addr); perr == nil {
			return problem("addr", "", "%q has no port (%s)", addr, allowed)
		}
		return problem("addr", "", "%q is not group:port (%s)", addr, allowed)
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err != nil || !ip.Is4():
		return problem("addr", "", "%s is not an IPv4 address (%s)", host, allowed)
	case !ip.IsMulticast():
		return problem("addr", "", "%s is not a multicast address (224.0.0.0/4)", ip)
	}
	if why := reservedGroup(ip); why != "" {
		return problem("addr", "", "%s is %s; use a group in 239.192.0.0/14, the organisation-local scope, such as 239.192.72.68", ip, why)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || p == 65535 {
		return problem("addr", "", "port %q is out of range (1 to 65534: huddle also uses the next port, for repairs)", port)
	}
	return nil
}

// reservedGroups are the multicast blocks and addresses a group must not
// use, and why (the IANA registry of IPv4 multicast addresses): other
// protocols' traffic would reach the group's socket, and switches and
// kernels treat some of them specially.
var reservedGroups = []struct {
	block netip.Prefix
	why   string
}{
	{netip.MustParsePrefix("224.0.0.251/32"), "mDNS's group (multicast DNS, RFC 6762)"},
	{netip.MustParsePrefix("224.0.0.252/32"), "LLMNR's group (RFC 4795)"},
	{netip.MustParsePrefix("224.0.0.0/24"), "in 224.0.0.0/24, the link-local control block (routing protocols, IGMP, all-hosts: never forwarded, and flooded to every port by switches, whatever IGMP snooping says)"},
	{netip.MustParsePrefix("224.0.1.0/24"), "in 224.0.1.0/24, the internetwork control block (NTP, among others)"},
	{netip.MustParsePrefix("232.0.0.0/8"), "in 232.0.0.0/8, source-specific multicast, which needs a source filter huddle does not set"},
	{netip.MustParsePrefix("239.255.255.250/32"), "SSDP's group (UPnP discovery)"},
}

// reservedGroup says why a group address is reserved, or "".
func reservedGroup(ip netip.Addr) string {
	for _, r := range reservedGroups {
		if r.block.Contains(ip) {
			return r.why
		}
	}
	return ""
}

func (c *Config) checkSuspectTimeout() error {
	lo, hi := 3*c.Heartbeat, Duration(10*time.Minute)
	if c.SuspectTimeout < lo || c.SuspectTimeout > hi {
		return problem("suspect_timeout", "", "%v is out of range (%v, 3 heartbeats of %v, to %v)",
			c.SuspectTimeout, lo, c.Heartbeat, hi)
	}
	return nil
}

// checkKey never prints the key: error messages end up in logs.
func checkKey(s Security) error {
	switch {
	case s.Key != "" && s.KeyFile != "":
		return problem("security.key", "", "is set, and so is security.key_file: set one of them")
	case s.Key != "":
		if _, err := seal.ParseKey(s.Key); err != nil {
			return problem("security.key", "", "%s", strings.TrimPrefix(err.Error(), "seal: "))
		}
	}
	return nil
}

func checkThink(m Mutex) error {
	if _, _, _, err := m.ThinkRange(); err != nil {
		return problem("mutex.think", "", "%q is not a time or a range MIN-MAX of times (e.g. 3s-5s): %v", m.Think, err)
	}
	return nil
}

func checkIDs(key string, ids IDList) error {
	for _, id := range ids {
		if id < 1 || id > math.MaxInt64 {
			return problem(key, "", "ID %d is out of range (1 to 2^63-1)", id)
		}
	}
	if len(ids) > 1024 {
		return problem(key, "", "%d IDs are too many (at most 1024)", len(ids))
	}
	return nil
}
