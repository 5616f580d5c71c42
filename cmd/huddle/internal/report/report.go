package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Options shape Write.
type Options struct {
	// Out is the HTML file to write; "" is DIR/report.html. The CSV and
	// SVG files go to a folder beside it named after it without its
	// extension: DIR/report/ by default.
	Out string
	// Now stamps the report; zero is time.Now.
	Now time.Time
}

// Report is what Write wrote.
type Report struct {
	HTML   string   // the page's path
	Files  []string // the CSV and SVG files' paths
	Charts []*Chart // the page's plots, in order
	Sweep  bool
	// Figures are a run's figures (nil for a sweep).
	Figures *Figures
	// RunReports are the runs' own pages that a sweep's report links to.
	RunReports []string
}

// Write reads the run or sweep directory dir and writes its report. A
// directory with a sweep.json is a sweep: every run of it gets its own
// report too, in its directory. It fails when dir cannot be read or holds
// no node logs (errors.Is(err, ErrNoLogs)).
func Write(dir string, o Options) (*Report, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Out == "" {
		o.Out = filepath.Join(dir, "report.html")
	}
	if _, err := os.Stat(filepath.Join(dir, SweepFile)); err == nil {
		return writeSweep(dir, o)
	}
	r, err := LoadRun(dir)
	if err != nil {
		return nil, err
	}
	return writeRun(r, o)
}

// assets returns the folder of the CSV and SVG files of the page out.
func assets(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out))
}

// runCharts computes a run's figures and plots.
func runCharts(r *Run) (*Figures, []*Chart, error) {
	f := compute(r)
	var charts []*Chart
	add := func(chs ...*Chart) { charts = append(charts, chs...) }
	tl, err := timelineChart(r, f)
	if err != nil {
		return nil, nil, err
	}
	add(tl)
	for _, mk := range []func(*Figures) (*Chart, error){deliveriesChart, latencyChart, repairChart, electionChart} {
		ch, err := mk(f)
		if err != nil {
			return nil, nil, err
		}
		add(ch)
	}
	w, m, err := lockCharts(f)
	if err != nil {
		return nil, nil, err
	}
	add(w, m)
	return f, charts, drawTimed(charts)
}

func writeRun(r *Run, o Options) (*Report, error) {
	f, charts, err := runCharts(r)
	if err != nil {
		return nil, err
	}
	rep := &Report{HTML: o.Out, Charts: charts, Figures: f}
	if err := rep.writeFiles(); err != nil {
		return nil, err
	}
	page := runPage(r, f, charts, o)
	return rep, rep.writePage(page)
}

// writeFiles writes each chart's CSV and SVG into the assets folder (and
// removes the SVG of a chart with no data, which a report before may
// have written).
func (rep *Report) writeFiles() error {
	dir := assets(rep.HTML)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, ch := range rep.Charts {
		csvPath, svgPath := filepath.Join(dir, ch.Name+".csv"), filepath.Join(dir, ch.Name+".svg")
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		w.WriteAll(ch.CSV) //nolint:errcheck // a bytes.Buffer does not fail; Error says
		if err := w.Error(); err != nil {
			return err
		}
		if err := os.WriteFile(csvPath, b.Bytes(), 0o644); err != nil {
			return err
		}
		rep.Files = append(rep.Files, csvPath)
		if ch.Empty != "" {
			if err := os.Remove(svgPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		if err := os.WriteFile(svgPath, ch.SVG, 0o644); err != nil {
			return err
		}
		rep.Files = append(rep.Files, svgPath)
	}
	return nil
}

// writePage writes the HTML page, through a temporary file so that a
// reader never sees half a page.
func (rep *Report) writePage(p *page) error {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return err
	}
	tmp := rep.HTML + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, rep.HTML)
}

// A metric is a per-run figure that a sweep plots against its parameter.
type metric struct {
	Name  string // CSV column and file name
	Title string
	Unit  string
	About string
	Get   func(*Figures) float64
}

