package membership

import (
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
)

// A node is proven by an answer in time to a question asked of it, and of
// that incarnation; nothing else proves it.
func TestProverAnswers(t *testing.T) {
	x := wire.Member{ID: 7, Inc: 3}
	for _, tc := range []struct {
		name   string
		answer func(q wire.Proof) (id, inc uint64, a wire.Proof, at time.Duration, self bool)
		proved bool
	}{
		{"in time", func(q wire.Proof) (uint64, uint64, wire.Proof, time.Duration, bool) {
			return 7, 3, wire.Proof{Sent: q.Sent, Flags: wire.ProofAnswer}, time.Millisecond, false
		}, true},
		{"late", func(q wire.Proof) (uint64, uint64, wire.Proof, time.Duration, bool) {
			return 7, 3, wire.Proof{Sent: q.Sent, Flags: wire.ProofAnswer}, testST + 1, false
		}, false},
		{"starved", func(q wire.Proof) (uint64, uint64, wire.Proof, time.Duration, bool) {
			return 7, 3, wire.Proof{Sent: q.Sent, Flags: wire.ProofAnswer | wire.ProofStarved}, time.Millisecond, false
		}, false},
		{"starved, and so is the asker", func(q wire.Proof) (uint64, uint64, wire.Proof, time.Duration, bool) {
			return 7, 3, wire.Proof{Sent: q.Sent, Flags: wire.ProofAnswer | wire.ProofStarved}, time.Millisecond, true
		}, true},
		{"a time never asked", func(q wire.Proof) (uint64, uint64, wire.Proof, time.Duration, bool) {
			return 7, 3, wire.Proof{Sent: q.Sent + 1, Flags: wire.ProofAnswer}, time.Millisecond, false
		}, false},
		{"another incarnation", func(q wire.Proof) (uint64, uint64, wire.Proof, time.Duration, bool) {
			return 7, 4, wire.Proof{Sent: q.Sent, Flags: wire.ProofAnswer}, time.Millisecond, false
		}, false},
		{"a node not asked", func(q wire.Proof) (uint64, uint64, wire.Proof, time.Duration, bool) {
			return 8, 3, wire.Proof{Sent: q.Sent, Flags: wire.ProofAnswer}, time.Millisecond, false
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProver(testST, testST/2)
			qs := p.ask(t0, time.Millisecond, 20*time.Millisecond, []wire.Member{x})
			if len(qs) != 1 || qs[0].Target != 7 || qs[0].TargetInc != 3 || qs[0].Flags != 0 {
				t.Fatalf("questions %+v", qs)
			}
			id, inc, a, at, self := tc.answer(qs[0])
			proved, _ := p.answered(t0.Add(at), id, inc, &a, self)
			if proved != tc.proved || p.holds(t0.Add(at), wire.Member{ID: id, Inc: inc}) != tc.proved {
				t.Fatalf("proved %v, want %v", proved, tc.proved)
			}
			if tc.proved && p.holds(t0.Add(at+testST+1), x) {
				t.Fatal("a proof outlived the suspect timeout")
			}
		})
	}
}

// Questions go a retry apart at first, then twice as long each round
// that brings no proof, up to a heartbeat; a proof starts over.
func TestProverAsksLessWhileUnanswered(t *testing.T) {
	p := newProver(testST, testST/2)
	xs := []wire.Member{{ID: 7, Inc: 3}}
	const first, every = 4 * time.Millisecond, 20 * time.Millisecond
	var rounds []time.Duration
	for at := time.Duration(0); at < 100*time.Millisecond; at += time.Millisecond {
		if len(p.ask(t0.Add(at), first, every, xs)) > 0 {
			rounds = append(rounds, at)
		}
	}
	want := []time.Duration{0, 4, 12, 28, 48, 68, 88}
	if len(rounds) != len(want) {
		t.Fatalf("rounds at %v, want %v ms", rounds, want)
	}
	for i := range want {
		if rounds[i] != want[i]*time.Millisecond {
			t.Fatalf("rounds at %v, want %v ms", rounds, want)
		}
	}
	if p.ask(t0.Add(time.Second), first, every, nil) != nil || p.rounds != 0 {
		t.Fatal("nothing to ask should start the rounds over")
	}
}

