package node

import (
	"fmt"
	"hash/crc32"
	"net/netip"
	"time"

	"github.com/huddle-lan/huddle/election"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/mutex"
)

// The node's log events: one line per state change, written by the loop
// from what the Core reports (docs/logs.md).

func (n *Node) logDelivery(d *membership.Delivery) {
	if n.o.Config.TraceDeliveries {
		e := n.log.Info().Str("event", "deliver").Str("view", d.View.String()).Uint64("from", d.Source).
			Uint64("from_incarnation", d.Inc).Uint64("seq", d.Seq).Str("order", d.Order.String())
		if d.GSeq != 0 {
			e = e.Uint64("gseq", d.GSeq)
		}
		if d.Final {
			e = e.Bool("final", true)
		}
		if len(d.Service) > 0 {
			e = e.Str("service", string(d.Service))
		}
		e.Int("len", len(d.Payload)).Uint32("crc", crc32.ChecksumIEEE(d.Payload)).Msg("delivered")
	}
}

func (n *Node) logMembership(ev *membership.Event) {
	switch ev.Kind {
	case membership.Delivered:
		n.logDelivery(&ev.Delivery)
	case membership.Engine:
		n.logEngineEvent(ev.Multicast, ev.InView)
	case membership.ViewInstalled:
		n.log.Info().Str("event", "view.installed").Str("view", ev.View.ID.String()).
			Uint64("coordinator_incarnation", ev.View.Members[0].Inc).
			Uints64("members", ev.View.IDs()).Uints64("joined", orEmpty(ev.Joined)).
			Uints64("left", orEmpty(ev.Left)).Uints64("crashed", orEmpty(ev.Crashed)).
			Int64("flush_ms", ev.Flush.Milliseconds()).Str("prior", ev.Prior.String()).
			Msgf("view %s installed", ev.View)
	case membership.FlushStarted:
		n.log.Info().Str("event", "view.flush.started").Str("view", ev.View.ID.String()).
			Uint64("epoch", ev.Epoch).Uint64("attempt", ev.Attempt).Uints64("proposed", ev.Proposed).
			Msg("view change started")
	case membership.Suspected:
		n.log.Info().Str("event", "member.suspected").Str("view", ev.View.ID.String()).Uint64("member", ev.Member).
			Int64("silent_ms", ev.Silent.Milliseconds()).Msg("member suspected")
	case membership.Excluded:
		n.log.Warn().Str("event", "member.excluded").Str("view", ev.View.ID.String()).Uint64("by", ev.Member).
			Msg("the group installed a view without this node; it will be merged back in")
	case membership.LeaveDone:
		n.log.Info().Str("event", "member.left").Str("view", ev.View.ID.String()).Msg("left the group")
	case membership.Refused:
		n.logRefused(*ev)
	}
}

