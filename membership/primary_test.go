package membership

import (
	"slices"
	"testing"

	"github.com/huddle-lan/huddle/internal/wire"
)

// TestQuorumDecide is the policy's table: which views are primary, from
// what their members know.
func TestQuorumDecide(t *testing.T) {
	ms := func(ids ...uint64) []wire.Member {
		out := make([]wire.Member, len(ids))
		for i, id := range ids {
			out[i] = wire.Member{ID: id, Inc: 1}
		}
		return out
	}
	pv := func(gen uint64, ids ...uint64) wire.PrimaryView {
		return wire.PrimaryView{Gen: gen, View: wire.ViewID{Epoch: gen, Coord: ids[0]}, Members: ms(ids...)}
	}
	k := func(last wire.PrimaryView, attempts ...wire.PrimaryView) wire.Known {
		return wire.Known{Last: last, Attempts: attempts}
	}
	none := wire.Known{}
	five := pv(3, 1, 2, 3, 4, 5)
	maj := Quorum{Policy: QuorumMajority, Expected: 5}
	for _, c := range []struct {
		name    string
		q       Quorum
		members []wire.Member
		known   []wire.Known
		left    []uint64
		want    uint64
	}{
		{"off", Quorum{}, ms(1), []wire.Known{k(five)}, nil, 4},
		{"first start, a majority", maj, ms(1, 2, 3), []wire.Known{none, none, none}, nil, 0},
		{"first start, static, a majority", Quorum{Policy: QuorumStatic, Expected: 5}, ms(1, 2, 3), []wire.Known{none, none, none}, nil, 1},
		{"first start, every node", maj, ms(1, 2, 3, 4, 5), []wire.Known{none, none, none, none, none}, nil, 1},
		{"first start, a minority", maj, ms(1, 2), []wire.Known{none, none}, nil, 0},
		{"first start, waiting for all", Quorum{Policy: QuorumStatic, Expected: 5, WaitForAll: true}, ms(1, 2, 3, 4), []wire.Known{none, none, none, none}, nil, 0},
		{"every node", maj, ms(1, 2, 3, 4, 5), []wire.Known{none, none, none, none, k(five)}, nil, 4},
		{"3 of the last 5", maj, ms(3, 4, 5), []wire.Known{k(five), k(five), k(five)}, nil, 4},
		{"2 of the last 5", maj, ms(4, 5), []wire.Known{k(five), k(five)}, nil, 0},
		{"2 of the last 5, 1 left gracefully", maj, ms(4, 5), []wire.Known{k(five), k(five)}, []uint64{1}, 0},
		{"2 of the last 4 with the lowest", maj, ms(1, 2), []wire.Known{k(five), k(five)}, []uint64{5}, 4},
		{"2 of the last 4 without the lowest", maj, ms(3, 4), []wire.Known{k(five), k(five)}, []uint64{5}, 0},
		{"the tie-breaker's half", Quorum{Policy: QuorumMajority, Expected: 5, TieBreaker: 4}, ms(3, 4), []wire.Known{k(five), k(five)}, []uint64{5}, 4},
		{"a fresh node counts for nothing", maj, ms(4, 5, 6), []wire.Known{k(five), k(five), none}, nil, 0},
		{"a stale last view is superseded", maj, ms(1, 2), []wire.Known{k(pv(4, 1, 2, 3)), k(five)}, nil, 5},
		{"an attempt binds", maj, ms(1, 4, 5), []wire.Known{k(five, pv(4, 1, 2, 3)), k(five), k(five)}, nil, 0},
		{"an attempt held", maj, ms(1, 2, 4), []wire.Known{k(five, pv(4, 1, 2, 4)), k(five), k(five)}, nil, 5},
		{"an attempt settled by a newer view", maj, ms(1, 2), []wire.Known{k(pv(5, 1, 2, 3)), k(five, pv(4, 3, 4, 5))}, nil, 6},
		{"an attempt on a view nobody here installed", maj, ms(2, 4, 6), []wire.Known{none, k(wire.PrimaryView{}, pv(5, 1, 2, 4)), none}, nil, 0},
		{"an attempt on a view one of them installed, not held", maj, ms(2, 4, 3), []wire.Known{none, k(wire.PrimaryView{}, pv(5, 1, 2, 4)), k(pv(4, 1, 3))}, nil, 0},
		{"an attempt on a view one of them installed, held", maj, ms(1, 2, 4), []wire.Known{k(pv(4, 1)), k(wire.PrimaryView{}, pv(5, 1, 2, 4)), none}, nil, 6},
		{"a full list of attempts", maj, ms(1, 2, 3, 4), []wire.Known{k(five, slices.Repeat([]wire.PrimaryView{pv(4, 1, 2, 3)}, wire.MaxPrimaryAttempts)...)}, nil, 0},
		{"a restarted node counts for nothing", maj, []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 2}, {ID: 6, Inc: 1}}, []wire.Known{k(five), none, none}, nil, 0},
		{"nor breaks a tie", maj, []wire.Member{{ID: 1, Inc: 2}, {ID: 2, Inc: 1}, {ID: 3, Inc: 1}}, []wire.Known{none, k(five), k(five)}, []uint64{5}, 0},
		{"static 3 of 5", Quorum{Policy: QuorumStatic, Expected: 5}, ms(7, 8, 9), []wire.Known{none, none, none}, nil, 1},
		{"static 2 of 4", Quorum{Policy: QuorumStatic, Expected: 4}, ms(1, 2), []wire.Known{none, none}, nil, 0},
		{"static 2 of 4 with the tie-breaker", Quorum{Policy: QuorumStatic, Expected: 4, TieBreaker: 2}, ms(1, 2), []wire.Known{none, none}, nil, 1},
	} {
		if got := c.q.decide(c.members, c.known, c.left); got != c.want {
			t.Errorf("%s: generation %d, want %d", c.name, got, c.want)
		}
	}
}
