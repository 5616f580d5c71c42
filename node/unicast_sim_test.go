package node

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// simUnicast is a Core with the loop's unicast part (node/unicast.go) as
// the simulator drives it: every datagram of a turn goes to the
// destinations the unicast part keeps, and its probes to the nodes
// outside them (sim.Unicaster); nothing is multicast.
type simUnicast struct {
	*Core
	u    *unicast
	w    *sim.World
	dsts []netip.AddrPort
	out  []sim.Addressed
}

var _ sim.Unicaster = (*simUnicast)(nil)

// SetDestinations implements UnicastTransport.
func (s *simUnicast) SetDestinations(d []netip.AddrPort) { s.dsts = slices.Clone(d) }

// WriteTo implements UnicastTransport: the probes.
func (s *simUnicast) WriteTo(datagrams [][]byte, dests []netip.AddrPort) error {
	for _, d := range datagrams {
		s.out = append(s.out, sim.Addressed{Data: d, To: slices.Clone(dests)})
	}
	return nil
}

// WriteToNext implements UnicastTransport: the simulator's nodes have
// one address each, whatever the port.
func (s *simUnicast) WriteToNext(datagrams [][]byte, dests []netip.AddrPort) error {
	return s.WriteTo(datagrams, dests)
}

// TakeOutbox implements sim.Machine: the Core's Ready goes through the
// unicast part, as in the loop's afterTurn.
func (s *simUnicast) TakeOutbox() [][]byte {
	rd := s.Core.Ready()
	s.keep(rd.Events)
	s.u.turn(s.Core, &rd, s.w.Now(), func(string, string) {})
	group := func(run [][]byte) {
		for _, d := range run {
			s.out = append(s.out, sim.Addressed{Data: d, To: s.dsts})
		}
	}
	rest, _ := s.u.direct(rd.Repair, rd.RepairTo) // the simulator's sends do not fail
	group(rest)
	s.u.sendData(rd.Data, rd.DataTo, group)
	return nil
}

// TakeUnicast implements sim.Unicaster.
func (s *simUnicast) TakeUnicast() []sim.Addressed {
	out := s.out
	s.out = s.out[:0]
	return out
}

// NextDeadline is the Core's, or the next probe round's when earlier.
func (s *simUnicast) NextDeadline() time.Time {
	d := s.Core.NextDeadline()
	if p := s.u.probeAt; !p.IsZero() && (d.IsZero() || p.Before(d)) {
		return p
	}
	return d
}

// addUnicast adds nodes on the unicast transport, each listing every
// node of all (its own address included, which it skips).
func addUnicast(w *sim.World, all []uint64, ids ...uint64) {
	cfg := config.Local()
	cfg.Heartbeat = config.Duration(testHeartbeat)
	for _, id := range all {
		cfg.Peers = append(cfg.Peers, netmodel.Addr(id).String())
	}
	for _, id := range ids {
		w.Add(id, func(id, inc uint64, seed int64, addr netip.AddrPort) sim.Machine {
			o := CoreOptions{Group: "huddle", Seed: uint64(seed), Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: id, Inc: inc, DatagramSize: 1400, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect, Window: 256,
				Directed: true, FanOutBytes: multicast.WindowBytes(4 << 20)}}}
			s := &simUnicast{Core: NewCore(o, w.Now()), w: w}
			s.u = newUnicast(s, addr, cfg)
			return s
		})
	}
}

