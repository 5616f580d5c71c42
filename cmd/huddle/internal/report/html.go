package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"path/filepath"
	"strconv"
	"time"
)

// page is what the template shows: a run's or a sweep's report.
type page struct {
	Title     string
	Dir       string
	Generated string
	Scenario  []Field
	Headline  []Field
	Notes     []string
	Faults    []faultRow
	Failovers []Field
	Sweep     *sweepTable
	Charts    []chartView
}

type faultRow struct{ Time, Event, Nodes, Value, Detail string }

// chartView is a chart as the page shows it: the SVG inline, links to
// its files.
type chartView struct {
	*Chart
	Inline   template.HTML
	CSVLink  string
	SVGLink  string
	Fragment string
}

type sweepTable struct {
	Param   string
	Metrics []metric
	Rows    []sweepTableRow
	Runs    []sweepRow
}

type sweepTableRow struct {
	Value string
	Cells []string
}

// plural writes "1 kill", "2 kills".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func htmlAttr(s string) string { return html.EscapeString(s) }

// fmtNum writes a figure for people: "—" for none, else 3 significant
// digits (at least the integer part).
func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "—"
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

func chartViews(charts []*Chart, out string) []chartView {
	base := filepath.Base(assets(out))
	var vs []chartView
	for _, ch := range charts {
		v := chartView{Chart: ch, CSVLink: base + "/" + ch.Name + ".csv", Fragment: ch.Name}
		if ch.Empty == "" {
			v.SVGLink = base + "/" + ch.Name + ".svg"
			v.Inline = template.HTML(inline(ch.SVG, ch.Title)) // #nosec: SVGo escapes every text it writes
		}
		vs = append(vs, v)
	}
	return vs
}

func runPage(r *Run, f *Figures, charts []*Chart, o Options) *page {
	p := &page{Title: "huddle report: " + filepath.Base(filepath.Clean(r.Dir)), Dir: r.Dir,
		Generated: o.Now.UTC().Format(time.RFC3339), Scenario: r.Scenario, Notes: r.Notes, Charts: chartViews(charts, o.Out)}
	lives := fmt.Sprintf("%d (%d lives)", len(f.Nodes), f.Lives)
	h := []Field{
		{"nodes", lives},
		{"run", fmt.Sprintf("%s from the first line of the logs to the last (%s to %s UTC)", f.End.Sub(f.Start).Round(time.Millisecond),
			f.Start.UTC().Format("15:04:05.000"), f.End.UTC().Format("15:04:05.000"))},
		{"views", fmt.Sprintf("%d installed, %d distinct; %d suspicions", f.ViewsInstalled, f.DistinctViews, f.Suspicions)},
	}
	if f.Deliveries == 0 {
		h = append(h, Field{"deliveries", "none logged (run the nodes with --trace-deliveries)"})
	} else {
		h = append(h,
			Field{"deliveries", fmt.Sprintf("%d; throughput at the slowest member: %s deliveries/s (node %d)", f.Deliveries, fmtNum(f.Throughput), f.SlowestNode)},
			Field{"latency", fmt.Sprintf("p50 %s ms, p99 %s ms, max %s ms over %d deliveries (%d not matched to a send)", fmtNum(f.P50), fmtNum(f.P99), fmtNum(f.MaxLat), len(f.Latency), f.Unmatched)})
	}
	if n := len(f.Repair); n > 0 {
		all := f.Repair[n-1]
		h = append(h, Field{"loss and repair", fmt.Sprintf("%d messages found missing (gaps_detected), %d recovered; %s NACKs per loss, %s repairs per loss",
			all.Loss, all.Recovered, fmtNum(all.NACKsPerLoss), fmtNum(all.RepairsPerLoss))})
	}
	switch {
	case r.Lab == nil:
		h = append(h, Field{"failover", "no lab.json: the faults applied are not known"})
	case len(f.Failovers) == 0:
		h = append(h, Field{"failover", "no kill in lab.json"})
	default:
		h = append(h, Field{"failover", fmt.Sprintf("%s ms on average over %s (from the kill to the view without the node installed by every other member)", fmtNum(f.FailoverMs), plural(len(f.Failovers), "kill"))})
	}
	if len(f.Rounds) > 0 {
		h = append(h, Field{"elections", fmt.Sprintf("%s (%s); %s messages per round in views of two or more", plural(len(f.Rounds), "round"), f.Algorithm, fmtNum(f.MsgsPerRound))})
	} else {
		h = append(h, Field{"elections", "none"})
	}
	if len(f.Entries) > 0 {
		h = append(h, Field{"lock", fmt.Sprintf("%d entries; mean wait %s ms; %s messages per entry (2(n−1) in a view of n that did not change)",
			len(f.Entries), fmtNum(f.LockWaitMs), fmtNum(f.MsgsPerEntry))})
	} else {
		h = append(h, Field{"lock", "no entries"})
	}
	p.Headline = h
	for _, e := range r.Lab {
		row := faultRow{Event: e.Event, Nodes: idList(e.Nodes), Value: e.Value, Detail: e.Detail}
		if e.Fault != "" {
			row.Event = e.Fault
		}
		if !e.Time.IsZero() {
			row.Time = fmt.Sprintf("%.3f s", f.seconds(e.Time))
		}
		p.Faults = append(p.Faults, row)
	}
	for _, fo := range f.Failovers {
		v := fmt.Sprintf("%s ms", fmtNum(fo.Ms))
		if len(fo.Waiting) > 0 {
			v = fmt.Sprintf("incomplete: node %s never installed a view without it", idList(fo.Waiting))
		}
		p.Failovers = append(p.Failovers, Field{fmt.Sprintf("kill %s at %.3f s", idList(fo.Nodes), f.seconds(fo.At)), v})
	}
	return p
}

