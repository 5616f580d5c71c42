package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The plots' size: the width of a page's text column at 100 %.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 3.2 * vg.Inch
)

func init() {
	// Sans-serif reads better at small sizes; the SVG names the font
	// with fallbacks (fontFamily) for a browser without Liberation.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// Chart is one plot of the report: its SVG, the same figures as CSV, or
// the reason it has no data.
type Chart struct {
	Name  string // the files' base name: report/<Name>.svg and .csv
	Title string
	About string // what it shows and how it is computed, for people
	Empty string // when not "": there is no data, and why
	SVG   []byte // the standalone SVG document
	CSV   [][]string

	// A plot against time waits to be drawn (timed) until every plot of
	// the run's times is known: they are drawn on one x axis (drawTimed).
	plot   *plot.Plot
	height vg.Length
}

// fontFamily is the SVG's font, given fallbacks of the same metrics
// (Arial) and of the same kind.
var (
	svgFont   = []byte("font-family:Liberation Sans;")
	svgFontFB = []byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
)

// render draws p as an SVG document of size w×h, its left inset by
// indent.
func render(p *plot.Plot, w, h, indent vg.Length) ([]byte, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.Crop(draw.New(c), indent, 0, 0, 0))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b.Bytes(), svgFont, svgFontFB), nil
}

var svgHead = regexp.MustCompile(`(?s)^.*?<svg width="[^"]*" height="[^"]*"`)

// inline returns the SVG document as an element for an HTML page: no XML
// prolog, and the size left to the page's CSS (the viewBox keeps the
// aspect).
func inline(svg []byte, label string) string {
	var attr bytes.Buffer
	fmt.Fprintf(&attr, `<svg class="plot" role="img" aria-label="%s"`, htmlAttr(label))
	return string(svgHead.ReplaceAll(svg, attr.Bytes()))
}

// newPlot returns a plot with the report's axes and grid.
func newPlot(x, y string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = 0.4 * vg.Centimeter
	return p
}

// addSeries adds one line with points per series, in the palette's colours.
func addSeries(p *plot.Plot, i int, name string, xys plotter.XYs, points bool) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.2)
	p.Add(l)
	if !points {
		p.Legend.Add(name, l)
		return nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.Color, s.Shape, s.Radius = plotutil.Color(i), draw.CircleGlyph{}, vg.Points(2)
	p.Add(s)
	p.Legend.Add(name, l, s)
	return nil
}

// fromZero starts the y axis at 0 (the figures are counts and times)
// and raises its top by a fifth, for the legend to sit above the data.
func fromZero(p *plot.Plot) {
	p.Y.Min = 0
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.2
}

// addPoints adds points.
func addPoints(p *plot.Plot, i int, name string, xys plotter.XYs, shape draw.GlyphDrawer) error {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.Color, s.Shape, s.Radius = plotutil.Color(i), shape, vg.Points(2.2)
	if _, ok := shape.(draw.RingGlyph); ok {
		s.Radius = vg.Points(4.5) // around a point that coincides with it
	}
	p.Add(s)
	if name != "" {
		p.Legend.Add(name, s)
	}
	return nil
}

// num writes a figure for a CSV: empty for NaN, else the shortest exact
// text.
func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// millis writes milliseconds for a CSV, to the microsecond.
func millis(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(math.Round(x*1000)/1000, 'f', -1, 64)
}

func u(x uint64) string { return strconv.FormatUint(x, 10) }

// deliveriesChart plots each node's deliveries per second.
func deliveriesChart(f *Figures) (*Chart, error) {
	ch := &Chart{Name: "deliveries", Title: "Deliveries per second",
		About: "Messages each node delivered (deliver events, its own included) in each second of the run, counted from " + f.Origin + ", as the timeline counts: a moment is at the same place in both. A node that was down delivers nothing then."}
	n := 0
	for _, b := range f.PerSecond {
		n = max(n, len(b))
	}
	head := []string{"second"}
	for _, node := range f.Nodes {
		head = append(head, "node"+u(node))
	}
	ch.CSV = [][]string{head}
	if f.Deliveries == 0 {
		ch.Empty = "No deliver events: run the nodes with --trace-deliveries (the lab and the demo do)."
		return ch, nil
	}
	for s := range n {
		row := []string{strconv.Itoa(s)}
		for _, node := range f.Nodes {
			row = append(row, strconv.Itoa(at(f.PerSecond[node], s)))
		}
		ch.CSV = append(ch.CSV, row)
	}
	p := newPlot("", "deliveries per second")
	for i, node := range f.Nodes {
		var xys plotter.XYs
		for s := range n {
			xys = append(xys, plotter.XY{X: float64(s) + 0.5, Y: float64(at(f.PerSecond[node], s))})
		}
		if err := addSeries(p, i, "node "+u(node), xys, false); err != nil {
			return nil, err
		}
	}
	fromZero(p)
	ch.timed(p, f, plotHeight)
	return ch, nil
}

