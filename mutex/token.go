package mutex

import (
	"slices"
	"time"
)

// The token ring (the lecture's "Token-Ring"): the view's members form a
// logical ring by ID, one token goes round it, and only its holder may
// enter, once per visit; it passes the token on when it leaves.
//
// Over a group the token does not circulate for nothing. Every message is
// multicast in total order to every member, the sender included, so every
// member knows where the token is and who waits for it: a member that
// wants the lock announces it (WANT) only when the token would not come by
// it anyway (it is parked, or the members waiting lie before it on the
// ring); a holder that does not want it passes it to its successor (PASS)
// only while someone waits, else keeps it (parked). So an entry costs the
// passes from where the token was to the requester, 0 to n−1 (1 under full
// load, 0 when the token is parked at the requester), plus one WANT when
// the token had to be woken.
//
// A lost token is regenerated exactly once. When the view changes, every
// member multicasts its part (STATE: whether it holds the token, wants
// it, or is inside), and every member rebuilds the same picture from
// those, in total order. Since every survivor applied the same PASSes in
// the old view, they agree whether the token's holder survived; if none
// of the members claims it, it was lost with a member that crashed or
// left, and the view's coordinator, the first member, holds a new one:
// every member concludes so alike, so no message is needed and no second
// token appears. Two sides of a partition that merge bring two tokens:
// the first claimant in the view's order keeps its token, the others are
// retired, and a member inside with a retired token stays inside until
// it releases (RELEASE), while the kept token waits for it.
//
// Messages, [kind, a, b] in msgpack:
//
//	WANT    [21, request, 0]  the sender wants the lock (its request's number)
//	PASS    [22, to, hops]    the holder passes the token to its successor; hops since the token was last used
//	STATE   [23, flags, request] the sender's part at the start of a view: 1 holds the token, 2 wants it, 4 is inside
//	RELEASE [24, request, 0]  the sender withdraws its WANT (request 0: it is out with a retired token)
const (
	kindWant     kind = 21
	kindPass     kind = 22
	kindTState   kind = 23
	kindTRelease kind = 24
)

// STATE flags.
const (
	flagToken  = 1
	flagWants  = 2
	flagInside = 4
)

// claim is a member's claim of the token in its STATE.
type claim struct {
	id     uint64
	inside bool
}

// tokenRing is one node's part of the token ring lock.
type tokenRing struct {
	replicated
	ring    []uint64 // the view's members by ID: the ring
	holder  uint64   // who has the token (0: not known yet in this view)
	hops    uint64   // passes since the token was last used
	wants   []entry  // members that announced WANT, in total order
	retired []uint64 // members inside with a retired token: the kept one waits for them
	claims  []claim  // STATE claims of the token in this view, in total order

	own       bool // this node has the token: since the picture last showed it here (a view that never completed keeps it)
	announced bool // this node's WANT for its request is out (or delivered)
	passing   bool // this node's PASS is out and not yet delivered
	unretired bool // this node's RELEASE of its retired token is out
}

func newTokenRing(self uint64) *tokenRing {
	return &tokenRing{replicated: replicated{self: self}}
}

// SetView implements Lock: the picture is rebuilt from the members'
// STATE messages, this node's first.
func (t *tokenRing) SetView(now time.Time, view string, members []uint64, _ []time.Time) {
	t.holder, t.hops, t.wants, t.retired, t.claims = 0, 0, t.wants[:0], t.retired[:0], t.claims[:0]
	t.passing, t.announced, t.unretired = false, false, false
	if !t.setView(now, view, members) {
		t.own = false // the group goes on without this node, and its token
		return
	}
	t.ring = slices.Sorted(slices.Values(t.members))
	var flags uint64
	if t.own {
		flags |= flagToken
	}
	switch t.state {
	case Wanted:
		flags |= flagWants
		t.announced = true
		t.msgs++
	case Held:
		flags |= flagInside
	}
	t.send(kindTState, flags, t.req)
}

// Request implements Lock.
func (t *tokenRing) Request(now time.Time) bool {
	if !t.beginRequest(now) {
		return false
	}
	t.announced = false
	t.act(now)
	return true
}

// Release implements Lock: the token goes on at once if someone waits.
func (t *tokenRing) Release(now time.Time) bool {
	switch {
	case t.state == Released:
		return false
	case t.state == Wanted && t.announced && t.hasView:
		t.send(kindTRelease, t.req, 0) // withdraw the WANT
	}
	t.leave(now, false) // a retired token's RELEASE goes out in act
	t.act(now)
	return true
}

