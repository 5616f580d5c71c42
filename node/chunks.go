package node

import (
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Large membership messages in pieces.
//
// A large group's flush, flush reply and view commit do not fit one
// datagram. The Core sends such a message as up to wire.MaxChunks pieces
// (wire.KindChunk), each a datagram of its own, sealed like any other; a
// receiver gathers the pieces of each sender's latest chunked message and
// takes the message when it has them all. Losing a piece loses the
// message, as losing its datagram would: the membership protocol repeats
// what it must (a flush is retried). What a receiver keeps is bounded:
// one message per sender start, at most maxAssemblies of them and
// maxAssemblyBytes of pieces in all; past either, the message in progress
// longest is dropped.

// Bounds of the pieces a node keeps.
const (
	maxAssemblies    = 1024
	maxAssemblyBytes = 16 << 20
)

// chunkable reports whether messages of kind k may go in pieces: the
// membership messages that grow with the group. The others are sized to
// fit one datagram by their layer.
func chunkable(k wire.Kind) bool {
	return k == wire.KindFlush || k == wire.KindFlushOK || k == wire.KindView
}

// An assembly is one sender start's latest chunked message.
type assembly struct {
	msg    uint64
	pieces [][]byte // by index; nil: not yet received
	got    int
	size   int       // bytes of the pieces received
	at     time.Time // when its last piece arrived
	done   bool      // taken whole: later pieces of it are stale
}

// assembler gathers pieces (see the comment at the top).
type assembler struct {
	by    map[[2]uint64]*assembly // by sender and incarnation
	bytes int                     // of every piece held
	whole []byte                  // the last message put together
}

// add takes one piece from sender from (incarnation inc), and returns the
// whole message's encoding when this piece completes it. The encoding is
// valid until the next message completes. It counts what it drops in
// stats.
func (a *assembler) add(now time.Time, from, inc uint64, c *wire.Chunk, stats *CoreStats) ([]byte, bool) {
	stats.ChunksRecv++
	if a.by == nil {
		a.by = map[[2]uint64]*assembly{}
	}
	key := [2]uint64{from, inc}
	m := a.by[key]
	switch {
	case m != nil && (c.Message < m.msg || c.Message == m.msg && m.done):
		stats.ChunksDropped++ // of a message already taken or given up
		return nil, false
	case m != nil && c.Message == m.msg && int(c.Count) != len(m.pieces):
		stats.ChunksDropped++ // inconsistent with its siblings: forged or broken
		return nil, false
	case m != nil && c.Message > m.msg:
		a.forget(key, m, stats) // a newer message: the sender gave up on this one
		m = nil
	}
	if m == nil {
		for len(a.by) >= maxAssemblies {
			a.evictOldest(stats)
		}
		m = &assembly{msg: c.Message, pieces: make([][]byte, c.Count)}
		a.by[key] = m
	}
	if m.pieces[c.Index] != nil {
		stats.ChunksDropped++ // a duplicate
		return nil, false
	}
	m.pieces[c.Index] = append([]byte(nil), c.Bytes...)
	m.got++
	m.size += len(c.Bytes)
	a.bytes += len(c.Bytes)
	m.at = now
	for a.bytes > maxAssemblyBytes {
		a.evictOldest(stats)
	}
	if m.done || m.got < len(m.pieces) { // (done: evicted just now)
		return nil, false
	}
	a.whole = a.whole[:0]
	for _, p := range m.pieces {
		a.whole = append(a.whole, p...)
	}
	a.bytes -= m.size
	m.pieces, m.size, m.done = nil, 0, true
	stats.ChunkedRecv++
	return a.whole, true
}

// forget drops the pieces of key's message in progress.
func (a *assembler) forget(key [2]uint64, m *assembly, stats *CoreStats) {
	if !m.done {
		stats.ChunksDropped += uint64(m.got)
		a.bytes -= m.size
	}
	delete(a.by, key)
}

// evictOldest forgets the sender whose last piece came longest ago
// (messages taken whole included: they only remember their number).
func (a *assembler) evictOldest(stats *CoreStats) {
	var oldest [2]uint64
	var om *assembly
	for k, m := range a.by {
		if om == nil || m.at.Before(om.at) || m.at.Equal(om.at) && (k[0] < oldest[0] || k[0] == oldest[0] && k[1] < oldest[1]) {
			oldest, om = k, m
		}
	}
	if om != nil {
		a.forget(oldest, om, stats)
		om.done = true // a caller holding it sees it gone
	}
}

// emitChunks sends env, too large for one datagram, in pieces; a message
// beyond wire.MaxChunks pieces is not sent (an encode error: membership
// sizes its views to fit).
func (c *Core) emitChunks(env *wire.Envelope) {
	plain, err := c.enc.Append(c.chunkBuf[:0], env)
	if err != nil {
		c.stats.EncodeErrors++
		return
	}
	c.chunkBuf = plain
	per := c.room() - wire.ChunkOverhead
	n := (len(plain) + per - 1) / per
	if per <= 0 || n > wire.MaxChunks {
		c.stats.EncodeErrors++
		return
	}
	c.chunkMsg++
	piece := wire.Envelope{Header: env.Header}
	piece.Kind = wire.KindChunk
	for i := range n {
		piece.Chunk = wire.Chunk{Message: c.chunkMsg, Index: uint32(i), Count: uint32(n), Bytes: plain[i*per : min(len(plain), (i+1)*per)]}
		c.emit(&piece)
		c.stats.ChunksSent++
	}
}

// assemble takes the piece in c.env; when it completes its message, it
// decodes the whole message into c.env and reports true.
func (c *Core) assemble(now time.Time) bool {
	from, inc := c.env.From, c.env.Inc
	whole, ok := c.chunks.add(now, from, inc, &c.env.Chunk, &c.stats)
	if !ok {
		return false
	}
	if err := c.dec.Decode(whole, c.env); err != nil {
		c.countDecodeError(err)
		return false
	}
	if c.env.From != from || c.env.Inc != inc || !chunkable(c.env.Kind) {
		c.stats.Malformed++ // pieces of one sender carrying another's message, or a kind that never goes in pieces
		return false
	}
	return true
}
