package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/huddle-lan/huddle/membership"
)

// The group probe (`huddle status --group`): a node multicasts a question
// on the probe service; every member answers it with a summary of itself,
// addressed to the asker, on the same reliable FIFO streams as every
// message. The asker gathers the answers of its view's members until each
// has answered or its caller stops waiting.

// ProbeService is the group service the probe travels on.
const ProbeService = "probe"

var probeService = []byte(ProbeService)

const (
	// maxProbePayload bounds a probe message: an answer's strings are
	// short (a view, an address, a state), so anything longer is bad.
	maxProbePayload = 1024
	// maxProbes bounds the probes one node waits for at once.
	maxProbes = 16
)

// Probe message operations.
const (
	probeAsk    = 1
	probeAnswer = 2
)

// probeMsg is a probe message, msgpack-encoded: a question (Op probeAsk),
// or an answer (probeAnswer) carrying the member's summary.
type probeMsg struct {
	Op   uint8      `msgpack:"o"`
	ID   uint64     `msgpack:"i"`
	Info *ProbeInfo `msgpack:"n,omitempty"`
}

// ProbeInfo is what a member says of itself to a probe: one row of
// `huddle status --group`.
type ProbeInfo struct {
	ID          uint64 `json:"id" msgpack:"id"`
	Incarnation uint64 `json:"incarnation" msgpack:"inc"`
	Addr        string `json:"addr" msgpack:"a"`  // its own address
	View        string `json:"view" msgpack:"v"`  // the view it has installed
	State       string `json:"state" msgpack:"s"` // Status.State
	Role        string `json:"role" msgpack:"r"`  // coordinator, leader, both (coordinator+leader) or member
	UptimeMS    int64  `json:"uptime_ms" msgpack:"u"`
	Delivered   uint64 `json:"delivered" msgpack:"d"` // messages delivered (msgs_delivered)
	NACKs       uint64 `json:"nacks" msgpack:"k"`     // NACKs sent (nacks_sent)
	Repairs     uint64 `json:"repairs" msgpack:"p"`   // repairs sent (repairs_sent)
	Lock        string `json:"lock" msgpack:"l"`      // released, wanted or held
	Leader      uint64 `json:"leader" msgpack:"ld"`   // the leader it knows; 0 = none
	LeaderRound uint64 `json:"leader_round" msgpack:"lr"`
}

// ProbeRow is one member of the asker's view in a probe's result.
type ProbeRow struct {
	ID          uint64     `json:"id"`
	Incarnation uint64     `json:"incarnation"`
	Answered    bool       `json:"answered"`
	Info        *ProbeInfo `json:"info,omitempty"` // when it answered
}

// ProbeResult is a probe's result: the asker's view and a row per member,
// in the view's order (the coordinator first).
type ProbeResult struct {
	View    string     `json:"view"`
	Asker   uint64     `json:"asker"`
	WaitMS  int64      `json:"wait_ms"` // how long the asker waited
	Members []ProbeRow `json:"members"`
}

