package ping

import (
	"errors"
	"net/netip"
	"slices"
	"time"
)

// Config configures a Pinger.
type Config struct {
	ID       string         // this pinger's name in the others' reports (CheckID)
	Local    netip.AddrPort // the address this pinger's datagrams come from
	Group    netip.AddrPort // where the multicast probes go
	Iface    string         // the interface, for the diagnoses
	Subnets  []netip.Prefix // the interface's IPv4 prefixes, for the diagnoses
	TTL      int            // of the multicast probes, for the diagnoses
	Interval time.Duration  // between probes
	Seeds    []netip.AddrPort
	MaxPeers int // default DefaultMaxPeers
}

// DefaultMaxPeers bounds the peer table: datagrams from further addresses
// are ignored and counted.
const DefaultMaxPeers = 256

// ringSize is how many probes per peer and path wait for their answer; a
// probe pushed out unanswered while the peer said nothing at all is left
// out of the counts (the peer is gone, or the link is down both ways,
// which the silence says already).
const ringSize = 64

// silentAfter is how many intervals without a word make a peer silent.
const silentAfter = 3

// Path is how a probe travelled out: by multicast or by unicast. The answer
// always comes back by unicast.
type Path uint8

const (
	Multicast Path = iota
	Unicast
)

func (p Path) String() string {
	if p == Multicast {
		return "multicast"
	}
	return "unicast"
}

// Datagram is one datagram for the caller to send.
type Datagram struct {
	Multicast bool           // to the group; else to To
	To        netip.AddrPort // a peer, when not Multicast
	Data      []byte
}

// EventKind names the events of a run, the lines printed while it goes.
type EventKind string

const (
	EventJoined EventKind = "joined" // a peer was heard for the first time
	EventAnswer EventKind = "answer" // a probe was answered
	EventLost   EventKind = "lost"   // a probe went unanswered while the peer was heard after it
	EventSilent EventKind = "silent" // nothing heard from a peer for silentAfter intervals
	EventDone   EventKind = "done"   // a peer sent its last probe
)

// Event is something that happened during a run.
type Event struct {
	Kind EventKind
	At   time.Duration // since the start
	Peer string        // its ID
	Addr netip.AddrPort
	Path Path          // answer, lost: the probe's; joined: how the peer was first heard
	Seq  uint32        // answer, lost
	RTT  time.Duration // answer
	Late bool          // answer: the probe had been counted lost
}

// Ignored counts the datagrams a pinger dropped, by reason.
type Ignored struct {
	Malformed    int `json:"malformed"`     // not ours, truncated, or out of bounds
	OtherVersion int `json:"other_version"` // huddle ping of another version
	Own          int `json:"own"`           // from this pinger's own address (multicast loopback)
	PeerLimit    int `json:"peer_limit"`    // from a new address with the peer table full
	BadEcho      int `json:"bad_echo"`      // an echo of a probe never sent, or of a time to come
	Misdirected  int `json:"misdirected"`   // a multicast probe by unicast, or a unicast kind by multicast
}

// Total is the sum of the counts.
func (i Ignored) Total() int {
	return i.Malformed + i.OtherVersion + i.Own + i.PeerLimit + i.BadEcho + i.Misdirected
}

// Pinger is huddle ping without its sockets: it makes the datagrams to
// send, takes those received, and keeps the counts. The caller passes the
// time since the start; a Pinger reads no clock, so tests drive it.
type Pinger struct {
	cfg     Config
	guard   time.Duration // an answer may take this long; see decide
	mseq    uint32        // multicast probes sent
	done    bool
	peers   map[netip.AddrPort]*peer
	order   []*peer // in the order first heard (or seeded)
	ignored Ignored
	events  []Event
	buf     []byte
}

type peer struct {
	id      string
	addr    netip.AddrPort
	seed    bool // given with --peer: probed before it is heard
	heard   bool
	first   time.Duration // first datagram from it
	last    time.Duration // latest datagram from it
	hears   uint16        // how many peers it hears, says its latest datagram
	done    bool          // it sent its last probe
	silent  bool          // EventSilent told, nothing heard since
	useq    uint32        // unicast probes sent to it
	sendErr string        // the latest error sending to it
	paths   [2]pathState  // by Path
}

