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
	// LeaderNotHighest: a round elected a member of its view that is not
	// the view's highest: both algorithms elect the highest ID.
	LeaderNotHighest Kind = "leader-not-highest"
	// LeaderUnknown: a member stayed in a view for ElectionOptions.Within
	// or longer without knowing the view's leader (its highest member).
	LeaderUnknown Kind = "leader-unknown"
)

// ElectionOptions shape CheckElection.
type ElectionOptions struct {
	// Within is how long a member may stay in a view without knowing its
	// leader: a view that lasted longer at a member must have a leader
	// there by its end (LeaderUnknown). Default DefaultLeaderWithin.
	Within time.Duration
}

// DefaultLeaderWithin is ElectionOptions.Within's default: a few times
// what a round takes on a LAN with the default timers (a joiner's wait
// for the leader to announce itself, then a bully round: about a
// second), far below a run.
const DefaultLeaderWithin = 3 * time.Second

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
// (LeaderOutsideView), and its highest (LeaderNotHighest); every member
// that stayed in a view for Within knew the view's leader by the end of
// its stay (LeaderUnknown). It sums each round's messages
// (election.done's sent over every node) for ElectionResult.Rounds, to
// set against the algorithm's formula.
func (r *Run) CheckElection(o ElectionOptions) *ElectionResult {
	if o.Within <= 0 {
		o.Within = DefaultLeaderWithin
	}
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
				res.count("rounds", 1)
				checkLeader(res, l, e, members[e.View])
				continue
			}
			if f.ev.Leader != e.Leader {
				res.add(Violation{Kind: LeaderAgreement, Node: l.Node, Count: 1, File: l.File, Line: e.Line,
					Detail: fmt.Sprintf("%s round %d of view %s: node %d learned leader %d, node %d learned %d (%s:%d)",
						e.Algorithm, e.Round, e.View, l.Node, e.Leader, f.life.Node, f.ev.Leader, f.life.File, f.ev.Line)})
			}
		}
	}
	for _, l := range r.Lives {
		knowsLeaders(res, l, o.Within)
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
	b.WriteString(r.comparedText())
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

// checkLeader checks the leader a round of view e.View elected, as the
// first node that learned it logged it, against the view's members.
func checkLeader(res *ElectionResult, l *Life, e ElectionEvent, ms []uint64) {
	switch {
	case ms == nil:
	case !slices.Contains(ms, e.Leader):
		res.add(Violation{Kind: LeaderOutsideView, Node: l.Node, Count: 1, File: l.File, Line: e.Line,
			Detail: fmt.Sprintf("%s round %d of view %s elected node %d, not a member of the view %v",
				e.Algorithm, e.Round, e.View, e.Leader, ms)})
	case e.Leader != slices.Max(ms):
		res.add(Violation{Kind: LeaderNotHighest, Node: l.Node, Count: 1, File: l.File, Line: e.Line,
			Detail: fmt.Sprintf("%s round %d of view %s elected node %d, not the view's highest member %d of %v: the election elects the highest ID",
				e.Algorithm, e.Round, e.View, e.Leader, slices.Max(ms), ms)})
	}
}

// knowsLeaders checks that l knew the leader of every view it stayed in
// for within or longer, by the end of its stay: the leader it learned
// last, while a member of the view, must be the view's highest member.
func knowsLeaders(res *ElectionResult, l *Life, within time.Duration) {
	var leader uint64
	e := 0 // l.Elections[:e] happened before the view being walked ended
	for i := range l.Views {
		v := &l.Views[i]
		end, endLine := l.LastTime, l.LastLine
		if i+1 < len(l.Views) {
			end, endLine = l.Views[i+1].Time, l.Views[i+1].Line
		}
		if !slices.Contains(v.Members, leader) {
			leader = 0 // a leader outside the view is forgotten
		}
		for ; e < len(l.Elections) && l.Elections[e].Line < endLine; e++ {
			if ev := l.Elections[e]; ev.Leader != 0 && !ev.Late && ev.Event != logs.ElectionStarted {
				leader = ev.Leader
			}
		}
		if len(v.Members) == 0 || end.Sub(v.Time) < within {
			continue
		}
		res.count("member views", 1)
		if want := slices.Max(v.Members); leader != want {
			known := "no leader"
			if leader != 0 {
				known = fmt.Sprintf("leader %d", leader)
			}
			res.add(Violation{Kind: LeaderUnknown, Node: l.Node, Count: 1, File: l.File, Line: endLine,
				Detail: fmt.Sprintf("node %d stayed in view %s (installed at %s:%d) for %v and knew %s at its end: want every member to learn the view's leader, its highest member %d, within %v",
					l.Node, v.ID, l.File, v.Line, end.Sub(v.Time).Round(time.Millisecond), known, want, within)})
		}
	}
}
