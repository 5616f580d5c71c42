package node

import (
	"cmp"
	"fmt"
	"hash/crc32"
	"net/netip"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/seal"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/mutex"
)

// The node's log events: one line per state change, written by the loop
// from what the Core reports (docs/logs.md).

func (n *Node) logDelivery(d *membership.Delivery) {
	if d.Order != wire.FIFO && d.Source == n.o.Config.ID && d.Inc == n.o.Inc {
		n.noteDelivered(d.Seq)
		if n.spin != nil && d.Order != wire.Causal && d.Seq >= n.awaitSeq {
			// Nothing of ours awaits its record: the sequencer orders
			// its own at once, in the turn that sent them.
			n.awaitRecord = false
			n.spin.done()
		}
	}
	if n.o.Config.TraceDeliveries {
		e := n.log.Info().Str(logs.EventKey, logs.Deliver).Str(logs.ViewKey, d.View.String()).Uint64(logs.FromKey, d.Source).
			Uint64(logs.FromIncarnationKey, d.Inc).Uint64(logs.SeqKey, d.Seq).Str(logs.OrderKey, d.Order.String())
		if d.GSeq != 0 {
			e = e.Uint64(logs.GSeqKey, d.GSeq)
		}
		if d.Final {
			e = e.Bool(logs.FinalKey, true)
		}
		if len(d.Service) > 0 {
			e = e.Str(logs.ServiceKey, string(d.Service))
		}
		e.Int(logs.LenKey, len(d.Payload)).Uint32(logs.CRCKey, crc32.ChecksumIEEE(d.Payload)).Msg("delivered")
	}
}

// logSend logs a message this node multicast (with trace_deliveries), so
// that a run can be checked from its logs: view, seq, order and CRC.
func (n *Node) logSend(m *SentMessage) {
	e := n.log.Info().Str(logs.EventKey, logs.Send).Str(logs.ViewKey, m.View.String()).Uint64(logs.SeqKey, m.Seq).Str(logs.OrderKey, m.Order.String())
	if m.Service != "" {
		e = e.Str(logs.ServiceKey, m.Service)
	}
	if m.To != 0 {
		e = e.Uint64(logs.ToKey, m.To)
	}
	e.Int(logs.LenKey, m.Len).Uint32(logs.CRCKey, m.CRC).Msg("sent")
}

// logVersion warns, once, of a node of this group heard in another wire
// version.
func (n *Node) logVersion(v VersionSeen) {
	n.log.Warn().Str(logs.EventKey, logs.PeerVersion).Uint64(logs.PeerKey, v.From).Str(logs.AddrKey, v.Addr.String()).
		Int(logs.VersionKey, int(v.Version)).Str(logs.OursKey, strconv.Itoa(wire.Version)).
		Msgf("node %d at %s speaks wire version %d, this node %d: they cannot be in one group; its datagrams are dropped (other_version counts them)",
			v.From, v.Addr.Addr(), v.Version, wire.Version)
}

// logState logs a state transfer's event; StateWanted is the runtime's
// to act on, not a log line.
func (n *Node) logState(e *StateEvent) {
	switch e.Kind {
	case StateSent:
		n.log.Info().Str(logs.EventKey, logs.StateSent).Str(logs.ServiceKey, e.Service).Str(logs.ViewKey, e.View.String()).
			Uints64(logs.MembersKey, e.To).Int64(logs.BytesKey, e.Bytes).Str(logs.HashKey, e.HashHex()).
			Int64(logs.DurationMsKey, e.Took.Milliseconds()).Msgf("state of %s sent to %v: %d bytes", e.Service, e.To, e.Bytes)
	case StateInstalled:
		n.log.Info().Str(logs.EventKey, logs.StateInstalled).Str(logs.ServiceKey, e.Service).Str(logs.ViewKey, e.View.String()).
			Uint64(logs.FromKey, e.From).Int64(logs.BytesKey, e.Bytes).Str(logs.HashKey, e.HashHex()).
			Int64(logs.DurationMsKey, e.Took.Milliseconds()).Int(logs.HeldKey, e.Held).
			Msgf("state of %s installed from node %d: %d bytes, then %d messages held back", e.Service, e.From, e.Bytes, e.Held)
	case StateCurrent:
		n.log.Info().Str(logs.EventKey, logs.StateCurrent).Str(logs.ServiceKey, e.Service).Str(logs.ViewKey, e.View.String()).
			Msgf("no member of view %s had the group's state of %s: this node's is", e.View, e.Service)
	case StateFailed:
		n.log.Warn().Str(logs.EventKey, logs.StateFailed).Str(logs.ServiceKey, e.Service).Str(logs.ViewKey, e.View.String()).
			Uint64(logs.FromKey, e.From).Str(logs.ReasonKey, e.Reason).
			Msgf("state transfer of %s failed: %s", e.Service, e.Reason)
	}
}

