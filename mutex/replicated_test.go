package mutex

import (
	"fmt"
	"maps"
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
// member delivered yet, for every member alike (virtual synchrony). A
// member without a machine (FuzzReplicatedReceive's hostile one) sends
// what the test puts in the log in its name.
//
// After every step each machine's state must agree with the events it
// reported (lockLedger).
type tgroup struct {
	t       testing.TB
	now     time.Time
	alg     Algorithm
	locks   map[uint64]Lock
	ledgers map[uint64]*lockLedger
	view    []uint64 // the view's order: the coordinator first
	viewID  string
	log     []sent
	carried Counts // by kind, a message once however many deliver it
	evs     map[uint64][]Event
	epoch   *int // shared by groups that split and merge
	trace   []string
	strict  bool // no two holders at all, not even from before the view
}

type sent struct {
	from    uint64
	payload []byte
}

func newTGroup(t testing.TB, alg Algorithm, ids ...uint64) *tgroup {
	g := &tgroup{t: t, now: time.Unix(1_800_000_000, 0), alg: alg, locks: map[uint64]Lock{}, ledgers: map[uint64]*lockLedger{},
		evs: map[uint64][]Event{}, epoch: new(int)}
	for _, id := range ids {
		g.add(id)
	}
	g.install(ids...)
	return g
}

// add makes a machine for member id, to be installed in a view.
func (g *tgroup) add(id uint64) {
	g.locks[id] = NewLock(Options{Self: id, Algorithm: g.alg})
	g.ledgers[id] = &lockLedger{}
}

func (g *tgroup) fail(format string, args ...any) {
	g.t.Helper()
	g.t.Fatalf("%s: %s\n%s", g.alg, fmt.Sprintf(format, args...), strings.Join(g.trace, "\n"))
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
		if err := g.ledgers[id].apply(e); err != nil {
			g.fail("node %d: %v", id, err)
		}
	}
	if err := g.ledgers[id].agrees(g.locks[id]); err != nil {
		g.fail("node %d: %v", id, err)
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
		if l := g.locks[id]; l != nil {
			l.Receive(g.now, s.from, s.payload)
			g.collect(id)
		}
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
		if l := g.locks[id]; l != nil {
			l.SetView(g.now, g.viewID, members, nil)
			g.collect(id)
		}
	}
	g.check()
}

