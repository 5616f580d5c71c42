package mutex

import (
	"errors"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

// ids returns 1..n.
func ids(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// group returns a network of n nodes in one view.
func group(t *testing.T, opt Options, n int) *lan {
	l := newLAN(t, opt, time.Millisecond)
	l.add(ids(n)...)
	l.install(ids(n)...)
	return l
}

// lastEvent returns id's last event of kind k.
func lastEvent(t *testing.T, l *lan, id uint64, k EventKind) Event {
	t.Helper()
	evs := l.Nodes[id].Events
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == k {
			return evs[i]
		}
	}
	t.Fatalf("node %d: no %v event\n%s", id, k, l.Tail())
	return Event{}
}

// TestMessagesPerEntry checks Ricart–Agrawala's cost, 2(n−1) messages per
// entry (n−1 REQUESTs, n−1 REPLYs), on the network and in the Acquired
// event: one node at a time, and all at once.
func TestMessagesPerEntry(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8} {
		want := 2 * (n - 1)
		l := group(t, Options{}, n)
		wantDatagrams := n // one multicast request, n−1 replies
		if n <= 2 {
			wantDatagrams = want // one member to ask: an addressed request
		}
		for _, id := range ids(n) {
			before, datagrams := l.carried.Total(), l.datagrams
			l.request(id)
			l.drain()
			if got := int(l.carried.Total() - before); got != want {
				t.Errorf("n=%d node %d: %d messages, want %d", n, id, got, want)
			}
			if got := l.datagrams - datagrams; got != wantDatagrams {
				t.Errorf("n=%d node %d: %d datagrams, want %d", n, id, got, wantDatagrams)
			}
			if e := lastEvent(t, l, id, Acquired); e.Messages != want || e.Datagrams != wantDatagrams || e.Wait != time.Duration(min(n-1, 1))*2*time.Millisecond {
				t.Errorf("n=%d node %d: %+v, want %d messages, %d datagrams and a round trip", n, id, e, want, wantDatagrams)
			}
			l.release(id)
			l.drain()
		}

		l = group(t, Options{}, n)
		before := l.carried.Total()
		for _, id := range ids(n) {
			l.request(id)
		}
		order := releaseAll(t, l)
		if !slices.Equal(order, ids(n)) {
			t.Errorf("n=%d, all at once: entered in order %v, want by ID (equal timestamps)", n, order)
		}
		if got := int(l.carried.Total() - before); got != n*want {
			t.Errorf("n=%d, all at once: %d messages, want %d", n, got, n*want)
		}
		for _, id := range ids(n) {
			if e := lastEvent(t, l, id, Acquired); e.Messages != want {
				t.Errorf("n=%d, all at once, node %d: %d messages, want %d", n, id, e.Messages, want)
			}
		}
	}
}

// releaseAll drains the network and releases each holder in turn until
// nobody holds or wants the lock; it returns the order of entries and
// fails if a request is stuck.
func releaseAll(t *testing.T, l *lan) []uint64 {
	t.Helper()
	var order []uint64
	for {
		l.drain()
		hs := l.holders()
		if len(hs) == 0 {
			break
		}
		order = append(order, hs...)
		for _, id := range hs {
			l.release(id)
		}
	}
	for _, id := range l.IDs() {
		if st := l.Nodes[id].M.State(); st != Released {
			t.Fatalf("node %d is %v with nothing in flight and no holder\n%s", id, st, l.Tail())
		}
	}
	return order
}

// TestDeferral: a holder defers a request and answers it on release; of
// two concurrent requests the earlier (timestamp, ID) goes first, whatever
// the order of arrival.
func TestDeferral(t *testing.T) {
	l := group(t, Options{}, 3)
	l.request(1)
	l.drain()
	l.request(3)
	l.drain()
	if e := lastEvent(t, l, 1, Deferred); e.Peer != 3 || e.Clock != 3 {
		t.Errorf("deferred %+v, want node 3's request ts 3", e)
	}
	if st := l.Nodes[3].M.State(); st != Wanted {
		t.Fatalf("node 3 is %v while 1 holds", st)
	}
	l.request(2) // ts 4 > 3: after node 3
	if got := releaseAll(t, l); !slices.Equal(got, []uint64{1, 3, 2}) {
		t.Errorf("entries %v, want [1 3 2]", got)
	}
	if e := lastEvent(t, l, 1, Exited); e.Held <= 0 || e.Lost || e.Clock != 1 {
		t.Errorf("node 1 released %+v, want ts 1 held a while", e)
	}
}