func at(b []int, i int) int {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// draw renders p into the chart.
func (ch *Chart) draw(p *plot.Plot, h vg.Length) error {
	svg, err := render(p, plotWidth, h, 0)
	ch.SVG = svg
	return err
}

// timeAxis makes p's x axis the run's time, the same in every plot of
// time: 0 at f.Start, to the run's end, whatever the plot's data span, so
// that a moment sits at the same place in each of them.
func timeAxis(p *plot.Plot, f *Figures) {
	p.X.Min, p.X.Max = 0, f.span()
	p.X.Label.Text = "seconds since " + f.Origin
}

// timed keeps p, a plot of f's time of height h, for drawTimed; it sets
// p's x axis, once every plotter is added (Add widens the axes to the
// data).
func (ch *Chart) timed(p *plot.Plot, f *Figures, h vg.Length) {
	timeAxis(p, f)
	ch.plot, ch.height = p, h
}

// drawTimed draws the plots of time among charts with their data areas
// aligned: each starts where the widest y axis among them ends, so that
// on the page, where they stand one above the other at the same width,
// one moment is at one place in all of them.
func drawTimed(charts []*Chart) error {
	var left vg.Length
	for _, ch := range charts {
		if ch.plot != nil {
			left = max(left, dataLeft(ch.plot, ch.height))
		}
	}
	for _, ch := range charts {
		if ch.plot == nil {
			continue
		}
		svg, err := render(ch.plot, plotWidth, ch.height, left-dataLeft(ch.plot, ch.height))
		if err != nil {
			return err
		}
		ch.SVG, ch.plot = svg, nil
	}
	return nil
}

// dataLeft is where p's data area begins when p is drawn w×h: past its y
// axis.
func dataLeft(p *plot.Plot, h vg.Length) vg.Length {
	c := draw.New(vgsvg.New(plotWidth, h))
	return p.DataCanvas(c).Min.X - c.Min.X
}

// latencyChart plots the distribution of send→deliver times, one curve
// per order.
func latencyChart(f *Figures) (*Chart, error) {
	ch := &Chart{Name: "latency", Title: "Delivery latency",
		About: "Time from a message's send event at its sender to its deliver event at each receiver, matched by sender, the sender's incarnation and seq; one curve per order (the fraction of deliveries within a latency). The times come from different nodes' clocks: on one machine they agree, across machines the latency includes their clocks' skew."}
	ch.CSV = [][]string{{"receiver", "sender", "sender_incarnation", "seq", "order", "latency_ms"}}
	for _, l := range f.Latency {
		ch.CSV = append(ch.CSV, []string{u(l.Receiver), u(l.Sender), u(l.SenderInc), u(l.Seq), l.Order, millis(l.Ms)})
	}
	if len(f.Latency) == 0 {
		ch.Empty = "No delivery matched to its send: run the nodes with --trace-deliveries (the lab and the demo do)."
		return ch, nil
	}
	by := map[string][]float64{}
	for _, l := range f.Latency {
		o := l.Order
		if o == "" {
			o = "unknown order"
		}
		by[o] = append(by[o], l.Ms)
	}
	p := newPlot("latency (ms, log scale)", "fraction of deliveries")
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	orders := slices.Sorted(func(yield func(string) bool) {
		for o := range by {
			if !yield(o) {
				return
			}
		}
	})
	// Clamped to a microsecond: a log scale has no 0, and clocks that
	// disagree can make a latency negative.
	const floor = 0.001
	for i, o := range orders {
		v := by[o]
		slices.Sort(v)
		xys := make(plotter.XYs, 0, len(v))
		for j, x := range v {
			xys = append(xys, plotter.XY{X: max(x, floor), Y: float64(j+1) / float64(len(v))})
		}
		if err := addSeries(p, i, fmt.Sprintf("%s (%d)", o, len(v)), thin(xys, 400), false); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Left = false
	p.Legend.Top = false
	return ch, ch.draw(p, plotHeight)
}

// thin keeps at most n points of a monotone curve, the last included:
// the SVG stays small and the curve the same to the eye.
func thin(xys plotter.XYs, n int) plotter.XYs {
	if len(xys) <= n {
		return xys
	}
	out := make(plotter.XYs, 0, n+1)
	step := float64(len(xys)) / float64(n)
	for i := 0; i < n; i++ {
		out = append(out, xys[int(float64(i)*step)])
	}
	return append(out, xys[len(xys)-1])
}

// repairChart plots NACKs and repairs per loss, per node and for the
// group.
func repairChart(f *Figures) (*Chart, error) {
	ch := &Chart{Name: "nacks", Title: "NACKs and repairs per loss",
		About: "From each node life's last node.stats, summed per node. A loss is a message a node found missing, a gap in a sender's sequence (the counter gaps_detected), once per receiver that missed it; recovered (gaps_recovered) are those received later. NACKs per loss is nacks_sent (NACK datagrams; one may ask for several messages, nacked_seqs) over gaps_detected; repairs per loss is repairs_sent over gaps_detected, both counted at every node. SRM's suppression keeps both near or below 1 when the group shares a loss. injected_drops counts the built-in drop's discards, when the lab used it."}
	ch.CSV = [][]string{{"node", "gaps_detected", "gaps_recovered", "nacks_sent", "nacked_seqs", "repairs_sent", "repairs_recv", "injected_drops", "nacks_per_loss", "repairs_per_loss"}}
	for _, r := range f.Repair {
		name := "all"
		if r.Node != 0 {
			name = u(r.Node)
		}
		ch.CSV = append(ch.CSV, []string{name, i64(r.Loss), i64(r.Recovered), i64(r.NACKs), i64(r.NACKedSeqs), i64(r.Repairs),
			i64(r.RepairsRecv), i64(r.InjectedDrops), num(r.NACKsPerLoss), num(r.RepairsPerLoss)})
	}
	switch {
	case len(f.Repair) == 0:
		ch.Empty = "No node.stats events: the nodes log their counters every stats_interval and at exit."
		return ch, nil
	case f.Repair[len(f.Repair)-1].Loss == 0:
		ch.Empty = "No loss: no node found a message missing (gaps_detected is 0 everywhere), so there is nothing to repair."
		return ch, nil
	}
	var names []string
	var nacks, repairs plotter.Values
	for _, r := range f.Repair {
		if r.Node == 0 {
			names = append(names, "all")
		} else {
			names = append(names, "node "+u(r.Node))
		}
		nacks, repairs = append(nacks, zero(r.NACKsPerLoss)), append(repairs, zero(r.RepairsPerLoss))
	}
	p := newPlot("", "per loss")
	w := vg.Points(14)
	for i, vs := range []plotter.Values{nacks, repairs} {
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, err
		}
		b.Color, b.LineStyle.Width = plotutil.Color(i), 0
		b.Offset = w * vg.Length(2*i-1) / 2
		p.Add(b)
		p.Legend.Add([]string{"NACKs sent per loss", "repairs sent per loss"}[i], b)
	}
	p.NominalX(names...)
	fromZero(p)
	return ch, ch.draw(p, plotHeight)
}

func i64(x int64) string { return strconv.FormatInt(x, 10) }

// zero returns x, or 0 for NaN (a bar of no height).
func zero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// electionChart plots each round's messages beside the algorithm's
// counts for one initiator.
func electionChart(f *Figures) (*Chart, error) {
	ch := &Chart{Name: "elections", Title: "Election rounds: messages against the formula",
		About: "Each round of each view (logcheck's election check): the election messages the nodes sent in it (election.done's sent, summed over every node, late messages included), beside the counts for one initiator with everyone alive: ring 2n when the highest starts, 3n−1 when the lowest does; bully n−1 and n²−1. Several initiators at once, or members that crash, make other counts."}
	ch.CSV = [][]string{{"index", "algorithm", "view", "round", "members", "leader", "messages", "nodes", "best", "worst"}}
	var pts, best, worst plotter.XYs
	for i, r := range f.Rounds {
		ch.CSV = append(ch.CSV, []string{strconv.Itoa(i + 1), r.Algorithm, r.View, u(r.Round), strconv.Itoa(r.Members), u(r.Leader),
			u(r.Messages), strconv.Itoa(r.Nodes), num(r.Best), num(r.Worst)})
		x := float64(i + 1)
		pts = append(pts, plotter.XY{X: x, Y: float64(r.Messages)})
		if !math.IsNaN(r.Best) {
			best, worst = append(best, plotter.XY{X: x, Y: r.Best}), append(worst, plotter.XY{X: x, Y: r.Worst})
		}
	}
	if len(f.Rounds) == 0 {
		ch.Empty = "No election events: the group ran no election."
		return ch, nil
	}
	p := newPlot("round (in order of round, then view; see the CSV)", "election messages")
	if len(best) > 0 {
		for i, xys := range []plotter.XYs{best, worst} {
			if err := addPoints(p, 2+i, []string{"best (highest initiates)", "worst (lowest initiates)"}[i], xys, draw.RingGlyph{}); err != nil {
				return nil, err
			}
		}
	}
	if err := addPoints(p, 0, "messages sent", pts, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	fromZero(p)
	return ch, ch.draw(p, plotHeight)
}

// lockCharts plots the waits of the lock's entries and their messages
// against 2(n−1).
func lockCharts(f *Figures) (wait, msgs *Chart, err error) {
	wait = &Chart{Name: "lock-wait", Title: "Lock waits",
		About: "Each entry of the lock (mutex.acquired): how long its node waited from its request (wait_ms), by the time of the grant. A wait includes the holds of the requests before it."}
	msgs = &Chart{Name: "lock-messages", Title: "Lock messages per entry",
		About: "Each entry of the lock (mutex.acquired): the requests sent and replies received for it (messages), beside 2(n−1) for the view of n it was granted in. A view change while it waits sends the request again: more."}
	head := []string{"time_s", "node", "view", "members", "wait_ms", "messages", "expected"}
	wait.CSV, msgs.CSV = [][]string{head}, [][]string{head}
	var w, m, e plotter.XYs
	for _, en := range f.Entries {
		row := []string{dec(f.seconds(en.Time)), u(en.Node), en.View, strconv.Itoa(en.Members), millis(en.WaitMs), strconv.Itoa(en.Messages), num(en.Expected())}
		wait.CSV, msgs.CSV = append(wait.CSV, row), append(msgs.CSV, row)
		x := f.seconds(en.Time)
		w, m = append(w, plotter.XY{X: x, Y: en.WaitMs}), append(m, plotter.XY{X: x, Y: float64(en.Messages)})
		if ex := en.Expected(); !math.IsNaN(ex) {
			e = append(e, plotter.XY{X: x, Y: ex})
		}
	}
	if len(f.Entries) == 0 {
		wait.Empty = "No lock entries: nobody was granted the lock (no mutex.acquired event)."
		msgs.Empty = wait.Empty
		return wait, msgs, nil
	}
	p := newPlot("", "wait (ms)")
	if err := addPoints(p, 0, "", w, draw.CircleGlyph{}); err != nil {
		return nil, nil, err
	}
	fromZero(p)
	wait.timed(p, f, plotHeight)
	p = newPlot("", "messages")
	if len(e) > 0 {
		if err := addPoints(p, 2, "2(n−1)", e, draw.RingGlyph{}); err != nil {
			return nil, nil, err
		}
	}
	if err := addPoints(p, 0, "messages of the entry", m, draw.CircleGlyph{}); err != nil {
		return nil, nil, err
	}
	fromZero(p)
	msgs.timed(p, f, plotHeight)
	return wait, msgs, nil
}

// palette returns the i-th colour of the palette, lightened by mix
// (0: as is, 1: white).
func palette(i int, mix float64) color.Color {
	r, g, b, _ := plotutil.Color(i).RGBA()
	l := func(c uint32) uint8 { return uint8(float64(c>>8)*(1-mix) + 255*mix) }
	return color.RGBA{l(r), l(g), l(b), 255}
}
