package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/internal/logs"
)

// bareGroup turns a --group without a value (the last argument, or one
// followed by another flag) into --all, so that `huddle status --group`
// asks the group while `--group NAME` still names it.
func bareGroup(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--group" || a == "-group") && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
			a = "--all"
		}
		out = append(out, a)
	}
	return out
}

// statusGroup runs `huddle status --group`: the node probes its view's
// members, waiting up to wait, and the answers are printed as one table.
func statusGroup(t target, wait time.Duration, asJSON bool, stdout, stderr io.Writer) int {
	if wait <= 0 || wait > control.MaxTimeout {
		fmt.Fprintf(stderr, "huddle status: --wait %v is out of range (above 0, at most %v)\n", wait, control.MaxTimeout)
		return exitUsage
	}
	args := control.StatusArgs{Group: true, WaitMS: max(1, wait.Milliseconds())}
	return callAndPrint(t, wait+control.DefaultTimeout, "huddle status", "status", args, asJSON, stdout, stderr,
		func(pr huddle.ProbeResult, _ string) int {
			if !asJSON {
				printGroup(stdout, pr, wait)
			}
			if len(pr.Silent()) > 0 {
				return exitFailure
			}
			return exitOK
		})
}

// printGroup writes a probe's answers as a table, the coordinator first.
func printGroup(w io.Writer, pr huddle.ProbeResult, wait time.Duration) {
	answered := len(pr.Members) - len(pr.Silent())
	fmt.Fprintf(w, "view %s as node %d sees it: %d member%s, %d answered\n\n", pr.View, pr.Asker, len(pr.Members),
		map[bool]string{true: "s"}[len(pr.Members) != 1], answered)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tINCARNATION\tVIEW\tROLE\tUPTIME\tDELIVERED\tNACKS\tREPAIRS\tLOCK\tLEADER")
	for _, m := range pr.Members {
		if !m.Answered {
			fmt.Fprintf(tw, "%d\t-\t%d\t-\tsilent\t-\t-\t-\t-\t-\t-\n", m.ID, m.Incarnation)
			continue
		}
		i := m.Info
		leader := "-"
		if i.Leader != 0 {
			leader = fmt.Sprintf("%d (round %d)", i.Leader, i.LeaderRound)
		}
		view := i.View
		if i.State != huddle.StateMember {
			view += " (" + i.State + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", i.ID, i.Addr, i.Incarnation, view, i.Role,
			(time.Duration(i.UptimeMS) * time.Millisecond).Round(time.Second), i.Delivered, i.NACKs, i.Repairs, i.Lock, leader)
	}
	tw.Flush()
	if silent := pr.Silent(); len(silent) > 0 {
		fmt.Fprintf(w, "\nsilent: %s did not answer within %v (crashed, partitioned, or too busy; huddle status on that host says more)\n",
			joinIDs(silent), wait)
	}
}

func joinIDs(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ", ")
}