var metrics = []metric{
	{"throughput", "Throughput", "deliveries per second",
		"Deliveries per second at the slowest member: per node, its deliver events over the time from its first to its last delivery, summed over its lives; the smallest over the nodes.",
		func(f *Figures) float64 { return f.Throughput }},
	{"nacks_per_loss", "NACKs per loss", "NACKs per loss",
		"NACK datagrams sent (nacks_sent) over messages found missing (gaps_detected), summed over every node life's last node.stats.",
		func(f *Figures) float64 { return f.NACKsPerLoss }},
	{"repairs_per_loss", "Repairs per loss", "repairs per loss",
		"Repairs sent (repairs_sent) over messages found missing (gaps_detected), summed over every node life's last node.stats.",
		func(f *Figures) float64 { return f.RepairsPerLoss }},
	{"failover_ms", "Failover time", "ms",
		"From a kill in lab.json until every other member alive then had installed a view without the killed node; the mean over the run's kills. Runs without a kill have none.",
		func(f *Figures) float64 { return f.FailoverMs }},
	{"election_msgs_per_round", "Election messages per round", "messages",
		"The election messages of a round (election.done's sent, summed over the nodes), the mean over the rounds of views of two members or more.",
		func(f *Figures) float64 { return f.MsgsPerRound }},
	{"lock_msgs_per_entry", "Lock messages per entry", "messages",
		"The messages of each lock entry (mutex.acquired's messages: 2(n−1) in a view of n that did not change), the mean over the entries.",
		func(f *Figures) float64 { return f.MsgsPerEntry }},
	{"lock_wait_ms", "Lock wait", "ms",
		"The time from a request of the lock to its grant (mutex.acquired's wait_ms), the mean over the entries.",
		func(f *Figures) float64 { return f.LockWaitMs }},
}

// sweepRow is one run of a sweep and its figures.
type sweepRow struct {
	SweepRun
	Figures *Figures
	Err     string
	Report  string // the run's page, relative to the sweep's page
}

// stats sums up one metric over the repeats of one value.
type stats struct {
	Value          float64
	Mean, Min, Max float64
	N              int
}

func writeSweep(dir string, o Options) (*Report, error) {
	s, err := LoadSweep(dir)
	if err != nil {
		return nil, err
	}
	rep := &Report{HTML: o.Out, Sweep: true}
	var rows []sweepRow
	ok := 0
	for _, run := range s.Runs {
		row := sweepRow{SweepRun: run}
		runDir := filepath.Join(dir, filepath.FromSlash(run.Dir))
		r, err := LoadRun(runDir)
		if err == nil {
			var sub *Report
			sub, err = writeRun(r, Options{Now: o.Now, Out: filepath.Join(runDir, "report.html")})
			if err == nil {
				row.Figures = sub.Figures
				rep.RunReports = append(rep.RunReports, sub.HTML)
				row.Report = relLink(filepath.Dir(o.Out), sub.HTML)
				ok++
			}
		}
		if err != nil {
			row.Err = err.Error()
		}
		rows = append(rows, row)
	}
	if ok == 0 {
		return nil, fmt.Errorf("%s: %w: none of its %d runs could be read (the first: %s)", dir, ErrNoLogs, len(rows), rows[0].Err)
	}
	slices.SortStableFunc(rows, func(a, b sweepRow) int {
		if a.Value != b.Value {
			return cmpFloat(a.Value, b.Value)
		}
		return a.Repeat - b.Repeat
	})
	runsCSV := &Chart{Name: "runs", Empty: "table"}
	head := []string{s.Param, "repeat", "dir"}
	for _, m := range metrics {
		head = append(head, m.Name)
	}
	runsCSV.CSV = [][]string{append(head, "error")}
	for _, row := range rows {
		line := []string{num(row.Value), fmt.Sprint(row.Repeat), row.Dir}
		for _, m := range metrics {
			v := math.NaN()
			if row.Figures != nil {
				v = m.Get(row.Figures)
			}
			line = append(line, num(v))
		}
		runsCSV.CSV = append(runsCSV.CSV, append(line, row.Err))
	}
	var charts []*Chart
	table := map[string][]stats{}
	for _, m := range metrics {
		ch, st, err := sweepChart(s, rows, m)
		if err != nil {
			return nil, err
		}
		charts = append(charts, ch)
		table[m.Name] = st
	}
	rep.Charts = append([]*Chart{runsCSV}, charts...)
	if err := rep.writeFiles(); err != nil {
		return nil, err
	}
	rep.Charts = charts
	return rep, rep.writePage(sweepPage(s, rows, table, charts, o))
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// relLink returns target relative to dir with forward slashes, for a link.
func relLink(dir, target string) string {
	rel, err := filepath.Rel(dir, target)
	if err != nil {
		return filepath.ToSlash(target)
	}
	return filepath.ToSlash(rel)
}

// summarize returns the mean, min and max of m over the runs of each
// value that have it.
func summarize(rows []sweepRow, m metric) []stats {
	var out []stats
	for _, row := range rows {
		if row.Figures == nil {
			continue
		}
		v := m.Get(row.Figures)
		if math.IsNaN(v) {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Value != row.Value {
			out = append(out, stats{Value: row.Value, Min: v, Max: v})
		}
		st := &out[len(out)-1]
		st.Mean += v
		st.Min, st.Max = min(st.Min, v), max(st.Max, v)
		st.N++
	}
	for i := range out {
		out[i].Mean /= float64(out[i].N)
	}
	return out
}
