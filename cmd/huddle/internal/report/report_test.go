package report

import (
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// t0 is the synthetic runs' start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// logWriter builds a node's JSON log, one zerolog-like line per event.
type logWriter struct {
	lines map[uint64][]string
}

func (w *logWriter) ev(node uint64, at time.Duration, event, fields string) {
	if w.lines == nil {
		w.lines = map[uint64][]string{}
	}
	if fields != "" {
		fields += ","
	}
	w.lines[node] = append(w.lines[node], fmt.Sprintf(`{"level":"info","node":%d,"event":%q,%s"time":%q,"message":"x"}`,
		node, event, fields, t0.Add(at).Format("2006-01-02T15:04:05.000000000Z07:00")))
}

func (w *logWriter) write(t *testing.T, dir string) {
	t.Helper()
	for node, lines := range w.lines {
		path := filepath.Join(dir, fmt.Sprintf("node%d.json", node))
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const ms = time.Millisecond

// synthetic writes a run of three nodes into dir: a view of all three,
// two messages of node 1 with known latencies, node.stats with known
// loss counters (node 2 sends nacks2 NACKs), a ring election of 6
// messages, two lock entries, and node 3 killed at 3 s (lab.json), after
// which nodes 1 and 2 install a view without it 200 and 250 ms later.
func synthetic(t *testing.T, dir string, nacks2 int) {
	t.Helper()
	var w logWriter
	for n := uint64(1); n <= 3; n++ {
		w.ev(n, 0, "node.started", fmt.Sprintf(`"incarnation":%d`, 100+n))
		w.ev(n, 100*ms, "view.installed", `"view":"1.1","coordinator_incarnation":101,"members":[1,2,3],"joined":[1,2,3],"left":[],"crashed":[],"flush_ms":3`)
	}
	// Two messages of node 1; the latencies are 1, 2 and 5 ms, then 1, 10
	// and 20 ms.
	w.ev(1, 1000*ms, "send", `"view":"1.1","seq":1,"order":"fifo","len":10,"crc":7`)
	w.ev(1, 1500*ms, "send", `"view":"1.1","seq":2,"order":"total","len":10,"crc":8`)
	for _, d := range []struct {
		node uint64
		at   time.Duration
		seq  int
		ord  string
	}{{1, 1001 * ms, 1, "fifo"}, {2, 1002 * ms, 1, "fifo"}, {3, 1005 * ms, 1, "fifo"},
		{1, 1501 * ms, 2, "total"}, {2, 1510 * ms, 2, "total"}, {3, 1520 * ms, 2, "total"}} {
		w.ev(d.node, d.at, "deliver", fmt.Sprintf(`"view":"1.1","from":1,"from_incarnation":101,"seq":%d,"order":%q,"len":10,"crc":%d`, d.seq, d.ord, 6+d.seq))
	}
	// The election: ring, round 1 of view 1.1, 2 messages per node.
	w.ev(1, 200*ms, "election.started", `"algorithm":"ring","round":1,"view":"1.1","initiator":1`)
	for n := uint64(1); n <= 3; n++ {
		w.ev(n, 210*ms, "leader.changed", `"algorithm":"ring","round":1,"view":"1.1","leader":3,"duration_ms":2`)
		w.ev(n, 211*ms, "election.done", `"algorithm":"ring","round":1,"view":"1.1","leader":3,"sent":2,"duration_ms":3`)
	}
	// The lock: node 2 waits 50 ms, node 3 150 ms; 4 messages each.
	w.ev(2, 2000*ms, "mutex.requested", `"clock":5,"view":"1.1"`)
	w.ev(2, 2050*ms, "mutex.acquired", `"clock":5,"view":"1.1","wait_ms":50,"messages":4,"datagrams":3`)
	w.ev(3, 2100*ms, "mutex.requested", `"clock":6,"view":"1.1"`)
	w.ev(2, 2200*ms, "mutex.released", `"clock":5,"view":"1.1","held_ms":150`)
	w.ev(3, 2250*ms, "mutex.acquired", `"clock":6,"view":"1.1","wait_ms":150,"messages":4,"datagrams":3`)
	w.ev(3, 2400*ms, "mutex.released", `"clock":6,"view":"1.1","held_ms":150`)
	// Loss counters: 10 messages found missing, 5+nacks2 NACKs... see below.
	stats := func(n uint64, at time.Duration, gaps, nacks, repairs int) {
		w.ev(n, at, "node.stats", fmt.Sprintf(`"why":"exit","view":"1.1","members":3,"gaps_detected":%d,"gaps_recovered":%d,"nacks_sent":%d,"nacked_seqs":%d,"repairs_sent":%d,"repairs_recv":1,"suspicions":0`,
			gaps, gaps, nacks, nacks, repairs))
	}
	stats(3, 2900*ms, 6, 3, 2) // node 3's last line: then it is killed
	w.ev(1, 3200*ms, "member.suspected", `"view":"1.1","member":3,"silent_ms":150`)
	w.ev(1, 3200*ms, "view.installed", `"view":"2.1","coordinator_incarnation":101,"members":[1,2],"joined":[],"left":[],"crashed":[3],"flush_ms":5,"prior":"1.1"`)
	w.ev(2, 3250*ms, "view.installed", `"view":"2.1","coordinator_incarnation":101,"members":[1,2],"joined":[],"left":[],"crashed":[3],"flush_ms":5,"prior":"1.1"`)
	stats(1, 4000*ms, 0, 0, 3)
	stats(2, 4000*ms, 4, nacks2, 1)
	w.ev(1, 4001*ms, "node.stopped", `"reason":"duration elapsed"`)
	w.ev(2, 4001*ms, "node.stopped", `"reason":"duration elapsed"`)
	w.write(t, dir)
	lab := fmt.Sprintf(`{"time":%q,"event":"lab.start"}
{"time":%q,"event":"lab.fault","fault":"kill","nodes":[3],"detail":"SIGKILL","extra":{"x":1}}
not json
{"time":%q,"event":"lab.fault","fault":"loss","nodes":[1,2],"value":"0.05"}
{"time":%q,"event":"lab.end"}
`, t0.Format(time.RFC3339Nano), t0.Add(3*time.Second).Format(time.RFC3339Nano), t0.Add(3500*ms).Format(time.RFC3339Nano), t0.Add(4100*ms).Format(time.RFC3339Nano))
	scenario := "name = \"kill-one\"\nnodes = 3\nduration = \"4s\"\nseed = 7\nloss = 0.01\nother = true\n\n[[fault]]\nat = \"3s\"\nkill = [3]\n"
	for name, s := range map[string]string{LabFile: lab, ScenarioFile: scenario} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// syntheticReport writes the report of a synthetic run (node 2 sending 2
// NACKs) in a new directory.
func syntheticReport(t *testing.T) (dir string, rep *Report) {
	t.Helper()
	dir = t.TempDir()
	synthetic(t, dir, 2)
	rep, err := Write(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, rep
}

// readCSV reads a report's CSV file into rows of named columns.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v, %d records", path, err, len(recs))
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, name := range recs[0] {
			row[name] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}

func float(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number: %v", s, err)
	}
	return x
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestRunReport writes the report of a synthetic run and checks the
// figures in its CSV files, its headline and that the page is
// self-contained.
func TestRunReport(t *testing.T) {
	dir, rep := syntheticReport(t)
	if rep.HTML != filepath.Join(dir, "report.html") {
		t.Errorf("report at %s", rep.HTML)
	}
	out := filepath.Join(dir, "report")

	var lat []float64
	for _, row := range readCSV(t, filepath.Join(out, "latency.csv")) {
		if row["sender"] != "1" || row["sender_incarnation"] != "101" {
			t.Errorf("latency row %v: want sender 1, incarnation 101", row)
		}
		lat = append(lat, float(t, row["latency_ms"]))
	}
	slices.Sort(lat)
	if want := []float64{1, 1, 2, 5, 10, 20}; !slices.Equal(lat, want) {
		t.Errorf("latencies %v, want %v", lat, want)
	}
	f := rep.Figures
	if f.P50 != 2 || f.MaxLat != 20 || f.Unmatched != 0 {
		t.Errorf("latency p50 %v max %v, %d unmatched; want 2, 20, 0", f.P50, f.MaxLat, f.Unmatched)
	}
	// Node 3 is the slowest: 2 deliveries in 515 ms.
	if f.SlowestNode != 3 || !near(f.Throughput, 2/0.515) {
		t.Errorf("throughput %v at node %d, want %v at node 3", f.Throughput, f.SlowestNode, 2/0.515)
	}

	// 10 messages found missing; 3+2 NACKs and 2+3+1 repairs.
	nacks := readCSV(t, filepath.Join(out, "nacks.csv"))
	all := nacks[len(nacks)-1]
	if all["node"] != "all" || all["gaps_detected"] != "10" || float(t, all["nacks_per_loss"]) != 0.5 || float(t, all["repairs_per_loss"]) != 0.6 {
		t.Errorf("nacks.csv's last row %v: want all, 10 lost, 0.5 NACKs and 0.6 repairs per loss", all)
	}
	if n2 := nacks[1]; n2["node"] != "2" || float(t, n2["nacks_per_loss"]) != 0.5 || float(t, n2["repairs_per_loss"]) != 0.25 {
		t.Errorf("nacks.csv's node 2: %v", n2)
	}
	if nacks[0]["nacks_per_loss"] != "" {
		t.Errorf("node 1 lost nothing: its NACKs per loss should be empty, not %q", nacks[0]["nacks_per_loss"])
	}

	el := readCSV(t, filepath.Join(out, "elections.csv"))
	if len(el) != 1 || el[0]["messages"] != "6" || el[0]["best"] != "6" || el[0]["worst"] != "8" || el[0]["leader"] != "3" || el[0]["members"] != "3" {
		t.Errorf("elections.csv %v: want one ring round of 6 messages, best 6, worst 8, leader 3", el)
	}
	lock := readCSV(t, filepath.Join(out, "lock-messages.csv"))
	if len(lock) != 2 || lock[0]["node"] != "2" || lock[0]["wait_ms"] != "50" || lock[1]["wait_ms"] != "150" || lock[0]["expected"] != "4" || lock[1]["messages"] != "4" {
		t.Errorf("lock-messages.csv %v: want node 2 waiting 50 ms, node 3 150 ms, 4 messages each, 2(n−1) = 4", lock)
	}
	if !near(f.LockWaitMs, 100) || !near(f.MsgsPerEntry, 4) {
		t.Errorf("lock: mean wait %v, messages per entry %v; want 100 and 4", f.LockWaitMs, f.MsgsPerEntry)
	}
	if len(f.Failovers) != 1 || !near(f.FailoverMs, 250) {
		t.Errorf("failovers %+v, mean %v; want one of 250 ms", f.Failovers, f.FailoverMs)
	}
	per := readCSV(t, filepath.Join(out, "deliveries.csv"))
	if len(per) != 2 || per[1]["node1"] != "2" || per[1]["node3"] != "2" || per[0]["node1"] != "0" {
		t.Errorf("deliveries.csv %v: want seconds 0 and 1, two deliveries each in second 1", per)
	}
	var killed, fault bool
	for _, row := range readCSV(t, filepath.Join(out, "timeline.csv")) {
		killed = killed || row["node"] == "3" && row["kind"] == "life" && row["label"] == "killed or running" && row["end_s"] == "2.900000"
		fault = fault || row["kind"] == "fault" && row["label"] == "kill 3" && row["start_s"] == "3.000000"
	}
	if !killed || !fault {
		t.Errorf("timeline.csv: node 3's life ends killed at 2.9 s: %v; the kill at 3 s: %v", killed, fault)
	}

	page := readFile(t, rep.HTML)
	for _, want := range []string{"<td>kill-one</td>", "<th>seed</th><td>7</td>", "<th>loss</th><td>0.01</td>",
		"lab.json: 1 lines are not JSON objects (the first at line 3)", "250 ms on average over 1 kill ",
		"0.50 NACKs per loss, 0.60 repairs per loss", "<td>SIGKILL</td>", "clock"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	checkSelfContained(t, page, 7)
	for _, ch := range rep.Charts {
		if _, err := os.Stat(filepath.Join(out, ch.Name+".svg")); err != nil {
			t.Errorf("%s: %v", ch.Name, err)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkSelfContained checks that the page fetches nothing, runs no
// script, and has plots inline SVGs with paths.
func checkSelfContained(t *testing.T, page string, plots int) {
	t.Helper()
	low := strings.ToLower(page)
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", `href="http`, "url(", "@import"} {
		if strings.Contains(low, bad) {
			t.Errorf("the page has %q: it must be self-contained", bad)
		}
	}
	if n := strings.Count(page, `<svg class="plot"`); n != plots {
		t.Errorf("%d inline plots, want %d", n, plots)
	}
	for i, svg := range strings.Split(page, `<svg class="plot"`)[1:] {
		svg = svg[:strings.Index(svg, "</svg>")]
		if strings.Count(svg, "<path") < 5 {
			t.Errorf("plot %d has %d paths: not drawn", i+1, strings.Count(svg, "<path"))
		}
	}
}

// TestEmptyRun: logs with nothing to plot make a page that says so for
// each plot, with no SVG; a directory without logs is ErrNoLogs.
func TestEmptyRun(t *testing.T) {
	dir := t.TempDir()
	var w logWriter
	w.ev(1, 0, "node.started", `"incarnation":5`)
	w.ev(1, time.Second, "node.stopped", `"reason":"signal interrupt"`)
	w.write(t, dir)
	rep, err := Write(dir, Options{Out: filepath.Join(dir, "out", "r.html")})
	if err != nil {
		t.Fatal(err)
	}
	page := readFile(t, rep.HTML)
	for _, want := range []string{"No deliver events", "No node.stats events", "No election events", "No lock entries", "no lab.json"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	checkSelfContained(t, page, 1) // the timeline only
	if _, err := os.Stat(filepath.Join(dir, "out", "r", "latency.csv")); err != nil {
		t.Errorf("the CSV of an empty plot: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "r", "latency.svg")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty plot's SVG: %v, want none", err)
	}

	_, err = Write(t.TempDir(), Options{})
	if !errors.Is(err, ErrNoLogs) || !strings.Contains(err.Error(), "node<ID>.json") {
		t.Errorf("a directory without logs: %v, want ErrNoLogs naming node<ID>.json", err)
	}
	garbage := t.TempDir()
	os.WriteFile(filepath.Join(garbage, "node1.json"), []byte("panic: oops\n"), 0o644)
	if _, err := Write(garbage, Options{}); !errors.Is(err, ErrNoLogs) {
		t.Errorf("logs without events: %v, want ErrNoLogs", err)
	}
}

// TestSweepReport: a sweep of two values, two repeats each, whose runs
// differ in their NACKs: the table and the per-value figures are the
// mean, min and max over the repeats.
func TestSweepReport(t *testing.T) {
	dir := t.TempDir()
	// NACKs per loss: (3+nacks2)/10.
	runs := []struct {
		value  float64
		repeat int
		nacks2 int
	}{{0, 1, 2}, {0, 2, 4}, {0.01, 1, 7}, {0.01, 2, 7}}
	var entries []string
	for _, r := range runs {
		rel := fmt.Sprintf("loss=%v/%d", r.value, r.repeat)
		sub := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		synthetic(t, sub, r.nacks2)
		entries = append(entries, fmt.Sprintf(`{"value":%v,"repeat":%d,"dir":%q}`, r.value, r.repeat, rel))
	}
	entries = append(entries, `{"value":0.02,"repeat":1,"dir":"loss=0.02/1"}`) // a run that left no logs
	sweep := fmt.Sprintf(`{"param":"loss","values":[0,0.01,0.02],"repeat":2,"runs":[%s]}`, strings.Join(entries, ","))
	if err := os.WriteFile(filepath.Join(dir, SweepFile), []byte(sweep), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Write(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Sweep || len(rep.RunReports) != 4 {
		t.Fatalf("sweep %v, %d run reports; want 4", rep.Sweep, len(rep.RunReports))
	}
	rows := readCSV(t, filepath.Join(dir, "report", "sweep-nacks_per_loss.csv"))
	if len(rows) != 2 {
		t.Fatalf("sweep-nacks_per_loss.csv: %v, want two values", rows)
	}
	for i, want := range [][4]float64{{0, 0.6, 0.5, 0.7}, {0.01, 1, 1, 1}} {
		r := rows[i]
		got := [4]float64{float(t, r["loss"]), float(t, r["mean"]), float(t, r["min"]), float(t, r["max"])}
		for j := range got {
			if !near(got[j], want[j]) {
				t.Errorf("sweep-nacks_per_loss.csv row %d: %v, want value, mean, min, max %v", i, got, want)
				break
			}
		}
		if r["runs"] != "2" {
			t.Errorf("row %d: %s runs, want 2", i, r["runs"])
		}
	}
	fo := readCSV(t, filepath.Join(dir, "report", "sweep-failover_ms.csv"))
	if len(fo) != 2 || float(t, fo[0]["mean"]) != 250 {
		t.Errorf("sweep-failover_ms.csv %v: want 250 ms for each value", fo)
	}
	all := readCSV(t, filepath.Join(dir, "report", "runs.csv"))
	if len(all) != 5 || !strings.Contains(all[4]["error"], "cannot read the run's directory") || !strings.Contains(all[4]["error"], "loss=0.02/1") || all[0]["throughput"] == "" {
		t.Errorf("runs.csv %v: want 5 runs, the last one unreadable", all)
	}
	page := readFile(t, rep.HTML)
	for _, want := range []string{`<a href="loss=0/1/report.html">loss=0/1</a>`, "0.60 (0.50–0.70)", "run loss=0.02/1:"} {
		if !strings.Contains(page, want) {
			t.Errorf("the sweep's page lacks %q", want)
		}
	}
	checkSelfContained(t, page, len(metrics))

	for _, bad := range []string{`{"param":"loss","runs":[{"value":1,"dir":"../x"}]}`, `{"param":"loss","runs":[]}`, `{"runs":`} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, SweepFile), []byte(bad), 0o644)
		if _, err := Write(d, Options{}); err == nil || !strings.Contains(err.Error(), SweepFile) {
			t.Errorf("sweep.json %s: %v, want an error naming it", bad, err)
		}
	}
}

// TestTimePlotsShareOneAxis: the plots against time (the timeline,
// deliveries per second, the lock's waits and messages) count from one
// origin, the lab's start, and span the run to its end: a second stands
// at the same place in each, although the deliveries end at 1.5 s, the
// lock's entries at 2.3 s and the run at 4.1 s.
func TestTimePlotsShareOneAxis(t *testing.T) {
	dir, rep := syntheticReport(t)
	if rep.Figures.Origin != "the start of the lab (lab.start)" {
		t.Errorf("origin %q", rep.Figures.Origin)
	}
	var first map[string]float64
	for _, name := range []string{"timeline", "deliveries", "lock-wait", "lock-messages"} {
		svg, err := os.ReadFile(filepath.Join(dir, "report", name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		ticks := xTicks(t, string(svg), "seconds since the start of the lab (lab.start)")
		if first == nil {
			first = ticks
			if len(ticks) < 3 || ticks["4"] == 0 {
				t.Fatalf("%s: x ticks %v, want 0 to 4 s", name, ticks)
			}
			continue
		}
		if len(ticks) != len(first) {
			t.Errorf("%s: x ticks %v, the timeline's %v", name, ticks, first)
		}
		for label, x := range first {
			if math.Abs(ticks[label]-x) > 0.01 {
				t.Errorf("%s: %s s at x %v, on the timeline at %v", name, label, ticks[label], x)
			}
		}
	}
}

var svgText = regexp.MustCompile(`(?s)<text x="([-0-9.]+)" y="([-0-9.]+)"[^>]*>([^<]*)</text>`)

// xTicks returns the x axis's tick labels of a plot's SVG and where they
// stand: the texts after the axis's label, at the height of the first.
func xTicks(t *testing.T, svg, label string) map[string]float64 {
	t.Helper()
	ticks := map[string]float64{}
	y, after := "", false
	for _, m := range svgText.FindAllStringSubmatch(svg, -1) {
		switch {
		case m[3] == label:
			after = true
		case after && (y == "" || m[2] == y):
			y = m[2]
			ticks[m[3]] = float(t, m[1])
		}
	}
	if !after {
		t.Fatalf("no x axis labelled %q", label)
	}
	return ticks
}
