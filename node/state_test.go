package node

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
)

const kvService = "kv"

// stateApp is one life's application of a replicated service: its state
// is the list of the service's messages it applied, in order (and some
// filler, so that a snapshot takes many pieces).
type stateApp struct {
	applied []msgKey
	sums    []uint64 // sums[i]: a hash of applied[:i+1]
	current bool
	primary bool // its node's view, as the application last learned it, is primary
}

// apply appends k to the state.
func (a *stateApp) apply(k msgKey) {
	var h uint64 = 14695981039346656037
	if n := len(a.sums); n > 0 {
		h = a.sums[n-1]
	}
	for _, v := range [3]uint64{k.from, k.inc, k.seq} {
		h = (h ^ v) * 1099511628211
	}
	a.applied, a.sums = append(a.applied, k), append(a.sums, h)
}

// set replaces the state.
func (a *stateApp) set(applied []msgKey) {
	a.applied, a.sums = nil, nil
	for _, k := range applied {
		a.apply(k)
	}
}

// agrees reports whether a's and b's states are one a prefix of the other.
func (a *stateApp) agrees(b *stateApp) bool {
	n := min(len(a.sums), len(b.sums))
	return n == 0 || a.sums[n-1] == b.sums[n-1]
}

// stateWorld drives replicated applications over simulated Cores and
// checks after every step that the states of the members in primary
// views that are current are prefixes of one another: nothing applied
// twice or missed across a state transfer, no member's state diverging
// from the primary component's. Members outside it are not held to it:
// virtual synchrony binds what a view delivered only among the members
// that install the same next view, and those cut off from the primary
// component may have delivered other messages at the end of the view they
// shared (they are behind when they come back, and take its state).
type stateWorld struct {
	t        *testing.T
	w        *sim.World
	apps     map[[2]uint64]*stateApp
	longest  int // the most messages a state held
	provides []provide
	filler   int
	installs int
	sent     int
}

type provide struct {
	id, inc uint64
	service string
	view    wire.ViewID
	data    []byte
}

func newStateWorld(t *testing.T, o sim.Options, filler int) *stateWorld {
	s := &stateWorld{t: t, w: sim.New(o), apps: map[[2]uint64]*stateApp{}, filler: filler}
	s.w.Check("replicated state", s.check)
	return s
}

// add starts nodes replicating kvService, with quorum majority over n
// nodes (n 0: quorum off).
func (s *stateWorld) add(n int, ids ...uint64) {
	addCores(s.w, func(o *CoreOptions) {
		o.State = StateOptions{Services: []string{kvService}, MaxSize: 16 << 20}
		if n > 0 {
			o.Membership.Quorum = membership.Quorum{Policy: membership.QuorumMajority, Expected: n}
		}
	}, ids...)
}

func (s *stateWorld) encode(a *stateApp) []byte {
	b := binary.AppendUvarint(nil, uint64(len(a.applied)))
	for _, k := range a.applied {
		b = binary.AppendUvarint(b, k.from)
		b = binary.AppendUvarint(b, k.inc)
		b = binary.AppendUvarint(b, k.seq)
	}
	return append(b, make([]byte, s.filler)...)
}

func decodeApplied(b []byte) ([]msgKey, error) {
	r := bytes.NewReader(b)
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	out := make([]msgKey, 0, n)
	for range n {
		var k msgKey
		for _, p := range []*uint64{&k.from, &k.inc, &k.seq} {
			if *p, err = binary.ReadUvarint(r); err != nil {
				return nil, err
			}
		}
		out = append(out, k)
	}
	return out, nil
}

func (s *stateWorld) app(id uint64, c *Core) *stateApp {
	k := [2]uint64{id, c.inc}
	a := s.apps[k]
	if a == nil {
		a = &stateApp{}
		s.apps[k] = a
	}
	return a
}

// check runs each live node's application on what its Core handed out,
// then holds every current state against the canonical log.
func (s *stateWorld) check(w *sim.World) error {
	for _, id := range w.IDs() {
		if !w.Alive(id) {
			continue
		}
		c := core(w, id)
		a := s.app(id, c)
		h := c.collect()
		for _, ev := range h.stream {
			if err := s.handle(id, c, a, ev); err != nil {
				return err
			}
		}
		h.stream = h.stream[:0]
	}
	var in []*stateApp
	var at []uint64
	for _, id := range w.IDs() {
		if !w.Alive(id) {
			continue
		}
		if a := s.app(id, core(w, id)); a.current && a.primary && whole(w, core(w, id).View()) {
			in, at = append(in, a), append(at, id)
			s.longest = max(s.longest, len(a.applied))
		}
	}
	for i := range in {
		for j := range i {
			if !in[i].agrees(in[j]) {
				return fmt.Errorf("the states of nodes %d and %d, both current in primary views, diverge: %s", at[i], at[j], divergence(in[i], in[j]))
			}
		}
	}
	return nil
}

