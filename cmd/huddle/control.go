package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/netmodel"
)

// controlFlags are the flags of the commands that talk to a running node:
// every configuration flag of huddle run (they say where its socket is),
// and the command's own.
type controlFlags struct {
	fs      *flag.FlagSet
	cfg     *config.Flags
	timeout *time.Duration
	json    *bool
	out     bytes.Buffer // the flag package's output, held until Parse says whether help was asked for
}

// socketFlags are the configuration flags a control command's help
// lists, beside its own: those that find the node's socket. The others
// are accepted too.
var socketFlags = []string{"config", "group", "id", "iface", "control-socket"}

// newControlFlags returns the flags of the control command named command
// ("status"), whose help says about after its synopsis (commands').
func newControlFlags(command, about string) *controlFlags {
	f := &controlFlags{fs: flag.NewFlagSet("huddle "+command, flag.ContinueOnError)}
	synopsis := synopsisOf(command)
	f.fs.SetOutput(&f.out)
	f.cfg = config.AddFlags(f.fs)
	settings := map[string]bool{}
	f.fs.VisitAll(func(fl *flag.Flag) { settings[fl.Name] = !slices.Contains(socketFlags, fl.Name) })
	f.timeout = f.fs.Duration("timeout", control.DefaultTimeout, "how long to wait for the node's answer")
	f.json = f.fs.Bool("json", false, "print the answer as one JSON object")
	f.fs.Usage = func() {
		fmt.Fprintf(f.fs.Output(), "Usage: %s\n\n%s\n\nFlags:\n\n", synopsis, about)
		printFlags(f.fs, func(name string) bool { return !settings[name] }) // the command's own, and socketFlags
		fmt.Fprint(f.fs.Output(), `
The node's socket is found as huddle run places it: --control-socket (or
control_socket in the --config file, or HUDDLE_CONTROL_SOCKET), else
$XDG_RUNTIME_DIR/huddle/<group>-<id>.sock (/tmp/huddle-<uid>/... without
XDG_RUNTIME_DIR), with the ID derived from the interface when --id is not
given. When no node has that ID, the only node of the group running on
this host is used. Every flag of huddle run is accepted.
`)
	}
	return f
}