// Receive implements Lock: one message, delivered in total order (this
// node's own too).
func (t *tokenRing) Receive(now time.Time, from uint64, payload []byte) {
	k, a, b, ok := t.input(from, payload, kindWant, kindTRelease)
	if !ok {
		return
	}
	switch k {
	case kindTState:
		t.onState(from, a, b)
	case kindWant:
		if !slices.Contains(t.known, from) || slices.ContainsFunc(t.wants, func(e entry) bool { return e.id == from }) {
			t.stats.Stale++ // one wish at a time; its STATE comes first
			break
		}
		t.wants = append(t.wants, entry{from, a})
	case kindPass:
		if !t.ready() || from != t.holder || a != t.successor(from) {
			t.stats.Stale++
			break
		}
		if from == t.self {
			t.passing = false
		}
		// The sender was served, or did not want it: its WANT is done.
		t.wants = slices.DeleteFunc(t.wants, func(e entry) bool { return e.id == from })
		t.holder, t.hops = a, b
		t.own = a == t.self
	case kindTRelease:
		n := len(t.wants) + len(t.retired)
		if a == 0 { // out with a retired token
			t.retired = slices.DeleteFunc(t.retired, func(id uint64) bool { return id == from })
		} else { // a WANT withdrawn
			t.wants = slices.DeleteFunc(t.wants, func(e entry) bool { return e == entry{from, a} })
		}
		if len(t.wants)+len(t.retired) == n {
			t.stats.Stale++
		}
	}
	t.act(now)
}

// onState applies a member's STATE; with the last one in, the picture is
// whole, and a lost token is regenerated at the coordinator.
func (t *tokenRing) onState(from, flags, req uint64) {
	if flags > flagToken|flagWants|flagInside || !t.know(from) {
		t.stats.Stale++ // unknown flags, or a second STATE in this view
		return
	}
	inside := flags&flagInside != 0
	switch {
	case flags&flagToken != 0:
		t.claims = append(t.claims, claim{from, inside})
	case inside:
		t.retired = append(t.retired, from) // still inside with a token retired before
	}
	if flags&flagWants != 0 {
		t.wants = append(t.wants, entry{from, req})
	}
	if !t.ready() {
		return
	}
	if len(t.claims) == 0 {
		t.holder = t.members[0] // lost with a member: the coordinator has a new one
		t.stats.Regenerated++
	} else {
		t.holder = t.claims[0].id
		for _, c := range t.claims[1:] { // a merge brought more tokens: retire them
			t.stats.Retired++
			if c.inside { // its holder stays inside until it releases; the kept token waits
				t.retired = append(t.retired, c.id)
			}
		}
	}
	t.own = t.holder == t.self
}

// act does what this node's part asks now: enter with the token, pass it
// on when someone waits, or announce a wish the token would not meet.
func (t *tokenRing) act(now time.Time) {
	if !t.ready() || t.holder == 0 {
		return
	}
	if t.state != Held && !t.unretired && slices.Contains(t.retired, t.self) {
		t.unretired = true // out with a retired token (perhaps before the picture said so): the kept one may go on
		t.send(kindTRelease, 0, 0)
	}
	if t.holder != t.self {
		if t.state == Wanted && !t.announced && !t.coming() {
			t.announced = true
			t.send(kindWant, t.req, 0)
			t.msgs++
		}
		return
	}
	switch {
	case t.passing || t.state == Held || len(t.retired) > 0:
	case t.state == Wanted && t.notPrimary:
		// Outside the primary component the token stays: nobody enters.
	case t.state == Wanted:
		t.msgs += int(t.hops)
		t.hops = 0
		t.enter(now)
	case slices.ContainsFunc(t.wants, func(e entry) bool { return e.id != t.self }):
		t.passing = true
		t.send(kindPass, t.successor(t.self), t.hops+1)
	}
}

// coming reports whether the token will come by this node without a
// WANT: some other member waits beyond it on the ring, seen from the
// holder, so the token passes here on its way.
func (t *tokenRing) coming() bool {
	d := t.distance(t.holder, t.self)
	return slices.ContainsFunc(t.wants, func(e entry) bool {
		return e.id != t.self && e.id != t.holder && t.distance(t.holder, e.id) > d
	})
}

// successor is the member after id on the ring.
func (t *tokenRing) successor(id uint64) uint64 {
	i, _ := slices.BinarySearch(t.ring, id)
	return t.ring[(i+1)%len(t.ring)]
}

// distance is how many passes take the token from a to b.
func (t *tokenRing) distance(a, b uint64) int {
	i, _ := slices.BinarySearch(t.ring, a)
	j, _ := slices.BinarySearch(t.ring, b)
	return (j - i + len(t.ring)) % len(t.ring)
}
