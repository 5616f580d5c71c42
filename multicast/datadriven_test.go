package multicast

// Data-driven scripts of SRM repair (testdata/*.txt), on the shared
// driver (internal/testutil/script): the commands every script has
// (add-nodes, view, crash, tick, stabilize, drop, partition, heal, hide,
// show; see script.Driver.Do), and these:
//
//	options [window=N]     the send window of the engines made from now on
//	                       (default 16 messages)
//	multicast 1 "m1" ["m2" ...]
//	                       node 1 multicasts each payload, FIFO, in one
//	                       turn (packed into one datagram when they fit)
//	streams                each node's own stream (sent, stable: held by
//	                       every live peer, unstable: the window in use)
//	                       and what it delivered of each source
//	stats                  each node's NACKs and repairs: sent, and
//	                       suppressed because another member went first
//
// The engines run alone, without a view (every live peer is a receiver),
// with a heartbeat of 20ms, a suspect timeout of 200ms and the default
// SRM timer constants; every datagram takes 1ms (script.LinkDelay) and goes through the real
// codec. Session messages are not printed (show session prints them);
// kinds for drop and hide: data (data and batches), nack, repair,
// session. Deliveries print as events ("delivered 1/2 "m2""), with the
// engines' events (peer.lost, stream.skipped...; not peer.seen, which
// every script begins with).
//
// After every command the check holds: each node delivered each source's
// messages exactly once and in order (FIFO, no duplicates, no gaps but
// those a stream.skipped announced). At the end of a script, every node
// delivered every message of every source that runs. stabilize waits
// until no gap is open, no repair pending, no datagram but session
// messages in flight, every message delivered everywhere and every send
// window drained (stable).

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/huddle-lan/huddle/internal/testutil/script"
	"github.com/huddle-lan/huddle/internal/wire"
)

// srmNode is an engine on the script's network: datagrams are encoded and
// decoded with the real codec.
type srmNode struct {
	e   *Engine
	enc *wire.Encoder
	dec *wire.Decoder
	env wire.Envelope
}

// srmEvent is an engine's event, or with Delivered a delivery.
type srmEvent struct {
	Event
	Delivered *Delivery
}

func addrOf(id uint64) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(id)}), 7468)
}

func (n *srmNode) Receive(now time.Time, from uint64, payload []byte) {
	if err := n.dec.Decode(payload, &n.env); err != nil {
		panic(fmt.Sprintf("a datagram of %d does not decode: %v", from, err))
	}
	n.e.Step(now, addrOf(from), &n.env)
}

func (n *srmNode) Tick(now time.Time)      { n.e.Tick(now) }
func (n *srmNode) NextDeadline() time.Time { return n.e.NextDeadline() }

func (n *srmNode) Take() ([]script.Msg, []srmEvent) {
	n.e.Pack()
	rd := n.e.Ready()
	msgs := make([]script.Msg, len(rd.Envelopes))
	for i := range rd.Envelopes {
		b, err := n.enc.Append(nil, &rd.Envelopes[i])
		if err != nil {
			panic(fmt.Sprintf("node %d sent what does not encode: %v", n.e.opt.Self, err))
		}
		msgs[i] = script.Msg{Payload: b}
	}
	var evs []srmEvent
	for _, e := range rd.Events {
		evs = append(evs, srmEvent{Event: e})
	}
	for _, d := range rd.Deliveries {
		d.Service, d.Payload = slices.Clone(d.Service), slices.Clone(d.Payload)
		evs = append(evs, srmEvent{Delivered: &d})
	}
	return msgs, evs
}

type srmScript = script.Driver[*srmNode, srmEvent]

func TestScripts(t *testing.T) {
	script.Run(t, "testdata", func(d *srmScript) script.Adapter[*srmNode, srmEvent] {
		return &srmAdapter{window: 16, dec: wire.NewDecoder(), sent: map[uint64]uint64{}, got: map[[2]uint64]uint64{}}
	}, "session")
}

