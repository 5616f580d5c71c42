package ping

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms1 = time.Millisecond

// sim is a LAN of pingers in the test's own time: pinger i ticks at
// i*ms1 + k*interval, every datagram takes latency, and drop decides
// what is lost.
type sim struct {
	t        *testing.T
	interval time.Duration
	latency  time.Duration
	ps       []*Pinger
	addrs    []netip.AddrPort
	stopAt   []time.Duration // a pinger stops (dies) here; 0 never
	finishAt []time.Duration // a pinger calls Finish here; 0 never
	finished []bool
	queue    []simMsg
	drop     func(m simMsg) bool
	events   [][]Event
}

type simMsg struct {
	at        time.Duration
	from, to  int
	multicast bool
	data      []byte
}

func newSim(t *testing.T, n int) *sim {
	s := &sim{t: t, interval: time.Second, latency: ms1 / 2, drop: func(simMsg) bool { return false },
		stopAt: make([]time.Duration, n), finishAt: make([]time.Duration, n), finished: make([]bool, n), events: make([][]Event, n)}
	for i := range n {
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, 0, byte(i + 1)}), 7470)
		p, err := New(Config{ID: fmt.Sprintf("h%d", i+1), Local: addr, Group: netip.MustParseAddrPort("239.192.72.68:7470"),
			Iface: "eth0", Subnets: []netip.Prefix{netip.MustParsePrefix("10.77.0.1/24")}, TTL: 1, Interval: s.interval})
		if err != nil {
			t.Fatal(err)
		}
		s.ps, s.addrs = append(s.ps, p), append(s.addrs, addr)
	}
	return s
}

func (s *sim) alive(i int, now time.Duration) bool { return s.stopAt[i] == 0 || now < s.stopAt[i] }

func (s *sim) send(from int, ds []Datagram, now time.Duration) {
	for _, d := range ds {
		for to, a := range s.addrs {
			if to == from || !d.Multicast && d.To != a {
				continue
			}
			m := simMsg{at: now + s.latency, from: from, to: to, multicast: d.Multicast, data: d.Data}
			if !s.drop(m) {
				s.queue = append(s.queue, m)
			}
		}
	}
	s.events[from] = append(s.events[from], s.ps[from].Events()...)
}

// run plays the LAN until end and returns each pinger's report then.
func (s *sim) run(end time.Duration) []Report {
	next := make([]time.Duration, len(s.ps))
	for i := range next {
		next[i] = time.Duration(i+1) * ms1
	}
	for {
		// The earliest of the ticks and the deliveries.
		now, who, tick := end, -1, false
		for i, at := range next {
			if at < now && s.alive(i, at) {
				now, who, tick = at, i, true
			}
		}
		slices.SortStableFunc(s.queue, func(a, b simMsg) int { return int(a.at - b.at) })
		if len(s.queue) > 0 && s.queue[0].at < now {
			now, tick = s.queue[0].at, false
		}
		if now >= end {
			break
		}
		if tick {
			if f := s.finishAt[who]; f != 0 && now >= f && !s.finished[who] {
				s.finished[who] = true
				s.send(who, s.ps[who].Finish(), now)
			}
			s.send(who, s.ps[who].Tick(now), now)
			next[who] += s.interval
			continue
		}
		m := s.queue[0]
		s.queue = s.queue[1:]
		if s.alive(m.to, now) {
			s.send(m.to, s.ps[m.to].Receive(m.data, s.addrs[m.from], m.multicast, now), now)
		}
	}
	var out []Report
	for i, p := range s.ps {
		out = append(out, p.Report(end))
		s.events[i] = append(s.events[i], p.Events()...)
	}
	return out
}

