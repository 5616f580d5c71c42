package metrics

// A spec says how one counter of node.stats is exported: its metric name
// (huddle_, then what it counts, then its unit, then _total for a counter
// that only grows), its type, its help text and the factor that turns its
// value into the metric's unit.
type spec struct {
	name  string
	gauge bool    // a value now, not a running count
	scale float64 // metric = counter × scale; 0 means 1
	help  string
}

func counter(name, help string) spec { return spec{name: name + "_total", help: help} }
func gauge(name, help string) spec   { return spec{name: name, gauge: true, help: help} }

// catalogue maps every counter of node.stats (node.Counters, as `huddle
// status --json` shows them) to its metric. A test fails for a counter
// without an entry, so a counter added to the node is exported by name
// and help, not by accident.
var catalogue = map[string]spec{
	// Membership.
	"views_installed":   counter("huddle_views_installed", "Views this node installed."),
	"flushes_started":   counter("huddle_flushes_started", "View changes this node started as coordinator, restarts included."),
	"flush_restarts":    counter("huddle_flush_restarts", "View changes restarted without a member that did not answer."),
	"suspicions":        counter("huddle_suspicions", "Members this node suspected."),
	"joins_refused":     counter("huddle_joins_refused", "Joiners this node refused as coordinator."),
	"membership_msgs":   counter("huddle_membership_messages_received", "Membership datagrams received."),
	"stale_membership":  counter("huddle_membership_stale", "Membership datagrams of an old flush or incarnation, ignored."),
	"wrong_view":        counter("huddle_messages_wrong_view", "Messages not delivered because they belong to another view."),
	"future_dropped":    counter("huddle_messages_future_dropped", "Messages held for a view this node never installed, dropped."),
	"beyond_cut":        counter("huddle_messages_beyond_cut", "Messages past a flush's cut, not delivered."),
	"ordered_delivered": counter("huddle_ordered_delivered", "Total and safe messages delivered."),
	"records_sent":      counter("huddle_order_records_sent", "Order records sent as the sequencer."),
	"records_received":  counter("huddle_order_records_received", "Order records taken."),
	"bad_records":       counter("huddle_order_records_bad", "Order records dropped: not from the sequencer, out of turn, or malformed."),
	"unrecorded":        counter("huddle_ordered_unrecorded", "Ordered messages delivered at a view's end without an order record."),
	"unheld":            counter("huddle_ordered_unheld", "Recorded messages past a view's cut, which no member delivers."),
	"role_refused":      counter("huddle_membership_role_refused", "Membership messages ignored: not from the role that may send them."),
	"epoch_refused":     counter("huddle_epoch_refused", "Datagrams, flushes and commits ignored for an epoch beyond the bound."),
	"inc_refused":       counter("huddle_incarnation_refused", "Datagrams ignored for an incarnation beyond the bound."),
	"bad_flushes":       counter("huddle_flushes_bad", "Flush cuts and commits ignored as inconsistent with the flush."),
	"heard_evicted":     counter("huddle_heard_evicted", "Nodes outside the view forgotten to stay within bounds."),
	"joins_held_off":    counter("huddle_joins_held_off", "Join requests not acted on."),
	"id_conflicts":      counter("huddle_id_conflicts", "Datagrams carrying this node's ID from another incarnation."),
	"events_suppressed": counter("huddle_events_suppressed", "Events about nodes outside the view not logged, over the rate limit."),
	"flushes_abandoned": counter("huddle_flushes_abandoned", "Flushes this node gave up as a participant."),

	// The socket and the door.
	"datagrams_in":      counter("huddle_datagrams_received", "Datagrams read from the sockets."),
	"datagrams_out":     counter("huddle_datagrams_sent", "Datagrams written to the sockets."),
	"bytes_in":          counter("huddle_received_bytes", "Bytes of the datagrams read."),
	"bytes_out":         counter("huddle_sent_bytes", "Bytes of the datagrams written."),
	"malformed":         counter("huddle_datagrams_malformed", "Datagrams dropped as undecodable."),
	"not_huddle":        counter("huddle_datagrams_not_huddle", "Datagrams dropped: another protocol or wire version."),
	"other_version":     counter("huddle_datagrams_other_version", "Datagrams of this group in another wire version, dropped."),
	"unknown_kind":      counter("huddle_datagrams_unknown_kind", "Datagrams dropped: a kind this version does not know."),
	"foreign_group":     counter("huddle_datagrams_foreign_group", "Datagrams of another group on the same address, dropped."),
	"own_echo":          counter("huddle_datagrams_own_echo", "This node's own datagrams looped back by the host."),
	"truncated":         counter("huddle_datagrams_truncated", "Datagrams longer than datagram_size, dropped."),
	"injected_drops":    counter("huddle_datagrams_injected_drops", "Datagrams the built-in drop discarded (an experiment)."),
	"cleartext_dropped": counter("huddle_datagrams_cleartext_dropped", "With a key, datagrams in the clear, dropped."),
	"sealed_dropped":    counter("huddle_datagrams_sealed_dropped", "Without a key, sealed datagrams, dropped."),
	"unknown_key":       counter("huddle_datagrams_unknown_key", "Datagrams sealed with a key this node does not hold, dropped."),
	"seal_failed":       counter("huddle_datagrams_seal_failed", "Sealed datagrams that did not open (forged, damaged, malformed)."),
	"replays":           counter("huddle_datagrams_replayed", "Replayed datagrams, or older than the replay window, dropped."),
	"seal_mismatch":     counter("huddle_datagrams_seal_mismatch", "Datagrams whose inner sender is not the one their seal names, dropped."),
	"starts_forgotten":  counter("huddle_seal_starts_forgotten", "Senders' starts whose key and replay window were forgotten (over 1024)."),
	"chunks_sent":       counter("huddle_chunks_sent", "Pieces of membership messages too large for one datagram, sent."),
	"chunks_recv":       counter("huddle_chunks_received", "Pieces of membership messages received."),
	"chunked_recv":      counter("huddle_chunked_messages_received", "Membership messages put together from pieces."),
	"chunks_dropped":    counter("huddle_chunks_dropped", "Pieces dropped: taken, superseded, duplicate, inconsistent or evicted."),
	"send_errors":       counter("huddle_send_errors", "Failed sends."),
	"encode_errors":     counter("huddle_encode_errors", "Datagrams that could not be encoded."),

	// Reliable multicast.
	"sessions_sent":         counter("huddle_sessions_sent", "Session messages (heartbeats) sent."),
	"sessions_recv":         counter("huddle_sessions_received", "Session messages received."),
	"tail_probes":           counter("huddle_tail_probes", "Session messages sent early, announcing this node's last message."),
	"early_acks":            counter("huddle_early_acks", "Session messages sent early, after a quarter of a source's window arrived."),
	"stale_incarnation":     counter("huddle_datagrams_stale_incarnation", "Datagrams from another incarnation of a peer than the one kept."),
	"unhandled":             counter("huddle_datagrams_unhandled", "Datagrams of kinds the running layers do not handle."),
	"peers":                 gauge("huddle_peers", "Live peers this node keeps state for."),
	"strangers":             gauge("huddle_strangers", "Nodes outside the view heard within the suspect timeout."),
	"strangers_evicted":     counter("huddle_strangers_evicted", "Strangers forgotten to make room for a newer one."),
	"strangers_unannounced": counter("huddle_strangers_unannounced", "Strangers whose peer.seen was not logged, over the rate limit."),
	"foreign_data":          counter("huddle_datagrams_foreign_data", "Data, batch and repair datagrams from outside the view, dropped."),
	"nacks_refused":         counter("huddle_nacks_refused", "NACKs from outside the view, not answered."),
	"repairs_over_budget":   counter("huddle_repairs_over_budget", "Repairs not sent: over the NACK's share or the requester's byte budget."),
	"future_incarnation":    counter("huddle_datagrams_future_incarnation", "Datagrams whose incarnation lies more than 10 minutes ahead, dropped."),
	"msgs_sent":             counter("huddle_messages_sent", "Messages this node multicast."),
	"bytes_sent":            counter("huddle_messages_sent_bytes", "Payload bytes of the messages this node multicast."),
	"data_datagrams":        counter("huddle_data_datagrams_sent", "Datagrams that carried this node's messages."),
	"msgs_delivered":        counter("huddle_messages_delivered", "Messages delivered by the multicast layer, exactly once each."),
	"bytes_delivered":       counter("huddle_messages_delivered_bytes", "Payload bytes of the messages delivered by the multicast layer."),
	"protocol_msgs":         counter("huddle_protocol_messages_delivered", "Delivered messages of the election and the lock."),
	"app_delivered":         counter("huddle_app_messages_delivered", "Other nodes' messages handed to the application."),
	"for_others":            counter("huddle_messages_for_others", "Delivered messages addressed to another member, dropped here."),
	"duplicates":            counter("huddle_duplicates_received", "Copies received of messages already held."),
	"gaps_detected":         counter("huddle_gaps_detected", "Messages found missing."),
	"gaps_recovered":        counter("huddle_gaps_recovered", "Messages found missing and received later."),
	"nacks_sent":            counter("huddle_nacks_sent", "NACK datagrams sent."),
	"nacked_seqs":           counter("huddle_nacked_messages", "Messages asked for in the NACKs sent."),
	"nacks_suppressed":      counter("huddle_nacks_suppressed", "Requests postponed because another member asked first."),
	"nacks_recv":            counter("huddle_nacks_received", "NACK datagrams received."),
	"nacks_unanswerable":    counter("huddle_nacks_unanswerable", "Requests for messages no longer held."),
	"nacks_ahead":           counter("huddle_nacks_ahead", "Requests heard for messages not yet known missing."),
	"repairs_sent":          counter("huddle_repairs_sent", "Repairs sent."),
	"repairs_suppressed":    counter("huddle_repairs_suppressed", "Repairs cancelled because another member repaired first."),
	"repairs_recv":          counter("huddle_repairs_received", "Repairs received."),
	"skipped":               counter("huddle_messages_skipped", "Messages given up for good."),
	"overrun":               counter("huddle_messages_overrun", "Messages that arrived too far ahead to buffer."),
	"bad_fragments":         counter("huddle_fragments_bad", "Fragments out of place in their source's stream."),
	"too_large":             counter("huddle_messages_too_large", "Reassembled messages over max_message_size, dropped."),
	"buffered":              gauge("huddle_buffered_messages", "Messages held for delivery or repair."),
	"buffer_bytes":          gauge("huddle_buffered_bytes", "Bytes of the messages held for delivery or repair."),
	"unstable":              gauge("huddle_unstable_messages", "Own messages not yet held by every member."),
	"window_full":           counter("huddle_send_window_full", "Times sends had to wait for the send window."),
	"pauses":                counter("huddle_pauses", "Stretches of a heartbeat or more during which the node could not read."),
	"recovery_p50_us":       {name: "huddle_recovery_p50_seconds", gauge: true, scale: 1e-6, help: "Median time from finding a message missing to receiving it (huddle_recovery_seconds has the histogram)."},
	"recovery_p99_us":       {name: "huddle_recovery_p99_seconds", gauge: true, scale: 1e-6, help: "99th percentile of the time from finding a message missing to receiving it."},
	"recovery_max_us":       {name: "huddle_recovery_max_seconds", gauge: true, scale: 1e-6, help: "Longest time from finding a message missing to receiving it."},
	"srm_spread":            gauge("huddle_srm_spread", "The request timer's adapted spread C2, averaged over the senders heard."),

	// Elections and the lock.
	"elections_started":       counter("huddle_elections_started", "Election rounds this node began."),
	"elections_won":           counter("huddle_elections_won", "Election rounds this node won."),
	"election_msgs_sent":      counter("huddle_election_messages_sent", "Election messages sent."),
	"election_msgs_recv":      counter("huddle_election_messages_received", "Election messages received."),
	"election_stale":          counter("huddle_election_messages_stale", "Election messages of an old round or that did not fit this node's state."),
	"election_bad":            counter("huddle_election_messages_bad", "Election messages malformed, from outside the view, or out of bounds."),
	"election_dropped":        counter("huddle_election_messages_dropped", "Election messages the node could not send."),
	"lock_requests":           counter("huddle_lock_requests", "Lock requests."),
	"lock_entries":            counter("huddle_lock_entries", "Lock entries (grants)."),
	"lock_lost":               counter("huddle_lock_lost", "Locks taken away (quorum mode, or out of the view)."),
	"lock_withdrawn":          counter("huddle_lock_withdrawn", "Lock requests withdrawn."),
	"lock_deferred":           counter("huddle_lock_deferred", "Members' lock requests this node deferred."),
	"lock_quarantines":        counter("huddle_lock_quarantines", "Quarantines started (quorum mode)."),
	"lock_msgs_sent":          counter("huddle_lock_messages_sent", "Lock messages sent."),
	"lock_msgs_recv":          counter("huddle_lock_messages_received", "Lock messages received."),
	"lock_stale":              counter("huddle_lock_messages_stale", "Lock replies to a withdrawn or older request."),
	"lock_bad":                counter("huddle_lock_messages_bad", "Lock messages malformed, from outside the view, or out of bounds."),
	"lock_dropped":            counter("huddle_lock_messages_dropped", "Lock messages the node could not send."),
	"lock_tokens_regenerated": counter("huddle_lock_tokens_regenerated", "Token ring: tokens regenerated after a view change lost the holder."),
	"lock_tokens_retired":     counter("huddle_lock_tokens_retired", "Token ring: tokens retired because a merge brought more than one."),
	"probes_answered":         counter("huddle_probes_answered", "Group probes (huddle status --group) of other members this node answered."),
	"probe_bad":               counter("huddle_probe_messages_bad", "Probe messages dropped: malformed, unasked, late, or a second answer."),
	"probe_dropped":           counter("huddle_probe_messages_dropped", "Probe answers the node could not send."),
}
