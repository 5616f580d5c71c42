package membership

// Data-driven scenarios of the membership layer, in the style of etcd
// raft's testdata scripts (github.com/cockroachdb/datadriven). Each file of
// testdata/*.txt is one scenario: commands to a small deterministic network
// of Machines, each followed by what it printed. `go test ./membership -run
// TestDataDriven` checks them; `go test ./membership -run TestDataDriven
// -rewrite` writes what the machines print now as the expected output
// (review the diff before committing it).
//
// The network is in memory and instantaneous: every datagram a machine
// sends goes through the real codec (internal/wire's Encoder and Decoder)
// to every other machine at once, unless a partition, a crash or a drop
// rule keeps it from one. Time is virtual and moves by whole milliseconds;
// at each one, every machine whose deadline passed is ticked, in ID order,
// and the datagrams it and the others send move until none is left. The
// configuration is fixed: heartbeat 20ms, suspect timeout 150ms, join
// timeout 60ms, datagrams of 1400 bytes, a window of 256, and each engine's
// randomness seeded by its node's ID; so a script runs the same every time.
// Times printed are since the script began (t=…).
//
// Commands (IDs are node IDs; an incarnation is always 1):
//
//	add-nodes 1 2 3          start machines (they join; the highest ID founds)
//	tick [40ms] [trace]      advance time (default 1ms)
//	stabilize [max=5s] [trace]
//	                         advance time until the group is at rest: every
//	                         live node is in a view whose members are exactly
//	                         the live nodes of its side of the partition,
//	                         with no flush, order or repair outstanding, and
//	                         nothing but session messages for two heartbeats;
//	                         fails the test if max passes first
//	multicast 2 fifo "m1" ["m2" ...]
//	                         node 2 sends each payload (fifo, total or
//	                         safe) in one turn; prints the seqs
//	drop 2->3 [kind=data] [n=1]
//	                         drop the next n datagrams (n=all: every one,
//	                         until heal) of that kind from 2 to 3; 2->*:
//	                         to every node, a datagram counting once. Kinds:
//	                         data (data and batches, the default), session,
//	                         nack, repair, join, leave, flush, flush-ok,
//	                         view, refuse, any
//	partition 1 2 | 3 4      cut the network into sides (a node not named
//	                         is alone)
//	heal                     end the partition and every drop rule
//	crash 1                  node 1 stops for good: it sends and takes nothing
//	leave 2                  node 2 leaves gracefully
//	views                    each node's view: epoch.coordinator[members],
//	                         the coordinator first
//	deliveries               what each node delivered since the last call,
//	                         in order, one line per node and view ("2 in
//	                         2.3:", the view it was sent in, which the ledger
//	                         checks was the receiver's view then): src/seq,
//	                         order, #gseq for total and safe, final when the
//	                         view's end delivered it, then the payload
//	events                   membership events since the last call, in order
//	                         (view.installed, view.flush.started,
//	                         member.suspected, member.excluded, member.left,
//	                         member.refused, stream.skipped)
//	clear                    forget the events and deliveries not printed
//	                         yet (the ledger keeps checking them)
//
// With trace, tick and stabilize also print every datagram sent other than
// session messages. Whatever the command, a datagram a drop rule took is
// printed as it is dropped.
//
// Besides the expected output, a ledger (ledger_test.go) checks every
// script by code after every command: virtual synchrony, agreement on
// views, self-inclusion, integrity, FIFO, total order, and at each safe
// delivery by record that every member of the view still in it holds the
// message; stabilize checks, besides, that every message sent in the
// views it settles on was delivered by all their members.

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
)

// The fixed configuration of every script.
const (
	ddHeartbeat = 20 * time.Millisecond
	ddSuspect   = 150 * time.Millisecond
	ddJoin      = 60 * time.Millisecond
	ddDatagram  = 1400
	ddWindow    = 256
	ddStep      = time.Millisecond
	ddQuiet     = 2 * ddHeartbeat // stabilize: how long only sessions must flow
	ddMaxPasses = 1000            // datagram rounds in one millisecond before the driver gives up
)

