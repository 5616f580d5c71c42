package node

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/membership"
)

// UnicastTransport is what the loop needs of a transport that sends one
// datagram per destination (multicast.Unicast): it keeps the
// destinations of WriteBatch up to date, and sends probes to nodes
// outside them.
type UnicastTransport interface {
	// SetDestinations replaces the addresses WriteBatch sends to.
	SetDestinations(dests []netip.AddrPort)
	// WriteTo sends every datagram to each of dests.
	WriteTo(datagrams [][]byte, dests []netip.AddrPort) error
	// WriteToNext sends every datagram to each of dests at the port
	// after theirs, the repair socket's.
	WriteToNext(datagrams [][]byte, dests []netip.AddrPort) error
}

// maxLearned bounds the addresses a unicast node remembers of nodes it
// heard and no longer hears, to probe them after a partition heals.
const maxLearned = 256

// unicast is the loop's part of the unicast transport (docs/design.md,
// "Transports"): the destinations of every datagram are the
// nodes the membership layer hears (PeerAddrs); the listed peers and the
// nodes heard before that it no longer hears get the node's latest beacon
// (a session, join or merge datagram) once per probe interval, so that
// they hear it, and answer.
type unicast struct {
	t        UnicastTransport
	self     netip.AddrPort
	version  uint64 // of the Core's peer set, as last applied
	applied  bool
	scratch  []membership.PeerAddr
	dscratch []netip.AddrPort
	dests    []netip.AddrPort          // sorted, without self
	listed   []netip.AddrPort          // the peers list, resolved, without self
	learned  map[uint64]netip.AddrPort // the address each node was last heard at, at most maxLearned
	order    []uint64                  // learned's IDs, the one heard longest ago first
	beacon   []byte                    // a copy of the latest beacon
	fresh    bool                      // beacon has not been probed with yet
	every    time.Duration             // the probe interval
	probeAt  time.Time
	outside  []netip.AddrPort // scratch: the probe's targets
	only     bool             // peers_only: drop datagrams from others
	allowed  map[netip.AddrPort]bool
	names    []peerName       // entries of the list that are host names
	literal  []netip.AddrPort // entries of the list that are addresses
	resolved chan resolution
	again    chan struct{} // asks the resolver to look the names up again
	askedAt  time.Time

	one [1]netip.AddrPort // scratch: a directed datagram's destination

	probes   uint64 // beacons sent to nodes outside the destinations
	directed uint64 // datagrams sent to one node alone (split)
	unlisted uint64 // datagrams dropped by peers_only
}

// peerName is an entry of the peers list that names a host.
type peerName struct {
	host string
	port uint16
}

// probeInterval is how often a unicast node probes the nodes outside its
// destinations: five heartbeats (250 ms on a LAN), as Corosync's merge
// detection probes every listed node a few times a second.
func probeInterval(heartbeat time.Duration) time.Duration { return 5 * heartbeat }

// newUnicast sets up the unicast part of a node whose transport is t. The
// peers list's addresses take effect at once; its names are looked up by
// a goroutine of their own (startResolver).
func newUnicast(t UnicastTransport, self netip.AddrPort, cfg config.Config) *unicast {
	u := &unicast{t: t, self: self, every: probeInterval(cfg.Heartbeat.D()), only: cfg.PeersOnly, learned: map[uint64]netip.AddrPort{},
		resolved: make(chan resolution, 1), again: make(chan struct{}, 1)}
	_, port, _ := net.SplitHostPort(cfg.Addr)
	defPort, _ := strconv.ParseUint(port, 10, 16)
	var literal []netip.AddrPort
	for _, p := range cfg.Peers {
		host, ps, err := net.SplitHostPort(p)
		pn := defPort
		if err != nil {
			host = p
		} else if v, err := strconv.ParseUint(ps, 10, 16); err == nil {
			pn = v
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			literal = append(literal, netip.AddrPortFrom(ip, uint16(pn)))
			continue
		}
		u.names = append(u.names, peerName{host, uint16(pn)})
	}
	u.literal = literal
	u.setListed(literal)
	return u
}

// resolution is one lookup of the peers list's names: the whole list's
// addresses, and what failed.
type resolution struct {
	addrs  []netip.AddrPort
	failed []string // "name: why"
}

