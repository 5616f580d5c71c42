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

// probeWait is a probe this node waits for: the view's members and what
// they answered.
type probeWait struct {
	res    ProbeResult
	index  map[uint64]int // member ID → its row
	missed int            // rows not answered yet
	done   chan struct{}  // closed once every member answered
}

// Probe asks every member of the view for its summary and returns the
// answers, once each has answered or when ctx ends (those who did not
// answer by then have Answered false). ErrNotInView before the first
// view; ErrProbeBusy with 16 probes waiting.
func (n *Node) Probe(ctx context.Context) (ProbeResult, error) {
	start := time.Now()
	var w *probeWait
	var id uint64
	busy := false
	err := n.Do(ctx, func(c *Core) {
		v := c.View()
		if busy = len(n.probes) >= maxProbes; busy || len(v.Members) == 0 || c.Leaving() {
			return
		}
		n.probeSeq++
		id = n.probeSeq
		w = &probeWait{res: ProbeResult{View: v.ID.String(), Asker: n.o.Config.ID}, index: map[uint64]int{}, done: make(chan struct{})}
		for i, m := range v.Members {
			w.res.Members = append(w.res.Members, ProbeRow{ID: m.ID, Incarnation: m.Inc})
			w.index[m.ID] = i
		}
		w.missed = len(v.Members)
		w.answer(n.o.Config.ID, n.probeInfo(time.Now()))
		if w.missed > 0 {
			b, _ := msgpack.Marshal(probeMsg{Op: probeAsk, ID: id}) // always encodes
			c.probeSend(0, b)
			n.probes[id] = w
		}
	})
	switch {
	case err != nil:
		return ProbeResult{}, err
	case busy:
		return ProbeResult{}, ErrProbeBusy
	case w == nil:
		return ProbeResult{}, membership.ErrNotInView
	}
	select {
	case <-w.done:
	case <-ctx.Done():
	case <-n.stopped:
	}
	var res ProbeResult
	if err := n.Do(context.Background(), func(*Core) {
		delete(n.probes, id)
		res = w.res
		res.Members = slices.Clone(w.res.Members)
	}); err != nil {
		return ProbeResult{}, err
	}
	res.WaitMS = time.Since(start).Milliseconds()
	return res, nil
}

// answer records member id's summary, if it is a member not heard yet.
func (w *probeWait) answer(id uint64, info ProbeInfo) bool {
	i, ok := w.index[id]
	if !ok || w.res.Members[i].Answered || info.ID != id {
		return false
	}
	w.res.Members[i].Answered, w.res.Members[i].Info = true, &info
	if w.missed--; w.missed == 0 {
		close(w.done)
	}
	return true
}

// probeInfo is this node's own summary; only the loop may call it.
func (n *Node) probeInfo(now time.Time) ProbeInfo {
	c, v := n.o.Config, n.core.View()
	leader, round := n.core.Leader()
	_, ms := n.core.Stats()
	info := ProbeInfo{
		ID: c.ID, Incarnation: n.o.Inc, Addr: n.o.Transport.LocalAddr().String(), View: v.ID.String(),
		State: StateMember, UptimeMS: now.Sub(n.start).Milliseconds(),
		Delivered: ms.MsgsDelivered, NACKs: ms.NacksSent, Repairs: ms.RepairsSent,
		Lock: n.core.LockState().String(), Leader: leader, LeaderRound: round,
	}
	switch {
	case len(v.Members) == 0:
		info.State = StateJoining
	case !n.core.Sending():
		info.State = StateChanging
	}
	var roles []string
	if len(v.Members) > 0 && v.Coordinator() == c.ID {
		roles = append(roles, "coordinator")
	}
	if leader == c.ID {
		roles = append(roles, "leader")
	}
	if info.Role = strings.Join(roles, "+"); info.Role == "" {
		info.Role = "member"
	}
	return info
}

// probeEvent handles a probe message delivered from member from: a
// question is answered, an answer to a probe this node waits for is
// recorded. Anything else is counted as bad and dropped.
func (n *Node) probeEvent(p ProbeSeen) {
	var m probeMsg
	if len(p.Payload) > maxProbePayload || msgpack.Unmarshal(p.Payload, &m) != nil {
		n.probeBad++
		return
	}
	switch m.Op {
	case probeAsk:
		info := n.probeInfo(time.Now())
		b, err := msgpack.Marshal(probeMsg{Op: probeAnswer, ID: m.ID, Info: &info})
		if err != nil || len(b) > maxProbePayload {
			n.probeBad++
			return
		}
		if len(n.probeReplies) < maxProtocolQueue {
			n.probeReplies = append(n.probeReplies, queued{to: p.From, payload: b})
		}
	case probeAnswer:
		w := n.probes[m.ID]
		if w == nil || m.Info == nil || !w.answer(p.From, *m.Info) {
			n.probeBad++ // unasked, late, from a non-member, or a second answer
		}
	default:
		n.probeBad++
	}
}

// sendProbeReplies sends the answers probeEvent made, once report has
// handed out every event (a call into the Core would end the validity of
// the deliveries' bytes). It reports whether it sent any.
func (n *Node) sendProbeReplies() bool {
	for _, q := range n.probeReplies {
		n.core.probeSend(q.to, q.payload)
		n.probesAnswered++
	}
	sent := len(n.probeReplies) > 0
	n.probeReplies = n.probeReplies[:0]
	return sent
}

// ProbeSeen is a probe message delivered to this node, from another
// member (ProbeEvent).
type ProbeSeen struct {
	From    uint64
	Payload []byte // valid until the next call into the Core
}

// probePart holds the probe messages waiting for the view and the window.
type probePart struct {
	out outQueue
}

// probeSend queues a probe message to member to (0: every other member)
// and sends it as far as the view and the window let it now.
func (c *Core) probeSend(to uint64, payload []byte) {
	c.probe.out.add(to, payload)
	c.probe.out.send(c.membership, probeService)
}

// probeMessage reports a probe message delivered from another member; the
// node's own question comes back to it and is not an input.
func (c *Core) probeMessage(d *membership.Delivery) {
	if d.Source != c.opt.ID {
		c.events = append(c.events, Event{Kind: ProbeEvent, Probe: ProbeSeen{From: d.Source, Payload: d.Payload}})
	}
}
