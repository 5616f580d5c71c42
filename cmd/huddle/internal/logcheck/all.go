package logcheck

import (
	"fmt"
	"time"
)

// AllOptions configures CheckAll.
type AllOptions struct {
	// Skew is the clock skew the lock check forgives between two logs
	// (MutexOptions.Slack), and the liveness check adds to the time a
	// message needs (MembershipOptions.Settle): the only checks that
	// compare times written by different nodes. Logs of one machine
	// share a clock, and a few milliseconds cover the order in which two
	// processes write their lines; logs collected from several machines
	// need their clocks' offset (NTP keeps a LAN within a few
	// milliseconds; chrony's "chronyc tracking" prints it).
	Skew time.Duration
	// Deaths are the kills the caller knows of, with their times
	// (MutexOptions.Deaths, LivesOptions.Deaths).
	Deaths []Death
	// Crashed are lives killed at times unknown (LivesOptions.Crashed).
	Crashed []Crash
}

// Verdict is the outcome of one of CheckAll's checks.
type Verdict struct {
	Name    string  // a word: logs, membership, liveness, order, election, lock, state
	What    string  // what it checks, in a few words
	Result  *Result // violations and counts
	Text    string  // the summary line and the violations listed, as Result.String (MutexResult.String for the lock)
	Clock   bool    // it compares times of different logs (AllOptions.Skew)
	Nothing string  // when the logs hold nothing it checks: why ("" otherwise)
}

// OK reports whether the check found no violation.
func (v Verdict) OK() bool { return v.Result.OK() }

// CheckAll runs every check on the run's logs, in a fixed order: how each
// life's log ends (CheckLives), the membership layer's guarantees
// (CheckMembership), liveness (CheckLiveness), total order and safe
// delivery (CheckOrder), the elections (CheckElection) and the lock
// (CheckMutex), and the state transfers (CheckState). The delivery checks need logs written with
// --trace-deliveries. A check with nothing to look at says so (Nothing):
// no evidence either way; but a check that compared nothing in a run
// that had what it checks (messages for the delivery checks, views for
// the election) fails (NothingCompared).
func (r *Run) CheckAll(o AllOptions) []Verdict {
	var sends, delivers, views, locks, elections, ordered, states int
	for _, l := range r.Lives {
		states += len(l.States)
		sends, delivers, views, locks = sends+len(l.Sends), delivers+len(l.Delivers), views+len(l.Views), locks+len(l.Locks)
		elections += len(l.Elections)
		for _, d := range l.Delivers {
			if d.Order == "total" || d.Order == "safe" || d.Order == "causal" {
				ordered++
			}
		}
	}
	traffic := sends+delivers > 0
	noDeliveries := ""
	if !traffic {
		noDeliveries = "no send or deliver events: run the nodes with --trace-deliveries"
	}
	noViews := "" // the membership check looks at views and deliveries
	if views+sends+delivers == 0 {
		noViews = "no view.installed, send or deliver events"
	}
	noLocks := ""
	if locks == 0 {
		noLocks = "no mutex events: nobody asked for the lock"
	}
	noElections := ""
	if elections == 0 {
		noElections = "no election events: the group ran no election"
	}
	noStates := ""
	if states == 0 {
		noStates = "no state events: no service is replicated"
	}
	mo := MembershipOptions{SelfDelivery: true, Settle: DefaultSettle + o.Skew}
	election := r.CheckElection(ElectionOptions{})
	lock := r.CheckMutex(MutexOptions{Slack: o.Skew, Deaths: o.Deaths})
	vs := []Verdict{
		{Name: "logs", What: "every life's log ends with node.stopped or a known crash", Result: r.CheckLives(LivesOptions{Deaths: o.Deaths, Crashed: o.Crashed})},
		{Name: "membership", What: "virtual synchrony, agreement on views, FIFO without holes, integrity", Result: r.CheckMembership(mo), Nothing: noViews},
		{Name: "liveness", What: "every message sent in a view reached every member that stayed", Result: r.CheckLiveness(mo), Clock: true, Nothing: noDeliveries},
		{Name: "order", What: "total order without holes, safe delivery, causal order", Result: r.CheckOrder(mo), Nothing: noDeliveries},
		{Name: "election", What: "one leader per round, the highest member of its view, known to every member", Result: election.Result, Text: election.String(), Nothing: noElections},
		{Name: "lock", What: "never two holders at once, every request granted", Result: lock.Result, Text: lock.String(), Clock: true, Nothing: noLocks},
		{Name: "state", What: "every state installed is the one its provider took at the view's cut", Result: r.CheckState(), Nothing: noStates},
	}
	for i := range vs {
		v := &vs[i]
		had := traffic && (v.Name == "membership" || v.Name == "liveness") || ordered > 0 && v.Name == "order" || views > 0 && v.Name == "election"
		if had && !v.Result.ComparedAny() {
			v.Result.add(Violation{Kind: NothingCompared, Count: 1,
				Detail: fmt.Sprintf("the %s check compared nothing in a run with %d sends, %d deliveries and %d views installed: no evidence either way", v.Name, sends, delivers, views)})
			v.Nothing, v.Text = "", ""
		}
		if v.Text == "" {
			v.Text = v.Result.String()
		}
	}
	return vs
}