func sweepPage(s *Sweep, rows []sweepRow, table map[string][]stats, charts []*Chart, o Options) *page {
	p := &page{Title: "huddle sweep report: " + s.Param + " in " + filepath.Base(filepath.Clean(s.Dir)), Dir: s.Dir,
		Generated: o.Now.UTC().Format(time.RFC3339), Charts: chartViews(charts, o.Out)}
	failed := 0
	for _, r := range rows {
		if r.Err != "" {
			failed++
			p.Notes = append(p.Notes, fmt.Sprintf("run %s: %s", r.Dir, r.Err))
		}
	}
	p.Headline = []Field{{"parameter", s.Param}, {"values", fmt.Sprint(s.Values)}, {"repeats", strconv.Itoa(s.Repeat)},
		{"runs", fmt.Sprintf("%d (%d could not be read)", len(rows), failed)}}
	t := &sweepTable{Param: s.Param, Metrics: metrics, Runs: rows}
	var values []float64
	for _, r := range rows {
		if len(values) == 0 || values[len(values)-1] != r.Value {
			values = append(values, r.Value)
		}
	}
	for _, v := range values {
		row := sweepTableRow{Value: num(v)}
		for _, m := range metrics {
			cell := "—"
			for _, st := range table[m.Name] {
				if st.Value == v {
					cell = fmtNum(st.Mean)
					if st.N > 1 {
						cell += fmt.Sprintf(" (%s–%s)", fmtNum(st.Min), fmtNum(st.Max))
					}
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	p.Sweep = t
	return p
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 1.5em auto; max-width: 62em; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.meta { color: #555; font-size: 0.9em; }
.about { font-size: 0.92em; color: #333; }
.empty { border: 1px dashed #aaa; padding: 1em; color: #555; background: #fafafa; }
.notes { color: #8a4b00; }
svg.plot { width: 100%; height: auto; display: block; }
.files { font-size: 0.85em; }
nav a { margin-right: 0.8em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">Directory <code>{{.Dir}}</code>; report written {{.Generated}} by <code>huddle report</code>. The figures of every plot are in a CSV file beside this page.</p>
{{- if .Scenario}}
<h2>Scenario</h2>
<table>{{range .Scenario}}<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>{{end}}</table>
{{- end}}
<h2>Headline</h2>
<table class="headline">{{range .Headline}}<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>{{end}}</table>
{{- if .Notes}}
<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
{{- with .Sweep}}
<table class="sweep">
<tr><th>{{.Param}}</th>{{range .Metrics}}<th>{{.Title}} ({{.Unit}})</th>{{end}}</tr>
{{- range .Rows}}
<tr><td class="num">{{.Value}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
{{- end}}
</table>
<p class="about">The mean over the repeats, with the smallest and largest in brackets; "—": no run of that value has the figure. Each run's own report:
{{range .Runs}}{{if .Report}}<a href="{{.Report}}">{{.Dir}}</a> {{end}}{{end}}</p>
{{- end}}
{{- if .Faults}}
<h2>Faults and actions (lab.json)</h2>
<table><tr><th>time</th><th>what</th><th>nodes</th><th>value</th><th>detail</th></tr>
{{- range .Faults}}
<tr><td class="num">{{.Time}}</td><td>{{.Event}}</td><td>{{.Nodes}}</td><td>{{.Value}}</td><td>{{.Detail}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- if .Failovers}}
<table><tr><th>kill</th><th>failover</th></tr>{{range .Failovers}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>
{{- end}}
<nav>{{range .Charts}}<a href="#{{.Fragment}}">{{.Title}}</a>{{end}}</nav>
{{- range .Charts}}
<h2 id="{{.Fragment}}">{{.Title}}</h2>
<p class="about">{{.About}}</p>
{{- if .Empty}}
<p class="empty">{{.Empty}}</p>
{{- else}}
<figure>{{.Inline}}</figure>
{{- end}}
<p class="files">Data: <a href="{{.CSVLink}}">{{.CSVLink}}</a>{{if .SVGLink}}; plot: <a href="{{.SVGLink}}">{{.SVGLink}}</a>{{end}}</p>
{{- end}}
</body>
</html>
`))