// crash stops id: what it sent that nobody delivered is lost.
func (g *tgroup) crash(id uint64) {
	g.logf("crash %d", id)
	g.log = slices.DeleteFunc(g.log, func(s sent) bool { return s.from == id })
	delete(g.locks, id)
	delete(g.ledgers, id)
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
// partition, neither acquired in the merged view). Strict, no two members
// hold it at all: a group that never splits, whose holder keeps the lock
// through its view changes.
func (g *tgroup) check() {
	holders := g.holders()
	switch {
	case len(holders) < 2:
		return
	case g.strict:
		g.fail("%v hold the lock at once in view %s", holders, g.viewID)
	}
	for _, id := range holders {
		if g.locks[id].HeldView() == g.viewID {
			g.fail("node %d acquired the lock in view %s while %v hold it", id, g.viewID, holders)
		}
	}
}

// holders returns the members whose machines hold the lock.
func (g *tgroup) holders() []uint64 {
	var ids []uint64
	for _, id := range g.view {
		if l := g.locks[id]; l != nil && l.State() == Held {
			ids = append(ids, id)
		}
	}
	return ids
}

// lockLedger is a machine's state as its events tell it: Requested makes
// it wanted, Acquired held (of the request, in its view), Exited and
// Withdrawn released, each only from the state before it.
type lockLedger struct {
	state State
	clock uint64 // of the request
	view  string // where it was acquired
	stats Stats  // the events counted as Stats counts them
}

func (l *lockLedger) apply(e Event) error {
	from := l.state
	switch e.Kind {
	case Requested:
		l.state, l.clock = Wanted, e.Clock
		l.stats.Requests++
	case Acquired:
		l.state, l.view = Held, e.View
		l.stats.Acquired++
	case Exited:
		l.state = Released
		if e.Lost {
			l.stats.Lost++
		} else {
			l.stats.Released++
		}
	case Withdrawn:
		l.state = Released
		l.stats.Withdrawn++
	default:
		return nil
	}
	want := map[EventKind]State{Requested: Released, Acquired: Wanted, Exited: Held, Withdrawn: Wanted}[e.Kind]
	switch {
	case from != want:
		return fmt.Errorf("%v (clock %d) while %v", e.Kind, e.Clock, from)
	case e.Kind != Requested && e.Clock != l.clock:
		return fmt.Errorf("%v of request %d; the request was %d", e.Kind, e.Clock, l.clock)
	}
	return nil
}

// agrees reports where machine m's state, holder's view and counters
// differ from what its events told.
func (l *lockLedger) agrees(m Lock) error {
	s := m.Stats()
	got := Stats{Requests: s.Requests, Acquired: s.Acquired, Released: s.Released, Lost: s.Lost, Withdrawn: s.Withdrawn}
	switch {
	case m.State() != l.state:
		return fmt.Errorf("state %v; its events say %v", m.State(), l.state)
	case l.state == Held && m.HeldView() != l.view:
		return fmt.Errorf("holds the lock of view %q; it was acquired in %q", m.HeldView(), l.view)
	case got != l.stats:
		return fmt.Errorf("counts %+v; its events say %+v", got, l.stats)
	}
	return nil
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

// TestMessagesOutOfTurnAreStale: a member that breaks the protocol (found
// by FuzzReplicatedReceive). A coordinator's GRANT delivered before every
// STATE of the view is in gave the lock to a waiting member while the
// holder's STATE was still to come: two holders. A WANT before its
// sender's STATE, then the STATE's own wish, made two wishes of one
// member. Both are stale now, as a REQUEST before its STATE is.
func TestMessagesOutOfTurnAreStale(t *testing.T) {
	var c codec
	g := newTGroup(t, Central, 1, 2, 3)
	g.strict = true
	g.request(1)
	g.drain()
	g.request(2)
	g.drain()
	g.install(hostileID, 2, 1, 3) // 2's STATE (wanted) comes before 1's (held)
	g.log = slices.Insert(g.log, 1, sent{hostileID, c.append3(nil, kindGrant, 2, 1)})
	g.drain() // (strict: two holders fail the test)
	if st := g.locks[2].Stats(); st.Stale != 1 {
		t.Errorf("the early GRANT: %d stale, want 1", st.Stale)
	}

	g = newTGroup(t, TokenRing, 1, 2, 3)
	g.install(hostileID, 1, 2, 3)
	g.log = slices.Insert(g.log, 0, sent{hostileID, c.append3(nil, kindWant, 1, 0)})
	g.log = append(g.log, sent{hostileID, c.append3(nil, kindTState, flagWants, 1)})
	g.drain()
	for _, id := range g.view[1:] {
		tr := g.locks[id].(*tokenRing)
		if n := len(slices.DeleteFunc(slices.Clone(tr.wants), func(e entry) bool { return e.id != hostileID })); n != 1 {
			t.Errorf("node %d holds %d wishes of the member, want 1: %v", id, n, tr.wants)
		}
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
						g.add(next)
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

// FuzzReplicatedReceive runs the central server or the token ring (the
// first byte picks) in a total-order group (tgroup) of three honest
// machines and a hostile member, hostileID, whose messages are the
// fuzzer's, and turns the rest of the bytes into a script: requests and
// releases, deliveries, the hostile member's messages (well-formed ones of
// every kind with chosen numbers, its STATE at each view among them, or
// any bytes), each sequenced anywhere among the messages not yet
// delivered, messages from a node outside the view, view changes with the
// members in any order (the hostile member may coordinate), crashes,
// joins, and the hostile member leaving and coming back.
//
// After every step: at most one machine holds the lock (one group, no
// partition: a holder keeps the lock through view changes, so never two);
// each machine's state, holder's view and counters agree with the events
// it reported (lockLedger); what each keeps is bounded by the view. Once
// the hostile member is excluded, every honest member gets the lock.
//
// `go test ./mutex` runs the seeds (replicatedSeeds);
// `go test -run '^$' -fuzz '^FuzzReplicatedReceive$' ./mutex` searches
// further.
func FuzzReplicatedReceive(f *testing.F) {
	testutil.FuzzScripts(f, replicatedSeeds(), runLockScript)
}

func runLockScript(t *testing.T, data []byte) {
	s := testutil.NewScript(data)
	alg := []Algorithm{Central, TokenRing}[s.Byte()%2]
	r := &lockRun{s: s, g: newTGroup(t, alg, 1, 2, 3), next: 4}
	r.g.strict = true
	r.install([]uint64{hostileID, 1, 2, 3})
	r.bounded()
	for step := 0; step < 128 && !s.Done(); step++ {
		r.step()
		r.bounded()
	}
	r.excludeHostile()
}

// hostileID is the hostile member of FuzzReplicatedReceive, outsiderID a
// node outside the view.
const (
	hostileID  = 1000
	outsiderID = 1001
)

// lockRun is one run of FuzzReplicatedReceive's script.
type lockRun struct {
	s    *testutil.Script
	g    *tgroup
	next uint64 // the next joiner's ID
}

func (r *lockRun) honest() []uint64 {
	return slices.DeleteFunc(slices.Clone(r.g.view), func(id uint64) bool { return id == hostileID })
}

func (r *lockRun) member() uint64 {
	h := r.honest()
	return h[int(r.s.Byte())%len(h)]
}

// step does one thing of the script.
func (r *lockRun) step() {
	s, g := r.s, r.g
	switch op := s.Byte(); op % 8 {
	case 0:
		g.request(r.member())
	case 1:
		g.release(r.member())
	case 2:
		for n := 1 + s.Byte()%8; n > 0 && g.step(); n-- {
		}
	case 3:
		if slices.Contains(g.view, hostileID) {
			r.sequence(hostileID, r.forge())
		}
	case 4:
		r.sequence(outsiderID, r.forge())
	case 5: // a view change: the same members, in another order
		r.install(g.view)
	case 6: // a crash, or a join
		if h := r.honest(); s.Byte()%2 == 0 && len(h) > 1 {
			id := r.member()
			g.crash(id)
			r.install(g.view)
		} else if len(g.view) < 8 {
			g.add(r.next)
			r.install(append(slices.Clone(g.view), r.next))
			r.next++
		}
	case 7: // the hostile member leaves, or comes back
		if slices.Contains(g.view, hostileID) {
			r.install(slices.DeleteFunc(slices.Clone(g.view), func(id uint64) bool { return id == hostileID }))
		} else {
			r.install(append(slices.Clone(g.view), hostileID))
		}
	}
}

// install installs a view of members in a script-chosen order, and the
// hostile member's STATE.
func (r *lockRun) install(members []uint64) {
	ms := slices.Clone(members)
	for i := len(ms) - 1; i > 0; i-- {
		j := int(r.s.Byte()) % (i + 1)
		ms[i], ms[j] = ms[j], ms[i]
	}
	r.g.install(ms...)
	r.hostileState()
}

// hostileState has the hostile member send a STATE of the script's
// choosing for the view just installed (or none).
func (r *lockRun) hostileState() {
	if !slices.Contains(r.g.view, hostileID) {
		return
	}
	k := map[Algorithm]kind{Central: kindCState, TokenRing: kindTState}[r.g.alg]
	sel := r.s.Byte()
	if sel%4 == 0 {
		return
	}
	var c codec
	r.sequence(hostileID, c.append3(nil, k, uint64(sel>>2)%8, r.s.U64(r.context())))
}

// sequence puts a message from `from` among those not yet delivered, at a
// script-chosen place: the order the sequencer gives concurrent messages.
func (r *lockRun) sequence(from uint64, payload []byte) {
	g := r.g
	i := int(r.s.Byte()) % (len(g.log) + 1)
	g.log = slices.Insert(g.log, i, sent{from, payload})
	g.logf("%d sends %s, delivered %d of %d waiting", from, Describe(payload), i+1, len(g.log))
}

// context returns the numbers that matter now: the members, the honest
// machines' request numbers, the STATE flags.
func (r *lockRun) context() []uint64 {
	ctx := []uint64{0, 1, 2, 4, 7, hostileID, MaxClock - 1}
	for _, id := range r.g.view {
		ctx = append(ctx, id)
		if l := r.g.locks[id]; l != nil {
			ctx = append(ctx, parts(l).req)
		}
	}
	return ctx
}

// forge builds a lock message: a central server's or token ring's kind
// (either algorithm's, or any) with numbers that matter now (members,
// requests, flags) or any, or any bytes.
func (r *lockRun) forge() []byte {
	s, ctx := r.s, r.context()
	num := func() uint64 {
		if b := s.Byte(); b < 200 {
			return ctx[int(b)%len(ctx)]
		}
		return s.U64(ctx)
	}
	var c codec
	switch sel := s.Byte(); sel % 4 {
	case 0:
		return s.Bytes(24)
	case 1:
		return c.append3(nil, kind(s.Byte()%32), num(), num())
	default:
		kinds := map[Algorithm][]kind{Central: {kindCRequest, kindGrant, kindRelease, kindCState},
			TokenRing: {kindWant, kindPass, kindTState, kindTRelease}}[r.g.alg]
		return c.append3(nil, kinds[int(sel>>2)%4], num(), num())
	}
}

// parts returns the state every replicated machine has.
func parts(l Lock) *replicated {
	switch m := l.(type) {
	case *centralServer:
		return &m.replicated
	case *tokenRing:
		return &m.replicated
	}
	panic(fmt.Sprintf("%T is not a replicated lock", l))
}

// bounded fails if a machine keeps more than the view allows: a queue
// entry, a holder, a wish, a claim, a retired token, a STATE per member.
func (r *lockRun) bounded() {
	n := len(r.g.view)
	for id, l := range r.g.locks {
		var over bool
		switch m := l.(type) {
		case *centralServer:
			over = len(m.queue) > n || len(m.holders) > n
		case *tokenRing:
			over = len(m.wants) > n || len(m.claims) > n || len(m.retired) > n
		}
		if over || len(parts(l).known) > n {
			r.g.fail("node %d keeps more than a view of %d: %+v", id, n, l)
		}
	}
}

// excludeHostile installs a view of the honest members, then has each ask
// for the lock: every one gets it.
func (r *lockRun) excludeHostile() {
	g := r.g
	g.install(r.honest()...)
	for _, id := range g.view {
		g.release(id)
	}
	g.drain()
	want := map[uint64]bool{}
	for _, id := range g.view {
		g.request(id)
		want[id] = true
	}
	for range 2 * len(g.view) {
		g.drain()
		for _, id := range g.holders() {
			delete(want, id)
			g.release(id)
		}
	}
	if len(want) > 0 {
		g.fail("with the hostile member excluded, nodes %v never got the lock", slices.Sorted(maps.Keys(want)))
	}
}

// replicatedSeeds are the seed corpus's scripts: each algorithm with
// requests, releases, deliveries, the hostile member's STATE, GRANT or
// PASS, view changes, a crash and a join.
func replicatedSeeds() [][]byte {
	var seeds [][]byte
	for alg := range byte(2) {
		seeds = append(seeds,
			[]byte{alg, 0, 1, 1, 0, 0, 2, 7, 0, 2, 2, 7, 1, 0, 2, 7},                         // two ask; 9's STATE says nothing
			[]byte{alg, 1, 0, 0, 0, 1, 2, 7, 3, 6, 7, 1, 8, 3, 2, 7, 1, 0, 2, 7},             // a STATE released, then a GRANT or PASS to 1
			[]byte{alg, 5, 0, 0, 0, 1, 2, 7, 5, 1, 0, 1, 5, 2, 7, 6, 0, 1, 2, 7, 6, 1, 2, 7}, // 9 wants; a reorder; a crash; a join
			[]byte{alg, 2, 0, 1, 0, 0, 7, 1, 0, 2, 7, 4, 1, 20, 9, 9, 0, 2, 7})               // 9 leaves and comes back; an outsider
	}
	return seeds
}
