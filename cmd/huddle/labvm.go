package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/scenario"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/vm"
	"github.com/huddle-lan/huddle/internal/logs"
)

// vmHint follows the lab's error when delay or jitter cannot be had here.
const vmHint = "huddle lab --vm runs the lab in a VM whose kernel has netem (docs/experiments.md, \"netem in a VM\")"

// withVMHint adds vmHint to an error that says this kernel has no netem.
func withVMHint(err error) error {
	if errors.Is(err, lan.ErrNoNetem) {
		return fmt.Errorf("%w; %s", err, vmHint)
	}
	return err
}

// guestScenario is where the scenario goes in the guest.
const guestScenario = "/etc/huddle/lab.toml"

// runInVM is huddle lab --vm: it boots a VM with Debian's kernel (package
// vm), which has netem, runs this program's lab in it with the scenario
// s (and the sweep of f), the logs going to the directory they would
// have gone to here, shows the lab's output as it comes, and brings the
// logs back there. The exit code is the lab's.
func runInVM(ctx context.Context, s *scenario.Scenario, f labFlags, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "huddle lab: "+format+"\n", a...)
		return code
	}
	// What the lab in the VM would refuse is refused here, before a boot.
	var budget time.Duration
	if f.sweep != "" {
		sw, err := scenario.ParseSweep(f.sweep, f.repeat)
		if err != nil {
			return fail(exitUsage, "%v", err)
		}
		for _, v := range sw.Values {
			r, err := s.With(sw.Param, v)
			if err == nil {
				_, err = r.Options()
			}
			if err != nil {
				return fail(exitUsage, "--sweep %s=%s: %v", sw.Param, v, err)
			}
			budget += time.Duration(sw.Repeat) * (r.Duration.D() + time.Minute)
		}
	} else {
		if _, err := s.Options(); err != nil {
			return fail(exitUsage, "%v", err)
		}
		budget = s.Duration.D() + time.Minute
	}
	if err := vm.Available(); err != nil {
		return fail(exitFailure, "--vm: %v", err)
	}
	k, err := vm.FindKernel()
	if err != nil {
		return fail(exitFailure, "--vm: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(exitFailure, "--vm: cannot find this program to run in the VM: %v", err)
	}
	pattern := "huddle-lab-"
	if f.sweep != "" {
		pattern = "huddle-sweep-"
	}
	dir, err := logDir(f.logDir, pattern)
	if err != nil {
		return fail(exitFailure, "%v", err)
	}
	work, err := os.MkdirTemp("", "huddle-labvm-")
	if err != nil {
		return fail(exitFailure, "%v", err)
	}
	defer os.RemoveAll(work)
	file := filepath.Join(work, "lab.toml")
	if err := s.WriteFile(file); err != nil {
		return fail(exitFailure, "--vm: writing the scenario for the VM: %v", err)
	}

	// In the guest, the logs' directory has the path it has here (a
	// link to /out, whose files come back), so that the paths the lab
	// prints and writes hold here.
	guestDir := dir
	if dir == "/" || dir == "/out" || strings.HasPrefix(dir, "/out/") {
		guestDir = "/out"
	}
	args := []string{"/bin/huddle", "lab", "--color", "never", "--log-dir", guestDir}
	if f.sweep != "" {
		args = append(args, "--sweep", f.sweep, "--repeat", strconv.Itoa(f.repeat))
	}
	args = append(args, guestScenario)
	var script strings.Builder
	if guestDir != "/out" {
		fmt.Fprintf(&script, "mkdir -p %s && ln -s /out %s || exit 1\n", shQuote(filepath.Dir(guestDir)), shQuote(guestDir))
	}
	for i, a := range args {
		if i > 0 {
			script.WriteByte(' ')
		}
		script.WriteString(shQuote(a))
	}
	script.WriteByte('\n')

	accel := cmp.Or(os.Getenv(vm.AccelEnv), "tcg")
	how := "software emulation (tcg): slow"
	if accel != "tcg" {
		how = accel
	}
	fmt.Fprintf(stdout, "huddle lab --vm: the lab runs in a VM: Debian's kernel %s (%s, package linux-image-amd64) under qemu, %s; the logs come back to %s\n",
		k.Version, k.Image, how, dir)
	fmt.Fprintln(stdout)
	streamed := false
	res, err := vm.Run(ctx, vm.Options{
		Script:    script.String(),
		Files:     map[string]string{"/bin/huddle": exe, guestScenario: file},
		OutDir:    dir,
		Timeout:   2*time.Minute + 2*budget,
		MemoryMiB: max(1024, 256+64*s.Nodes),
		Kernel:    k,
		Stream: func(line string) {
			streamed = true
			fmt.Fprintln(stdout, line)
		},
	})
	switch {
	case ctx.Err() != nil:
		return fail(exitFailure, "--vm: interrupted: the VM was stopped, and the logs of its run with it")
	case err != nil:
		return fail(exitFailure, "--vm: %v", err)
	}
	if !streamed {
		stdout.Write(res.Output)
	}
	fmt.Fprintf(stdout, "vm: booted in %v, %v in all; the lab in it exited %d; its files are in %s\n",
		res.Boot.Round(100*time.Millisecond), res.Elapsed.Round(100*time.Millisecond), res.Status, dir)
	if n, example := falseSuspicions(dir); n > 0 {
		fmt.Fprintf(stdout, "vm: %d suspicion(s) of nodes that were not killed, stopped or cut off (%s): the emulated CPU is slow while the guest's clocks keep real time, "+
			"so a node that waits for the CPU hears its peers late. Longer timers ride that out: --args \"--suspect-timeout 2s --join-timeout 2s\"\n", n, example)
	}
	if f.report {
		writeReport(dir, stdout, stderr)
	}
	switch res.Status {
	case 0:
		return exitOK
	case exitUsage:
		return exitUsage
	case exitFailure:
		return exitFailure
	}
	return fail(exitFailure, "--vm: the lab in the VM exited %d", res.Status)
}

