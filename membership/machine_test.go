package membership

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
)

// lan is a lossless, instantaneous network of Machines, stepped by hand:
// every datagram goes through the real codec to every other machine.
type lan struct {
	t   *testing.T
	now time.Time
	ms  map[uint64]*Machine
	enc *wire.Encoder
	dec *wire.Decoder
	env *wire.Envelope
	evs map[uint64][]Event
}

func newLAN(t *testing.T, ids ...uint64) *lan {
	l := &lan{t: t, now: time.Unix(1_800_000_000, 0), ms: map[uint64]*Machine{},
		enc: wire.NewEncoder(), dec: wire.NewDecoder(), env: wire.NewEnvelope(1400), evs: map[uint64][]Event{}}
	for _, id := range ids {
		l.add(id)
	}
	return l
}

func (l *lan) add(id uint64) *Machine {
	m := New(Options{Engine: multicast.Options{Self: id, Inc: 1, Group: 7, Heartbeat: 20 * time.Millisecond,
		SuspectTimeout: 150 * time.Millisecond, DatagramSize: 1400}, JoinTimeout: 60 * time.Millisecond,
		Settings: []Setting{{"heartbeat", "20ms"}}}, l.now)
	l.ms[id] = m
	return m
}

// run advances time by d in steps of 1ms, moving every datagram at once.
func (l *lan) run(d time.Duration) {
	for end := l.now.Add(d); l.now.Before(end); l.now = l.now.Add(time.Millisecond) {
		for moved := true; moved; {
			moved = false
			for _, id := range l.ids() {
				m := l.ms[id]
				if !m.NextDeadline().IsZero() && !m.NextDeadline().After(l.now) {
					m.Tick(l.now)
				}
				m.Pack()
				rd := m.Ready()
				l.keep(id, rd.Events)
				for _, out := range rd.Envelopes {
					moved = true
					b, err := l.enc.Append(nil, &out)
					if err != nil {
						l.t.Fatal(err)
					}
					l.deliver(id, b)
				}
			}
		}
	}
}

// keep records node id's events, with the delivered messages' own copies
// of their bytes.
func (l *lan) keep(id uint64, evs []Event) {
	for _, ev := range evs {
		ev.Delivery.Payload = slices.Clone(ev.Delivery.Payload)
		l.evs[id] = append(l.evs[id], ev)
	}
}

// deliveries takes the messages node id delivered from its events.
func (l *lan) deliveries(id uint64) []Delivery {
	l.keep(id, l.ms[id].Ready().Events)
	var ds []Delivery
	rest := l.evs[id][:0]
	for _, ev := range l.evs[id] {
		if ev.Kind == Delivered {
			ds = append(ds, ev.Delivery)
		} else {
			rest = append(rest, ev)
		}
	}
	l.evs[id] = rest
	return ds
}

func (l *lan) deliver(from uint64, b []byte) {
	for _, id := range l.ids() {
		if id == from {
			continue
		}
		if err := l.dec.Decode(b, l.env); err != nil {
			l.t.Fatal(err)
		}
		l.ms[id].Step(l.now, fuzzAddr, l.env)
	}
}

var fuzzAddr = netip.MustParseAddrPort("10.0.0.1:7468")

func (l *lan) ids() []uint64 {
	var ids []uint64
	for id := range l.ms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (l *lan) installs(id uint64) []Event {
	var out []Event
	for _, ev := range l.evs[id] {
		if ev.Kind == ViewInstalled {
			out = append(out, ev)
		}
	}
	return out
}

func TestJoinLeaveAndSendErrors(t *testing.T) {
	l := newLAN(t, 1, 2, 3)
	if _, err := l.ms[1].Multicast(nil, []byte("x"), wire.FIFO, 0); !errors.Is(err, ErrNotInView) {
		t.Fatalf("Multicast before a view: %v, want ErrNotInView", err)
	}
	l.run(200 * time.Millisecond)
	for _, id := range l.ids() {
		v := l.ms[id].View()
		if got := v.IDs(); !slices.Equal(got, []uint64{3, 1, 2}) {
			t.Fatalf("node %d is in %v, want 3 (the highest ID founds) then 1 and 2", id, v)
		}
	}
	if ins := l.installs(1); len(ins) != 1 || !slices.Equal(ins[0].Joined, []uint64{3, 1, 2}) {
		t.Fatalf("node 1 installed %+v, want one view that it and the others joined", ins)
	}
	seq, err := l.ms[2].Multicast(nil, []byte("hello"), wire.FIFO, 0)
	if err != nil || seq != 1 {
		t.Fatalf("Multicast in a view: %d, %v", seq, err)
	}
	if d := l.deliveries(2); len(d) != 1 || string(d[0].Payload) != "hello" {
		t.Fatalf("the sender delivered %v, want its own message", d)
	}
	l.run(5 * time.Millisecond)
	if d := l.deliveries(1); len(d) != 1 || d[0].Source != 2 || d[0].View != l.ms[1].View().ID {
		t.Fatalf("node 1 delivered %+v, want node 2's message in the view", d)
	}

	l.ms[1].Leave(l.now)
	if _, err := l.ms[1].Multicast(nil, []byte("late"), wire.FIFO, 0); !errors.Is(err, ErrLeft) {
		t.Fatalf("Multicast while leaving: %v, want ErrLeft", err)
	}
	l.run(50 * time.Millisecond)
	if !l.ms[1].Left() {
		t.Fatal("node 1 did not finish leaving")
	}
	ins := l.installs(3)
	last := ins[len(ins)-1]
	if !slices.Equal(last.View.IDs(), []uint64{3, 2}) || !slices.Equal(last.Left, []uint64{1}) || len(last.Crashed) != 0 {
		t.Fatalf("after the leave node 3 installed %+v, want [3 2] with 1 left", last)
	}
	if last.Flush > 20*time.Millisecond {
		t.Fatalf("the leave took a flush of %v", last.Flush)
	}
}

func TestFlushIDOrder(t *testing.T) {
	ids := []flushID{{1, 1, 9}, {1, 2, 1}, {2, 1, 1}, {2, 1, 3}}
	for i := range ids {
		for j := range ids {
			if got, want := ids[i].less(ids[j]), i < j; got != want {
				t.Errorf("%v < %v = %v, want %v", ids[i], ids[j], got, want)
			}
		}
	}
}