// logRefused logs a refusal: of this node (it stops), or of a joiner by
// this node as coordinator.
func (n *Node) logRefused(ev membership.Event) {
	e := n.log.Error().Str("event", "member.refused").Uint64("member", ev.Member).Str("setting", ev.Setting).
		Str("ours", ev.Ours).Str("theirs", ev.Theirs)
	switch {
	case ev.Member != n.o.Config.ID && ev.Setting == "settings":
		e.Msgf("not merging node %d: its protocol settings (datagram_size, max_message_size, heartbeat, suspect_timeout, election.algorithm, mutex.quorum) differ from this group's", ev.Member)
		return
	case ev.Member != n.o.Config.ID:
		e.Msgf("refused node %d: its %s is %q, the group's is %q", ev.Member, ev.Setting, ev.Theirs, ev.Ours)
		return
	}
	var err error
	switch ev.Setting {
	case "id":
		err = fmt.Errorf("%w: another live node at %s uses ID %d; give every node its own --id", ErrRefused, ev.Addr.Addr(), ev.Member)
	case "members":
		err = fmt.Errorf("%w: the group (coordinator at %s) is full: a view lists at most %s members with this datagram_size", ErrRefused, ev.Addr.Addr(), ev.Theirs)
	default:
		err = fmt.Errorf("%w: this node's %s is %q but the group's (coordinator at %s) is %q", ErrRefused, ev.Setting, ev.Ours, ev.Addr.Addr(), ev.Theirs)
	}
	n.refused = err
	e.Str("addr", ev.Addr.String()).Msg(err.Error())
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
		n.log.Info().Str("event", "peer.seen").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
			Str("addr", ev.Addr.String()).Bool("restarted", ev.Restarted).Msg("peer seen")
	case multicast.PeerLost:
		n.log.Info().Str("event", "peer.lost").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
			Int64("silent_ms", ev.Silent.Milliseconds()).Msg("peer lost")
	case multicast.StreamSkipped:
		if !inView {
			n.log.Info().Str("event", "stream.skipped").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
				Uint64("from_seq", ev.From).Uint64("count", ev.Skipped).Bool("in_view", false).
				Msg("messages sent before this node's view needed them: none are lost to it")
			return
		}
		n.log.Warn().Str("event", "stream.skipped").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
			Uint64("from_seq", ev.From).Uint64("count", ev.Skipped).Bool("in_view", true).
			Msg("messages lost for good: the sender went on without this node and no longer holds them")
	case multicast.PeerLagging:
		n.log.Warn().Str("event", "peer.lagging").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
			Uint64("behind", ev.Behind).Int64("held_ms", ev.Held.Milliseconds()).
			Msg("a live peer has not acknowledged this node's messages and holds its send window full")
	case multicast.PeerConflict:
		if !n.warned["conflict"] {
			n.warned["conflict"] = true
			n.log.Warn().Str("event", "peer.conflict").Uint64("peer", ev.Peer).Uint64("incarnation", ev.Inc).
				Str("addr", ev.Addr.String()).
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
	e := n.log.Warn().Str("event", "node.warning").Str("what", key)
	if src.IsValid() {
		e = e.Str("addr", src.String())
	}
	e.Msg(msg)
}

func (n *Node) logStarted() {
	c := n.o.Config
	n.log.Info().Str("event", "node.started").
		Uint64("incarnation", n.o.Inc).Str("group", c.Group).Str("addr", c.Addr).Str("iface", c.Iface).
		Str("src", n.o.Transport.LocalAddr().String()).Str("profile", c.Profile).
		Int64("heartbeat_ms", c.Heartbeat.D().Milliseconds()).Int64("suspect_ms", c.SuspectTimeout.D().Milliseconds()).
		Int("datagram_size", c.DatagramSize).Int("ttl", c.TTL).Bool("loopback", c.Loopback).
		Str("control_socket", c.ControlSocket).Msg("node started")
	if d := n.core.Drop(); d.Active() {
		n.logDrop("node.drop", d)
	}
}

func (n *Node) logStats(why string) {
	v := n.core.View()
	e := n.log.Info().Str("event", "node.stats").Str("why", why).Str("view", v.ID.String()).Int("members", len(v.Members))
	n.counters().addTo(e).Msg("stats")
}

// logElection logs one election event: election.started at an initiator,
// election.won at the winner, leader.changed and election.done at every
// node (done's sent, summed over the nodes' logs, is the round's count).
func (n *Node) logElection(ev election.Event) {
	e := n.log.Info().Str("algorithm", string(ev.Algorithm)).Uint64("round", ev.Round).Str("view", ev.View)
	switch ev.Kind {
	case election.Started:
		e.Str("event", "election.started").Uint64("initiator", ev.Initiator).Msg("election started")
	case election.Won:
		e.Str("event", "election.won").Uint64("leader", ev.Leader).Msg("elected leader")
	case election.LeaderChanged:
		e.Str("event", "leader.changed").Uint64("leader", ev.Leader).
			Float64("duration_ms", float64(ev.Duration.Microseconds())/1000).Msgf("leader %d", ev.Leader)
	case election.Done:
		if ev.Late {
			e.Str("event", "election.done").Uint64("leader", ev.Leader).Int("sent", ev.Sent).Bool("late", true).
				Msg("election message sent after the round was over here")
			return
		}
		e.Str("event", "election.done").Uint64("leader", ev.Leader).Int("sent", ev.Sent).
			Float64("duration_ms", float64(ev.Duration.Microseconds())/1000).Msg("election done")
	}
}

// lockEvent logs one of the lock's events and wakes a Lock call waiting
// for it.
func (n *Node) lockEvent(ev mutex.Event) {
	e := n.log.Info().Uint64("clock", ev.Clock).Str("view", ev.View)
	switch ev.Kind {
	case mutex.Requested:
		e.Str("event", "mutex.requested").Msg("lock requested")
	case mutex.Acquired:
		e.Str("event", "mutex.acquired").Float64("wait_ms", ms(ev.Wait)).Int("messages", ev.Messages).
			Int("datagrams", ev.Datagrams).Msg("lock acquired")
		if n.lockWaiter != nil {
			n.lockWaiter <- struct{}{}
			n.lockWaiter = nil
		}
	case mutex.Exited:
		if ev.Lost {
			n.lockLost = true
			n.log.Warn().Uint64("clock", ev.Clock).Str("view", ev.View).Str("event", "mutex.released").Float64("held_ms", ms(ev.Held)).
				Bool("lost", true).Msg("lock lost: the view no longer has the quorum, or no longer holds this node")
		} else {
			e.Str("event", "mutex.released").Float64("held_ms", ms(ev.Held)).Msg("lock released")
		}
	case mutex.Withdrawn:
		e.Str("event", "mutex.withdrawn").Float64("wait_ms", ms(ev.Wait)).Msg("lock request withdrawn")
	case mutex.Deferred:
		n.log.Debug().Uint64("clock", ev.Clock).Str("view", ev.View).Str("event", "mutex.deferred").Uint64("peer", ev.Peer).
			Msg("reply deferred")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
