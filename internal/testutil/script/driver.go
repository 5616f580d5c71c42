package script

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/huddle-lan/huddle/internal/testutil/msgnet"
)

// Adapter is what a machine's tests plug into the Driver.
type Adapter[N Node[E], E any] interface {
	// New makes node id's machine, at d.Net.Now.
	New(d *Driver[N, E], id uint64) N
	// Message names the kind of a message node from sends (for drop rules
	// and hide) and says how to print it; false keeps it off the network.
	Message(from uint64, m Msg) (kind, text string, send bool)
	// Event says how to print an event of node id; "" leaves it out.
	Event(id uint64, e E) string
	// Command runs one of the machine's own commands, printing to d.Out;
	// false if it is none of them.
	Command(d *Driver[N, E], td *datadriven.TestData) bool
	// Check returns the invariants broken now; it runs after every
	// command.
	Check(d *Driver[N, E]) []string
}

// Rester is an Adapter whose machines never stop their timers (session
// messages): stabilize asks it whether the group is at rest ("": yes;
// else why not) instead of waiting for every deadline to go.
type Rester[N Node[E], E any] interface {
	Resting(d *Driver[N, E]) string
}

// Finisher is an Adapter with a check at the end of each script.
type Finisher[N Node[E], E any] interface {
	Final(d *Driver[N, E]) []string
}

// Driver runs one script: a Net, an Adapter, and what the running
// command prints.
type Driver[N Node[E], E any] struct {
	T       *testing.T
	Net     *Net[N, E]
	A       Adapter[N, E]
	Out     strings.Builder
	Crashed map[uint64]bool
	hidden  map[string]bool             // kinds of message not printed
	delays  map[[2]uint64]time.Duration // links whose delay is not LinkDelay, both ways
}

// LinkDelay is the time a message of a script takes, unless the script
// sets its link's (delay).
const LinkDelay = time.Millisecond

// Start is when every script begins: times print as t=, since then.
var Start = time.Unix(1_800_000_000, 0)

// Run runs every script of dir/*.txt, each with a new Driver whose
// Adapter newAdapter makes (it may set d.Net's Delay, Order...; hidden
// lists the kinds of message not printed unless shown).
func Run[N Node[E], E any](t *testing.T, dir string, newAdapter func(d *Driver[N, E]) Adapter[N, E], hidden ...string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			d := NewDriver[N, E](t)
			for _, k := range hidden {
				d.hidden[k] = true
			}
			d.A = newAdapter(d)
			datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
				d.T, d.Net.T = t, t
				out := d.Do(td)
				if errs := d.A.Check(d); len(errs) > 0 {
					t.Fatalf("%s: after %q:\n%s\nthe last steps:\n%s", td.Pos, td.FullCmd(), strings.Join(errs, "\n"), d.Net.Tail())
				}
				return out
			})
			if f, ok := d.A.(Finisher[N, E]); ok {
				if errs := f.Final(d); len(errs) > 0 {
					t.Fatalf("at the end of %s:\n%s", path, strings.Join(errs, "\n"))
				}
			}
		})
	}
}

// NewDriver returns a Driver without an adapter, whose network prints
// what it carries to Out.
func NewDriver[N Node[E], E any](t *testing.T) *Driver[N, E] {
	d := &Driver[N, E]{T: t, Net: New[N, E](t, Start), Crashed: map[uint64]bool{}, hidden: map[string]bool{},
		delays: map[[2]uint64]time.Duration{}}
	n := d.Net
	n.Delay = func(from, to uint64) time.Duration {
		if v, ok := d.delays[[2]uint64{min(from, to), max(from, to)}]; ok {
			return v
		}
		return LinkDelay
	}
	n.Sending = func(from uint64, m Msg) (string, string, bool) { return d.A.Message(from, m) }
	n.Sent = d.printSent
	n.Lost = d.printLost
	n.Event = func(id uint64, e E) {
		if s := d.A.Event(id, e); s != "" {
			d.Printf("%d: %s", id, s)
		}
	}
	return d
}

