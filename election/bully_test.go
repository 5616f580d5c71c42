package election

import (
	"fmt"
	"testing"
	"time"
)

var bullyOpts = Options{Algorithm: Bully, AnswerTimeout: 50 * time.Millisecond, CoordinatorTimeout: 100 * time.Millisecond}

// TestBullyCounts checks Garcia-Molina's message counts.
//
// When the highest member leaves the view, the new highest (the old
// second-highest) starts, finds no higher member and wins at once: n−2
// COORDINATOR (n the size before the leader left) and nothing else, the
// algorithm's best case.
//
// When the lowest starts with all n alive, member k (by rank from 1)
// sends ELECTION to the n−k members above it, each of which answers and
// holds its own election once: Σ(n−k) = n(n−1)/2 ELECTION, as many
// ANSWER, and n−1 COORDINATOR from the highest, n(n−1) + n−1 = n²−1 in
// all, the worst case.
func TestBullyCounts(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8, 13} {
		t.Run(fmt.Sprintf("leader-left/n=%d", n), func(t *testing.T) {
			l := newLAN(t, bullyOpts, time.Millisecond)
			members := ids(n)
			l.add(members...)
			l.Install(shuffled(members)...)
			l.start(members[n-1])
			l.Drain()
			if want := (Counts{Coordinator: uint64(n - 1)}); l.carried != want {
				t.Fatalf("the highest's own election: carried %+v, want %+v", l.carried, want)
			}
			l.carried = Counts{}
			l.Crash(members[n-1])
			l.Install(members[:n-1]...)
			l.Drain()
			if want := (Counts{Coordinator: uint64(n - 2)}); l.carried != want {
				t.Errorf("carried %+v, want %+v", l.carried, want)
			}
			round, sent := checkOneLeader(t, l, members[:n-1], members[n-2])
			if sent != l.messages() {
				t.Errorf("the members' Done.Sent add up to %d; the network carried %d", sent, l.messages())
			}
			if n > 2 {
				checkRoundTotal(t, l, members[:n-1], members[n-2], round)
			}
			for _, id := range members[:n-1] {
				for _, e := range l.Nodes[id].Events {
					if e.Kind == Started && e.Round == round && id != members[n-2] {
						t.Errorf("node %d started round %d too", id, round)
					}
				}
			}
			checkClean(t, l)
		})
	}
	for _, n := range []int{2, 3, 5, 8, 13} {
		t.Run(fmt.Sprintf("lowest-starts/n=%d", n), func(t *testing.T) {
			l := newLAN(t, bullyOpts, time.Millisecond)
			members := ids(n)
			l.add(members...)
			l.Install(shuffled(members)...)
			l.start(members[0])
			l.Drain()
			half := uint64(n * (n - 1) / 2)
			if want := (Counts{Election: half, Answer: half, Coordinator: uint64(n - 1)}); l.carried != want {
				t.Errorf("carried %+v, want %+v", l.carried, want)
			}
			if l.messages() != n*n-1 {
				t.Errorf("%d messages, want n²−1 = %d", l.messages(), n*n-1)
			}
			// The highest wins on the lowest's ELECTION and is done; the
			// ELECTIONs of the n−2 members between arrive after, and the
			// ANSWERs it still owes them each get a late Done.
			round, sent := checkOneLeader(t, l, members, members[n-1])
			if sent != l.messages() {
				t.Errorf("the members' Done.Sent add up to %d; the network carried %d", sent, l.messages())
			}
			checkRoundTotal(t, l, members, members[n-1], round)
			late := 0
			for _, e := range l.Nodes[members[n-1]].Events {
				if e.Kind == Done && e.Late {
					late++
				}
			}
			if late != n-2 {
				t.Errorf("the winner logged %d late Done, want one for each of the n−2 = %d ANSWERs after its win", late, n-2)
			}
			checkClean(t, l)
		})
	}
}

// TestBullyTimeouts drives one machine by hand through its two timers.
func TestBullyTimeouts(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var c codec
	answer := func(round, from uint64) []byte {
		return c.append(nil, message{kind: kindAnswer, round: round, id: from})
	}
	t.Run("no answer: win", func(t *testing.T) {
		m := New(Options{Self: 2, Algorithm: Bully, AnswerTimeout: 10 * time.Millisecond})
		m.SetView(t0, "1.1", []uint64{1, 2, 3})
		m.Start(t0)
		if out := m.TakeOutput(); len(out) != 1 || out[0].To != 3 {
			t.Fatalf("output %v, want one ELECTION to 3", out)
		}
		if d := m.NextDeadline(); !d.Equal(t0.Add(10 * time.Millisecond)) {
			t.Fatalf("deadline %v", d)
		}
		m.Tick(t0.Add(9 * time.Millisecond))
		if ld, _ := m.Leader(); ld != 0 {
			t.Fatal("won before the answer timeout")
		}
		m.Tick(t0.Add(10 * time.Millisecond))
		if ld, r := m.Leader(); ld != 2 || r != 1 {
			t.Fatalf("leader %d round %d, want 2 round 1", ld, r)
		}
		if out := m.TakeOutput(); len(out) != 2 {
			t.Fatalf("output %v, want COORDINATOR to 1 and 3", out)
		}
	})
	t.Run("answer, no coordinator: start again", func(t *testing.T) {
		m := New(Options{Self: 2, Algorithm: Bully, AnswerTimeout: 10 * time.Millisecond, CoordinatorTimeout: 30 * time.Millisecond})
		m.SetView(t0, "1.1", []uint64{1, 2, 3})
		m.Start(t0)
		m.Receive(t0.Add(2*time.Millisecond), 3, answer(1, 3))
		if d := m.NextDeadline(); !d.Equal(t0.Add(32 * time.Millisecond)) {
			t.Fatalf("deadline %v, want the coordinator timeout at 32ms", d)
		}
		m.Receive(t0.Add(3*time.Millisecond), 3, answer(1, 3)) // a second answer does not rearm
		m.Tick(t0.Add(32 * time.Millisecond))
		if m.round != 2 || m.state != candidate {
			t.Fatalf("round %d state %d, want a new round 2 as a candidate", m.round, m.state)
		}
		var started int
		for _, e := range m.TakeEvents() {
			if e.Kind == Started {
				started++
			}
		}
		if started != 2 || m.Stats().Started != 2 {
			t.Fatalf("%d Started events, stats %+v", started, m.Stats())
		}
	})
}
