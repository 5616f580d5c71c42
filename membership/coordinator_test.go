package membership

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// The coordinator on its own: node 1 coordinating view 4.1[1 2 3].

// recvMap is a receiver: how far this node holds each source's stream.
type recvMap map[uint64]uint64

func (r recvMap) Received(src, _ uint64) uint64 { return r[src] }

var coordView = View{ID: wire.ViewID{Epoch: 4, Coord: 1}, Members: []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 1}, {ID: 3, Inc: 1}}}

func testCoordinator() *coordinator {
	c := newCoordinator(1, testST, 0, []Setting{{"heartbeat", "20ms"}})
	return &c
}

// testGroup is node 1's state: its view installed at t0, its members
// heard since, and commits of up to limit bytes (0: any).
func testGroup(limit int) group {
	g := group{view: coordView, viewAt: t0, suspects: map[uint64]uint64{}, heard: map[uint64]heard{},
		size: commitSize{received: recvMap{}, window: 64, limit: max(limit, 1<<20), self: 1, inc: 1, maxEpoch: 4}}
	for _, x := range coordView.Members {
		g.heard[x.ID] = heard{inc: 1, view: coordView.ID, at: t0.Add(time.Millisecond)}
	}
	return g
}

func ids(ms []wire.Member) string {
	var out []string
	for _, x := range ms {
		s := fmt.Sprint(x.ID)
		if x.Inc != 1 {
			s += fmt.Sprintf("@%d", x.Inc)
		}
		out = append(out, s)
	}
	return fmt.Sprint(out)
}

func TestCoordinatorProposalExcludes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(*coordinator, group)
		members string
		left    []uint64
		changed bool
	}{
		{"nothing", func(*coordinator, group) {}, "[1 2 3]", nil, false},
		{"suspected", func(_ *coordinator, g group) { g.suspects[3] = 1 }, "[1 2]", nil, true},
		{"an old incarnation suspected", func(_ *coordinator, g group) { g.suspects[3] = 9 }, "[1 2 3]", nil, false},
		{"this node suspected", func(_ *coordinator, g group) { g.suspects[1] = 1 }, "[1 2 3]", nil, false},
		{"reported, and not heard here either", func(c *coordinator, g group) { c.exclude(t0, 2, 1, 3); delete(g.heard, 2) }, "[1 3]", nil, true},
		{"reported, but heard here", func(c *coordinator, _ group) { c.exclude(t0, 2, 1, 3) }, "[1 2 3]", nil, false},
		{"reported by two", func(c *coordinator, _ group) { c.exclude(t0, 2, 1, 3); c.exclude(t0, 2, 1, 4) }, "[1 3]", nil, true},
		{"leaving", func(c *coordinator, g group) { c.leaving(2, 1); g.suspects[2] = 1 }, "[1 3]", []uint64{2}, true},
		{"restarted", func(c *coordinator, _ group) {
			c.join(t0, 2, 5, []wire.Setting{{Name: []byte("heartbeat"), Value: []byte("20ms")}})
			prove(c, t0, wire.Member{ID: 2, Inc: 5})
		},
			"[1 3 2@5]", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, g := testCoordinator(), testGroup(0)
			tc.setup(c, g)
			ch := c.proposal(t0.Add(time.Millisecond), g)
			if ids(ch.members) != tc.members || !slices.Equal(ch.left, tc.left) || ch.changed != tc.changed {
				t.Fatalf("proposal %s, left %v, changed %v; want %s, %v, %v", ids(ch.members), ch.left, ch.changed, tc.members, tc.left, tc.changed)
			}
		})
	}
}

// The larger view leads a merge; between equals, the newer; the other
// side after mergeWait suspect timeouts if it does not lead.
func TestCoordinatorMerges(t *testing.T) {
	older, newer := wire.ViewID{Epoch: 3, Coord: 8}, wire.ViewID{Epoch: 5, Coord: 8}
	now := t0.Add(10 * time.Millisecond)
	for _, tc := range []struct {
		name   string
		heard  map[uint64]heard
		merged string
	}{
		{"a smaller view", map[uint64]heard{8: {inc: 1, view: newer, at: now}}, "[8]"},
		{"as large and older", map[uint64]heard{7: {inc: 1, view: older, at: now}, 8: {inc: 1, view: older, at: now},
			9: {inc: 1, view: older, at: now}}, "[7 8 9]"},
		{"as large and newer", map[uint64]heard{7: {inc: 1, view: newer, at: now}, 8: {inc: 1, view: newer, at: now},
			9: {inc: 1, view: newer, at: now}}, "[]"},
		{"heard before the view", map[uint64]heard{8: {inc: 1, view: newer, at: t0}}, "[]"},
		{"not heard lately", map[uint64]heard{8: {inc: 1, view: newer, at: now.Add(-testST - 1)}}, "[]"},
		{"a joiner", map[uint64]heard{8: {inc: 1, at: now}}, "[]"},
		{"a member", map[uint64]heard{3: {inc: 1, view: newer, at: now}}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, g := testCoordinator(), testGroup(0)
			for id, h := range tc.heard {
				g.heard[id] = h
			}
			if got, _ := c.mergeable(now, g); fmt.Sprint(got) != tc.merged {
				t.Fatalf("merges %v, want %s", got, tc.merged)
			}
		})
	}
	c, g := testCoordinator(), testGroup(0)
	for id := range uint64(4) {
		g.heard[10+id] = heard{inc: 1, view: older, at: now}
	}
	c.offs.hold(now, 13, 1, testST, false)
	for _, at := range []time.Duration{0, mergeWait * testST} {
		for id := range g.heard {
			h := g.heard[id]
			h.at = now.Add(at)
			g.heard[id] = h
		}
		// Node 13's wait starts when its hold ends.
		got, held := c.mergeable(now.Add(at), g)
		if got, want := fmt.Sprint(got, held), map[bool]string{true: "[] []", false: "[10 11 12] []"}[at == 0]; got != want {
			t.Fatalf("a larger view, heard for %v: merges %s, want %s", at, got, want)
		}
	}
}

