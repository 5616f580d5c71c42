package mutex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil"
)

// tgroup is a view of lock machines over a total-order service, as the
// central server and the token ring assume it: every message goes into
// one log and is delivered to every member of the view, the sender
// included, in the log's order. A view change first delivers what is in
// the log (the flush); a crash loses what the crashed member sent and no
// member delivered yet, for every member alike (virtual synchrony).
type tgroup struct {
	t       testing.TB
	now     time.Time
	alg     Algorithm
	locks   map[uint64]Lock
	view    []uint64 // the view's order: the coordinator first
	viewID  string
	log     []sent
	carried Counts // by kind, a message once however many deliver it
	evs     map[uint64][]Event
	epoch   *int // shared by groups that split and merge
	trace   []string
}

type sent struct {
	from    uint64
	payload []byte
}

func newTGroup(t testing.TB, alg Algorithm, ids ...uint64) *tgroup {
	g := &tgroup{t: t, now: time.Unix(1_800_000_000, 0), alg: alg, locks: map[uint64]Lock{}, evs: map[uint64][]Event{}, epoch: new(int)}
	for _, id := range ids {
		g.locks[id] = NewLock(Options{Self: id, Algorithm: alg})
	}
	g.install(ids...)
	return g
}

func (g *tgroup) logf(format string, args ...any) {
	g.trace = append(g.trace, fmt.Sprintf(format, args...))
	if len(g.trace) > 60 {
		g.trace = g.trace[1:]
	}
}

// collect takes what member id's machine produced.
func (g *tgroup) collect(id uint64) {
	rd := g.locks[id].Ready()
	for _, m := range rd.Messages {
		if !m.Total || m.To != 0 {
			g.t.Fatalf("node %d sent %+v: want every message in total order to all", id, m)
		}
		g.log = append(g.log, sent{id, m.Payload})
		g.logf("%d sends %s", id, Describe(m.Payload))
	}
	for _, e := range rd.Events {
		g.logf("%d: %v clock %d msgs %d lost %v", id, e.Kind, e.Clock, e.Messages, e.Lost)
	}
	g.evs[id] = append(g.evs[id], rd.Events...)
}

// step delivers the next message of the log to every member; false when
// the log is empty.
func (g *tgroup) step() bool {
	if len(g.log) == 0 {
		return false
	}
	s := g.log[0]
	g.log = g.log[1:]
	var c codec
	if k, _, _, err := c.decode3(s.payload, kindCRequest, kindTRelease); err == nil {
		g.carried.add(k)
	}
	g.now = g.now.Add(time.Millisecond)
	for _, id := range g.view {
		g.locks[id].Receive(g.now, s.from, s.payload)
		g.collect(id)
	}
	g.check()
	return true
}

func (g *tgroup) drain() {
	for i := 0; g.step(); i++ {
		if i > 100_000 {
			g.t.Fatalf("no quiescence\n%s", strings.Join(g.trace, "\n"))
		}
	}
}

// install delivers the log (the flush) and installs a view of members,
// in this order (the first coordinates).
func (g *tgroup) install(members ...uint64) {
	g.drain()
	*g.epoch++
	g.view, g.viewID = slices.Clone(members), fmt.Sprintf("%d.%d", *g.epoch, members[0])
	g.logf("view %s %v", g.viewID, members)
	for _, id := range members {
		g.locks[id].SetView(g.now, g.viewID, members, nil)
		g.collect(id)
	}
	g.check()
}

// crash stops id: what it sent that nobody delivered is lost.
func (g *tgroup) crash(id uint64) {
	g.logf("crash %d", id)
	g.log = slices.DeleteFunc(g.log, func(s sent) bool { return s.from == id })
	delete(g.locks, id)
	g.view = slices.DeleteFunc(g.view, func(m uint64) bool { return m == id })
}

func (g *tgroup) request(id uint64) bool {
	ok := g.locks[id].Request(g.now)
	g.collect(id)
	return ok
}

func (g *tgroup) release(id uint64) bool {
	ok := g.locks[id].Release(g.now)
	g.collect(id)
	return ok
}

// check is the lock's safety: no member acquired the lock in the view
// while another member holds it (two holders only from two sides of a
// partition, neither acquired in the merged view).
func (g *tgroup) check() {
	var holders []uint64
	for _, id := range g.view {
		if g.locks[id].State() == Held {
			holders = append(holders, id)
		}
	}
	if len(holders) < 2 {
		return
	}
	for _, id := range holders {
		if g.locks[id].HeldView() == g.viewID {
			g.t.Fatalf("%s: node %d acquired the lock in view %s while %v hold it\n%s", g.alg, id, g.viewID, holders, strings.Join(g.trace, "\n"))
		}
	}
}

