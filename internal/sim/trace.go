package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/internal/netmodel"
)

// traceSteps is how many of the latest steps Trace shows.
const traceSteps = 50

// traceCap bounds the trace ring. A step can log several lines (a send and
// its drops), so it holds more than traceSteps entries.
const traceCap = 512

type traceKind uint8

const (
	trRecv traceKind = iota
	trTick
	trSend
	trDrop
	trDup
	trStart
	trCrash
	trStall
	trDo
	trNote // free text: faults, failed checks
)

// traceEntry is one trace line kept in structured form; formatting is
// deferred to Trace so that a run that never fails never formats.
type traceEntry struct {
	step       uint64
	at         time.Duration
	kind       traceKind
	cause      netmodel.Cause
	node, peer uint64
	n          int // bytes, datagram count or incarnation
	d          time.Duration
	text       string // trNote only
}

// traceRing keeps the last traceCap entries.
type traceRing struct {
	buf  [traceCap]traceEntry
	next int
	full bool
}

func (r *traceRing) add(e traceEntry) {
	r.buf[r.next] = e
	r.next++
	if r.next == traceCap {
		r.next, r.full = 0, true
	}
}

// entries returns the kept entries, oldest first.
func (r *traceRing) entries() []traceEntry {
	if !r.full {
		return r.buf[:r.next]
	}
	return append(r.buf[r.next:len(r.buf):len(r.buf)], r.buf[:r.next]...)
}

// format renders the entries of steps first and later, one per line.
func (r *traceRing) format(first uint64) string {
	var b strings.Builder
	for _, e := range r.entries() {
		if e.step >= first {
			e.writeTo(&b)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (e *traceEntry) writeTo(b *strings.Builder) {
	fmt.Fprintf(b, "t=%.3fms ", float64(e.at)/float64(time.Millisecond))
	switch e.kind {
	case trRecv:
		fmt.Fprintf(b, "n%d recv %dB from n%d", e.node, e.n, e.peer)
	case trTick:
		fmt.Fprintf(b, "n%d tick", e.node)
	case trSend:
		fmt.Fprintf(b, "n%d send %d datagrams", e.node, e.n)
	case trDrop:
		e.writeDrop(b)
	case trDup:
		fmt.Fprintf(b, "dup n%d->n%d", e.node, e.peer)
	case trStart:
		fmt.Fprintf(b, "n%d start (incarnation %d)", e.node, e.n)
	case trCrash:
		fmt.Fprintf(b, "n%d crash", e.node)
	case trStall:
		fmt.Fprintf(b, "n%d stall for %v", e.node, e.d)
	case trDo:
		fmt.Fprintf(b, "n%d do", e.node)
	case trNote:
		b.WriteString(e.text)
	}
}

func (e *traceEntry) writeDrop(b *strings.Builder) {
	if e.cause == netmodel.CauseSenderLoss {
		fmt.Fprintf(b, "drop n%d->* (%v, %d receivers)", e.node, e.cause, e.n)
		return
	}
	fmt.Fprintf(b, "drop n%d->n%d (%v)", e.node, e.peer, e.cause)
}
