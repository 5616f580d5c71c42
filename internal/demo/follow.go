package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"time"
)

// event is the part of a node's JSON log line the demo shows. Deliveries
// and sends, nearly every line of a traced run, are not decoded: only
// their order is looked up (see parseLine).
type event struct {
	Time     time.Time `json:"time"`
	Level    string    `json:"level"`
	Node     uint64    `json:"node"`
	Event    string    `json:"event"`
	Message  string    `json:"message"`
	Error    string    `json:"error"`
	View     string    `json:"view"`
	Order    string    `json:"order"`
	Members  members   `json:"members"`
	Joined   []uint64  `json:"joined"`
	Left     []uint64  `json:"left"`
	Crashed  []uint64  `json:"crashed"`
	Proposed []uint64  `json:"proposed"`
	Epoch    uint64    `json:"epoch"`
	Attempt  uint64    `json:"attempt"`
	FlushMs  int64     `json:"flush_ms"`
	CoordInc uint64    `json:"coordinator_incarnation"`
	Member   uint64    `json:"member"`
	SilentMs int64     `json:"silent_ms"`
	Inc      uint64    `json:"incarnation"`
	Peer     uint64    `json:"peer"`
	Reason   string    `json:"reason"`
	Prior    string    `json:"prior"`
	Final    bool      `json:"final"`
	FromSeq  uint64    `json:"from_seq"`
	Count    uint64    `json:"count"`
	Why      string    `json:"why"`
	// Election events.
	Algorithm string  `json:"algorithm"`
	Round     uint64  `json:"round"`
	Initiator uint64  `json:"initiator"`
	Leader    uint64  `json:"leader"`
	Sent      int     `json:"sent"`
	Duration  float64 `json:"duration_ms"`
	// Lock events.
	WaitMs   float64 `json:"wait_ms"`
	HeldMs   float64 `json:"held_ms"`
	Messages int     `json:"messages"`
	Lost     bool    `json:"lost"`
	// node.stats counters the console sums up.
	NacksSent     int64 `json:"nacks_sent"`
	RepairsSent   int64 `json:"repairs_sent"`
	GapsDetected  int64 `json:"gaps_detected"`
	GapsRecovered int64 `json:"gaps_recovered"`
}

// Events of the traced workload, counted but not decoded.
var (
	deliverTag = []byte(`"event":"deliver"`)
	sendTag    = []byte(`"event":"send"`)
	orderTag   = []byte(`"order":"`)
	viewTag    = []byte(`"view":"`)
	finalTag   = []byte(`"final":true`)
)

// parseLine decodes one log line. For a "deliver" or "send" line only
// Event and Order are set. ok is false for a line that is not a JSON
// object with an event (a crash trace on the way, say).
func parseLine(line []byte) (ev event, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return ev, false
	}
	for _, tag := range [][]byte{deliverTag, sendTag} {
		if bytes.Contains(line, tag) {
			ev.Event = string(tag[len(`"event":"`) : len(tag)-1])
			ev.Order = fieldString(line, orderTag)
			if bytes.Contains(line, finalTag) {
				ev.Final, ev.View = true, fieldString(line, viewTag)
			}
			return ev, true
		}
	}
	// A field of another type than the struct's (say, "by" of another
	// event) leaves it empty and the rest decoded.
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(line, &ev); err != nil && !errors.As(err, &typeErr) || ev.Event == "" {
		return event{}, false
	}
	return ev, true
}

// members is a view's member list; node.stats logs "members" as a count,
// which decodes as no list.
type members []uint64

func (m *members) UnmarshalJSON(b []byte) error {
	var ids []uint64
	if json.Unmarshal(b, &ids) == nil {
		*m = ids
	}
	return nil
}

// fieldString returns the plain string value following tag (`"key":"`).
func fieldString(line, tag []byte) string {
	i := bytes.Index(line, tag)
	if i < 0 {
		return ""
	}
	rest := line[i+len(tag):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return string(rest[:j])
	}
	return ""
}