// notPrimary is what view.installed's message adds for a view that is
// not the primary component.
func notPrimary(gen uint64) string {
	if gen > 0 {
		return ""
	}
	return " (not primary: total and safe sends and the lock wait for a primary view)"
}

func (n *Node) logMembership(ev *membership.Event) {
	switch ev.Kind {
	case membership.Delivered:
		n.logDelivery(&ev.Delivery)
	case membership.Engine:
		n.logEngineEvent(ev.Multicast, ev.InView)
	case membership.ViewInstalled:
		n.log.Info().Str(logs.EventKey, logs.ViewInstalled).Str(logs.ViewKey, ev.View.ID.String()).
			Uint64(logs.CoordinatorIncarnationKey, ev.View.Members[0].Inc).
			Uints64(logs.MembersKey, ev.View.IDs()).Uints64(logs.JoinedKey, orEmpty(ev.Joined)).
			Uints64(logs.LeftKey, orEmpty(ev.Left)).Uints64(logs.CrashedKey, orEmpty(ev.Crashed)).
			Int64(logs.FlushMsKey, ev.Flush.Milliseconds()).Str(logs.PriorKey, ev.Prior.String()).
			Bool(logs.PrimaryKey, ev.Primary > 0).Uint64(logs.GenerationKey, ev.Primary).
			Msgf("view %s installed%s", ev.View, notPrimary(ev.Primary))
		if ev.Flush > 0 {
			n.hist.Flush.Add(ev.Flush)
		}
	case membership.FlushStarted:
		n.log.Info().Str(logs.EventKey, logs.ViewFlushStarted).Str(logs.ViewKey, ev.View.ID.String()).
			Uint64(logs.EpochKey, ev.Epoch).Uint64(logs.AttemptKey, ev.Attempt).Uints64(logs.ProposedKey, ev.Proposed).
			Msg("view change started")
	case membership.Health:
		suspect := n.o.Config.SuspectTimeout.D() * time.Duration(1+ev.Stretch)
		if ev.Starved {
			n.log.Warn().Str(logs.EventKey, logs.NodeHealth).Str(logs.ViewKey, ev.View.ID.String()).Bool(logs.StarvedKey, true).
				Int64(logs.PauseMsKey, ev.Silent.Milliseconds()).Int64(logs.SuspectMsKey, suspect.Milliseconds()).
				Msgf("this node is starved: its loop was held up %d ms, twice in a row; it tells coordinators so, is taken into no view until it runs freely, and suspects others only after %v of silence", ev.Silent.Milliseconds(), suspect)
		} else {
			n.log.Info().Str(logs.EventKey, logs.NodeHealth).Str(logs.ViewKey, ev.View.ID.String()).Bool(logs.StarvedKey, false).
				Int64(logs.SuspectMsKey, suspect.Milliseconds()).
				Msgf("this node runs freely again; it suspects others after %v of silence, a suspect timeout less for each it runs without a pause", suspect)
		}
	case membership.OrderTaken:
		n.log.Info().Str(logs.EventKey, logs.OrderTaken).Str(logs.ViewKey, ev.View.ID.String()).Uint64(logs.ByKey, ev.Member).
			Uint64(logs.GSeqKey, ev.GSeq).
			Msgf("this node orders the total and safe messages of view %s from number %d on: node %d, their sequencer, handed it the order, since this node sends alone", ev.View.ID, ev.GSeq, ev.Member)
	case membership.FlushUnchanged:
		n.log.Info().Str(logs.EventKey, logs.ViewUnchanged).Str(logs.ViewKey, ev.View.ID.String()).
			Uint64(logs.EpochKey, ev.Epoch).Uint64(logs.AttemptKey, ev.Attempt).Uints64(logs.UnansweredKey, ev.Proposed).
			Msgf("view change ended without a view: %v did not answer, and the rest is view %s", ev.Proposed, ev.View.ID)
	case membership.Suspected:
		n.log.Info().Str(logs.EventKey, logs.MemberSuspected).Str(logs.ViewKey, ev.View.ID.String()).Uint64(logs.MemberKey, ev.Member).
			Int64(logs.SilentMsKey, ev.Silent.Milliseconds()).Msg("member suspected")
	case membership.Excluded:
		n.log.Warn().Str(logs.EventKey, logs.MemberExcluded).Str(logs.ViewKey, ev.View.ID.String()).Uint64(logs.ByKey, ev.Member).
			Msg("the group installed a view without this node; it will be merged back in")
	case membership.LeaveDone:
		n.log.Info().Str(logs.EventKey, logs.MemberLeft).Str(logs.ViewKey, ev.View.ID.String()).Msg("left the group")
	case membership.Refused:
		n.logRefused(*ev)
	}
}