type pathState struct {
	recs     [ringSize]rec
	sent     int // probes decided: answered or lost
	answered int
	rttMin   time.Duration
	rttMax   time.Duration
	rttSum   time.Duration
	heard    int // the peer's probes of this path received
	firstSeq uint32
	lastSeq  uint32
	in       bool          // a datagram from the peer came by this path
	lastIn   time.Duration // the latest
	lastOut  time.Duration // the latest answer to a probe sent by this path
}

type recState uint8

const (
	recFree recState = iota
	recPending
	recAnswered
	recLost
)

type rec struct {
	seq   uint32
	at    time.Duration
	state recState
}

// New returns a Pinger; cfg.ID must pass CheckID and cfg.Interval be above 0.
func New(cfg Config) (*Pinger, error) {
	if err := CheckID(cfg.ID); err != nil {
		return nil, err
	}
	if cfg.Interval <= 0 {
		return nil, errors.New("ping: the interval must be above 0")
	}
	if cfg.MaxPeers <= 0 {
		cfg.MaxPeers = DefaultMaxPeers
	}
	p := &Pinger{cfg: cfg, peers: map[netip.AddrPort]*peer{},
		// Half an interval, at most 250ms: far above a LAN's round trip,
		// and below the next probe.
		guard: min(cfg.Interval/2, 250*time.Millisecond)}
	for _, s := range cfg.Seeds {
		if s != cfg.Local && p.peers[s] == nil && len(p.order) < cfg.MaxPeers {
			pe := &peer{addr: s, id: s.Addr().String(), seed: true}
			p.peers[s] = pe
			p.order = append(p.order, pe)
		}
	}
	return p, nil
}

// Events returns the events since the last call.
func (p *Pinger) Events() []Event {
	ev := p.events
	p.events = nil
	return ev
}

// Sent is the number of multicast probes sent.
func (p *Pinger) Sent() int { return int(p.mseq) }

// Heard is the number of peers heard.
func (p *Pinger) Heard() int {
	n := 0
	for _, pe := range p.order {
		if pe.heard {
			n++
		}
	}
	return n
}

// PeersDone says whether every peer heard has sent its last probe or went
// silent, so that a pinger done too need not answer longer.
func (p *Pinger) PeersDone(now time.Duration) bool {
	for _, pe := range p.order {
		if pe.heard && !pe.done && now-pe.last < silentAfter*p.cfg.Interval {
			return false
		}
	}
	return true
}

// Tick is one interval: a probe to the group and one to each peer, or,
// once Finish was called, the Done datagrams. It tells peers silent.
func (p *Pinger) Tick(now time.Duration) []Datagram {
	for _, pe := range p.order {
		if pe.heard && !pe.done && !pe.silent && now-pe.last >= silentAfter*p.cfg.Interval {
			pe.silent = true
			p.event(Event{Kind: EventSilent, At: now}, pe)
		}
	}
	if p.done {
		return p.sendDone()
	}
	p.mseq++
	out := []Datagram{{Multicast: true, Data: p.encode(Probe{Kind: ProbeMulticast, Seq: p.mseq, Sent: uint64(now)})}}
	for _, pe := range p.order {
		if pe.heard {
			pe.paths[Multicast].record(p.mseq, now)
		}
		pe.useq++
		pe.paths[Unicast].record(pe.useq, now)
		out = append(out, Datagram{To: pe.addr, Data: p.encode(Probe{Kind: ProbeUnicast, Seq: pe.useq, Sent: uint64(now)})})
	}
	return out
}

// Finish ends the probing: it returns the first Done datagrams, and every
// Tick after it more of them. The Pinger still answers probes.
func (p *Pinger) Finish() []Datagram {
	p.done = true
	return p.sendDone()
}

func (p *Pinger) sendDone() []Datagram {
	out := []Datagram{{Multicast: true, Data: p.encode(Probe{Kind: Done})}}
	for _, pe := range p.order {
		out = append(out, Datagram{To: pe.addr, Data: p.encode(Probe{Kind: Done})})
	}
	return out
}

// SendFailed notes that sending to addr failed (no route, say): the
// diagnosis of that peer quotes it.
func (p *Pinger) SendFailed(addr netip.AddrPort, err error) {
	if pe := p.peers[addr]; pe != nil {
		pe.sendErr = err.Error()
	}
}