var ddStart = time.Unix(1_800_000_000, 0)

func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			n := newDDNet(t)
			datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
				n.t = t
				out := n.do(td)
				if errs := n.ledger.check(); len(errs) > 0 {
					t.Fatalf("%s: after %q the guarantees are broken:\n%s", td.Pos, td.FullCmd(), strings.Join(errs, "\n"))
				}
				return out
			})
		})
	}
}

// ddNet is the network of one script.
type ddNet struct {
	t      *testing.T
	now    time.Time
	nodes  map[uint64]*ddNode
	enc    *wire.Encoder
	dec    *wire.Decoder
	env    *wire.Envelope
	rec    wire.OrderRecord
	side   map[uint64]int // partition side of each node; nil: no partition
	drops  []*dropRule
	ledger *ledger
	events []string         // since the last `events`
	out    *strings.Builder // what the running command prints as it goes
	trace  bool
	busy   bool // a datagram other than a session message was sent
}

type ddNode struct {
	id      uint64
	m       *Machine
	addr    netip.AddrPort
	crashed bool
	dels    []Delivery // since the last `deliveries`
}

// dropRule drops datagrams of a kind from one node to one (to 0: to all).
type dropRule struct {
	from, to uint64
	kind     string
	left     int // datagrams still to drop; -1: all
}

func newDDNet(t *testing.T) *ddNet {
	return &ddNet{t: t, now: ddStart, nodes: map[uint64]*ddNode{}, enc: wire.NewEncoder(), dec: wire.NewDecoder(),
		env: wire.NewEnvelope(ddDatagram), ledger: newLedger(), out: &strings.Builder{}}
}

func (n *ddNet) do(td *datadriven.TestData) string {
	n.out.Reset()
	n.trace = td.HasArg("trace")
	words := n.words(td)
	switch td.Cmd {
	case "add-nodes":
		for _, w := range words {
			n.add(n.id(td, w))
		}
		n.pump()
	case "tick":
		d := ddStep
		if len(words) > 0 {
			d = n.duration(td, words[0])
		}
		n.advance(d)
		fmt.Fprintf(n.out, "t=%v\n", n.since())
	case "stabilize":
		n.stabilize(td)
	case "multicast":
		n.multicast(td, words)
	case "drop":
		n.drop(td, words)
	case "partition":
		n.partition(td, words)
	case "heal":
		n.side, n.drops = nil, nil
	case "crash":
		for _, w := range words {
			n.node(td, w).crashed = true
		}
	case "leave":
		for _, w := range words {
			n.node(td, w).m.Leave(n.now)
		}
		n.pump()
	case "views":
		n.printViews()
	case "deliveries":
		n.printDeliveries()
	case "events":
		for _, e := range n.events {
			fmt.Fprintln(n.out, e)
		}
		n.events = nil
	case "clear":
		n.events = nil
		for _, nd := range n.nodes {
			nd.dels = nil
		}
	default:
		td.Fatalf(n.t, "unknown command %q", td.Cmd)
	}
	if n.out.Len() == 0 {
		return "ok\n"
	}
	return n.out.String()
}

// words returns the command's arguments that are not key=value, in order.
func (n *ddNet) words(td *datadriven.TestData) []string {
	var ws []string
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 && a.Key != "trace" {
			ws = append(ws, a.Key)
		}
	}
	return ws
}

func (n *ddNet) id(td *datadriven.TestData, w string) uint64 {
	id, err := strconv.ParseUint(w, 10, 64)
	if err != nil || id == 0 || id > 254 {
		td.Fatalf(n.t, "bad node ID %q", w)
	}
	return id
}

func (n *ddNet) node(td *datadriven.TestData, w string) *ddNode {
	nd := n.nodes[n.id(td, w)]
	if nd == nil {
		td.Fatalf(n.t, "no node %s", w)
	}
	return nd
}

func (n *ddNet) duration(td *datadriven.TestData, w string) time.Duration {
	d, err := time.ParseDuration(w)
	if err != nil || d <= 0 || d%ddStep != 0 {
		td.Fatalf(n.t, "bad duration %q: want a positive number of milliseconds", w)
	}
	return d
}