// logRefused logs a refusal: of this node (it stops), or of a joiner by
// this node as coordinator.
func (n *Node) logRefused(ev membership.Event) {
	e := n.log.Error().Str(logs.EventKey, logs.MemberRefused).Uint64(logs.MemberKey, ev.Member).Str(logs.SettingKey, ev.Setting).
		Str(logs.OursKey, ev.Ours).Str(logs.TheirsKey, ev.Theirs)
	switch {
	case ev.Member != n.o.Config.ID && ev.Setting == "settings":
		e.Msgf("not merging node %d: its protocol settings (datagram_size, max_message_size, heartbeat, suspect_timeout, election.algorithm, mutex.quorum) differ from this group's", ev.Member)
		return
	case ev.Member != n.o.Config.ID:
		e.Msgf("refused node %d: its %s is %q, the group's is %q", ev.Member, ev.Setting, shownSetting(ev.Setting, ev.Theirs), shownSetting(ev.Setting, ev.Ours))
		return
	}
	var err error
	switch ev.Setting {
	case "id":
		err = fmt.Errorf("%w: another live node at %s uses ID %d; give every node its own --id", ErrRefused, ev.Addr.Addr(), ev.Member)
	case "members":
		err = fmt.Errorf("%w: the group (coordinator at %s) is full: a view lists at most %s members with this datagram_size", ErrRefused, ev.Addr.Addr(), ev.Theirs)
	case "wire_version":
		err = fmt.Errorf("%w: the group (node %d at %s) speaks wire version %s, this node wire version %s; run one wire version in a group (docs/operations.md, Upgrading one node at a time)", ErrRefused, n.core.version.from, ev.Addr.Addr(), ev.Theirs, ev.Ours)
	case "key":
		err = fmt.Errorf("%w: key fingerprint mismatch: the group (a node at %s) seals with key %s, this node's key is %s; give every member the same key file", ErrRefused, ev.Addr.Addr(), ev.Theirs, ev.Ours)
		if ev.Ours == "none" {
			err = fmt.Errorf("%w: the group (a node at %s) seals its datagrams with key %s, and this node has no key; set security.key_file to the group's key", ErrRefused, ev.Addr.Addr(), ev.Theirs)
		}
	default:
		ours, theirs := shownSetting(ev.Setting, ev.Ours), shownSetting(ev.Setting, ev.Theirs)
		err = fmt.Errorf("%w: this node's %s is %q but the group's (coordinator at %s) is %q", ErrRefused, ev.Setting, ours, ev.Addr.Addr(), theirs)
		if _, later := config.UnsentSetting(ev.Setting); later && ev.Theirs == "" {
			err = fmt.Errorf("%w, or the group runs a release before the setting; set %s = %q to join it (an upgrade: docs/operations.md, Upgrading one node at a time)",
				err, ev.Setting, theirs)
		}
	}
	n.refused = err
	e.Str(logs.AddrKey, ev.Addr.String()).Msg(err.Error())
}

