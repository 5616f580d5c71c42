package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/scenario"
)

// cmdCheck runs every log checker on a set of node logs: from one
// machine (huddle demo's --log-dir, the lab's), or collected from real
// machines. It exits 0 when every check holds and 1 otherwise, each
// violation explained with the log lines involved.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs, parseOut := newFlagSet("huddle check")
	skew := fs.Duration("skew", 5*time.Millisecond, "the clock `skew` to forgive between logs of different machines (the lock check compares their times)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: huddle check [--skew D] LOG|DIR...

Checks the guarantees of a group from its nodes' JSON logs (one per node;
a restarted node may append to its log; a DIR stands for its *.json
files but a lab run's lab.json and sweep.json): virtual synchrony, agreement on views, FIFO and integrity
(membership), every message sent in a view delivered to every member
that stayed (liveness), total order and safe delivery (order), one
leader per election round, a member of its view, with the round's
messages against the algorithm's formula (election), and the lock:
never two holders at once, every request granted. The delivery
checks need the nodes run with --trace-deliveries. Only the lock check
compares times written by different nodes: for logs from several
machines, set --skew to their clocks' offset.

Exit code 0 when every check holds, 1 when one does not (or a log cannot
be read), 2 for a bad command line. See docs/experiments.md.

Flags:

`)
		fs.PrintDefaults()
	}
	// The logs may come before or after the flag.
	paths, code, done := parseOperands(fs, parseOut, args, stdout, stderr)
	if done {
		return code
	}
	if *skew < 0 {
		fmt.Fprintf(stderr, "huddle check: --skew %v: want a duration of 0 or more\n", *skew)
		return exitUsage
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "huddle check: want the logs to check, or a directory of them (huddle check --help)")
		return exitUsage
	}
	files, err := logFiles(paths)
	if err != nil {
		fmt.Fprintln(stderr, "huddle check:", err)
		return exitFailure
	}
	run, err := logcheck.Load(files...)
	if err != nil {
		fmt.Fprintln(stderr, "huddle check:", err)
		return exitFailure
	}
	lines := 0
	for _, f := range run.Files {
		lines += f.Lines
		if f.Malformed > 0 {
			fmt.Fprintf(stdout, "%s: %d lines are not log events (the first at line %d): skipped\n", f.Name, f.Malformed, f.FirstMalformed)
		}
	}
	fmt.Fprintf(stdout, "%d logs, %d lines, %d node lives\n", len(run.Files), lines, len(run.Lives))
	ok := len(run.Lives) > 0
	if !ok {
		fmt.Fprintln(stdout, "FAIL  the logs hold no node's events: are they huddle's JSON logs (--log-file, or huddle run's standard error; from the journal: journalctl -u huddle -o cat > node1.json)?")
	}
	for _, v := range run.CheckAll(logcheck.AllOptions{Skew: *skew}) {
		verdict := "ok   "
		if !v.OK() {
			verdict, ok = "FAIL ", false
		}
		note := ""
		if v.Clock {
			note = fmt.Sprintf(" (compares times across logs: forgives %v of clock skew, --skew)", *skew)
		}
		fmt.Fprintf(stdout, "%s %-10s %s%s\n", verdict, v.Name, v.What, note)
		if v.Nothing != "" && v.OK() {
			fmt.Fprintf(stdout, "      nothing to check: %s\n", v.Nothing)
			continue
		}
		for _, line := range strings.Split(v.Text, "\n") {
			fmt.Fprintf(stdout, "      %s\n", line)
		}
	}
	if !ok {
		fmt.Fprintln(stdout, "FAIL")
		return exitFailure
	}
	fmt.Fprintln(stdout, "PASS")
	return exitOK
}

// logFiles expands the directories among paths into their *.json files.
func logFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, err
		}
		// The run's journal and a sweep's description are not node logs.
		m = slices.DeleteFunc(m, func(f string) bool {
			return filepath.Base(f) == lab.JournalFile || filepath.Base(f) == scenario.SweepFile
		})
		if len(m) == 0 {
			return nil, fmt.Errorf("%s holds no *.json logs", p)
		}
		slices.Sort(m)
		files = append(files, m...)
	}
	return files, nil
}
