package node

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/multicast"
)

// Status is what a running node reports about itself: who it is, the view
// it has installed, and its counters (the same as node.stats logs).
// `huddle status --json` prints it as JSON.
type Status struct {
	ID          uint64   `json:"id"`
	Incarnation uint64   `json:"incarnation"`
	Group       string   `json:"group"`
	Addr        string   `json:"addr"`  // multicast group and port
	Iface       string   `json:"iface"` // interface joined on
	Src         string   `json:"src"`   // this node's own address
	State       string   `json:"state"` // see State
	View        string   `json:"view"`  // "epoch.coordinator"; "0.0" before the first view
	Coordinator uint64   `json:"coordinator"`
	Members     []Member `json:"members"` // oldest first; the first coordinates
	// Sequencer is the member that orders total and safe messages now:
	// the coordinator as a view starts, or the member the order moved to
	// (config sequencer); absent before the first view.
	Sequencer uint64 `json:"sequencer,omitempty"`
	// Primary marks a view of the primary component (always, with quorum
	// off); Quorum is the policy: off, majority or static.
	Primary     bool     `json:"primary"`
	Quorum      string   `json:"quorum"`
	Peers       []uint64 `json:"peers"`        // live peers heard, members or not
	Leader      uint64   `json:"leader"`       // the elected leader this node knows; 0 = none yet
	LeaderRound uint64   `json:"leader_round"` // the election round that chose it
	// RoundMessages is the election messages of round LeaderRound across
	// the group, as its leader counted them (election.round); absent until
	// the leader told this node.
	RoundMessages *int   `json:"round_messages,omitempty"`
	Election      string `json:"election"` // the algorithm: ring or bully
	Lock          string `json:"lock"`     // this node and the group's lock: released, wanted or held
	// LockMessages is the lock messages of this node's last entry across
	// the group (mutex.acquired's messages; the central server's with its
	// RELEASE once released); 0 before the first.
	LockMessages int      `json:"lock_messages"`
	Drop         *Drop    `json:"drop,omitempty"` // the built-in fault injection, when on
	Keys         []string `json:"keys,omitempty"` // the group keys' fingerprints, the sealing one first; none: in the clear
	// Transport is multicast or unicast (config transport).
	Transport string `json:"transport,omitempty"`
	// Destinations, with the unicast transport, are the addresses every
	// datagram goes to.
	Destinations []string `json:"destinations,omitempty"`
	// UnicastTo and UnicastFrom, with the multicast transport, are the
	// per-peer fallback's peers: those this node sends to by unicast as
	// well (they asked), and those it hears by unicast only (it asked).
	UnicastTo   []string `json:"unicast_to,omitempty"`
	UnicastFrom []string `json:"unicast_from,omitempty"`
	Counters    Counters `json:"counters"`
	// Histograms are the node's distributions of durations, for the
	// metrics endpoint; not in the JSON.
	Histograms *Histograms `json:"-"`
}

// Histograms are the durations a node measures, each in a
// multicast.Histogram (within 6.25 %).
type Histograms struct {
	Recovery multicast.Histogram // finding a message missing → receiving it
	Flush    multicast.Histogram // a view change at this node: its start here → the install
	LockWait multicast.Histogram // a lock request → its grant
	Election multicast.Histogram // this node's first part in a round → learning its leader
	Delivery multicast.Histogram // an own total or safe message: its send → its delivery here
}

// The states of Status.State.
const (
	StateJoining  = "joining"  // no view installed yet
	StateMember   = "member"   // in a view, sending
	StateChanging = "changing" // in a view, sends held by a view change (flush) or a leave
)

// Member is one member of a view.
type Member struct {
	ID          uint64 `json:"id"`
	Incarnation uint64 `json:"incarnation"`
}

// Status returns the node's status, read in its loop; ctx's error or
// ErrStopped when the loop does not run it.
func (n *Node) Status(ctx context.Context) (Status, error) {
	var s Status
	err := n.Do(ctx, func(*Core) { s = n.status() })
	return s, err
}