func (n *ddNet) since() time.Duration { return n.now.Sub(ddStart) }

func (n *ddNet) add(id uint64) {
	if n.nodes[id] != nil {
		n.t.Fatalf("node %d exists", id)
	}
	m := New(Options{
		Engine: multicast.Options{Self: id, Inc: 1, Group: wire.GroupHash("datadriven"), Heartbeat: ddHeartbeat,
			SuspectTimeout: ddSuspect, DatagramSize: ddDatagram, Window: ddWindow, Rand: rand.New(rand.NewPCG(1, id))},
		JoinTimeout: ddJoin,
		Settings:    []Setting{{"heartbeat", ddHeartbeat.String()}, {"suspect_timeout", ddSuspect.String()}},
	}, n.now)
	n.nodes[id] = &ddNode{id: id, m: m, addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(id)}), 7468)}
}

func (n *ddNet) ids() []uint64 { return sortedKeys(n.nodes) }

// live lists the nodes that run: not crashed, not gone.
func (n *ddNet) live() []*ddNode {
	var out []*ddNode
	for _, id := range n.ids() {
		if nd := n.nodes[id]; !nd.crashed && !nd.m.Left() {
			out = append(out, nd)
		}
	}
	return out
}

// advance moves time on by d, a millisecond at a time.
func (n *ddNet) advance(d time.Duration) {
	for end := n.now.Add(d); n.now.Before(end); {
		n.now = n.now.Add(ddStep)
		n.pump()
	}
}

// running lists the nodes that have not crashed: those that left still
// hand out what they produced as they left.
func (n *ddNet) running() []*ddNode {
	var out []*ddNode
	for _, id := range n.ids() {
		if nd := n.nodes[id]; !nd.crashed {
			out = append(out, nd)
		}
	}
	return out
}

// pump runs every node's turn at the current time, in ID order, until no
// datagram moves: tick it if its deadline passed, pack, take its Ready, and
// send its datagrams to the others, which step them at once.
func (n *ddNet) pump() {
	for pass := 0; ; pass++ {
		if pass == ddMaxPasses {
			n.t.Fatalf("t=%v: datagrams still moving after %d rounds", n.since(), pass)
		}
		moved := false
		for _, nd := range n.running() {
			if d := nd.m.NextDeadline(); !d.IsZero() && !d.After(n.now) {
				nd.m.Tick(n.now)
			}
			nd.m.Pack()
			rd := nd.m.Ready()
			n.take(nd, rd.Events)
			bufs := make([][]byte, len(rd.Envelopes))
			for i := range rd.Envelopes {
				b, err := n.enc.Append(nil, &rd.Envelopes[i])
				if err != nil {
					n.t.Fatalf("node %d sent what does not encode: %v", nd.id, err)
				}
				if len(b) > ddDatagram {
					n.t.Fatalf("node %d sent a datagram of %d bytes", nd.id, len(b))
				}
				bufs[i] = b
			}
			for i, b := range bufs {
				moved = true
				n.route(nd, &rd.Envelopes[i], b)
			}
		}
		if !moved {
			return
		}
	}
}

// route delivers one datagram to every node it reaches.
func (n *ddNet) route(from *ddNode, env *wire.Envelope, b []byte) {
	kind := env.Kind.String()
	if kind != "session" {
		n.busy = true
	}
	var lost []uint64
	used := map[*dropRule]bool{}
	for _, nd := range n.live() {
		if nd == from || !n.connected(from.id, nd.id) {
			continue
		}
		if r := n.dropping(from.id, nd.id, kind); r != nil {
			used[r] = true
			lost = append(lost, nd.id)
			continue
		}
		if err := n.dec.Decode(b, n.env); err != nil {
			n.t.Fatalf("node %d sent what does not decode: %v", from.id, err)
		}
		nd.m.Step(n.now, from.addr, n.env)
	}
	for r := range used {
		if r.left > 0 {
			r.left--
		}
	}
	switch {
	case n.trace && kind != "session":
		fmt.Fprintf(n.out, "t=%v %d: %s", n.since(), from.id, n.describe(env))
		if len(lost) > 0 {
			fmt.Fprintf(n.out, " (dropped to %s)", joinIDs(lost))
		}
		n.out.WriteByte('\n')
	case len(lost) > 0:
		fmt.Fprintf(n.out, "t=%v dropped %d->%s: %s\n", n.since(), from.id, joinIDs(lost), n.describe(env))
	}
}

