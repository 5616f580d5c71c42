package election

import (
	"fmt"
	"github.com/huddle-lan/huddle/internal/testutil"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// ids returns n IDs in increasing order, not contiguous.
func ids(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(100 + 7*i)
	}
	return out
}

// shuffled returns ids in an order SetView must sort.
func shuffled(ids []uint64) []uint64 {
	out := slices.Clone(ids)
	for i := range out {
		j := (i*5 + 3) % len(out)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// checkOneLeader checks that every member of group knows leader from the
// same round, that the leader alone won that round, and that every member
// finished it exactly once. It returns the round and the sum of the
// members' Done.Sent for it.
func checkOneLeader(t *testing.T, l *lan, group []uint64, leader uint64) (round uint64, sent int) {
	t.Helper()
	_, round = l.Nodes[group[0]].M.Leader()
	wins := 0
	for _, id := range group {
		n := l.Nodes[id]
		if ld, r := n.M.Leader(); ld != leader || r != round {
			t.Errorf("node %d: leader %d round %d, want %d round %d", id, ld, r, leader, round)
		}
		if n.M.busy() {
			t.Errorf("node %d: still in round %d (state %d)", id, n.M.round, n.M.state)
		}
		if d := n.M.NextDeadline(); !d.IsZero() {
			t.Errorf("node %d: a timer is armed at %v", id, d)
		}
		dones := 0
		for _, e := range n.Events {
			if e.Round != round {
				continue
			}
			switch e.Kind {
			case Won:
				wins++
				if id != leader {
					t.Errorf("node %d won round %d", id, round)
				}
			case Done:
				if !e.Late {
					dones++
				}
				sent += e.Sent
				if e.Leader != leader {
					t.Errorf("node %d: Done with leader %d", id, e.Leader)
				}
			}
		}
		if dones != 1 {
			t.Errorf("node %d: %d Done for round %d, want 1", id, dones, round)
		}
	}
	if wins != 1 {
		t.Errorf("%d Won in round %d, want 1", wins, round)
	}
	return round, sent
}

// checkRoundTotal checks the round's accounting: the leader's Round event
// counts the messages every member sent in the round until its end there
// (their Done, not the late ones), and every member learned that total
// from the leader's RESULT.
func checkRoundTotal(t *testing.T, l *lan, group []uint64, leader, round uint64) {
	t.Helper()
	want := 0
	for _, id := range group {
		for _, e := range l.Nodes[id].Events {
			if e.Round == round && e.Kind == Done && !e.Late {
				want += e.Sent
			}
		}
	}
	var got []int
	for _, e := range l.Nodes[leader].Events {
		if e.Round == round && e.Kind == Round {
			got = append(got, e.Sent)
		}
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("round %d: the leader's Round events count %v messages; the members' Done %d (the network carried %d)", round, got, want, l.messages())
	}
	for _, id := range group {
		if n, ok := l.Nodes[id].M.RoundTotal(round); !ok || n != want {
			t.Errorf("node %d knows %d messages for round %d (%v), want %d", id, n, round, ok, want)
		}
	}
}

// checkClean checks that no member ignored, or failed to decode, any message.
func checkClean(t *testing.T, l *lan) {
	t.Helper()
	for _, id := range l.IDs() {
		s := l.Nodes[id].M.Stats()
		if s.Stale+s.Malformed+s.Foreign+s.Ignored != 0 {
			t.Errorf("node %d: %+v", id, s)
		}
	}
}

// TestRingCounts checks Chang–Roberts's message counts (Chang and Roberts
// 1979): n ELECTION + n ELECTED when the highest starts; 3n−1 when the
// member after the highest on the ring starts (it stands, the others
// stand in turn, then the highest's candidacy goes round); with everyone
// starting at once, 2n−1 ELECTION when IDs increase along the ring (only
// the highest's goes past its successor) and n(n+1)/2 when they decrease
// (candidate k travels k hops). A member alone wins with no message.
func TestRingCounts(t *testing.T) {
	type tc struct {
		name     string
		order    RingOrder
		starters func(ring []uint64) []uint64 // the view's members in ring order
		election func(n int) int
	}
	tcs := []tc{
		{"highest", Ascending, func(r []uint64) []uint64 { return r[len(r)-1:] }, func(n int) int { return n }},
		{"highest/descending", Descending, func(r []uint64) []uint64 { return r[:1] }, func(n int) int { return n }},
		{"after-highest", Ascending, func(r []uint64) []uint64 { return r[:1] }, func(n int) int { return 2*n - 1 }},
		{"after-highest/descending", Descending, func(r []uint64) []uint64 { return r[1%len(r) : 1%len(r)+1] }, func(n int) int { return 2*n - 1 }},
		{"all/ascending", Ascending, func(r []uint64) []uint64 { return r }, func(n int) int { return 2*n - 1 }},
		{"all/descending", Descending, func(r []uint64) []uint64 { return r }, func(n int) int { return n * (n + 1) / 2 }},
	}
	for _, c := range tcs {
		for _, n := range []int{1, 2, 3, 5, 8, 13} {
			t.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(t *testing.T) {
				l := newLAN(t, Options{Algorithm: Ring, Order: c.order}, time.Millisecond)
				members := ids(n)
				l.add(members...)
				l.Install(shuffled(members)...)
				ring := slices.Clone(members)
				if c.order == Descending {
					slices.Reverse(ring)
				}
				for _, id := range c.starters(ring) {
					if !l.start(id) {
						t.Fatalf("Start at %d refused", id)
					}
				}
				l.Drain()
				wantE, wantD := c.election(n), n
				if n == 1 {
					wantE, wantD = 0, 0
				}
				if l.carried != (Counts{Election: uint64(wantE), Elected: uint64(wantD)}) {
					t.Errorf("carried %+v, want %d ELECTION and %d ELECTED", l.carried, wantE, wantD)
				}
				round, sent := checkOneLeader(t, l, members, members[n-1])
				if sent != l.messages() {
					t.Errorf("the members' Done.Sent add up to %d; the network carried %d", sent, l.messages())
				}
				checkRoundTotal(t, l, members, members[n-1], round)
				checkClean(t, l)
			})
		}
	}
}

// TestRingStartRefused checks that Start is a no-op without a view and
// during a round this node takes part in.
func TestRingStartRefused(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := New(Options{Self: 2})
	if m.Start(now) {
		t.Fatal("Start without a view")
	}
	m.SetView(now, "1.1", []uint64{1, 2, 3})
	if !m.Start(now) {
		t.Fatal("Start refused")
	}
	if m.Start(now) {
		t.Fatal("second Start during the round")
	}
	out := m.TakeOutput()
	if len(out) != 1 || out[0].To != 3 {
		t.Fatalf("output %v, want one ELECTION to 3", out)
	}
}

// TestSetViewEdges checks how SetView takes odd member lists.
func TestSetViewEdges(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := New(Options{Self: 5})
	m.SetView(now, "1.5", []uint64{5, 0, 9, 5, 7, 9})
	if !slices.Equal(m.members, []uint64{5, 7, 9}) {
		t.Fatalf("members %v, want [5 7 9]", m.members)
	}
	m.Start(now)
	if out := m.TakeOutput(); len(out) != 1 || out[0].To != 7 {
		t.Fatalf("output %v, want one ELECTION to 7", out)
	}
	m.SetView(now, "1.5", []uint64{9, 7, 5}) // the same view: nothing restarts
	if out := m.TakeOutput(); len(out) != 0 || m.round != 1 {
		t.Fatalf("the same view again: round %d, output %v", m.round, out)
	}
	m.SetView(now, "2.7", []uint64{7, 9}) // a view without this node
	if m.Start(now) || m.busy() || len(m.TakeOutput()) != 0 {
		t.Fatal("a node outside the view takes part")
	}
	var c codec
	m.Receive(now, 7, c.append(nil, message{kindElection, 9, 7}))
	if s := m.Stats(); s.Foreign != 1 {
		t.Fatalf("a message outside the view: %+v", s)
	}
	m.SetView(now, "3.5", []uint64{5, 7, 9}) // back: a joiner, it waits for an announcement
	if len(m.TakeOutput()) != 0 || m.NextDeadline().IsZero() {
		t.Fatal("a joiner did not wait")
	}
}

// TestRingJoinOrder reproduces Chang–Roberts's counts by choosing the
// ring through the join order (the view's order, as ring_voting places
// its workers): on a ring in a random order, 2n messages when the highest
// starts (the best case), 3n−1 when the member after it on the ring starts
// (the worst single initiator), and with every member starting at once
// n·H(n) ELECTIONs on average over random orders (Chang and Roberts
// 1979), each order's own count being the sum of each candidate's hops to
// the next higher member. `-seed=S` replays one seed.
func TestRingJoinOrder(t *testing.T) {
	testutil.ForSeeds(t, 1, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		run := func(n int, ring []uint64, starters []uint64) Counts {
			t.Helper()
			l := newLAN(t, Options{Algorithm: Ring, Order: JoinOrder}, time.Millisecond)
			l.Order = func([]uint64) []uint64 { return ring }
			l.add(ring...)
			l.Install(ring...)
			for _, id := range starters {
				if !l.start(id) {
					t.Fatalf("Start at %d refused", id)
				}
			}
			l.Drain()
			round, _ := checkOneLeader(t, l, slices.Sorted(slices.Values(ring)), slices.Max(ring))
			checkRoundTotal(t, l, slices.Sorted(slices.Values(ring)), slices.Max(ring), round)
			return l.carried
		}
		for _, n := range []int{3, 5, 8, 13} {
			ring := ids(n)
			rng.Shuffle(n, func(i, j int) { ring[i], ring[j] = ring[j], ring[i] })
			top := slices.Index(ring, slices.Max(ring))
			if c := run(n, ring, ring[top:top+1]); c.Total() != uint64(2*n) {
				t.Errorf("n=%d, ring %v, the highest starts: %+v, want 2n = %d", n, ring, c, 2*n)
			}
			after := ring[(top+1)%n]
			if c := run(n, ring, []uint64{after}); c.Total() != uint64(3*n-1) {
				t.Errorf("n=%d, ring %v, %d after the highest starts: %+v, want 3n−1 = %d", n, ring, after, c, 3*n-1)
			}
		}
		for _, n := range []int{8, 13} {
			const orders = 400
			total := 0
			for range orders {
				ring := ids(n)
				rng.Shuffle(n, func(i, j int) { ring[i], ring[j] = ring[j], ring[i] })
				c := run(n, ring, ring)
				if want := hopsToHigher(ring); c.Election != uint64(want) || c.Elected != uint64(n) {
					t.Fatalf("n=%d, ring %v, all start: %+v, want %d ELECTION (each candidate's hops to a higher member) and %d ELECTED", n, ring, c, want, n)
				}
				total += int(c.Election)
			}
			h := 0.0
			for k := 1; k <= n; k++ {
				h += 1 / float64(k)
			}
			avg, want := float64(total)/orders, float64(n)*h
			t.Logf("n=%d: %.2f ELECTIONs on average over %d random orders; n·H(n) = %.2f", n, avg, orders, want)
			if math.Abs(avg-want) > 0.05*want {
				t.Errorf("n=%d: %.2f ELECTIONs on average, want n·H(n) = %.2f within 5%%", n, avg, want)
			}
		}
	})
}

