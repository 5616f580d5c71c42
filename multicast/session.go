package multicast

import (
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// peer is what this node knows of another node it keeps state for: a
// member of the view, a node a flush proposes, or (without a view) any
// node it hears. Other nodes are strangers (strangers.go).
type peer struct {
	id        uint64
	inc       uint64
	addr      netip.AddrPort
	lastHeard time.Time     // local time of the last datagram from it
	echo      int64         // Sent of its last session message
	echoAt    time.Time     // local time that session message arrived
	rtt       time.Duration // round-trip time: the least of the recent samples; 0 = unknown
	samples   [rttSamples]time.Duration
	nsamples  int
	reports   map[uint64]report // what it has received in order, by source
	view      wire.ViewID       // the view its last session message was sent in
	presumed  bool              // a member not heard yet: presumed live since its view (SetMembers)
	restarted bool              // presumed, and replacing an older incarnation
	repairs   limiter           // the repair bytes its NACKs may cost (repairRate, repairBurst)
}

// report is a peer's receive state for one source incarnation.
type report struct{ inc, seq uint64 }

func (e *Engine) newPeer(id, inc uint64, addr netip.AddrPort, now time.Time) *peer {
	return &peer{id: id, inc: inc, addr: addr, lastHeard: now, reports: map[uint64]report{}}
}

// hear records a datagram from a node and returns its peer, or false when
// the datagram must be ignored: it is from another incarnation than the
// one kept, or from a stranger (which is only heard: hearStranger).
//
// A member's (or an expected node's) state is that of the incarnation
// membership named: a datagram in its name with another incarnation,
// newer or older, touches nothing, so that none can silence it. Without a
// view, a newer incarnation replaces the old one (the node restarted) if
// it is within MaxIncSkew of the clock.
func (e *Engine) hear(now time.Time, src netip.AddrPort, h *wire.Header) (*peer, bool) {
	if e.members != nil {
		inc, ok := e.admittedInc(h.From)
		switch {
		case !ok:
			e.hearStranger(now, src, h)
			return nil, false
		case h.Inc != inc:
			// A member's new incarnation waits until membership has
			// flushed the old one out of the view: its stream is still
			// needed. An older one is stale.
			e.stats.StaleInc++
			return nil, false
		}
	}
	p := e.peers[h.From]
	if (p == nil || h.Inc > p.inc) && future(now, h.Inc) {
		e.stats.FutureInc++
		return nil, false
	}
	delete(e.absent, h.From)
	switch {
	case p == nil:
		announced := false
		if s := e.strangers.get(h.From); s != nil {
			announced = s.announced && s.inc == h.Inc
			e.strangers.remove(s)
		}
		p = e.newPeer(h.From, h.Inc, src, now)
		e.peers[h.From] = p
		if !announced {
			e.events = append(e.events, Event{Kind: PeerSeen, Peer: h.From, Inc: h.Inc, Addr: src})
		}
	case h.Inc < p.inc:
		e.stats.StaleInc++
		return nil, false
	case h.Inc > p.inc:
		*p = *e.newPeer(h.From, h.Inc, src, now)
		e.events = append(e.events, Event{Kind: PeerSeen, Peer: h.From, Inc: h.Inc, Addr: src, Restarted: true})
	case p.presumed:
		p.presumed, p.addr = false, src
		e.events = append(e.events, Event{Kind: PeerSeen, Peer: h.From, Inc: h.Inc, Addr: src, Restarted: p.restarted})
	}
	p.lastHeard = now
	if st := e.streams[h.From]; st != nil {
		if st.inc != h.Inc {
			// The node restarted, perhaps with a clock set back: its old
			// incarnation's stream is over.
			e.dropStream(st)
		} else {
			st.lostAt = time.Time{}
		}
	}
	return p, true
}

// onSession takes a peer's session message (SRM §III-A). It measures the
// round-trip time from the echo of our own timestamp; learns from the
// sender's highest sequence number about its messages we missed (which is
// how the loss of a last message is found without new traffic); learns
// from the sender's receive reports what others hold (stability) and what
// exists that we have not seen; and skips what the sender no longer holds.
func (e *Engine) onSession(now time.Time, p *peer, s *wire.Session, view wire.ViewID) {
	p.echo, p.echoAt, p.view = s.Sent, now, view
	first := s.Seq + 1
	if s.Low > 0 {
		first = s.Low // chase what the source still holds
	}
	if st := e.streamFor(p.id, p.inc, first); st != nil {
		e.skipTo(now, st, s.Low)
		e.lower(st, s.Seq)
		e.detect(now, st, s.Seq)
	}
	for i := range s.Peers {
		ps := &s.Peers[i]
		if ps.ID == e.opt.Self {
			p.reports[ps.ID] = report{inc: ps.Inc, seq: ps.Seq}
			e.measure(now, p, ps)
		} else if other := e.streams[ps.ID]; other != nil {
			// Reports are kept only for streams this node has: a peer
			// cannot make it remember sources it never heard.
			p.reports[ps.ID] = report{inc: ps.Inc, seq: ps.Seq}
			if other.inc == ps.Inc {
				e.detect(now, other, ps.Seq)
			}
		}
	}
	// In a large group the other streams' stable points (which only free
	// memory) move at most every stabilityGap: with everyone sending,
	// working them out on every session message (members² reports each)
	// took most of a node's time. Tick does what waits. The node's own
	// stable point, its send window, moves at once.
	if len(e.peers) <= largeGroup || !now.Before(e.stabilityNext()) {
		e.updateStability(now)
	} else {
		e.refreshOwn()
		e.stabilityDue = true
	}
}

// A group of more peers than largeGroup works out the other streams'
// stable points at most a heartbeat divided by stabilityGap apart.
const (
	largeGroup   = 32
	stabilityGap = 16
)

// stabilityNext is when the other streams' stable points may move again
// in a large group.
func (e *Engine) stabilityNext() time.Time { return e.stabilityAt.Add(e.opt.Heartbeat / stabilityGap) }

// rttSamples is how many recent round-trip samples the estimate keeps.
const rttSamples = 8

// lower takes the source's own word for its highest sequence number: a
// higher one learned from others was false, and its gaps are closed.
func (e *Engine) lower(st *stream, seq uint64) {
	if seq >= st.high {
		return
	}
	st.high = max(seq, st.received())
	st.opened = min(st.opened, st.high)
	for s := range st.gaps {
		if s > st.high {
			delete(st.gaps, s)
		}
	}
}

// measure takes a round-trip sample from a peer's echo of our session
// message, rtt = now − echo − held (SRM §III-A), and keeps as the estimate
// the least of the last few samples. A sample is inflated by every queue
// the two messages waited in, on the way and in the sockets of hosts too
// busy to read (a node frozen for seconds reads session messages seconds
// old); the least recent sample is the delay of the network itself, which
// is what the SRM timers should scale with.
func (e *Engine) measure(now time.Time, p *peer, ps *wire.PeerState) {
	if ps.Inc != e.opt.Inc || ps.Echo == 0 {
		return
	}
	rtt := time.Duration(now.UnixNano() - ps.Echo - ps.Held)
	if rtt <= 0 {
		return
	}
	p.samples[p.nsamples%rttSamples] = rtt
	p.nsamples++
	p.rtt = rtt
	for _, s := range p.samples[:min(p.nsamples, rttSamples)] {
		p.rtt = min(p.rtt, s)
	}
}

// sendSession queues a session message: our highest and lowest held
// sequence numbers, and for every stream we receive, what we hold in order
// and the echo of its source's last session timestamp. Entries are in ID
// order so that the output is deterministic. A large group's entries are
// spread over as many datagrams as they need, each a whole session message.
func (e *Engine) sendSession(now time.Time) {
	ids := e.streamIDs()
	per := e.peersPerSession()
	for first := 0; first == 0 || first < len(ids); first += per {
		env := e.session(now)
		chunk := ids[first:min(first+per, len(ids))]
		env.Session.Peers = make([]wire.PeerState, 0, len(chunk))
		for _, id := range chunk {
			st := e.streams[id]
			if st.unplaced {
				// Not placed yet: what it holds may begin after messages
				// the view holds it to, which its source must keep.
				continue
			}
			env.Session.Peers = append(env.Session.Peers, e.report(now, st))
		}
		e.out = append(e.out, env)
		e.stats.SessionsSent++
	}
}

// session is a session message of this node's own stream, without the
// receive reports.
func (e *Engine) session(now time.Time) wire.Envelope {
	env := wire.Envelope{Header: e.header(wire.KindSession)}
	env.Session.Sent = now.UnixNano()
	env.Session.Seq = e.own.received()
	env.Session.Low = e.own.stable + 1
	return env
}

// report is this node's receive report of st for a session message, with
// the echo of its source's last session message; st counts it as told.
func (e *Engine) report(now time.Time, st *stream) wire.PeerState {
	ps := wire.PeerState{ID: st.src, Inc: st.inc, Seq: st.received()}
	st.reported, st.gotTold = ps.Seq, st.got
	if p := e.peers[st.src]; p != nil && p.inc == st.inc && p.echo != 0 {
		ps.Echo, ps.Held = p.echo, int64(now.Sub(p.echoAt))
	}
	return ps
}

// peersPerSession is how many peer entries one session datagram can carry
// at worst: a header, three session fields and the list header, then
// entries of at most 1+5·9 bytes.
func (e *Engine) peersPerSession() int { return sessionEntries(e.opt.DatagramSize) }

func sessionEntries(datagramSize int) int {
	const fixed, entry = wire.MaxHeader + 3*9 + 5, 1 + 5*9
	return max(1, (datagramSize-fixed)/entry)
}

// SessionDatagrams is how many datagrams one session message of a member
// of an idle group of n members takes at most (an entry per other
// member's stream): what every member sends each heartbeat. An idle
// group's traffic is this per member and heartbeat, no more (docs/design.md,
// "The cost of a group").
func SessionDatagrams(n, datagramSize int) int {
	return max(1, (n-1+sessionEntries(datagramSize)-1)/sessionEntries(datagramSize))
}

// updateStability moves every stream's stable point up to what all live
// peers report holding, and frees what is stable. For our own stream every
// live peer counts, so a peer that has not reported yet holds the window;
// for a remote stream only peers that report that source count (one that
// cannot hear the source will never need it from us).
func (e *Engine) updateStability(now time.Time) {
	e.stabilityAt, e.stabilityDue = now, false
	e.refreshOwn()
	for _, id := range e.streamIDs() { // in order: openGaps draws randomness
		st := e.streams[id]
		// A stream all stable cannot move: skip the peers' reports (a
		// session message would otherwise cost members² lookups, most
		// of a large group's time).
		if st.stable >= st.received() {
			continue
		}
		if e.members != nil && !e.receiver(st.src) {
			// A source outside this node's view (a node that a flush
			// expects, whose view this node has not installed yet):
			// who else must hold its messages is not known here, and
			// this node may be the one a member asks for them.
			continue
		}
		if e.advanceStable(st, e.minReport(st, false)) {
			e.openGaps(now, st) // the ring reaches further now
		}
	}
}

// refreshOwn moves our own stream's stable point (and so the send window)
// up to what every live peer reports; alone, everything is stable. A
// window that moves is not held: the lagging clock starts again (a full
// window under load is flow control; only one that no peer lets move for
// a suspect timeout names the peers holding it).
func (e *Engine) refreshOwn() {
	if e.own.stable < e.own.received() && e.advanceStable(e.own, e.minReport(e.own, true)) {
		e.fullSince, e.lagReported = time.Time{}, false
	}
}

func (e *Engine) minReport(st *stream, strict bool) uint64 {
	m := st.received()
	for _, p := range e.absent {
		if r, ok := p.reports[st.src]; ok && r.inc == st.inc && p.id != st.src {
			m = min(m, r.seq)
		} else if strict && p.id != st.src {
			return st.stable
		}
	}
	for _, p := range e.peers {
		if p.id == st.src || !e.receiver(p.id) {
			continue
		}
		if r, ok := p.reports[st.src]; ok && r.inc == st.inc {
			m = min(m, r.seq)
			continue
		}
		// A member that reports nothing of this source's incarnation (a
		// joiner starts the stream at the view; a member that has not
		// heard a restarted source yet still reports its older one) may
		// miss all of it: what this node holds may be the only copy left
		// for it once the source is gone, and a flush would wait for it
		// for ever.
		return st.stable
	}
	return m
}

// advanceStable moves st's stable point up to m and reports whether it moved.
func (e *Engine) advanceStable(st *stream, m uint64) bool {
	if m <= st.stable {
		return false
	}
	st.stable = m
	st.ring.advance(m + 1)
	for s := range st.repairs {
		if s <= m {
			delete(st.repairs, s)
		}
	}
	return true
}

// expirePeers drops the peers silent for the suspect timeout, in ID order;
// they no longer hold back stability.
func (e *Engine) expirePeers(now time.Time) {
	lost := false
	for _, id := range e.peerIDs() {
		p := e.peers[id]
		if silent := now.Sub(p.lastHeard); silent >= e.lossTimeout() {
			delete(e.peers, id)
			if e.members != nil && e.members[id] == p.inc {
				// Still a member until a view excludes it: what it
				// reported still holds back stability, or a flush could
				// find what it lacks dropped everywhere.
				e.absent[id] = p
			}
			lost = true
			e.events = append(e.events, Event{Kind: PeerLost, Peer: id, Inc: p.inc, Addr: p.addr, Silent: silent})
			if st := e.streams[id]; st != nil {
				e.orphan(now, st)
			}
		}
	}
	for _, id := range e.streamIDs() {
		// A member's stream stays until membership forgets it: a flush
		// may need what this node holds of it.
		if st := e.streams[id]; !st.lostAt.IsZero() && now.Sub(st.lostAt) >= forgetAfter*e.opt.SuspectTimeout && !(e.members != nil && e.receiver(id)) {
			e.dropStream(st)
		}
	}
	e.expireStrangers(now)
	e.expireExpected(now)
	if lost {
		e.updateStability(now)
	}
}

// checkLagging reports the peers that have held our send window full, and
// still, for a suspect timeout: those whose receive report of our stream
// is the lowest. By design, a member that stays too far behind is reported, then
// suspected; the report is this layer's part, the suspicion membership's.
func (e *Engine) checkLagging(now time.Time) {
	if e.Unstable() < e.limit(wire.FIFO) {
		e.fullSince, e.lagReported = time.Time{}, false
		return
	}
	if e.fullSince.IsZero() {
		e.fullSince = now
	}
	if e.lagReported || now.Sub(e.fullSince) < e.opt.SuspectTimeout {
		return
	}
	e.lagReported = true
	for _, id := range e.peerIDs() {
		r, ok := e.peers[id].reports[e.opt.Self]
		seq := r.seq
		if !ok || r.inc != e.opt.Inc {
			seq = 0
		}
		if seq <= e.own.stable {
			e.events = append(e.events, Event{Kind: PeerLagging, Peer: id, Inc: e.peers[id].inc,
				Behind: e.own.received() - seq, Held: now.Sub(e.fullSince)})
		}
	}
}

// forgetAfter is how many suspect timeouts a lost source's stream is kept,
// in case the source comes back (a frozen process thawing).
const forgetAfter = 10

// orphan stops requesting the messages of a source that was lost: no one
// may be left to repair them, and requests would go on for ever. Should it
// come back, its next session message reopens the gaps.
func (e *Engine) orphan(now time.Time, st *stream) {
	clear(st.gaps)
	st.opened = st.received()
	st.lostAt = now
}

// dropStream forgets a source's stream, reporting what it knew existed
// and will now never deliver.
func (e *Engine) dropStream(st *stream) {
	if st.high > st.received() && st.started {
		n := st.high - st.received()
		e.stats.Skipped += n
		e.events = append(e.events, Event{Kind: StreamSkipped, Peer: st.src, Inc: st.inc, From: st.next, Skipped: n})
	}
	delete(e.streams, st.src)
	e.streamsChanged()
}

func (e *Engine) peerIDs() []uint64 {
	ids := make([]uint64, 0, len(e.peers))
	for id := range e.peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// streamIDs lists the sources of the streams in increasing order. The
// list is kept until a stream comes or goes (streamsChanged); a caller
// may go on with the list it got while streams are dropped, for the next
// list is a new one.
func (e *Engine) streamIDs() []uint64 {
	if e.sortedStreams != nil {
		return e.sortedStreams
	}
	ids := make([]uint64, 0, len(e.streams))
	for id := range e.streams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	e.sortedStreams = ids
	return ids
}

// streamsChanged forgets the sorted list of streams.
func (e *Engine) streamsChanged() { e.sortedStreams = nil }