// status reads the status; only the loop may call it.
func (n *Node) status() Status {
	c, v := n.o.Config, n.core.View()
	s := Status{
		ID: c.ID, Incarnation: n.o.Inc, Group: c.Group, Addr: c.Addr, Iface: c.Iface,
		Src: n.o.Transport.LocalAddr().String(), State: n.core.State(), View: v.ID.String(),
		Coordinator: v.Coordinator(), Members: make([]Member, len(v.Members)), Primary: v.Primary, Quorum: c.QuorumPolicy(),
		Peers: orEmpty(n.core.Peers()), Counters: n.counters(), Sequencer: n.core.Sequencer(),
	}
	h := n.hist
	_, ms := n.core.Stats()
	h.Recovery = ms.Recovery
	s.Histograms = &h
	s.Leader, s.LeaderRound = n.core.Leader()
	if total, ok := n.core.election.m.RoundTotal(s.LeaderRound); ok {
		s.RoundMessages = &total
	}
	s.Election = c.Election.Algorithm
	s.Lock = n.core.LockState().String()
	s.LockMessages = n.lockMessages
	if d := n.core.Drop(); d.Active() {
		s.Drop = &d
	}
	if k := n.core.Keys(); len(k) > 0 {
		s.Keys = fingerprints(k)
	}
	for i, m := range v.Members {
		s.Members[i] = Member{m.ID, m.Inc}
	}
	s.Transport = cmp.Or(c.Transport, "multicast")
	if n.uni != nil {
		s.Destinations = addrStrings(n.uni.dests)
	}
	if n.fb != nil {
		s.UnicastTo = addrStrings(n.fb.out)
		for _, a := range n.fb.addrs {
			if n.fb.known[a].deaf {
				s.UnicastFrom = append(s.UnicastFrom, a.String())
			}
		}
	}
	return s
}

func addrStrings(as []netip.AddrPort) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

// A Counter is one named counter. Value is a uint64, int, int64 or
// float64; decoded from JSON, a json.Number.
type Counter struct {
	Name  string
	Value any
}

// Counters are a node's counters in the order node.stats logs them. As
// JSON they are one object, in that order.
type Counters []Counter

