package main

import (
	"fmt"
	"io"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/report"
)

// cmdReport writes the HTML report of an experiment's directory: a run
// (huddle demo --log-dir, huddle lab) or a sweep of runs.
func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs, parseOut := newFlagSet("huddle report")
	out := fs.String("out", "", "the report's `file`; default DIR/report.html. The CSV and SVG files go to a folder beside it named after it without the extension (DIR/report/)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: huddle report [--out FILE] DIR

Writes a self-contained HTML report of an experiment: DIR is a run's
directory (the nodes' JSON logs node<ID>.json, as huddle demo --log-dir
and huddle lab write them, with the lab's lab.json and scenario.toml when
there) or a sweep's (sweep.json and a directory per run). For a run: a
timeline of each node's lives, views, leaders and lock holds with the
faults applied; deliveries per second; the latency from send to deliver;
NACKs and repairs per loss; election rounds against the algorithm's
formula; lock waits and messages per entry. For a sweep: each figure
against the swept value, and a report per run. The plots are inline SVG
(no JavaScript, nothing fetched); their figures are CSV files beside the
page. Prints the report's path.

Exit code 0 when the report is written, 1 when DIR holds no logs or
cannot be read, 2 for a bad command line. See docs/experiments.md.

Flags:

`)
		fs.PrintDefaults()
	}
	dirs, code, done := parseOperands(fs, parseOut, args, stdout, stderr)
	if done {
		return code
	}
	switch len(dirs) {
	case 0:
		fmt.Fprintln(stderr, "huddle report: want the directory of a run or a sweep (huddle report --help)")
		return exitUsage
	case 1:
	default:
		fmt.Fprintf(stderr, "huddle report: %d directories given (%q, %q…): want one\n", len(dirs), dirs[0], dirs[1])
		return exitUsage
	}
	rep, err := report.Write(dirs[0], report.Options{Out: *out})
	if err != nil {
		fmt.Fprintln(stderr, "huddle report:", err)
		return exitFailure
	}
	fmt.Fprintln(stdout, rep.HTML)
	return exitOK
}