func peerOf(t *testing.T, r Report, id string) PeerReport {
	t.Helper()
	for _, p := range r.Peers {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("%s reports no %s: %+v", r.ID, id, r.Peers)
	return PeerReport{}
}

// TestPingerAllThrough: on a clean LAN every probe sent to a heard peer is
// answered, every probe of a peer is heard, and the diagnosis is ok.
func TestPingerAllThrough(t *testing.T) {
	s := newSim(t, 3)
	rs := s.run(10*time.Second + 500*ms1)
	for _, r := range rs {
		if !r.OK() || len(r.Peers) != 2 || r.Sent != 11 || r.Ignored.Total() != 0 {
			t.Errorf("%s: ok %v, %d peers, %d sent, ignored %+v", r.ID, r.OK(), len(r.Peers), r.Sent, r.Ignored)
		}
		for _, p := range r.Peers {
			for _, ps := range []PathReport{p.Multicast, p.Unicast} {
				if ps.Sent < 9 || ps.Answered != ps.Sent || ps.Heard < 9 || ps.Heard != ps.HeardOf || ps.RTTMin != ms1 || ps.RTTMax != ms1 {
					t.Errorf("%s on %s: %+v", r.ID, p.ID, ps)
				}
			}
		}
	}
	for i, evs := range s.events {
		for _, e := range evs {
			if e.Kind == EventLost || e.Kind == EventSilent {
				t.Errorf("h%d: %v", i+1, e)
			}
		}
	}
}

// TestPingerMulticastOneWay: multicast does not reach h3; both sides
// name the direction, and the third peer is fine.
func TestPingerMulticastOneWay(t *testing.T) {
	s := newSim(t, 3)
	s.drop = func(m simMsg) bool { return m.multicast && m.to == 2 }
	rs := s.run(10 * time.Second)
	for _, c := range []struct {
		r          Report
		peer, says string
	}{
		{rs[0], "h3", "multicast gets through from h3 to here, not from here to h3"},
		{rs[1], "h3", "multicast gets through from h3 to here, not from here to h3"},
		{rs[2], "h1", "multicast gets through from here to h1, not from h1 to here"},
		{rs[2], "h2", "multicast gets through from here to h2, not from h2 to here"},
	} {
		p := peerOf(t, c.r, c.peer)
		if p.Diagnosis.Cause != "multicast-one-way" || !strings.Contains(p.Diagnosis.Text, c.says) || c.r.OK() {
			t.Errorf("%s on %s: %s", c.r.ID, c.peer, p.Diagnosis)
		}
	}
	if p := peerOf(t, rs[0], "h2"); !p.Diagnosis.OK {
		t.Errorf("h1 on h2: %s", p.Diagnosis)
	}
	if p := peerOf(t, rs[0], "h3"); p.Multicast.Answered != 0 || p.Multicast.Sent < 8 || p.Multicast.Loss() != 1 || p.Unicast.Loss() != 0 {
		t.Errorf("h1 on h3: multicast %+v, unicast %+v", p.Multicast, p.Unicast)
	}
}

// TestPingerMulticastStops: multicast gets through for a while, then not
// (a snooping switch without a querier forgets the members), unicast goes
// on: the diagnosis says when it stopped and names IGMP snooping.
func TestPingerMulticastStops(t *testing.T) {
	s := newSim(t, 2)
	s.drop = func(m simMsg) bool { return m.multicast && m.at > 5*time.Second }
	rs := s.run(12 * time.Second)
	for _, r := range rs {
		d := r.Peers[0].Diagnosis
		if d.Cause != "igmp-snooping" || !strings.Contains(d.Text, "multicast got through for 4.") || !strings.Contains(d.Text, "then not for the last") {
			t.Errorf("%s: %s", r.ID, d)
		}
	}
}

// TestPingerSilent: a peer that dies without saying it is done is told
// silent once, and its diagnosis says so; one that finishes is neither.
func TestPingerSilent(t *testing.T) {
	s := newSim(t, 3)
	s.stopAt[1] = 4 * time.Second
	s.finishAt[2] = 4 * time.Second
	s.stopAt[2] = 4*time.Second + 100*ms1
	rs := s.run(10 * time.Second)
	if d := peerOf(t, rs[0], "h2").Diagnosis; d.Cause != "silent" || rs[0].OK() {
		t.Errorf("h1 on h2: %s", d)
	}
	if d := peerOf(t, rs[0], "h3").Diagnosis; !d.OK {
		t.Errorf("h1 on h3 (done): %s", d)
	}
	var silent, done []string
	for _, e := range s.events[0] {
		switch e.Kind {
		case EventSilent:
			silent = append(silent, e.Peer)
		case EventDone:
			done = append(done, e.Peer)
		}
	}
	if !slices.Equal(silent, []string{"h2"}) || !slices.Equal(done, []string{"h3"}) {
		t.Errorf("h1's events: silent %v, done %v", silent, done)
	}
}

// TestPingerEnding: pingers that finish answer on until every peer is
// done, and none of the probes of the last rounds counts as lost.
func TestPingerEnding(t *testing.T) {
	s := newSim(t, 2)
	s.finishAt[0] = 3 * time.Second
	s.finishAt[1] = 6 * time.Second
	if s.ps[0].PeersDone(0) != true {
		t.Error("no peer heard: PeersDone should be true")
	}
	rs := s.run(6*time.Second + 500*ms1)
	if !s.ps[0].PeersDone(6*time.Second+500*ms1) || !s.ps[1].PeersDone(6*time.Second+500*ms1) {
		t.Error("both are done, PeersDone says otherwise")
	}
	for _, r := range rs {
		if !r.OK() || r.Peers[0].Multicast.Loss() != 0 || r.Peers[0].Unicast.Loss() != 0 {
			t.Errorf("%s: %+v", r.ID, r.Peers[0])
		}
	}
	if rs[0].Sent != 3 || rs[1].Sent != 6 {
		t.Errorf("sent %d and %d probes; want 3 and 6", rs[0].Sent, rs[1].Sent)
	}
}

// TestPingerLateAnswer: a probe counts as lost when the peer is heard
// after it without answering, and as answered (late) when the answer comes.
func TestPingerLateAnswer(t *testing.T) {
	a, b := netip.MustParseAddrPort("10.77.0.1:7470"), netip.MustParseAddrPort("10.77.0.2:7470")
	p, _ := New(Config{ID: "h1", Local: a, Interval: time.Second})
	probe := func(seq uint32) []byte { return Probe{Kind: ProbeMulticast, Seq: seq, ID: "h2"}.Append(nil) }
	p.Receive(probe(1), b, true, 10*ms1)
	p.Tick(time.Second)
	p.Receive(probe(2), b, true, 1100*ms1) // within the guard: no verdict
	if evs := p.Events(); len(evs) != 1 || evs[0].Kind != EventJoined {
		t.Fatalf("events %v", evs)
	}
	p.Receive(probe(3), b, true, 1300*ms1)
	evs := p.Events()
	if len(evs) != 2 || evs[0].Kind != EventLost || evs[1].Kind != EventLost {
		t.Fatalf("after the guard: events %v; want both probes lost", evs)
	}
	echo := Probe{Kind: EchoMulticast, Seq: 1, Sent: uint64(time.Second), ID: "h2"}.Append(nil)
	p.Receive(echo, b, false, 1700*ms1)
	evs = p.Events()
	if len(evs) != 1 || evs[0].Kind != EventAnswer || !evs[0].Late || evs[0].RTT != 700*ms1 || evs[0].Path != Multicast {
		t.Fatalf("the late echo: events %v", evs)
	}
	p.Receive(echo, b, false, 1800*ms1) // a duplicate
	r := p.Report(2 * time.Second)
	if m, u := r.Peers[0].Multicast, r.Peers[0].Unicast; m.Sent != 1 || m.Answered != 1 || u.Sent != 1 || u.Answered != 0 || m.Heard != 3 || m.HeardOf != 3 {
		t.Errorf("multicast %+v, unicast %+v", m, u)
	}
	if got := evs[0].String(); got != "h2 (10.77.0.2) multicast: seq=1 time=700.000 ms (late)" {
		t.Errorf("the line: %q", got)
	}
}

// TestPingerIgnores: what is not a valid datagram of a peer, or would
// make the table grow past its bound, is counted and changes nothing else.
func TestPingerIgnores(t *testing.T) {
	a := netip.MustParseAddrPort("10.77.0.1:7470")
	p, _ := New(Config{ID: "h1", Local: a, Interval: time.Second, MaxPeers: 2})
	from := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, 0, byte(i)}), 7470)
	}
	mprobe := Probe{Kind: ProbeMulticast, Seq: 1, ID: "x"}.Append(nil)
	other := Probe{Kind: ProbeMulticast, Seq: 1, ID: "x"}.Append(nil)
	other[4] = 9
	p.Tick(ms1) // multicast seq 1
	p.Receive([]byte("junk"), from(2), true, 2*ms1)
	p.Receive(other, from(2), true, 2*ms1)
	p.Receive(mprobe, a, true, 2*ms1)                                                                        // own
	p.Receive(mprobe, from(2), false, 2*ms1)                                                                 // a multicast probe by unicast
	p.Receive(Probe{Kind: EchoUnicast, Seq: 1, ID: "x"}.Append(nil), from(2), true, 2*ms1)                   // an echo to the group
	p.Receive(Probe{Kind: EchoMulticast, Seq: 2, ID: "x"}.Append(nil), from(2), false, 2*ms1)                // of a probe not sent
	p.Receive(Probe{Kind: EchoMulticast, Seq: 1, Sent: 1 << 40, ID: "x"}.Append(nil), from(2), false, 2*ms1) // sent in the future
	p.Receive(Probe{Kind: EchoUnicast, Seq: 1, ID: "x"}.Append(nil), from(2), false, 2*ms1)                  // no unicast probe sent to it yet
	p.Receive(mprobe, netip.AddrPortFrom(from(2).Addr(), 0), true, 2*ms1)
	want := Ignored{Malformed: 2, OtherVersion: 1, Own: 1, Misdirected: 2, BadEcho: 3}
	r := p.Report(3 * ms1)
	if r.Ignored != want || p.Heard() != 0 || len(r.Peers) != 0 {
		t.Errorf("ignored %+v, want %+v; %d heard, %d in the table", r.Ignored, want, p.Heard(), len(r.Peers))
	}
	for i := 3; i <= 6; i++ {
		out := p.Receive(mprobe, from(i), true, 4*ms1)
		if want := map[bool]int{true: 1, false: 0}[i <= 4]; len(out) != want {
			t.Errorf("peer %d: %d datagrams out, want %d", i, len(out), want)
		}
	}
	r = p.Report(5 * ms1)
	if len(r.Peers) != 2 || r.Ignored.PeerLimit != 2 {
		t.Errorf("%d peers, %d over the limit; want 2 and 2", len(r.Peers), r.Ignored.PeerLimit)
	}
}

// TestPingerSeed: a peer given with --peer is probed by unicast before it
// is heard, and one never heard is diagnosed as not answering.
func TestPingerSeed(t *testing.T) {
	a, seed := netip.MustParseAddrPort("10.77.0.1:7470"), netip.MustParseAddrPort("10.1.0.5:7470")
	p, _ := New(Config{ID: "h1", Local: a, Interval: time.Second, Seeds: []netip.AddrPort{seed, seed, a}, Subnets: []netip.Prefix{netip.MustParsePrefix("10.77.0.1/24")}})
	out := p.Tick(ms1)
	if len(out) != 2 || !out[0].Multicast || out[1].To != seed {
		t.Fatalf("first tick: %+v", out)
	}
	p.SendFailed(seed, fmt.Errorf("network is unreachable"))
	r := p.Report(2 * time.Second)
	if len(r.Peers) != 1 || r.OK() || r.Peers[0].Diagnosis.Cause != "no-answer" || !strings.Contains(r.Peers[0].Diagnosis.String(), "network is unreachable") {
		t.Errorf("%+v", r.Peers)
	}
}