// TestUnicastUnderFaults runs the Core with the unicast transport's loop
// part in the simulator, where a datagram reaches only the addresses it
// is sent to, at 5 % loss: the group forms from the peer list alone,
// splits at a partition and merges after the heal, takes a crashed node
// back after its restart, and every message of every order sent in the
// final view reaches every member, with the virtual synchrony checks after
// every step. NACKs and repairs go to the nodes they are for
// (multicast.Options.Directed).
func TestUnicastUnderFaults(t *testing.T) {
	testutil.ForSeeds(t, 8, func(t *testing.T, seed int64) {
		const n, perSender = 4, 40
		w := sim.New(sim.Options{Seed: seed, Loss: 0.05, Jitter: 100 * time.Microsecond})
		l := newVSLedger()
		w.Check("view synchrony", l.check)
		all := ids(n)
		addUnicast(w, all, all...)
		settleViews(t, w, 5*time.Second, all)
		send := func(k int) []msgKey {
			var keys []msgKey
			for step := 0; step < k; step++ {
				for _, id := range all {
					w.Do(id, func(m sim.Machine) {
						c := coreOf(m)
						p := binary.BigEndian.AppendUint64(nil, uint64(step))
						if key, err := l.multicast(c, id, c.inc, p, orders[(step+int(id))%len(orders)]); err == nil {
							keys = append(keys, key)
						}
					})
				}
				if err := w.RunFor(3 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			return keys
		}
		send(perSender / 2)

		w.Partition([]uint64{1, 2}, []uint64{3, 4})
		settleViews(t, w, 5*time.Second, []uint64{1, 2})
		settleViews(t, w, 5*time.Second, []uint64{3, 4})
		send(5)
		w.Partition()
		if took := settleViews(t, w, 5*time.Second, all); took > time.Second {
			t.Errorf("the merge took %v after the heal, want at most 1s", took)
		}

		w.Crash(3)
		settleViews(t, w, 5*time.Second, []uint64{1, 2, 4})
		w.Restart(3)
		settleViews(t, w, 5*time.Second, all)

		keys := send(perSender)
		if err := w.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		if err := agreed(w, all); err != nil {
			t.Fatalf("%v\n%s", err, w.Trace())
		}
		var directed uint64
		for _, id := range all {
			directed += w.Machine(id).(*simUnicast).u.directed
		}
		if directed == 0 {
			t.Error("no NACK went to its source alone and no repair to its requester alone, at 5 % loss")
		}
		for _, id := range all {
			lf := l.life(id, core(w, id).inc)
			for _, k := range keys {
				if !lf.seen[k] {
					t.Fatalf("node %d never delivered %v", id, k)
				}
			}
			if d := len(w.Machine(id).(*simUnicast).dsts); d != n-1 {
				t.Errorf("node %d sends to %d destinations, want %d", id, d, n-1)
			}
		}
	})
}

// TestDataToFollowsData: the Core records whom each data datagram of a
// turn is for only once one of them is for one node, and then for every
// one of them, the earlier ones for the group.
func TestDataToFollowsData(t *testing.T) {
	c := NewCore(CoreOptions{Group: "huddle", Membership: membership.Options{Engine: multicast.Options{Self: 1, Inc: 1}}}, time.Unix(0, 0))
	c.out.taken = true
	session := func(to uint64) wire.Envelope {
		return wire.Envelope{Header: wire.Header{From: 1, Inc: 1, Kind: wire.KindSession}, To: to}
	}
	c.encode([]wire.Envelope{session(0), session(0)})
	if len(c.out.data) != 2 || len(c.out.dataTo) != 0 {
		t.Fatalf("two datagrams for the group: %d datagrams, dataTo %v; want 2 and none", len(c.out.data), c.out.dataTo)
	}
	c.encode([]wire.Envelope{session(3), session(0)})
	if want := []uint64{0, 0, 3, 0}; len(c.out.data) != 4 || !slices.Equal(c.out.dataTo, want) {
		t.Fatalf("then one for node 3 and one for the group: %d datagrams, dataTo %v; want 4 and %v", len(c.out.data), c.out.dataTo, want)
	}
	if rd := c.Ready(); len(rd.DataTo) != len(rd.Data) {
		t.Fatalf("Ready: %d datagrams, %d destinations", len(rd.Data), len(rd.DataTo))
	}
	c.encode([]wire.Envelope{session(0)})
	if len(c.out.dataTo) != 0 {
		t.Fatalf("the next turn, for the group only: dataTo %v, want none", c.out.dataTo)
	}
}