func (n *ddNet) connected(a, b uint64) bool {
	if n.side == nil {
		return true
	}
	sa, oka := n.side[a]
	sb, okb := n.side[b]
	return oka && okb && sa == sb
}

// dropping returns the drop rule that takes a datagram of kind from a to
// b, if any.
func (n *ddNet) dropping(a, b uint64, kind string) *dropRule {
	for _, r := range n.drops {
		if r.from == a && (r.to == 0 || r.to == b) && r.left != 0 &&
			(r.kind == "any" || r.kind == kind || r.kind == "data" && kind == "batch") {
			return r
		}
	}
	return nil
}

// take handles what node nd reported: deliveries and membership events.
func (n *ddNet) take(nd *ddNode, evs []Event) {
	for _, ev := range evs {
		if ev.Kind == Delivered {
			d := ev.Delivery
			d.Service, d.Payload = slices.Clone(d.Service), slices.Clone(d.Payload)
			n.ledger.deliver(nd.id, d)
			n.checkSafe(nd, d)
			nd.dels = append(nd.dels, d)
			continue
		}
		if ev.Kind == ViewInstalled {
			n.ledger.install(nd.id, nd.m.inc, ev.View)
		}
		if s := eventString(ev); s != "" {
			n.events = append(n.events, fmt.Sprintf("t=%v %d: %s", n.since(), nd.id, s))
		}
	}
}

// checkSafe checks a safe message delivered by its record (guarantee 6):
// every member of the view that is still in it holds the message.
func (n *ddNet) checkSafe(nd *ddNode, d Delivery) {
	if d.Order != wire.Safe || d.Final {
		return
	}
	mine := n.ledger.current(nd.id)
	for _, x := range n.ledger.views[mine] {
		o := n.nodes[x.ID]
		if o == nil || o == nd || o.crashed || o.m.Left() || n.ledger.current(o.id) != mine {
			continue
		}
		if got := o.m.Engine().Received(d.Source, d.Inc); got < d.End {
			n.ledger.errorf("safe: %d delivered %d/%d by record in %v, but %d holds %d's stream only to %d",
				nd.id, d.Source, d.Seq, mine, o.id, d.Source, got)
		}
	}
}

func (n *ddNet) stabilize(td *datadriven.TestData) {
	limit := 5 * time.Second
	if td.HasArg("max") {
		var s string
		td.ScanArgs(n.t, "max", &s)
		limit = n.duration(td, s)
	}
	began := n.now
	quiet := time.Duration(0)
	for n.now.Sub(began) < limit {
		n.busy = false
		n.now = n.now.Add(ddStep)
		n.pump()
		if n.busy || n.unsettled() != "" {
			quiet = 0
			continue
		}
		if quiet += ddStep; quiet >= ddQuiet {
			for _, e := range n.ledger.liveness(n.settled()) {
				n.ledger.errorf("%s", e)
			}
			fmt.Fprintf(n.out, "t=%v stable\n", n.since())
			return
		}
	}
	td.Fatalf(n.t, "not stable after %v (t=%v): %s", limit, n.since(), n.unsettled())
}

// sides returns the live nodes grouped by the side of the partition
// they are on, each group in ID order.
func (n *ddNet) sides() [][]uint64 {
	bySide := map[int][]uint64{}
	var order []int
	lone := 1 << 20
	for _, nd := range n.live() {
		s, ok := n.side[nd.id]
		if n.side != nil && !ok {
			s, lone = lone, lone+1
		}
		if _, seen := bySide[s]; !seen {
			order = append(order, s)
		}
		bySide[s] = append(bySide[s], nd.id)
	}
	out := make([][]uint64, 0, len(order))
	for _, s := range order {
		out = append(out, bySide[s])
	}
	return out
}