// Printf prints a line of the running command's output, at the time now.
func (d *Driver[N, E]) Printf(format string, args ...any) {
	fmt.Fprintf(&d.Out, "t=%v ", d.Net.Since().Round(time.Microsecond))
	fmt.Fprintf(&d.Out, format, args...)
	d.Out.WriteByte('\n')
}

func (d *Driver[N, E]) printSent(from uint64, m Msg, to, dropped []uint64, kind, text string) {
	dst := "*"
	if m.To != 0 {
		dst = strconv.FormatUint(m.To, 10)
	}
	switch {
	case !d.hidden[kind]:
		s := fmt.Sprintf("%d→%s %s", from, dst, text)
		if len(dropped) > 0 {
			s += " (dropped to " + JoinIDs(dropped) + ")"
		}
		d.Printf("%s", s)
	case len(dropped) > 0:
		d.Printf("%d→%s %s (dropped to %s)", from, dst, text, JoinIDs(dropped))
	}
}

func (d *Driver[N, E]) printLost(m msgnet.Msg, why string) {
	kind, text, _ := d.A.Message(m.From, Msg{To: m.To, Payload: m.Payload})
	if !d.hidden[kind] {
		d.Printf("lost %d→%d %s (%s)", m.From, m.To, text, why)
	}
}

// Do runs one command and returns what it printed ("ok" if nothing).
//
// The commands every script has (IDs are node IDs, durations Go's):
//
//	add-nodes 1 2 3        start machines, without a view
//	view 1 2 3             install a view of exactly these nodes on each
//	                       of them ("epoch.lowest"); what is in flight from
//	                       or to them is lost, and printed as lost
//	crash 2                node 2 stops for good: what it sent or should
//	                       receive is lost
//	tick [40ms]            advance time (default 1ms), delivering what
//	                       arrives and ticking the nodes at their deadlines
//	stabilize [max=5s]     advance time until nothing is in flight and no
//	                       timer is armed (or the Adapter says the group
//	                       rests); fails if max passes first
//	drop 2->3 [kind=K] [n=1|all]
//	                       drop the next n messages of kind K (any: all
//	                       kinds; the default) from 2 to 3 (2->*: to all,
//	                       a message counting once)
//	delay 3-4 4ms          messages between 3 and 4, both ways, take 4ms
//	                       (every other link: LinkDelay, 1ms)
//	partition 1 2 | 3      cut the network into sides (a node not named is
//	                       alone)
//	heal                   end the partition and every drop rule
//	hide K...; show K...   stop or start printing messages of these kinds
//
// Every message is printed as it is sent, "t=… 1→2 text" (1→*: to all),
// with the receivers a rule dropped it to; every event as it happens,
// "t=… 2: text". A hidden message is printed only if dropped.
func (d *Driver[N, E]) Do(td *datadriven.TestData) string {
	d.Out.Reset()
	words := Words(td)
	switch td.Cmd {
	case "add-nodes":
		for _, w := range words {
			id := d.ID(td, w)
			if d.Net.Nodes[id] != nil {
				td.Fatalf(d.T, "node %d exists", id)
			}
			d.Net.Add(id, d.A.New(d, id))
			d.Net.Collect(id)
		}
	case "view":
		d.Net.Install(d.IDs(td, words)...)
	case "crash":
		for _, id := range d.IDs(td, words) {
			d.Node(td, id)
			d.Crashed[id] = true
			d.Net.Crash(id)
		}
	case "tick":
		step := time.Millisecond
		if len(words) > 0 {
			step = d.Duration(td, words[0])
		}
		d.Net.Run(step)
		fmt.Fprintf(&d.Out, "t=%v\n", d.Net.Since().Round(time.Microsecond))
	case "stabilize":
		d.stabilize(td)
	case "drop":
		d.drop(td, words)
	case "delay":
		if len(words) != 2 {
			td.Fatalf(d.T, "usage: delay A-B DURATION")
		}
		a, b, ok := strings.Cut(words[0], "-")
		if !ok {
			td.Fatalf(d.T, "bad link %q: want A-B", words[0])
		}
		x, y := d.ID(td, a), d.ID(td, b)
		d.delays[[2]uint64{min(x, y), max(x, y)}] = d.Duration(td, words[1])
	case "partition":
		var sides [][]uint64
		for part := range strings.SplitSeq(strings.Join(words, " "), "|") {
			sides = append(sides, d.IDs(td, strings.Fields(part)))
		}
		d.Net.Partition(sides...)
	case "heal":
		d.Net.Heal()
	case "hide", "show":
		for _, k := range words {
			d.hidden[k] = td.Cmd == "hide"
		}
	default:
		if !d.A.Command(d, td) {
			td.Fatalf(d.T, "unknown command %q", td.Cmd)
		}
	}
	if d.Out.Len() == 0 {
		return "ok\n"
	}
	return d.Out.String()
}

