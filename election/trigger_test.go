package election

import (
	"slices"
	"testing"
	"time"
)

// TestViewTriggers checks what a view change starts (electOnView), with
// exact message counts, from a settled group 10, 20, 30, 40 led by 40
// (round 1). Timeouts: answer 50ms, coordinator 100ms; delay 1ms.
func TestViewTriggers(t *testing.T) {
	group := []uint64{10, 20, 30, 40}
	type tc struct {
		name     string
		alg      Algorithm
		quiet    bool           // let the group's election age past CoordinatorTimeout before act
		act      func(l *lan)   // the view changes measured
		want     Counts         // carried by act and what follows
		members  []uint64       // the final view
		leader   uint64         // its leader
		round    uint64         // from this round
		starters []uint64       // members that emit Started after act
		stale    map[uint64]int // Stats.Stale by member; all else must be clean
	}
	join := func(id uint64) func(l *lan) {
		return func(l *lan) { l.add(id); l.Install(append(slices.Clone(group), id)...) }
	}
	leave := func(l *lan) { l.Crash(40); l.Install(10, 20, 30) }
	lostAnnouncement := func(l *lan) {
		l.add(25)
		l.Install(10, 20, 25, 30, 40)
		l.Install(10, 20, 25, 30, 40) // the same members, a new view: the announcement in flight is lost
	}
	tcs := []tc{
		{name: "joiner below the leader", alg: Ring, quiet: true, act: join(25), want: Counts{Elected: 1},
			members: []uint64{10, 20, 25, 30, 40}, leader: 40, round: 1},
		{name: "joiner below the leader", alg: Bully, quiet: true, act: join(25), want: Counts{Coordinator: 1},
			members: []uint64{10, 20, 25, 30, 40}, leader: 40, round: 1},
		// Right after the election the bully leader tells again the members
		// its COORDINATOR went to: the view change may have lost some.
		// Those that had it count the copy stale.
		{name: "joiner right after the election", alg: Bully, act: join(25), want: Counts{Coordinator: 3 + 1},
			members: []uint64{10, 20, 25, 30, 40}, leader: 40, round: 1, stale: map[uint64]int{10: 1, 20: 1, 30: 1}},
		{name: "joiner right after the election", alg: Ring, act: join(25), want: Counts{Elected: 1},
			members: []uint64{10, 20, 25, 30, 40}, leader: 40, round: 1},
		// A higher member joins: the four old members start at once; 50
		// waits and takes part. Ring: E10..E40 go one hop each (4), 50
		// stands on E40 and E50 goes round (5); 5 ELECTED.
		{name: "higher joiner", alg: Ring, quiet: true, act: join(50), want: Counts{Election: 9, Elected: 5},
			members: []uint64{10, 20, 30, 40, 50}, leader: 50, round: 2, starters: []uint64{10, 20, 30, 40}},
		// Bully: 4+3+2+1 ELECTION and as many ANSWER; 50 wins on the first.
		{name: "higher joiner", alg: Bully, quiet: true, act: join(50), want: Counts{Election: 10, Answer: 10, Coordinator: 4},
			members: []uint64{10, 20, 30, 40, 50}, leader: 50, round: 2, starters: []uint64{10, 20, 30, 40}},
		// The leader leaves: only the highest that stays starts.
		{name: "leader leaves", alg: Ring, quiet: true, act: leave, want: Counts{Election: 3, Elected: 3},
			members: []uint64{10, 20, 30}, leader: 30, round: 2, starters: []uint64{30}},
		{name: "leader leaves", alg: Bully, quiet: true, act: leave, want: Counts{Coordinator: 2},
			members: []uint64{10, 20, 30}, leader: 30, round: 2, starters: []uint64{30}},
		{name: "a member below the leader leaves", alg: Bully, quiet: true,
			act: func(l *lan) { l.Crash(20); l.Install(10, 30, 40) }, members: []uint64{10, 30, 40}, leader: 40, round: 1},
		// A joiner whose announcement is lost waits, then starts round 1,
		// which is the group's round too. Ring: 30 tells it the leader
		// (ELECTED), it passes that on to 30, which knows it (stale).
		{name: "lost announcement", alg: Ring, quiet: true, act: lostAnnouncement, want: Counts{Election: 1, Elected: 1 + 2},
			members: []uint64{10, 20, 25, 30, 40}, leader: 40, round: 1, starters: []uint64{25},
			stale: map[uint64]int{30: 2}},
		// Bully: 30 and 40 answer; 40, the leader, sees that it never sent
		// 25 its COORDINATOR and sends it.
		{name: "lost announcement", alg: Bully, quiet: true, act: lostAnnouncement, want: Counts{Election: 2, Answer: 2, Coordinator: 1 + 1},
			members: []uint64{10, 20, 25, 30, 40}, leader: 40, round: 1, starters: []uint64{25}},
		{name: "alone", alg: Ring, quiet: true, act: func(l *lan) {
			for _, id := range []uint64{10, 20, 40} {
				l.Crash(id)
			}
			l.Install(30)
		}, members: []uint64{30}, leader: 30, round: 2, starters: []uint64{30}},
	}
	for _, c := range tcs {
		t.Run(string(c.alg)+"/"+c.name, func(t *testing.T) {
			l := newLAN(t, Options{Algorithm: c.alg, AnswerTimeout: 50 * time.Millisecond, CoordinatorTimeout: 100 * time.Millisecond}, time.Millisecond)
			l.add(group...)
			l.Install(group...)
			l.start(40)
			l.Drain()
			if c.quiet {
				l.Run(time.Second)
			}
			l.carried = Counts{}
			evs := map[uint64]int{}
			for _, id := range l.IDs() {
				evs[id] = len(l.Nodes[id].Events)
			}
			c.act(l)
			l.Drain()
			if l.carried != c.want {
				t.Errorf("carried %+v, want %+v", l.carried, c.want)
			}
			for _, id := range c.members {
				n := l.Nodes[id]
				if ld, r := n.M.Leader(); ld != c.leader || r != c.round {
					t.Errorf("node %d: leader %d round %d, want %d round %d", id, ld, r, c.leader, c.round)
				}
				started := false
				for _, e := range n.Events[evs[id]:] {
					started = started || e.Kind == Started
				}
				if started != slices.Contains(c.starters, id) {
					t.Errorf("node %d started: %v", id, started)
				}
				s := n.M.Stats()
				if s.Stale != uint64(c.stale[id]) || s.Malformed+s.Foreign+s.Ignored != 0 {
					t.Errorf("node %d: %+v", id, s)
				}
			}
		})
	}
}

