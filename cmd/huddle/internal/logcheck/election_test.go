package logcheck_test

import (
	"fmt"
	"testing"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

func (w *logw) elected(event, view string, round, leader, sent uint64) *logw {
	return w.line(event, fmt.Sprintf(`"algorithm":"ring","round":%d,"view":%q,"leader":%d,"sent":%d`, round, view, leader, sent))
}

// TestElectionAgreement: nodes that learned the leader of one round of one
// view learned the same one, a member of the view; messages are summed per
// round. A node that learned another leader, or a leader outside the view,
// is a violation naming both log lines.
func TestElectionAgreement(t *testing.T) {
	clean := func() (*logw, *logw, *logw) {
		a := newLog(1).started(100).view("1.3", 3, 1, 2).elected(logs.LeaderChanged, "1.3", 4, 3, 0).elected(logs.ElectionDone, "1.3", 4, 3, 2)
		b := newLog(2).started(200).view("1.3", 3, 1, 2).elected(logs.LeaderChanged, "1.3", 4, 3, 0).elected(logs.ElectionDone, "1.3", 4, 3, 2)
		c := newLog(3).started(300).view("1.3", 3, 1, 2).elected(logs.ElectionWon, "1.3", 4, 3, 0).elected(logs.ElectionDone, "1.3", 4, 3, 2)
		return a, b, c
	}
	a, b, c := clean()
	res := load(t, a, b, c).CheckElection(logcheck.ElectionOptions{})
	if !res.OK() || len(res.Rounds) != 1 || res.Rounds[0].Messages != 6 || res.Rounds[0].Leader != 3 || res.Rounds[0].Members != 3 {
		t.Fatalf("a clean round: %v", res)
	}
	if want := "2n = 6 started by the highest, 3n−1 = 8 by the lowest"; res.Rounds[0].Formula() != want {
		t.Errorf("formula %q, want %q", res.Rounds[0].Formula(), want)
	}

	a, b, c = clean()
	b.elected(logs.LeaderChanged, "1.3", 4, 1, 0)
	expect(t, load(t, a, b, c).CheckElection(logcheck.ElectionOptions{}).Result, map[logcheck.Kind]int{logcheck.LeaderAgreement: 1},
		"node 2 learned leader 1, node 1 learned 3 (node1.json:3) [node2.json:5]")

	a, b, c = clean()
	a.elected(logs.LeaderChanged, "1.3", 5, 9, 0)
	expect(t, load(t, a, b, c).CheckElection(logcheck.ElectionOptions{}).Result, map[logcheck.Kind]int{logcheck.LeaderOutsideView: 1},
		"ring round 5 of view 1.3 elected node 9, not a member of the view [3 1 2] [node1.json:5]")
}
