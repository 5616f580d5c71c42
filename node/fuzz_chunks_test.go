package node

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// FuzzChunks feeds a node's Core pieces of large membership messages
// (wire.KindChunk, chunks.go): honest ones, cut by two honest Cores
// (nodes 2 and 3) from real flushes, flush replies and view commits of a
// large group, interleaved with forged ones: single pieces with chosen
// sender, message number, index, count and bytes; whole messages forged
// and cut into pieces (of any kind, in another sender's name); floods of
// pieces from up to 2048 senders, or up to 65000 bytes each, to push the
// assembler to its bounds. The fuzzer's bytes are the script: which
// honest piece arrives when (lost, duplicated, reordered), what is forged,
// when time passes. The first byte picks the datagram size (1400 or
// 65000) and the mode:
//
//   - Outsiders (the default): forged pieces never carry an honest
//     sender's (ID, incarnation).
//   - Members: they may, as a member holding the key could send them.
//
// After every datagram: nothing panics; the assembler keeps at most
// maxAssemblies messages and maxAssemblyBytes of pieces; a message put
// together is made of pieces received for it, one per index, and in
// Outsiders an honest sender's is exactly the message it cut. After every
// step of the script, each message in progress has at most
// wire.MaxChunks pieces, and the assembler's counts add up. At the end
// (Outsiders), each honest sender's next message, all its pieces
// received, is put together.
//
// `go test ./node` runs the seeds (testdata/fuzz/FuzzChunks and
// chunkSeeds); `go test -run '^$' -fuzz '^FuzzChunks$' ./node` searches
// further.
func FuzzChunks(f *testing.F) { testutil.FuzzScripts(f, chunkSeeds(), runChunkScript) }

// chunkRun is one run of FuzzChunks's script.
type chunkRun struct {
	t       *testing.T
	s       *testutil.Script
	members bool // forged pieces may carry the honest senders' names
	size    int  // datagram size
	now     time.Time
	c       *Core    // node 1, under test
	senders [2]*Core // the honest senders, nodes 2 and 3
	enc     *wire.Encoder
	dec     *wire.Decoder
	env     *wire.Envelope
	queue   [][]byte                      // honest pieces on their way
	sent    map[chunkKey][]byte           // the honest messages, encoded whole
	pieces  map[chunkKey]map[int][][]byte // every piece received, by message and index
	trace   []string
}

// chunkKey names a chunked message: its sender, incarnation and number.
type chunkKey struct{ from, inc, msg uint64 }

// chunkInc is every node's incarnation in FuzzChunks.
const chunkInc = 1_800_000_000_000_000

func (r *chunkRun) logf(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf("%v ", r.now.Sub(sim.Epoch))+fmt.Sprintf(format, args...))
	if len(r.trace) > 60 {
		r.trace = r.trace[1:]
	}
}

func (r *chunkRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("datagrams of %d, members' names forged: %v: %s\nthe last steps:\n%s", r.size, r.members, fmt.Sprintf(format, args...), strings.Join(r.trace, "\n"))
}

func chunkCore(id uint64, size int) *Core {
	return NewCore(CoreOptions{Group: "huddle", Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{
		Self: id, Inc: chunkInc, DatagramSize: size, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect}}}, sim.Epoch)
}

func runChunkScript(t *testing.T, data []byte) {
	s := testutil.NewScript(data)
	head := s.Byte()
	r := &chunkRun{t: t, s: s, members: head&1 != 0, size: []int{1400, 65000}[head>>1&1], now: sim.Epoch,
		enc: wire.NewEncoder(), dec: wire.NewDecoder(), env: wire.NewEnvelope(65000),
		sent: map[chunkKey][]byte{}, pieces: map[chunkKey]map[int][][]byte{}}
	r.c = chunkCore(1, r.size)
	for i := range r.senders {
		r.senders[i] = chunkCore(uint64(2+i), r.size)
	}
	for step := 0; step < 64 && !s.Done(); step++ {
		r.step()
		if err := r.c.chunks.check(); err != nil {
			r.fail("%v", err)
		}
	}
	if r.members {
		return
	}
	// The forging stops: each honest sender's next message, all of its
	// pieces received, is put together.
	r.queue = nil
	for i := range r.senders {
		r.honest(i)
		before, _ := r.c.Stats()
		r.deliver(len(r.queue))
		if after, _ := r.c.Stats(); after.ChunkedRecv != before.ChunkedRecv+1 {
			r.fail("node %d's last message, whole, was not put together (%d before, %d after)", 2+i, before.ChunkedRecv, after.ChunkedRecv)
		}
	}
}