// unsettled says why the group is not at rest, or returns "".
func (n *ddNet) unsettled() string {
	for _, side := range n.sides() {
		first := n.nodes[side[0]].m
		for _, id := range side {
			m := n.nodes[id].m
			v := m.view
			switch {
			case m.state != member:
				return fmt.Sprintf("%d is not a member", id)
			case m.participant != nil || m.initiator != nil:
				return fmt.Sprintf("%d is flushing", id)
			case v.ID != first.view.ID || !slices.Equal(v.Members, first.view.Members):
				return fmt.Sprintf("%d is in %v, %d in %v", id, v, side[0], first.view)
			case m.orderer.outstanding():
				return fmt.Sprintf("%d has ordered messages outstanding", id)
			case m.participant != nil && len(m.participant.held) > 0 || len(m.future) > 0:
				return fmt.Sprintf("%d holds messages for a cut or a view", id)
			}
			ids := v.IDs()
			slices.Sort(ids)
			if !slices.Equal(ids, side) {
				return fmt.Sprintf("%d is in %v, but the nodes that run on its side are %v", id, v, side)
			}
		}
	}
	return ""
}

// settled returns, for each side, its view and its members.
func (n *ddNet) settled() map[viewKey][]uint64 {
	out := map[viewKey][]uint64{}
	for _, side := range n.sides() {
		out[n.ledger.current(side[0])] = side
	}
	return out
}

func (n *ddNet) multicast(td *datadriven.TestData, words []string) {
	if len(words) < 3 {
		td.Fatalf(n.t, "usage: multicast ID fifo|total|safe PAYLOAD...")
	}
	nd := n.node(td, words[0])
	var order wire.Order
	switch words[1] {
	case "fifo":
		order = wire.FIFO
	case "total":
		order = wire.Total
	case "safe":
		order = wire.Safe
	default:
		td.Fatalf(n.t, "bad order %q", words[1])
	}
	for _, w := range words[2:] {
		p := strings.Trim(w, `"`)
		v := nd.m.View().ID
		seq, err := nd.m.Multicast(nil, []byte(p), order, 0)
		if err != nil {
			fmt.Fprintf(n.out, "%d: %q not sent: %v\n", nd.id, p, err)
			continue
		}
		n.ledger.send(nd.id, nd.m.inc, seq, v, order, p)
		fmt.Fprintf(n.out, "%d: %q sent as %d/%d in %v\n", nd.id, p, nd.id, seq, v)
	}
	n.pump()
}

func (n *ddNet) drop(td *datadriven.TestData, words []string) {
	if len(words) != 1 {
		td.Fatalf(n.t, "usage: drop FROM->TO [kind=K] [n=N|all]")
	}
	a, b, ok := strings.Cut(words[0], "->")
	if !ok {
		td.Fatalf(n.t, "bad link %q: want FROM->TO", words[0])
	}
	r := &dropRule{from: n.id(td, a), kind: "data", left: 1}
	if b != "*" {
		r.to = n.id(td, b)
	}
	if td.HasArg("kind") {
		td.ScanArgs(n.t, "kind", &r.kind)
		if r.kind != "any" && !slices.Contains(dropKinds, r.kind) {
			td.Fatalf(n.t, "bad kind %q", r.kind)
		}
	}
	if td.HasArg("n") {
		var s string
		td.ScanArgs(n.t, "n", &s)
		if s == "all" {
			r.left = -1
		} else if c, err := strconv.Atoi(s); err == nil && c > 0 {
			r.left = c
		} else {
			td.Fatalf(n.t, "bad count %q", s)
		}
	}
	n.drops = append(n.drops, r)
}

func (n *ddNet) partition(td *datadriven.TestData, words []string) {
	n.side = map[uint64]int{}
	s := 0
	for _, w := range words {
		if w == "|" {
			s++
			continue
		}
		n.side[n.id(td, w)] = s
	}
}

