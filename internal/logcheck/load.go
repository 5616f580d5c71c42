package logcheck

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
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
	Node    uint64
	Inc     uint64 // incarnation from node.started; 0 if not logged
	File    string
	Line    int       // of node.started (or of the first line)
	Started time.Time // time of node.started (or of the first line)
	// Stopped and StopReason come from node.stopped; Stopped is zero when
	// the node logged none (killed, or still running).
	Stopped    time.Time
	StopReason string
	LastTime   time.Time // time of the life's last line

	Sends    []Send    // "send" events, in log order
	Delivers []Deliver // "deliver" events, in log order
	Skips    []Skip    // "stream.skipped" events
	Peers    []PeerEvent
	Views    []View
	Stats    []Stats // node.stats events, periodic and final
}

// Send is a "send" event: the node multicast its message Seq.
type Send struct {
	Seq   uint64
	Len   int64
	CRC   uint32
	View  string // the view it was sent in; "" until sends carry their view
	Order string // "fifo", "total" or "safe"; "" before sends carried it
	Time  time.Time
	Line  int
}

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
	Order   string // "fifo", "total" or "safe"; "" before deliveries carried it
	GSeq    uint64 // total and safe: the message's number in the view's total order
	Final   bool   // delivered at the view's end by the flush, not by its order record
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
	Time     time.Time
	Line     int
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

// maxLine is the longest log line read; longer lines fail the read.
const maxLine = 16 << 20

// Read adds the log read from rd, named name in reports. It fails only
// when rd fails or holds a line over 16 MiB; lines that are not JSON
// objects are counted in File.Malformed and skipped.
func (r *Run) Read(name string, rd io.Reader) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 256<<10), maxLine)
	fs := &fileState{run: r, file: File{Name: name}, lives: map[uint64]*lifeState{}}
	n := 0
	for sc.Scan() {
		n++
		fs.line(sc.Bytes(), n)
	}
	r.Files = append(r.Files, fs.file)
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
	file  File
	lives map[uint64]*lifeState // current life of each node in this file
	ms    []member              // reused
}

type lifeState struct {
	*Life
	peerInc map[uint64]uint64 // incarnation of each peer, from peer.seen
	started bool              // node.started was read
}

func (fs *fileState) line(b []byte, n int) {
	if i := skipSpace(b, 0); i == len(b) {
		return
	}
	fs.file.Lines++
	var ok bool
	fs.ms, ok = splitObject(b, fs.ms)
	ev, okEv := lookup(fs.ms, "event")
	if !ok || !okEv || ev.kind != kindString {
		fs.file.Malformed++
		if fs.file.FirstMalformed == 0 {
			fs.file.FirstMalformed = n
		}
		return
	}
	nm, okNode := lookup(fs.ms, "node")
	node, okNode2 := nm.uint()
	if !okNode || !okNode2 {
		fs.file.NoNode++
		return
	}
	var t time.Time
	if tm, ok := lookup(fs.ms, "time"); ok {
		t, _ = tm.time()
	}
	name, _ := ev.text()
	l := fs.life(node, name, t, n)
	l.LastTime = t
	fs.event(l, name, t, n)
}

// life returns the life an event of node belongs to. node.started starts
// a new life, unless the current one is only the lines logged before it.
func (fs *fileState) life(node uint64, event string, t time.Time, n int) *lifeState {
	l := fs.lives[node]
	if l == nil || event == "node.started" && (l.started || len(l.Sends)+len(l.Delivers) > 0) {
		l = &lifeState{Life: &Life{Node: node, File: fs.file.Name, Line: n, Started: t}, peerInc: map[uint64]uint64{}}
		fs.lives[node] = l
		fs.run.Lives = append(fs.run.Lives, l.Life)
	}
	return l
}

func (fs *fileState) event(l *lifeState, name string, t time.Time, n int) {
	ms := fs.ms
	get := func(key string) uint64 {
		m, _ := lookup(ms, key)
		v, _ := m.uint()
		return v
	}
	str := func(key string) string {
		m, _ := lookup(ms, key)
		s, _ := m.text()
		return s
	}
	ids := func(key string) []uint64 {
		m, _ := lookup(ms, key)
		v, _ := m.uints()
		return v
	}
	boolean := func(key string) bool {
		m, _ := lookup(ms, key)
		return string(m.val) == "true"
	}
	float := func(key string) float64 {
		m, _ := lookup(ms, key)
		v, _ := m.float()
		return v
	}
	switch name {
	case "node.started":
		l.Inc = get("incarnation")
		l.Line, l.Started, l.started = n, t, true
	case "node.stopped":
		l.Stopped, l.StopReason = t, str("reason")
	case "send":
		l.Sends = append(l.Sends, Send{Seq: get("seq"), Len: int64(get("len")), CRC: uint32(get("crc")),
			View: str("view"), Order: str("order"), Time: t, Line: n})
	case "deliver":
		from := get("from")
		inc := get("from_incarnation")
		if inc == 0 {
			inc = l.peerInc[from]
		}
		l.Delivers = append(l.Delivers, Deliver{From: from, FromInc: inc, Seq: get("seq"),
			Len: int64(get("len")), CRC: uint32(get("crc")), View: str("view"), Order: str("order"), GSeq: get("gseq"),
			Final: boolean("final"), Time: t, Line: n})
	case "peer.seen", "peer.lost":
		p := PeerEvent{Event: name, Peer: get("peer"), Inc: get("incarnation"), Time: t, Line: n}
		if name == "peer.seen" {
			l.peerInc[p.Peer] = p.Inc
		}
		l.Peers = append(l.Peers, p)
	case "stream.skipped":
		l.Skips = append(l.Skips, Skip{Peer: get("peer"), Inc: get("incarnation"), FromSeq: get("from_seq"),
			Count: get("count"), Time: t, Line: n})
	case "view.installed":
		l.Views = append(l.Views, View{ID: str("view"), Members: ids("members"), Joined: ids("joined"),
			Left: ids("left"), Crashed: ids("crashed"), FlushMs: float("flush_ms"), CoordInc: get("coordinator_incarnation"), Time: t, Line: n})
	case "node.stats":
		s := Stats{Why: str("why"), Time: t, Line: n, Counters: map[string]int64{}}
		for _, m := range ms {
			if v, ok := m.int(); ok && string(m.key) != "node" {
				s.Counters[string(m.key)] = v
			}
		}
		l.Stats = append(l.Stats, s)
	}
}
