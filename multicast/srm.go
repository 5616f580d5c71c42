package multicast

import (
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Limits that keep one datagram's work bounded, whatever it claims.
const (
	maxBackoff    = 6   // request intervals grow to at most 2^6 times the first
	maxNackRanges = 64  // ranges in one NACK we send (about 1200 bytes at worst)
	maxNackSeqs   = 512 // sequence numbers of one received NACK we act on
	// maxNackRepairs is how many repairs one received NACK may cost, and
	// how many messages a NACK we send asks for: a request timer that
	// finds more gaps due sends several NACKs, at most maxNackBurst.
	maxNackRepairs = 32
	maxNackBurst   = maxNackSeqs / maxNackRepairs
)

// The repair budget: the repairs a member's NACKs make this node send
// cost it bytes (the repair datagrams' sizes) from a token bucket of
// repairBurst bytes, refilled at repairRate bytes per second. A requester
// whose budget is spent gets no repair until it refills; it asks again.
// On a LAN losing 5 % of 1000-byte messages at 57 000 messages/s (the
// virtual LAN's ceiling), a receiver needs about 2.9 MB/s of repairs.
const (
	repairRate  = 8 << 20 // bytes per second
	repairBurst = 2 << 20 // bytes
)

// delay is the one-way delay d to a peer that the SRM timers scale with:
// half the round-trip time, at least MinDelay (see Options) and at most a
// heartbeat (a LAN whose delay is longer is in trouble that slower repair
// would not help).
func (e *Engine) delay(id uint64) time.Duration {
	d := e.opt.MinDelay
	if p := e.peers[id]; p != nil && p.rtt/2 > d {
		d = min(p.rtt/2, max(e.opt.Heartbeat, e.opt.MinDelay))
	}
	return d
}

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// armRequest (re)arms the request timer of gap s: uniform in
// 2^b·[C1·d, (C1+C2)·d], d the delay to the source (SRM §III-B), b one
// less than the number of back-offs. SRM doubles the interval at the first
// back-off already, to leave a repair from far away time to arrive; on a
// LAN, where the source repairs at once, one undoubled interval (at least
// C1·min_delay) is many round trips, and not doubling it keeps a second
// round of recovery, after a lost NACK or repair, within a few milliseconds.
//
// A backed-off request (after our own request, or one heard from another
// member) waits at least as long as repairs have been taking to come back
// (st.answer) plus four times their deviation (st.answerV), as TCP's
// retransmission timer does, and at least twice that time (not doubled
// with each back-off: that cost a third of the throughput under 5 %
// loss at full speed): on a host too busy to answer within C1·d, asking again
// sooner only duplicates the repair already on its way. Only messages
// this node asked for once are timed (Karn's rule): a repair that
// answers the first request but arrives after the second would pass for
// a quick one. This is the adaptive part of SRM (§VI) reduced to what a
// LAN needs.
func (e *Engine) armRequest(now time.Time, st *stream, s uint64, g *gap) {
	d := e.delay(st.src)
	b := min(max(g.backoff, 1)-1, maxBackoff)
	lo, hi := scale(d, e.opt.C1)<<b, scale(d, e.opt.C1+st.c2)<<b
	if a := max(2*st.answer, st.answer+4*st.answerV); g.backoff > 0 && a > lo {
		lo, hi = a, a+max(hi-lo, a)
	}
	if g.backoff == 0 {
		lo, hi = e.slot(st, s, lo, hi)
	}
	g.gen++
	g.due = now.Add(e.uniform(lo, hi))
	if g.backoff > 0 {
		// Requests of the round that backed this one off, heard in the
		// next moments, must not back it off again. A fresh gap has had
		// no round: any request heard for it suppresses ours, however
		// soon after detection (a busy host detects late, and the first
		// request may follow at once).
		g.ignoreTill = now.Add(lo / 2)
	}
	e.timers.arm(timer{at: g.due, kind: requestTimer, src: st.src, inc: st.inc, seq: s, gen: g.gen})
}

// slot narrows a first request's interval [lo, hi] for message s of st to
// this node's slot in it. The interval is cut into one slot per member
// that may request (the peers other than the source, and this node), and
// the members take the slots in an order drawn afresh for each message
// from a hash of the message and their IDs, which every member computes
// alike: a random permutation. Each timer is uniform over the first
// eighth of its slot.
//
// SRM draws each timer uniformly over the whole interval; the first two
// of n such timers then fire on average a slot apart but often much
// closer, and a request suppresses only the timers that fire later than
// it takes to reach their nodes (on a busy LAN host, its scheduling
// delay: milliseconds). With slots, the first request of a loss every
// receiver shares goes out within an eighth of a slot of lo, and the
// second comes at least seven eighths of a slot after it. When only some members
// lost the message, the first of them is as soon, on average, as with
// uniform timers.
func (e *Engine) slot(st *stream, s uint64, lo, hi time.Duration) (time.Duration, time.Duration) {
	n := len(e.peers) // the others, the source among them when it is live
	if _, ok := e.peers[st.src]; !ok {
		n++ // …and this node
	}
	if n <= 1 || hi <= lo {
		return lo, hi
	}
	if e.toSource(st) {
		// Nobody hears this node's request but the source: there is no
		// suppression to take turns for. The first slot's timer.
		return lo, lo + (hi-lo)/time.Duration(8*n)
	}
	mine, rank := slotKey(st.src, s, e.opt.Self), 0
	for id := range e.peers {
		if id == st.src {
			continue
		}
		if k := slotKey(st.src, s, id); k < mine || (k == mine && id < e.opt.Self) {
			rank++
		}
	}
	width := (hi - lo) / time.Duration(n)
	lo += time.Duration(rank) * width
	return lo, lo + width/8
}

// slotKey orders the members for message s of src (slot): a hash, the
// finalizer of SplitMix64 over the three numbers.
func slotKey(src, s, id uint64) uint64 {
	x := src*0x9e3779b97f4a7c15 ^ s*0xbf58476d1ce4e5b9 ^ id*0x94d049bb133111eb
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Bounds of the adapted request spread C2, and the duplicate requests per
// loss it aims between. The ceiling grows with the group: spreadPerPeer
// per peer that may request, at least maxSpread.
const (
	minSpread, maxSpread = 1.0, 12.0
	spreadPerPeer        = 8.0
	dupsHigh, dupsLow    = 0.2, 0.07
)

// adapt is SRM's adaptive request timer (Floyd et al. 1997, §VI-A),
// reduced to its spread: after each recovered loss it learns how many
// requests beyond the first were made for it in its first round (attempt
// 0). Later rounds follow a lost or slow repair, which no spread of the
// first round prevents: counting them would only widen the spread, and
// with it every retry's interval, for nothing. When losses are shared (a
// sender's datagram lost for many receivers) duplicates appear and the
// spread widens until one request suppresses the others; when losses are
// independent there are none, and the spread narrows, which recovers
// sooner. The paper's target is about one request per loss.
//
// On a LAN every receiver is as far from the source as any other (the
// paper's star), and a request suppresses only the timers that fire more
// than its delivery delay after it: the timers are one slot apart (slot),
// a slot is the spread over the receivers, so the spread that keeps the
// duplicates down grows in proportion to the group, and so does the step
// it widens by, to get there within tens of losses. The ceiling allows a
// slot of 8·d (4 ms at the default min_delay), which covers the delivery
// delay of a busy host's scheduler on the virtual LAN (there, 12 processes
// on 2 cores: 0.5 ms at the median, 1.8 ms at p90). The first slot
// starts at the lower bound whatever the spread, so a wider spread costs
// a shared loss's recovery little.
func (e *Engine) adapt(st *stream, dups int) {
	st.dups += (float64(dups) - st.dups) / 4
	ceiling := max(maxSpread, spreadPerPeer*float64(len(e.peers)))
	switch {
	case st.dups > dupsHigh:
		st.c2 = min(st.c2+ceiling/48, ceiling)
	case st.dups < dupsLow:
		st.c2 = max(st.c2-0.05, minSpread)
	}
}

// lookup returns the stream of src at incarnation inc, or nil.
func (e *Engine) lookup(src, inc uint64) *stream {
	st := e.own
	if src != e.opt.Self {
		st = e.streams[src]
	}
	if st == nil || st.inc != inc {
		return nil
	}
	return st
}

// fireTimers runs every SRM timer due at now. Timers of gaps that were
// filled, or repairs that were cancelled or re-armed, are stale and skipped.
func (e *Engine) fireTimers(now time.Time) {
	for {
		t, ok := e.timers.popDue(now)
		if !ok {
			return
		}
		st := e.lookup(t.src, t.inc)
		if st == nil {
			continue
		}
		switch t.kind {
		case requestTimer:
			if g := st.gaps[t.seq]; g != nil && g.gen == t.gen {
				e.request(now, st)
			}
		case repairTimer:
			if r := st.repairs[t.seq]; r != nil && r.pending && r.gen == t.gen {
				e.sendRepair(now, st, t.seq, r, 0)
			}
		}
	}
}

// request multicasts a NACK for the gaps of st whose timers are due now
// or within d (they would fire in a moment anyway, and one datagram beats
// several), then backs each of them off (SRM §III-B: the next request for
// the same data waits twice as long, leaving time for the repair). A NACK
// asks for at most maxNackRepairs messages, what one NACK may cost its
// receivers; more gaps due take more NACKs, at most maxNackBurst.
func (e *Engine) request(now time.Time, st *stream) {
	horizon := now.Add(e.delay(st.src))
	var seqs []uint64
	for s, g := range st.gaps {
		if !g.due.After(horizon) {
			seqs = append(seqs, s)
		}
	}
	slices.Sort(seqs)
	asked := 0
	for n := 0; n < maxNackBurst && asked < len(seqs); n++ {
		chunk := seqs[asked:min(len(seqs), asked+maxNackRepairs)]
		ranges := toRanges(chunk, maxNackRanges) // maxNackRepairs ≤ maxNackRanges: all fit
		asked += countSeqs(ranges)
		e.nack(now, st, ranges)
	}
	// Gaps that did not fit these NACKs ask in the next ones, soon.
	for _, s := range seqs[asked:] {
		e.armRequest(now, st, s, st.gaps[s])
	}
}

// nack multicasts one NACK for ranges of st's gaps, and backs them off.
func (e *Engine) nack(now time.Time, st *stream, ranges []wire.SeqRange) {
	var attempt uint
	for _, r := range ranges {
		for s := r.First; s <= r.Last; s++ {
			attempt = max(attempt, st.gaps[s].backoff)
		}
	}
	env := wire.Envelope{Header: e.header(wire.KindNack)}
	env.Nack = wire.Nack{Source: st.src, SourceInc: st.inc, Attempt: uint64(attempt), Ranges: ranges}
	if e.toSource(st) {
		env.To = st.src
	}
	e.out = append(e.out, env)
	e.stats.NacksSent++
	for _, r := range ranges {
		for s := r.First; s <= r.Last; s++ {
			g := st.gaps[s]
			if g.backoff == 0 {
				g.requests++ // a request of the first round
			}
			g.backoff++
			g.again = !g.askedAt.IsZero()
			g.askedAt = now
			e.stats.NackedSeqs++
			e.armRequest(now, st, s, g)
		}
	}
}

// toSource reports whether requests for st's messages go to its source
// alone (Options.Directed): while the source is live. A source that is
// gone leaves its messages to the other holders, which every member's
// requests reach.
func (e *Engine) toSource(st *stream) bool {
	_, live := e.peers[st.src]
	return e.opt.Directed && live
}

// countSeqs is how many sequence numbers the ranges cover.
func countSeqs(ranges []wire.SeqRange) int {
	n := 0
	for _, r := range ranges {
		n += int(r.Last - r.First + 1)
	}
	return n
}

// toRanges compresses sorted sequence numbers into at most limit ranges.
func toRanges(seqs []uint64, limit int) []wire.SeqRange {
	var out []wire.SeqRange
	for _, s := range seqs {
		if n := len(out); n > 0 && out[n-1].Last+1 == s {
			out[n-1].Last = s
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, wire.SeqRange{First: s, Last: s})
	}
	return out
}

// onNack takes a request from peer p. Each requested message we miss too
// backs off our own request (suppression); each one we hold gets a repair
// timer unless one is armed or a repair was just sent (hold-down). Only a
// member of the view is answered, with at most maxNackRepairs repairs per
// NACK, within its repair budget.
func (e *Engine) onNack(now time.Time, p *peer, n *wire.Nack) {
	e.stats.NacksRecv++
	if !e.member(p.id, p.inc) {
		e.stats.NackRefused++ // a node a flush expects: it has nothing to ask of this view yet
		return
	}
	st := e.lookup(n.Source, n.SourceInc)
	if st == nil || len(n.Ranges) == 0 {
		return
	}
	if st == e.own {
		e.noteLoss(now) // a member lost some of ours: neither cut nor bulk for a while
	}
	// SRM also learns from a request that the data exists. Here requests
	// travel apart from the data, and may overtake what is still queued
	// in this node's socket: gaps are learned from data and session
	// messages, which keep their order.
	seqs, repairs := maxNackSeqs, maxNackRepairs
	for _, r := range n.Ranges {
		for s := r.First; s <= r.Last && seqs > 0; s++ {
			seqs--
			e.onRequest(now, p, st, s, n.Attempt, &repairs) // s < wire.MaxSeq: s++ cannot wrap
		}
	}
}

// onRequest takes p's request for message s of st. repairs is how many
// more repairs p's NACK may cost.
func (e *Engine) onRequest(now time.Time, p *peer, st *stream, s, attempt uint64, repairs *int) {
	if g := st.gaps[s]; g != nil {
		if attempt == 0 {
			g.requests++ // a request of the first round
		}
		if now.Before(g.ignoreTill) {
			return // already backed off for this round of requests
		}
		g.backoff++
		e.stats.NacksSuppressed++
		e.armRequest(now, st, s, g)
		return
	}
	if st.ring.get(s) == nil {
		if s <= st.stable {
			e.stats.NacksUnanswerable++
		} else {
			e.heardAhead(now, st, s)
		}
		return
	}
	source := st == e.own
	if source && e.opt.Directed {
		// The repair goes to p alone (Options.Directed): no other
		// member's request is answered by it, so none is held down.
		if e.spend(now, p, st, s, repairs) {
			e.sendRepair(now, st, s, nil, p.id)
		}
		return
	}
	r := st.repairs[s]
	if r == nil {
		r = &repairState{}
		st.repairs[s] = r
	}
	// Hold-down (SRM §III-B: after a repair, ignore requests for 3·d),
	// counted in request rounds instead of time. A request of a round
	// that a repair already answered was sent before its sender could
	// hear that repair: it is ignored, however late it arrives (and on a
	// busy LAN they arrive well after 3·d). A request of a later round
	// comes from a timer re-armed after the earlier request, so it means
	// the repair was lost: it is answered at once rather than left to yet
	// another round.
	if now.After(r.holdTill) {
		// Rounds are remembered for a while only, so that no request
		// (a forged attempt number, say) can hold a message down for good.
		r.seen, r.answered = 0, 0
	}
	r.seen = max(r.seen, attempt)
	if r.pending || attempt < r.answered {
		return
	}
	if _, live := e.peers[st.src]; !source && live && attempt < 2 {
		// While the source is alive, requests are its to answer; other
		// holders step in from the second retry on, which means its
		// repairs keep getting lost or it is too busy to send them. (SRM
		// lets every holder race the source with a timer; on a busy host
		// the source's repair often loses that race by scheduling delay
		// alone, and a first retry is usually answered by the source too:
		// both doubled the repairs.)
		return
	}
	if !e.spend(now, p, st, s, repairs) {
		return
	}
	if source {
		// The source answers at once. On a LAN it is as close to the
		// requester as anyone: one repair per loss.
		e.sendRepair(now, st, s, r, 0)
		return
	}
	r.pending = true
	r.gen++
	d := e.delay(p.id)
	at := now.Add(e.uniform(scale(d, e.opt.D1), scale(d, e.opt.D1+e.opt.D2)))
	e.timers.arm(timer{at: at, kind: repairTimer, src: st.src, inc: st.inc, seq: s, gen: r.gen})
}

// spend charges a repair of message s of st to requester p: one of its
// NACK's share and the repair's size from its budget. It reports false,
// charging nothing, when either is spent.
func (e *Engine) spend(now time.Time, p *peer, st *stream, s uint64, repairs *int) bool {
	en := st.ring.get(s)
	if en == nil {
		return false
	}
	cost := float64(wire.MaxHeader + wire.DataSize(&en.data) + wire.RepairExtra)
	if *repairs <= 0 || !p.repairs.take(now, repairRate, repairBurst, cost) {
		e.stats.RepairBudget++
		return false
	}
	*repairs--
	return true
}

// holdRounds is how long answered request rounds are remembered: a quarter
// of the suspect timeout, far longer than a request takes to cross a LAN.
func (e *Engine) holdRounds() time.Duration { return max(e.opt.SuspectTimeout/4, 3*e.opt.MinDelay) }

// sendRepair multicasts message s of st: it answers every request round
// seen so far (r). With to, it goes to that member alone, and answers
// its request only (r nil).
func (e *Engine) sendRepair(now time.Time, st *stream, s uint64, r *repairState, to uint64) {
	if r != nil {
		r.pending = false
		r.answered = max(r.answered, r.seen+1)
		r.holdTill = now.Add(e.holdRounds())
	}
	en := st.ring.get(s)
	if en == nil {
		return
	}
	env := wire.Envelope{Header: e.header(wire.KindRepair), To: to}
	env.Repair = wire.Repair{Source: st.src, SourceInc: st.inc, View: en.view, Data: en.data}
	e.out = append(e.out, env)
	e.stats.RepairsSent++
}

// onRepair takes a repair from peer p: it cancels our own pending repair of
// the same message (suppression), counts the request rounds seen so far as
// answered (hold-down), and delivers the message if we missed it. A
// repair is taken from the source itself or from a member of the view
// (SRM lets any holder repair), and only into a stream this node keeps,
// which is a member's (or an expected node's); from anyone else it is
// dropped and counted.
func (e *Engine) onRepair(now time.Time, p *peer, rep *wire.Repair) {
	e.stats.RepairsRecv++
	if p.id != rep.Source && !e.member(p.id, p.inc) {
		e.stats.ForeignData++
		return
	}
	st := e.lookup(rep.Source, rep.SourceInc)
	if st == nil {
		return
	}
	s := rep.Data.Seq
	if st.ring.fits(s) {
		r := st.repairs[s]
		if r == nil {
			r = &repairState{}
			st.repairs[s] = r
		}
		if r.pending {
			r.pending = false
			e.stats.RepairsSuppressed++
		}
		r.answered = max(r.answered, r.seen+1)
		r.holdTill = now.Add(e.holdRounds())
	}
	if st != e.own {
		e.receive(now, st, &rep.Data, rep.View, false)
	}
}