// shownSetting is a group setting's value as a refusal quotes it, for
// people: a setting that one side does not send (quoted as empty) has the
// value that side runs (config.UnsentSetting).
func shownSetting(name, value string) string {
	if v, later := config.UnsentSetting(name); later && value == "" {
		return v
	}
	return value
}

func orEmpty(ids []uint64) []uint64 {
	if ids == nil {
		return []uint64{}
	}
	return ids
}

func (n *Node) logEngineEvent(ev multicast.Event, inView bool) {
	switch ev.Kind {
	case multicast.PeerSeen:
		n.log.Info().Str(logs.EventKey, logs.PeerSeen).Uint64(logs.PeerKey, ev.Peer).Uint64(logs.IncarnationKey, ev.Inc).
			Str(logs.AddrKey, ev.Addr.String()).Bool(logs.RestartedKey, ev.Restarted).Msg("peer seen")
	case multicast.PeerLost:
		n.log.Info().Str(logs.EventKey, logs.PeerLost).Uint64(logs.PeerKey, ev.Peer).Uint64(logs.IncarnationKey, ev.Inc).
			Int64(logs.SilentMsKey, ev.Silent.Milliseconds()).Msg("peer lost")
	case multicast.StreamSkipped:
		if !inView {
			n.log.Info().Str(logs.EventKey, logs.StreamSkipped).Uint64(logs.PeerKey, ev.Peer).Uint64(logs.IncarnationKey, ev.Inc).
				Uint64(logs.FromSeqKey, ev.From).Uint64(logs.CountKey, ev.Skipped).Bool(logs.InViewKey, false).
				Msg("messages sent before this node's view needed them: none are lost to it")
			return
		}
		n.log.Warn().Str(logs.EventKey, logs.StreamSkipped).Uint64(logs.PeerKey, ev.Peer).Uint64(logs.IncarnationKey, ev.Inc).
			Uint64(logs.FromSeqKey, ev.From).Uint64(logs.CountKey, ev.Skipped).Bool(logs.InViewKey, true).
			Msg("messages lost for good: the sender went on without this node and no longer holds them")
	case multicast.PeerLagging:
		n.log.Warn().Str(logs.EventKey, logs.PeerLagging).Uint64(logs.PeerKey, ev.Peer).Uint64(logs.IncarnationKey, ev.Inc).
			Uint64(logs.BehindKey, ev.Behind).Int64(logs.HeldMsKey, ev.Held.Milliseconds()).
			Msg("a live peer has not acknowledged this node's messages and holds its send window full")
	case multicast.PeerConflict:
		if !n.warned["conflict"] {
			n.warned["conflict"] = true
			n.log.Warn().Str(logs.EventKey, logs.PeerConflict).Uint64(logs.PeerKey, ev.Peer).Uint64(logs.IncarnationKey, ev.Inc).
				Str(logs.AddrKey, ev.Addr.String()).
				Msgf("another node at %s uses this node's ID %d; give every node its own --id", ev.Addr.Addr(), ev.Peer)
		}
	}
}

// warnOnce logs a warning the first time it happens; counters say how often.
func (n *Node) warnOnce(key, msg string, src netip.AddrPort) {
	if n.warned[key] {
		return
	}
	n.warned[key] = true
	e := n.log.Warn().Str(logs.EventKey, logs.NodeWarning).Str(logs.WhatKey, key)
	if src.IsValid() {
		e = e.Str(logs.AddrKey, src.String())
	}
	e.Msg(msg)
}

