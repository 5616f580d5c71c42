package logcheck

import (
	"fmt"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// StateEvent is a state transfer's event (state.sent, state.installed,
// state.current, state.failed).
type StateEvent struct {
	Event   string
	Service string
	View    string // the view whose cut the snapshot is of
	From    uint64 // state.installed: the provider
	Hash    string
	Behind  bool // kv.state: the node waits for the group's state; its own says nothing
	Time    time.Time
	Line    int
}

// Kinds of the state check's violations.
const (
	// StateMismatch: a member installed a snapshot whose hash is not the
	// one its provider sent at that view's cut.
	StateMismatch Kind = "state-mismatch"
	// StateUnsent: a member installed a snapshot its provider's log
	// never says it sent.
	StateUnsent Kind = "state-unsent"
	// StateDiverged: two members that installed a view, neither behind,
	// logged different states at its cut (kv.state).
	StateDiverged Kind = "state-diverged"
)

// CheckState checks the state transfers (docs/design.md, "State
// transfer"): every snapshot a member installed is the one its provider
// took at the view's cut, by the hash both logged (a provider whose log
// is not among the run's is not held to it); and where the application
// logs its state at every view (huddle run's kv store: kv.state), every
// member of a view that is not behind logged the same state at its cut.
func (r *Run) CheckState() *Result {
	res := newResult("state", 0)
	sent := map[[3]string]StateEvent{} // provider, service, view → its state.sent
	logged := map[uint64]bool{}
	for _, l := range r.Lives {
		logged[l.Node] = true
		for _, e := range l.States {
			if e.Event == logs.StateSent {
				sent[[3]string{fmt.Sprint(l.Node), e.Service, e.View}] = e
			}
		}
	}
	compared := 0
	for _, l := range r.Lives {
		for _, e := range l.States {
			if e.Event != logs.StateInstalled || !logged[e.From] {
				continue
			}
			compared++
			s, ok := sent[[3]string{fmt.Sprint(e.From), e.Service, e.View}]
			switch {
			case !ok:
				res.add(Violation{Kind: StateUnsent, Node: l.Node, Sender: e.From, Count: 1, File: l.File, Line: e.Line,
					Detail: fmt.Sprintf("node %d installed the state of %s at view %s from node %d (hash %s), whose log says it sent none there", l.Node, e.Service, e.View, e.From, e.Hash)})
			case s.Hash != e.Hash:
				res.add(Violation{Kind: StateMismatch, Node: l.Node, Sender: e.From, Count: 1, File: l.File, Line: e.Line,
					Detail: fmt.Sprintf("node %d installed the state of %s at view %s with hash %s; its provider, node %d, sent hash %s: want the snapshot of the view's cut", l.Node, e.Service, e.View, e.Hash, e.From, s.Hash)})
			}
		}
	}
	res.Compared = append(res.Compared, Count{compared, "state transfers"})
	views := 0
	first := map[[2]string]StateEvent{} // service, view → the first current member's kv.state
	firstNode := map[[2]string]*Life{}
	for _, l := range r.Lives {
		for _, e := range l.States {
			if e.Event != logs.KVState || e.Behind {
				continue
			}
			k := [2]string{e.Service, e.View}
			f, ok := first[k]
			if !ok {
				first[k], firstNode[k] = e, l
				views++
				continue
			}
			if f.Hash != e.Hash {
				res.add(Violation{Kind: StateDiverged, Node: l.Node, Sender: firstNode[k].Node, Count: 1, File: l.File, Line: e.Line,
					Detail: fmt.Sprintf("node %d's state of %s at the cut of view %s has hash %s; node %d's, %s (%s:%d): want every member of the view that is not behind to hold one state", l.Node, e.Service, e.View, e.Hash, firstNode[k].Node, f.Hash, firstNode[k].File, f.Line)})
			}
		}
	}
	res.Compared = append(res.Compared, Count{views, "views' states"})
	return res
}
