package logcheck

import (
	"fmt"
	"time"
)

// complete checks that every message sent in a view reached every member
// that stayed (see CheckLiveness).
func (m *vcheck) complete() {
	if m.o.Settle <= 0 {
		m.o.Settle = DefaultSettle
	}
	for _, g := range m.groups {
		for _, s := range g.lives {
			for i, rl := range g.lives {
				if rl != s || m.o.SelfDelivery {
					m.completeIn(g.view, s.life, rl, g.nexts[i], Missing, time.Time{})
				}
			}
		}
		m.leavers(g)
	}
	m.lastViews()
}

// leavers holds every life of g to the messages of the members that left
// g.view gracefully, as its next view lists them.
func (m *vcheck) leavers(g *group) {
	for i, rl := range g.lives {
		next := g.nexts[i]
		for _, id := range next.Left {
			if l := m.lastIn(id, viewKeyOf(rl.life, g.view, next)); l != nil {
				m.completeIn(g.view, l, rl, next, LeaveLoss, time.Time{})
			}
		}
	}
}

// lastIn returns the life of node id whose last view has key key.
func (m *vcheck) lastIn(id uint64, key string) *Life {
	for _, lv := range m.walked {
		if l := lv.life; l.Node == id && len(l.Views) > 0 && l.Views[len(l.Views)-1].Key() == key {
			return l
		}
	}
	return nil
}

// lastViews holds each life that left its last view gracefully to the
// messages sent in it, early enough, by the others that did the same.
func (m *vcheck) lastViews() {
	byLast := map[string][]*lifeViews{}
	var keys []string
	for _, lv := range m.walked {
		l := lv.life
		if len(l.Views) == 0 || l.Stopped.IsZero() {
			continue
		}
		k := l.Views[len(l.Views)-1].Key()
		if byLast[k] == nil {
			keys = append(keys, k)
		}
		byLast[k] = append(byLast[k], lv)
	}
	for _, k := range keys {
		for _, rl := range byLast[k] {
			end := leaveBegan(rl.life).Add(-m.o.Settle)
			last := &rl.life.Views[len(rl.life.Views)-1]
			for _, s := range byLast[k] {
				if s != rl || m.o.SelfDelivery {
					m.completeIn(last.ID, s.life, rl, nil, Missing, end)
				}
			}
		}
	}
}

// leaveBegan is when l began to leave, at the latest: its node.stopped
// less two suspect timeouts (the longest a leave waits), or a second
// without the suspect timeout.
func leaveBegan(l *Life) time.Time {
	d := 2 * l.Suspect
	if d == 0 {
		d = time.Second
	}
	return l.Stopped.Add(-d)
}

// completeIn reports the runs of consecutive messages that sender sent in
// view, to rl's node, and rl did not deliver in it: all of them, or with
// a non-zero before those sent before it. next is the view rl installed
// after it, nil for its last.
func (m *vcheck) completeIn(view string, sender *Life, rl *lifeViews, next *View, kind Kind, before time.Time) {
	got := rl.in[view]
	var run []uint64
	flush := func() {
		if len(run) == 0 {
			return
		}
		m.missing(view, sender, rl, next, kind, run, before)
		m.res.Missing += uint64(len(run))
		run = run[:0]
	}
	for _, s := range sender.Sends {
		if s.View != view || !s.For(rl.life.Node) || !before.IsZero() && !s.Time.Before(before) {
			continue
		}
		m.res.count("deliveries required", 1)
		if _, ok := got[msgKey{sender.Node, sender.Inc, s.Seq}]; ok {
			flush()
		} else {
			run = append(run, s.Seq)
		}
	}
	flush()
}

// missing reports a run of messages of sender that rl lacks in view.
func (m *vcheck) missing(view string, sender *Life, rl *lifeViews, next *View, kind Kind, run []uint64, before time.Time) {
	first, last := run[0], run[len(run)-1]
	what := fmt.Sprintf("seq %d", first)
	if len(run) > 1 {
		what = fmt.Sprintf("seqs %d..%d (%d messages)", first, last, len(run))
	}
	l := rl.life
	var why string
	line := l.StopLine
	switch {
	case kind == LeaveLoss:
		why = fmt.Sprintf("%s installed view %s then %s, which says %s left gracefully, but never delivered %s that %s sent in %s: a leaver's messages reach every member that stays",
			m.name(l), view, next.ID, m.name(sender), what, m.name(sender), view)
		line = next.Line
	case next != nil:
		why = fmt.Sprintf("%s installed view %s then %s, as did %s, but never delivered %s that %s sent in %s",
			m.name(l), view, next.ID, m.name(sender), what, m.name(sender), view)
		line = next.Line
	default:
		why = fmt.Sprintf("%s stayed in view %s until it stopped, as did %s, but never delivered %s that %s sent in %s before %s (%v before %s began to leave)",
			m.name(l), view, m.name(sender), what, m.name(sender), view, clock(before), m.o.Settle, m.name(l))
	}
	m.res.add(Violation{Kind: kind, Node: l.Node, Sender: sender.Node, Seq: first, Last: last,
		Count: uint64(len(run)), File: l.File, Line: line, Detail: why})
}