// Silent returns the members that did not answer, in the view's order.
func (r ProbeResult) Silent() []uint64 {
	var ids []uint64
	for _, m := range r.Members {
		if !m.Answered {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// ErrProbeBusy: too many probes of this node are waiting already.
var ErrProbeBusy = errors.New("node: too many probes at once")

// Probe asks every member of the view for its summary and returns the
// answers, once each has answered or when ctx ends (those who did not
// answer by then have Answered false). ErrNotInView before the first
// view; ErrProbeBusy with 16 probes waiting.
func (n *Node) Probe(ctx context.Context) (ProbeResult, error) {
	start := time.Now()
	var id uint64
	var done chan struct{}
	var perr error
	err := n.Do(ctx, func(c *Core) {
		var finished bool
		if id, finished, perr = c.Probe(time.Now()); perr == nil {
			done = make(chan struct{})
			if finished {
				close(done)
			} else {
				n.probeDone[id] = done
			}
		}
	})
	switch {
	case err != nil:
		return ProbeResult{}, err
	case perr != nil:
		return ProbeResult{}, perr
	}
	select {
	case <-done:
	case <-ctx.Done():
	case <-n.stopped:
	}
	var res ProbeResult
	if err := n.Do(context.Background(), func(c *Core) {
		delete(n.probeDone, id)
		res = c.ProbeResult(id, true)
	}); err != nil {
		return ProbeResult{}, err
	}
	res.WaitMS = time.Since(start).Milliseconds()
	return res, nil
}

// probeFinished wakes the Probe call waiting for probe id.
func (n *Node) probeFinished(id uint64) {
	if done := n.probeDone[id]; done != nil {
		close(done)
		delete(n.probeDone, id)
	}
}

// probePart is the Core's part of the probe: the probes this node asked
// and waits for, and the messages waiting for the view and the window.
type probePart struct {
	out      outQueue
	waits    map[uint64]*probeWait // by ID
	seq      uint64                // the last probe's ID
	answered uint64                // questions answered
	bad      uint64                // messages dropped: malformed, unasked, late, from a non-member, a second answer
}

// probeWait is a probe this node waits for: the view's members and what
// they answered.
type probeWait struct {
	res    ProbeResult
	index  map[uint64]int // member ID → its row
	missed int            // rows not answered yet
}

// Probe starts a probe at now: it asks every other member of the view for
// its summary, and reports its ID, and whether it is finished already (a
// view of this node alone). Its answers gather in the Core until
// ProbeResult forgets them; a ProbeDoneEvent reports the last one.
// ErrNotInView without a view or while leaving; ErrProbeBusy with
// maxProbes probes waiting.
func (c *Core) Probe(now time.Time) (id uint64, finished bool, err error) {
	c.lastInput = now
	p := &c.probe
	v := c.View()
	switch {
	case len(p.waits) >= maxProbes:
		return 0, false, ErrProbeBusy
	case len(v.Members) == 0 || c.leaving:
		return 0, false, membership.ErrNotInView
	}
	p.seq++
	w := &probeWait{res: ProbeResult{View: v.ID.String(), Asker: c.self}, index: map[uint64]int{}, missed: len(v.Members)}
	for i, m := range v.Members {
		w.res.Members = append(w.res.Members, ProbeRow{ID: m.ID, Incarnation: m.Inc})
		w.index[m.ID] = i
	}
	if p.waits == nil {
		p.waits = map[uint64]*probeWait{}
	}
	p.waits[p.seq] = w
	w.answer(c.self, c.probeInfo(now))
	if w.missed > 0 {
		b, _ := msgpack.Marshal(probeMsg{Op: probeAsk, ID: p.seq}) // always encodes
		p.out.add(0, b)
	}
	c.route(now)
	return p.seq, w.missed == 0, nil
}

// ProbeResult returns probe id's answers so far, and with forget drops
// the probe.
func (c *Core) ProbeResult(id uint64, forget bool) ProbeResult {
	w := c.probe.waits[id]
	if w == nil {
		return ProbeResult{}
	}
	if forget {
		delete(c.probe.waits, id)
	}
	res := w.res
	res.Members = slices.Clone(w.res.Members)
	return res
}

// answer records member id's summary, if it is a member not heard yet,
// and reports whether it did.
func (w *probeWait) answer(id uint64, info ProbeInfo) bool {
	i, ok := w.index[id]
	if !ok || w.res.Members[i].Answered || info.ID != id {
		return false
	}
	w.res.Members[i].Answered, w.res.Members[i].Info = true, &info
	w.missed--
	return true
}

// probeInfo is this node's own summary.
func (c *Core) probeInfo(now time.Time) ProbeInfo {
	v := c.View()
	leader, round := c.Leader()
	ms := c.engine.Stats()
	info := ProbeInfo{
		ID: c.self, Incarnation: c.inc, Addr: c.opt.Addr, View: v.ID.String(), State: c.State(),
		UptimeMS: now.Sub(c.started).Milliseconds(), Delivered: ms.MsgsDelivered, NACKs: ms.NacksSent, Repairs: ms.RepairsSent,
		Lock: c.LockState().String(), Leader: leader, LeaderRound: round,
	}
	var roles []string
	if len(v.Members) > 0 && v.Coordinator() == c.self {
		roles = append(roles, "coordinator")
	}
	if leader == c.self {
		roles = append(roles, "leader")
	}
	if info.Role = strings.Join(roles, "+"); info.Role == "" {
		info.Role = "member"
	}
	return info
}

// State is the node's state as Status.State says it: joining (no view
// yet), member (in a view, sending), or changing (a view change or a
// leave holds sends).
func (c *Core) State() string {
	switch {
	case len(c.View().Members) == 0:
		return StateJoining
	case !c.Sending():
		return StateChanging
	}
	return StateMember
}

// probeMessage handles a probe message delivered from another member: a
// question is answered, an answer to a probe this node waits for is
// recorded. Anything else is counted as bad and dropped.
func (c *Core) probeMessage(now time.Time, from uint64, payload []byte) {
	p := &c.probe
	var m probeMsg
	if len(payload) > maxProbePayload || msgpack.Unmarshal(payload, &m) != nil {
		p.bad++
		return
	}
	switch m.Op {
	case probeAsk:
		info := c.probeInfo(now)
		b, err := msgpack.Marshal(probeMsg{Op: probeAnswer, ID: m.ID, Info: &info})
		if err != nil || len(b) > maxProbePayload {
			p.bad++
			return
		}
		p.out.add(from, b)
		p.answered++
	case probeAnswer:
		w := p.waits[m.ID]
		if w == nil || m.Info == nil || !w.answer(from, *m.Info) {
			p.bad++ // unasked, late, from a non-member, or a second answer
			return
		}
		if w.missed == 0 {
			c.events = append(c.events, Event{Kind: ProbeDoneEvent, ProbeID: m.ID})
		}
	default:
		p.bad++
	}
}