// step does one thing of the script.
func (r *chunkRun) step() {
	s := r.s
	switch op := s.Byte(); op % 8 {
	case 0:
		r.honest(int(s.Byte() % 2))
	case 1:
		r.deliver(1 + int(s.Byte()%8))
	case 2: // reordered, and perhaps duplicated
		if len(r.queue) > 0 {
			i, keep := int(s.Byte())%len(r.queue), s.Byte()%2 == 0
			b := r.queue[i]
			if !keep {
				r.queue = slices.Delete(r.queue, i, i+1)
			}
			r.receive(b)
		}
	case 3: // lost
		if len(r.queue) > 0 {
			r.queue = r.queue[1:]
		}
	case 4:
		r.forgePiece()
	case 5:
		r.forgeMessage()
	case 6:
		r.flood()
	case 7:
		r.now = r.now.Add(time.Duration(1+s.Byte()%100) * time.Millisecond)
		r.c.Tick(r.now)
		r.c.Ready()
	}
}

// honest has sender i (node 2 or 3) cut a large membership message into
// pieces, which go on their way to node 1.
func (r *chunkRun) honest(i int) {
	c := r.senders[i]
	n := 2 + int(r.s.Byte()%(wire.MaxChunks-1)) // about as many pieces
	env := &wire.Envelope{Header: wire.Header{Group: c.group, From: c.self, Inc: c.inc}}
	entries := n * (c.room() - wire.ChunkOverhead) / 12
	switch r.s.Byte() % 3 {
	case 0:
		env.Kind = wire.KindFlush
		env.Flush = wire.Flush{Epoch: 7, Attempt: 1, Members: make([]wire.Member, entries)}
		for k := range env.Flush.Members {
			env.Flush.Members[k] = wire.Member{ID: uint64(100 + k), Inc: chunkInc}
		}
	case 1:
		env.Kind = wire.KindFlushOK
		env.FlushOK = wire.FlushOK{Epoch: 7, Attempt: 1, Initiator: 3, Has: make([]wire.Cut, entries)}
		for k := range env.FlushOK.Has {
			env.FlushOK.Has[k] = wire.Cut{ID: uint64(100 + k), Seq: chunkInc + uint64(k)}
		}
	default:
		env.Kind = wire.KindView
		env.Commit = wire.ViewCommit{Epoch: 7, Attempt: 1, Members: make([]wire.ViewMember, entries*2/3)}
		for k := range env.Commit.Members {
			env.Commit.Members[k] = wire.ViewMember{ID: uint64(100 + k), Inc: chunkInc, Next: 1}
		}
	}
	whole, err := r.enc.Append(nil, env)
	if err != nil {
		r.fail("encode: %v", err)
	}
	if len(whole) <= c.room() {
		r.logf("%d: a %s of %d bytes goes whole", c.self, env.Kind, len(whole))
		return
	}
	c.out = outbox{}
	c.emitChunks(env)
	if len(c.out.data) == 0 {
		r.logf("%d: a %s of %d bytes does not go in %d pieces", c.self, env.Kind, len(whole), wire.MaxChunks)
		return
	}
	r.sent[chunkKey{c.self, c.inc, c.chunkMsg}] = whole
	r.logf("%d cuts message %d, a %s of %d bytes, into %d pieces", c.self, c.chunkMsg, env.Kind, len(whole), len(c.out.data))
	for _, b := range c.out.data {
		r.queue = append(r.queue, bytes.Clone(b))
	}
}

// deliver hands node 1 the first n honest pieces on their way.
func (r *chunkRun) deliver(n int) {
	for ; n > 0 && len(r.queue) > 0; n-- {
		b := r.queue[0]
		r.queue = r.queue[1:]
		r.receive(b)
	}
}

// nameOK keeps forged pieces out of the honest senders' names in
// Outsiders.
func (r *chunkRun) nameOK(from, inc uint64) bool {
	return r.members || inc != chunkInc || from != 2 && from != 3
}

// context returns the numbers that matter now: the nodes, their
// incarnation, the honest senders' message numbers.
func (r *chunkRun) context() []uint64 {
	ctx := []uint64{1, 2, 3, chunkInc, wire.MaxChunks}
	for _, c := range r.senders {
		ctx = append(ctx, c.chunkMsg)
	}
	return ctx
}

// piece encodes a piece; false if the mode forbids its name.
func (r *chunkRun) piece(from, inc uint64, ch wire.Chunk) ([]byte, bool) {
	if !r.nameOK(from, inc) {
		return nil, false
	}
	env := &wire.Envelope{Header: wire.Header{Group: r.c.group, From: from, Inc: inc, Kind: wire.KindChunk}, Chunk: ch}
	b, err := r.enc.Append(nil, env)
	return b, err == nil
}

// name picks a sender and incarnation: an honest one, node 1, or any.
func (r *chunkRun) name(u func() uint64) (uint64, uint64) {
	switch k := r.s.Byte(); k % 4 {
	case 0, 1:
		return uint64(2 + k%2), chunkInc
	case 2:
		return 1, u()
	}
	return u(), u()
}