func (n *Node) logStarted() {
	c := n.o.Config
	n.log.Info().Str(logs.EventKey, logs.NodeStarted).
		Uint64(logs.IncarnationKey, n.o.Inc).Str(logs.GroupKey, c.Group).Str(logs.AddrKey, c.Addr).Str(logs.IfaceKey, c.Iface).
		Str(logs.SrcKey, n.o.Transport.LocalAddr().String()).Str(logs.TransportKey, cmp.Or(c.Transport, "multicast")).Str(logs.ProfileKey, c.Profile).
		Int64(logs.HeartbeatMsKey, c.Heartbeat.D().Milliseconds()).Int64(logs.SuspectMsKey, c.SuspectTimeout.D().Milliseconds()).
		Int(logs.DatagramSizeKey, c.DatagramSize).Int(logs.TTLKey, c.TTL).Bool(logs.LoopbackKey, c.Loopback).
		Str(logs.ControlSocketKey, c.ControlSocket).Str(logs.MetricsKey, cmp.Or(c.Metrics.Addr, "off")).
		Strs(logs.FingerprintsKey, fingerprints(n.core.Keys())).Int(logs.SchemaKey, logs.SchemaVersion).Msg("node started")
	n.logConfig()
	if d := n.core.Drop(); d.Active() {
		n.logDrop(d)
	}
}

// logConfig logs the effective configuration at debug level, every
// setting by its TOML key, the group key left out.
func (n *Node) logConfig() {
	if n.log.GetLevel() > zerolog.DebugLevel {
		return
	}
	d := zerolog.Dict()
	for _, kv := range n.o.Config.Effective() {
		d = d.Str(kv[0], kv[1])
	}
	n.log.Debug().Str(logs.EventKey, logs.NodeConfig).Dict(logs.ConfigKey, d).Msg("effective configuration")
}

// logTrace logs a message of the election or the lock at trace level.
func (n *Node) logTrace(m ProtocolMessage) {
	dir := "received"
	if m.Sent {
		dir = "sent"
	}
	e := n.log.Trace().Str(logs.DirKey, dir).Uint64(logs.FromKey, m.From).Uint64(logs.ToKey, m.To)
	if m.Service == MutexService {
		e.Str(logs.EventKey, logs.MutexMessage).Str(logs.ContentKey, mutex.Describe(m.Payload)).Msg("lock message")
	} else {
		e.Str(logs.EventKey, logs.ElectionMessage).Str(logs.ContentKey, election.Describe(m.Payload)).Msg("election message")
	}
}

func (n *Node) logStats(why string) {
	v := n.core.View()
	e := n.log.Info().Str(logs.EventKey, logs.NodeStats).Str(logs.WhyKey, why).Str(logs.ViewKey, v.ID.String()).Int(logs.MembersKey, len(v.Members))
	n.counters().addTo(e).Msg("stats")
}

// logElection logs one election event: election.started at an initiator,
// election.won at the winner, leader.changed and election.done at every
// node (done's sent, summed over the nodes' logs, is the round's count).
func (n *Node) logElection(ev election.Event) {
	e := n.log.Info().Str(logs.AlgorithmKey, string(ev.Algorithm)).Uint64(logs.RoundKey, ev.Round).Str(logs.ViewKey, ev.View)
	switch ev.Kind {
	case election.Started:
		e.Str(logs.EventKey, logs.ElectionStarted).Uint64(logs.InitiatorKey, ev.Initiator).Msg("election started")
	case election.Won:
		e.Str(logs.EventKey, logs.ElectionWon).Uint64(logs.LeaderKey, ev.Leader).Msg("elected leader")
	case election.LeaderChanged:
		n.hist.Election.Add(ev.Duration)
		e.Str(logs.EventKey, logs.LeaderChanged).Uint64(logs.LeaderKey, ev.Leader).
			Float64(logs.DurationMsKey, float64(ev.Duration.Microseconds())/1000).Msgf("leader %d", ev.Leader)
	case election.Done:
		if ev.Late {
			e.Str(logs.EventKey, logs.ElectionDone).Uint64(logs.LeaderKey, ev.Leader).Int(logs.SentKey, ev.Sent).Bool(logs.LateKey, true).
				Msg("election message sent after the round was over here")
			return
		}
		e.Str(logs.EventKey, logs.ElectionDone).Uint64(logs.LeaderKey, ev.Leader).Int(logs.SentKey, ev.Sent).
			Float64(logs.DurationMsKey, float64(ev.Duration.Microseconds())/1000).Msg("election done")
	case election.Round:
		// Every election message is one addressed multicast: as many
		// datagrams as messages (repairs aside).
		e.Str(logs.EventKey, logs.ElectionRound).Uint64(logs.LeaderKey, ev.Leader).Int(logs.MessagesKey, ev.Sent).
			Int(logs.DatagramsKey, ev.Sent).Int(logs.MembersKey, len(n.core.View().Members)).Msg("election round accounted")
	}
}

