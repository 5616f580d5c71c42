package logcheck

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// Run holds the events of one run that the checks read, from one or more
// JSON-lines logs, grouped by node life.
type Run struct {
	Lives []*Life // in the order their first line was read
	Files []File
}

// File describes one log that was read.
type File struct {
	Name      string
	Lines     int // non-empty lines
	Malformed int // lines that are not a JSON object with an event (crash output, a line cut short)
	NoNode    int // events without a node field, ignored
	// FirstMalformed is the line number of the first malformed line, 0 if none.
	FirstMalformed int
}

// Life is one incarnation of a node as its log shows it: from a
// node.started event to the next one of the same node in the same file
// (a restart appends to the same log). Lines of a node before any
// node.started form a life with Inc 0.
type Life struct {
	Node uint64
	Inc  uint64 // incarnation from node.started; 0 if not logged
	// Schema is the log schema's version node.started names
	// (logs.SchemaVersion); 1 for a node.started without one, 0 without
	// a node.started.
	Schema int
	// Suspect is the node's suspect timeout, from node.started (0 if not
	// logged).
	Suspect time.Duration
	File    string
	Line    int       // of node.started (or of the first line)
	Started time.Time // time of node.started (or of the first line)
	// Stopped and StopReason come from node.stopped; Stopped is zero when
	// the node logged none (killed, or still running).
	Stopped    time.Time
	StopReason string
	StopLine   int       // of node.stopped
	LastTime   time.Time // time of the life's last line
	LastLine   int       // the life's last line
	// LeftAt is the line of member.left: the node's graceful leave
	// completed (a view without it exists); 0 if it logged none.
	LeftAt int

	Sends    []Send    // "send" events, in log order
	Delivers []Deliver // "deliver" events, in log order
	Skips    []Skip    // "stream.skipped" events
	Peers    []PeerEvent
	Views    []View
	Stats    []Stats      // node.stats events, periodic and final
	Locks    []LockEvent  // mutex.* events, in log order
	States   []StateEvent // state.* events, in log order
	// Elections are the election.* and leader.changed events, in log order.
	Elections []ElectionEvent
}

// Send is a "send" event: the node multicast its message Seq.
type Send struct {
	Seq     uint64
	Len     int64
	CRC     uint32
	View    string // the view it was sent in; "" until sends carry their view
	Order   string // "fifo", "total", "safe" or "causal"; "" before sends carried it
	To      uint64 // the one member it was sent to (a service's Send); 0 for a multicast
	Service string // "" for the application's channel
	Time    time.Time
	Line    int
}

// For reports whether the send is to be delivered by node id: a
// multicast, or a message addressed to id.
func (s *Send) For(id uint64) bool { return s.To == 0 || s.To == id }

// Deliver is a "deliver" event: the node delivered message Seq of From.
type Deliver struct {
	From uint64
	// FromInc is the incarnation of From that sent the message: the
	// event's "from_incarnation" field when the node logs one, else the
	// incarnation of the last peer.seen of From before it in the same
	// life, else 0.
	FromInc uint64
	Seq     uint64
	Len     int64
	CRC     uint32
	View    string // "" until deliveries carry their view
	Order   string // "fifo", "total", "safe" or "causal"; "" before deliveries carried it
	GSeq    uint64 // total and safe: the message's number in the view's total order
	Final   bool   // delivered at the view's end by the flush, not by its order record
	Service string // "" for the application's channel
	Time    time.Time
	Line    int
}

// Skip is a "stream.skipped" event: Count messages of Peer from FromSeq on
// are lost for good for this node.
type Skip struct {
	Peer, Inc, FromSeq, Count uint64
	Time                      time.Time
	Line                      int
}

// Covers reports whether the skip covers seq of peer's incarnation inc (a
// zero inc on either side matches any).
func (s Skip) Covers(peer, inc, seq uint64) bool {
	return s.Peer == peer && (s.Inc == inc || s.Inc == 0 || inc == 0) &&
		seq >= s.FromSeq && seq-s.FromSeq < s.Count
}

// PeerEvent is a peer.seen or peer.lost event.
type PeerEvent struct {
	Event     string // "peer.seen" or "peer.lost"
	Peer, Inc uint64
	Time      time.Time
	Line      int
}