func (p *Pinger) encode(pr Probe) []byte {
	pr.ID = p.cfg.ID
	pr.Peers = uint16(min(p.Heard(), 0xffff))
	return pr.Append(nil)
}

func (p *Pinger) event(e Event, pe *peer) {
	e.Peer, e.Addr = pe.id, pe.addr
	p.events = append(p.events, e)
}

// Receive takes one datagram from src, which came to the group socket
// (multicast) or to this pinger's own address, at now. It returns the echo
// to send, if any.
func (p *Pinger) Receive(b []byte, src netip.AddrPort, multicast bool, now time.Duration) []Datagram {
	pr, err := Decode(b)
	switch {
	case errors.Is(err, ErrVersion):
		p.ignored.OtherVersion++
		return nil
	case err != nil:
		p.ignored.Malformed++
		return nil
	case src == p.cfg.Local:
		p.ignored.Own++
		return nil
	case !src.Addr().Is4() || src.Port() == 0:
		p.ignored.Malformed++
		return nil
	case pr.Kind != Done && multicast != (pr.Kind == ProbeMulticast):
		// The group socket gets unicast to the port as well (it is
		// bound to the wildcard address), but the path is the point.
		p.ignored.Misdirected++
		return nil
	}
	path := Unicast
	if multicast {
		path = Multicast
	}
	pe := p.peers[src]
	// An echo must answer a probe of this pinger's, sent before now;
	// anything else is dropped before it counts as hearing the peer (or
	// takes a place in the table).
	if pr.Kind == EchoMulticast || pr.Kind == EchoUnicast {
		var useq uint32 // unicast probes sent to src
		if pe != nil {
			useq = pe.useq
		}
		if pr.Sent > uint64(now) || (pr.Kind == EchoMulticast && pr.Seq > p.mseq) || (pr.Kind == EchoUnicast && pr.Seq > useq) || pr.Seq == 0 {
			p.ignored.BadEcho++
			return nil
		}
	}
	if pe == nil {
		if len(p.order) >= p.cfg.MaxPeers {
			p.ignored.PeerLimit++
			return nil
		}
		pe = &peer{addr: src}
		p.peers[src] = pe
		p.order = append(p.order, pe)
	}
	pe.id, pe.hears, pe.last, pe.silent = pr.ID, pr.Peers, now, false
	if !pe.heard {
		pe.heard, pe.first = true, now
		p.event(Event{Kind: EventJoined, At: now, Path: path}, pe)
	}
	p.decide(pe, now)
	ps := &pe.paths[path]
	ps.in, ps.lastIn = true, now
	switch pr.Kind {
	case ProbeMulticast, ProbeUnicast:
		ps.heardSeq(pr.Seq)
		kind := EchoMulticast
		if pr.Kind == ProbeUnicast {
			kind = EchoUnicast
		}
		return []Datagram{{To: src, Data: p.encode(Probe{Kind: kind, Seq: pr.Seq, Sent: pr.Sent})}}
	case EchoMulticast:
		p.answer(pe, Multicast, pr, now)
	case EchoUnicast:
		p.answer(pe, Unicast, pr, now)
	case Done:
		if !pe.done {
			pe.done = true
			p.event(Event{Kind: EventDone, At: now}, pe)
		}
	}
	return nil
}

// decide counts as lost the probes to pe that are still unanswered though
// pe was heard at now, more than guard after they left: in that time a
// peer that got the probe has answered it.
func (p *Pinger) decide(pe *peer, now time.Duration) {
	for path := range pe.paths {
		ps := &pe.paths[path]
		for i := range ps.recs {
			r := &ps.recs[i]
			if r.state == recPending && now-r.at > p.guard {
				r.state = recLost
				ps.sent++
				p.event(Event{Kind: EventLost, At: now, Path: Path(path), Seq: r.seq}, pe)
			}
		}
	}
}