// counters collects the counters; only the loop may call it. node.stats
// logs these, and Status reports them: add a counter here and both show it.
func (n *Node) counters() Counters {
	cs, ms := n.core.Stats()
	ss := n.core.SealStats()
	gs := n.core.MembershipStats()
	es, edropped := n.core.ElectionStats()
	st := n.core.StateStats()
	ls, ldropped := n.core.MutexStats()
	pp, pr, pc, pch := n.fb.counts()
	return Counters{
		{"views_installed", gs.ViewsInstalled},
		{"flushes_started", gs.FlushesStarted}, {"flush_restarts", gs.FlushRestarts}, {"flushes_unchanged", gs.FlushesUnchanged},
		{"proofs_asked", gs.ProofsAsked}, {"proofs_given", gs.ProofsGiven}, {"proofs_dropped", gs.ProofsDropped},
		{"proofs", gs.Proofs}, {"proofs_failed", gs.ProofsFailed}, {"health_starved", gs.Starved}, {"health_level", gs.HealthLevel},
		{"suspicions", gs.Suspicions}, {"joins_refused", gs.JoinsRefused},
		{"membership_msgs", gs.MembershipMsgs}, {"stale_membership", gs.StaleMembership},
		{"wrong_view", gs.WrongView}, {"future_dropped", gs.FutureDropped}, {"beyond_cut", gs.BeyondCut},
		{"ordered_delivered", gs.OrderedDelivered}, {"records_sent", gs.RecordsSent}, {"records_received", gs.RecordsReceived},
		{"bad_records", gs.BadRecords}, {"unrecorded", gs.Unrecorded}, {"unheld", gs.Unheld}, {"sequencer_moves", gs.SequencerMoves},
		{"causal_delivered", gs.CausalDelivered}, {"causal_waited", gs.CausalWaited}, {"causal_dropped", gs.CausalDropped}, {"bad_causal", gs.BadCausal},
		{"role_refused", gs.RoleRefused}, {"epoch_refused", gs.EpochRefused}, {"inc_refused", gs.IncRefused},
		{"bad_flushes", gs.BadFlushes}, {"heard_evicted", gs.HeardEvicted}, {"joins_held_off", gs.JoinsHeldOff},
		{"id_conflicts", gs.IDConflicts}, {"events_suppressed", gs.EventsSuppressed}, {"flushes_abandoned", gs.FlushesAbandoned},
		{"datagrams_in", cs.DatagramsIn}, {"datagrams_out", cs.DatagramsOut},
		{"bytes_in", cs.BytesIn}, {"bytes_out", cs.BytesOut},
		{"malformed", cs.Malformed}, {"not_huddle", cs.NotHuddle}, {"other_version", cs.OtherVersion}, {"unknown_kind", cs.UnknownKind},
		{"foreign_group", cs.ForeignGroup}, {"own_echo", cs.OwnEcho}, {"truncated", n.truncated},
		{"injected_drops", cs.InjectedDrops},
		{"cleartext_dropped", ss.NotSealed}, {"sealed_dropped", cs.SealedDropped}, {"unknown_key", ss.UnknownKey},
		{"seal_failed", ss.Failed}, {"replays", ss.Replays}, {"seal_mismatch", cs.SealMismatch}, {"starts_forgotten", ss.Forgotten},
		{"chunks_sent", cs.ChunksSent}, {"chunks_recv", cs.ChunksRecv}, {"chunked_recv", cs.ChunkedRecv}, {"chunks_dropped", cs.ChunksDropped},
		{"send_errors", n.sendErrors}, {"encode_errors", cs.EncodeErrors},
		{"sessions_sent", ms.SessionsSent}, {"sessions_recv", ms.SessionsRecv}, {"tail_probes", ms.TailProbes}, {"early_acks", ms.EarlyAcks},
		{"stale_incarnation", ms.StaleInc}, {"unhandled", ms.Unhandled}, {"peers", ms.Peers},
		{"strangers", ms.Strangers}, {"strangers_evicted", ms.PeersEvicted}, {"strangers_unannounced", ms.PeersUnannounced},
		{"foreign_data", ms.ForeignData}, {"nacks_refused", ms.NackRefused}, {"repairs_over_budget", ms.RepairBudget},
		{"future_incarnation", ms.FutureInc}, {"data_unplaced", ms.Unplaced},
		{"msgs_sent", ms.MsgsSent}, {"bytes_sent", ms.BytesSent}, {"data_datagrams", ms.DataDatagrams}, {"bulk_datagrams", ms.BulkDatagrams},
		{"msgs_delivered", ms.MsgsDelivered}, {"bytes_delivered", ms.BytesDelivered}, {"protocol_msgs", cs.ProtocolMsgs}, {"app_delivered", cs.AppDelivered}, {"for_others", gs.ForOthers},
		{"duplicates", ms.Duplicates}, {"gaps_detected", ms.GapsDetected}, {"gaps_recovered", ms.GapsRecovered},
		{"nacks_sent", ms.NacksSent}, {"nacked_seqs", ms.NackedSeqs}, {"nacks_suppressed", ms.NacksSuppressed},
		{"nacks_recv", ms.NacksRecv}, {"nacks_unanswerable", ms.NacksUnanswerable}, {"nacks_ahead", ms.NacksAhead},
		{"repairs_sent", ms.RepairsSent}, {"repairs_suppressed", ms.RepairsSuppressed}, {"repairs_recv", ms.RepairsRecv},
		{"skipped", ms.Skipped}, {"overrun", ms.Overrun}, {"bad_fragments", ms.BadFragments}, {"too_large", ms.TooLarge},
		{"buffered", ms.Buffered}, {"buffer_bytes", ms.BufferBytes}, {"unstable", ms.Unstable},
		{"window_full", n.windowFull}, {"pauses", n.pauses},
		{"recovery_p50_us", ms.Recovery.Quantile(0.5).Microseconds()},
		{"recovery_p99_us", ms.Recovery.Quantile(0.99).Microseconds()},
		{"recovery_max_us", ms.Recovery.Max().Microseconds()},
		{"srm_spread", ms.Spread},
		{"elections_started", es.Started}, {"elections_won", es.Won},
		{"election_msgs_sent", es.Sent.Total()}, {"election_msgs_recv", es.Received.Total()},
		{"election_tallies_sent", es.Accounting}, {"election_tallies_recv", es.AccountingRecv},
		{"election_stale", es.Stale + es.Ignored},
		{"election_bad", es.Malformed + es.Foreign + es.OutOfBound + es.Exhausted}, {"election_dropped", edropped},
		{"lock_requests", ls.Requests}, {"lock_entries", ls.Acquired}, {"lock_lost", ls.Lost},
		{"lock_withdrawn", ls.Withdrawn}, {"lock_deferred", ls.Deferred}, {"lock_quarantines", ls.Quarantines},
		{"lock_msgs_sent", ls.Sent.Total()}, {"lock_msgs_recv", ls.Received.Total()},
		{"lock_stale", ls.Stale}, {"lock_bad", ls.Malformed + ls.Foreign + ls.OutOfBound + ls.Exhausted}, {"lock_dropped", ldropped},
		{"lock_tokens_regenerated", ls.Regenerated}, {"lock_tokens_retired", ls.Retired},
		{"probes_answered", n.core.probe.answered}, {"probe_bad", n.core.probe.bad}, {"probe_dropped", n.core.probe.out.dropped},
		{"state_sent", st.Sent}, {"state_installed", st.Installed}, {"state_failed", st.Failed},
		{"state_bytes_sent", st.BytesSent}, {"state_bytes_recv", st.BytesRecv}, {"state_bad", st.Bad}, {"state_discarded", st.Discarded},
		{"unicast_dests", n.uni.destCount()}, {"unicast_probes", n.uni.probeCount()}, {"unicast_directed", n.uni.directedCount()}, {"unlisted_dropped", n.uni.unlistedCount()},
		{"path_unicast_out", n.fb.outCount()}, {"path_unicast_in", n.fb.deafCount()},
		{"path_probes", pp}, {"path_requests", pr}, {"path_copies", pc}, {"path_changes", pch},
		{"busy_polled", n.spin.polledCount()}, {"busy_poll_wakes", n.spin.wakeCount()},
	}
}

