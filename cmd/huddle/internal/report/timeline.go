package report

import (
	"image/color"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// timeline draws one row per node: its lives, the views it installed,
// the leader it knew, its holds of the lock, and the lab's faults across
// every row. It is a plot.Plotter of its own: gonum/plot has no Gantt
// chart.
type timeline struct {
	f     *Figures
	rows  map[uint64]float64 // node → y
	lives []*logcheck.Life
	lab   []LabEvent
	views map[string]int // view key → colour, in order of first install
	fault []LabEvent     // lab.fault events with a time
}

// Where things sit in a row (data units: a row is 1 high).
const (
	lockLo, lockHi     = 0.22, 0.40
	viewLo, viewHi     = -0.16, 0.18
	leaderLo, leaderHi = -0.42, -0.22
	// Above the rows: the legend, and under it two lines of fault labels
	// when there are faults.
	legendBand, faultBand = 0.45, 0.65
)

func timelineChart(r *Run, f *Figures) (*Chart, error) {
	ch := &Chart{Name: "timeline", Title: "Timeline",
		About: "One row per node. The band: the views it installed (epoch.coordinator; one colour per view, the same in every row, so a view that the nodes agree on lines up). Under it, the leader this node learned (leader.changed). Over it, in black, its holds of the lock. A life starts at ▲ (node.started) and ends at ■ (node.stopped) or ✕ (its log ends without node.stopped: killed, or still running). Red lines: the faults the lab applied (lab.json), with the nodes they hit ringed."}
	ch.CSV = [][]string{{"node", "incarnation", "kind", "start_s", "end_s", "label"}}
	t := &timeline{f: f, rows: map[uint64]float64{}, lives: r.Logs.Lives, views: map[string]int{}}
	for i, node := range f.Nodes {
		t.rows[node] = float64(len(f.Nodes) - 1 - i)
	}
	for _, e := range r.Lab {
		if e.Event == labFault && !e.Time.IsZero() {
			t.fault = append(t.fault, e)
			ch.CSV = append(ch.CSV, []string{idList(e.Nodes), "", "fault", dec(f.seconds(e.Time)), "", e.Label()})
		}
	}
	for _, l := range t.lives {
		end := "stopped"
		if l.Stopped.IsZero() {
			end = "killed or running"
		}
		ch.CSV = append(ch.CSV, []string{u(l.Node), u(l.Inc), "life", dec(f.seconds(l.Started)), dec(f.seconds(lifeEnd(l))), end})
		t.eachView(l, func(v *logcheck.View, from, to time.Time) {
			if _, ok := t.views[v.Key()]; !ok {
				t.views[v.Key()] = len(t.views)
			}
			ch.CSV = append(ch.CSV, []string{u(l.Node), u(l.Inc), "view", dec(f.seconds(from)), dec(f.seconds(to)), v.ID})
		})
		t.eachLeader(l, func(leader uint64, from, to time.Time) {
			ch.CSV = append(ch.CSV, []string{u(l.Node), u(l.Inc), "leader", dec(f.seconds(from)), dec(f.seconds(to)), u(leader)})
		})
	}
	for _, h := range f.Holds {
		ch.CSV = append(ch.CSV, []string{u(h.Node), u(h.Life.Inc), "lock", dec(f.seconds(h.Start)), dec(f.seconds(h.End)), h.Ended})
	}
	p := plot.New()
	ticks := make(plot.ConstantTicks, 0, len(f.Nodes))
	for _, node := range f.Nodes {
		ticks = append(ticks, plot.Tick{Value: t.rows[node], Label: "node " + u(node)})
	}
	p.Y.Tick.Marker = ticks
	p.Y.Tick.Length = 0
	p.Y.Tick.LineStyle.Width = 0
	p.Y.LineStyle.Width = 0
	p.Add(t)
	ch.timed(p, f, vg.Points(46*float64(len(f.Nodes))+100))
	return ch, nil
}

// dec writes seconds for a CSV, to the microsecond.
func dec(s float64) string { return strconv.FormatFloat(s, 'f', 6, 64) }

// eachView calls fn for each view of l, from its install to the next
// view's or the life's end.
func (t *timeline) eachView(l *logcheck.Life, fn func(v *logcheck.View, from, to time.Time)) {
	for i := range l.Views {
		to := lifeEnd(l)
		if i+1 < len(l.Views) {
			to = l.Views[i+1].Time
		}
		fn(&l.Views[i], l.Views[i].Time, to)
	}
}

// eachLeader calls fn for each leader l learned, from its
// leader.changed to the next or the life's end.
func (t *timeline) eachLeader(l *logcheck.Life, fn func(leader uint64, from, to time.Time)) {
	var cur uint64
	var since time.Time
	for _, e := range l.Elections {
		if e.Event != logs.LeaderChanged || e.Leader == 0 {
			continue
		}
		if cur != 0 && e.Leader != cur {
			fn(cur, since, e.Time)
		}
		if e.Leader != cur {
			cur, since = e.Leader, e.Time
		}
	}
	if cur != 0 {
		fn(cur, since, lifeEnd(l))
	}
}

func (t *timeline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, t.f.span(), -0.5, float64(len(t.f.Nodes)) - 0.5 + t.band()
}

// band returns the height above the rows.
func (t *timeline) band() float64 {
	if len(t.fault) > 0 {
		return legendBand + faultBand
	}
	return legendBand
}

var (
	black  = color.Gray{0}
	grey   = color.Gray{150}
	red    = color.RGBA{200, 30, 30, 255}
	green  = color.RGBA{30, 140, 60, 255}
	lockFg = color.Gray{30}
)

func (t *timeline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	small := text.Style{Color: black, Font: font.From(plot.DefaultFont, 7), Handler: p.TextHandler,
		XAlign: draw.XCenter, YAlign: draw.YCenter}
	box := func(x0, x1 time.Time, y, lo, hi float64, fill color.Color, label string, sty text.Style) {
		a, b := trX(t.f.seconds(x0)), trX(t.f.seconds(x1))
		if b-a < 0.5 {
			b = a + 0.5 // a view held for a moment still shows
		}
		y0, y1 := trY(y+lo), trY(y+hi)
		c.FillPolygon(fill, c.ClipPolygonXY([]vg.Point{{X: a, Y: y0}, {X: b, Y: y0}, {X: b, Y: y1}, {X: a, Y: y1}}))
		if label != "" && sty.Width(label)+2 < b-a {
			c.FillText(sty, vg.Point{X: (a + b) / 2, Y: (y0 + y1) / 2}, label)
		}
	}
	white := small
	white.Color = color.White
	for _, l := range t.lives {
		y := t.rows[l.Node]
		ly := trY(y)
		c.StrokeLine2(draw.LineStyle{Color: grey, Width: vg.Points(0.8)}, trX(t.f.seconds(l.Started)), ly, trX(t.f.seconds(lifeEnd(l))), ly)
		t.eachView(l, func(v *logcheck.View, from, to time.Time) {
			box(from, to, y, viewLo, viewHi, palette(t.views[v.Key()], 0.55), v.ID, small)
		})
		t.eachLeader(l, func(leader uint64, from, to time.Time) {
			i := 0
			for j, n := range t.f.Nodes {
				if n == leader {
					i = j
				}
			}
			box(from, to, y, leaderLo, leaderHi, leaderColor(i), "leader "+u(leader), white)
		})
	}
	for _, h := range t.f.Holds {
		box(h.Start, h.End, t.rows[h.Node], lockLo, lockHi, lockFg, "lock", white)
	}
	for _, l := range t.lives {
		y := trY(t.rows[l.Node])
		c.DrawGlyph(draw.GlyphStyle{Color: green, Radius: vg.Points(3.5), Shape: draw.TriangleGlyph{}}, vg.Point{X: trX(t.f.seconds(l.Started)), Y: y})
		end := draw.GlyphStyle{Color: black, Radius: vg.Points(3), Shape: draw.BoxGlyph{}}
		if l.Stopped.IsZero() {
			end = draw.GlyphStyle{Color: red, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}
		}
		c.DrawGlyph(end, vg.Point{X: trX(t.f.seconds(lifeEnd(l))), Y: y})
	}
	top := float64(len(t.f.Nodes)) - 0.5
	label := small
	label.Color, label.XAlign, label.YAlign = red, draw.XLeft, draw.YBottom
	dash := draw.LineStyle{Color: red, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	lastEnd := [2]vg.Length{-1e9, -1e9} // right end of the last label on each of two lines
	for _, e := range t.fault {
		x := trX(t.f.seconds(e.Time))
		c.StrokeLine2(dash, x, trY(-0.5), x, trY(top))
		for _, n := range e.Nodes {
			if y, ok := t.rows[n]; ok {
				c.DrawGlyph(draw.GlyphStyle{Color: red, Radius: vg.Points(5), Shape: draw.RingGlyph{}}, vg.Point{X: x, Y: trY(y)})
			}
		}
		// Two lines of labels, so that faults close in time stay legible.
		line := 0
		if lastEnd[0] > x && lastEnd[1] <= x {
			line = 1
		}
		lastEnd[line] = x + label.Width(e.Label()) + 4
		c.FillText(label, vg.Point{X: x + 1, Y: trY(top + 0.05 + 0.3*float64(line))}, e.Label())
	}
	t.legend(&c, trY(top+t.band()-0.2), small)
}

// leaderColor returns the colour of the i-th node as a leader: dark, so
// that the strip does not read as a view.
func leaderColor(i int) color.Color {
	return plotutil.DarkColors[i%len(plotutil.DarkColors)]
}

// legend draws the symbols' key in one line along the top.
func (t *timeline) legend(c *draw.Canvas, y vg.Length, sty text.Style) {
	sty.XAlign = draw.XLeft
	x := c.Min.X + 4
	item := func(draw func(x vg.Length), name string) {
		draw(x + 5)
		c.FillText(sty, vg.Point{X: x + 13, Y: y}, name)
		x += 13 + sty.Width(name) + 12
	}
	rect := func(fill color.Color) func(vg.Length) {
		return func(x vg.Length) {
			c.FillPolygon(fill, []vg.Point{{X: x - 5, Y: y - 4}, {X: x + 5, Y: y - 4}, {X: x + 5, Y: y + 4}, {X: x - 5, Y: y + 4}})
		}
	}
	glyph := func(g draw.GlyphStyle) func(vg.Length) {
		return func(x vg.Length) { c.DrawGlyph(g, vg.Point{X: x, Y: y}) }
	}
	item(rect(palette(0, 0.55)), "view")
	item(rect(leaderColor(0)), "leader (a colour per node)")
	item(rect(lockFg), "lock held")
	item(glyph(draw.GlyphStyle{Color: green, Radius: vg.Points(3.5), Shape: draw.TriangleGlyph{}}), "started")
	item(glyph(draw.GlyphStyle{Color: black, Radius: vg.Points(3), Shape: draw.BoxGlyph{}}), "stopped")
	item(glyph(draw.GlyphStyle{Color: red, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}), "no node.stopped (killed)")
	if len(t.fault) > 0 {
		item(func(x vg.Length) {
			c.StrokeLine2(draw.LineStyle{Color: red, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}, x, y-5, x, y+5)
		}, "fault (lab.json)")
	}
}