// TestJoinerDuringRequest is the schedule that breaks the textbook
// algorithm under joins: node 1 (clock advanced by earlier entries) waits
// for holder 2 when 3 joins and asks with a lower timestamp. 1 and 2
// reply to 3's earlier request. If 1 does not ask 3 too, 2's release
// lets both 1 and 3 in. With the joiner asked, 3 defers 1 and they enter
// one after the other.
func TestJoinerDuringRequest(t *testing.T) {
	for _, naive := range []bool{false, true} {
		l := newLAN(t, Options{}, time.Millisecond)
		l.naiveJoin, l.tolerate = naive, true
		l.add(1, 2)
		l.install(1, 2)
		for range 3 { // raise the clocks
			for _, id := range []uint64{1, 2} {
				l.request(id)
				l.drain()
				l.release(id)
			}
		}
		l.request(2)
		l.drain()
		l.request(1)
		l.drain() // 1 waits for 2
		l.add(3)
		l.install(1, 2, 3)
		l.request(3)
		if ts1, ts3 := l.Nodes[1].M.ts, l.Nodes[3].M.ts; ts3 >= ts1 {
			t.Fatalf("joiner's timestamp %d, want below node 1's %d", ts3, ts1)
		}
		l.drain()
		l.release(2)
		l.drain()
		if naive {
			if l.violation == nil {
				t.Errorf("without asking the joiner: no two holders; the schedule lost its point\n%s", l.Tail())
			}
			continue
		}
		if l.violation != nil {
			t.Fatalf("%v\n%s", l.violation, l.Tail())
		}
		if got := releaseAll(t, l); !slices.Equal(got, []uint64{3, 1}) {
			t.Errorf("entries %v, want [3 1]", got)
		}
		// The view change sent the request again to 2, still needed (the
		// view change could have lost it): three REQUESTs, two REPLYs.
		if e := lastEvent(t, l, 1, Acquired); e.Messages != 5 {
			t.Errorf("node 1: %d messages, want 5", e.Messages)
		}
	}
}

// TestHolderLeaves: the needed replies shrink with the view; a crashed
// holder's deferred replies are no longer waited for.
func TestHolderLeaves(t *testing.T) {
	l := group(t, Options{}, 4)
	l.request(4)
	l.drain()
	l.request(1)
	l.request(2)
	l.drain()
	l.Crash(4)
	l.install(1, 2, 3)
	if got := releaseAll(t, l); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("entries %v, want [1 2]", got)
	}
}

// TestQuorumPartition splits a cluster of five (Quorum 5) into three and
// two while node 4 holds: 4 loses the lock, and of requests on both sides
// only the majority's are granted until the partition heals. Without a
// quorum both sides grant.
func TestQuorumPartition(t *testing.T) {
	for _, quorum := range []int{5, 0} {
		l := group(t, Options{Quorum: quorum}, 5)
		l.global = quorum > 0
		l.request(4)
		l.drain()
		l.install(1, 2, 3)
		l.install(4, 5)
		if quorum == 0 {
			if l.Nodes[4].M.State() != Held {
				t.Fatalf("without a quorum, node 4 lost the lock in the minority")
			}
			l.release(4)
			for _, id := range ids(5) {
				l.request(id)
			}
			l.drain()
			if got := l.holders(); len(got) != 2 || got[0] > 3 || got[1] < 4 {
				t.Errorf("without a quorum: holders %v, want one per side", got)
			}
			continue
		}
		if e := lastEvent(t, l, 4, Exited); !e.Lost || e.Clock == 0 {
			t.Errorf("node 4: %+v, want the lock lost", e)
		}
		if l.release(4) {
			t.Error("Release after the lock was lost returned true")
		}
		for _, id := range ids(5) {
			l.request(id)
		}
		order := releaseAllOf(t, l, 1, 2, 3)
		if !slices.Equal(order, []uint64{1, 2, 3}) {
			t.Errorf("majority entries %v, want [1 2 3]", order)
		}
		for _, id := range []uint64{4, 5} {
			if st := l.Nodes[id].M.State(); st != Wanted {
				t.Errorf("node %d in the minority is %v, want wanted", id, st)
			}
		}
		l.install(ids(5)...)
		if got := releaseAll(t, l); len(got) != 2 || !slices.Contains(got, 4) || !slices.Contains(got, 5) {
			t.Errorf("after the merge: entries %v, want 4 and 5", got)
		}
	}
}

