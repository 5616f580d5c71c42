package node

import (
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/membership"
)

// The per-peer fallback of the multicast transport (docs/design.md,
// "Per-peer fallback"): a switch with IGMP snooping whose querier is gone
// stops forwarding the group to some ports while unicast still passes.
// Every node then also has a unicast socket on its interface's address
// and the group's port (Options.Path), so that a member's unicast address
// is the address its multicast comes from. Every two heartbeats a node
// sends its latest beacon by unicast to each node it hears: a path probe.
// A node that hears a peer's probes but not its multicast asks the peer,
// with a sealed path datagram (wire.KindPath), to send to it by unicast
// as well; the peer then sends it every datagram by unicast too, until
// the requests stop for a hold time (multicast came back, and the node
// said so, or it went away). A probe that arrives while the peer's
// multicast is heard is a copy, dropped before the Core.
type fallback struct {
	t       pathTransport
	every   time.Duration // between path probes: two heartbeats
	stale   time.Duration // multicast from a peer not heard this long is not heard: three heartbeats
	hold    time.Duration // a peer's request lasts this long: eight heartbeats
	probeAt time.Time

	version  uint64 // of the Core's peer set, as last applied
	applied  bool
	scratch  []membership.PeerAddr
	dscratch []netip.AddrPort
	known    map[netip.AddrPort]*peerPath // the nodes the Core hears, by address
	addrs    []netip.AddrPort             // known's keys, sorted
	out      []netip.AddrPort             // peers that asked for unicast, sorted: every datagram goes to them too
	beacon   []byte
	fresh    bool

	lastSrc netip.AddrPort // the last multicast source noted (noteMulticast)
	lastAt  *peerPath
	due     bool // the loop drained every socket before this turn: a probe round may judge the paths

	probes, requests, copies, changes uint64
}

// peerPath is what a node knows of the paths to and from one peer.
type peerPath struct {
	id      uint64    // its node ID, once a path note named it
	inView  bool      // in a view (this node's, or another: a node to merge, or the group a joiner joins): it multicasts a session message every heartbeat
	mcastAt time.Time // its last multicast datagram
	uniAt   time.Time // its last unicast datagram
	deaf    bool      // this node hears it only by unicast, and asked it to send so
	rounds  int       // probe rounds in a row that heard it by unicast and not by multicast
	outTill time.Time // it asked this node to send to it by unicast, until then; zero: it did not
}

// deafRounds is how many probe rounds in a row must hear a member by
// unicast and not by multicast before the node asks it for unicast: one
// round can be fooled by a loop that ran late and took the unicast socket's
// batch before the group's (the rounds run only after the loop drained
// every socket, and this asks for the silence twice). Three heartbeats of
// silence and two rounds: five heartbeats (250 ms on the lan profile,
// 100 ms on the local), which leaves the peer time to answer within the
// suspect timeout.
const deafRounds = 2

// pathTransport is what the fallback needs of OpenPath's sockets.
type pathTransport interface {
	UnicastTransport
	// WriteToNext sends every datagram to each of dests, at the port
	// after theirs: where the peers read path datagrams.
	WriteToNext(datagrams [][]byte, dests []netip.AddrPort) error
}

func newFallback(t pathTransport, heartbeat time.Duration) *fallback {
	return &fallback{t: t, every: 2 * heartbeat, stale: 3 * heartbeat, hold: 8 * heartbeat, known: map[netip.AddrPort]*peerPath{}}
}

// noteMulticast records a datagram from src read on the group's socket.
// It looks src up only when it differs from the last one: a batch is
// mostly one sender's.
func (f *fallback) noteMulticast(src netip.AddrPort, now time.Time) {
	if src != f.lastSrc {
		f.lastSrc, f.lastAt = src, f.known[src]
	}
	if f.lastAt != nil {
		f.lastAt.mcastAt = now
	}
}

// admitUnicast decides about a datagram from src read on the unicast
// socket: false for a copy of what the group's socket brings (src's
// multicast is heard), which is dropped; true for one the Core must take.
func (f *fallback) admitUnicast(src netip.AddrPort, now time.Time) bool {
	p := f.known[src]
	if p == nil {
		return true // a node not heard yet: maybe one that hears nothing of the group
	}
	p.uniAt = now
	if now.Sub(p.mcastAt) < f.stale {
		f.copies++
		return false
	}
	return true
}

// turn follows the Core after a turn: its peer set, the path notes that
// arrived, the beacon, and a probe round when one is due.
func (f *fallback) turn(n *Node, rd *Ready, now time.Time) {
	if v := n.core.PeersVersion(); !f.applied || v != f.version {
		f.applyPeers(n, now)
	}
	for _, pn := range rd.Paths {
		f.note(n, pn, now)
	}
	if rd.Beacon != nil {
		f.beacon = append(f.beacon[:0], rd.Beacon...)
		f.fresh = true
	}
	if f.due && !now.Before(f.probeAt) {
		f.probe(n, now)
	}
	f.due = false
}

// applyPeers follows the Core's peer set: new peers count as heard by
// multicast from now (no fallback before they had a chance to be), peers
// forgotten lose their fallback.
func (f *fallback) applyPeers(n *Node, now time.Time) {
	f.scratch, f.version = n.core.PeerAddrs(f.scratch[:0])
	f.applied = true
	self := n.o.Transport.LocalAddr()
	d := f.dscratch[:0]
	inView := map[netip.AddrPort]bool{}
	for _, p := range f.scratch {
		if a := p.Addr; a.IsValid() && a != self {
			d = append(d, a)
			inView[a] = inView[a] || p.Member || p.InView
		}
	}
	d = sortedAddrs(d)
	f.dscratch = d
	for a, p := range f.known {
		if _, in := slices.BinarySearchFunc(d, a, netip.AddrPort.Compare); !in {
			if !p.outTill.IsZero() {
				f.logPath(n, a, p, "out", "multicast", "no longer heard")
			}
			delete(f.known, a)
		}
	}
	for _, a := range d {
		p := f.known[a]
		if p == nil {
			p = &peerPath{mcastAt: now}
			f.known[a] = p
		}
		p.inView = inView[a]
	}
	f.addrs = append(f.addrs[:0], d...)
	f.lastSrc, f.lastAt = netip.AddrPort{}, nil
	f.rebuildOut()
}

