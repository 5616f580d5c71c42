package sim

import (
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/netmodel"
)

// multicast sends one datagram from a machine's outbox to every other live
// node, each copy meeting its own fate.
func (w *World) multicast(from *node, data []byte) {
	w.stats.Sent++
	data = w.keep(data)
	if w.model.SenderLost(w.rng) {
		w.dropAll(from)
		return
	}
	for _, to := range w.order {
		if to != from && to.alive {
			w.stats.Copies++
			w.carry(from, to, data)
		}
	}
}

// unicast sends one datagram to the live nodes at the addresses to, as
// one datagram per destination: each is counted as sent, each copy meets
// its own fate (a sender's loss takes each alone).
func (w *World) unicast(from *node, data []byte, to []netip.AddrPort) {
	data = w.keep(data)
	for _, n := range w.order {
		if n == from || !n.alive || !slices.Contains(to, n.addr) {
			continue
		}
		w.stats.Sent++
		w.stats.Copies++
		if w.model.SenderLost(w.rng) {
			w.stats.Dropped.SenderLoss++
			w.log(traceEntry{kind: trDrop, cause: netmodel.CauseSenderLoss, node: from.id, n: 1})
			continue
		}
		w.carry(from, n, data)
	}
}

func (w *World) carry(from, to *node, data []byte) {
	f := w.model.Decide(w.rng, from.id, to.id)
	if f.Cause != netmodel.CauseNone {
		w.drop(from.id, to.id, f.Cause)
		return
	}
	w.stats.Reordered += uint64(f.Reordered)
	for i := range f.Copies {
		w.queue.push(event{at: w.now + f.Delay[i], kind: evDeliver, to: to, from: from, gen: to.inc, data: data})
	}
	if f.Copies > 1 {
		w.stats.Duplicated++
		w.log(traceEntry{kind: trDup, node: from.id, peer: to.id})
	}
}

// dropAll drops a datagram for all receivers: one trace line, but every
// copy counted, so that the Stats identity holds.
func (w *World) dropAll(from *node) {
	var n int
	for _, to := range w.order {
		if to != from && to.alive {
			n++
		}
	}
	w.stats.Copies += uint64(n)
	w.stats.Dropped.SenderLoss += uint64(n)
	w.log(traceEntry{kind: trDrop, cause: netmodel.CauseSenderLoss, node: from.id, n: n})
}

func (w *World) drop(from, to uint64, c netmodel.Cause) {
	w.stats.Dropped.Add(c)
	w.log(traceEntry{kind: trDrop, cause: c, node: from, peer: to})
}

// keep copies a datagram into the arena, so that no receiver ever shares
// memory with a sender's buffer; one copy serves every receiver. Carving
// copies out of large chunks saves an allocation per datagram.
func (w *World) keep(b []byte) []byte {
	if len(b) > cap(w.arena)-len(w.arena) {
		w.arena = make([]byte, 0, max(arenaChunk, len(b)))
	}
	off := len(w.arena)
	w.arena = append(w.arena, b...)
	return w.arena[off:len(w.arena):len(w.arena)]
}

// Partition splits the network: datagrams between nodes of different
// groups are dropped when sent. Nodes not listed, including nodes added
// later, together form one more group. It replaces any earlier partition.
func (w *World) Partition(groups ...[]uint64) {
	w.model.Partition(groups)
	w.note("partition %v", groups)
}

// Heal removes the partition and every SetLinkLoss override.
func (w *World) Heal() {
	w.model.Heal()
	w.note("heal")
}

// SetLinkLoss sets the loss probability of the directed link from -> to,
// replacing Options.Loss there; p = 1 blocks the link.
func (w *World) SetLinkLoss(from, to uint64, p float64) {
	w.model.SetLinkLoss(from, to, p)
	w.note("link n%d->n%d loss %v", from, to, p)
}

// SetLoss changes Options.Loss from now on.
func (w *World) SetLoss(p float64) {
	w.model.SetLoss(p)
	w.note("loss %v", p)
}

// SetSenderLoss changes Options.SenderLoss from now on.
func (w *World) SetSenderLoss(p float64) {
	w.model.SetSenderLoss(p)
	w.note("sender loss %v", p)
}

// Stall freezes node id for d, like a process stopped by the scheduler or
// a debugger: it gets no ticks and receives nothing, datagrams to it wait,
// and when d is over it gets them all, in arrival order, and its timer
// fires late. It does not send meanwhile because it does not run.
func (w *World) Stall(id uint64, d time.Duration) {
	n := w.node(id)
	if !n.alive {
		return
	}
	n.stalled = max(n.stalled, w.now+d)
	w.log(traceEntry{kind: trStall, node: id, d: d})
}