// TestQuorumOverlappingViews is the schedule that breaks a quorum counted
// by views alone. Node 5 holds the lock in the view [3 4 5], a majority
// of 5. Node 4 then moves into a view [1 2 4], also a majority, while 3
// and 5 still count it in theirs, and 2 asks there. With the lease, 4
// answers only after its quarantine, by which time 5 stopped hearing it
// and lost the lock: never two holders. Without the lease, or without
// the quarantine (5 still counts 4 for a lease after 4 moved), 2 enters
// while 5 holds.
func TestQuorumOverlappingViews(t *testing.T) {
	for _, without := range []string{"", "lease", "quarantine"} {
		l := newLAN(t, Options{Quorum: 5}, time.Millisecond)
		l.noLease, l.noQuiet, l.global, l.tolerate = without == "lease", without == "quarantine", true, without != ""
		l.add(ids(5)...)
		l.install(1, 2)
		l.install(3, 4, 5)
		l.drain()
		l.request(5)
		l.drain()
		if st := l.Nodes[5].M.State(); st != Held {
			t.Fatalf("node 5 is %v, want held", st)
		}
		start := l.Now
		l.installOn("9.1", []uint64{1, 2, 4}, 1, 2, 4)
		l.request(2)
		l.drain()
		if without != "" {
			if l.violation == nil {
				t.Fatalf("without the %s, no two holders: the test shows nothing\n%s", without, l.Tail())
			}
			continue
		}
		lost := lastEvent(t, l, 5, Exited)
		got := lastEvent(t, l, 2, Acquired)
		if !lost.Lost || l.Nodes[2].M.State() != Held {
			t.Fatalf("node 5: %+v; node 2 is %v, want it to hold\n%s", lost, l.Nodes[2].M.State(), l.Tail())
		}
		if q := testLease * 3 / 2; got.Wait < q {
			t.Errorf("node 2 waited %v, less than the quarantine %v", got.Wait, q)
		}
		if l.Now.Sub(start) > 5*testLease {
			t.Errorf("granted %v after the view change", l.Now.Sub(start))
		}
	}
}

// releaseAllOf is releaseAll for the members of one side: it returns
// when none of them holds or wants the lock.
func releaseAllOf(t *testing.T, l *lan, side ...uint64) []uint64 {
	t.Helper()
	var order []uint64
	for {
		l.drain()
		hs := l.holders()
		if len(hs) == 0 {
			break
		}
		for _, id := range hs {
			if !slices.Contains(side, id) {
				t.Fatalf("node %d, outside %v, holds\n%s", id, side, l.Tail())
			}
			order = append(order, id)
			l.release(id)
		}
	}
	for _, id := range side {
		if st := l.Nodes[id].M.State(); st != Released {
			t.Fatalf("node %d is %v with nothing in flight\n%s", id, st, l.Tail())
		}
	}
	return order
}

// TestQuorumAlone: a node alone with Quorum 3 waits; two of three grant at
// once, without a message.
func TestQuorumAlone(t *testing.T) {
	m := NewRA(Options{Self: 1, Quorum: 3, Lease: 100 * time.Millisecond})
	m.SetView(t0, "1.1", []uint64{1}, nil)
	if !m.Request(t0) || m.State() != Wanted || len(m.TakeOutput()) != 0 {
		t.Fatalf("alone below the quorum: %v", m.State())
	}
	if m.Request(t0) {
		t.Error("Request while wanted returned true")
	}
	m.SetView(t0.Add(time.Second), "2.1", []uint64{1, 5}, nil)
	if m.State() != Wanted {
		t.Fatalf("a joiner's reply is needed; state %v", m.State())
	}
	m.SetView(t0.Add(time.Second), "3.1", []uint64{1, 5, 1}, nil)
	m.SetView(t0.Add(time.Second), "3.1", []uint64{5, 1}, nil) // the same view again
	out := m.TakeOutput()
	if len(out) != 2 || out[0].To != 5 {
		t.Fatalf("sent %v, want the request to 5, again on the second view", out)
	}
	m.Heard(5, t0.Add(2*time.Second))
	m.Receive(t0.Add(2*time.Second), 5, payload(kindReply, 1))
	m.Receive(t0.Add(2*time.Second), 5, payload(kindReply, 1))
	if m.State() != Held {
		t.Fatalf("state %v, want held", m.State())
	}
	evs := m.TakeEvents()
	if e := evs[len(evs)-1]; e.Kind != Acquired || e.Wait != 2*time.Second || e.Messages != 3 || e.View != "3.1" {
		t.Errorf("%+v", e)
	}
	if s := m.Stats(); s.Stale != 1 || s.Received.Reply != 2 || s.Sent.Request != 2 {
		t.Errorf("stats %+v", s)
	}
	m.SetView(t0.Add(3*time.Second), "4.1", []uint64{1}, nil)
	if evs := m.TakeEvents(); m.State() != Released || len(evs) != 1 || !evs[0].Lost || evs[0].Held != time.Second {
		t.Errorf("below the quorum: %v, %+v", m.State(), evs)
	}
}