// note takes a path note: a peer asks for unicast, or says it no longer
// needs it. Only a node the Core hears, at the address it hears it from,
// is taken at its word: a note cannot send this node's traffic anywhere
// else.
func (f *fallback) note(n *Node, pn PathNote, now time.Time) {
	p := f.known[pn.Addr]
	if p == nil {
		return
	}
	p.id = pn.From
	switch {
	case pn.Unicast && p.outTill.IsZero():
		p.outTill = now.Add(f.hold)
		f.logPath(n, pn.Addr, p, "out", "unicast", "it does not hear this node's multicast")
		f.rebuildOut()
	case pn.Unicast:
		p.outTill = now.Add(f.hold)
	case !p.outTill.IsZero():
		p.outTill = time.Time{}
		f.logPath(n, pn.Addr, p, "out", "multicast", "it hears this node's multicast again")
		f.rebuildOut()
	}
}

// rebuildOut lists the peers that get every datagram by unicast too.
func (f *fallback) rebuildOut() {
	f.out = f.out[:0]
	for _, a := range f.addrs {
		if !f.known[a].outTill.IsZero() {
			f.out = append(f.out, a)
		}
	}
}

// probe is a round: the beacon to every peer by unicast (once per beacon),
// a request to each peer heard only by unicast, and the end of the
// requests that stopped.
func (f *fallback) probe(n *Node, now time.Time) {
	f.probeAt = now.Add(f.every)
	if f.fresh && len(f.beacon) > 0 && len(f.addrs) > 0 {
		f.fresh = false
		f.probes += uint64(len(f.addrs))
		n.sendFailed(f.t.WriteTo([][]byte{f.beacon}, f.addrs))
	}
	changed := false
	for _, a := range f.addrs {
		p := f.known[a]
		// Only the silence on multicast of a node in a view says
		// anything: it sends a session message every heartbeat, where a
		// joiner may be quiet. Nodes of another view count too: a joiner
		// that hears nothing of the group by multicast, or a merge whose
		// other side it does not reach, goes by unicast.
		mcastGone := p.inView && now.Sub(p.mcastAt) >= f.stale
		uniHeard := now.Sub(p.uniAt) < 2*f.every+f.stale
		if mcastGone && uniHeard {
			p.rounds++
		} else {
			p.rounds = 0
		}
		switch {
		case p.rounds >= deafRounds:
			if !p.deaf {
				p.deaf = true
				f.logPath(n, a, p, "in", "unicast", "its multicast does not reach this node; its unicast does")
			}
			f.ask(n, a, true)
		case p.deaf && !mcastGone:
			p.deaf = false
			f.logPath(n, a, p, "in", "multicast", "its multicast reaches this node again")
			f.ask(n, a, false)
		}
		if !p.outTill.IsZero() && now.After(p.outTill) {
			p.outTill = time.Time{}
			changed = true
			f.logPath(n, a, p, "out", "multicast", "its requests stopped")
		}
	}
	if changed {
		f.rebuildOut()
	}
}

// ask sends peer a a path datagram: send to me by unicast (or not).
func (f *fallback) ask(n *Node, a netip.AddrPort, unicast bool) {
	if d := n.core.PathDatagram(unicast); d != nil {
		f.requests++
		n.sendFailed(f.t.WriteToNext([][]byte{d}, []netip.AddrPort{a}))
	}
}

// write sends a turn's datagrams by unicast to the peers that asked.
func (f *fallback) write(n *Node, out [][]byte) {
	if len(out) == 0 || len(f.out) == 0 {
		return
	}
	n.sendFailed(f.t.WriteTo(out, f.out))
}

// logPath logs peer.path: how this node sends to a peer (dir "out") or
// hears it (dir "in") changed.
func (f *fallback) logPath(n *Node, a netip.AddrPort, p *peerPath, dir, path, why string) {
	f.changes++
	e := n.log.Info().Str(logs.EventKey, logs.PeerPath).Str(logs.AddrKey, a.String()).
		Str(logs.DirKey, dir).Str(logs.PathKey, path)
	if p.id != 0 {
		e = e.Uint64(logs.PeerKey, p.id)
	}
	e.Msgf("%s %s: %s", pathVerb(dir, path), a, why)
}

func pathVerb(dir, path string) string {
	switch {
	case dir == "out" && path == "unicast":
		return "sending by unicast too to"
	case dir == "out":
		return "sending by multicast alone to"
	case path == "unicast":
		return "hearing by unicast only"
	}
	return "hearing by multicast again"
}

// The counters of node.stats; zero without the fallback (f nil).
func (f *fallback) outCount() uint64 {
	if f == nil {
		return 0
	}
	return uint64(len(f.out))
}

func (f *fallback) deafCount() uint64 {
	if f == nil {
		return 0
	}
	k := uint64(0)
	for _, p := range f.known {
		if p.deaf {
			k++
		}
	}
	return k
}

func (f *fallback) counts() (probes, requests, copies, changes uint64) {
	if f == nil {
		return 0, 0, 0, 0
	}
	return f.probes, f.requests, f.copies, f.changes
}