type srmAdapter struct {
	window int
	dec    *wire.Decoder
	env    wire.Envelope
	sent   map[uint64]uint64    // by source: the last seq it multicast
	got    map[[2]uint64]uint64 // by receiver and source: the last seq delivered (or skipped)
	errs   []string             // broken at a delivery, reported by Check
}

func (a *srmAdapter) New(d *srmScript, id uint64) *srmNode {
	e := New(Options{Self: id, Inc: 1, Group: wire.GroupHash("script"), Heartbeat: 20 * time.Millisecond,
		SuspectTimeout: 200 * time.Millisecond, Window: a.window, Rand: rand.New(rand.NewPCG(1, id))}, d.Net.Now)
	return &srmNode{e: e, enc: wire.NewEncoder(), dec: wire.NewDecoder()}
}

func (a *srmAdapter) Message(_ uint64, m script.Msg) (string, string, bool) {
	if err := a.dec.Decode(m.Payload, &a.env); err != nil {
		return "", fmt.Sprintf("%x: %v", m.Payload, err), true
	}
	env := &a.env
	data := func(src uint64, d *wire.Data) string { return fmt.Sprintf("%d/%d %q", src, d.Seq, d.Payload) }
	switch env.Kind {
	case wire.KindData:
		return "data", "data " + data(env.From, &env.Data), true
	case wire.KindBatch:
		parts := make([]string, len(env.Batch))
		for i := range env.Batch {
			parts[i] = data(env.From, &env.Batch[i])
		}
		return "data", "batch " + strings.Join(parts, ", "), true
	case wire.KindNack:
		var rs []string
		for _, r := range env.Nack.Ranges {
			rs = append(rs, fmt.Sprintf("%d-%d", r.First, r.Last))
		}
		return "nack", fmt.Sprintf("nack %d [%s] attempt %d", env.Nack.Source, strings.Join(rs, " "), env.Nack.Attempt), true
	case wire.KindRepair:
		return "repair", "repair " + data(env.Repair.Source, &env.Repair.Data), true
	case wire.KindSession:
		s := &env.Session
		heard := make([]string, len(s.Peers))
		for i, p := range s.Peers {
			heard[i] = fmt.Sprintf("%d:%d", p.ID, p.Seq)
		}
		return "session", fmt.Sprintf("session sent %d low %d heard {%s}", s.Seq, s.Low, strings.Join(heard, " ")), true
	}
	return env.Kind.String(), env.Kind.String(), true
}

func (a *srmAdapter) Event(id uint64, e srmEvent) string {
	if d := e.Delivered; d != nil {
		a.deliver(id, d.Source, d.Seq, d.End)
		return fmt.Sprintf("delivered %d/%d %q", d.Source, d.Seq, d.Payload)
	}
	switch e.Kind {
	case PeerSeen:
		return "" // every script starts with them
	case PeerLost:
		return fmt.Sprintf("peer.lost %d silent %v", e.Peer, e.Silent)
	case StreamSkipped:
		k := [2]uint64{id, e.Peer}
		a.got[k] = max(a.got[k], e.From+e.Skipped-1)
		return fmt.Sprintf("stream.skipped %d from %d (%d)", e.Peer, e.From, e.Skipped)
	case PeerLagging:
		return fmt.Sprintf("peer.lagging %d behind %d", e.Peer, e.Behind)
	}
	return fmt.Sprintf("event %d peer %d", e.Kind, e.Peer)
}

// deliver checks a delivery: the next of its source's messages.
func (a *srmAdapter) deliver(id, src, seq, end uint64) {
	k := [2]uint64{id, src}
	if seq != a.got[k]+1 {
		a.errs = append(a.errs, fmt.Sprintf("node %d delivered %d/%d after %d/%d: not FIFO exactly once", id, src, seq, src, a.got[k]))
	}
	a.got[k] = end
}