// lockEvent logs one of the lock's events and wakes a Lock call waiting
// for it.
func (n *Node) lockEvent(ev mutex.Event) {
	e := n.log.Info().Uint64(logs.ClockKey, ev.Clock).Str(logs.ViewKey, ev.View)
	switch ev.Kind {
	case mutex.Requested:
		e.Str(logs.EventKey, logs.MutexRequested).Msg("lock requested")
	case mutex.Acquired:
		n.lockMessages = ev.Messages
		n.hist.LockWait.Add(ev.Wait)
		e.Str(logs.EventKey, logs.MutexAcquired).Float64(logs.WaitMsKey, ms(ev.Wait)).Int(logs.MessagesKey, ev.Messages).
			Int(logs.DatagramsKey, ev.Datagrams).Msg("lock acquired")
		if n.lockWaiter != nil {
			n.lockWaiter <- struct{}{}
			n.lockWaiter = nil
		}
	case mutex.Exited:
		if ev.Lost {
			n.lockLost = true
			n.log.Warn().Uint64(logs.ClockKey, ev.Clock).Str(logs.ViewKey, ev.View).Str(logs.EventKey, logs.MutexReleased).Float64(logs.HeldMsKey, ms(ev.Held)).
				Bool(logs.LostKey, true).Msg("lock lost: the view no longer has the quorum, or no longer holds this node")
		} else {
			if ev.Messages > 0 { // the central server's entry ends with its RELEASE
				e = e.Int(logs.MessagesKey, ev.Messages)
				n.lockMessages = ev.Messages
			}
			e.Str(logs.EventKey, logs.MutexReleased).Float64(logs.HeldMsKey, ms(ev.Held)).Msg("lock released")
		}
	case mutex.Withdrawn:
		e.Str(logs.EventKey, logs.MutexWithdrawn).Float64(logs.WaitMsKey, ms(ev.Wait)).Msg("lock request withdrawn")
	case mutex.Deferred:
		n.log.Debug().Uint64(logs.ClockKey, ev.Clock).Str(logs.ViewKey, ev.View).Str(logs.EventKey, logs.MutexDeferred).Uint64(logs.PeerKey, ev.Peer).
			Msg("reply deferred")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// logSecurity logs a datagram this node could not use because of the key
// (the Core reports each address at most once a minute; counters count
// every one).
func (n *Node) logSecurity(ev SecurityEvent) {
	ours := "none"
	if k := n.core.Keys(); len(k) > 0 {
		ours = k[0].Fingerprint()
	}
	e := n.log.Warn().Str(logs.EventKey, logs.SealRejected).Str(logs.WhatKey, ev.What).Str(logs.AddrKey, ev.Addr.String()).Str(logs.OursKeyFP, ours)
	if ev.Fingerprint != "" {
		e = e.Str(logs.FingerprintKey, ev.Fingerprint)
	}
	switch ev.What {
	case SecurityOtherKey:
		e.Msgf("a node at %s seals with another key (%s; ours is %s): its datagrams are dropped", ev.Addr.Addr(), ev.Fingerprint, ours)
	case SecurityCleartext:
		e.Msgf("a node at %s sends in the clear: this group seals its datagrams, so they are dropped", ev.Addr.Addr())
	case SecuritySealed:
		e.Msgf("a node at %s seals its datagrams (key %s) and this node has no key: they are dropped", ev.Addr.Addr(), ev.Fingerprint)
	}
}

// fingerprints lists the keys' fingerprints, the sealing one first.
func fingerprints(keys []seal.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Fingerprint()
	}
	return out
}