func (d *Driver[N, E]) stabilize(td *datadriven.TestData) {
	limit := 5 * time.Second
	if td.HasArg("max") {
		var s string
		td.ScanArgs(d.T, "max", &s)
		limit = d.Duration(td, s)
	}
	r, rests := d.A.(Rester[N, E])
	end := d.Net.Now.Add(limit)
	for {
		if !rests && d.Net.InFlight() == 0 {
			if _, armed := d.Net.Next(); !armed {
				break
			}
		}
		if rests && r.Resting(d) == "" {
			break
		}
		if at, ok := d.Net.Next(); !ok || at.After(end) {
			why := "timers armed or messages in flight"
			if rests {
				why = r.Resting(d)
			}
			td.Fatalf(d.T, "not stable after %v (t=%v): %s\n%s", limit, d.Net.Since(), why, d.Net.Tail())
		}
		d.Net.Step()
	}
	d.Printf("stable")
}

func (d *Driver[N, E]) drop(td *datadriven.TestData, words []string) {
	if len(words) != 1 {
		td.Fatalf(d.T, "usage: drop FROM->TO [kind=K] [n=N|all]")
	}
	a, b, ok := strings.Cut(words[0], "->")
	if !ok {
		td.Fatalf(d.T, "bad link %q: want FROM->TO", words[0])
	}
	r := Rule{From: d.ID(td, a), Kind: "any", Left: 1}
	if b != "*" {
		r.To = d.ID(td, b)
	}
	td.MaybeScanArgs(d.T, "kind", &r.Kind)
	if td.HasArg("n") {
		var s string
		td.ScanArgs(d.T, "n", &s)
		if c, err := strconv.Atoi(s); s == "all" {
			r.Left = -1
		} else if err == nil && c > 0 {
			r.Left = c
		} else {
			td.Fatalf(d.T, "bad count %q", s)
		}
	}
	d.Net.Drop(r)
}

// Words returns the command's arguments that are not key=value, in
// order, without the quotes of a quoted one.
func Words(td *datadriven.TestData) []string {
	var ws []string
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 {
			ws = append(ws, strings.Trim(a.Key, `"`))
		}
	}
	return ws
}

// ID parses a node ID.
func (d *Driver[N, E]) ID(td *datadriven.TestData, w string) uint64 {
	id, err := strconv.ParseUint(w, 10, 64)
	if err != nil || id == 0 {
		td.Fatalf(d.T, "bad node ID %q", w)
	}
	return id
}

// IDs parses node IDs.
func (d *Driver[N, E]) IDs(td *datadriven.TestData, ws []string) []uint64 {
	ids := make([]uint64, len(ws))
	for i, w := range ws {
		ids[i] = d.ID(td, w)
	}
	return ids
}

// Node returns node id, failing the test if it does not run.
func (d *Driver[N, E]) Node(td *datadriven.TestData, id uint64) *Peer[N, E] {
	p := d.Net.Nodes[id]
	if p == nil {
		td.Fatalf(d.T, "no node %d", id)
	}
	return p
}

// Duration parses a positive duration.
func (d *Driver[N, E]) Duration(td *datadriven.TestData, w string) time.Duration {
	v, err := time.ParseDuration(w)
	if err != nil || v <= 0 {
		td.Fatalf(d.T, "bad duration %q", w)
	}
	return v
}

// JoinIDs joins IDs with spaces.
func JoinIDs(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, " ")
}