// A node held off recovers once it has answered every question in time
// for proofRun suspect timeouts; a late answer starts the run over.
func TestProverRecovered(t *testing.T) {
	p := newProver(testST, testST/2)
	x := wire.Member{ID: 7, Inc: 3}
	answer := func(at, delay time.Duration) {
		qs := p.ask(t0.Add(at), time.Millisecond, 20*time.Millisecond, []wire.Member{x})
		if len(qs) == 0 {
			return
		}
		a := wire.Proof{Sent: qs[0].Sent, Flags: wire.ProofAnswer}
		p.answered(t0.Add(at+delay), 7, 3, &a, false)
	}
	for at := time.Duration(0); at <= proofRun*testST; at += 20 * time.Millisecond {
		delay := time.Millisecond
		if at == 100*time.Millisecond {
			delay = testST // late: the run starts again after it
		}
		answer(at, delay)
	}
	if p.recovered(t0.Add(proofRun*testST), x) {
		t.Fatal("recovered although an answer came late within the run")
	}
	for at := proofRun*testST + 20*time.Millisecond; at <= 2*proofRun*testST+100*time.Millisecond; at += 20 * time.Millisecond {
		answer(at, time.Millisecond)
	}
	if !p.recovered(t0.Add(2*proofRun*testST+100*time.Millisecond), x) {
		t.Fatalf("not recovered after answering in time for %v: %+v", proofRun*testST, p.proofs[7])
	}
}

// A node that keeps restarting enters its views at a bounded rate: after
// n restarts in a row, the next waits 2^n suspect timeouts after the last
// entered, up to maxHoldOff; one restart after a long life waits nothing.
func TestRestartsAdmittedAtABoundedRate(t *testing.T) {
	c := testCoordinator()
	v := func(inc uint64) View {
		return View{Members: []wire.Member{{ID: 1, Inc: 1}, {ID: 9, Inc: inc}}}
	}
	now := t0
	c.settle(now, v(1))
	var waits []time.Duration
	for inc := uint64(2); inc <= 9; inc++ {
		x := wire.Member{ID: 9, Inc: inc}
		at := now
		for c.restarting(at, x) {
			at = at.Add(10 * time.Millisecond)
		}
		waits = append(waits, at.Sub(now).Round(10*time.Millisecond))
		now = at
		c.settle(now, v(inc))
	}
	want := []time.Duration{0, 2 * testST, 4 * testST, 8 * testST, 16 * testST, 32 * testST, maxHoldOff * testST, maxHoldOff * testST}
	for i := range want {
		if waits[i] != want[i].Round(10*time.Millisecond) {
			t.Fatalf("restarts waited %v, want %v", waits, want)
		}
	}
	// A long life later, a restart enters at once.
	now = now.Add(restartWindow * testST)
	c.settle(now, v(9))
	if c.restarting(now, wire.Member{ID: 9, Inc: 10}) {
		t.Fatal("a restart after a long life waits")
	}
}

// Local health: two pauses in a row make a node starved; each pause of a
// starved run stretches its suspicions by a suspect timeout, up to
// maxStretch; each suspect timeout without a pause takes one back, and
// the first ends the starvation.
func TestHealthStretchesSuspicions(t *testing.T) {
	m := New(Options{JoinTimeout: testST, Engine: multicast.Options{Self: 1, Inc: 1, Heartbeat: 20 * time.Millisecond, SuspectTimeout: testST, Window: 64}}, t0)
	now := t0
	m.Paused(now, 30*time.Millisecond)
	if m.starved() || m.suspectTimeout() != testST {
		t.Fatalf("one pause: starved %v, suspect timeout %v", m.starved(), m.suspectTimeout())
	}
	for range 12 {
		now = now.Add(100 * time.Millisecond)
		m.Paused(now, 90*time.Millisecond)
	}
	if !m.starved() || m.suspectTimeout() != (maxStretch+1)*testST || m.Stats().HealthLevel != maxStretch {
		t.Fatalf("twelve pauses in a row: starved %v, suspect timeout %v, level %d", m.starved(), m.suspectTimeout(), m.Stats().HealthLevel)
	}
	now = now.Add(testST)
	m.Tick(now)
	if m.starved() || m.suspectTimeout() != maxStretch*testST {
		t.Fatalf("a suspect timeout without a pause: starved %v, suspect timeout %v", m.starved(), m.suspectTimeout())
	}
	for range maxStretch {
		now = now.Add(testST)
		m.Tick(now)
	}
	if m.suspectTimeout() != testST {
		t.Fatalf("after %d more suspect timeouts without a pause: suspect timeout %v", maxStretch, m.suspectTimeout())
	}
}
