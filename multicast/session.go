package multicast

import (
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// peer is what this node knows of another member it hears.
type peer struct {
	id        uint64
	inc       uint64
	addr      netip.AddrPort
	lastHeard time.Time     // local time of the last datagram from it
	echo      int64         // Sent of its last session message
	echoAt    time.Time     // local time that session message arrived
	rtt       time.Duration // smoothed round-trip time; 0 = unknown
}

// hear records a datagram from a peer and returns the peer, or false when
// the datagram is from an older incarnation and must be ignored. A newer
// incarnation replaces the old one (the node restarted).
func (e *Engine) hear(now time.Time, src netip.AddrPort, h *wire.Header) (*peer, bool) {
	p := e.peers[h.From]
	switch {
	case p == nil:
		p = &peer{id: h.From, inc: h.Inc, addr: src}
		e.peers[h.From] = p
		e.events = append(e.events, Event{Kind: PeerSeen, Peer: h.From, Inc: h.Inc, Addr: src})
	case h.Inc < p.inc:
		e.stats.StaleInc++
		return nil, false
	case h.Inc > p.inc:
		*p = peer{id: h.From, inc: h.Inc, addr: src}
		e.events = append(e.events, Event{Kind: PeerSeen, Peer: h.From, Inc: h.Inc, Addr: src, Restarted: true})
	}
	p.lastHeard = now
	return p, true
}

// onSession takes a peer's session message: it remembers the timestamp to
// echo back, and if the message echoes ours, updates the round-trip time
// (SRM §III-A: rtt = now − echo − held).
func (e *Engine) onSession(now time.Time, p *peer, s *wire.Session) {
	p.echo, p.echoAt = s.Sent, now
	for i := range s.Peers {
		ps := &s.Peers[i]
		if ps.ID != e.opt.Self || ps.Inc != e.opt.Inc || ps.Echo == 0 {
			continue
		}
		rtt := time.Duration(now.UnixNano() - ps.Echo - ps.Held)
		if rtt > 0 {
			p.rtt = smooth(p.rtt, rtt)
		}
	}
}

// smooth is the usual EWMA with gain 1/8 (as TCP's SRTT, RFC 6298).
func smooth(old, sample time.Duration) time.Duration {
	if old == 0 {
		return sample
	}
	return old + (sample-old)/8
}

// sendSession queues a session message listing every live peer, in ID order
// so that the output is deterministic.
func (e *Engine) sendSession(now time.Time) {
	env := wire.Envelope{Header: e.header(wire.KindSession)}
	env.Session.Sent = now.UnixNano()
	ids := e.peerIDs()
	env.Session.Peers = make([]wire.PeerState, 0, len(ids))
	for _, id := range ids {
		p := e.peers[id]
		ps := wire.PeerState{ID: id, Inc: p.inc}
		if p.echo != 0 {
			ps.Echo, ps.Held = p.echo, int64(now.Sub(p.echoAt))
		}
		env.Session.Peers = append(env.Session.Peers, ps)
	}
	e.out = append(e.out, env)
	e.stats.SessionsSent++
}

// expirePeers drops the peers silent for the suspect timeout, in ID order.
func (e *Engine) expirePeers(now time.Time) {
	for _, id := range e.peerIDs() {
		p := e.peers[id]
		if silent := now.Sub(p.lastHeard); silent >= e.opt.SuspectTimeout {
			delete(e.peers, id)
			e.events = append(e.events, Event{Kind: PeerLost, Peer: id, Inc: p.inc, Addr: p.addr, Silent: silent})
		}
	}
}

func (e *Engine) peerIDs() []uint64 {
	ids := make([]uint64, 0, len(e.peers))
	for id := range e.peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
