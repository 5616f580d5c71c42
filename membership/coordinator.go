package membership

import (
	"cmp"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// coordinator is what this node keeps to coordinate its view: the changes
// pending (joiners to admit, members leaving or to exclude), the nodes of
// other views it hears, and the backoffs of admissions and merges that
// failed. Every member keeps it, since any may have to take over; only
// the acting coordinator asks it for a proposal (docs/design.md, "Join",
// "The flush", "Merge"). It reads the node's state the Machine passes in
// (group) and hands back what it decided.
type coordinator struct {
	self     uint64
	st       time.Duration             // the suspect timeout
	settings []Setting                 // what a joiner must have
	joiners  map[uint64]joiner         // id → the join request (at most maxJoiners)
	leavers  map[uint64]uint64         // id → incarnation leaving gracefully (members only)
	excluded map[uint64]uint64         // id → incarnation to exclude (suspected; members only)
	reports  map[uint64]suspicion      // id → who reported it suspected first, when, and whether another did since
	foreign  map[uint64]time.Time      // nodes of other views, since when this node has heard them (a subset of heard)
	views    map[wire.ViewID]time.Time // the other views heard of, since when (those of foreign)
	gather   time.Duration             // how long another view is heard before a merge with it: every reachable member of it speaks
	offs     holdOffs                  // nodes held out of merges and admissions
	proofs   prover                    // questions asked of the nodes to take in, and their answers
	restarts map[uint64]restart        // id → the incarnation last seen entering a view, when, and how often in a row
	admits   streak                    // admissions that failed: a node to admit or merge did not answer
	failing  bool                      // the view change under way had one
	changeAt time.Time                 // when to start the flush for pending changes; zero = none pending
	work     uint64                    // entries its proposals examined (heard, joiners): tests bound it
}

// joiner is a pending join request: the incarnation asking, and when it
// last asked.
type joiner struct {
	inc uint64
	at  time.Time
}

// group is what the coordinator reads of this node's state.
type group struct {
	view     View
	viewAt   time.Time         // when it was installed
	suspects map[uint64]uint64 // members suspected: id → the incarnation suspected
	heard    map[uint64]heard
	size     commitSize
	starved  bool // this node finds itself starved (local health): it leads no merge by waiting
}

// commitSize bounds the size of a proposed view's commit: it lists every
// member and where its stream starts, and the cut of each prior view.
// Sequence numbers are bounded by what each member holds now (received,
// the engine's count) plus a window it might still send.
type commitSize struct {
	received receiver
	window   uint64 // messages a member may still send
	limit    int    // bytes: the largest membership message (Options.MessageSize)
	self     uint64
	inc      uint64
	maxEpoch uint64 // the highest epoch heard of: the commit's is near it
}

// receiver tells how far this node holds the stream of source src
// (incarnation inc), in order: the engine.
type receiver interface {
	Received(src, inc uint64) uint64
}

// fits reports whether the commit of a view of these members, with the
// cuts of priors prior views, would fit the largest membership message.
func (s commitSize) fits(members []wire.Member, priors int) bool {
	bound := func(x wire.Member) uint64 { return s.received.Received(x.ID, x.Inc) + s.window + 1 }
	c := wire.ViewCommit{Epoch: s.maxEpoch + 2, Attempt: wire.MaxAttempt}
	var cut []wire.Cut
	for _, x := range members {
		c.Members = append(c.Members, wire.ViewMember{ID: x.ID, Inc: x.Inc, Next: bound(x)})
		cut = append(cut, wire.Cut{ID: x.ID, Seq: bound(x)})
	}
	for range max(priors, 1) {
		c.Cuts = append(c.Cuts, wire.ViewCut{View: wire.ViewID{Epoch: s.maxEpoch + 1, Coord: ^uint64(0)}, Inc: ^uint64(0), Cuts: cut})
	}
	env := wire.Envelope{Header: wire.Header{Group: ^uint32(0), From: s.self, Inc: s.inc, Kind: wire.KindView,
		View: wire.ViewID{Epoch: s.maxEpoch + 1, Coord: s.self}}, Commit: c}
	n, err := wire.EncodedSize(&env)
	return err == nil && n <= s.limit
}

// change is a proposal: the next view's members, oldest first, and the
// graceful leavers it drops; changed is false when it is the view itself.
// refused are the joiners it leaves out because the view would not fit
// them.
type change struct {
	members []wire.Member
	left    []uint64
	changed bool
	refused []refusal
	ask     []wire.Member // nodes to take in that have not shown lately that they can: ask them for proof
}

// refusal refuses a joiner, naming the setting in which it differs.
type refusal struct {
	id, inc              uint64
	setting, ours, their string
}

// verdict is what becomes of a join request.
type verdict uint8

const (
	taken   verdict = iota // admitted with the next view change
	waits                  // held off, or over the cap of pending joins
	refused                // its settings differ
)

func newCoordinator(self uint64, st, gather time.Duration, settings []Setting) coordinator {
	return coordinator{self: self, st: st, gather: gather, settings: settings, joiners: map[uint64]joiner{}, leavers: map[uint64]uint64{},
		excluded: map[uint64]uint64{}, reports: map[uint64]suspicion{}, foreign: map[uint64]time.Time{}, views: map[wire.ViewID]time.Time{}, offs: newHoldOffs(st),
		proofs: newProver(st, st), restarts: map[uint64]restart{}}
}

// proposal computes the next view: the members of g's view not excluded,
// in their order, then the nodes this coordinator merges, then the
// joiners, each added only while the view's commit fits. After
// admissions failed in a row (admits), nobody is merged or admitted for a
// while.
func (c *coordinator) proposal(now time.Time, g group) change {
	ch := c.kept(now, g)
	if c.admits.held(now) {
		return ch
	}
	priors := map[wire.ViewID]bool{g.view.ID: true}
	c.merge(now, g, &ch, priors)
	c.admit(now, g, &ch, len(priors))
	return ch
}

// kept is the proposal of g's view without the members suspected,
// leaving, excluded (once confirmed) or restarted, and with this node.
func (c *coordinator) kept(now time.Time, g group) (ch change) {
	for _, x := range g.view.Members {
		_, excl := c.excluded[x.ID]
		if excl && !c.confirmed(now, g, x) {
			excl = false
		}
		if j, replaced := c.joiners[x.ID]; replaced && j.inc != x.Inc {
			excl = true // restarted: its new incarnation joins below
		}
		if x.ID != c.self && (g.suspects[x.ID] == x.Inc || excl) {
			ch.changed = true
			if _, l := c.leavers[x.ID]; l {
				ch.left = append(ch.left, x.ID)
			}
			continue
		}
		ch.members = append(ch.members, x)
	}
	return ch
}

// merge adds the nodes of other views to merge, in order, as long as the
// commit, with the cut of each of their views, fits.
func (c *coordinator) merge(now time.Time, g group, ch *change, priors map[wire.ViewID]bool) {
	ids, held := c.mergeable(now, g)
	for _, id := range held {
		ch.ask = append(ch.ask, wire.Member{ID: id, Inc: g.heard[id].inc})
	}
	// A view is merged whole: its nodes wait until every one of them heard
	// is proven, or the first of them was proven gather ago (the others'
	// answers were lost, or they cannot take part). Else one lost answer
	// leaves a member behind, and it secedes alone and is merged again.
	whole := map[wire.ViewID]bool{}
	first := map[wire.ViewID]time.Time{}
	var cands []wire.Member
	for _, id := range ids {
		x := wire.Member{ID: id, Inc: g.heard[id].inc}
		if c.restarting(now, x) {
			continue // it founded a view of its own when it restarted: it waits its turn as a joiner would
		}
		v := g.heard[id].view
		if _, ok := whole[v]; !ok {
			whole[v] = true
		}
		if !c.proofs.holds(now, x) {
			ch.ask = append(ch.ask, x)
			whole[v] = false
			continue
		}
		if at := c.proofs.proofs[id].since; first[v].IsZero() || at.Before(first[v]) {
			first[v] = at
		}
		cands = append(cands, x)
	}
	for _, x := range cands {
		h := g.heard[x.ID]
		if !whole[h.view] && now.Sub(first[h.view]) < c.gather {
			continue
		}
		was := priors[h.view]
		priors[h.view] = true
		if !g.size.fits(append(ch.members, x), len(priors)) {
			if !was {
				delete(priors, h.view)
			}
			return
		}
		ch.members = append(ch.members, x)
		ch.changed = true
	}
}

// admit adds the joiners, by ID, that still ask and that the commit fits;
// it refuses the others (setting "members") and forgets them.
func (c *coordinator) admit(now time.Time, g group, ch *change, priors int) {
	for _, id := range sortedKeys(c.joiners) {
		c.work++
		j := c.joiners[id]
		x := wire.Member{ID: id, Inc: j.inc}
		if now.Sub(j.at) > c.st {
			delete(c.joiners, id) // it stopped asking
			continue
		}
		if containsMember(ch.members, id) || c.restarting(now, x) {
			continue
		}
		if !c.proofs.holds(now, x) {
			ch.ask = append(ch.ask, x)
			continue
		}
		if !g.size.fits(append(ch.members, x), priors) {
			ch.refused = append(ch.refused, refusal{id, x.Inc, "members", itoa(uint64(len(ch.members))), "one more"})
			delete(c.joiners, id)
			continue
		}
		ch.members = append(ch.members, x)
		ch.changed = true
	}
}

// mergeable lists the nodes this coordinator should merge into its view:
// heard lately (and since this view was installed: a node it just
// excluded still echoes the old view), in another view, not held off,
// and of a view this coordinator leads the merge with (leads). held lists
// those it would merge but holds off: it asks them for proof, and ends
// the hold of one that has answered in time for a while (recovered).
func (c *coordinator) mergeable(now time.Time, g group) (ids, held []uint64) {
	claims := map[wire.ViewID]int{}
	var cands, offs []uint64
	for id, h := range g.heard {
		c.work++
		if h.view == (wire.ViewID{}) || now.Sub(h.at) > c.st || !h.at.After(g.viewAt) {
			delete(c.foreign, id)
			continue
		}
		claims[h.view]++
		// A node that is not a member but claims this view's ID is in
		// another view of the same ID: a restarted coordinator's.
		if g.view.HasInc(id, h.inc) {
			delete(c.foreign, id)
			continue
		}
		if c.offs.heldOff(now, id) {
			if !c.proofs.recovered(now, wire.Member{ID: id, Inc: h.inc}) {
				delete(c.foreign, id)
				offs = append(offs, id)
				continue
			}
			c.offs.release(now, id) // it answered in time for a while: it recovered
		}
		cands = append(cands, id)
	}
	for v := range c.views {
		if claims[v] == 0 {
			delete(c.views, v)
		}
	}
	for v := range claims {
		if _, ok := c.views[v]; !ok && v != g.view.ID {
			c.views[v] = now
		}
	}
	slices.Sort(cands)
	for _, id := range cands {
		if c.leads(now, g, id, claims) {
			ids = append(ids, id)
		}
	}
	for _, id := range offs {
		if h := g.heard[id]; now.Sub(c.views[h.view]) >= c.gather && c.ruled(g, h, claims) {
			held = append(held, id)
		}
	}
	slices.Sort(held)
	return ids, held
}

// leads reports whether this coordinator leads the merge with node id.
// The larger view leads, as far as this node can tell from what it hears
// (how many nodes claim each view); between equals, the newer view. So a
// member cut off alone, whose own view is newer, is merged back by the
// group rather than taking it over. It counts once it has heard the
// other view for gather, a heartbeat and a half: by then every member of
// it within reach has spoken, so both sides count alike and the merge
// takes the whole view, not the few heard first (the rest would find
// their view gone on without them, and secede one by one). Should the
// other side not lead either (each counts differently), this one leads
// after mergeWait suspect timeouts, unless it is starved: then it leads
// only by the rule (local health).
func (c *coordinator) leads(now time.Time, g group, id uint64, claims map[wire.ViewID]int) bool {
	h := g.heard[id]
	if _, ok := c.foreign[id]; !ok {
		c.foreign[id] = now
	}
	if now.Sub(c.views[h.view]) < c.gather {
		return false
	}
	return c.ruled(g, h, claims) || !g.starved && now.Sub(c.foreign[id]) >= mergeWait*c.st
}

// ruled reports whether this coordinator leads the merge with a node
// heard as h by the rule: its view is the larger, or the newer of equals.
func (c *coordinator) ruled(g group, h heard, claims map[wire.ViewID]int) bool {
	ours, theirs := len(g.view.Members), claims[h.view]
	return ours > theirs || ours == theirs && h.view.Less(g.view.ID)
}

// mergeWait is how many suspect timeouts a coordinator waits for the
// other side to lead a merge before it leads it itself.
const mergeWait = 4

// due reports whether the flush of a change should start now: changes
// that arrive together share one view change, which starts delay after
// the first of them.
func (c *coordinator) due(now time.Time, changed bool, delay time.Duration) bool {
	if !changed {
		c.changeAt = time.Time{}
		return false
	}
	if c.changeAt.IsZero() {
		c.changeAt = now.Add(delay)
	}
	if now.Before(c.changeAt) {
		return false
	}
	c.changeAt = time.Time{}
	return true
}

// idle forgets a change due: this node does not act, or a flush is under
// way (the changes are looked at again once it is over).
func (c *coordinator) idle() { c.changeAt = time.Time{} }

// join takes a join request of incarnation inc of node id, with its
// settings: a node that did not answer its last admission is held off,
// at most maxJoiners requests wait at once, and a joiner whose settings
// differ is refused. The proposal refuses it if the view would not fit.
func (c *coordinator) join(now time.Time, id, inc uint64, theirs []wire.Setting) (verdict, refusal) {
	if _, pending := c.joiners[id]; c.offs.joinHeldOff(now, id, inc) || !pending && len(c.joiners) >= maxJoiners {
		return waits, refusal{}
	}
	if name, ours, their, differ := c.compare(theirs); differ {
		return refused, refusal{id, inc, name, ours, their}
	}
	c.joiners[id] = joiner{inc: inc, at: now}
	return taken, refusal{}
}

// compare returns the first protocol setting in which a joiner differs.
func (c *coordinator) compare(theirs []wire.Setting) (name, ours, their string, differ bool) {
	for _, s := range c.settings {
		v, ok := "", false
		for _, t := range theirs {
			if string(t.Name) == s.Name {
				v, ok = string(t.Value), true
				break
			}
		}
		if !ok || v != s.Value {
			return s.Name, s.Value, v, true
		}
	}
	for _, t := range theirs {
		if !slices.ContainsFunc(c.settings, func(s Setting) bool { return s.Name == string(t.Name) }) {
			return string(t.Name), "", string(t.Value), true
		}
	}
	return "", "", "", false
}

// leaving notes that member id (incarnation inc) asked to leave.
func (c *coordinator) leaving(id, inc uint64) { c.leavers[id] = inc }

// isLeaving reports whether member id asked to leave.
func (c *coordinator) isLeaving(id uint64) bool {
	_, ok := c.leavers[id]
	return ok
}

// exclude notes a member's report that member id (incarnation inc) is
// suspected.
func (c *coordinator) exclude(now time.Time, id, inc, by uint64) {
	c.excluded[id] = inc
	r, ok := c.reports[id]
	switch {
	case !ok || r.inc != inc:
		r = suspicion{inc: inc, by: by, at: now}
	case r.by != by:
		r.again = true
	}
	r.last = now
	c.reports[id] = r
}

// suspicion is the first report that a member is suspected: of which
// incarnation, by whom, when; again: another member reported it since.
type suspicion struct {
	inc, by  uint64
	at, last time.Time // the first report, the latest (reports repeat while the suspicion lasts)
	again    bool
}

// confirmed reports whether the suspicion of member x that others
// reported is confirmed (docs/design.md, "Local health"): two members
// reported it, or this node has not heard x for half a suspect timeout
// itself, or the first report is a suspect timeout old. Until then a
// member this node still hears stays: the one that reported it may be
// the one that is late (starved), and excluding it would cost two views.
// A report not repeated for half a suspect timeout lapses (its sender
// hears x again) and is forgotten. A crashed member is silent here too,
// so its exclusion waits for nothing.
func (c *coordinator) confirmed(now time.Time, g group, x wire.Member) bool {
	r, ok := c.reports[x.ID]
	if !ok || r.inc != x.Inc || r.again {
		return true
	}
	h, heard := g.heard[x.ID]
	if !heard || h.inc != x.Inc || now.Sub(h.at) >= c.st/2 {
		return true
	}
	if now.Sub(r.last) > c.st/2 {
		delete(c.reports, x.ID) // it lapsed
		delete(c.excluded, x.ID)
		return false
	}
	return now.Sub(r.at) >= c.st
}

// forget drops what the coordinator knows of node id, which this node no
// longer hears.
func (c *coordinator) forget(id uint64) { delete(c.foreign, id) }

// settle drops the pending changes view v, installed at now, made, and
// notes the incarnations it took in (restarts).
func (c *coordinator) settle(now time.Time, v View) {
	c.entered(now, v)
	for id, j := range c.joiners {
		if v.HasInc(id, j.inc) {
			delete(c.joiners, id)
		}
	}
	c.offs.settle(v)
	for id, r := range c.reports {
		if !v.HasInc(id, r.inc) {
			delete(c.reports, id)
		}
	}
	for id := range c.excluded {
		if !v.HasInc(id, c.excluded[id]) {
			delete(c.excluded, id)
		}
	}
	for id, inc := range c.leavers {
		if !v.HasInc(id, inc) {
			delete(c.leavers, id)
		}
	}
}

// restart is what a node keeps of another's incarnations entering its
// views: the last, when, and how many in a row entered within
// restartWindow of the one before (a node that keeps crashing and
// restarting).
type restart struct {
	inc uint64
	at  time.Time
	n   uint8
}

// restartWindow is how long, in suspect timeouts, an incarnation must
// have entered the view before the next of its node no longer counts as
// one more restart in a row: longer than the longest wait, so that a node
// restarting at that pace still counts.
const restartWindow = 2 * maxHoldOff

// entered notes the incarnations of view v, installed at now, that no
// view held before, and forgets the nodes neither in v nor seen entering
// for restartWindow.
func (c *coordinator) entered(now time.Time, v View) {
	for _, x := range v.Members {
		r, ok := c.restarts[x.ID]
		if ok && r.inc == x.Inc {
			continue
		}
		if ok && now.Sub(r.at) < restartWindow*c.st {
			r.n = min(r.n+1, 32)
		} else {
			r.n = 0
		}
		c.restarts[x.ID] = restart{inc: x.Inc, at: now, n: r.n}
	}
	for id, r := range c.restarts {
		if !v.Has(id) && now.Sub(r.at) >= restartWindow*c.st {
			delete(c.restarts, id)
		}
	}
}

// restarting reports whether joiner x, a new incarnation of a node that
// keeps restarting, must wait: after n restarts in a row, each within
// restartWindow of the last, the next enters no sooner than 2^n suspect
// timeouts after it, up to maxHoldOff (docs/design.md, "A merge waits
// for proof"). A node that crashes and restarts now and then enters at
// once.
func (c *coordinator) restarting(now time.Time, x wire.Member) bool {
	r, ok := c.restarts[x.ID]
	if !ok || r.inc == x.Inc || r.n == 0 {
		return false
	}
	wait := min(c.st<<min(r.n, 30), maxHoldOff*c.st)
	return now.Before(r.at.Add(wait))
}

// unanswered holds off node x, which this node's flush would have
// admitted or merged and which did not answer, the longer the more often
// it does not answer.
func (c *coordinator) unanswered(now time.Time, x wire.Member) {
	delete(c.joiners, x.ID)
	c.offs.hold(now, x.ID, x.Inc, 2*c.st, true)
}

// leftGracefully holds off member x, which left: it is on its way out,
// and its last datagrams still claim the view it left.
func (c *coordinator) leftGracefully(now time.Time, x wire.Member) {
	c.offs.hold(now, x.ID, x.Inc, 2*c.st, false)
}

// oddSettings holds off node id (incarnation inc), whose settings differ
// from this node's, for mergeBackoff suspect timeouts.
func (c *coordinator) oddSettings(now time.Time, id, inc uint64) {
	c.offs.hold(now, id, inc, mergeBackoff*c.st, false)
}

// mergeBackoff is how many suspect timeouts a node that could not be
// merged (its settings differ) is left alone.
const mergeBackoff = 20

// admitFailed notes that a node to admit or merge did not answer the view
// change under way, which has held sends for blocked: from the second such
// view change in a row, the coordinator admits and merges nobody for a
// while (admits).
func (c *coordinator) admitFailed(now time.Time, blocked time.Duration) {
	c.admits.fail(now, !c.failing, blocked, noLimit)
	c.failing = true
}

// installed notes the end of a view change in a view; tookIn: this node
// coordinated it and took nodes in from outside the view, all of which
// answered unless the change failed.
func (c *coordinator) installed(tookIn bool) {
	if tookIn && !c.failing {
		c.admits.reset()
	}
	c.failing = false
}

// prune forgets the hold-offs that ended, the join requests not repeated
// for a suspect timeout, and, after a long quiet, the admissions that
// failed.
func (c *coordinator) prune(now time.Time) {
	c.offs.prune(now)
	c.proofs.prune(now)
	for id, j := range c.joiners {
		if now.Sub(j.at) > c.st {
			delete(c.joiners, id)
		}
	}
	c.admits.expire(now, maxHoldOff*c.st)
}

// The Machine's side: when it coordinates, and what it does with the
// coordinator's decisions.

// acting reports whether this node coordinates its view now: it is the
// oldest member not suspected of having crashed or left.
func (m *Machine) acting() bool {
	if m.state != member {
		return false
	}
	for _, x := range m.view.Members {
		if x.ID == m.self {
			return true
		}
		if m.suspects[x.ID] != x.Inc {
			return false
		}
	}
	return false
}

// tickCoordinator starts a view change when one is due: members to
// exclude (suspected or leaving), joiners to admit, other views to merge.
// Changes that arrive together share one view change: the flush starts
// half a retry interval after the first of them.
func (m *Machine) tickCoordinator(now time.Time) {
	if !m.acting() || m.initiator != nil || m.participant != nil {
		m.coord.idle()
		return
	}
	ch := m.coord.proposal(now, m.group())
	for _, r := range ch.refused {
		m.refuse(r)
	}
	m.askProofs(now, ch.ask)
	if m.coord.due(now, ch.changed, m.retry()/2) {
		m.startFlush(now, ch.members, ch.left)
	}
}

// group is what the coordinator reads of this node's state.
func (m *Machine) group() group {
	eo := m.engine.Options()
	size := commitSize{received: m.engine, window: uint64(eo.Window), limit: cmp.Or(m.opt.MessageSize, eo.DatagramSize),
		self: m.self, inc: m.inc, maxEpoch: m.maxEpoch}
	return group{view: m.view, viewAt: m.viewAt, suspects: m.suspects, heard: m.heard.nodes, size: size, starved: m.starved()}
}

// onJoin takes a join request. The acting coordinator checks the joiner's
// settings and admits it with the next view change (coordinator.join).
//
// A join request of a member's newer incarnation says the member
// restarted, and its old incarnation is suspected at once, unless that
// one spoke within half a heartbeat: a restarted node listens a heartbeat
// before it asks, so the request is forged (or the old one lives on) and
// waits.
func (m *Machine) onJoin(now time.Time, env *wire.Envelope) {
	if old := m.view.Inc(env.From); old != 0 && old < env.Inc {
		if h := m.heard.get(env.From); h.inc == old && now.Sub(h.at) < m.opt.Engine.Heartbeat/2 {
			m.stats.JoinsHeldOff++
			return
		}
		m.suspect(now, env.From, old, 0) // it restarted: the old incarnation is gone
	}
	if !m.acting() || m.view.HasInc(env.From, env.Inc) {
		return
	}
	switch v, r := m.coord.join(now, env.From, env.Inc, env.Join.Settings); v {
	case waits:
		m.stats.JoinsHeldOff++
	case refused:
		m.refuse(r)
	}
}

// refuse refuses a joiner, at most limitBurst joiners per suspect timeout
// (a refused joiner asks again and is refused then).
func (m *Machine) refuse(r refusal) {
	if !m.mayReport(m.now, r.id) {
		return
	}
	m.stats.JoinsRefused++
	m.send(wire.Envelope{Header: wire.Header{Kind: wire.KindRefuse}, Refuse: wire.Refuse{
		Target: r.id, TargetInc: r.inc, Setting: []byte(r.setting), Ours: []byte(r.ours), Theirs: []byte(r.their)}})
	m.emit(Event{Kind: Refused, Member: r.id, Setting: r.setting, Ours: r.ours, Theirs: r.their})
}
