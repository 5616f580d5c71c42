package sim_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
)

// toy is the test machine: it multicasts (id, incarnation, counter) every
// period, starting at a random phase, and records everything it receives.
type toy struct {
	id, inc uint64
	rng     *rand.Rand
	period  time.Duration // 0: never sends on its own
	next    time.Time
	counter uint64
	mute    bool
	outbox  [][]byte
	got     []rec
	ticks   int
}

// rec is one received datagram.
type rec struct {
	from, inc, n uint64
	at           time.Time
}

func (r rec) key() rec { r.at = time.Time{}; return r }

func toyFactory(period time.Duration) sim.Factory {
	return func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
		return &toy{id: id, inc: inc, period: period, rng: rand.New(rand.NewPCG(uint64(seed), 1))}
	}
}

func (m *toy) Receive(now time.Time, _ netip.AddrPort, data []byte) {
	m.got = append(m.got, rec{
		from: binary.BigEndian.Uint64(data[0:]),
		inc:  binary.BigEndian.Uint64(data[8:]),
		n:    binary.BigEndian.Uint64(data[16:]),
		at:   now,
	})
	clear(data) // must not disturb the other receivers' copies
}

func (m *toy) Tick(now time.Time) {
	m.ticks++
	switch {
	case m.period == 0:
	case m.next.IsZero(): // first tick: start at a random phase
		m.next = now.Add(time.Duration(m.rng.Int64N(int64(m.period))) + 1)
	case !now.Before(m.next):
		if !m.mute {
			m.send()
		}
		m.next = now.Add(m.period)
	}
}

// send queues the next counter value.
func (m *toy) send() {
	m.counter++
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b[0:], m.id)
	binary.BigEndian.PutUint64(b[8:], m.inc)
	binary.BigEndian.PutUint64(b[16:], m.counter)
	m.outbox = append(m.outbox, b)
}

func (m *toy) NextDeadline() time.Time {
	if m.period == 0 {
		return time.Time{}
	}
	return m.next
}

func (m *toy) TakeOutbox() [][]byte {
	out := m.outbox
	m.outbox = nil
	return out
}

// newWorld returns a world with nodes 1..n running toys.
func newWorld(opts sim.Options, n int, period time.Duration) *sim.World {
	w := sim.New(opts)
	for id := range uint64(n) {
		w.Add(id+1, toyFactory(period))
	}
	return w
}

func toyOf(w *sim.World, id uint64) *toy { return w.Machine(id).(*toy) }

// muteAll stops every toy sending and lets the datagrams in flight land,
// so that counts are final.
func muteAll(t testing.TB, w *sim.World, drain time.Duration) {
	t.Helper()
	for _, id := range w.IDs() {
		w.Do(id, func(m sim.Machine) { m.(*toy).mute = true })
	}
	if err := w.RunFor(drain); err != nil {
		t.Fatal(err)
	}
}

// receipts counts, over all live toys, how often each datagram arrived.
func receipts(w *sim.World) map[rec]int {
	seen := make(map[rec]int)
	for _, id := range w.IDs() {
		for _, r := range toyOf(w, id).got {
			seen[r.key()]++
		}
	}
	return seen
}

// dump renders everything the toys received, for comparing runs.
func dump(w *sim.World) string {
	s := ""
	for _, id := range w.IDs() {
		s += fmt.Sprintf("n%d %v\n", id, toyOf(w, id).got)
	}
	return s
}

func run(t testing.TB, w *sim.World, d time.Duration) {
	t.Helper()
	if err := w.RunFor(d); err != nil {
		t.Fatal(err)
	}
}