func (p *Pinger) answer(pe *peer, path Path, pr Probe, now time.Duration) {
	ps := &pe.paths[path]
	rtt := now - time.Duration(pr.Sent)
	late := false
	r := &ps.recs[pr.Seq%ringSize]
	switch {
	case r.seq != pr.Seq || r.state == recFree:
		// Sent before the peer was heard, or too long ago to be
		// recorded: it counts as sent and answered, once (a
		// duplicate of it would count again; LANs rarely duplicate).
		ps.sent++
	case r.state == recAnswered:
		return // a duplicate
	case r.state == recLost:
		late = true
		rtt = now - r.at
	default:
		ps.sent++
		rtt = now - r.at
	}
	if r.seq == pr.Seq {
		r.state = recAnswered
	}
	ps.answered++
	ps.lastOut = now
	if ps.answered == 1 || rtt < ps.rttMin {
		ps.rttMin = rtt
	}
	ps.rttMax = max(ps.rttMax, rtt)
	ps.rttSum += rtt
	p.event(Event{Kind: EventAnswer, At: now, Path: path, Seq: pr.Seq, RTT: rtt, Late: late}, pe)
}

// record notes a probe sent to the peer by this path. A probe still
// pending in its slot is dropped from the counts: see ringSize.
func (ps *pathState) record(seq uint32, now time.Duration) {
	ps.recs[seq%ringSize] = rec{seq: seq, at: now, state: recPending}
}

// heardSeq counts a probe of the peer's: the span of its numbers is what
// it sent this way while heard, so the gaps are what was lost.
func (ps *pathState) heardSeq(seq uint32) {
	if ps.heard == 0 || seq < ps.firstSeq {
		ps.firstSeq = seq
	}
	if ps.heard == 0 || seq > ps.lastSeq {
		ps.lastSeq = seq
	}
	ps.heard++
}

// Report sums up the run at now.
func (p *Pinger) Report(now time.Duration) Report {
	r := Report{ID: p.cfg.ID, Local: p.cfg.Local, Group: p.cfg.Group, Iface: p.cfg.Iface,
		Subnets: slices.Clone(p.cfg.Subnets), TTL: p.cfg.TTL, Elapsed: now, Sent: int(p.mseq), Ignored: p.ignored}
	for _, pe := range p.order {
		pr := PeerReport{ID: pe.id, Addr: pe.addr}
		for path := range pe.paths {
			ps := &pe.paths[path]
			s := PathReport{Sent: ps.sent, Answered: ps.answered, Heard: ps.heard}
			if ps.heard > 0 {
				s.HeardOf = int(ps.lastSeq-ps.firstSeq) + 1
			}
			if ps.answered > 0 {
				s.RTTMin, s.RTTMax, s.RTTAvg = ps.rttMin, ps.rttMax, ps.rttSum/time.Duration(ps.answered)
			}
			if path == int(Multicast) {
				pr.Multicast = s
			} else {
				pr.Unicast = s
			}
		}
		pr.Diagnosis = Diagnose(p.observe(pe, now))
		r.Peers = append(r.Peers, pr)
	}
	return r
}

// observe gathers what the diagnosis of pe needs.
func (p *Pinger) observe(pe *peer, now time.Duration) Observation {
	m, u := &pe.paths[Multicast], &pe.paths[Unicast]
	o := Observation{
		Peer: pe.id, Addr: pe.addr.Addr(), Port: p.cfg.Local.Port(), Group: p.cfg.Group.Addr(),
		Iface: p.cfg.Iface, Subnets: p.cfg.Subnets, TTL: p.cfg.TTL,
		Heard: pe.heard, Seed: pe.seed, PeerHears: int(pe.hears), SendErr: pe.sendErr,
		MulticastIn: m.in, MulticastOut: m.answered > 0,
		UnicastIn: u.in, UnicastOut: u.answered > 0,
		MulticastLoss: lossOf(m), UnicastLoss: lossOf(u),
	}
	if pe.heard && !pe.done && now-pe.last >= silentAfter*p.cfg.Interval {
		o.SilentFor = now - pe.last
		o.HeardFor = pe.last - pe.first
	}
	// Multicast that got through, then stopped while unicast went on.
	lastM, lastU := max(m.lastIn, m.lastOut), max(u.lastIn, u.lastOut)
	if (m.in || m.answered > 0) && lastU-lastM >= silentAfter*p.cfg.Interval {
		o.MulticastStoppedAfter = lastM - pe.first
		o.MulticastStoppedFor = lastU - lastM
	}
	return o
}

func lossOf(ps *pathState) float64 {
	if ps.sent == 0 {
		return 0
	}
	return float64(ps.sent-ps.answered) / float64(ps.sent)
}
