package lab

import (
	"bytes"
	"io"
	"os"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// event is the part of a node's log line the demo shows. Deliveries and
// sends, nearly every line of a traced run, are only counted: of them,
// parseLine reads only the order (and the view of a final delivery).
type event struct {
	Time     time.Time
	Level    string
	Node     uint64
	Event    string
	Message  string
	Error    string
	View     string
	Order    string
	Members  []uint64 // nil for node.stats, where members is a count
	Joined   []uint64
	Left     []uint64
	Crashed  []uint64
	Proposed []uint64
	Epoch    uint64
	Attempt  uint64
	FlushMs  int64
	CoordInc uint64
	Member   uint64
	By       uint64 // order.taken: the sequencer that handed the order on
	GSeq     uint64 // order.taken: the first number the node gives
	SilentMs int64
	Inc      uint64
	Peer     uint64
	Reason   string
	Prior    string
	Final    bool
	FromSeq  uint64
	Count    uint64
	Why      string
	// Election events.
	Algorithm string
	Round     uint64
	Initiator uint64
	Leader    uint64
	Sent      int
	Duration  float64 // duration_ms
	// Lock events.
	WaitMs   float64
	HeldMs   float64
	Messages int
	Lost     bool
	// node.stats counters the console sums up.
	NacksSent     int64
	RepairsSent   int64
	GapsDetected  int64
	GapsRecovered int64
}

// parseLine reads one log line. For a deliver or send line only Event,
// Order, Final and a final delivery's View are set. ok is false for a
// line that is not an event (a crash trace on the way, say).
func parseLine(line []byte) (ev event, ok bool) {
	e, ok := logs.Parse(line)
	if !ok {
		return ev, false
	}
	ev.Event = e.Name
	str := func(key string) string { s, _ := e.Str(key); return s }
	num := func(key string) uint64 { n, _ := e.Uint(key); return n }
	integer := func(key string) int64 { n, _ := e.Int(key); return n }
	float := func(key string) float64 { f, _ := e.Float(key); return f }
	ids := func(key string) []uint64 { v, _ := e.Uints(key); return v }
	ev.Order = str(logs.OrderKey)
	ev.Final, _ = e.Bool(logs.FinalKey)
	if e.Name == logs.Deliver || e.Name == logs.Send {
		if ev.Final {
			ev.View = str(logs.ViewKey)
		}
		return ev, true
	}
	ev.Time, ev.Level, ev.Node = e.Time, e.Level, e.Node
	ev.Message, ev.Error, ev.View = str(logs.MessageKey), str(logs.ErrorKey), str(logs.ViewKey)
	ev.Members, ev.Joined, ev.Left = ids(logs.MembersKey), ids(logs.JoinedKey), ids(logs.LeftKey)
	ev.Crashed, ev.Proposed = ids(logs.CrashedKey), ids(logs.ProposedKey)
	ev.Epoch, ev.Attempt, ev.FlushMs = num(logs.EpochKey), num(logs.AttemptKey), integer(logs.FlushMsKey)
	ev.CoordInc, ev.Member, ev.SilentMs = num(logs.CoordinatorIncarnationKey), num(logs.MemberKey), integer(logs.SilentMsKey)
	ev.Inc, ev.Peer, ev.Reason, ev.Prior = num(logs.IncarnationKey), num(logs.PeerKey), str(logs.ReasonKey), str(logs.PriorKey)
	ev.FromSeq, ev.Count, ev.Why = num(logs.FromSeqKey), num(logs.CountKey), str(logs.WhyKey)
	ev.By, ev.GSeq = num(logs.ByKey), num(logs.GSeqKey)
	ev.Algorithm, ev.Round, ev.Initiator = str(logs.AlgorithmKey), num(logs.RoundKey), num(logs.InitiatorKey)
	ev.Leader, ev.Sent, ev.Duration = num(logs.LeaderKey), int(integer(logs.SentKey)), float(logs.DurationMsKey)
	ev.WaitMs, ev.HeldMs, ev.Messages = float(logs.WaitMsKey), float(logs.HeldMsKey), int(integer(logs.MessagesKey))
	ev.Lost, _ = e.Bool(logs.LostKey)
	ev.NacksSent, ev.RepairsSent = integer("nacks_sent"), integer("repairs_sent")
	ev.GapsDetected, ev.GapsRecovered = integer("gaps_detected"), integer("gaps_recovered")
	return ev, true
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
		case logs.Deliver:
			c.add(t.node, ev.Order, false)
			if ev.Final {
				c.addFinal(t.node, ev.View)
			}
			continue
		case logs.Send:
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
var Orders = []string{"fifo", "total", "safe", "causal"}

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
	sent, delivered map[uint64]*[4]int64
	final           map[uint64]map[string]int64
}

func newCounts() *counts {
	return &counts{sent: map[uint64]*[4]int64{}, delivered: map[uint64]*[4]int64{}, final: map[uint64]map[string]int64{}}
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
		v = new([4]int64)
		m[node] = v
	}
	v[orderIndex(order)]++
}

// total sums m over the nodes, per order.
func total(m map[uint64]*[4]int64) (per [4]int64, all int64) {
	for _, v := range m {
		for i, n := range v {
			per[i] += n
			all += n
		}
	}
	return per, all
}

// of returns node's tally in m (zero if none).
func of(m map[uint64]*[4]int64, node uint64) [4]int64 {
	if v := m[node]; v != nil {
		return *v
	}
	return [4]int64{}
}
