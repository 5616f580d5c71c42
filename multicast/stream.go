package multicast

import (
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// stream is one source incarnation's sequence of messages as this node
// holds it. For a remote source it is the receive side: in-order delivery,
// gaps and their request timers. For this node's own stream it is the send
// side: the next sequence number and the messages kept for repair.
type stream struct {
	src, inc uint64
	next     uint64 // remote: next seq to deliver; own: next seq to assign
	high     uint64 // highest seq known to exist
	opened   uint64 // every seq in [next, opened] is held or has a gap
	stable   uint64 // every seq ≤ stable is held by all live members
	ring     ring   // messages held, from stable+1 on
	gaps     map[uint64]*gap
	ahead    map[uint64]time.Time // requests heard for messages not yet known missing, and when (nil when none)
	answer   time.Duration        // smoothed time from our request of a message to its repair (asked once)
	answerV  time.Duration        // smoothed deviation of those times
	c2       float64              // this source's request-timer spread C2, adapted (SRM §VI-A)
	dups     float64              // smoothed duplicate requests per loss of this source
	repairs  map[uint64]*repairState
	frag     []byte    // payload of a fragmented message being reassembled
	fragSeq  uint64    // seq of its first fragment
	fragNext uint32    // index of the fragment expected next
	fragDrop bool      // no message is being reassembled (or it is lost or too large): drop fragments until the next first one
	started  bool      // something was delivered: the stream is this node's to keep up with
	unplaced bool      // begun by data of a node not yet a member: held, not delivered, until the view places it (Start)
	lostAt   time.Time // when its source was lost; zero while it is live
	dataAt   time.Time // when data of it last arrived (not repairs)
	reported uint64    // received() as the last session message told it
	got      uint64    // payload bytes stored, all told
	gotTold  uint64    // got when the last session message was sent
}

// gap is a message known to exist and not received (SRM: a loss).
type gap struct {
	detected   time.Time
	due        time.Time // when the armed request timer fires
	ignoreTill time.Time // SRM: requests heard before this do not back off again
	askedAt    time.Time // when this node last requested it; zero = never
	again      bool      // this node requested it more than once
	requests   int       // requests of its first round (attempt 0) this node sent or heard
	backoff    uint      // SRM exponential back-off: the request interval is multiplied by 2^backoff
	gen        uint32    // generation of the armed request timer
}

// repairState is what this node does about repairing one message.
type repairState struct {
	gen      uint32    // generation of the armed repair timer
	pending  bool      // a repair timer is armed
	seen     uint64    // highest request attempt heard for it
	answered uint64    // request attempts below this have been answered by a repair
	holdTill time.Time // until when those rounds are remembered
}

func newStream(src, inc, next uint64, size int) *stream {
	return &stream{src: src, inc: inc, next: next, high: next - 1, opened: next - 1, stable: next - 1, fragDrop: true,
		ring: newRing(size, next), gaps: map[uint64]*gap{}, repairs: map[uint64]*repairState{}}
}

// streamFor returns the stream of source src at incarnation inc, creating
// it (starting at first) or replacing an older incarnation's. It returns nil
// for an older incarnation than the one known. Where a new stream starts is
// the caller's guess; a source's session message corrects a guess that is
// too early (skipTo its Low), and one too late loses only what was sent
// before this node could hear it.
func (e *Engine) streamFor(src, inc, first uint64) *stream {
	if src == e.opt.Self {
		if inc != e.opt.Inc {
			return nil
		}
		return e.own
	}
	st := e.streams[src]
	switch {
	case st != nil && st.inc == inc:
		return st
	case st != nil && st.inc > inc:
		return nil
	}
	st = newStream(src, inc, max(first, 1), e.ringSize())
	st.c2 = e.opt.C2
	e.streams[src] = st
	e.streamsChanged()
	return st
}

// onData takes a data message from its source. A stream first heard of
// through data starts at 1 while the source is young (its first messages
// are still within one window, and it holds them until its receivers have
// them), and at this message otherwise.
//
// Not so for a node a flush proposes that is not a member yet: its data
// are of the view being installed, which may begin before this message
// (its first ones lost). Its stream begins here but is unplaced: nothing
// of it is delivered until the view places it (Start), which goes back
// for what came before if it must.
func (e *Engine) onData(now time.Time, p *peer, d *wire.Data, v wire.ViewID) {
	st := e.streams[p.id]
	unplaced := (st == nil || st.inc != p.inc) && !e.member(p.id, p.inc)
	first := d.Seq
	if first <= uint64(e.opt.Window) {
		first = 1
	}
	if st := e.streamFor(p.id, p.inc, first); st != nil {
		if st.unplaced = st.unplaced || unplaced; st.unplaced {
			e.stats.Unplaced++
		}
		if st.dataAt.IsZero() || now.Sub(st.dataAt) >= 2*e.opt.Heartbeat {
			st.dataAt = now
			e.countSenders(now) // one more sender: the shares shrink at once
		}
		st.dataAt = now
		e.receive(now, st, d, v, true)
	}
}

// earlyAckGap: early acknowledgements are at least a heartbeat divided by
// this apart.
const earlyAckGap = 32

// ackEarly sends a session message at once when this node received a
// quarter of src's send window (in messages or in bytes) since its last
// one: the source learns stability and reopens its window within a round
// trip, instead of stalling on a full window until the next heartbeat (at
// 100-byte messages the window is a few milliseconds of traffic). A receiver sends
// one more session message per quarter window, a few hundred a second at
// full speed. They come at most one per earlyAckGap heartbeat: with many
// members sending at once every share is small, and a receiver acking a
// quarter of each would flood the group with session messages.
func (e *Engine) ackEarly(now time.Time, src uint64) {
	st := e.streams[src]
	if st == nil || !st.lostAt.IsZero() || now.Sub(e.earlyAt) < e.opt.Heartbeat/earlyAckGap {
		return
	}
	if b := e.byteLimit(wire.FIFO); st.received()-st.reported >= uint64(max(1, e.limit(wire.FIFO)/4)) ||
		b > 0 && st.got-st.gotTold >= uint64(max(1, b/4)) {
		if e.toSource(st) && !st.unplaced {
			e.ackTo(now, st)
		} else {
			e.sendSession(now)
		}
		e.earlyAt = now
		e.stats.EarlyAcks++
	}
}

// ackTo is the early acknowledgement of st with Options.Directed: a
// session message to its source alone, with st's report only. The other
// members would only take it in, every one of them, for a report they
// get at the next heartbeat anyway.
func (e *Engine) ackTo(now time.Time, st *stream) {
	env := e.session(now)
	env.To = st.src
	env.Session.Peers = append(make([]wire.PeerState, 0, 1), e.report(now, st))
	e.out = append(e.out, env)
	e.stats.SessionsSent++
}

// receive stores a message of a remote stream, fills its gap, and delivers
// what is now in order. With reveal, the message also tells that every
// message before it exists, and their gaps open: data arrives in its
// source's order, so what it skipped was lost. Repairs travel apart from
// the data (they may overtake data still queued in this node's socket), so
// they reveal nothing.
func (e *Engine) receive(now time.Time, st *stream, d *wire.Data, v wire.ViewID, reveal bool) {
	s := d.Seq
	if s < st.next || st.ring.get(s) != nil {
		e.stats.Duplicates++
		return
	}
	if !st.ring.fits(s) {
		e.stats.Overrun++
		return
	}
	st.ring.put(owned(d), v)
	if st.ahead != nil {
		delete(st.ahead, s) // it arrived: the request heard for it was someone else's loss
	}
	st.got += uint64(len(d.Payload))
	if g := st.gaps[s]; g != nil {
		e.stats.GapsRecovered++
		e.stats.Recovery.Add(now.Sub(g.detected))
		if !g.askedAt.IsZero() && !g.again {
			st.answer, st.answerV = smoothDev(st.answer, st.answerV, now.Sub(g.askedAt))
		}
		if g.requests > 0 {
			e.adapt(st, g.requests-1)
		}
		delete(st.gaps, s)
	}
	if reveal {
		e.detect(now, st, s)
	}
	e.deliver(st)
	if st.opened < st.high {
		e.openGaps(now, st) // a gap closed: another may open (gapSpan)
	}
}

// detect learns that messages up to high exist, and opens their gaps. It
// believes at most a ring's reach past what it holds: a claim beyond that
// could not be buffered anyway.
func (e *Engine) detect(now time.Time, st *stream, high uint64) {
	if high = min(high, st.received()+st.ring.max); high > st.high {
		st.high = high
	}
	e.openGaps(now, st)
}

// gapSpan is how many gaps a stream may have open at once: what one NACK
// asks for at most (maxNackSeqs, in NACKs of maxNackRepairs). A false
// claim of messages far ahead, which any datagram in a member's name can
// make without a key, then costs at most gapSpan gaps and their timers; a
// true one is requested gapSpan messages at a time, a gap opening as
// another closes.
const gapSpan = maxNackSeqs

// openGaps opens a gap with a request timer (SRM §III-B) for each message
// known to exist and not held, as far as the stream's ring reaches, while
// the stream has fewer than gapSpan open: that bounds their number,
// whatever a datagram claims. What lies beyond is opened when a gap
// closes, the ring moves on (stability), or the stream skips ahead.
func (e *Engine) openGaps(now time.Time, st *stream) {
	if !st.lostAt.IsZero() {
		return // its source is lost: nobody may be left to repair
	}
	from := max(st.opened+1, st.next)
	to := min(st.high, st.ring.reach())
	s := from
	for ; s <= to && len(st.gaps) < gapSpan; s++ {
		if st.ring.get(s) != nil || st.gaps[s] != nil {
			continue
		}
		g := &gap{detected: now}
		st.gaps[s] = g
		e.stats.GapsDetected++
		if at, ok := st.ahead[s]; ok && now.Sub(at) < e.opt.Heartbeat {
			// Another member asked for it before this node knew it
			// was missing: that request is already answered or on its
			// way, so this one waits as if suppressed by it.
			g.requests, g.backoff = 1, 1
			e.stats.NacksSuppressed++
		}
		e.armRequest(now, st, s, g)
	}
	st.opened = max(st.opened, s-1)
	if st.ahead != nil {
		for a := range st.ahead {
			if a <= st.opened {
				delete(st.ahead, a)
			}
		}
	}
}

// maxAhead bounds the requests a stream remembers for messages it does
// not yet know are missing.
const maxAhead = 256

// heardAhead remembers a request heard for message s of st, which this
// node neither holds nor knows to be missing: the request overtook the
// data (requests travel on their own port and are read first, so on a
// busy host they overtake data still queued in the socket). When the gap
// opens, its own request then waits as if that request suppressed it
// (openGaps), where it would otherwise be one more duplicate. Only what
// the ring could buffer is remembered, at most maxAhead; the entries go
// when the gap opens or the message arrives.
func (e *Engine) heardAhead(now time.Time, st *stream, s uint64) {
	if s <= st.opened || s > st.ring.reach() || !st.lostAt.IsZero() {
		return
	}
	if st.ahead == nil {
		st.ahead = map[uint64]time.Time{}
	}
	if _, ok := st.ahead[s]; ok || len(st.ahead) < maxAhead {
		st.ahead[s] = now
		e.stats.NacksAhead++
	}
}

// deliver hands the messages that are now in order to the layer above,
// reassembling fragmented ones.
func (e *Engine) deliver(st *stream) {
	for !st.unplaced {
		en := st.ring.get(st.next)
		if en == nil {
			return
		}
		st.next++
		e.deliverOne(st, en)
	}
}

func (e *Engine) deliverOne(st *stream, en *entry) {
	d := &en.data
	if d.FragCount <= 1 {
		if !st.fragDrop {
			// A whole message among another's fragments: the source
			// broke its own stream, and the interrupted message is lost.
			e.stats.BadFragments++
			st.fragDrop = true
		}
		e.emit(st, d.Seq, en, d.Payload)
		return
	}
	if d.FragIndex == 0 {
		st.frag, st.fragSeq, st.fragNext, st.fragDrop = st.frag[:0], d.Seq, 0, false
	}
	if d.FragIndex != st.fragNext && !st.fragDrop {
		// A fragment out of place: the source broke its own stream.
		e.stats.BadFragments++
		st.fragDrop = true
	}
	st.fragNext = d.FragIndex + 1
	if !st.fragDrop && len(st.frag)+len(d.Payload) > e.opt.MaxMessage {
		e.stats.TooLarge++
		st.fragDrop = true
	}
	if !st.fragDrop {
		st.frag = append(st.frag, d.Payload...)
	}
	if d.FragIndex+1 == d.FragCount {
		if !st.fragDrop {
			e.emit(st, st.fragSeq, en, slices.Clone(st.frag))
		}
		// The message is over: a fragment that is not the first of the
		// next one belongs to none.
		st.frag, st.fragDrop = st.frag[:0], true
	}
}

// emit delivers a whole message: seq is its first fragment, en its last
// (whose view is the message's: a source sends all of one message's
// fragments in one view).
func (e *Engine) emit(st *stream, seq uint64, en *entry, payload []byte) {
	d := &en.data
	st.started = true
	e.stats.MsgsDelivered++
	e.stats.BytesDelivered += uint64(len(payload))
	e.deliveries = append(e.deliveries, Delivery{Source: st.src, Inc: st.inc, Seq: seq, End: d.Seq, View: en.view,
		Order: d.Order, Dest: d.Dest, Service: d.Service, Payload: payload})
}

// skipTo gives up on every message of st below low that it does not
// hold: the source no longer holds them (it went on without this node,
// which it had lost), so they can never be repaired. What it does hold is
// delivered, in order; what the source still holds is requested. A stream
// that has delivered nothing yet was joined late: what came before is not
// this node's loss, and goes unreported.
func (e *Engine) skipTo(now time.Time, st *stream, low uint64) { e.skip(now, st, low, false) }

// skip is skipTo; quiet, it reports nothing lost (the messages skipped
// were never this node's to receive). Nor are a non-member's: a node not
// yet in a view, whose streams a session message began, delivers what it
// holds of them (the layer above discards it, being of no view of its),
// and what it skips of them is no loss of its own.
func (e *Engine) skip(now time.Time, st *stream, low uint64, quiet bool) {
	if low <= st.next {
		return
	}
	from, missing := st.next, uint64(0)
	for s := st.next; s < low; s++ {
		delete(st.gaps, s)
		if en := st.ring.get(s); en != nil {
			st.next = s + 1
			e.deliverOne(st, en)
			continue
		}
		missing++
		st.fragDrop = true // a lost fragment loses its message
		st.next = s + 1
		if s-from > st.ring.max { // nothing held this far out: jump
			missing += low - 1 - s
			break
		}
	}
	st.next = low
	if st.stable < low-1 {
		st.stable = low - 1
		st.ring.advance(low)
	}
	st.high = max(st.high, low-1)
	st.opened = max(st.opened, low-1)
	if st.started && missing > 0 && !quiet && e.member(st.src, st.inc) {
		e.stats.Skipped += missing
		e.events = append(e.events, Event{Kind: StreamSkipped, Peer: st.src, Inc: st.inc, From: from, Skipped: missing})
	}
	e.deliver(st)
	e.openGaps(now, st)
}

// smoothDev takes a sample into a smoothed mean and mean deviation, as
// TCP's round-trip estimator does (RFC 6298: gains 1/8 and 1/4).
func smoothDev(mean, dev, sample time.Duration) (time.Duration, time.Duration) {
	if mean == 0 {
		return sample, sample / 2
	}
	diff := sample - mean
	if diff < 0 {
		diff = -diff
	}
	return mean + (sample-mean)/8, dev + (diff-dev)/4
}

// received is the highest seq of st this node holds with nothing missing
// below it: what its session messages report.
func (st *stream) received() uint64 { return st.next - 1 }
