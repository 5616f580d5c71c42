package logcheck

import (
	"fmt"
	"time"
)

// Crash names a life that was killed, as huddle check --crashed gives it:
// a node, and its incarnation (0: any life of the node).
type Crash struct {
	Node, Inc uint64
}

// LivesOptions shape CheckLives.
type LivesOptions struct {
	// Deaths are the kills the caller knows of, with their times (the
	// lab's lab.json): a life that ran at a death of its node may end
	// without node.stopped.
	Deaths []Death
	// Crashed are lives killed where no time is known (huddle check
	// --crashed, for logs from real machines).
	Crashed []Crash
}

// CheckLives checks that every life's log ends as a life ends: with
// node.stopped (an exit, graceful or not), or at a crash the check knows
// of (LogEnd otherwise: a killed node the caller did not name, or a log
// cut short, whose missing lines the other checks cannot see).
func (r *Run) CheckLives(o LivesOptions) *Result {
	res := newResult("logs", 0)
	res.Lives = len(r.Lives)
	deaths := &lockCheck{run: r, o: MutexOptions{Deaths: o.Deaths}}
	for _, l := range r.Lives {
		res.count("lives", 1)
		if !l.Stopped.IsZero() || crashed(l, o.Crashed) {
			continue
		}
		if _, ok := deaths.deathOf(l); ok {
			continue
		}
		res.add(Violation{Kind: LogEnd, Node: l.Node, Count: 1, File: l.File, Line: l.LastLine,
			Detail: fmt.Sprintf("the log of node %d (incarnation %d, started at %s:%d) ends at line %d (%s) without node.stopped: name a node that was killed with --crashed %d:%d, or give the lab's lab.json; otherwise the log was cut short",
				l.Node, l.Inc, l.File, l.Line, l.LastLine, l.LastTime.UTC().Format(time.RFC3339Nano), l.Node, l.Inc)})
	}
	return res
}

// crashed reports whether cs names l.
func crashed(l *Life, cs []Crash) bool {
	for _, c := range cs {
		if c.Node == l.Node && (c.Inc == 0 || c.Inc == l.Inc) {
			return true
		}
	}
	return false
}
