package netmodel_test

import (
	"math"
	"strings"
	"testing"

	"github.com/huddle-lan/huddle/internal/netmodel"
)

// runs measures a sequence of fates: the fraction lost and the mean length
// of the runs of consecutive losses.
type runs struct {
	n, lost, bursts int
	inBurst         bool
}

func (s *runs) add(lost bool) {
	s.n++
	if lost {
		s.lost++
		if !s.inBurst {
			s.bursts++
		}
	}
	s.inBurst = lost
}

func (s *runs) loss() float64      { return float64(s.lost) / float64(s.n) }
func (s *runs) meanBurst() float64 { return float64(s.lost) / float64(s.bursts) }

// within fails t unless got is within tol (a fraction) of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*want {
		t.Errorf("%s = %.4f, want %.4f ± %.0f %%", what, got, want, tol*100)
	}
}

// TestGilbertLossAndBursts: with a fixed seed, over enough datagrams for
// 4000 bursts (which puts the standard error of the measures near 2 %; the tolerance is 8 %),
// the chain loses the fraction it was built for, in bursts of the mean
// length it was built for, for short and long bursts, light and heavy
// loss.
func TestGilbertLossAndBursts(t *testing.T) {
	for _, c := range []struct{ loss, burst float64 }{{0.05, 3}, {0.2, 4}, {0.01, 20}, {0.5, 2}, {0.75, 3}} {
		g, ok := netmodel.NewGilbert(c.loss, c.burst)
		if !ok {
			t.Fatalf("NewGilbert(%v, %v) found no chain", c.loss, c.burst)
		}
		if g.R != 1/c.burst || !(g.P > 0 && g.P <= 1) {
			t.Errorf("NewGilbert(%v, %v) = %+v", c.loss, c.burst, g)
		}
		r := netmodel.NewRand(7)
		var s runs
		bad := false
		for range int(4000 * c.burst / c.loss) {
			s.add(g.Step(r, &bad))
		}
		within(t, "loss", s.loss(), c.loss, 0.08)
		within(t, "mean burst", s.meanBurst(), c.burst, 0.08)
	}
}

// TestGilbertIndependent: no chain where losses are independent.
func TestGilbertIndependent(t *testing.T) {
	for _, c := range []struct{ loss, burst float64 }{{0.1, 0}, {0.1, 1}, {0, 5}, {1, 5}, {0.9, 3}} {
		if g, ok := netmodel.NewGilbert(c.loss, c.burst); ok {
			t.Errorf("NewGilbert(%v, %v) = %+v, want none", c.loss, c.burst, g)
		}
	}
}

func TestBurstProblem(t *testing.T) {
	for _, c := range []struct {
		loss, burst float64
		want        string // "" or a part of the problem
	}{
		{0.1, 0, ""}, {0.1, 1, ""}, {0.1, 1000, ""}, {0.75, 3, ""}, {1, 3, ""}, {0, 3, ""},
		{0.1, 0.5, "0.5 is out of range (0 or 1 for independent losses, else 1 to 1000)"},
		{0.1, -1, "out of range"}, {0.1, 1001, "out of range"}, {0.1, math.NaN(), "out of range"},
		{0.9, 3, "3 is too short for a loss of 0.9 (bursts of 3 allow a loss of at most 0.75"},
	} {
		got := netmodel.BurstProblem(c.loss, c.burst)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("BurstProblem(%v, %v) = %q, want %q", c.loss, c.burst, got, c.want)
		}
	}
}

// TestModelBursts: with Options.Burst, each receiver loses Loss of what
// it is sent in bursts of about Burst, with a chain of its own (the
// interleaving of two receivers does not merge their bursts), and the
// same seed gives the same fates.
func TestModelBursts(t *testing.T) {
	fates := func() (per map[int]*runs, trace []bool) {
		m := netmodel.NewModel[int](netmodel.Options{Loss: 0.2, Burst: 4})
		r := netmodel.NewRand(11)
		per = map[int]*runs{2: {}, 3: {}}
		for range 100_000 {
			for _, to := range []int{2, 3} {
				lost := m.Decide(r, 1, to).Cause == netmodel.CauseLoss
				per[to].add(lost)
				trace = append(trace, lost)
			}
		}
		return per, trace
	}
	per, a := fates()
	for to, s := range per {
		t.Logf("receiver %d: loss %.4f, mean burst %.2f", to, s.loss(), s.meanBurst())
		within(t, "loss", s.loss(), 0.2, 0.08)
		within(t, "mean burst", s.meanBurst(), 4, 0.08)
	}
	if _, b := fates(); !slicesEqual(a, b) {
		t.Error("the same seed gave different fates")
	}

	// SetLoss keeps the bursts; Burst 0 is independent loss, whose
	// bursts average 1/(1-loss).
	m := netmodel.NewModel[int](netmodel.Options{Burst: 4})
	m.SetLoss(0.1)
	r := netmodel.NewRand(3)
	var s runs
	for range 100_000 {
		s.add(m.Decide(r, 1, 2).Cause == netmodel.CauseLoss)
	}
	within(t, "mean burst after SetLoss", s.meanBurst(), 4, 0.05)
	m = netmodel.NewModel[int](netmodel.Options{Loss: 0.2})
	s = runs{}
	for range 100_000 {
		s.add(m.Decide(r, 1, 2).Cause == netmodel.CauseLoss)
	}
	within(t, "mean burst of independent loss", s.meanBurst(), 1/0.8, 0.05)
}

func slicesEqual(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