func cmdWatch(args []string, stdout, stderr io.Writer) int {
	f := newControlFlags("watch",
		"Begins with the running node's view, leader and lock as they are (lines marked\n"+
			"now; with --json, \"snapshot\":true), then streams what the node sees as it\n"+
			"happens: views installed, members suspected or refused, leaders, and this\n"+
			"node's lock requests, grants and releases; with --service, also the messages\n"+
			"delivered on that service (\"\" is the application's, the one huddle send uses;\n"+
			"repeat it for more). One line per event, or with --json one JSON object per\n"+
			"line, the log's event names.\n"+
			"It runs until interrupted (Ctrl-C) or the node stops. A slow reader misses\n"+
			"events rather than slowing the node: a watch.dropped line counts them.")
	var services serviceList
	f.fs.Var(&services, "service", "also stream the deliveries of this `service` (repeatable; \"\" is the application's)")
	if code, ok := f.parseNone(args, stdout, stderr); !ok {
		return code
	}
	if len(services) > control.MaxWatchServices {
		fmt.Fprintf(stderr, "huddle watch: %d --service flags (at most %d)\n", len(services), control.MaxWatchServices)
		return exitUsage
	}
	t, err := f.findTarget(stderr)
	if err != nil {
		return fail(stderr, "huddle watch", err, true)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	print := func(ev json.RawMessage) error {
		if *f.json {
			_, err := stdout.Write(append(bytes.TrimSpace(ev), '\n'))
			return err
		}
		var we huddle.WatchEvent
		if err := json.Unmarshal(ev, &we); err != nil {
			return fmt.Errorf("the node sent a malformed event: %w", err)
		}
		_, err := fmt.Fprintln(stdout, describeEvent(we))
		return err
	}
	_, err = t.reach(func(path string) error {
		_, err := control.CallStream(ctx, path, "watch", control.WatchArgs{Services: services}, print)
		return err
	})
	if err != nil {
		return fail(stderr, "huddle watch", err, false)
	}
	return exitOK
}

// serviceList is a repeatable --service flag.
type serviceList []string

func (s *serviceList) String() string     { return strings.Join(*s, ",") }
func (s *serviceList) Set(v string) error { *s = append(*s, v); return nil }

// describeEvent writes a watched event as one line for people; the lines
// of the snapshot a watch begins with say "now".
func describeEvent(e huddle.WatchEvent) string {
	at := e.Time.Local().Format("15:04:05.000")
	if e.Snapshot {
		return at + " now " + describeState(e)
	}
	switch e.Event {
	case logs.ViewInstalled:
		s := fmt.Sprintf("%s view %s: members %s", at, e.View, joinIDs(e.Members))
		for _, part := range []struct {
			what string
			ids  []uint64
		}{{"joined", e.Joined}, {"left", e.Left}, {"crashed", e.Crashed}} {
			if len(part.ids) > 0 {
				s += fmt.Sprintf("; %s %s", part.what, joinIDs(part.ids))
			}
		}
		return s + notPrimaryNote(e)
	case logs.MemberSuspected:
		return fmt.Sprintf("%s suspect %d (silent %.0f ms)", at, e.Member, e.Silent)
	case logs.MemberRefused:
		return fmt.Sprintf("%s refused %d (setting %s)", at, e.Member, e.Setting)
	case logs.MemberExcluded:
		return fmt.Sprintf("%s excluded: the group went on without node %d; it rejoins", at, e.Member)
	case logs.LeaderChanged:
		return fmt.Sprintf("%s leader %d (round %d, view %s)", at, e.Leader, e.Round, e.View)
	case logs.MutexRequested:
		return fmt.Sprintf("%s lock wanted by %d", at, e.Node)
	case logs.MutexAcquired:
		return fmt.Sprintf("%s lock held by %d (waited %.1f ms)", at, e.Node, e.WaitMS)
	case logs.MutexReleased:
		if e.Lost {
			return fmt.Sprintf("%s lock lost by %d", at, e.Node)
		}
		return fmt.Sprintf("%s lock released by %d", at, e.Node)
	case logs.MutexWithdrawn:
		return fmt.Sprintf("%s lock request withdrawn by %d", at, e.Node)
	case logs.Deliver:
		service := e.Service
		if service == "" {
			service = `""`
		}
		order := e.Order
		if e.GSeq != 0 {
			order += fmt.Sprintf(" #%d", e.GSeq)
		}
		return fmt.Sprintf("%s deliver %s from %d seq %d (%s): %s", at, service, e.From, e.Seq, order, payloadText(e.Payload))
	case control.WatchDropped:
		return fmt.Sprintf("%s (%d events dropped: this watch read too slowly)", at, e.Count)
	}
	return fmt.Sprintf("%s %s", at, e.Event)
}

// notPrimaryNote marks a view that is not the primary component.
func notPrimaryNote(e huddle.WatchEvent) string {
	if e.Primary != nil && !*e.Primary {
		return " (not primary)"
	}
	return ""
}

// describeState writes an event of a watch's opening snapshot: the state
// the node is in rather than a change.
func describeState(e huddle.WatchEvent) string {
	switch e.Event {
	case logs.ViewInstalled:
		return fmt.Sprintf("view %s: members %s", e.View, joinIDs(e.Members)) + notPrimaryNote(e)
	case logs.LeaderChanged:
		return fmt.Sprintf("leader %d (round %d)", e.Leader, e.Round)
	case logs.MutexAcquired:
		return fmt.Sprintf("lock held by %d", e.Node)
	case logs.MutexRequested:
		return fmt.Sprintf("lock wanted by %d", e.Node)
	case logs.MutexReleased:
		return fmt.Sprintf("lock neither held nor wanted by %d", e.Node)
	}
	return e.Event
}

// payloadText shows a payload as text when it is printable UTF-8, else
// by its length.
func payloadText(p []byte) string {
	const most = 200
	if !utf8.Valid(p) || bytes.ContainsFunc(p, func(r rune) bool { return r < ' ' && r != '\t' }) {
		return fmt.Sprintf("%d bytes of binary", len(p))
	}
	if len(p) > most {
		cut := most
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		return strconv.Quote(string(p[:cut])) + fmt.Sprintf("… (%d bytes)", len(p))
	}
	return strconv.Quote(string(p))
}
