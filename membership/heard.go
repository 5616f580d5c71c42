package membership

import (
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// heard is what this node last heard from a node: every datagram carries
// its sender's view, so the session messages double as merge beacons.
type heard struct {
	inc  uint64
	view wire.ViewID
	at   time.Time
	addr netip.AddrPort
	seq  uint64 // its place in the eviction order (strangers)
}

// stranger is a place in the eviction order.
type stranger struct{ id, seq uint64 }

// heardTable is what this node last heard from each node, bounded
// (docs/design.md, "Capped state"): the members of its view, and at most
// maxStrangers others, the one heard first evicted first. A newer
// incarnation of a member is kept aside (restarts): the member's own stays
// what this node hears of it until a view replaces it, as the engine keeps
// its stream (pinned). The Machine passes in its view; the table hands
// back the nodes it forgot, so that what else is kept of them goes too.
type heardTable struct {
	nodes     map[uint64]heard
	strangers []stranger       // nodes outside the view, heard first first: the order nodes evicts in
	next      uint64           // the place of the next stranger
	restarts  map[uint64]heard // members heard with a newer incarnation than the view's (restarted, or forged)
	st        time.Duration    // the suspect timeout
	version   uint64           // counts the changes of the set of addresses (addrs)
}

func newHeardTable(st time.Duration) heardTable {
	return heardTable{nodes: map[uint64]heard{}, restarts: map[uint64]heard{}, st: st}
}

// get returns what was last heard from node id; zero if never.
func (t *heardTable) get(id uint64) heard { return t.nodes[id] }

// hear records h, heard at now from node id while this node is in view v.
// It reports false, and records nothing, for an incarnation older than
// one heard within the suspect timeout in a view. evicted lists the nodes
// outside v it forgot to make room.
func (t *heardTable) hear(now time.Time, id uint64, h heard, v View) (fresh bool, evicted []uint64) {
	if i := v.Inc(id); i != 0 && h.inc > i {
		if r, ok := t.restarts[id]; !ok || r.addr != h.addr {
			t.version++
		}
		t.restarts[id] = h
		return true, nil
	}
	p, ok := t.nodes[id]
	if ok && h.inc < p.inc && p.view != (wire.ViewID{}) && now.Sub(p.at) < t.st {
		// An older incarnation while the newer one is alive in a view: a
		// stale datagram, or a second node with the same ID. A newer one
		// that is only joining does not silence the older: it may be a
		// second node with the ID, which stops only once it has heard the
		// older for a suspect timeout (onConflict), or a forgery, and the
		// older may be a coordinator others need to hear (its refusal).
		return false, nil
	}
	if !ok {
		p.seq, evicted = t.admit(id, v)
	}
	if !ok || p.addr != h.addr {
		t.version++
	}
	h.seq = p.seq
	t.nodes[id] = h
	return true, evicted
}

// admit makes room for a node not heard before, and returns its place in
// the eviction order: when the table holds maxStrangers nodes besides the
// view's members, the one outside the view heard first goes.
func (t *heardTable) admit(id uint64, v View) (seq uint64, evicted []uint64) {
	if v.Has(id) {
		return 0, nil
	}
	for len(t.nodes) >= len(v.Members)+maxStrangers && len(t.strangers) > 0 {
		old := t.strangers[0]
		t.strangers = t.strangers[1:]
		if t.queued(old, v) {
			delete(t.nodes, old.id)
			evicted = append(evicted, old.id)
			t.version++
		}
	}
	return t.queue(id, v), evicted
}

// queue puts node id last in the eviction order.
func (t *heardTable) queue(id uint64, v View) uint64 {
	t.next++
	t.strangers = append(t.strangers, stranger{id, t.next})
	if len(t.strangers) > 2*(maxStrangers+len(v.Members)) {
		t.compact(v)
	}
	return t.next
}

// queued reports whether a place in the eviction order is still its
// node's: the node is in the table from then on, and outside the view.
func (t *heardTable) queued(s stranger, v View) bool {
	h, ok := t.nodes[s.id]
	return ok && h.seq == s.seq && !v.Has(s.id)
}

// compact drops the places no longer their nodes' from the eviction order.
func (t *heardTable) compact(v View) {
	t.strangers = slices.DeleteFunc(t.strangers, func(s stranger) bool { return !t.queued(s, v) })
}

// afterView follows a new view v: the members it dropped join the
// eviction order, and a restarted incarnation it holds is the member now.
func (t *heardTable) afterView(prior, v View) {
	t.version++ // who is a member changed (peers)
	for _, x := range prior.Members {
		if h, ok := t.nodes[x.ID]; ok && !v.Has(x.ID) {
			h.seq = t.queue(x.ID, v)
			t.nodes[x.ID] = h
		}
	}
	for id, r := range t.restarts {
		if v.HasInc(id, r.inc) {
			t.nodes[id] = r
		}
		if v.Inc(id) >= r.inc {
			delete(t.restarts, id)
		}
		t.version++
	}
	t.compact(v)
}

// lately reports whether incarnation inc of node id was heard within the
// suspect timeout.
func (t *heardTable) lately(now time.Time, id, inc uint64) bool {
	for _, h := range []heard{t.nodes[id], t.restarts[id]} {
		if h.inc == inc && !h.at.IsZero() && now.Sub(h.at) <= t.st {
			return true
		}
	}
	return false
}

// prune forgets the nodes outside view v not heard for two suspect
// timeouts, and returns them.
func (t *heardTable) prune(now time.Time, v View) (forgotten []uint64) {
	for id, h := range t.nodes {
		if !v.Has(id) && now.Sub(h.at) > 2*t.st {
			delete(t.nodes, id)
			forgotten = append(forgotten, id)
			t.version++
		}
	}
	for id, r := range t.restarts {
		if !v.Has(id) || now.Sub(r.at) > 2*t.st {
			delete(t.restarts, id)
		}
	}
	t.compact(v)
	return forgotten
}

// PeerAddr is a node this node knows of, for the transports: its ID, the
// address its last authenticated datagram came from (invalid for a member
// of the view not heard yet, or not since it was forgotten), and whether
// it is a member of the view.
type PeerAddr struct {
	ID     uint64
	Addr   netip.AddrPort
	Member bool
	// InView: it was last heard in a view (this node's or another), so it
	// multicasts a session message every heartbeat; a joiner may be quiet.
	InView bool
}

// peers appends to dst every node in the table (a restarted member's new
// incarnation too) and every member of v other than self, and returns it.
// The set changes only when version does.
func (t *heardTable) peers(dst []PeerAddr, v View, self uint64) []PeerAddr {
	for id, h := range t.nodes {
		dst = append(dst, PeerAddr{ID: id, Addr: h.addr, Member: v.Has(id), InView: h.view != (wire.ViewID{})})
	}
	for id, h := range t.restarts {
		dst = append(dst, PeerAddr{ID: id, Addr: h.addr, Member: true, InView: h.view != (wire.ViewID{})})
	}
	for _, x := range v.Members {
		if _, ok := t.nodes[x.ID]; !ok && x.ID != self {
			dst = append(dst, PeerAddr{ID: x.ID, Member: true})
		}
	}
	return dst
}