func (n *ddNet) printViews() {
	for _, id := range n.ids() {
		nd := n.nodes[id]
		v := nd.m.View()
		switch {
		case nd.crashed:
			fmt.Fprintf(n.out, "%d: crashed in %v\n", id, v)
		case nd.m.Left():
			fmt.Fprintf(n.out, "%d: left (was in %v)\n", id, v)
		case nd.m.state == joining:
			fmt.Fprintf(n.out, "%d: joining\n", id)
		case nd.m.state == leaving:
			fmt.Fprintf(n.out, "%d: leaving %v\n", id, v)
		default:
			fmt.Fprintf(n.out, "%d: %v\n", id, v)
		}
	}
}

func (n *ddNet) printDeliveries() {
	for _, id := range n.ids() {
		nd := n.nodes[id]
		for i := 0; i < len(nd.dels); {
			v := nd.dels[i].View
			var parts []string
			for ; i < len(nd.dels) && nd.dels[i].View == v; i++ {
				parts = append(parts, deliveryString(nd.dels[i]))
			}
			fmt.Fprintf(n.out, "%d in %v: %s\n", id, v, strings.Join(parts, ", "))
		}
		nd.dels = nil
	}
	if n.out.Len() == 0 {
		n.out.WriteString("none\n")
	}
}

func deliveryString(d Delivery) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d %s", d.Source, d.Seq, d.Order)
	if d.GSeq != 0 {
		fmt.Fprintf(&b, " #%d", d.GSeq)
	}
	if d.Final {
		b.WriteString(" final")
	}
	fmt.Fprintf(&b, " %q", d.Payload)
	return b.String()
}

// eventString formats a membership event; "" for those not shown.
func eventString(ev Event) string {
	switch ev.Kind {
	case ViewInstalled:
		s := "view.installed " + ev.View.String()
		if ev.Prior != (wire.ViewID{}) {
			s += " prior " + ev.Prior.String()
		}
		for _, l := range []struct {
			name string
			ids  []uint64
		}{{"joined", ev.Joined}, {"left", ev.Left}, {"crashed", ev.Crashed}} {
			if len(l.ids) > 0 {
				s += " " + l.name + " [" + joinIDs(l.ids) + "]"
			}
		}
		if ev.Flush > 0 {
			s += fmt.Sprintf(" flush %v", ev.Flush)
		}
		return s
	case FlushStarted:
		return fmt.Sprintf("view.flush.started %d/%d in %v proposing [%s]", ev.Epoch, ev.Attempt, ev.View.ID, joinIDs(ev.Proposed))
	case FlushUnchanged:
		return fmt.Sprintf("view.flush.unchanged %d/%d in %v unanswered [%s]", ev.Epoch, ev.Attempt, ev.View.ID, joinIDs(ev.Proposed))
	case Suspected:
		return fmt.Sprintf("member.suspected %d in %v silent %v", ev.Member, ev.View.ID, ev.Silent)
	case Excluded:
		return fmt.Sprintf("member.excluded from %v by %d", ev.View.ID, ev.Member)
	case LeaveDone:
		return fmt.Sprintf("member.left %v", ev.View.ID)
	case Refused:
		return fmt.Sprintf("member.refused %d setting %s ours %q theirs %q", ev.Member, ev.Setting, ev.Ours, ev.Theirs)
	case Engine:
		if e := ev.Multicast; e.Kind == multicast.StreamSkipped {
			return fmt.Sprintf("stream.skipped %d from %d (%d) in view %v", e.Peer, e.From, e.Skipped, ev.InView)
		}
	}
	return ""
}

// dropKinds are the kinds a drop rule may name, besides any.
var dropKinds = []string{"data", "batch", "nack", "repair", "session", "join", "leave", "flush", "flush-ok", "view", "refuse", "flush-end"}