// setListed replaces the resolved peers list.
func (u *unicast) setListed(addrs []netip.AddrPort) {
	u.listed = slices.DeleteFunc(slices.Clone(addrs), func(a netip.AddrPort) bool { return a == u.self })
	u.listed = sortedAddrs(u.listed)
	u.allow()
}

// allow rebuilds what peers_only lets in: the listed addresses and the
// nodes heard (members, and nodes heard because they are listed).
func (u *unicast) allow() {
	if !u.only {
		return
	}
	u.allowed = make(map[netip.AddrPort]bool, len(u.listed)+len(u.dests))
	for _, a := range u.listed {
		u.allowed[a] = true
	}
	for _, a := range u.dests {
		u.allowed[a] = true
	}
}

// startResolver looks up the host names of the peers list now, and again
// whenever the loop asks (a name none of whose addresses is heard), at
// most every few seconds, until ctx ends. The literal addresses travel
// with every result, so each replaces the list whole. It touches nothing
// of the loop's: it only sends on u.resolved.
func (u *unicast) startResolver(ctx context.Context) {
	if len(u.names) == 0 {
		return
	}
	literal := slices.Clone(u.literal)
	names := slices.Clone(u.names)
	go func() {
		for {
			r := resolution{addrs: slices.Clone(literal)}
			for _, n := range names {
				lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				ips, err := net.DefaultResolver.LookupNetIP(lctx, "ip4", n.host)
				cancel()
				if err != nil {
					r.failed = append(r.failed, err.Error())
				}
				for _, ip := range ips {
					r.addrs = append(r.addrs, netip.AddrPortFrom(ip.Unmap(), n.port))
				}
			}
			select {
			case <-u.resolved: // an older result nobody took: replace it
			default:
			}
			u.resolved <- r
			select {
			case <-ctx.Done():
				return
			case <-u.again:
			}
		}
	}()
}

// resolveEvery is how often the loop asks for the names again while one
// of them names no node it hears.
const resolveEvery = 5 * time.Second

// turn follows the Core after a turn: the destinations when the set of
// nodes it hears changed, the beacon, and a probe round when one is due.
// It returns the probe round's send error.
func (u *unicast) turn(c *Core, rd *Ready, now time.Time, warn func(key, msg string)) error {
	select {
	case r := <-u.resolved:
		u.setListed(r.addrs)
		for _, f := range r.failed {
			warn("peer_unresolved", "a name in peers does not resolve (looked up again every few seconds while it names no node heard): "+f)
		}
	default:
	}
	if v := c.PeersVersion(); !u.applied || v != u.version {
		u.applyPeers(c)
	}
	if rd.Beacon != nil {
		u.beacon = append(u.beacon[:0], rd.Beacon...)
		u.fresh = true
	}
	if !now.Before(u.probeAt) {
		return u.probe(now)
	}
	return nil
}

// applyPeers makes the Core's peer set the destinations: the nodes it
// heard, at the addresses it heard them from, and the members of its view
// it has not heard (yet, or since it forgot them in a partition) at the
// address this node last heard them at. Without the latter, a view that
// merges two sides would have members that send nothing to each other
// until a probe round, and suspect each other first.
func (u *unicast) applyPeers(c *Core) {
	u.scratch, u.version = c.PeerAddrs(u.scratch[:0])
	u.applied = true
	d := u.dscratch[:0]
	for _, p := range u.scratch {
		a := p.Addr
		switch {
		case a.IsValid():
			u.learn(p.ID, a)
		case p.Member:
			a = u.learned[p.ID]
		}
		if a.IsValid() && a != u.self {
			d = append(d, a)
		}
	}
	d = sortedAddrs(d)
	u.dscratch = d
	if slices.Equal(d, u.dests) {
		return
	}
	u.dests = append(u.dests[:0], d...)
	u.t.SetDestinations(u.dests)
	u.allow()
}

// sortedAddrs sorts d and drops its repeats, in place: the destination
// sets are kept so, for binary search and comparison.
func sortedAddrs(d []netip.AddrPort) []netip.AddrPort {
	slices.SortFunc(d, netip.AddrPort.Compare)
	return slices.Compact(d)
}

