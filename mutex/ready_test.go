package mutex

import "github.com/huddle-lan/huddle/internal/testutil/script"

// held is what Ready handed out that a test has not looked at yet, per
// machine: tests take the messages and the events apart.
var held script.Held[*RA, Message, Event]

// TakeOutput returns the messages not taken yet.
func (m *RA) TakeOutput() []Message {
	rd := m.Ready()
	return held.Messages(m, rd.Messages, rd.Events)
}

// TakeEvents returns the events not taken yet.
func (m *RA) TakeEvents() []Event {
	rd := m.Ready()
	return held.Events(m, rd.Messages, rd.Events)
}