// describe formats a datagram for the trace.
func (n *ddNet) describe(env *wire.Envelope) string {
	data := func(src uint64, d *wire.Data) string {
		if d.Order != wire.Record {
			return fmt.Sprintf("%d/%d %s", src, d.Seq, d.Order)
		}
		s := fmt.Sprintf("%d/%d record", src, d.Seq)
		if err := n.dec.DecodeRecord(d.Payload, &n.rec); err == nil {
			g := n.rec.First
			for _, r := range n.rec.Runs {
				for i := range r.Count {
					s += fmt.Sprintf(" #%d=%d/%d", g, r.Source, r.Seq+i)
					g++
				}
			}
		}
		return s
	}
	switch env.Kind {
	case wire.KindData:
		return "data " + data(env.From, &env.Data)
	case wire.KindBatch:
		parts := make([]string, len(env.Batch))
		for i := range env.Batch {
			parts[i] = data(env.From, &env.Batch[i])
		}
		return "batch " + strings.Join(parts, ", ")
	case wire.KindNack:
		var rs []string
		for _, r := range env.Nack.Ranges {
			rs = append(rs, fmt.Sprintf("%d-%d", r.First, r.Last))
		}
		return fmt.Sprintf("nack %d [%s]", env.Nack.Source, strings.Join(rs, " "))
	case wire.KindRepair:
		r := &env.Repair
		return fmt.Sprintf("repair %s of %v", data(r.Source, &r.Data), r.View)
	case wire.KindSession:
		return "session"
	case wire.KindJoin:
		return "join"
	case wire.KindLeave:
		why := "graceful"
		if env.Leave.Reason != wire.LeaveGraceful {
			why = "suspect"
		}
		return fmt.Sprintf("leave %d %s", env.Leave.Member, why)
	case wire.KindFlush:
		f := &env.Flush
		if f.Phase == wire.FlushState {
			return fmt.Sprintf("flush %d/%d propose [%s]", f.Epoch, f.Attempt, joinMembers(f.Members))
		}
		return fmt.Sprintf("flush %d/%d cut %s", f.Epoch, f.Attempt, cutsString(f.Cuts))
	case wire.KindFlushOK:
		o := &env.FlushOK
		if o.Phase == wire.FlushState {
			var has []string
			for _, h := range o.Has {
				has = append(has, fmt.Sprintf("%d:%d", h.ID, h.Seq))
			}
			return fmt.Sprintf("flush-ok %d/%d from %v holds {%s} sent %d", o.Epoch, o.Attempt, o.Prior, strings.Join(has, " "), o.Sent)
		}
		return fmt.Sprintf("flush-ok %d/%d holds the cut", o.Epoch, o.Attempt)
	case wire.KindView:
		c := &env.Commit
		ids := make([]uint64, len(c.Members))
		for i, x := range c.Members {
			ids[i] = x.ID
		}
		s := fmt.Sprintf("view %d/%d [%s]", c.Epoch, c.Attempt, joinIDs(ids))
		if len(c.Left) > 0 {
			s += " left [" + joinIDs(c.Left) + "]"
		}
		return s
	case wire.KindRefuse:
		return fmt.Sprintf("refuse %d %s", env.Refuse.Target, env.Refuse.Setting)
	case wire.KindFlushEnd:
		return fmt.Sprintf("flush-end %d/%d", env.FlushEnd.Epoch, env.FlushEnd.Attempt)
	case wire.KindProof:
		q := &env.Proof
		switch {
		case q.Flags&wire.ProofStarved != 0:
			return fmt.Sprintf("proof for %d, starved", q.Target)
		case q.Flags&wire.ProofAnswer != 0:
			return fmt.Sprintf("proof for %d", q.Target)
		}
		return fmt.Sprintf("ask %d for proof", q.Target)
	}
	return env.Kind.String()
}

func cutsString(cs []wire.ViewCut) string {
	var parts []string
	for _, c := range cs {
		var s []string
		for _, x := range c.Cuts {
			s = append(s, fmt.Sprintf("%d:%d", x.ID, x.Seq))
		}
		parts = append(parts, fmt.Sprintf("%v{%s}", c.View, strings.Join(s, " ")))
	}
	return strings.Join(parts, " ")
}

func joinMembers(ms []wire.Member) string {
	ids := make([]uint64, len(ms))
	for i, x := range ms {
		ids[i] = x.ID
	}
	return joinIDs(ids)
}

func joinIDs(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, " ")
}