// hopsToHigher is the ELECTIONs of a ring where every member starts at
// once: each candidate's message travels to the next higher member (the
// highest's, all the way round).
func hopsToHigher(ring []uint64) int {
	n, sum := len(ring), 0
	for i, id := range ring {
		d := 1
		for ; d < n && ring[(i+d)%n] < id; d++ {
		}
		sum += d
	}
	return sum
}

// TestHopDelay: with a hop delay every message waits that long before it
// goes out, so a round of 2n messages from the highest takes 2n hops of
// it, and a member waiting for a leader waits two hops more per member.
func TestHopDelay(t *testing.T) {
	const hop = 500 * time.Millisecond
	l := newLAN(t, Options{Algorithm: Ring, HopDelay: hop}, time.Millisecond)
	members := ids(4)
	l.add(members...)
	l.Install(members...)
	start := l.Now
	if !l.start(members[3]) {
		t.Fatal("Start refused")
	}
	l.Drain()
	checkOneLeader(t, l, members, members[3])
	if took, least := l.Now.Sub(start), 8*hop; took < least || took > least+time.Second {
		t.Errorf("a round of 8 messages took %v, want 8 hop delays of %v and the network's 8 ms", took, hop)
	}
	if l.carried.Total() != 8 {
		t.Errorf("carried %+v, want 2n = 8", l.carried)
	}
}
