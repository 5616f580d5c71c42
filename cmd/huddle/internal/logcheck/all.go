package logcheck

import "time"

// AllOptions configures CheckAll.
type AllOptions struct {
	// Skew is the clock skew the lock check forgives between two logs
	// (MutexOptions.Slack): the only check that compares times written by
	// different nodes. Logs of one machine share a clock, and a few
	// milliseconds cover the order in which two processes write their
	// lines; logs collected from several machines need their clocks'
	// offset (NTP keeps a LAN within a few milliseconds; chrony's
	// "chronyc tracking" prints it).
	Skew time.Duration
	// Deaths are the kills the caller knows of (MutexOptions.Deaths).
	Deaths []Death
}

// Verdict is the outcome of one of CheckAll's checks.
type Verdict struct {
	Name    string  // a word: membership, liveness, order, election, lock
	What    string  // what it checks, in a few words
	Result  *Result // violations and counts
	Text    string  // the summary line and the violations listed, as Result.String (MutexResult.String for the lock)
	Clock   bool    // it compares times of different logs (AllOptions.Skew)
	Nothing string  // when the logs hold nothing it checks: why ("" otherwise)
}

// OK reports whether the check found no violation.
func (v Verdict) OK() bool { return v.Result.OK() }

// CheckAll runs every check on the run's logs, in a fixed order: the
// membership layer's guarantees (CheckMembership), liveness
// (CheckLiveness), total order and safe delivery (CheckOrder), the
// elections (CheckElection) and the lock (CheckMutex). The delivery checks need logs written with
// --trace-deliveries; a Verdict says when the logs hold nothing a check
// looks at, which is no evidence either way.
func (r *Run) CheckAll(o AllOptions) []Verdict {
	var sends, delivers, views, locks, elections int
	for _, l := range r.Lives {
		sends, delivers, views, locks = sends+len(l.Sends), delivers+len(l.Delivers), views+len(l.Views), locks+len(l.Locks)
		elections += len(l.Elections)
	}
	noDeliveries := ""
	if sends+delivers == 0 {
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
	mo := MembershipOptions{SelfDelivery: true}
	election := r.CheckElection()
	lock := r.CheckMutex(MutexOptions{Slack: o.Skew, Deaths: o.Deaths})
	vs := []Verdict{
		{Name: "membership", What: "virtual synchrony, agreement on views, FIFO, integrity", Result: r.CheckMembership(mo), Nothing: noViews},
		{Name: "liveness", What: "every message sent in a view reached every member that stayed", Result: r.CheckLiveness(mo), Nothing: noDeliveries},
		{Name: "order", What: "total order and safe delivery", Result: r.CheckOrder(mo), Nothing: noDeliveries},
		{Name: "election", What: "one leader per round, a member of its view; messages against the formula", Result: election.Result, Text: election.String(), Nothing: noElections},
		{Name: "lock", What: "never two holders at once, every request granted", Result: lock.Result, Text: lock.String(), Clock: true, Nothing: noLocks},
	}
	for i := range vs {
		if vs[i].Text == "" {
			vs[i].Text = vs[i].Result.String()
		}
	}
	return vs
}