// last returns member id's last event of kind k, and forgets its events.
func (g *tgroup) last(id uint64, k EventKind) *Event {
	var e *Event
	for _, ev := range g.evs[id] {
		if ev.Kind == k {
			e = &ev
		}
	}
	g.evs[id] = nil
	return e
}

// TestCentralCounts: the central server takes 3 messages per entry,
// REQUEST, GRANT and RELEASE, whoever asks (the coordinator too), and
// serves waiting requests in their order.
func TestCentralCounts(t *testing.T) {
	for _, n := range []int{1, 2, 5, 8} {
		members := make([]uint64, n)
		for i := range members {
			members[i] = uint64(10 + i)
		}
		for _, who := range []uint64{members[0], members[n-1]} {
			t.Run(fmt.Sprintf("n=%d/node %d", n, who), func(t *testing.T) {
				g := newTGroup(t, Central, members...)
				g.drain()
				g.carried = Counts{}
				g.request(who)
				g.drain()
				a := g.last(who, Acquired)
				g.release(who)
				g.drain()
				e := g.last(who, Exited)
				if a == nil || e == nil || a.Messages != 2 || e.Messages != 3 || g.carried != (Counts{Request: 1, Grant: 1, Release: 1}) {
					t.Errorf("acquired %+v, released %+v, carried %+v; want 2 messages at the grant, 3 with the release", a, e, g.carried)
				}
			})
		}
	}
	// Requests wait in their order: every member asks while the first holds it.
	g := newTGroup(t, Central, 1, 2, 3, 4)
	g.drain()
	for _, id := range []uint64{3, 1, 4, 2} {
		g.request(id)
		g.drain()
	}
	var order []uint64
	for range 4 {
		for _, id := range g.view {
			if g.locks[id].State() == Held {
				order = append(order, id)
				g.release(id)
				g.drain()
				break
			}
		}
	}
	if !slices.Equal(order, []uint64{3, 1, 4, 2}) {
		t.Errorf("served %v, want the requests' order 3 1 4 2", order)
	}
}

// TestTokenCounts: an entry costs the token's passes from where it was,
// 0 to n−1, plus one WANT when the token would not have come on its own;
// a token parked at the requester costs nothing.
func TestTokenCounts(t *testing.T) {
	g := newTGroup(t, TokenRing, 1, 2, 3, 4, 5)
	g.drain() // the first view: no token claimed, node 1 (the coordinator) has a new one
	if st := g.locks[1].Stats(); st.Regenerated != 1 {
		t.Fatalf("node 1 saw %d tokens regenerated, want 1", st.Regenerated)
	}
	entry := func(id uint64) int {
		t.Helper()
		g.carried = Counts{}
		g.request(id)
		g.drain()
		a := g.last(id, Acquired)
		if a == nil {
			t.Fatalf("node %d did not get the lock\n%s", id, strings.Join(g.trace, "\n"))
		}
		if int(g.carried.Total()) != a.Messages {
			t.Errorf("node %d counts %d messages for its entry; the tgroup carried %+v", id, a.Messages, g.carried)
		}
		g.release(id)
		g.drain()
		return a.Messages
	}
	for _, c := range []struct {
		id   uint64
		want int
	}{
		{1, 0},     // parked here
		{1, 0},     // again
		{4, 1 + 3}, // WANT, then 1→2→3→4
		{2, 1 + 3}, // WANT, then 4→5→1→2
		{3, 1 + 1}, // WANT, then 2→3
	} {
		if got := entry(c.id); got != c.want {
			t.Errorf("node %d's entry took %d messages, want %d", c.id, got, c.want)
		}
	}
	// Everyone asks at once, with the token at 3: each WANT, then one
	// pass per entry, round the ring from 3.
	g.carried = Counts{}
	for _, id := range []uint64{1, 2, 3, 4, 5} {
		g.request(id)
	}
	var order []uint64
	for len(order) < 5 {
		g.drain()
		for _, id := range g.view {
			if g.locks[id].State() == Held {
				order = append(order, id)
				g.release(id)
			}
		}
	}
	if !slices.Equal(order, []uint64{3, 4, 5, 1, 2}) || g.carried != (Counts{Want: 4, Pass: 4}) {
		t.Errorf("served %v with %+v, want 3 4 5 1 2 with 4 WANTs and 4 passes", order, g.carried)
	}
}