// shQuote quotes s for a shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// falseSuspicions counts, in the runs under dir, the member.suspected
// events before the nodes were stopped, of nodes that no fault of the
// run's lab.json killed or stopped, in runs without a partition:
// suspicions the run did not cause. example describes the first.
func falseSuspicions(dir string) (n int, example string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		logs, _ := filepath.Glob(filepath.Join(p, "node*.json"))
		if len(logs) == 0 {
			return nil
		}
		faulted, until, ok := faultedNodes(filepath.Join(p, lab.JournalFile))
		if !ok {
			return nil
		}
		for _, l := range logs {
			c, ex := suspicions(l, faulted, until)
			if n == 0 && c > 0 {
				example = ex
			}
			n += c
		}
		return nil
	})
	return n, example
}

// faultedNodes reads a run's journal: the nodes killed or stopped, and
// when the nodes were to be stopped (lab.start's time and duration). ok
// is false when the journal cannot be read or the run had a partition.
func faultedNodes(journal string) (faulted map[uint64]bool, until time.Time, ok bool) {
	b, err := os.ReadFile(journal)
	if err != nil {
		return nil, until, false
	}
	faulted = map[uint64]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		var l lab.JournalLine
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		switch {
		case l.Event == lab.JournalStart:
			d, err := time.ParseDuration(l.Duration)
			if err != nil {
				return nil, until, false
			}
			until = l.Time.Add(d)
		case l.Event != lab.JournalFault:
		case l.Fault == lab.DoPartition:
			return nil, until, false
		case l.Fault == lab.DoKill, l.Fault == lab.DoStop:
			for _, id := range l.Nodes {
				faulted[id] = true
			}
		}
	}
	return faulted, until, !until.IsZero()
}

// suspicions counts a node log's member.suspected events before until,
// of members not in faulted.
func suspicions(path string, faulted map[uint64]bool, until time.Time) (n int, example string) {
	f, err := os.Open(path)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), logs.MemberSuspected) {
			continue
		}
		var ev struct {
			Time     time.Time `json:"time"`
			Event    string    `json:"event"`
			Node     uint64    `json:"node"`
			Member   uint64    `json:"member"`
			SilentMs int64     `json:"silent_ms"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Event != logs.MemberSuspected || faulted[ev.Member] || !ev.Time.Before(until) {
			continue
		}
		if n == 0 {
			example = fmt.Sprintf("node %d suspected node %d, silent for %d ms", ev.Node, ev.Member, ev.SilentMs)
		}
		n++
	}
	return n, example
}
