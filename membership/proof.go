package membership

import (
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// A merge waits for proof (docs/design.md, "A merge waits for proof").
// Hearing a node shows only that its datagrams reach this one. Before the
// coordinator takes a node into its view, by merge or admission, it asks
// it for proof, the way it would send the flush, and the node answers at
// once. An answer within a suspect timeout shows, both ways and lately,
// that the node can take part in the flush; a node that cannot hear the
// group, or runs too late to answer, is never asked into one. A node that
// finds itself starved says so in its answer, and a coordinator that is
// not starved itself takes that answer for no proof: the node would be
// excluded again as soon as it is taken in.

// prover is what a coordinator keeps of its questions: the times of the
// questions it asked lately (an answer must echo one), the nodes it asked,
// and the proofs it holds.
type prover struct {
	st, limit time.Duration     // a proof lasts st; an answer counts within limit
	asked     [askRing]int64    // Sent of the latest questions
	next      int               // where the next goes in asked
	askAt     time.Time         // the next questions may go then
	rounds    int               // rounds asked since the last proof (the next waits longer)
	pending   map[uint64]uint64 // id → incarnation asked lately (at most maxProofs)
	proofs    map[uint64]proof  // id → its proof (at most maxProofs)
	work      uint64            // entries examined: tests bound it
}

// proof is what a node showed: the incarnation that answered in time,
// when it last did, and since when it has without a miss (run).
type proof struct {
	inc       uint64
	at, since time.Time
}

const (
	// askRing is how many questions an answer may echo: the latest, one
	// a heartbeat, over more than a suspect timeout.
	askRing = 16
	// maxProofs bounds the nodes asked and proven: the candidates of
	// merges and admissions, which heard and the joiners bound already.
	maxProofs = maxStrangers + maxJoiners
	// proofRun is how many suspect timeouts a node held off must answer
	// every question in time before its hold ends early: it recovered.
	proofRun = 2
)

func newProver(st, limit time.Duration) prover {
	return prover{st: st, limit: limit, pending: map[uint64]uint64{}, proofs: map[uint64]proof{}}
}

// holds reports whether node x has shown lately that it can take part.
func (p *prover) holds(now time.Time, x wire.Member) bool {
	f, ok := p.proofs[x.ID]
	return ok && f.inc == x.Inc && now.Sub(f.at) <= p.st
}

// recovered reports whether node x, held off, has answered in time for
// proofRun suspect timeouts in a row.
func (p *prover) recovered(now time.Time, x wire.Member) bool {
	f, ok := p.proofs[x.ID]
	return ok && f.inc == x.Inc && !f.since.IsZero() && now.Sub(f.at) <= p.st && f.at.Sub(f.since) >= proofRun*p.st
}

// ask returns the questions to send now to the nodes xs: a round first
// after first, then after twice as long for each round unanswered, up to
// every (a heartbeat). None when xs is empty or the last round is too
// recent.
func (p *prover) ask(now time.Time, first, every time.Duration, xs []wire.Member) []wire.Proof {
	if len(xs) == 0 {
		p.rounds = 0
		return nil
	}
	if now.Before(p.askAt) {
		return nil
	}
	p.askAt = now.Add(min(first<<min(p.rounds, 16), every))
	p.rounds++
	sent := now.UnixNano()
	p.asked[p.next] = sent
	p.next = (p.next + 1) % askRing
	out := make([]wire.Proof, 0, len(xs))
	for _, x := range xs {
		if _, ok := p.pending[x.ID]; !ok && len(p.pending) >= maxProofs {
			continue
		}
		p.pending[x.ID] = x.Inc
		out = append(out, wire.Proof{Target: x.ID, TargetInc: x.Inc, Sent: sent})
	}
	return out
}

// answered takes node id's answer (incarnation inc) to a question: it
// proves the node when it echoes a question asked within the limit and to
// that incarnation, and the node is not starved unless this one is too
// (self). It reports whether it proved the node; late and starved answers
// break the node's run.
func (p *prover) answered(now time.Time, id, inc uint64, a *wire.Proof, self bool) (proved, counted bool) {
	if p.pending[id] != inc || inc == 0 {
		return false, false // not asked: stale, or forged
	}
	asked := false
	for _, s := range p.asked {
		p.work++
		if s != 0 && s == a.Sent {
			asked = true
			break
		}
	}
	if !asked {
		return false, false
	}
	f := p.proofs[id]
	if f.inc != inc {
		f = proof{inc: inc}
	}
	late := now.Sub(time.Unix(0, a.Sent)) > p.limit
	if late || a.Flags&wire.ProofStarved != 0 && !self {
		f.since = time.Time{}
		if f.at.IsZero() {
			return false, true // nothing to keep: no proof yet
		}
		p.proofs[id] = f
		return false, true
	}
	if f.since.IsZero() || now.Sub(f.at) > p.st {
		f.since = now
	}
	p.rounds = 0
	f.at = now
	p.proofs[id] = f
	return true, true
}

// prune forgets the questions and proofs of nodes not asked or proven for
// a suspect timeout.
func (p *prover) prune(now time.Time) {
	for id, f := range p.proofs {
		if now.Sub(f.at) > p.st {
			delete(p.proofs, id)
		}
	}
	if now.Sub(p.askAt) > p.st {
		clear(p.pending)
	}
}

// The Machine's side: a question to answer, an answer to take.

// onProof answers a question that names this node, at most limitBurst a
// heartbeat, or takes an answer to this node's question.
func (m *Machine) onProof(now time.Time, env *wire.Envelope) {
	q := &env.Proof
	if q.Target != m.self || q.TargetInc != m.inc {
		return // for another node, or an earlier incarnation of this one
	}
	if q.Flags&wire.ProofAnswer == 0 {
		if m.state == joining {
			m.askedAt = now // a coordinator is taking this node in: it founds no view of its own meanwhile
		}
		if !m.answers.allow(now, m.opt.Engine.Heartbeat, limitBurst) {
			m.stats.ProofsDropped++
			return
		}
		a := wire.Proof{Target: env.From, TargetInc: env.Inc, Sent: q.Sent, Flags: wire.ProofAnswer}
		if m.starved() {
			a.Flags |= wire.ProofStarved
		}
		m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindProof}, Proof: a})
		m.stats.ProofsGiven++
		return
	}
	proved, counted := m.coord.proofs.answered(now, env.From, env.Inc, q, m.starved())
	switch {
	case proved:
		m.stats.Proofs++
		if m.acting() && m.coord.changeAt.IsZero() {
			// Look again soon, not at once: the answers of the other
			// nodes asked with it are on their way, and one view change
			// takes them all.
			m.coord.changeAt = now.Add(m.retry() / 2)
		}
	case counted:
		m.stats.ProofsFailed++
	}
}