// whole reports whether every member of v runs, in v's incarnation, with
// v installed: a view one of whose members crashed or moved on is stale,
// and its other members deliver in it, unknowing, until they notice (the
// suspect timeout), what the group does not; they are behind when they
// come back.
func whole(w *sim.World, v membership.View) bool {
	for _, x := range v.Members {
		if !w.Alive(x.ID) || core(w, x.ID).inc != x.Inc || core(w, x.ID).View().ID != v.ID {
			return false
		}
	}
	return true
}

// divergence says where two states part.
func divergence(a, b *stateApp) string {
	for i := range min(len(a.applied), len(b.applied)) {
		if a.applied[i] != b.applied[i] {
			return fmt.Sprintf("at message %d, %v and %v", i+1, a.applied[i], b.applied[i])
		}
	}
	return "nowhere"
}

func (s *stateWorld) handle(id uint64, c *Core, a *stateApp, ev Event) error {
	switch {
	case ev.Kind == MembershipEvent && ev.Membership.Kind == membership.ViewInstalled:
		v := ev.Membership.View
		if v.WaitsForState(id) {
			a.current = false // its state is not the group's: it waits for the provider's
		}
		a.primary = v.Primary
	case ev.Kind == MembershipEvent && ev.Membership.Kind == membership.Delivered:
		d := ev.Membership.Delivery
		if string(d.Service) != kvService {
			return nil
		}
		if !a.current {
			return fmt.Errorf("node %d: a delivery of %s (%d:%d) while its state is not current", id, kvService, d.Source, d.Seq)
		}
		a.apply(msgKey{d.Source, d.Inc, d.Seq})
	case ev.Kind != StateTransferEvent:
	case ev.State.Kind == StateWanted:
		if !a.current {
			return fmt.Errorf("node %d: asked to provide %s in %v while not current", id, ev.State.Service, ev.State.View)
		}
		s.provides = append(s.provides, provide{id, c.inc, ev.State.Service, ev.State.View, s.encode(a)})
	case ev.State.Kind == StateInstalled:
		applied, err := decodeApplied(ev.State.Data)
		if err != nil {
			return fmt.Errorf("node %d: the snapshot from %d does not decode: %v", id, ev.State.From, err)
		}
		a.set(applied)
		a.current = true
		s.installs++
	case ev.State.Kind == StateCurrent:
		a.current = true
	case ev.State.Kind == StateSent:
		s.sent++
	}
	return nil
}

// serve hands the snapshots the applications took to their Cores.
func (s *stateWorld) serve() {
	for _, p := range s.provides {
		if !s.w.Alive(p.id) {
			continue
		}
		s.w.Do(p.id, func(m sim.Machine) {
			if c := coreOf(m); c.inc == p.inc {
				c.ProvideState(s.w.Now(), p.service, p.view, p.data, nil)
			}
		})
	}
	s.provides = s.provides[:0]
}

// traffic has some live members multicast on the replicated service in
// total order; outside the primary component the send fails, as it must.
func (s *stateWorld) traffic(r *rand.Rand) {
	for _, id := range s.w.IDs() {
		if !s.w.Alive(id) || r.IntN(3) != 0 {
			continue
		}
		s.w.Do(id, func(m sim.Machine) {
			coreOf(m).Multicast([]byte(kvService), []byte{byte(r.Uint32())}, wire.Total, 0)
		})
	}
}

func (s *stateWorld) run(r *rand.Rand, d time.Duration) {
	s.t.Helper()
	for end := s.w.Elapsed() + d; s.w.Elapsed() < end; {
		s.traffic(r)
		s.serve()
		if err := s.w.RunFor(time.Millisecond); err != nil {
			s.t.Fatal(err)
		}
	}
}

// settle waits, without faults or traffic, until every node of group is
// in one view with its state current and the same as every other's.
func (s *stateWorld) settle(group []uint64, limit time.Duration) {
	s.t.Helper()
	var last error
	err := s.w.RunUntil(func() bool {
		s.serve()
		if last = agreed(s.w, group); last != nil {
			return false
		}
		var first *stateApp
		for _, id := range group {
			a := s.app(id, core(s.w, id))
			switch {
			case !a.current:
				last = fmt.Errorf("node %d's state is not current", id)
				return false
			case first != nil && !slices.Equal(a.applied, first.applied):
				last = fmt.Errorf("node %d applied %d messages, node %d %d", id, len(a.applied), group[0], len(first.applied))
				return false
			}
			first = a
		}
		return true
	}, limit)
	if err != nil {
		s.t.Fatalf("seed %d: %v (%v)\n%s", s.w.Seed(), last, err, s.w.Trace())
	}
}

