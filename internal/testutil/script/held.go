package script

// Held keeps, per machine, what its Ready handed out that a test has not
// taken yet: tests that look at a machine's messages and its events apart
// (TakeOutput, TakeEvents) keep the other half here.
type Held[K comparable, M, E any] struct {
	m map[K]*output[M, E]
}

type output[M, E any] struct {
	msgs []M
	evs  []E
}

func (h *Held[K, M, E]) add(k K, msgs []M, evs []E) *output[M, E] {
	if h.m == nil {
		h.m = map[K]*output[M, E]{}
	}
	o := h.m[k]
	if o == nil {
		o = &output[M, E]{}
		h.m[k] = o
	}
	o.msgs = append(o.msgs, msgs...)
	o.evs = append(o.evs, evs...)
	return o
}

// Messages keeps what machine k's Ready just handed out, and takes the
// messages not taken yet.
func (h *Held[K, M, E]) Messages(k K, msgs []M, evs []E) []M {
	o := h.add(k, msgs, evs)
	out := o.msgs
	o.msgs = nil
	return out
}

// Events keeps what machine k's Ready just handed out, and takes the
// events not taken yet.
func (h *Held[K, M, E]) Events(k K, msgs []M, evs []E) []E {
	o := h.add(k, msgs, evs)
	out := o.evs
	o.evs = nil
	return out
}
