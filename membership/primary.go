package membership

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/huddle-lan/huddle/internal/wire"
)

// The primary component (docs/design.md, "Primary views"). Every view is
// marked primary or not when it is installed, by the flush's initiator
// from what its members know, so that every member that installs a view
// agrees on the mark. With a quorum policy, two primary views never
// coexist: each primary view holds a quorum of the one before it (and of
// every attempt at a primary view since that some member may have
// installed), so primary views form one chain.

// Quorum policies.
const (
	QuorumOff      = "off"      // every view is primary (no quorum)
	QuorumMajority = "majority" // a majority of the last primary view, less the members that left it gracefully while it was primary
	QuorumStatic   = "static"   // a majority of Expected members
)

// Quorum configures the primary component.
type Quorum struct {
	// Policy is QuorumOff (or empty), QuorumMajority or QuorumStatic.
	Policy string
	// Expected is the number of nodes of the group. QuorumStatic: a view
	// is primary with more than Expected/2 members. QuorumMajority: a view
	// of Expected members is primary whatever came before (no other view
	// can exist then), and it takes one to begin: at first start (no
	// member knows of a primary view), or once restarts took more than
	// half of the last primary view (a restarted node knows nothing).
	// Required by both; never more than Expected nodes may run, or two
	// views could both count.
	Expected int
	// TieBreaker decides an even split: a view of exactly half of the
	// reference (Expected for QuorumStatic; the last primary view, less
	// its graceful leavers, for QuorumMajority) is primary when it holds
	// this node ID. 0: the reference's lowest ID (QuorumMajority), no
	// half wins (QuorumStatic).
	TieBreaker uint64
	// WaitForAll makes the first primary view of QuorumStatic wait for
	// all Expected nodes (QuorumMajority always does).
	WaitForAll bool
}

// On reports whether views can be other than primary.
func (q Quorum) On() bool { return q.Policy != "" && q.Policy != QuorumOff }

// ErrQuorum is wrapped by Quorum.Validate's errors.
var ErrQuorum = errors.New("membership: invalid quorum")

// Validate reports what of q is out of range.
func (q Quorum) Validate() error {
	switch q.Policy {
	case "", QuorumOff:
		return nil
	case QuorumMajority, QuorumStatic:
	default:
		return fmt.Errorf("%w: policy %q is not %q, %q or %q", ErrQuorum, q.Policy, QuorumOff, QuorumMajority, QuorumStatic)
	}
	if q.Expected < 1 {
		return fmt.Errorf("%w: policy %q needs the expected number of nodes (got %d)", ErrQuorum, q.Policy, q.Expected)
	}
	return nil
}

// known is what this node knows of the primary component: the last
// primary view it installed, and the attempts at primary views since
// (flushes whose cut it confirmed, each proposing a primary view, that it
// did not see installed: a member that got the commit may have).
type known struct {
	last     wire.PrimaryView
	attempts []wire.PrimaryView
}

// wire is what a flush report carries of k. Only the majority policy
// counts the members of the last primary view and of the attempts; the
// others need the last view's identity alone, and a report stays within a
// datagram (a view of 128 members by incarnation is 2 KiB, its attempts
// up to eight times that: every member's report in pieces, every flush).
func (k *known) wire(q Quorum, behind bool) wire.Known {
	if q.Policy == QuorumMajority {
		return wire.Known{Last: k.last, Attempts: k.attempts, Behind: behind}
	}
	last := k.last
	last.Members = nil
	return wire.Known{Last: last, Behind: behind}
}

// behindOf lists the members whose replicated state is not the group's,
// from their reports (states[members[i]]). The group's state is that of
// the first member that is not behind and whose last primary view is the
// newest any of them installed; it is shared by the members that say the
// same and come from the same view (virtual synchrony: those that went
// from one view to the next delivered the same messages in it). The
// others are behind: a node that restarted, the other side of a merge,
// and a member that took part in the newest primary view but left it for
// another view than the provider did (the end of a view may differ
// between the sides of a partition).
//
// Without a quorum policy (most) every view is primary, and the newest
// says little: a node cut off alone goes through views of its own, each a
// generation, and one that joined and was cut off before its transfer
// finished even took its own state for the group's. There the state of
// the most members wins: the last view most of them share, not behind,
// and the newest between equals.
func behindOf(members []wire.Member, states map[uint64]wire.FlushOK, most bool) []uint64 {
	type key struct {
		gen, inc uint64
		view     wire.ViewID
	}
	keyOf := func(p wire.PrimaryView) key { return key{p.Gen, p.Inc, p.View} }
	count := map[key]int{}
	for _, x := range members {
		if k := states[x.ID].Known; !k.Behind {
			count[keyOf(k.Last)]++
		}
	}
	var newest wire.PrimaryView
	for _, x := range members {
		k := states[x.ID].Known
		if most {
			if a, b := count[keyOf(k.Last)], count[keyOf(newest)]; k.Behind || a < b {
				continue
			} else if a > b {
				newest = k.Last
				continue
			}
		}
		if newer(k.Last, newest) {
			newest = k.Last
		}
	}
	var from *wire.FlushOK
	for _, x := range members {
		if s := states[x.ID]; !s.Known.Behind && sameView(s.Known.Last, newest) {
			from = &s
			break
		}
	}
	var out []uint64
	for _, x := range members {
		s := states[x.ID]
		if from == nil || s.Known.Behind || !sameView(s.Known.Last, newest) || s.Prior != from.Prior || s.PriorInc != from.PriorInc {
			out = append(out, x.ID)
		}
	}
	return out
}