// TestStateTransferJoin: two nodes build a state; a third joins while
// they send, takes the state at the cut of the view that admits it, and
// then applies the same messages they do. Its first delivery is the first
// message of its first view: the state check finds nothing applied twice
// or missed.
func TestStateTransferJoin(t *testing.T) {
	testutil.ForSeeds(t, 10, func(t *testing.T, seed int64) {
		r := rand.New(rand.NewPCG(uint64(seed), 9))
		s := newStateWorld(t, sim.Options{Seed: seed, Loss: 0.05, Jitter: 100 * time.Microsecond}, 100_000)
		s.add(0, 1, 2)
		s.settle([]uint64{1, 2}, 3*time.Second)
		s.run(r, 300*time.Millisecond)
		s.add(0, 3)
		s.run(r, 500*time.Millisecond)
		s.settle(ids(3), 5*time.Second)
		if s.installs == 0 || s.sent == 0 {
			t.Fatalf("no state went to the joiner: %d installed, %d sent", s.installs, s.sent)
		}
		if s.longest < 50 {
			t.Fatalf("only %d messages applied: the test exercised little", s.longest)
		}
		for _, id := range ids(3) {
			// Every member hears the provider's pieces; they are no
			// member's bad input.
			if st := core(s.w, id).StateStats(); st.Bad != 0 {
				t.Fatalf("node %d counted %d state messages bad (%+v)", id, st.Bad, st)
			}
		}
	})
}

// TestStateTransferProviderCrashes: the provider crashes while the
// snapshot (several hundred kilobytes, many pieces) is on its way; the
// next view's provider sends its own, and the joiner finishes.
func TestStateTransferProviderCrashes(t *testing.T) {
	testutil.ForSeeds(t, 10, func(t *testing.T, seed int64) {
		r := rand.New(rand.NewPCG(uint64(seed), 9))
		s := newStateWorld(t, sim.Options{Seed: seed, Loss: 0.02, Jitter: 100 * time.Microsecond}, 600_000)
		s.add(0, 1, 2, 3)
		s.settle(ids(3), 3*time.Second)
		s.run(r, 200*time.Millisecond)
		s.add(0, 4)
		var provider uint64
		err := s.w.RunUntil(func() bool {
			s.serve()
			for _, p := range []uint64{1, 2, 3} {
				if st := core(s.w, p).StateStats(); st.BytesSent > 0 {
					provider = p
					return true
				}
			}
			return false
		}, 3*time.Second)
		if err != nil {
			t.Fatalf("no transfer began: %v", err)
		}
		s.w.Crash(provider)
		s.run(r, 300*time.Millisecond)
		var rest []uint64
		for _, id := range ids(4) {
			if id != provider {
				rest = append(rest, id)
			}
		}
		s.settle(rest, 5*time.Second)
		if st := core(s.w, 4).StateStats(); st.Installed != 1 {
			t.Fatalf("the joiner installed %d states, want 1", st.Installed)
		}
	})
}

// TestStateUnderFaults runs replicated state through partitions and
// heals, crashes and restarts (a restarted node takes the state anew),
// at loss up to 10 %, with quorum majority, the members sending in total
// order all along; after every step every current state is a prefix of
// one sequence, and at the end every node holds the same state.
// HUDDLE_TEST_SOAK=1 runs ten times as many.
func TestStateUnderFaults(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 10
	}
	testutil.ForSeeds(t, seeds, func(t *testing.T, seed int64) {
		r := rand.New(rand.NewPCG(uint64(seed), 10))
		n := 3 + r.IntN(3)
		s := newStateWorld(t, sim.Options{Seed: seed, Loss: r.Float64() * 0.1, Jitter: time.Duration(r.IntN(200)) * time.Microsecond}, r.IntN(200_000))
		s.add(n, ids(n)...)
		s.settle(ids(n), 5*time.Second)
		for range 3 + r.IntN(5) {
			live := []uint64{}
			for _, id := range ids(n) {
				if s.w.Alive(id) {
					live = append(live, id)
				}
			}
			switch k := r.IntN(4); {
			case k == 0 && len(live) > 1:
				s.w.Crash(live[r.IntN(len(live))])
			case k == 1:
				for _, id := range ids(n) {
					if !s.w.Alive(id) {
						s.w.Restart(id)
						break
					}
				}
			case k == 2:
				p := slices.Clone(ids(n))
				r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
				cut := 1 + r.IntN(n-1)
				s.w.Partition(p[:cut], p[cut:])
			default:
				s.w.Heal()
			}
			s.run(r, time.Duration(100+r.IntN(400))*time.Millisecond)
		}
		s.w.Heal()
		for _, id := range ids(n) {
			if !s.w.Alive(id) {
				s.w.Restart(id)
			}
		}
		s.settle(ids(n), 10*time.Second)
	})
}