// TestJoinerAdopts checks the joiner's side of an announcement: it starts
// nothing, adopts the leader of the group's round, and reports the time
// since it began to wait.
func TestJoinerAdopts(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Bully} {
		t.Run(string(alg), func(t *testing.T) {
			l := newLAN(t, Options{Algorithm: alg}, 3*time.Millisecond)
			l.add(10, 20, 30)
			l.Install(10, 20, 30)
			l.start(30)
			l.Drain()
			l.Run(time.Second)
			l.add(5)
			l.Install(5, 10, 20, 30)
			l.Drain()
			var kinds []EventKind
			for _, e := range l.Nodes[5].Events {
				kinds = append(kinds, e.Kind)
				if e.Kind != Started && (e.Leader != 30 || e.Round != 1 || e.Duration != 3*time.Millisecond) {
					t.Errorf("event %+v, want leader 30, round 1, 3ms", e)
				}
			}
			if !slices.Equal(kinds, []EventKind{LeaderChanged, Done}) {
				t.Errorf("joiner's events %v, want LeaderChanged, Done", kinds)
			}
		})
	}
}

// TestRestartInNewView checks that an election running across a view
// change restarts in the new view, and that its old messages, held across
// the change, are ignored as stale.
func TestRestartInNewView(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Bully} {
		t.Run(string(alg), func(t *testing.T) {
			l := newLAN(t, Options{Algorithm: alg, AnswerTimeout: 50 * time.Millisecond, CoordinatorTimeout: 100 * time.Millisecond}, time.Millisecond)
			members := ids(6)
			l.add(members...)
			l.Install(members...)
			l.start(members[0])
			l.Run(1500 * time.Microsecond) // the election is under way
			held := l.Flight.Sorted()      // delivered after the new view, as a loop that queued them would
			l.Crash(members[2])
			rest := slices.Delete(slices.Clone(members), 2, 3)
			l.Install(rest...)
			for _, f := range held {
				if f.From != members[2] && f.To != members[2] {
					l.Flight.Requeue(f)
				}
			}
			l.Drain()
			round, _ := checkOneLeader(t, l, rest, members[5])
			if round < 2 {
				t.Errorf("round %d: the election did not restart", round)
			}
			var stale uint64
			for _, id := range rest {
				stale += l.Nodes[id].M.Stats().Stale
			}
			if stale == 0 {
				t.Error("no old message was counted stale")
			}
		})
	}
}