// View is a view.installed event.
type View struct {
	ID      string   // "epoch.coordinator"; see ParseViewID
	Members []uint64 // oldest first, the coordinator first; nil if absent or garbled
	// Joined, Left and Crashed are the changes from the life's previous
	// view, as the node logged them.
	Joined, Left, Crashed []uint64
	FlushMs               float64 // how long the flush before it took
	// CoordInc is the coordinator's incarnation
	// ("coordinator_incarnation"; 0 if not logged). A coordinator that restarts counts epochs afresh, so a
	// view is the same view only with the same ID and CoordInc.
	CoordInc uint64
	// Primary marks a view of the primary component ("primary"; true
	// when not logged, as before quorum policies), and Generation its
	// place in the chain of primary views (0: not primary or not logged).
	Primary    bool
	Generation uint64
	Time       time.Time
	Line       int
}

// Key identifies the view across lives: its ID and its coordinator's
// incarnation.
func (v *View) Key() string {
	if v.CoordInc == 0 {
		return v.ID
	}
	return v.ID + "@" + strconv.FormatUint(v.CoordInc, 10)
}

// Stats is a node.stats event: its numeric fields by name.
type Stats struct {
	Why      string // "periodic" or "exit"
	Time     time.Time
	Line     int
	Counters map[string]int64
}

// Get returns counter name, 0 when absent.
func (s Stats) Get(name string) int64 { return s.Counters[name] }

// LastStats returns the life's last node.stats event.
func (l *Life) LastStats() (Stats, bool) {
	if len(l.Stats) == 0 {
		return Stats{}, false
	}
	return l.Stats[len(l.Stats)-1], true
}

// String names the life, e.g. "node 2 (node2.json:1)".
func (l *Life) String() string {
	return fmt.Sprintf("node %d (%s:%d)", l.Node, l.File, l.Line)
}

// Load reads the logs at paths (one per node, typically) into a Run.
// Lives are named after the files' base names in reports.
func Load(paths ...string) (*Run, error) {
	r := &Run{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("logcheck: %w", err)
		}
		err = r.Read(filepath.Base(p), f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("logcheck: %s: %w", p, err)
		}
	}
	return r, nil
}

// Read adds the log read from rd, named name in reports. It fails only
// when rd fails or holds a line over 16 MiB (logs.MaxLine); lines that
// are not events are counted in File.Malformed and skipped.
func (r *Run) Read(name string, rd io.Reader) error {
	sc := logs.NewScanner(rd)
	fs := &fileState{run: r, name: name, lives: map[uint64]*lifeState{}}
	file := File{Name: name}
	for sc.Scan() {
		ev := sc.Event()
		if _, ok := ev.Uint(logs.NodeKey); !ok {
			file.NoNode++
			continue
		}
		l := fs.life(&ev)
		// A restarted node opens its sockets before it logs node.started:
		// what it says then belongs to the new start, and must not make
		// the life before (killed, maybe long ago) look longer.
		if ev.Name != logs.SocketRcvbufCapped || !l.started {
			l.LastTime, l.LastLine = ev.Time, ev.Line
		}
		l.event(&ev)
	}
	file.Lines = sc.Lines()
	file.Malformed, file.FirstMalformed = sc.Skipped()
	r.Files = append(r.Files, file)
	return sc.Err()
}

// Nodes returns the lives of node id, in order.
func (r *Run) Nodes(id uint64) []*Life {
	var ls []*Life
	for _, l := range r.Lives {
		if l.Node == id {
			ls = append(ls, l)
		}
	}
	return ls
}

// fileState is the reading state of one log.
type fileState struct {
	run   *Run
	name  string
	lives map[uint64]*lifeState // current life of each node in this file
}

type lifeState struct {
	*Life
	peerInc map[uint64]uint64 // incarnation of each peer, from peer.seen
	started bool              // node.started was read
}

// life returns the life an event belongs to. node.started starts a new
// life of its node, unless the current one is only the lines logged
// before it.
func (fs *fileState) life(ev *logs.Event) *lifeState {
	l := fs.lives[ev.Node]
	if l == nil || ev.Name == logs.NodeStarted && (l.started || len(l.Sends)+len(l.Delivers) > 0) {
		l = &lifeState{Life: &Life{Node: ev.Node, File: fs.name, Line: ev.Line, Started: ev.Time}, peerInc: map[uint64]uint64{}}
		fs.lives[ev.Node] = l
		fs.run.Lives = append(fs.run.Lives, l.Life)
	}
	return l
}

