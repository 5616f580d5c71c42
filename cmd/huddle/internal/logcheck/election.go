package logcheck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// Kinds of violation of the election found by CheckElection
// (docs/design.md, "Leader election").
const (
	// LeaderAgreement: two nodes learned different leaders from the same
	// round of the same view.
	LeaderAgreement Kind = "leader-agreement"
	// LeaderOutsideView: a round elected a node that is not a member of
	// the view it ran in.
	LeaderOutsideView Kind = "leader-outside-view"
)

// ElectionEvent is an election.started, election.won, leader.changed or
// election.done event.
type ElectionEvent struct {
	Event     string // logs.ElectionStarted, ElectionWon, LeaderChanged or ElectionDone
	Algorithm string // "ring" or "bully"
	Round     uint64
	View      string
	Leader    uint64 // won, changed, done: the round's leader
	Sent      uint64 // done: election messages this node sent in the round
	Late      bool   // done: for a message sent after the node's round was over
	Time      time.Time
	Line      int
}

func electionEvent(ev *logs.Event) ElectionEvent {
	get := func(key string) uint64 { v, _ := ev.Uint(key); return v }
	alg, _ := ev.Str(logs.AlgorithmKey)
	view, _ := ev.Str(logs.ViewKey)
	late, _ := ev.Bool(logs.LateKey)
	return ElectionEvent{Event: ev.Name, Algorithm: alg, Round: get(logs.RoundKey), View: view, Leader: get(logs.LeaderKey),
		Sent: get(logs.SentKey), Late: late, Time: ev.Time, Line: ev.Line}
}

// ElectionRound sums up one round of one view across the logs.
type ElectionRound struct {
	Algorithm string
	View      string
	Round     uint64
	Members   int    // of the view, as the first life that installed it logged them (0: unknown)
	Leader    uint64 // the leader the first node that learned it logged
	Messages  uint64 // election.done's sent in this view, summed over every life (a round that spans view changes counts in each)
	Nodes     int    // lives that logged an event of the round in this view
}

// Formula returns the message counts of the literature for the round's
// algorithm and view size (docs/benchmarks.md): one initiator, the
// highest, and one initiator, the lowest, with everyone alive. Several
// initiators, or members that crashed, make other counts.
func (r *ElectionRound) Formula() string {
	n := uint64(r.Members)
	switch {
	case n == 0:
		return "view size unknown"
	case r.Algorithm == "ring":
		return fmt.Sprintf("2n = %d started by the highest, 3n−1 = %d by the lowest", 2*n, 3*n-1)
	case r.Algorithm == "bully":
		return fmt.Sprintf("n−1 = %d started by the highest, n²−1 = %d by the lowest", n-1, n*n-1)
	}
	return "no formula for " + r.Algorithm
}

// ElectionResult is CheckElection's result: violations, and the rounds.
type ElectionResult struct {
	*Result
	Rounds []*ElectionRound // in the order of their first event in the logs
}

// CheckElection checks the leader elections in the logs: every node that
// learned the leader of a round of a view (leader.changed, election.won,
// election.done) learned the same one (LeaderAgreement), and that leader
// is a member of the view, as the nodes that installed it logged it
// (LeaderOutsideView). It sums each round's messages (election.done's
// sent over every node) for ElectionResult.Rounds, to set against the
// algorithm's formula.
func (r *Run) CheckElection() *ElectionResult {
	res := &ElectionResult{Result: newResult("election", 0)}
	res.Lives = len(r.Lives)
	members := map[string][]uint64{}
	for _, l := range r.Lives {
		for _, v := range l.Views {
			if _, ok := members[v.ID]; !ok && v.Members != nil {
				members[v.ID] = v.Members
			}
		}
	}
	type key struct {
		alg, view string
		round     uint64
	}
	type first struct {
		life *Life
		ev   ElectionEvent
	}
	rounds := map[key]*ElectionRound{}
	leaders := map[key]first{}
	for _, l := range r.Lives {
		seen := map[key]bool{}
		for _, e := range l.Elections {
			k := key{e.Algorithm, e.View, e.Round}
			rd := rounds[k]
			if rd == nil {
				rd = &ElectionRound{Algorithm: e.Algorithm, View: e.View, Round: e.Round, Members: len(members[e.View])}
				rounds[k] = rd
				res.Rounds = append(res.Rounds, rd)
			}
			if !seen[k] {
				seen[k] = true
				rd.Nodes++
			}
			if e.Event == logs.ElectionDone {
				rd.Messages += e.Sent
			}
			if e.Event == logs.ElectionStarted || e.Leader == 0 || e.Late {
				continue
			}
			f, ok := leaders[k]
			if !ok {
				leaders[k] = first{l, e}
				rd.Leader = e.Leader
				if ms := members[e.View]; ms != nil && !slices.Contains(ms, e.Leader) {
					res.add(Violation{Kind: LeaderOutsideView, Node: l.Node, Count: 1, File: l.File, Line: e.Line,
						Detail: fmt.Sprintf("%s round %d of view %s elected node %d, not a member of the view %v",
							e.Algorithm, e.Round, e.View, e.Leader, ms)})
				}
				continue
			}
			if f.ev.Leader != e.Leader {
				res.add(Violation{Kind: LeaderAgreement, Node: l.Node, Count: 1, File: l.File, Line: e.Line,
					Detail: fmt.Sprintf("%s round %d of view %s: node %d learned leader %d, node %d learned %d (%s:%d)",
						e.Algorithm, e.Round, e.View, l.Node, e.Leader, f.life.Node, f.ev.Leader, f.life.File, f.ev.Line)})
			}
		}
	}
	slices.SortStableFunc(res.Rounds, func(a, b *ElectionRound) int {
		if a.Round != b.Round {
			return cmp.Compare(a.Round, b.Round)
		}
		return strings.Compare(a.View, b.View)
	})
	return res
}

// String sums the check up, then lists the violations and the rounds
// with their messages against the formula (at most 20).
func (r *ElectionResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "election: %d lives, %d rounds", r.Lives, len(r.Rounds))
	r.writeVerdict(&b, "")
	for i, rd := range r.Rounds {
		if i == 20 {
			fmt.Fprintf(&b, "\n  … %d more rounds", len(r.Rounds)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s round %d of view %s (%d members): leader %d; messages sent in the view: %d, by %d nodes (%s)",
			rd.Algorithm, rd.Round, rd.View, rd.Members, rd.Leader, rd.Messages, rd.Nodes, rd.Formula())
	}
	return b.String()
}