// askProofs asks the nodes a proposal would take in, and the nodes held
// off that this node still hears, for proof.
func (m *Machine) askProofs(now time.Time, xs []wire.Member) {
	for _, q := range m.coord.proofs.ask(now, m.retry(), m.opt.Engine.Heartbeat, xs) {
		m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindProof}, Proof: q})
		m.stats.ProofsAsked++
	}
}

// Local health (docs/design.md, "Local health"): a node that notices
// pauses of its own, its loop held up for a heartbeat or more (starved of
// CPU, stopped, its timers late), knows its view of the others is late.

// health is what a node keeps of its own pauses.
type health struct {
	last    time.Time // the last pause noticed
	run     int       // pauses in a row, each within a suspect timeout of the one before
	starved bool
	level   int       // 0 to maxStretch: how starved; this node's suspicions wait level+1 suspect timeouts
	easedAt time.Time // when level last went down (or the last pause)
}

// maxStretch bounds the health level: a node at most this starved waits
// maxStretch+1 suspect timeouts before it suspects a peer (Lifeguard's
// local health multiplier, arXiv:1707.00788, bounds it at 8 too).
const maxStretch = 8

// starvedPauses is how many pauses in a row, each within a suspect timeout
// of the one before, make a node starved: one pause is a hiccup.
const starvedPauses = 2

// paused notes a pause of d at now; it reports whether the node became
// starved.
func (h *health) paused(now time.Time, d, st time.Duration) bool {
	if !h.last.IsZero() && now.Sub(h.last)-d <= st {
		h.run++
	} else {
		h.run = 1
	}
	h.last, h.easedAt = now, now
	if h.run >= starvedPauses {
		h.level = min(h.level+1, maxStretch) // each pause of a starved run: one suspect timeout more
	}
	if h.starved || h.run < starvedPauses {
		return false
	}
	h.starved = true
	return true
}

// deadline is when the node, starved or stretched, will have run a
// suspect timeout without a pause since the last pause or easing; zero
// when it is neither.
func (h *health) deadline(st time.Duration) time.Time {
	if !h.starved && h.level == 0 {
		return time.Time{}
	}
	return h.easedAt.Add(st)
}

// starved reports whether this node finds itself starved: it noticed
// starvedPauses pauses in a row and has not run a suspect timeout since
// without one. A starved node says so in its answers to questions, so that a
// coordinator that is not starved takes it into no view, and leads no
// merge by waiting (coordinator.leads): a view that takes it in would
// exclude it again, each change a flush that holds every member's sends.
func (m *Machine) starved() bool { return m.health.starved }

// tickHealth notes each suspect timeout this node has run without a
// pause: the first ends its starvation, and each brings its suspicions
// one suspect timeout nearer the plain one.
func (m *Machine) tickHealth(now time.Time) {
	h := &m.health
	t := h.deadline(m.opt.Engine.SuspectTimeout)
	if t.IsZero() || now.Before(t) {
		return
	}
	h.easedAt = now
	h.level = max(h.level-1, 0)
	if h.starved {
		h.starved, h.run = false, 0
		m.emit(Event{Kind: Health, View: m.view.clone(), Stretch: h.level})
	}
	m.engine.Stretch(h.level)
}

// suspectTimeout is how long this node waits before it suspects a member
// it does not hear: the suspect timeout, stretched by its health level.
func (m *Machine) suspectTimeout() time.Duration {
	return m.opt.Engine.SuspectTimeout * time.Duration(1+m.health.level)
}
