package membership

import (
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
	QuorumMajority = "majority" // a majority of the last primary view, less the members that left it gracefully
	QuorumStatic   = "static"   // a majority of Expected members
)

// Quorum configures the primary component.
type Quorum struct {
	// Policy is QuorumOff (or empty), QuorumMajority or QuorumStatic.
	Policy string
	// Expected is the number of nodes of the group. QuorumStatic: a view
	// is primary with more than Expected/2 members. QuorumMajority: a view
	// of Expected members is primary whatever came before (no other view
	// can exist then), and so is, at first start (no member knows of a
	// primary view), a view of Expected members, or of more than half of
	// them without WaitForAll. Required by both; never more than Expected
	// nodes may run, or two views could both count.
	Expected int
	// TieBreaker decides an even split: a view of exactly half of the
	// reference (Expected for QuorumStatic; the last primary view, less
	// its graceful leavers, for QuorumMajority) is primary when it holds
	// this node ID. 0: the reference's lowest ID (QuorumMajority), no
	// half wins (QuorumStatic).
	TieBreaker uint64
	// WaitForAll makes the first primary view wait for all Expected nodes.
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
	full     bool // an attempt did not fit: views with this node are primary only with every expected node
}

func (k *known) wire() wire.Known { return wire.Known{Last: k.last, Attempts: k.attempts} }

// attempt records that this node confirms the cut of a proposal that will
// be primary view gen.
func (k *known) attempt(gen uint64, v wire.ViewID, inc uint64, members []wire.Member) {
	if gen == 0 || slices.ContainsFunc(k.attempts, func(a wire.PrimaryView) bool { return a.Gen == gen && a.View == v && a.Inc == inc }) {
		return
	}
	if len(k.attempts) == wire.MaxPrimaryAttempts {
		k.full = true
		return
	}
	k.attempts = append(k.attempts, wire.PrimaryView{Gen: gen, View: v, Inc: inc, Members: memberIDs(members)})
}

// installed records the view installed now: a primary one ends every
// ambiguity before it.
func (k *known) installed(gen uint64, v View) {
	if gen == 0 {
		return
	}
	k.last = wire.PrimaryView{Gen: gen, View: v.ID, Inc: v.Members[0].Inc, Members: v.IDs()}
	k.attempts, k.full = nil, false
}

// decide returns the generation view members will have as the primary
// component, 0 when it will not be primary, from what every one of them
// knows (reports; a full list of attempts counts as unknown) and the
// members that left gracefully in this change.
//
// The references a view must hold a quorum of: the newest primary view
// any member installed (every one of that generation, should two members
// report two), and every attempt at that generation or above. Older
// attempts were settled by a newer primary view, which held a quorum of
// them or of a view that did.
func (q Quorum) decide(members []uint64, reports []wire.Known, left []uint64) uint64 {
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
	case top == 0 && q.WaitForAll:
		return 0 // first start: wait for every node
	case q.Policy == QuorumStatic || top == 0:
		if !quorate(members, q.Expected, nil, q.TieBreaker) {
			return 0
		}
		return top + 1
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

// without returns ids less those in left, as a new slice.
func without(ids, left []uint64) []uint64 {
	out := make([]uint64, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(left, id) {
			out = append(out, id)
		}
	}
	return out
}

// quorate reports whether members hold a majority of the reference: of
// ref's IDs when ref is not nil (an empty ref, everyone having left
// gracefully, is held by anyone), else of n nodes. Exactly half
// wins when it holds tie, or with tie 0 and a ref, the ref's lowest ID.
func quorate(members []uint64, n int, ref []uint64, tie uint64) bool {
	have := len(members)
	if ref != nil {
		n, have = len(ref), 0
		for _, id := range ref {
			if slices.Contains(members, id) {
				have++
			}
		}
		if tie == 0 && n > 0 {
			tie = slices.Min(ref)
		}
	}
	switch {
	case n == 0 || 2*have > n:
		return true
	case 2*have == n && tie != 0:
		return slices.Contains(members, tie) && (ref == nil || slices.Contains(ref, tie))
	}
	return false
}