// follower reads what the nodes append to their logs: each poll returns
// the complete lines written since the last one. A restarted node appends
// to the same file, so one offset per file is all it takes.
type follower struct {
	files []*tail
}

type tail struct {
	node    uint64
	path    string
	off     int64
	partial []byte // a line whose end was not written yet
	buf     []byte
}

func newFollower() *follower { return &follower{} }

// add follows the log of node at path (which may not exist yet).
func (f *follower) add(node uint64, path string) {
	f.files = append(f.files, &tail{node: node, path: path})
}

// poll returns the events appended to every log since the last poll,
// ordered by time (deliveries and sends, which carry none, come first),
// and the deliveries and sends per node and order.
func (f *follower) poll(c *counts) []event {
	var out []event
	for _, t := range f.files {
		out = t.read(out, c)
	}
	slices.SortStableFunc(out, func(a, b event) int { return a.Time.Compare(b.Time) })
	return out
}

// read appends the new events of one log to out.
func (t *tail) read(out []event, c *counts) []event {
	fh, err := os.Open(t.path)
	if err != nil {
		return out // not created yet
	}
	defer fh.Close()
	if _, err := fh.Seek(t.off, io.SeekStart); err != nil {
		return out
	}
	for {
		if cap(t.buf) == 0 {
			t.buf = make([]byte, 256<<10)
		}
		n, err := fh.Read(t.buf[:cap(t.buf)])
		if n > 0 {
			t.off += int64(n)
			out = t.lines(t.buf[:n], out, c)
		}
		if err != nil || n == 0 {
			return out
		}
	}
}

// lines splits data, after what was left of the last read, into lines.
func (t *tail) lines(data []byte, out []event, c *counts) []event {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			t.partial = append(t.partial, data...)
			return out
		}
		line := data[:i]
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = t.partial[:0]
		}
		data = data[i+1:]
		ev, ok := parseLine(line)
		if !ok {
			continue
		}
		switch ev.Event {
		case "deliver":
			c.add(t.node, ev.Order, false)
			if ev.Final {
				c.addFinal(t.node, ev.View)
			}
			continue
		case "send":
			c.add(t.node, ev.Order, true)
			continue
		}
		if ev.Node == 0 {
			ev.Node = t.node
		}
		out = append(out, ev)
	}
	return out
}

// Orders are the delivery orders of the workload, as logged.
var Orders = []string{"fifo", "total", "safe"}

func orderIndex(o string) int {
	if i := slices.Index(Orders, o); i >= 0 {
		return i
	}
	return 0
}

// counts tallies sends and deliveries per node and order, and the
// deliveries that a view change ordered ("final": no order record came
// for them before the flush) per node and view.
type counts struct {
	sent, delivered map[uint64]*[3]int64
	final           map[uint64]map[string]int64
}

func newCounts() *counts {
	return &counts{sent: map[uint64]*[3]int64{}, delivered: map[uint64]*[3]int64{}, final: map[uint64]map[string]int64{}}
}

func (c *counts) addFinal(node uint64, view string) {
	if c.final[node] == nil {
		c.final[node] = map[string]int64{}
	}
	c.final[node][view]++
}

func (c *counts) add(node uint64, order string, send bool) {
	m := c.delivered
	if send {
		m = c.sent
	}
	v := m[node]
	if v == nil {
		v = new([3]int64)
		m[node] = v
	}
	v[orderIndex(order)]++
}

// total sums m over the nodes, per order.
func total(m map[uint64]*[3]int64) (per [3]int64, all int64) {
	for _, v := range m {
		for i, n := range v {
			per[i] += n
			all += n
		}
	}
	return per, all
}

// of returns node's tally in m (zero if none).
func of(m map[uint64]*[3]int64, node uint64) [3]int64 {
	if v := m[node]; v != nil {
		return *v
	}
	return [3]int64{}
}