func payload(k kind, ts uint64) []byte {
	var c codec
	return c.append(nil, message{k, ts})
}

// TestWithdraw: Release withdraws a pending request and answers what it
// deferred; a late reply to the withdrawn request does not count for the
// next one.
func TestWithdraw(t *testing.T) {
	m := NewRA(Options{Self: 1})
	m.SetView(t0, "1.1", []uint64{1, 2, 3}, nil)
	m.Request(t0) // ts 1
	m.Receive(t0, 3, payload(kindRequest, 5))
	m.Receive(t0, 2, payload(kindReply, 1))
	m.TakeOutput()
	if !m.Release(t0.Add(time.Second)) || m.State() != Released {
		t.Fatal("withdraw failed")
	}
	if out := m.TakeOutput(); len(out) != 1 || out[0].To != 3 || string(out[0].Payload) != string(payload(kindReply, 5)) {
		t.Fatalf("withdraw sent %v, want the deferred REPLY ts 5 to 3", out)
	}
	evs := m.TakeEvents()
	if e := evs[len(evs)-1]; e.Kind != Withdrawn || e.Clock != 1 || e.Wait != time.Second {
		t.Errorf("%+v", e)
	}
	if m.Release(t0) {
		t.Error("second Release returned true")
	}
	m.Request(t0) // ts 8: clock 7 after the REQUEST 5 and the REPLY
	if m.Clock() != 8 || m.ts != 8 {
		t.Fatalf("clock %d, ts %d, want 8", m.Clock(), m.ts)
	}
	m.Receive(t0, 3, payload(kindReply, 1)) // late, to the withdrawn request
	m.Receive(t0, 2, payload(kindReply, 8))
	if m.State() != Wanted {
		t.Fatal("a reply to the withdrawn request counted")
	}
	m.Receive(t0, 3, payload(kindReply, 8))
	if m.State() != Held {
		t.Fatalf("state %v, want held", m.State())
	}
	if s := m.Stats(); s.Stale != 1 || s.Withdrawn != 1 || s.Acquired != 1 || s.Deferred != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestReceiveIgnores: junk, strangers and this node itself.
func TestReceiveIgnores(t *testing.T) {
	m := NewRA(Options{Self: 1})
	m.Receive(t0, 2, payload(kindRequest, 3)) // no view yet
	m.SetView(t0, "1.1", []uint64{2, 1}, nil)
	m.Receive(t0, 9, payload(kindRequest, 3))
	m.Receive(t0, 1, payload(kindRequest, 3))
	m.Receive(t0, 2, []byte{0x92, 3, 1})
	m.Receive(t0, 2, nil)
	if s := m.Stats(); s.Foreign != 3 || s.Malformed != 2 || s.Received.Total() != 0 || m.Clock() != 0 || len(m.TakeOutput()) != 0 {
		t.Errorf("stats %+v, clock %d", s, m.Clock())
	}
}

// TestLeaveView: a view without this node takes the lock away; a request
// pending then goes to every member of the next view.
func TestLeaveView(t *testing.T) {
	m := NewRA(Options{Self: 1})
	m.SetView(t0, "1.1", []uint64{1}, nil)
	m.Request(t0)
	m.SetView(t0, "2.2", []uint64{2, 3}, nil)
	if m.State() != Released || m.Stats().Lost != 1 {
		t.Fatalf("out of the view: %v, %+v", m.State(), m.Stats())
	}
	m.Request(t0)
	m.TakeOutput()
	m.SetView(t0, "3.1", []uint64{1, 2, 3}, nil)
	if out := m.TakeOutput(); len(out) != 1 || out[0].To != 0 {
		t.Fatalf("sent %v, want the request to 2 and 3 in one multicast", out)
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{}, {Self: 1, Quorum: -1}} {
		if err := o.Validate(); !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("New with Self 0 did not panic")
		}
	}()
	NewRA(Options{})
}
