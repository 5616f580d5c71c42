package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
)

// JournalFile is the run's own log, beside the nodes': one JSON line when
// the nodes start (lab.start), one per action of the schedule applied
// (lab.fault), one at the end (lab.end). huddle report draws the faults
// on its timeline from it.
const JournalFile = "lab.json"

// The events of the journal.
const (
	JournalStart = "lab.start"
	JournalFault = "lab.fault"
	JournalEnd   = "lab.end"
)

// JournalLine is one line of the journal; fields that do not apply are
// left out.
type JournalLine struct {
	Time   time.Time `json:"time"`
	Event  string    `json:"event"`
	Fault  string    `json:"fault,omitempty"`  // lab.fault: the action's kind (Kinds)
	Nodes  []uint64  `json:"nodes,omitempty"`  // what it acted on
	Value  string    `json:"value,omitempty"`  // loss: the probability; lock: the hold
	Detail string    `json:"detail,omitempty"` // in words
	Error  string    `json:"error,omitempty"`  // why it failed, in part or whole
	// lab.start
	Title    string `json:"title,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Count    int    `json:"nodes_count,omitempty"`
	Duration string `json:"duration,omitempty"`
	// Network says what the nodes ran on, as the console's network line
	// does: on a virtual LAN, its hosts and the loss method (netem,
	// iptables, nft or the nodes' built-in drop).
	Network string `json:"network,omitempty"`
	// lab.end
	OK          *bool `json:"ok,omitempty"`
	Interrupted bool  `json:"interrupted,omitempty"`
}

// journal writes the journal; a nil journal writes nothing.
type journal struct {
	f   *os.File
	enc *json.Encoder
}

func openJournal(path string) (*journal, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("the run's journal: %w", err)
	}
	return &journal{f: f, enc: json.NewEncoder(f)}, nil
}

func (j *journal) write(l JournalLine) {
	if j == nil {
		return
	}
	l.Time = l.Time.UTC()
	j.enc.Encode(l) // a journal that cannot be written loses lines, not the run
}

func (j *journal) begin(d *demo) {
	j.write(JournalLine{Time: d.start, Event: JournalStart, Title: d.o.Title, Mode: d.mode, Count: d.o.Nodes, Duration: d.o.Duration.String(), Network: d.network()})
}

func (j *journal) action(at time.Time, a Action, ids []uint64, err error) {
	l := JournalLine{Time: at, Event: JournalFault, Fault: a.Do, Nodes: ids, Detail: a.String()}
	switch a.Do {
	case DoLoss:
		l.Value = strconv.FormatFloat(a.Loss.Loss, 'f', -1, 64)
	case DoLock:
		l.Value = a.Hold.String()
	case DoCPU:
		l.Value = strconv.FormatFloat(a.CPU, 'f', -1, 64)
	}
	if err != nil {
		l.Error = err.Error()
	}
	j.write(l)
}

func (j *journal) end(s *Summary) {
	ok := s.OK
	j.write(JournalLine{Time: time.Now(), Event: JournalEnd, OK: &ok, Interrupted: s.Interrupted})
}

func (j *journal) close() {
	if j != nil {
		j.f.Close()
	}
}

// Deaths reads a run's journal (JournalFile) and returns the kills it
// applied: each node a lab.fault of kind kill acted on, at its time, for
// the log checks (logcheck.AllOptions.Deaths).
func Deaths(r io.Reader) ([]logcheck.Death, error) {
	var deaths []logcheck.Death
	dec := json.NewDecoder(r)
	for {
		var l JournalLine
		if err := dec.Decode(&l); err == io.EOF {
			return deaths, nil
		} else if err != nil {
			return deaths, fmt.Errorf("%s: %w", JournalFile, err)
		}
		if l.Event == JournalFault && l.Fault == DoKill {
			for _, id := range l.Nodes {
				deaths = append(deaths, logcheck.Death{Node: id, At: l.Time})
			}
		}
	}
}
