package logcheck

import (
	"fmt"
	"slices"
)

// Options select what CheckMulticast requires beyond safety. Safety (FIFO,
// no duplicates, integrity) is checked on every deliver event in the logs;
// these options only shape completeness.
type Options struct {
	// Senders are the nodes whose messages must be delivered; nil means
	// every node that logged a send.
	Senders []uint64
	// Receivers are the nodes that must deliver them; nil means every node
	// in the logs. Every life of a receiver must deliver every message of
	// every life of a sender (other than itself): restrict this set to the
	// nodes that ran throughout when nodes were killed or restarted.
	Receivers []uint64
	// AllowSkipped excuses the messages a receiver reported lost for good
	// (stream.skipped with the sender, its incarnation and the range):
	// they count as Skipped, not Missing.
	AllowSkipped bool
	// SafetyOnly skips completeness.
	SafetyOnly bool
	// MaxViolations is how many violations the Result lists; default
	// DefaultMaxViolations. All are counted.
	MaxViolations int
}

// source is one life of a sender: its send events indexed by seq.
type source struct {
	life   *Life
	bySeq  map[uint64]int   // seq → index in life.Sends
	byView map[string][]int // view → indexes in life.Sends, in order (sendsIn)
}

// pairKey is a receiver life and a sender life.
type pairKey struct {
	recv *Life
	src  *source
}

// CheckMulticast checks the guarantees of the reliable multicast layer
// from the send and deliver events (see the package documentation).
func (r *Run) CheckMulticast(o Options) *Result {
	c := r.newMcheck("multicast", o)
	c.indexSends()
	delivered := c.checkDeliveries()
	if !o.SafetyOnly {
		c.checkComplete(delivered)
	}
	return c.res
}

// newMcheck starts a check named check of r; CheckMembership shares its
// send index and its per-delivery safety checks.
func (r *Run) newMcheck(check string, o Options) *mcheck {
	res := newResult(check, o.MaxViolations)
	for _, f := range r.Files {
		res.Malformed += f.Malformed
	}
	res.Lives = len(r.Lives)
	return &mcheck{run: r, o: o, res: res, byNode: map[uint64][]*source{}, lives: map[uint64]int{}}
}

type mcheck struct {
	run    *Run
	o      Options
	res    *Result
	byNode map[uint64][]*source // the sender lives of each node
	lives  map[uint64]int       // lives per node, to name incarnations only when needed
}

// indexSends indexes every life's send events and checks that their
// sequence numbers increase.
func (c *mcheck) indexSends() {
	for _, l := range c.run.Lives {
		c.lives[l.Node]++
		if len(l.Sends) == 0 {
			continue
		}
		s := &source{life: l, bySeq: make(map[uint64]int, len(l.Sends))}
		var last uint64
		for i, m := range l.Sends {
			c.res.Sent++
			if i > 0 && m.Seq <= last {
				c.res.add(Violation{Kind: SendOrder, Node: l.Node, Sender: l.Node, Seq: m.Seq, Count: 1, File: l.File, Line: m.Line,
					Detail: fmt.Sprintf("%s sent seq %d after seq %d: want increasing sequence numbers", c.name(l), m.Seq, last)})
			}
			last = max(last, m.Seq)
			if _, dup := s.bySeq[m.Seq]; !dup {
				s.bySeq[m.Seq] = i
			}
		}
		c.byNode[l.Node] = append(c.byNode[l.Node], s)
	}
}

// name is "node N", with the incarnation when the node has several lives.
func (c *mcheck) name(l *Life) string {
	if c.lives[l.Node] > 1 {
		return fmt.Sprintf("node %d (inc %d)", l.Node, l.Inc)
	}
	return fmt.Sprintf("node %d", l.Node)
}

// checkDeliveries checks FIFO, duplicates and integrity of every deliver
// event, and returns what each receiver life delivered of each source.
func (c *mcheck) checkDeliveries() map[pairKey]*seqSet {
	delivered := map[pairKey]*seqSet{}
	for _, l := range c.run.Lives {
		last := map[*source]uint64{}
		for i := range l.Delivers {
			d := &l.Delivers[i]
			c.res.Delivered++
			src := c.resolve(d)
			if src == nil {
				c.unsent(l, d)
				continue
			}
			k := pairKey{l, src}
			set := delivered[k]
			if set == nil {
				set = &seqSet{}
				delivered[k] = set
			}
			switch prev, seen := last[src], set.has(d.Seq); {
			case seen:
				c.violation(l, d, Duplicate, fmt.Sprintf("delivered again (first delivery earlier in the log; last delivered seq %d)", prev))
			case d.Seq < prev:
				c.violation(l, d, FIFO, fmt.Sprintf("delivered after seq %d: want seqs of a sender in increasing order", prev))
			}
			set.add(d.Seq)
			last[src] = max(last[src], d.Seq)
			c.integrity(l, d, src)
		}
	}
	return delivered
}

// resolve finds the sender life of a delivery: by its incarnation when
// known, else the only life of the sender, else the one that sent this seq
// with this content.
func (c *mcheck) resolve(d *Deliver) *source {
	cands := c.byNode[d.From]
	if d.FromInc != 0 {
		for _, s := range cands {
			if s.life.Inc == d.FromInc {
				return s
			}
		}
		// The sender's log may have lost its node.started (Inc 0).
		cands = slices.DeleteFunc(slices.Clone(cands), func(s *source) bool { return s.life.Inc != 0 })
	}
	if len(cands) == 1 {
		return cands[0]
	}
	for _, s := range cands {
		if i, ok := s.bySeq[d.Seq]; ok && s.life.Sends[i].CRC == d.CRC && s.life.Sends[i].Len == d.Len {
			return s
		}
	}
	return nil
}