// newer orders primary views by generation, then by view and its
// coordinator's incarnation (two sides that each went on without a quorum
// policy can both reach a generation).
func newer(a, b wire.PrimaryView) bool {
	switch {
	case a.Gen != b.Gen:
		return a.Gen > b.Gen
	case a.View != b.View:
		return b.View.Less(a.View)
	}
	return a.Inc > b.Inc
}

func sameView(a, b wire.PrimaryView) bool {
	return a.Gen == b.Gen && a.View == b.View && a.Inc == b.Inc
}

// attempt records that this node confirms the cut of a proposal that will
// be primary view gen.
func (k *known) attempt(gen uint64, v wire.ViewID, inc uint64, members []wire.Member) {
	if gen == 0 || slices.ContainsFunc(k.attempts, func(a wire.PrimaryView) bool { return a.Gen == gen && a.View == v && a.Inc == inc }) {
		return
	}
	if len(k.attempts) == wire.MaxPrimaryAttempts {
		return // a full list says it: views with this node are primary only with every expected node (decide)
	}
	k.attempts = append(k.attempts, wire.PrimaryView{Gen: gen, View: v, Inc: inc, Members: slices.Clone(members)})
}

// installed records the view installed now: a primary one ends every
// ambiguity before it.
func (k *known) installed(gen uint64, v View) {
	if gen == 0 {
		return
	}
	k.last = wire.PrimaryView{Gen: gen, View: v.ID, Inc: v.Members[0].Inc, Members: slices.Clone(v.Members)}
	k.attempts = nil
}

// decide returns the generation view members will have as the primary
// component, 0 when it will not be primary, from what every one of them
// knows (reports; a full list of attempts counts as unknown) and the
// members that left gracefully in this change.
//
// Members count by incarnation: a node that restarted lost what it knew,
// and counts in no view of its earlier life (else, with what it forgot
// missing, two sides could each hold a majority of a different last
// view). It counts again from the first primary view it is in; a group
// whose last primary view lost a majority to restarts waits for every
// expected node.
//
// The references a view must hold a quorum of: the newest primary view
// any member installed (every one of that generation, should two members
// report two), and every attempt at that generation or above. Older
// attempts were settled by a newer primary view, which held a quorum of
// them or of a view that did.
func (q Quorum) decide(members []wire.Member, reports []wire.Known, left []uint64) uint64 {
	var last, top uint64 // the newest primary view installed, and the highest generation known
	full := false
	for _, k := range reports {
		last = max(last, k.Last.Gen)
		top = max(top, k.Last.Gen)
		for _, a := range k.Attempts {
			top = max(top, a.Gen)
		}
		full = full || len(k.Attempts) >= wire.MaxPrimaryAttempts
	}
	switch {
	case !q.On() || len(members) >= q.Expected:
		return top + 1 // every node is here: no other view can be
	case full:
		return 0
	case top == 0 && (q.WaitForAll || q.Policy == QuorumMajority):
		// First start: wait for every node. A majority policy must: a
		// node that restarted knows nothing, and the last primary view
		// may have shrunk to fewer than half of the nodes, so that more
		// than half of them, all fresh, could not tell it exists.
		return 0
	case q.Policy == QuorumStatic:
		if !quorate(members, q.Expected, nil, q.TieBreaker) {
			return 0
		}
		return top + 1
	}
	for _, k := range reports {
		for _, a := range k.Attempts {
			if a.Gen > last+1 {
				// An attempt whose own reference, the primary view of
				// generation a.Gen-1 or above that it held a majority
				// of, none of them installed: that view may stand, and
				// a majority of the attempt need not meet it (a node
				// that restarted and confirmed the cut of a merge it
				// never installed knows the attempt and nothing before).
				return 0
			}
		}
	}
	for _, k := range reports {
		if k.Last.Gen == last && last > 0 && !quorate(members, 0, without(k.Last.Members, left), q.TieBreaker) {
			return 0
		}
		for _, a := range k.Attempts {
			if a.Gen >= last && !quorate(members, 0, without(a.Members, left), q.TieBreaker) {
				return 0
			}
		}
	}
	return top + 1
}

// without returns ms less the IDs in left, as a new slice.
func without(ms []wire.Member, left []uint64) []wire.Member {
	out := make([]wire.Member, 0, len(ms))
	for _, x := range ms {
		if !slices.Contains(left, x.ID) {
			out = append(out, x)
		}
	}
	return out
}

// quorate reports whether members hold a majority of the reference: of
// ref's members, by incarnation, when ref is not nil (an empty ref,
// everyone having left gracefully, is held by anyone), else of n nodes.
// Exactly half wins when it holds the node tie (of ref's incarnation), or
// with tie 0 and a ref, the ref's lowest ID.
func quorate(members []wire.Member, n int, ref []wire.Member, tie uint64) bool {
	have := len(members)
	in := func(id uint64) bool {
		return slices.ContainsFunc(members, func(x wire.Member) bool { return x.ID == id })
	}
	if ref != nil {
		n, have = len(ref), 0
		for _, x := range ref {
			if slices.Contains(members, x) {
				have++
			}
		}
		if tie == 0 && n > 0 {
			tie = slices.MinFunc(ref, func(a, b wire.Member) int { return cmp.Compare(a.ID, b.ID) }).ID
		}
		in = func(id uint64) bool {
			i := slices.IndexFunc(ref, func(x wire.Member) bool { return x.ID == id })
			return i >= 0 && slices.Contains(members, ref[i])
		}
	}
	switch {
	case n == 0 || 2*have > n:
		return true
	case 2*have == n && tie != 0:
		return in(tie)
	}
	return false
}
