package node

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// FuzzProbe runs a group of three Cores in the simulator that probe each
// other (Core.Probe) and forget their probes (ProbeResult), while member
// 3, besides answering as its Core does, sends probe messages of the
// fuzzer's to one member or to all: questions and answers with chosen
// probe IDs and summaries (another member's ID, its own, none), unknown
// operations, fields of the wrong type, payloads over maxProbePayload, raw
// bytes. The fuzzer's bytes are the script: who probes or forgets when,
// what member 3 sends to whom, when time passes.
//
// After every step of the simulator, at every node: at most maxProbes
// probes wait; each probe's rows are its view's members, answered at most
// once (a second answer changes nothing), by the member itself, and an
// honest member's row (1 and 2) carries its real ID, incarnation and
// address; a probe is reported finished once, when every row is answered.
// Once the messages have all arrived, each probe message a node delivered
// is answered (a question), recorded (an answer) or dropped and counted
// (probe_bad), exactly one of them. At the end every node's probe
// completes.
//
// `go test ./node` runs the seeds (testdata/fuzz/FuzzProbe and
// probeSeeds); `go test -run '^$' -fuzz '^FuzzProbe$' ./node` searches
// further.
func FuzzProbe(f *testing.F) { testutil.FuzzScripts(f, probeSeeds(), runProbeScript) }

// probeHostile is the member of FuzzProbe whose probe messages are the
// fuzzer's.
const probeHostile = 3

// probeRun is one run of FuzzProbe's script.
type probeRun struct {
	t     *testing.T
	s     *testutil.Script
	w     *sim.World
	addrs map[uint64]string
	// what was sent, for the count at the end: questions (each to the two
	// others), and member 3's messages by how many members deliver them
	asks      int
	forged    int
	forgedTo  int                  // deliveries of them
	rows      map[rowKey]ProbeInfo // the answers recorded, as first seen
	done      map[rowKey]bool      // probes reported finished (member 0)
	forgotten map[rowKey]bool      // probes forgotten (member 0)
	trace     []string
}

// rowKey is a row of a node's probe: (node, probe, member).
type rowKey struct{ node, probe, member uint64 }

func (r *probeRun) logf(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf("%v ", r.w.Elapsed())+fmt.Sprintf(format, args...))
	if len(r.trace) > 60 {
		r.trace = r.trace[1:]
	}
}

func (r *probeRun) fail(err error) {
	r.t.Helper()
	r.t.Fatalf("%v\nthe last steps:\n%s", err, strings.Join(r.trace, "\n"))
}

func runProbeScript(t *testing.T, data []byte) {
	s := testutil.NewScript(data)
	r := &probeRun{t: t, s: s, w: sim.New(sim.Options{Seed: int64(s.Byte()), Jitter: 50 * time.Microsecond}), addrs: map[uint64]string{},
		rows: map[rowKey]ProbeInfo{}, done: map[rowKey]bool{}, forgotten: map[rowKey]bool{}}
	all := ids(3)
	for _, id := range all {
		r.w.Add(id, func(id, inc uint64, seed int64, addr netip.AddrPort) sim.Machine {
			r.addrs[id] = addr.String()
			return newSimCore(NewCore(CoreOptions{Group: "huddle", Seed: uint64(seed), Addr: addr.String(), Membership: membership.Options{JoinTimeout: testJoin,
				Engine: multicast.Options{Self: id, Inc: inc, DatagramSize: 1400, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect}}}, r.w.Now()))
		})
	}
	if err := r.w.RunUntil(func() bool { return agreed(r.w, all) == nil }, 3*time.Second); err != nil {
		t.Fatalf("the group did not form: %v", err)
	}
	r.w.Check("probes", r.check)
	for step := 0; step < 64 && !s.Done(); step++ {
		r.step()
		if err := r.w.Err(); err != nil {
			r.fail(err)
		}
	}
	if err := r.w.RunFor(500 * time.Millisecond); err != nil {
		r.fail(err)
	}
	r.counted()
	r.complete()
}