func (c *mcheck) unsent(l *Life, d *Deliver) {
	why := fmt.Sprintf("node %d logged no send events", d.From)
	if d.FromInc != 0 {
		why = fmt.Sprintf("no send events of node %d incarnation %d in the logs", d.From, d.FromInc)
	} else if n := len(c.byNode[d.From]); n > 1 {
		why = fmt.Sprintf("none of the %d lives of node %d sent it with len %d crc %#08x", n, d.From, d.Len, d.CRC)
	}
	c.violation(l, d, Unsent, "never sent: "+why)
}

func (c *mcheck) integrity(l *Life, d *Deliver, src *source) {
	i, ok := src.bySeq[d.Seq]
	if !ok {
		c.violation(l, d, Unsent, fmt.Sprintf("never sent: %s logged %d sends, none with this seq", c.name(src.life), len(src.life.Sends)))
		return
	}
	if s := src.life.Sends[i]; s.Len != d.Len || s.CRC != d.CRC {
		c.violation(l, d, Corrupt, fmt.Sprintf("delivered len %d crc %#08x; sent len %d crc %#08x (%s:%d)",
			d.Len, d.CRC, s.Len, s.CRC, src.life.File, s.Line))
	}
}

func (c *mcheck) violation(l *Life, d *Deliver, k Kind, what string) {
	c.res.add(Violation{Kind: k, Node: l.Node, Sender: d.From, Seq: d.Seq, Count: 1, File: l.File, Line: d.Line,
		Detail: fmt.Sprintf("%s delivered node %d seq %d: %s", c.name(l), d.From, d.Seq, what)})
}

// checkComplete checks that every receiver life in scope delivered every
// message of every sender life in scope.
func (c *mcheck) checkComplete(delivered map[pairKey]*seqSet) {
	for _, rl := range c.run.Lives {
		if c.o.Receivers != nil && !slices.Contains(c.o.Receivers, rl.Node) {
			continue
		}
		for _, id := range c.senderIDs() {
			if id == rl.Node {
				continue
			}
			for _, src := range c.byNode[id] {
				c.completePair(rl, src, delivered[pairKey{rl, src}])
			}
		}
	}
}

// senderIDs are the nodes in scope as senders, in increasing order.
func (c *mcheck) senderIDs() []uint64 {
	var ids []uint64
	for id := range c.byNode {
		if c.o.Senders == nil || slices.Contains(c.o.Senders, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (c *mcheck) completePair(rl *Life, src *source, got *seqSet) {
	p := Pair{Receiver: rl.Node, ReceiverInc: rl.Inc, Sender: src.life.Node, SenderInc: src.life.Inc}
	var run []uint64 // the current run of missing seqs, in send order
	flush := func() {
		if len(run) == 0 {
			return
		}
		first, last := run[0], run[len(run)-1]
		what := fmt.Sprintf("seq %d", first)
		if len(run) > 1 {
			what = fmt.Sprintf("seqs %d..%d (%d messages)", first, last, len(run))
		}
		c.res.add(Violation{Kind: Missing, Node: rl.Node, Sender: src.life.Node, Seq: first, Last: last,
			Count: uint64(len(run)), File: rl.File,
			Detail: fmt.Sprintf("%s never delivered %s of %s (it delivered %d of its %d messages)",
				c.name(rl), what, c.name(src.life), got.len(), len(src.life.Sends))})
		run = run[:0]
	}
	for i, m := range src.life.Sends {
		if j := src.bySeq[m.Seq]; j != i {
			continue // a repeated send, reported as SendOrder
		}
		p.Sent++
		switch {
		case got.has(m.Seq):
			p.Delivered++
			flush()
		case c.o.AllowSkipped && skipped(rl, src.life, m.Seq):
			p.Skipped++
			flush()
		default:
			p.Missing++
			run = append(run, m.Seq)
		}
	}
	flush()
	c.res.Pairs = append(c.res.Pairs, p)
	c.res.Missing += p.Missing
	c.res.Skipped += p.Skipped
}

func skipped(rl, sender *Life, seq uint64) bool {
	for _, s := range rl.Skips {
		if s.Covers(sender.Node, sender.Inc, seq) {
			return true
		}
	}
	return false
}

// seqSet is a set of sequence numbers: a bitmap for the dense low range
// that real runs use, a map beyond it.
type seqSet struct {
	bits []uint64
	far  map[uint64]struct{}
	n    int
}

const seqBitmapMax = 1 << 26 // 8 MiB of bitmap at most per pair

func (s *seqSet) has(seq uint64) bool {
	if s == nil {
		return false
	}
	if seq < seqBitmapMax {
		w := int(seq / 64)
		return w < len(s.bits) && s.bits[w]&(1<<(seq%64)) != 0
	}
	_, ok := s.far[seq]
	return ok
}

func (s *seqSet) add(seq uint64) {
	if s.has(seq) {
		return
	}
	s.n++
	if seq < seqBitmapMax {
		w := int(seq / 64)
		if w >= len(s.bits) {
			s.bits = slices.Grow(s.bits, w+1-len(s.bits))[:w+1]
		}
		s.bits[w] |= 1 << (seq % 64)
		return
	}
	if s.far == nil {
		s.far = map[uint64]struct{}{}
	}
	s.far[seq] = struct{}{}
}

func (s *seqSet) len() int {
	if s == nil {
		return 0
	}
	return s.n
}
