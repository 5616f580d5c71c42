package mutex

// held is what Ready handed out that a test has not looked at yet, per
// machine: tests take the messages and the events apart.
var held = map[*RA]*Ready{}

func (m *RA) collect() *Ready {
	h := held[m]
	if h == nil {
		h = &Ready{}
		held[m] = h
	}
	rd := m.Ready()
	h.Messages = append(h.Messages, rd.Messages...)
	h.Events = append(h.Events, rd.Events...)
	return h
}

// TakeOutput returns the messages not taken yet.
func (m *RA) TakeOutput() []Message {
	h := m.collect()
	out := h.Messages
	h.Messages = nil
	return out
}

// TakeEvents returns the events not taken yet.
func (m *RA) TakeEvents() []Event {
	h := m.collect()
	evs := h.Events
	h.Events = nil
	return evs
}