// learn remembers that node id was heard at a, as the newest, forgetting
// the one heard longest ago past maxLearned.
func (u *unicast) learn(id uint64, a netip.AddrPort) {
	if _, ok := u.learned[id]; ok {
		u.order = slices.DeleteFunc(u.order, func(x uint64) bool { return x == id })
	} else if len(u.order) == maxLearned {
		delete(u.learned, u.order[0])
		u.order = slices.Delete(u.order, 0, 1)
	}
	u.learned[id] = a
	u.order = append(u.order, id)
}

// probe sends the latest beacon to every listed or learned node outside
// the destinations, once per beacon: a node that received it already
// would drop a second copy as a replay.
func (u *unicast) probe(now time.Time) error {
	u.probeAt = now.Add(u.every)
	if !u.fresh || len(u.beacon) == 0 {
		return nil
	}
	u.outside = u.outside[:0]
	unheardName := false
	for _, a := range u.listed {
		if _, in := slices.BinarySearchFunc(u.dests, a, netip.AddrPort.Compare); !in {
			u.outside = append(u.outside, a)
			unheardName = unheardName || len(u.names) > 0
		}
	}
	for _, id := range u.order {
		a := u.learned[id]
		_, in := slices.BinarySearchFunc(u.dests, a, netip.AddrPort.Compare)
		_, listed := slices.BinarySearchFunc(u.listed, a, netip.AddrPort.Compare)
		if !in && !listed && a != u.self && !slices.Contains(u.outside, a) {
			u.outside = append(u.outside, a)
		}
	}
	if len(u.names) > 0 && (unheardName || len(u.listed) == 0) && now.Sub(u.askedAt) >= resolveEvery {
		u.askedAt = now
		select {
		case u.again <- struct{}{}:
		default:
		}
	}
	if len(u.outside) == 0 {
		return nil
	}
	u.fresh = false
	u.probes += uint64(len(u.outside))
	return u.t.WriteTo([][]byte{u.beacon}, u.outside)
}

// direct sends the datagrams of repair that are for one node
// (Ready.RepairTo: a NACK to its source, a repair to the member that
// asked) to that node alone, at its repair port; it returns the others,
// for the whole group, reusing repair's array, and the first send error.
func (u *unicast) direct(repair [][]byte, to []uint64) ([][]byte, error) {
	rest := repair[:0]
	err := u.split(repair, to, func(run [][]byte) { rest = append(rest, run...) }, u.t.WriteToNext)
	return rest, err
}

// sendData sends the turn's data datagrams in their order: those for one
// node (Ready.DataTo: an early acknowledgement to its source) to it alone,
// the others through group. It returns the first error of the former.
func (u *unicast) sendData(data [][]byte, to []uint64, group func([][]byte)) error {
	if to == nil {
		group(data)
		return nil
	}
	return u.split(data, to, group, u.t.WriteTo)
}

// split cuts dgs into runs of consecutive datagrams for the same node
// (to, 0 for the group), in order. A run for one node goes to it with
// send; a run for the group goes to group, and so does a run for a node
// whose address is not learned (there should be none: a node is asked or
// answered only once heard). It returns send's first error.
func (u *unicast) split(dgs [][]byte, to []uint64, group func([][]byte), send func([][]byte, []netip.AddrPort) error) error {
	var first error
	for i := 0; i < len(dgs); {
		j := i + 1
		for j < len(dgs) && to[j] == to[i] {
			j++
		}
		if a, ok := u.learned[to[i]]; to[i] != 0 && ok {
			u.one[0] = a
			if err := send(dgs[i:j], u.one[:]); err != nil && first == nil {
				first = err
			}
			u.directed += uint64(j - i)
		} else {
			group(dgs[i:j])
		}
		i = j
	}
	return first
}

// accept reports whether a datagram from src may go to the Core: with
// peers_only, only from listed addresses and the nodes heard as members.
func (u *unicast) accept(src netip.AddrPort) bool {
	if !u.only || u.allowed[src] {
		return true
	}
	u.unlisted++
	return false
}

// The counters of node.stats; zero with the multicast transport (u nil).
func (u *unicast) destCount() uint64 {
	if u == nil {
		return 0
	}
	return uint64(len(u.dests))
}

func (u *unicast) probeCount() uint64 {
	if u == nil {
		return 0
	}
	return u.probes
}

func (u *unicast) directedCount() uint64 {
	if u == nil {
		return 0
	}
	return u.directed
}

func (u *unicast) unlistedCount() uint64 {
	if u == nil {
		return 0
	}
	return u.unlisted
}