// fitting returns the smallest limit at which a commit of n members fits.
func fitting(t *testing.T, n int) int {
	s := testGroup(0).size
	var ms []wire.Member
	for id := range uint64(n) {
		ms = append(ms, wire.Member{ID: id + 1, Inc: 1})
	}
	for s.limit = 0; !s.fits(ms, 1); s.limit++ {
		if s.limit > 1<<16 {
			t.Fatal("no limit fits")
		}
	}
	return s.limit
}

// Joiners come in by ID while the commit fits; the others are refused,
// and joiners that stopped asking forgotten.
func TestCoordinatorAdmits(t *testing.T) {
	c, g := testCoordinator(), testGroup(0)
	g.size.limit = fitting(t, 5)
	ours := []wire.Setting{{Name: []byte("heartbeat"), Value: []byte("20ms")}}
	for _, id := range []uint64{9, 7, 8} {
		c.join(t0, id, 1, ours)
	}
	c.join(t0.Add(-testST), 6, 1, ours)
	c.join(t0, 5, 1, ours)
	for _, id := range []uint64{6, 7, 8, 9} {
		prove(c, t0, wire.Member{ID: id, Inc: 1})
	}
	ch := c.proposal(t0.Add(time.Millisecond), g)
	if ids(ch.ask) != "[5]" {
		t.Fatalf("asks %s for proof, want the joiner that has not shown it can take part", ids(ch.ask))
	}
	if ids(ch.members) != "[1 2 3 7 8]" || len(ch.refused) != 1 || ch.refused[0] != (refusal{9, 1, "members", "5", "one more"}) {
		t.Fatalf("proposal %s, refused %+v", ids(ch.members), ch.refused)
	}
	if len(c.joiners) != 3 {
		t.Fatalf("joiners %v: the refused one and the one that stopped asking should be gone, the one not proven waits", c.joiners)
	}
}

func TestCoordinatorJoin(t *testing.T) {
	hb := func(v string) []wire.Setting { return []wire.Setting{{Name: []byte("heartbeat"), Value: []byte(v)}} }
	for _, tc := range []struct {
		name   string
		theirs []wire.Setting
		want   verdict
		r      refusal
	}{
		{"the same", hb("20ms"), taken, refusal{}},
		{"another value", hb("1s"), refused, refusal{5, 1, "heartbeat", "20ms", "1s"}},
		{"missing", nil, refused, refusal{5, 1, "heartbeat", "20ms", ""}},
		{"one more", append(hb("20ms"), wire.Setting{Name: []byte("x"), Value: []byte("1")}), refused, refusal{5, 1, "x", "", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCoordinator()
			if v, r := c.join(t0, 5, 1, tc.theirs); v != tc.want || r != tc.r {
				t.Fatalf("verdict %d, %+v; want %d, %+v", v, r, tc.want, tc.r)
			}
		})
	}
	c := testCoordinator()
	c.unanswered(t0, wire.Member{ID: 5, Inc: 1})
	if v, _ := c.join(t0, 5, 1, hb("20ms")); v != waits {
		t.Fatal("a joiner that did not answer its admission is taken at once")
	}
	for id := range uint64(maxJoiners) {
		c.join(t0, 100+id, 1, hb("20ms"))
	}
	if v, _ := c.join(t0, 6, 1, hb("20ms")); v != waits {
		t.Fatalf("a join over the cap of %d is taken", maxJoiners)
	}
	if v, _ := c.join(t0, 100, 1, hb("20ms")); v != taken {
		t.Fatal("a pending joiner asking again is not taken")
	}
}