// forgePiece forges one piece with chosen fields and bytes.
func (r *chunkRun) forgePiece() {
	s, ctx := r.s, r.context()
	u := func() uint64 { return s.U64(ctx) }
	from, inc := r.name(u)
	count := 2 + uint32(s.Byte()%(wire.MaxChunks-1))
	ch := wire.Chunk{Message: u(), Count: count, Index: uint32(s.Byte()) % count, Bytes: s.Bytes(255)}
	if len(ch.Bytes) == 0 {
		ch.Bytes = make([]byte, 1+int(s.Byte())*256)
	}
	if b, ok := r.piece(from, inc, ch); ok {
		r.logf("forged: piece %d of %d of message %d from %d.%d, %d bytes", ch.Index, ch.Count, ch.Message, from, inc, len(ch.Bytes))
		r.receive(b)
	}
}

// forgeMessage forges a whole message, of a chunkable kind or not, in
// its sender's name or another's, cuts it into pieces and sends them all,
// perhaps backwards.
func (r *chunkRun) forgeMessage() {
	s, ctx := r.s, r.context()
	u := func() uint64 { return s.U64(ctx) }
	from, inc := r.name(u)
	env := &wire.Envelope{Header: wire.Header{Group: r.c.group, From: from, Inc: inc}}
	if s.Byte()%4 == 0 {
		env.From, env.Inc = r.name(u)
	}
	switch s.Byte() % 4 {
	case 0:
		env.Kind, env.Flush = wire.KindFlush, wire.Flush{Epoch: u(), Attempt: u() % 256, Members: []wire.Member{{ID: from, Inc: inc}, {ID: 1, Inc: chunkInc}}}
	case 1:
		env.Kind, env.FlushOK = wire.KindFlushOK, wire.FlushOK{Epoch: u(), Attempt: u() % 256, Initiator: u()}
	case 2:
		env.Kind, env.Commit = wire.KindView, wire.ViewCommit{Epoch: u(), Attempt: u() % 256, Members: []wire.ViewMember{{ID: from, Inc: inc}}}
	default:
		env.Kind, env.Leave = wire.KindLeave, wire.Leave{Member: from, MemberInc: inc} // never in pieces
	}
	whole, err := r.enc.Append(nil, env)
	if err != nil {
		return
	}
	whole = append(whole, s.Bytes(255)...) // trailing bytes, perhaps
	n := min(len(whole), 2+int(s.Byte()%(wire.MaxChunks-1)))
	msg, backwards := u(), s.Byte()%2 == 0
	per := (len(whole) + n - 1) / n
	n = (len(whole) + per - 1) / per // no piece empty
	var out [][]byte
	for i := range n {
		ch := wire.Chunk{Message: msg, Index: uint32(i), Count: uint32(n), Bytes: whole[i*per : min(len(whole), (i+1)*per)]}
		b, ok := r.piece(from, inc, ch)
		if !ok {
			return
		}
		out = append(out, b)
	}
	if backwards {
		slices.Reverse(out)
	}
	r.logf("forged: a %s from %d.%d in %d pieces, message %d from %d.%d", env.Kind, env.From, env.Inc, n, msg, from, inc)
	for _, b := range out {
		r.receive(b)
	}
}

// flood sends a piece of a message that never completes from each of
// many senders (up to 2041), small or large (up to 65281 bytes, at most
// 20 MiB in all), to reach the assembler's bounds.
func (r *chunkRun) flood() {
	n, size := 1+int(r.s.Byte())*8, 1+int(r.s.Byte())*256
	n = min(n, 20<<20/size)
	body := make([]byte, size)
	for i := range n {
		if b, ok := r.piece(uint64(1000+i), 1, wire.Chunk{Message: 1, Index: 0, Count: wire.MaxChunks, Bytes: body}); ok {
			r.receive(b)
		}
	}
	r.logf("flood: %d pieces of %d bytes; %d messages, %d bytes held", n, size, len(r.c.chunks.by), r.c.chunks.bytes)
}

