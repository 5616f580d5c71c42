package election

import "github.com/huddle-lan/huddle/internal/testutil/script"

// held is what Ready handed out that a test has not looked at yet, per
// machine: tests take the messages and the events apart.
var held script.Held[*Machine, Message, Event]

// TakeOutput returns the messages not taken yet.
func (m *Machine) TakeOutput() []Message {
	rd := m.Ready()
	return held.Messages(m, rd.Messages, rd.Events)
}

// TakeEvents returns the events not taken yet.
func (m *Machine) TakeEvents() []Event {
	rd := m.Ready()
	return held.Events(m, rd.Messages, rd.Events)
}

// Take implements script.Node: the messages and the events not taken yet.
func (m *Machine) Take() ([]script.Msg, []Event) {
	out := m.TakeOutput()
	msgs := make([]script.Msg, len(out))
	for i, o := range out {
		msgs[i] = script.Msg{To: o.To, Payload: o.Payload}
	}
	return msgs, m.TakeEvents()
}