// step does one thing of the script.
func (r *probeRun) step() {
	s := r.s
	switch op := s.Byte(); op % 8 {
	case 0, 1: // time passes
		r.w.RunFor(time.Duration(1+s.Byte()%20) * time.Millisecond)
	case 2:
		r.probe(1 + uint64(s.Byte()%3))
	case 3: // a node stops waiting for one of its probes: its answers come late
		id := 1 + uint64(s.Byte()%3)
		c := core(r.w, id)
		if waits := slices.Sorted(maps.Keys(c.probe.waits)); len(waits) > 0 {
			p := waits[int(s.Byte())%len(waits)]
			r.check(r.w) // the rows answered so far
			c.ProbeResult(p, true)
			r.forgotten[rowKey{id, p, 0}] = true
			r.logf("%d forgets probe %d", id, p)
		}
	case 4, 5:
		r.send(r.forge())
	case 6:
		r.send(s.Bytes(255))
	case 7: // too long: a well-formed answer, or any bytes
		long := make([]byte, maxProbePayload+1+int(s.Byte()))
		if s.Byte()%2 == 0 {
			long, _ = msgpack.Marshal(probeMsg{Op: probeAnswer, ID: r.probeID(), Info: &ProbeInfo{ID: probeHostile, Addr: strings.Repeat("x", len(long))}})
		}
		r.send(long)
	}
}

// probe has node id ask the group.
func (r *probeRun) probe(id uint64) {
	r.w.Do(id, func(m sim.Machine) {
		p, finished, err := coreOf(m).Probe(r.w.Now())
		r.logf("%d probes: %d %v %v", id, p, finished, err)
		if err == nil && !finished {
			r.asks++
		}
	})
}

// send has member 3 multicast payload on the probe service, to every
// member, to one, to itself, or to a node outside the view.
func (r *probeRun) send(payload []byte) {
	dest := []uint64{0, 1, 2, probeHostile, 9}[r.s.Byte()%5]
	r.w.Do(probeHostile, func(m sim.Machine) {
		if _, err := coreOf(m).Multicast(probeService, payload, wire.FIFO, dest); err != nil {
			r.logf("3 cannot send: %v", err)
			return
		}
		r.forged++
		switch dest {
		case 0:
			r.forgedTo += 2
		case 1, 2:
			r.forgedTo++
		}
		var msg probeMsg
		err := msgpack.Unmarshal(payload, &msg)
		r.logf("3 sends %d bytes to %d: %+v %v", len(payload), dest, msg, err)
	})
}

// probeID picks a probe ID: one a node waits for, just past the last one
// it asked, or any.
func (r *probeRun) probeID() uint64 {
	c := core(r.w, 1+uint64(r.s.Byte()%3))
	switch k := r.s.Byte(); k % 4 {
	case 0:
		return c.probe.seq + uint64(k>>2%3)
	case 1, 2:
		if waits := slices.Sorted(maps.Keys(c.probe.waits)); len(waits) > 0 {
			return waits[int(k>>2)%len(waits)]
		}
	}
	return r.s.U64(nil)
}

// forge builds a probe message: a question or an answer (or another
// operation) with a chosen probe ID and summary, or fields of the wrong
// type.
func (r *probeRun) forge() []byte {
	s := r.s
	if s.Byte()%8 == 0 {
		b, _ := msgpack.Marshal(map[string]any{"o": string(s.Bytes(4)), "i": -int(s.Byte()), "n": []int{1, 2}})
		return b
	}
	m := probeMsg{Op: s.Byte() % 4, ID: r.probeID()}
	if k := s.Byte(); k%4 != 0 {
		m.Info = &ProbeInfo{ID: []uint64{0, probeHostile, 1, 2}[k%4], Incarnation: s.U64(nil), Addr: string(s.Bytes(32)),
			View: string(s.Bytes(16)), State: StateMember, Role: "leader", UptimeMS: int64(s.U64(nil))}
	}
	b, _ := msgpack.Marshal(m)
	return b
}

// check is the invariant of every node's probes, after every step.
func (r *probeRun) check(w *sim.World) error {
	for _, id := range ids(3) {
		c := core(w, id)
		p := &c.probe
		if len(p.waits) > maxProbes {
			return fmt.Errorf("node %d waits for %d probes, over %d", id, len(p.waits), maxProbes)
		}
		for pid, wt := range p.waits {
			if err := r.checkProbe(c, pid, wt); err != nil {
				return err
			}
		}
		for _, pid := range c.takeProbesDone() {
			k := rowKey{id, pid, 0}
			wt := p.waits[pid]
			switch {
			case r.done[k]:
				return fmt.Errorf("node %d: probe %d reported finished twice", id, pid)
			case wt == nil || wt.missed != 0:
				return fmt.Errorf("node %d: probe %d reported finished with rows not answered", id, pid)
			}
			r.done[k] = true
		}
	}
	return nil
}