// receive hands node 1 a datagram, then checks the assembler.
func (r *chunkRun) receive(b []byte) {
	r.now = r.now.Add(time.Microsecond) // a piece arrives after the one before
	var key chunkKey
	var index int
	if r.dec.Decode(b, r.env) == nil && r.env.Kind == wire.KindChunk {
		ch := &r.env.Chunk
		key, index = chunkKey{r.env.From, r.env.Inc, ch.Message}, int(ch.Index)
		if r.pieces[key] == nil {
			r.pieces[key] = map[int][][]byte{}
		}
		if !slices.ContainsFunc(r.pieces[key][index], func(p []byte) bool { return bytes.Equal(p, ch.Bytes) }) {
			r.pieces[key][index] = append(r.pieces[key][index], bytes.Clone(ch.Bytes))
		}
	}
	before, _ := r.c.Stats()
	r.c.Receive(r.now, netip.AddrPort{}, b)
	r.c.Ready()
	after, _ := r.c.Stats()
	if a := &r.c.chunks; len(a.by) > maxAssemblies || a.bytes > maxAssemblyBytes {
		r.fail("the assembler keeps %d messages and %d bytes, over %d and %d", len(a.by), a.bytes, maxAssemblies, maxAssemblyBytes)
	}
	if after.ChunkedRecv == before.ChunkedRecv {
		return
	}
	whole := r.c.chunks.whole
	r.logf("1 put together message %d of %d.%d: %d bytes", key.msg, key.from, key.inc, len(whole))
	switch {
	case !madeOf(whole, r.pieces[key]):
		r.fail("message %d of %d.%d put together (%d bytes) is not made of the pieces received for it", key.msg, key.from, key.inc, len(whole))
	case r.members || !slices.Contains([]uint64{2, 3}, key.from) || key.inc != chunkInc:
	case !bytes.Equal(whole, r.sent[key]):
		r.fail("message %d of %d put together (%d bytes) is not the one it cut (%d bytes)", key.msg, key.from, len(whole), len(r.sent[key]))
	}
}

// madeOf reports whether whole is one piece per index received for its
// message, in index order, from index 0 to some index past 1. Pieces of
// the same number may have come in two counts (a message evicted by a
// flood, then one forged in its sender's name): whole is made of the
// first pieces of either.
func madeOf(whole []byte, pieces map[int][][]byte) bool {
	offsets := map[int]bool{0: true}
	for i := 0; len(offsets) > 0; i++ {
		if offsets[len(whole)] && i >= 2 {
			return true
		}
		if len(pieces[i]) == 0 {
			return false
		}
		next := map[int]bool{}
		for off := range offsets {
			for _, p := range pieces[i] {
				if bytes.HasPrefix(whole[off:], p) {
					next[off+len(p)] = true
				}
			}
		}
		offsets = next
	}
	return false
}

// check reports pieces or counts of the assembler that do not add up.
func (a *assembler) check() error {
	total := 0
	for k, m := range a.by {
		got, size := 0, 0
		for _, p := range m.pieces {
			if p != nil {
				got, size = got+1, size+len(p)
			}
		}
		switch {
		case len(m.pieces) > wire.MaxChunks:
			return fmt.Errorf("message %d of %v in %d pieces, over %d", m.msg, k, len(m.pieces), wire.MaxChunks)
		case m.done && (m.pieces != nil || m.size != 0):
			return fmt.Errorf("message %d of %v is done and keeps %d bytes of pieces", m.msg, k, m.size)
		case !m.done && (got != m.got || size != m.size):
			return fmt.Errorf("message %d of %v holds %d pieces of %d bytes, counted %d of %d", m.msg, k, got, size, m.got, m.size)
		}
		total += size
	}
	if total != a.bytes {
		return fmt.Errorf("the assembler holds %d bytes of pieces, counted %d", total, a.bytes)
	}
	return nil
}

// chunkSeeds are the seed corpus's scripts, besides testdata/fuzz: both
// sizes and modes with honest messages received whole, out of order and
// with a loss; forged pieces and messages; floods from many senders and
// of large pieces.
func chunkSeeds() [][]byte {
	honest := []byte{
		0, 0, 3, 0, // 2 cuts a flush of about 4 pieces
		0, 1, 1, 2, // 3 cuts a view commit of about 2
		1, 7, // 7 pieces arrive
		2, 0, 1, // one arrives early, twice
		1, 7, 3, // and the rest; one is lost
		7, 5, // time passes
	}
	forged := []byte{
		4, 3, 2, 40, 2, 9, 1, 1, 0, 3, 'a', 'b', 'c', // a piece from 40
		5, 3, 2, 41, 2, 9, 1, 0, 2, 7, 1, 0, 1, 1, 1, // a flush from 41 in 3 pieces
		5, 3, 2, 42, 2, 9, 1, 3, 0, 1, 1, 0, // a leave, never in pieces, in 3 backwards
		5, 3, 2, 43, 2, 9, 0, 0, 0, 2, 7, 1, 0, 1, 1, 1, // a flush of 2's in 43's pieces
	}
	floods := []byte{
		6, 130, 0, // 1041 senders
		6, 35, 255, // 281 pieces of 65281 bytes: over 16 MiB
	}
	var seeds [][]byte
	for head := range byte(4) {
		seeds = append(seeds, slices.Concat([]byte{head}, honest, forged, honest))
	}
	seeds = append(seeds, slices.Concat([]byte{2}, honest, floods, honest), slices.Concat([]byte{1}, floods[:3], forged))
	return seeds
}