func (a *srmAdapter) Command(d *srmScript, td *datadriven.TestData) bool {
	switch td.Cmd {
	case "options":
		td.MaybeScanArgs(d.T, "window", &a.window)
	case "multicast":
		a.multicast(d, td)
	case "streams":
		a.streams(d)
	case "stats":
		for _, id := range d.Net.IDs() {
			s := d.Net.Nodes[id].M.e.Stats()
			fmt.Fprintf(&d.Out, "%d: nacks %d sent %d suppressed, repairs %d sent %d suppressed, %d duplicates\n",
				id, s.NacksSent, s.NacksSuppressed, s.RepairsSent, s.RepairsSuppressed, s.Duplicates)
		}
	default:
		return false
	}
	return true
}

func (a *srmAdapter) multicast(d *srmScript, td *datadriven.TestData) {
	words := script.Words(td)
	if len(words) < 2 {
		td.Fatalf(d.T, "usage: multicast ID PAYLOAD...")
	}
	id := d.ID(td, words[0])
	d.Node(td, id)
	d.Net.Call(id, func(n *srmNode) {
		for _, p := range words[1:] {
			seq, err := n.e.Multicast(nil, []byte(p), wire.FIFO, 0)
			if err != nil {
				d.Printf("%d: %q not sent: %v", id, p, err)
				continue
			}
			a.sent[id] = seq
			d.Printf("%d: %q sent as %d/%d", id, p, id, seq)
		}
	})
}

func (a *srmAdapter) streams(d *srmScript) {
	for _, id := range d.Net.IDs() {
		e := d.Net.Nodes[id].M.e
		fmt.Fprintf(&d.Out, "%d: sent %d, stable %d, unstable %d of %d", id, e.own.received(), e.own.stable, e.Unstable(), e.opt.Window)
		for _, src := range e.streamIDs() {
			st := e.streams[src]
			fmt.Fprintf(&d.Out, "; from %d: delivered %d, stable %d", src, st.received(), st.stable)
		}
		d.Out.WriteByte('\n')
	}
}

func (a *srmAdapter) Check(*srmScript) []string {
	errs := a.errs
	a.errs = nil
	return errs
}

// Final: every node delivered every message of every source that runs.
func (a *srmAdapter) Final(d *srmScript) []string {
	var errs []string
	for _, id := range d.Net.IDs() {
		for src, last := range a.sent {
			if got := a.got[[2]uint64{id, src}]; src != id && d.Net.Nodes[src] != nil && got != last {
				errs = append(errs, fmt.Sprintf("node %d delivered %d's messages up to %d of %d", id, src, got, last))
			}
		}
	}
	return errs
}

// Resting says why the group is not at rest yet, or "".
func (a *srmAdapter) Resting(d *srmScript) string {
	for _, m := range d.Net.Flight.Sorted() {
		if kind, text, _ := a.Message(m.From, script.Msg{Payload: m.Payload}); kind != "session" {
			return fmt.Sprintf("%d→%d %s in flight", m.From, m.To, text)
		}
	}
	if errs := a.Final(d); len(errs) > 0 {
		return errs[0]
	}
	for _, id := range d.Net.IDs() {
		e := d.Net.Nodes[id].M.e
		if e.Unstable() > 0 {
			return fmt.Sprintf("%d: %d messages not stable", id, e.Unstable())
		}
		for _, st := range append([]*stream{e.own}, e.sortedStreamList()...) {
			if len(st.gaps) > 0 {
				return fmt.Sprintf("%d: gaps open in %d's stream", id, st.src)
			}
			for s, r := range st.repairs {
				if r.pending {
					return fmt.Sprintf("%d: repair of %d/%d pending", id, st.src, s)
				}
			}
		}
	}
	return ""
}

// sortedStreamList returns the streams of the other sources by source.
func (e *Engine) sortedStreamList() []*stream {
	var out []*stream
	for _, src := range e.streamIDs() {
		out = append(out, e.streams[src])
	}
	return out
}
