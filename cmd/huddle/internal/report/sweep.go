package report

import (
	"fmt"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// sweepChart plots metric m of every run against the swept value: the
// mean over the repeats, with a bar from the smallest to the largest.
func sweepChart(s *Sweep, rows []sweepRow, m metric) (*Chart, []stats, error) {
	ch := &Chart{Name: "sweep-" + m.Name, Title: m.Title + " against " + s.Param,
		About: m.About + fmt.Sprintf(" The line joins the means over the repeats of each value of %s; the bars reach from the smallest to the largest.", s.Param)}
	ch.CSV = [][]string{{s.Param, "mean", "min", "max", "runs"}}
	st := summarize(rows, m)
	for _, x := range st {
		ch.CSV = append(ch.CSV, []string{num(x.Value), num(x.Mean), num(x.Min), num(x.Max), fmt.Sprint(x.N)})
	}
	if len(st) == 0 {
		ch.Empty = "No run has this figure."
		if m.Name == "failover_ms" {
			ch.Empty = "No run has this figure: it needs a kill in the run's lab.json."
		}
		return ch, st, nil
	}
	var pts struct {
		plotter.XYs
		plotter.YErrors
	}
	for _, x := range st {
		pts.XYs = append(pts.XYs, plotter.XY{X: x.Value, Y: x.Mean})
		pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{x.Mean - x.Min, x.Max - x.Mean})
	}
	p := newPlot(s.Param, m.Unit)
	if err := addSeries(p, 0, "mean over the repeats", pts.XYs, true); err != nil {
		return nil, nil, err
	}
	bars, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return nil, nil, err
	}
	bars.Color = plotutil.Color(0)
	bars.CapWidth = vg.Points(6)
	p.Add(bars)
	fromZero(p)
	if len(st) == 1 { // one value: give the x axis some width around it
		p.X.Min, p.X.Max = st[0].Value-1, st[0].Value+1
	}
	return ch, st, ch.draw(p, plotHeight)
}