// event adds an event to the life.
func (l *lifeState) event(ev *logs.Event) {
	get := func(key string) uint64 { v, _ := ev.Uint(key); return v }
	str := func(key string) string { s, _ := ev.Str(key); return s }
	ids := func(key string) []uint64 { v, _ := ev.Uints(key); return v }
	t, n := ev.Time, ev.Line
	switch ev.Name {
	case logs.NodeStarted:
		l.Inc = get(logs.IncarnationKey)
		l.Schema = int(get(logs.SchemaKey))
		if l.Schema == 0 {
			l.Schema = 1 // written before node.started named its schema
		}
		l.Suspect = time.Duration(get(logs.SuspectMsKey)) * time.Millisecond
		l.Line, l.Started, l.started = n, t, true
	case logs.NodeStopped:
		l.Stopped, l.StopReason, l.StopLine = t, str(logs.ReasonKey), n
	case logs.MemberLeft:
		l.LeftAt = n
	case logs.Send:
		l.Sends = append(l.Sends, Send{Seq: get(logs.SeqKey), Len: int64(get(logs.LenKey)), CRC: uint32(get(logs.CRCKey)),
			View: str(logs.ViewKey), Order: str(logs.OrderKey), To: get(logs.ToKey), Service: str(logs.ServiceKey), Time: t, Line: n})
	case logs.Deliver:
		from := get(logs.FromKey)
		inc := cmp.Or(get(logs.FromIncarnationKey), get(logs.V1FromIncarnationKey), l.peerInc[from])
		final, _ := ev.Bool(logs.FinalKey)
		l.Delivers = append(l.Delivers, Deliver{From: from, FromInc: inc, Seq: get(logs.SeqKey),
			Len: int64(get(logs.LenKey)), CRC: uint32(get(logs.CRCKey)), View: str(logs.ViewKey), Order: str(logs.OrderKey),
			GSeq: get(logs.GSeqKey), Final: final, Service: str(logs.ServiceKey), Time: t, Line: n})
	case logs.PeerSeen, logs.PeerLost:
		p := PeerEvent{Event: ev.Name, Peer: get(logs.PeerKey), Inc: get(logs.IncarnationKey), Time: t, Line: n}
		if ev.Name == logs.PeerSeen {
			l.peerInc[p.Peer] = p.Inc
		}
		l.Peers = append(l.Peers, p)
	case logs.StreamSkipped:
		l.Skips = append(l.Skips, Skip{Peer: get(logs.PeerKey), Inc: get(logs.IncarnationKey), FromSeq: get(logs.FromSeqKey),
			Count: get(logs.CountKey), Time: t, Line: n})
	case logs.ViewInstalled:
		flush, _ := ev.Float(logs.FlushMsKey)
		primary, logged := ev.Bool(logs.PrimaryKey)
		l.Views = append(l.Views, View{ID: str(logs.ViewKey), Members: ids(logs.MembersKey), Joined: ids(logs.JoinedKey),
			Left: ids(logs.LeftKey), Crashed: ids(logs.CrashedKey), FlushMs: flush,
			CoordInc: cmp.Or(get(logs.CoordinatorIncarnationKey), get(logs.V1CoordinatorIncarnationKey)),
			Primary:  primary || !logged, Generation: get(logs.GenerationKey), Time: t, Line: n})
	case logs.NodeStats:
		s := Stats{Why: str(logs.WhyKey), Time: t, Line: n, Counters: map[string]int64{}}
		for k := range ev.Keys() {
			if v, ok := ev.Int(k); ok && k != logs.NodeKey {
				s.Counters[k] = v
			}
		}
		l.Stats = append(l.Stats, s)
	case logs.MutexRequested, logs.MutexAcquired, logs.MutexReleased, logs.MutexWithdrawn, logs.MutexDeferred:
		l.Locks = append(l.Locks, lockEvent(ev))
	case logs.ElectionStarted, logs.ElectionWon, logs.LeaderChanged, logs.ElectionDone:
		l.Elections = append(l.Elections, electionEvent(ev))
	case logs.StateSent, logs.StateInstalled, logs.StateCurrent, logs.StateFailed, logs.KVState:
		h, _ := ev.Str(logs.HashKey)
		behind, _ := ev.Bool(logs.BehindKey)
		l.States = append(l.States, StateEvent{Event: ev.Name, Service: str(logs.ServiceKey), View: str(logs.ViewKey),
			From: get(logs.FromKey), Hash: h, Behind: behind, Time: t, Line: n})
	}
}