// printFlags prints the help of the flags of fs that show, as
// flag.PrintDefaults does.
func printFlags(fs *flag.FlagSet, show func(name string) bool) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	fs.VisitAll(func(fl *flag.Flag) {
		if show(fl.Name) {
			shown.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
	shown.PrintDefaults()
}

// parse parses args, which may mix flags and arguments (huddle send TEXT
// --order total); "--" ends the flags. It returns the arguments, or an
// exit code when parsing ends the command.
func (f *controlFlags) parse(args []string, stdout, stderr io.Writer) ([]string, int, bool) {
	pos, code, done := parseOperands(f.fs, &f.out, args, stdout, stderr)
	if done {
		return nil, code, false
	}
	if *f.timeout <= 0 {
		fmt.Fprintf(stderr, "%s: --timeout must be above 0\n", f.fs.Name())
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// parseNone is parse for a command that takes no arguments.
func (f *controlFlags) parseNone(args []string, stdout, stderr io.Writer) (int, bool) {
	rest, code, ok := f.parse(args, stdout, stderr)
	if ok && len(rest) > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", f.fs.Name(), rest[0])
		return exitUsage, false
	}
	return code, ok
}

// target is the socket of the node a command talks to.
type target struct {
	path string
	cfg  config.Config
	// fallback: the ID was not given, so the only node of the group on
	// this host will do when no node has the derived ID.
	fallback bool
}

// findTarget loads the configuration as huddle run does, printing its
// warnings to stderr, and says where that node's socket is.
func (f *controlFlags) findTarget(stderr io.Writer) (target, error) {
	cfg, warnings, err := config.Load(f.fs, f.cfg, os.Environ())
	warn(stderr, warnings)
	if err != nil {
		return target{}, err
	}
	t := target{cfg: cfg}
	switch {
	case cfg.ControlSocket == control.Off:
		return t, errors.New("config: control_socket: is off, so there is no socket to reach the node by; set --control-socket to the node's socket")
	case cfg.ControlSocket != "":
		t.path = cfg.ControlSocket
	case cfg.ID != 0:
		t.path = control.DefaultPath(cfg.Group, cfg.ID)
	default:
		// Derive the ID as the node does; if that fails, the fallback
		// may still find the node.
		t.fallback = true
		if cfg.Resolve() == nil {
			t.cfg = cfg // the derived ID and interface, for the messages
			t.path = control.DefaultPath(cfg.Group, cfg.ID)
		}
	}
	return t, nil
}

// call runs cmd at the target's node, falling back to the only node of
// the group on this host when allowed. It returns the path it reached.
func (t target) call(timeout time.Duration, cmd string, args any) (json.RawMessage, string, error) {
	var res json.RawMessage
	path, err := t.reach(func(path string) (err error) {
		res, err = control.Call(context.Background(), path, timeout, cmd, args)
		return err
	})
	return res, path, err
}

// reach runs do with the target's node's socket, falling back to the only
// node of the group on this host when allowed. It returns the path it
// reached.
func (t target) reach(do func(path string) error) (string, error) {
	if t.path != "" {
		err := do(t.path)
		if !errors.Is(err, control.ErrNoNode) || !t.fallback {
			return t.path, t.explain(err)
		}
	}
	live, stale := liveSockets(control.DefaultDir())
	var mine []control.Candidate
	for _, c := range live {
		if c.Group == t.cfg.Group {
			mine = append(mine, c)
		}
	}
	if len(mine) != 1 {
		return "", t.noNode(live, stale, len(mine))
	}
	return mine[0].Path, t.explain(do(mine[0].Path))
}

// explain adds to a failure to reach the node how to reach one.
func (t target) explain(err error) error {
	if !errors.Is(err, control.ErrNoNode) {
		return err
	}
	live, stale := liveSockets(control.DefaultDir())
	return t.noNode(live, stale, 0)
}

// noNode is the error for no node at the target: what was tried, how to
// start a node, and the nodes that do run here; several is the number of
// nodes of the group the fallback could not choose from.
func (t target) noNode(live, stale []control.Candidate, several int) error {
	var b strings.Builder
	switch {
	case several > 1 && t.path != "":
		fmt.Fprintf(&b, "no node is running at %s (ID %d, derived from interface %s), and %d nodes of group %q run on this host: choose one with --id",
			t.path, t.cfg.ID, t.cfg.Iface, several, t.cfg.Group)
	case several > 1:
		fmt.Fprintf(&b, "%d nodes of group %q run on this host: choose one with --id", several, t.cfg.Group)
	case t.path != "":
		fmt.Fprintf(&b, "no node is running at %s", t.path)
	default:
		fmt.Fprintf(&b, "no node of group %q is running on this host (its ID could not be derived: set --id)", t.cfg.Group)
	}
	if slices.ContainsFunc(stale, func(c control.Candidate) bool { return c.Path == t.path }) {
		b.WriteString(" (a stale socket: the node that made it is gone)")
	}
	b.WriteString(".\nStart one with `huddle run` (with the same --group and --id), or name the node to talk to with --id and --group, or its socket with --control-socket.")
	switch {
	case len(live) > 0:
		b.WriteString("\nNodes running on this host:")
		for _, c := range live {
			fmt.Fprintf(&b, "\n  %s  (%s)", c.Path, c.Flags())
		}
	case t.cfg.ControlSocket == "":
		fmt.Fprintf(&b, "\nNo node runs with a default socket in %s.", control.DefaultDir())
	}
	return fmt.Errorf("%w: %s", control.ErrNoNode, b.String())
}

// liveSockets sorts the default sockets in dir into those a node answers
// at and stale ones.
func liveSockets(dir string) (live, stale []control.Candidate) {
	cands, _ := control.Candidates(dir)
	for _, c := range cands {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := control.Call(ctx, c.Path, time.Second, "status", nil)
		cancel()
		if errors.Is(err, control.ErrNoNode) {
			stale = append(stale, c)
		} else {
			live = append(live, c)
		}
	}
	return live, stale
}

// fail prints a command's error and returns its exit code: 2 for the
// command line or the configuration, 1 for everything else.
func fail(stderr io.Writer, name string, err error, usage bool) int {
	var e *control.Error
	msg := err.Error()
	switch {
	case errors.As(err, &e):
		msg = e.Message
	case errors.Is(err, control.ErrNoNode):
		msg = strings.TrimPrefix(msg, control.ErrNoNode.Error()+": ")
	}
	if usage {
		fmt.Fprintln(stderr, msg)
		return exitUsage
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	return exitFailure
}

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	f := newControlFlags("status",
		"Prints a running node's view (ID, coordinator, members with their incarnations),\n"+
			"its identity and its counters (those of node.stats). --json prints one JSON object.\n\n"+
			"With --group (or --all), the node asks every member of its view over the group\n"+
			"and prints one row per member: ID, address, incarnation, view, role, uptime,\n"+
			"messages delivered, NACKs and repairs sent, lock state and the leader it knows.\n"+
			"Members that do not answer within --wait are shown as silent. --group with a\n"+
			"value (--group NAME) still names the group, as for every command.")
	all := f.fs.Bool("all", false, "ask every member of the view (the same as a bare --group)")
	wait := f.fs.Duration("wait", control.DefaultProbeWait, "with --group: how long to wait for the members' answers")
	if code, ok := f.parseNone(bareGroup(args), stdout, stderr); !ok {
		return code
	}
	t, err := f.findTarget(stderr)
	if err != nil {
		return fail(stderr, "huddle status", err, true)
	}
	if *all {
		return statusGroup(t, *wait, *f.json, stdout, stderr)
	}
	return callAndPrint(t, *f.timeout, "huddle status", "status", nil, *f.json, stdout, stderr, func(st huddle.Status, path string) int {
		if !*f.json {
			printStatus(stdout, st, path)
		}
		return exitOK
	})
}

// callAndPrint runs cmd with args at the target's node and decodes its
// result into a T: as JSON it prints the result as the node sent it,
// and show (which prints it for people unless asJSON) returns the exit
// code. name is the command's, for its errors.
func callAndPrint[T any](t target, timeout time.Duration, name, cmd string, args any, asJSON bool, stdout, stderr io.Writer,
	show func(res T, path string) int) int {
	raw, path, err := t.call(timeout, cmd, args)
	if err != nil {
		return fail(stderr, name, err, false)
	}
	var res T
	if err := json.Unmarshal(raw, &res); err != nil {
		return fail(stderr, name, fmt.Errorf("the node's answer is malformed: %w", err), false)
	}
	if asJSON {
		stdout.Write(append(bytes.TrimSpace(raw), '\n'))
	}
	return show(res, path)
}

// primaryWord says whether the view is the primary component.
func primaryWord(st huddle.Status) string {
	switch {
	case !st.Primary:
		return "not primary: total and safe sends and the lock wait for a primary view"
	case st.Quorum == "" || st.Quorum == "off":
		return "primary, no quorum"
	}
	return "primary, quorum " + st.Quorum
}

// printStatus writes a node's status for people.
func printStatus(w io.Writer, st huddle.Status, path string) {
	fmt.Fprintf(w, "node %d (incarnation %d), group %q\n", st.ID, st.Incarnation, st.Group)
	fmt.Fprintf(w, "address %s on %s, sending from %s\n", st.Addr, st.Iface, st.Src)
	fmt.Fprintf(w, "control socket %s\n", path)
	if st.State == huddle.StateJoining {
		fmt.Fprintf(w, "\nno view yet: joining the group\n")
	} else {
		fmt.Fprintf(w, "\nview %s (%s, %s), coordinator %d, %d member%s, oldest first:\n", st.View, st.State, primaryWord(st), st.Coordinator,
			len(st.Members), map[bool]string{true: "s"}[len(st.Members) != 1])
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for i, m := range st.Members {
			var notes []string
			if i == 0 {
				notes = append(notes, "coordinator")
			}
			if m.ID == st.ID {
				notes = append(notes, "this node")
			}
			if m.ID == st.Sequencer {
				notes = append(notes, "orders total order")
			}
			fmt.Fprintf(tw, "  %d\tincarnation %d", m.ID, m.Incarnation)
			if len(notes) > 0 {
				fmt.Fprintf(tw, "\t%s", strings.Join(notes, ", "))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	if st.Drop != nil {
		fmt.Fprintf(w, "%s (an experiment: huddle drop --rate 0 ends it)\n", describeDrop(*st.Drop))
	}
	if st.Leader != 0 {
		fmt.Fprintf(w, "leader %d (%s election, round %d)\n", st.Leader, st.Election, st.LeaderRound)
	} else if st.State != huddle.StateJoining {
		fmt.Fprintf(w, "no leader yet (%s election)\n", st.Election)
	}
	switch st.Lock {
	case "":
	case "released":
		fmt.Fprintln(w, "lock: this node neither holds nor wants it")
	case "wanted":
		fmt.Fprintln(w, "lock: this node wants it")
	case "held":
		fmt.Fprintln(w, "lock: this node holds it")
	default:
		fmt.Fprintf(w, "lock: %s\n", st.Lock)
	}
	switch {
	case st.Transport == "unicast":
		fmt.Fprintf(w, "transport unicast, to %d address%s: %s\n", len(st.Destinations), map[bool]string{true: "es"}[len(st.Destinations) != 1],
			cmp.Or(strings.Join(st.Destinations, " "), "none yet"))
	case len(st.UnicastTo)+len(st.UnicastFrom) > 0:
		fmt.Fprintf(w, "transport multicast, with unicast too to: %s; heard by unicast only: %s\n",
			cmp.Or(strings.Join(st.UnicastTo, " "), "none"), cmp.Or(strings.Join(st.UnicastFrom, " "), "none"))
	}
	peers := make([]string, len(st.Peers))
	for i, p := range st.Peers {
		peers[i] = fmt.Sprint(p)
	}
	fmt.Fprintf(w, "live peers: %s\n\ncounters:\n", cmp.Or(strings.Join(peers, " "), "none"))
	// Names to the left, numbers to the right.
	names, values := 0, 0
	for _, c := range st.Counters {
		names, values = max(names, len(c.Name)), max(values, len(fmt.Sprint(c.Value)))
	}
	for _, c := range st.Counters {
		fmt.Fprintf(w, "  %-*s  %*v\n", names, c.Name, values, c.Value)
	}
}

// rawPiece is the default size of the messages `huddle send --raw -` cuts
// its standard input into.
const rawPiece = 64 << 10

func cmdSend(args []string, stdout, stderr io.Writer) int {
	return cmdSendFrom(args, os.Stdin, stdout, stderr)
}

func cmdSendFrom(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newControlFlags("send",
		"Multicasts TEXT to the group through the running node, and prints the sequence\n"+
			"number it got (the seq of its deliver events). With - instead of TEXT it sends\n"+
			"standard input, a message per line (without its newline; empty lines too), or\n"+
			"with --raw as a binary stream in messages of --raw-size bytes, in order: a\n"+
			"receiver that joins the payloads of the deliveries gets the stream back. It\n"+
			"waits while the node's send window is full or a view change holds sends, up to\n"+
			"--timeout per message; a message that times out is not sent, nor what follows.\n"+
			"Flags may follow TEXT; -- ends them.")
	order := f.fs.String("order", control.DefaultOrder, "delivery `order`: fifo, total, safe or causal")
	service := f.fs.String("service", "", "the group `service` to send on (a program's Group.Service); empty is the application's channel")
	raw := f.fs.Bool("raw", false, "with -: send standard input as a binary stream, not lines")
	rawSize := f.fs.Int("raw-size", rawPiece, "with --raw: the most `bytes` of the stream in one message, 1 to 16 MiB")
	rest, code, ok := f.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(rest) != 1:
		fmt.Fprintf(stderr, "huddle send: want one TEXT argument (quote it), or - for standard input, got %d\nUsage: huddle send [flags] TEXT | - (huddle send --help)\n", len(rest))
		return exitUsage
	case !slices.Contains(control.Orders, *order):
		fmt.Fprintf(stderr, "huddle send: --order %q is not fifo, total, safe or causal\n", *order)
		return exitUsage
	case *raw && rest[0] != "-":
		fmt.Fprintln(stderr, "huddle send: --raw reads standard input: give - instead of TEXT")
		return exitUsage
	case *rawSize < 1 || *rawSize > 16<<20:
		fmt.Fprintf(stderr, "huddle send: --raw-size %d is out of range (1 to %d bytes)\n", *rawSize, 16<<20)
		return exitUsage
	}
	t, err := f.findTarget(stderr)
	if err != nil {
		return fail(stderr, "huddle send", err, true)
	}
	send := func(p []byte) (control.SendResult, error) {
		a := control.SendArgs{Text: string(p), Order: *order, Service: *service}
		if !utf8.Valid(p) {
			a.Text, a.Payload = "", p // JSON strings are UTF-8: send the bytes as they are
		}
		res, _, err := t.call(*f.timeout, "send", a)
		if err != nil {
			return control.SendResult{}, err
		}
		if *f.json {
			stdout.Write(append(bytes.TrimSpace(res), '\n'))
		}
		var r control.SendResult
		if err := json.Unmarshal(res, &r); err != nil {
			return r, fmt.Errorf("the node's answer is malformed: %w", err)
		}
		return r, nil
	}
	if rest[0] != "-" {
		r, err := send([]byte(rest[0]))
		if err != nil {
			return fail(stderr, "huddle send", err, false)
		}
		if !*f.json {
			fmt.Fprintf(stdout, "sent: seq %d, order %s\n", r.Seq, r.Order)
		}
		return exitOK
	}
	var first, last control.SendResult
	n, err := eachMessage(stdin, *raw, *rawSize, func(p []byte) error {
		r, err := send(p)
		if err == nil {
			if first.Seq == 0 {
				first = r
			}
			last = r
		}
		return err
	})
	if !*f.json && n > 0 {
		fmt.Fprintf(stdout, "sent %d messages: seq %d to %d, order %s\n", n, first.Seq, last.Seq, last.Order)
	}
	if err != nil {
		return fail(stderr, fmt.Sprintf("huddle send: after %d messages sent", n), err, false)
	}
	if n == 0 && !*f.json {
		fmt.Fprintln(stdout, "sent nothing: standard input was empty")
	}
	return exitOK
}

// eachMessage cuts r into messages, lines or (raw) pieces of at most size
// bytes, and hands each to send until one fails; it returns how many were
// sent.
func eachMessage(r io.Reader, raw bool, size int, send func([]byte) error) (int, error) {
	n := 0
	if raw {
		buf := make([]byte, size)
		for {
			k, err := io.ReadFull(r, buf)
			if k > 0 {
				if err := send(buf[:k]); err != nil {
					return n, err
				}
				n++
			}
			switch {
			case err == io.EOF || err == io.ErrUnexpectedEOF:
				return n, nil
			case err != nil:
				return n, fmt.Errorf("reading standard input: %w", err)
			}
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if err := send(bytes.TrimSuffix(sc.Bytes(), []byte("\r"))); err != nil {
			return n, err
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("reading standard input: %w", err)
	}
	return n, nil
}

func cmdElect(args []string, stdout, stderr io.Writer) int {
	f := newControlFlags("elect",
		"Starts an election from the running node (the group's algorithm: ring or bully),\n"+
			"waits until the node knows the round's leader, up to --timeout, and prints it.\n"+
			"The election's messages are logged as election.* and leader.changed events.")
	if code, ok := f.parseNone(args, stdout, stderr); !ok {
		return code
	}
	t, err := f.findTarget(stderr)
	if err != nil {
		return fail(stderr, "huddle elect", err, true)
	}
	deadline := time.Now().Add(*f.timeout)
	res, _, err := t.call(*f.timeout, "elect", nil)
	if err != nil {
		return fail(stderr, "huddle elect", err, false)
	}
	var r huddle.ElectResult
	if err := json.Unmarshal(res, &r); err != nil {
		return fail(stderr, "huddle elect", fmt.Errorf("the node's answer is malformed: %w", err), false)
	}
	if !r.Started {
		fmt.Fprintf(stderr, "huddle elect: the node is taking part in an election already, or has no view yet; its leader is %d (round %d)\n", r.Leader, r.Round)
		return exitFailure
	}
	var known time.Time // when the node first knew the new round's leader
	for {
		res, _, err := t.call(time.Until(deadline), "status", nil)
		if err != nil {
			return fail(stderr, "huddle elect", err, false)
		}
		var st huddle.Status
		if err := json.Unmarshal(res, &st); err != nil {
			return fail(stderr, "huddle elect", fmt.Errorf("the node's answer is malformed: %w", err), false)
		}
		elected := st.LeaderRound > r.Round && st.Leader != 0
		if elected && known.IsZero() {
			known = time.Now()
		}
		// The round's total comes from its leader a moment after the
		// leader is known; it is waited for a second at most.
		if elected && (st.RoundMessages != nil || time.Since(known) > time.Second || time.Now().After(deadline)) {
			if *f.json {
				out, _ := json.Marshal(map[string]any{"algorithm": st.Election, "leader": st.Leader, "round": st.LeaderRound, "messages": st.RoundMessages})
				fmt.Fprintf(stdout, "%s\n", out)
			} else if st.RoundMessages != nil {
				fmt.Fprintf(stdout, "leader %d (%s election, round %d): %d messages in the round across the group\n", st.Leader, st.Election, st.LeaderRound, *st.RoundMessages)
			} else {
				fmt.Fprintf(stdout, "leader %d (%s election, round %d)\n", st.Leader, st.Election, st.LeaderRound)
			}
			return exitOK
		}
		if time.Now().After(deadline) {
			return fail(stderr, "huddle elect", fmt.Errorf("no leader elected within %v (the election goes on: see leader.changed in the node's log)", *f.timeout), false)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func cmdLock(args []string, stdout, stderr io.Writer) int {
	f := newControlFlags("lock",
		"Acquires the group's lock (its mutex.algorithm) on the running node, holds it for\n"+
			"--hold, releases it, and prints how long it waited and held. --timeout bounds\n"+
			"the wait for the lock; a request that times out is withdrawn.")
	hold := f.fs.Duration("hold", 0, "how long to hold the lock")
	if code, ok := f.parseNone(args, stdout, stderr); !ok {
		return code
	}
	if *hold < 0 {
		fmt.Fprintln(stderr, "huddle lock: --hold is negative")
		return exitUsage
	}
	t, err := f.findTarget(stderr)
	if err != nil {
		return fail(stderr, "huddle lock", err, true)
	}
	res, _, err := t.call(*f.timeout+*hold, "lock", control.LockArgs{HoldMs: hold.Milliseconds()})
	if err != nil {
		return fail(stderr, "huddle lock", err, false)
	}
	if *f.json {
		stdout.Write(append(bytes.TrimSpace(res), '\n'))
		return exitOK
	}
	var r control.LockResult
	if err := json.Unmarshal(res, &r); err != nil {
		return fail(stderr, "huddle lock", fmt.Errorf("the node's answer is malformed: %w", err), false)
	}
	fmt.Fprintf(stdout, "held the lock for %.1f ms after waiting %.1f ms; %d lock messages for the entry across the group\n", r.HeldMs, r.WaitMs, r.Messages)
	return exitOK
}

func cmdDrop(args []string, stdout, stderr io.Writer) int {
	f := newControlFlags("drop",
		"Sets the running node's built-in fault injection, for experiments where kernel\n"+
			"loss (netem, iptables, nft) cannot be had: the node drops each datagram it\n"+
			"receives with probability --rate, before the protocol sees it, only from the\n"+
			"senders --from lists when given; with --burst, in bursts of consecutive\n"+
			"datagrams of that mean length at the same long-run rate. --rate 0 turns it\n"+
			"off. Without --rate it prints the rule in force. Dropped datagrams are\n"+
			"counted as injected_drops.")
	rate := f.fs.Float64("rate", -1, "drop each received datagram with this `probability`, 0 to 1")
	from := f.fs.String("from", "", "only datagrams from these node `IDs` (e.g. 3,4); empty is every sender")
	seed := f.fs.Uint64("seed", 0, "restart the random choices from this `seed`; 0 goes on with them")
	burst := f.fs.Float64("burst", 0, "drop in bursts of this mean `length` in datagrams, 1 to 1000; 0 or 1 drops independently")
	rest, code, ok := f.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	var ids config.IDList
	if err := ids.UnmarshalText([]byte(*from)); err != nil {
		fmt.Fprintf(stderr, "huddle drop: --from: %v\n", err)
		return exitUsage
	}
	a := control.DropArgs{From: ids, Seed: *seed, Burst: *burst}
	switch {
	case len(rest) > 0:
		fmt.Fprintf(stderr, "huddle drop: unexpected argument %q\n", rest[0])
		return exitUsage
	case *rate != -1 && !(*rate >= 0 && *rate <= 1):
		fmt.Fprintf(stderr, "huddle drop: --rate %v is out of range (0 to 1)\n", *rate)
		return exitUsage
	case *rate == -1 && (len(ids) > 0 || *seed != 0 || *burst != 0):
		fmt.Fprintln(stderr, "huddle drop: --from, --seed and --burst go with --rate")
		return exitUsage
	case *rate != -1 && netmodel.BurstProblem(*rate, *burst) != "":
		fmt.Fprintf(stderr, "huddle drop: --burst %s\n", netmodel.BurstProblem(*rate, *burst))
		return exitUsage
	case *rate != -1:
		a.Rate = rate
	}
	t, err := f.findTarget(stderr)
	if err != nil {
		return fail(stderr, "huddle drop", err, true)
	}
	res, _, err := t.call(*f.timeout, "drop", a)
	if err != nil {
		return fail(stderr, "huddle drop", err, false)
	}
	if *f.json {
		stdout.Write(append(bytes.TrimSpace(res), '\n'))
		return exitOK
	}
	var r control.DropResult
	if err := json.Unmarshal(res, &r); err != nil {
		return fail(stderr, "huddle drop", fmt.Errorf("the node's answer is malformed: %w", err), false)
	}
	fmt.Fprintf(stdout, "%s; %d datagrams dropped so far\n", describeDrop(r.Drop), r.InjectedDrops)
	return exitOK
}

// describeDrop says in words what a fault injection rule drops.
func describeDrop(d huddle.Drop) string {
	if !d.Active() {
		return "built-in drop off"
	}
	who := "every sender"
	if len(d.From) > 0 {
		who = "node " + config.IDList(d.From).String()
		if len(d.From) > 1 {
			who = "nodes " + config.IDList(d.From).String()
		}
	}
	bursts := ""
	if d.Burst > 1 && d.Rate < 1 {
		bursts = " in bursts of " + strconv.FormatFloat(d.Burst, 'g', -1, 64)
	}
	return fmt.Sprintf("built-in drop: %s of the datagrams from %s%s", strconv.FormatFloat(d.Rate*100, 'f', -1, 64)+"%", who, bursts)
}

func cmdKey(args []string, stdout, stderr io.Writer) int {
	f := newControlFlags("key",
		"Prints the fingerprints of the running node's group keys, the sealing one\n"+
			"first. huddle key reload makes the node read its key file again (as SIGHUP\n"+
			"does): during a rollover the file holds two keys, the first seals, both open.")
	rest, code, ok := f.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	var a control.KeyArgs
	switch {
	case len(rest) == 1 && rest[0] == "reload":
		a.Reload = true
	case len(rest) > 0:
		fmt.Fprintf(stderr, "huddle key: unexpected argument %q (huddle key [reload])\n", rest[0])
		return exitUsage
	}
	t, err := f.findTarget(stderr)
	if err != nil {
		return fail(stderr, "huddle key", err, true)
	}
	res, _, err := t.call(*f.timeout, "key", a)
	if err != nil {
		return fail(stderr, "huddle key", err, false)
	}
	if *f.json {
		stdout.Write(append(bytes.TrimSpace(res), '\n'))
		return exitOK
	}
	var r control.KeyResult
	if err := json.Unmarshal(res, &r); err != nil {
		return fail(stderr, "huddle key", fmt.Errorf("the node's answer is malformed: %w", err), false)
	}
	switch len(r.Fingerprints) {
	case 0:
		fmt.Fprintln(stdout, "no key: the node's datagrams travel in the clear")
	case 1:
		fmt.Fprintf(stdout, "sealing with key %s\n", r.Fingerprints[0])
	default:
		fmt.Fprintf(stdout, "sealing with key %s; also opening with %s (a rollover)\n", r.Fingerprints[0], strings.Join(r.Fingerprints[1:], ", "))
	}
	return exitOK
}
