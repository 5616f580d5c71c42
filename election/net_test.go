package election

import (
	"fmt"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/testutil/script"
)

// lan is a tiny network of Machines in virtual time (script.Net): every
// Message goes to its To after a delay, in FIFO order per sender and
// receiver; Tick runs at each machine's deadline. Messages are lost only
// at view changes and crashes (Install, Crash). After every call into a
// machine it checks the machine's invariants.
type lan struct {
	*script.Net[*Machine, Event]
	opt Options

	carried Counts // messages sent on the network, by kind (the algorithms')
}

func newLAN(t testing.TB, opt Options, delay time.Duration) *lan {
	l := &lan{Net: script.New[*Machine, Event](t, script.Start), opt: opt}
	l.Delay = func(_, _ uint64) time.Duration { return delay }
	l.Sending = l.sending
	l.Event = func(id uint64, e Event) {
		l.Logf("%d: %v r%d leader %d sent %d", id, e.Kind, e.Round, e.Leader, e.Sent)
	}
	l.Collected = func(id uint64) {
		if m := l.Nodes[id].M; !m.unbounded { // a wrapped round breaks them
			if err := m.invariants(); err != nil {
				l.T.Fatalf("%v\n%s", err, l.Tail())
			}
		}
	}
	return l
}

// add creates fresh machines (a new node, or a restart of a crashed one).
func (l *lan) add(ids ...uint64) {
	for _, id := range ids {
		o := l.opt
		o.Self = id
		l.Add(id, New(o))
	}
}

func (l *lan) start(id uint64) bool {
	var ok bool
	l.Call(id, func(m *Machine) { ok = m.Start(l.Now) })
	l.Logf("start %d: %v", id, ok)
	return ok
}

// sending counts what a node sends, by kind, and says how to trace it.
func (l *lan) sending(from uint64, out script.Msg) (string, string, bool) {
	msg, text, err := describe(out)
	switch {
	case err != nil && l.Nodes[from].M.unbounded: // a wrapped round 0: every receiver drops it as malformed
		return "", text, false
	case err != nil:
		l.T.Fatalf("node %d sends %x: %v\n%s", from, out.Payload, err, l.Tail())
	case msg.kind < kindTally: // the accounting is not the algorithms'
		l.carried.add(msg.kind)
	}
	return msg.kind.String(), text, true
}

// describe decodes a message for the trace and the scripts.
func describe(out script.Msg) (message, string, error) {
	var c codec
	msg, err := c.decode(out.Payload)
	if err != nil {
		return msg, fmt.Sprintf("%x: %v", out.Payload, err), err
	}
	return msg, fmt.Sprintf("%v r%d %d", msg.kind, msg.round, msg.id), nil
}

// messages is every message the network carried.
func (l *lan) messages() int { return int(l.carried.Total()) }