// From the second view change in a row in which a node to admit did not
// answer, nobody is merged or admitted for a while; a change that takes
// nodes in, all of which answered, counts afresh.
func TestCoordinatorAdmissionsFail(t *testing.T) {
	c, g := testCoordinator(), testGroup(0)
	c.join(t0, 9, 1, []wire.Setting{{Name: []byte("heartbeat"), Value: []byte("20ms")}})
	c.admitFailed(t0, time.Second)
	c.admitFailed(t0, time.Second) // the same view change: counted once
	c.installed(true)
	c.admitFailed(t0, time.Second)
	if ch := c.proposal(t0.Add(time.Millisecond), g); ch.changed || c.admits.fails != 2 {
		t.Fatalf("after two failed view changes: proposal %s, %d in a row", ids(ch.members), c.admits.fails)
	}
	c.installed(false)
	c.join(t0.Add(time.Second), 9, 1, []wire.Setting{{Name: []byte("heartbeat"), Value: []byte("20ms")}})
	prove(c, t0.Add(time.Second), wire.Member{ID: 9, Inc: 1})
	if ch := c.proposal(t0.Add(time.Second), g); ids(ch.members) != "[1 2 3 9]" {
		t.Fatalf("after the hold: proposal %s, want the joiner", ids(ch.members))
	}
	c.installed(true)
	if c.admits.fails != 0 {
		t.Fatal("an admission that went through did not reset the count")
	}
}

// Changes that arrive together share one view change, delay after the
// first.
func TestCoordinatorDue(t *testing.T) {
	c := testCoordinator()
	d := 2 * time.Millisecond
	for _, s := range []struct {
		at      time.Duration
		changed bool
		want    bool
	}{{0, true, false}, {time.Millisecond, true, false}, {d, true, true}, {3 * time.Millisecond, true, false}, {4 * time.Millisecond, false, false}, {5 * time.Millisecond, true, false}} {
		if got := c.due(t0.Add(s.at), s.changed, d); got != s.want {
			t.Fatalf("at +%v (changed %v): due %v, want %v", s.at, s.changed, got, s.want)
		}
	}
}

// A view settles what it made: joiners in it, exclusions and leaves of
// members no longer in it, and the hold-offs of nodes it took in.
func TestCoordinatorSettle(t *testing.T) {
	c := testCoordinator()
	c.join(t0, 9, 1, []wire.Setting{{Name: []byte("heartbeat"), Value: []byte("20ms")}})
	c.join(t0, 8, 1, []wire.Setting{{Name: []byte("heartbeat"), Value: []byte("20ms")}})
	c.exclude(t0, 3, 1, 2)
	c.leaving(2, 1)
	c.unanswered(t0, wire.Member{ID: 7, Inc: 1})
	c.settle(t0, View{Members: []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 1}, {ID: 9, Inc: 1}, {ID: 7, Inc: 1}}})
	if _, ok := c.joiners[8]; len(c.joiners) != 1 || !ok || len(c.excluded) != 0 || !c.isLeaving(2) || len(c.offs.offs) != 0 {
		t.Fatalf("joiners %v, excluded %v, leavers %v, held off %v", c.joiners, c.excluded, c.leavers, c.offs.offs)
	}
}

// prove gives coordinator c a proof of node x at now, as an answer in
// time to its probe would.
func prove(c *coordinator, now time.Time, x wire.Member) {
	c.proofs.proofs[x.ID] = proof{inc: x.Inc, at: now, since: now}
}

// A suspicion one member reports of a member this node still hears waits
// for confirmation: a second report, this node's own silence of half a
// suspect timeout, or a suspect timeout of reports. Reports that stop
// lapse.
func TestCoordinatorConfirmsSuspicions(t *testing.T) {
	c, g := testCoordinator(), testGroup(0)
	hear := func(at time.Duration) { g.heard[2] = heard{inc: 1, view: coordView.ID, at: t0.Add(at)} }
	for at := time.Duration(0); at < testST; at += 10 * time.Millisecond {
		c.exclude(t0.Add(at), 2, 1, 3)
		hear(at)
		if ch := c.proposal(t0.Add(at), g); ch.changed {
			t.Fatalf("at +%v: member 2, heard here, excluded on one member's report", at)
		}
	}
	if ch := c.proposal(t0.Add(testST), g); !ch.changed || ids(ch.members) != "[1 3]" {
		t.Fatalf("a suspect timeout of reports: proposal %s", ids(ch.members))
	}
	c, g = testCoordinator(), testGroup(0)
	c.exclude(t0, 2, 1, 3)
	hear(0)
	if ch := c.proposal(t0.Add(testST/2), g); !ch.changed {
		t.Fatal("not heard here for half a suspect timeout either: not excluded")
	}
	c, g = testCoordinator(), testGroup(0)
	c.exclude(t0, 2, 1, 3)
	for at := time.Duration(0); at <= testST; at += 10 * time.Millisecond {
		hear(at)
		if ch := c.proposal(t0.Add(at), g); ch.changed {
			t.Fatalf("at +%v: excluded on a report that lapsed", at)
		}
	}
	if _, ok := c.excluded[2]; ok {
		t.Fatal("a lapsed report is still held")
	}
}