// checkProbe checks node c's probe pid: its rows, who answered, what an
// honest member said, and that an answer, once recorded, stays.
func (r *probeRun) checkProbe(c *Core, pid uint64, wt *probeWait) error {
	missed := 0
	v := c.View()
	if len(wt.res.Members) != len(v.Members) {
		return fmt.Errorf("node %d: probe %d has %d rows in a view of %d", c.self, pid, len(wt.res.Members), len(v.Members))
	}
	for i, row := range wt.res.Members {
		k := rowKey{c.self, pid, row.ID}
		switch {
		case row.ID != v.Members[i].ID || wt.index[row.ID] != i:
			return fmt.Errorf("node %d: probe %d's row %d is %d, not the view's %d", c.self, pid, i, row.ID, v.Members[i].ID)
		case !row.Answered:
			missed++
			if _, ok := r.rows[k]; ok {
				return fmt.Errorf("node %d: probe %d's row of %d was answered, and is no longer", c.self, pid, row.ID)
			}
			continue
		case row.Info == nil || row.Info.ID != row.ID:
			return fmt.Errorf("node %d: probe %d's row of %d answered with %+v", c.self, pid, row.ID, row.Info)
		case row.ID != probeHostile && (row.Info.Incarnation != v.Members[i].Inc || row.Info.Addr != r.addrs[row.ID]):
			return fmt.Errorf("node %d: probe %d's row of honest %d says %+v", c.self, pid, row.ID, *row.Info)
		}
		first, ok := r.rows[k]
		if !ok {
			r.rows[k] = *row.Info
		} else if first != *row.Info {
			return fmt.Errorf("node %d: probe %d's row of %d was %+v, and is now %+v: answered twice", c.self, pid, row.ID, first, *row.Info)
		}
	}
	if missed != wt.missed {
		return fmt.Errorf("node %d: probe %d misses %d rows, counted %d", c.self, pid, missed, wt.missed)
	}
	return nil
}

// counted checks, once every message has arrived, that each probe message
// delivered was answered, recorded or counted bad, exactly one: the
// questions went to two members each, the answers each to its asker,
// member 3's messages where they were sent.
func (r *probeRun) counted() {
	delivered, took := 2*r.asks+r.forgedTo, 0
	for _, id := range ids(3) {
		c := core(r.w, id)
		p := &c.probe
		if len(p.out.msgs) > 0 || p.out.dropped > 0 {
			r.logf("node %d: %d probe messages waiting, %d dropped: no count", id, len(p.out.msgs), p.out.dropped)
			return
		}
		delivered += int(p.answered)
		took += int(p.answered + p.bad)
	}
	for k := range r.rows {
		if k.member != k.node {
			took++
		}
	}
	if took != delivered {
		r.fail(fmt.Errorf("%d probe messages delivered (%d questions to two members each, %d of member 3's, and the answers), but %d answered, recorded or counted bad",
			delivered, r.asks, r.forgedTo, took))
	}
}

// complete has every node forget its probes and probe once more: each
// probe completes, once, with every member's row.
func (r *probeRun) complete() {
	for _, id := range ids(3) {
		c := core(r.w, id)
		for p := range c.probe.waits {
			r.check(r.w)
			c.ProbeResult(p, true)
		}
		r.probe(id)
	}
	if err := r.w.RunFor(200 * time.Millisecond); err != nil {
		r.fail(err)
	}
	for _, id := range ids(3) {
		c := core(r.w, id)
		p := c.probe.seq
		if res := c.ProbeResult(p, false); len(res.Silent()) > 0 || !r.done[rowKey{id, p, 0}] {
			r.fail(fmt.Errorf("node %d: probe %d did not complete: %+v", id, p, res))
		}
	}
}

// probeSeeds are the seed corpus's scripts, besides testdata/fuzz:
// probes answered, forgotten and answered late; member 3's answer to a
// probe before its own (recorded), then its own (a second: bad), an
// answer in another member's name, a question; fields of the wrong type,
// an unknown operation, raw bytes, too long.
func probeSeeds() [][]byte {
	return [][]byte{
		{1, 2, 0, 0, 9, 3, 0, 0, 2, 1, 2, 0, 0, 9},
		{2, 2, 0, 4, 1, 2, 0, 0, 1, 1, 4, 'f', 'a', 'k', 'e', 0, 0, 1, 4, 1, 2, 0, 0, 2, 1, 0, 0, 0, 1, 4, 1, 1, 0, 3, 2, 7, 0, 0, 0, 19},
		{3, 4, 0, 2, 'a', 'b', 5, 0, 4, 1, 3, 0, 3, 2, 9, 0, 2, 6, 3, 0xc1, 1, 2, 0, 7, 10, 0, 0, 0, 0, 7, 5, 1, 1, 2, 1, 0, 19},
		{4, 2, 0, 3, 0, 0, 0, 19, 2, 2, 0, 19},
	}
}
