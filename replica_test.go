package huddle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
)

// set is a replicated set of strings: a delivered message adds its
// payload.
type set struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *set) Apply(msg huddle.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[string(msg.Payload)] = true
}

func (s *set) Snapshot(w io.Writer) error { return json.NewEncoder(w).Encode(s.items()) }

func (s *set) read(r io.Reader) (map[string]bool, error) {
	var items []string
	if err := json.NewDecoder(r).Decode(&items); err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, x := range items {
		m[x] = true
	}
	return m, nil
}

func (s *set) Restore(r io.Reader) error {
	m, err := s.read(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.m = m
	s.mu.Unlock()
	return nil
}

func (s *set) items() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.m))
}

// mergingSet keeps what its side added while apart: the group's set,
// and its own items the group lacks sent again.
type mergingSet struct{ set }

func (s *mergingSet) Merge(r io.Reader) ([][]byte, error) {
	group, err := s.read(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var resend [][]byte
	for _, x := range slices.Sorted(maps.Keys(s.m)) {
		if !group[x] {
			resend = append(resend, []byte(x))
		}
	}
	s.m = group
	return resend, nil
}

// TestMergeWithState: four nodes split (quorum off, so every side goes
// on), each adds to the replicated set on its side, and the sides merge.
// Every node ends with the same set: with a plain StateMachine, the
// group's state, so that the other side's additions while apart are gone
// (the documented default: the larger side's state wins, between equal
// sides the newer view's); with a Merger, the union of everything every
// node added.
func TestMergeWithState(t *testing.T) {
	for _, split := range []int{2, 1, 3} { // how many of nodes 1..4 are on the left
		for _, merging := range []bool{false, true} {
			t.Run(fmt.Sprintf("split=%d|%d/merger=%v", split, 4-split, merging), func(t *testing.T) {
				testMergeWithState(t, split, merging)
			})
		}
	}
}

func testMergeWithState(t *testing.T, split int, merging bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	net := huddle.NewNetwork(0)
	var groups []*huddle.Group
	var sets []*set
	for id := uint64(1); id <= 4; id++ {
		cfg := config.Local()
		cfg.ID = id
		var sm huddle.StateMachine
		s := &mergingSet{set{m: map[string]bool{}}}
		sm = &s.set
		if merging {
			sm = s
		}
		g, err := net.Join(ctx, cfg, zerolog.Nop(), huddle.Replicated("set", sm))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Leave(context.Background())
		groups, sets = append(groups, g), append(sets, &s.set)
	}
	add := func(g *huddle.Group, item string) {
		t.Helper()
		if _, err := g.Service("set").Multicast(ctx, []byte(item), huddle.Total); err != nil {
			t.Fatalf("node %d adds %s: %v", g.Self().ID, item, err)
		}
	}
	// until waits for every node of gs to be in a view of exactly gs,
	// its state current and its set want.
	until := func(what string, gs []*huddle.Group, want []string) {
		t.Helper()
		for {
			var bad string
			for _, g := range gs {
				v, r, s := g.View(), g.Replica("set"), sets[g.Self().ID-1]
				switch {
				case len(v.Members) != len(gs):
					bad = fmt.Sprintf("node %d is in %v", g.Self().ID, v)
				case !r.IsCurrent():
					bad = fmt.Sprintf("node %d is not current (%v)", g.Self().ID, r.Err())
				case !slices.Equal(s.items(), want):
					bad = fmt.Sprintf("node %d holds %v", g.Self().ID, s.items())
				}
				if bad != "" {
					break
				}
			}
			if bad == "" {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: want %d nodes in one view, current, holding %v: %s", what, len(gs), want, bad)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	with := func(base []string, more ...string) []string {
		out := append(slices.Clone(base), more...)
		slices.Sort(out)
		return out
	}
	all := []string{"a1", "a2", "a3", "a4"}
	until("the first view", groups, nil)
	for i, g := range groups {
		add(g, all[i])
	}
	until("before the split", groups, all)

	left, right := groups[:split], groups[split:]
	net.Partition(left, right)
	until("the left side", left, all)
	until("the right side", right, all)
	var added [2][]string
	for side, gs := range [][]*huddle.Group{left, right} {
		for _, g := range gs {
			item := fmt.Sprintf("%c%d", "lr"[side], g.Self().ID)
			add(g, item)
			added[side] = append(added[side], item)
		}
	}
	until("the left side apart", left, with(all, added[0]...))
	until("the right side apart", right, with(all, added[1]...))

	net.Heal()
	// The larger side's state is the group's after the merge; between
	// equal sides, the newer view's.
	winner := 0
	if len(right) > len(left) || len(right) == len(left) && groups[0].View().ID.Less(groups[3].View().ID) {
		winner = 1
	}
	want := with(all, added[winner]...)
	if merging {
		want = with(all, append(added[0], added[1]...)...)
	}
	until("after the merge", groups, want)
	t.Logf("merged; the %s side's state was the group's; every node holds %v", []string{"left", "right"}[winner], want)
}
