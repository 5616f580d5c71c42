package membership

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/huddle-lan/huddle/internal/wire"
)

// View is an installed view: its ID and its members, oldest first. The
// first member coordinates the view (and, with total order, sequences it).
// Primary marks the primary component (docs/design.md, "Primary views"):
// every member that installs the view marks it alike; without a quorum
// policy every view is primary.
type View struct {
	ID      wire.ViewID
	Members []wire.Member
	Primary bool
	// Behind lists the members whose replicated state is not the group's
	// at this view's start: they take it by state transfer from the
	// view's first member not behind (docs/design.md, "State transfer").
	Behind []uint64
}

// Coordinator returns the view's coordinator, 0 for no view.
func (v View) Coordinator() uint64 {
	if len(v.Members) == 0 {
		return 0
	}
	return v.Members[0].ID
}

// Has reports whether node id is a member.
func (v View) Has(id uint64) bool { return v.index(id) >= 0 }

// HasInc reports whether node id's incarnation inc is a member.
func (v View) HasInc(id, inc uint64) bool {
	i := v.index(id)
	return i >= 0 && v.Members[i].Inc == inc
}

// Inc returns the incarnation of member id, 0 when it is not a member.
func (v View) Inc(id uint64) uint64 {
	if i := v.index(id); i >= 0 {
		return v.Members[i].Inc
	}
	return 0
}

func (v View) index(id uint64) int {
	for i, m := range v.Members {
		if m.ID == id {
			return i
		}
	}
	return -1
}

// IDs returns the members' IDs, oldest first.
func (v View) IDs() []uint64 { return memberIDs(v.Members) }

// memberIDs returns the IDs of ms, in order.
func memberIDs(ms []wire.Member) []uint64 {
	ids := make([]uint64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// String formats the view as "epoch.coordinator[1 2 3]".
func (v View) String() string {
	var b strings.Builder
	b.WriteString(v.ID.String())
	b.WriteByte('[')
	for i, m := range v.Members {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatUint(m.ID, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// clone returns a copy that shares nothing with v.
func (v View) clone() View {
	return View{ID: v.ID, Members: slices.Clone(v.Members), Primary: v.Primary, Behind: slices.Clone(v.Behind)}
}

// WaitsForState reports whether member id, installing v, waits for the
// group's replicated state: it is behind, and is not the one whose state
// becomes the group's (the provider of a primary view where every member
// is behind).
func (v View) WaitsForState(id uint64) bool {
	return slices.Contains(v.Behind, id) && !(v.Provider() == id && v.Primary)
}

// Provider returns the member that gives the view's members behind the
// group's state: the first member not behind, or when every member is,
// the first (its state becomes the group's); 0 for no view.
func (v View) Provider() uint64 {
	for _, x := range v.Members {
		if !slices.Contains(v.Behind, x.ID) {
			return x.ID
		}
	}
	return v.Coordinator()
}

// flushID orders flushes: a participant follows the highest it has seen.
// The initiator breaks ties between flushes of the same epoch and attempt.
type flushID struct {
	Epoch, Attempt, Initiator uint64
}

func (f flushID) less(g flushID) bool {
	if f.Epoch != g.Epoch {
		return f.Epoch < g.Epoch
	}
	if f.Attempt != g.Attempt {
		return f.Attempt < g.Attempt
	}
	return f.Initiator < g.Initiator
}

func (f flushID) String() string {
	return strconv.FormatUint(f.Epoch, 10) + "/" + strconv.FormatUint(f.Attempt, 10) + "@" + strconv.FormatUint(f.Initiator, 10)
}

// cutOf returns the cut the list gives for view v of the coordinator
// incarnation inc, and whether it has one.
func cutOf(cuts []wire.ViewCut, v wire.ViewID, inc uint64) ([]wire.Cut, bool) {
	for _, c := range cuts {
		if c.View == v && c.Inc == inc {
			return c.Cuts, true
		}
	}
	return nil, false
}

// seqOf returns the cut's sequence number for sender id, 0 when it has none.
func seqOf(cuts []wire.Cut, id uint64) uint64 {
	for _, c := range cuts {
		if c.ID == id {
			return c.Seq
		}
	}
	return 0
}

func containsMember(ms []wire.Member, id uint64) bool {
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}

// incOf returns member id's incarnation in ms, 0 when it is not there.
func incOf(ms []wire.Member, id uint64) uint64 {
	for _, m := range ms {
		if m.ID == id {
			return m.Inc
		}
	}
	return 0
}

func sortedKeys[V any](mp map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(mp))
	for id := range mp {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, cmp.Compare)
	return ids
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
