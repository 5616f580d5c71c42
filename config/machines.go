package config

import (
	"cmp"
	"strconv"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/mutex"
)

// The protocols' options, each made from the settings here and nowhere
// else: a setting added to Config goes into its machine's Options in this
// file, and the node passes those on whole (node.CoreOptionsFrom). What is
// the node's own (its ID and incarnation, the group's hash, randomness, a
// seal's room) the node sets.

// Membership returns the options of the membership layer and, in it
// (Engine), of the reliable multicast engine.
func (c Config) Membership() membership.Options {
	return membership.Options{
		Engine: multicast.Options{
			DatagramSize: c.DatagramSize, BulkSize: c.BulkDatagramSize, Heartbeat: c.Heartbeat.D(), SuspectTimeout: c.SuspectTimeout.D(),
			Window: c.SendWindow, WindowBytes: multicast.WindowBytes(c.RecvBuffer), MaxMessage: c.MaxMessageSize,
			C1: c.SRM.C1, C2: c.SRM.C2, D1: c.SRM.D1, D2: c.SRM.D2, MinDelay: c.SRM.MinDelay.D(),
			Directed: c.Transport == "unicast",
		},
		JoinTimeout: c.JoinTimeout.D(),
		Settings:    c.GroupSettings(),
		Quorum:      c.QuorumOptions(),

		FixedSequencer: c.Sequencer == "coordinator",
	}
}

// QuorumOptions returns the primary-component policy in force. With quorum
// off, mutex.quorum = N (the lock's older spelling of it) is the static
// policy of N nodes.
func (c Config) QuorumOptions() membership.Quorum {
	if (c.Quorum == "" || c.Quorum == membership.QuorumOff) && c.Mutex.Quorum > 0 {
		return membership.Quorum{Policy: membership.QuorumStatic, Expected: c.Mutex.Quorum, TieBreaker: c.QuorumTieBreaker, WaitForAll: c.QuorumWaitForAll}
	}
	return membership.Quorum{Policy: c.Quorum, Expected: c.QuorumExpected, TieBreaker: c.QuorumTieBreaker, WaitForAll: c.QuorumWaitForAll}
}

// QuorumPolicy names the policy in force: off, majority or static.
func (c Config) QuorumPolicy() string {
	if q := c.QuorumOptions(); q.On() {
		return q.Policy
	}
	return membership.QuorumOff
}

// Options returns the election's options. Bully timeouts left at 0 stay
// 0: the node derives them from its heartbeat and suspect timeout
// (election.Options.Timeouts).
func (e Election) Options() election.Options {
	return election.Options{Algorithm: election.Algorithm(e.Algorithm), Order: election.RingOrder(e.RingOrder),
		HopDelay: e.HopDelay.D(), AnswerTimeout: e.AnswerTimeout.D(), CoordinatorTimeout: e.CoordinatorTimeout.D()}
}

// LockOptions returns the lock's options. The lock is granted in the
// primary component only (QuorumOptions); with a quorum policy,
// Ricart–Agrawala's lock is also leased, on a majority of the expected
// nodes (static) or of the view (majority), so that a holder cut off from
// the primary component loses it before another is granted there. The
// node leases on its suspect timeout (Lease).
func (c Config) LockOptions() mutex.Options {
	o := mutex.Options{Algorithm: mutex.Algorithm(c.Mutex.Algorithm)}
	if q := c.QuorumOptions(); q.On() && (o.Algorithm == "" || o.Algorithm == mutex.RicartAgrawala) {
		switch q.Policy {
		case membership.QuorumStatic:
			o.Quorum = q.Expected
		case membership.QuorumMajority:
			o.ViewLease = true
		}
	}
	return o
}

// GroupSettings lists the settings every member of a group must share,
// by their configuration keys: a joiner that differs is refused, naming
// the first that does. Datagram size and the largest message decide what
// a member can receive; the heartbeat and the suspect timeout decide
// whether members suspect each other falsely.
func (c Config) GroupSettings() []membership.Setting {
	ss := []membership.Setting{
		{Name: "datagram_size", Value: strconv.Itoa(c.DatagramSize)},
		{Name: "max_message_size", Value: strconv.Itoa(c.MaxMessageSize)},
		{Name: "heartbeat", Value: c.Heartbeat.D().String()},
		{Name: "suspect_timeout", Value: c.SuspectTimeout.D().String()},
		{Name: "election.algorithm", Value: c.Election.Algorithm},
		{Name: "mutex.quorum", Value: strconv.Itoa(c.Mutex.Quorum)},
	}
	if c.KV.Keys > 0 {
		ss = append(ss, membership.Setting{Name: "replicated", Value: "kv"})
	}
	if q := c.QuorumOptions(); q.On() && c.Mutex.Quorum == 0 {
		ss = append(ss, membership.Setting{Name: "quorum", Value: q.Policy + "/" + strconv.Itoa(q.Expected) + "/" + strconv.FormatUint(q.TieBreaker, 10) + "/" + strconv.FormatBool(q.WaitForAll)})
	}
	// Settings added later go in only when they differ from what nodes
	// did before them (laterSettings), so that a node of an earlier
	// release, which sends none, still joins a group that keeps the old
	// behaviour (a rolling upgrade); one that differs is refused, naming
	// the setting.
	later := func(name, value string) {
		if value != laterSettings[name] {
			ss = append(ss, membership.Setting{Name: name, Value: value})
		}
	}
	later("election.ring_order", cmp.Or(c.Election.RingOrder, string(election.Ascending)))
	later("mutex.algorithm", cmp.Or(c.Mutex.Algorithm, string(mutex.RicartAgrawala)))
	later("transport", cmp.Or(c.Transport, "multicast"))
	// A node of a release before the moving sequencer orders as
	// "coordinator" does, and takes no record that hands the order on:
	// so "moving" is compared, "coordinator" is not.
	later("sequencer", cmp.Or(c.Sequencer, "moving"))
	return ss
}

// laterSettings are the group settings sent only when they differ from
// what nodes did before the setting existed, with that value: a node that
// sends none of them runs it, or a release before the setting.
var laterSettings = map[string]string{
	"election.ring_order": string(election.Ascending),
	"mutex.algorithm":     string(mutex.RicartAgrawala),
	"transport":           "multicast",
	"sequencer":           "coordinator",
}

// UnsentSetting returns the value a node runs when it sends no group
// setting name (GroupSettings leaves it out at that value, as releases
// before the setting do), and whether name is such a setting: what a
// refusal that quotes the setting as empty means.
func UnsentSetting(name string) (string, bool) {
	v, ok := laterSettings[name]
	return v, ok
}

// ReadSize is the largest datagram a member reads on the group's socket
// and the per-peer fallback's: the largest any member may send, whatever
// this one's own datagram_size and bulk_datagram_size, so that members
// whose bulk_datagram_size differs (or who have it off) still hear each
// other's bulk datagrams.
func (c Config) ReadSize() int { return MaxDatagramSize }

// MaxDatagramSize is the largest datagram_size and bulk_datagram_size.
const MaxDatagramSize = 65000