// Get returns the value of the counter named name.
func (cs Counters) Get(name string) (any, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c.Value, true
		}
	}
	return nil, false
}

// addTo adds the counters to a log event, each as its own field.
func (cs Counters) addTo(e *zerolog.Event) *zerolog.Event {
	for _, c := range cs {
		switch v := c.Value.(type) {
		case uint64:
			e = e.Uint64(c.Name, v)
		case int:
			e = e.Int(c.Name, v)
		case int64:
			e = e.Int64(c.Name, v)
		case float64:
			e = e.Float64(c.Name, v)
		default:
			e = e.Interface(c.Name, v)
		}
	}
	return e
}

// MarshalJSON writes the counters as one object, in their order.
func (cs Counters) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(c.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(c.Value)
		if err != nil {
			return nil, fmt.Errorf("node: counter %s: %w", c.Name, err)
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads an object of numbers, keeping the keys' order;
// the values are json.Numbers.
func (cs *Counters) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return errors.New("node: counters: not a JSON object")
	}
	out := Counters{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return fmt.Errorf("node: counters: %w", err)
		}
		name, _ := t.(string)
		var n json.Number
		if err := d.Decode(&n); err != nil {
			return fmt.Errorf("node: counters: %s: %w", name, err)
		}
		out = append(out, Counter{name, n})
	}
	*cs = out
	return nil
}