// TestTokenRegeneratedOnce: the token's holder crashes; the next view
// regenerates exactly one token, at its coordinator, whoever the
// survivors are, and the lock goes on. A holder that survives keeps the
// token: nothing is regenerated.
func TestTokenRegeneratedOnce(t *testing.T) {
	g := newTGroup(t, TokenRing, 1, 2, 3, 4)
	g.drain()
	g.request(3)
	g.drain()
	g.install(2, 3, 4, 1) // 3 holds the token and survives: nothing regenerated
	g.drain()
	for _, id := range g.view {
		if st := g.locks[id].Stats(); st.Regenerated != 1 {
			t.Errorf("node %d: %d regenerations, want only the first view's", id, st.Regenerated)
		}
	}
	g.crash(3) // inside, with the token
	g.install(2, 4, 1)
	g.drain()
	for _, id := range g.view {
		if st := g.locks[id].Stats(); st.Regenerated != 2 {
			t.Errorf("node %d: %d regenerations, want 2", id, st.Regenerated)
		}
	}
	g.request(4)
	g.drain()
	if g.locks[4].State() != Held {
		t.Fatalf("node 4 did not get the regenerated token\n%s", strings.Join(g.trace, "\n"))
	}
}

// TestReplicatedRandom runs seeded histories of requests, releases,
// withdrawals, crashes, joins and view changes for the central server and
// the token ring, with the safety check after every delivery; at the
// end, with the faults over, every member that asks gets the lock.
// `-seed=S` replays one seed.
func TestReplicatedRandom(t *testing.T) {
	for _, alg := range []Algorithm{Central, TokenRing} {
		t.Run(string(alg), func(t *testing.T) {
			testutil.ForSeeds(t, 300, func(t *testing.T, seed int64) {
				rng := rand.New(rand.NewPCG(uint64(seed), 11))
				g := newTGroup(t, alg, 1, 2, 3, 4, 5)
				next := uint64(6)
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("the last steps:\n%s", strings.Join(g.trace, "\n"))
					}
				})
				for range 200 {
					id := g.view[rng.IntN(len(g.view))]
					switch r := rng.IntN(20); {
					case r < 8:
						g.request(id)
					case r < 13:
						g.release(id)
					case r < 14 && len(g.view) > 2:
						g.crash(id)
						g.install(shuffle(rng, g.view)...)
					case r < 15:
						g.locks[next] = NewLock(Options{Self: next, Algorithm: alg})
						g.install(shuffle(rng, append(slices.Clone(g.view), next))...)
						next++
					case r < 16:
						g.install(shuffle(rng, g.view)...)
					default:
						for range rng.IntN(4) {
							g.step()
						}
					}
				}
				g.drain()
				for _, id := range g.view {
					g.release(id)
				}
				g.drain()
				for _, id := range g.view {
					g.request(id)
				}
				want := map[uint64]bool{}
				for _, id := range g.view {
					want[id] = true
				}
				for range 100 {
					g.drain()
					for _, id := range g.view {
						if g.locks[id].State() == Held {
							delete(want, id)
							g.release(id)
						}
					}
				}
				if len(want) > 0 {
					t.Fatalf("nodes %v never got the lock", want)
				}
			})
		})
	}
}

func shuffle(rng *rand.Rand, ids []uint64) []uint64 {
	out := slices.Clone(ids)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// FuzzReplicatedReceive feeds the central server and the token ring any
// payload from any member, in any order: nothing panics, and what they
// keep stays bounded by the view (a queue entry, a wish or a claim per
// member at most).
func FuzzReplicatedReceive(f *testing.F) {
	var c codec
	for _, k := range []kind{kindCRequest, kindGrant, kindRelease, kindCState, kindWant, kindPass, kindTState, kindTRelease} {
		f.Add(uint8(1), c.append3(nil, k, 2, 1), c.append3(nil, k, 0, 0))
	}
	f.Fuzz(func(t *testing.T, from uint8, p1, p2 []byte) {
		now := time.Unix(1_800_000_000, 0)
		members := []uint64{3, 1, 2}
		sender := members[int(from)%3]
		cs := newCentral(1)
		tr := newTokenRing(1)
		for _, l := range []Lock{cs, tr} {
			l.SetView(now, "1.3", members, nil)
			l.Request(now)
			for _, p := range [][]byte{p1, p2, p1} {
				l.Receive(now, sender, p)
				l.Receive(now, 1, p)
			}
			l.Release(now)
			l.Ready()
		}
		if len(cs.queue) > 3 || len(cs.holders) > 3 || len(tr.wants) > 3 || len(tr.claims) > 3 || len(tr.retired) > 3 || len(cs.known) > 3 {
			t.Fatalf("unbounded: queue %v holders %v wants %v claims %v retired %v", cs.queue, cs.holders, tr.wants, tr.claims, tr.retired)
		}
	})
}
