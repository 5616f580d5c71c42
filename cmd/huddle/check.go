package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	skew := fs.Duration("skew", 5*time.Millisecond, "the clock `skew` to forgive between logs of different machines (the lock and liveness checks compare their times)")
	var crashed crashList
	fs.Var(&crashed, "crashed", "`NODE[:INCARNATION]` a node life that was killed (repeatable, or a comma-separated list): its log may end without node.stopped")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: huddle check [--skew D] [--crashed NODE[:INC]] LOG|DIR...

Checks the guarantees of a group from its nodes' JSON logs (one per node;
a restarted node may append to its log; a DIR stands for its *.json
files but a lab run's lab.json and sweep.json): how each log ends
(logs), virtual synchrony, agreement on views, FIFO without holes and
integrity (membership), every message sent in a view delivered to every
member that stayed (liveness), total order without holes and safe
delivery (order), one leader per election round, the highest member of
its view, known to every member, with the round's messages against the
algorithm's formula (election), and the lock: never two holders at once,
every request granted. Each check says how much it compared; one that
compared nothing in a run with traffic fails. The delivery
checks need the nodes run with --trace-deliveries. The lock and liveness
checks compare times written by different nodes: for logs from several
machines, set --skew to their clocks' offset. Every life's log must end
with node.stopped, or at a crash the check knows of: a lab run's kills
come from its lab.json (read from a DIR given), and --crashed names the
lives killed on real machines.

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
	deaths, err := journalDeaths(paths)
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
	for _, v := range run.CheckAll(logcheck.AllOptions{Skew: *skew, Deaths: deaths, Crashed: crashed}) {
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

// journalDeaths reads the kills of the lab runs among paths: a directory
// holding a lab.json (lab.JournalFile).
func journalDeaths(paths []string) ([]logcheck.Death, error) {
	var deaths []logcheck.Death
	for _, p := range paths {
		f, err := os.Open(filepath.Join(p, lab.JournalFile))
		if err != nil {
			continue // not a lab run's directory
		}
		ds, err := lab.Deaths(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		deaths = append(deaths, ds...)
	}
	return deaths, nil
}

// crashList is --crashed: node lives that were killed, NODE or
// NODE:INCARNATION, repeatable and comma-separated.
type crashList []logcheck.Crash

func (c *crashList) String() string {
	parts := make([]string, len(*c))
	for i, x := range *c {
		parts[i] = strconv.FormatUint(x.Node, 10)
		if x.Inc != 0 {
			parts[i] += ":" + strconv.FormatUint(x.Inc, 10)
		}
	}
	return strings.Join(parts, ",")
}

func (c *crashList) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		node, inc, hasInc := strings.Cut(strings.TrimSpace(item), ":")
		var x logcheck.Crash
		var err error
		if x.Node, err = strconv.ParseUint(node, 10, 64); err != nil || x.Node == 0 {
			return fmt.Errorf("%q: want a node ID above 0, with :INCARNATION for one of its lives (3 or 3:1795766261338454)", item)
		}
		if hasInc {
			if x.Inc, err = strconv.ParseUint(inc, 10, 64); err != nil || x.Inc == 0 {
				return fmt.Errorf("%q: the incarnation %q is not a number above 0 (node.started's incarnation)", item, inc)
			}
		}
		*c = append(*c, x)
	}
	return nil
}
