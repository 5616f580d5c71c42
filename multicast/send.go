package multicast

import (
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Multicast queues a message for the group and returns the sequence number
// of its first fragment. The message goes out at the next Pack (and the
// Ready after it), packed with whatever else is queued then (batching
// without added delay), or split into fragments that each fit one
// datagram. A message that does not fit what is left of the datagram the
// queue ends with starts there and goes on in the next (cut): the
// datagrams of a busy sender go out full. It fails with
// ErrWindowFull, without side effects, when the message's fragments would
// take more than the window of unstable messages: the caller waits for
// stability (Unstable decreasing) and tries again. The payload is copied.
func (e *Engine) Multicast(service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	c, err := e.cut(len(service), len(payload), order, dest)
	if err != nil {
		return 0, err
	}
	if size := len(service)*c.n + len(payload); !e.fits(c.n, size, order) {
		if e.refreshOwn(); !e.fits(c.n, size, order) {
			return 0, ErrWindowFull
		}
	}
	small := e.small(len(payload))
	d := owned(&wire.Data{Order: order, Dest: dest, Service: service, Payload: payload})
	if c.n > 1 {
		d.FragCount = uint32(c.n)
	}
	first, body, from := e.own.next, d.Payload, 0
	pk := e.packing()
	for i := range c.n {
		to := min(len(body), from+c.size(i))
		d.Seq, d.FragIndex, d.Payload = e.own.next, uint32(i), body[from:to]
		from = to
		e.own.ring.put(d, e.view)
		e.sendq = append(e.sendq, sendItem{d.Seq, small})
		e.tail.add(&pk, wire.DataSize(&d), small)
		e.own.next++
	}
	e.own.high = e.own.next - 1
	e.stats.MsgsSent++
	e.stats.BytesSent += uint64(len(payload))
	return first, nil
}

// cutting is how a message is cut into fragments: n of them, the first
// of first payload bytes, every other of per (the last of what is left).
type cutting struct{ n, first, per int }

func (c cutting) size(i int) int {
	if i == 0 {
		return c.first
	}
	return c.per
}

// cut cuts a message of these sizes, or fails with ErrTooLarge. A message
// is cut into fragments of the most a datagram carries (fragmentSize);
// and where the datagram that the send queue ends with has some room
// left but not enough for the whole message, its first fragment fills
// that room exactly. So a sender of messages that are
// larger than what is left of a datagram, and smaller than a datagram,
// sends full datagrams, all of one length (which go in runs,
// gso_linux.go), instead of one a message: at 1000 bytes, about three
// datagrams for four messages. A message alone in its turn is not cut,
// nor one smaller than an eighth of a datagram (cutting it saves little
// and costs every receiver a reassembly: 100-byte messages lost 3 % of
// their throughput), nor any while members ask for repairs of this
// node's data (lossy), nor the sequencer's records, which ordered
// delivery waits for.
func (e *Engine) cut(serviceLen, payloadLen int, order wire.Order, dest uint64) (cutting, error) {
	n, err := e.fragments(serviceLen, payloadLen)
	if err != nil {
		return cutting{}, err
	}
	per := e.fragmentSize(serviceLen)
	c := cutting{n: n, first: per, per: per}
	if e.tail.n == 0 || order == wire.Record || e.small(payloadLen) || e.lossy() {
		return c, nil
	}
	pk := e.packing()
	ds := e.tail.limit(&pk)
	h := pk.h
	// The first fragment with an empty payload, counting the most
	// fragments a cut could take (one more than uncut).
	d := wire.Data{Seq: e.own.next, Order: order, Dest: dest, FragCount: uint32(n + 1)}
	fields := e.tail.fields + wire.DataSizeWith(&d, serviceLen, 0)
	room := ds - wire.BatchSize(&h, e.tail.n+1, fields)
	if room >= 256 {
		room-- // a payload this long takes a byte more for its length
	}
	if room < 1 || room >= per || (n == 1 && room >= payloadLen) {
		return c, nil // too little to fill, or the whole message fits
	}
	c.first = room
	c.n = 1 + (payloadLen-room+per-1)/per
	return c, nil
}

// lossy reports whether a member asked for a repair of this node's data
// within the last quiet heartbeats (cutQuiet, or more, see noteLoss).
// Then no message is cut: a lost datagram that carries the pieces of two
// messages costs two repairs, where one message a datagram costs one,
// and under 5 % loss cutting lost a third of the throughput it gains
// without loss. Nor are datagrams packed to BulkSize (packSize).
func (e *Engine) lossy() bool {
	return !e.lossAt.IsZero() && e.lastNow.Sub(e.lossAt) < e.quietFor()
}

// quietFor is how long a lossy period lasts after the last request.
func (e *Engine) quietFor() time.Duration {
	return time.Duration(max(cutQuiet, e.quiet)) * e.opt.Heartbeat
}

// noteLoss records a member's request for a repair of this node's data at
// now. A request that starts a lossy period soon after the last one ended
// (within one more quiet period) doubles the period, up to maxQuiet
// heartbeats; one after a longer calm sets it back to cutQuiet. Where the
// loss comes and goes with bulk datagrams, as where IP fragments do not
// pass, or with a member of an earlier release that reads no datagram
// longer than datagram_size, the sender so tries bulk datagrams ever more
// rarely, where it would lose one turn's worth to repairs every cutQuiet
// heartbeats; where loss is steady, the period never ends.
func (e *Engine) noteLoss(now time.Time) {
	if !e.lossAt.IsZero() && now.Sub(e.lossAt) >= e.quietFor() {
		if now.Sub(e.lossAt) < 2*e.quietFor() {
			e.quiet = min(2*max(cutQuiet, e.quiet), maxQuiet)
		} else {
			e.quiet = cutQuiet
		}
	}
	e.lossAt = now
}

// cutQuiet is how many heartbeats after the last request for a repair of
// its data a node cuts no message, and packs datagrams of DatagramSize
// only (packSize); maxQuiet is the most that grows to (noteLoss).
const (
	cutQuiet = 10
	maxQuiet = 64 * cutQuiet
)

// packSize is the length packData fills datagrams to: Options.BulkSize
// while no member asks for repairs of this node's data (lossy), else
// DatagramSize. A bulk datagram longer than the path's MTU crosses it in
// IP fragments and is lost whole with any of them, so a sender goes back
// to DatagramSize at the first request for a repair; the repairs, of
// messages no longer than DatagramSize allows, go in datagrams of that
// size in any case.
func (e *Engine) packSize() int {
	if e.opt.BulkSize > e.opt.DatagramSize && !e.lossy() {
		return e.opt.BulkSize
	}
	return e.opt.DatagramSize
}

// small reports whether a message of payloadLen bytes is smaller than an
// eighth of a datagram: such a message is never cut, and a datagram that
// holds one is not a bulk datagram (packData).
func (e *Engine) small(payloadLen int) bool { return payloadLen < e.opt.DatagramSize/8 }

// sendItem is a message (fragment) in the send queue: its seq, and whether
// it is of a small message.
type sendItem struct {
	seq   uint64
	small bool
}

// tail is what packData (below) will put in the last datagram of the send
// queue as it stands: n messages whose DataSize values sum to fields, and
// whether one of them is of a small message.
type tail struct {
	n, fields int
	small     bool
}

// packing is what packing a datagram depends on, taken once per
// Multicast or packData rather than once per message: a batch's header,
// datagram_size, and packSize as it is now.
type packing struct {
	h        wire.Header
	ds, bulk int
}

func (e *Engine) packing() packing {
	return packing{h: e.header(wire.KindBatch), ds: e.opt.DatagramSize, bulk: e.packSize()}
}

// limit is the longest the tail's datagram may grow: packSize, but
// datagram_size once it holds a small message.
func (t *tail) limit(pk *packing) int {
	if t.small {
		return pk.ds
	}
	return pk.bulk
}

// add follows packData as it packs one more message of DataSize sz, of a
// small message or not, and reports whether the message starts a new
// datagram.
func (t *tail) add(pk *packing, sz int, small bool) bool {
	next := tail{n: t.n + 1, fields: t.fields + sz, small: t.small || small}
	if t.n > 0 && wire.BatchSize(&pk.h, next.n, next.fields) > next.limit(pk) {
		next = tail{n: 1, fields: sz, small: small}
	}
	*t = next
	return t.n == 1
}

// Own returns the service and payload of this node's unfragmented message
// seq as the engine holds them (for the sender's own delivery, without a
// copy), and false for a fragment or a message no longer held. They stay
// valid until the next call into the Engine.
func (e *Engine) Own(seq uint64) (service, payload []byte, ok bool) {
	en := e.own.ring.get(seq)
	if en == nil || en.data.FragCount > 1 {
		return nil, nil, false
	}
	return en.data.Service, en.data.Payload, true
}

// fragments is the number of fragments a message takes, or ErrTooLarge.
func (e *Engine) fragments(serviceLen, payloadLen int) (int, error) {
	per := e.fragmentSize(serviceLen)
	if payloadLen > e.opt.MaxMessage || per <= 0 || payloadLen/per >= e.opt.Window {
		return 0, ErrTooLarge
	}
	return max(1, (payloadLen+per-1)/per), nil
}

// Fits reports whether a message of these sizes, order and destination
// would fit the send window now, cut as Multicast would cut it now (a
// message too large ever to fit reports true: Multicast will say so).
func (e *Engine) Fits(serviceLen, payloadLen int, order wire.Order, dest uint64) bool {
	c, err := e.cut(serviceLen, payloadLen, order, dest)
	size := serviceLen*c.n + payloadLen
	if err == nil && !e.fits(c.n, size, order) {
		e.refreshOwn()
	}
	return err != nil || e.fits(c.n, size, order)
}

// fits reports whether n more fragments of size bytes in all fit this
// order's share of the window now, in messages and in bytes. A message
// larger than a sender's share goes out alone.
func (e *Engine) fits(n, size int, order wire.Order) bool {
	u := e.Unstable()
	if u == 0 {
		return true
	}
	b := e.byteLimit(order)
	return u+n <= e.limit(order) && (b == 0 || e.own.ring.bytes+size <= b)
}

// limit is how much of the window messages of an order may fill. Order
// records (membership's sequencer) may fill all of it; everything else
// leaves them an eighth, so that a sequencer busy sending its own messages
// still orders everyone else's.
//
// The members sending at the same time share the window (this one and
// every source heard sending data within the last two heartbeats): every
// sender's window lands in every receiver's socket buffer at once, and
// shared they fill it no more than one sender does, instead of
// overflowing it into a storm of repairs. A share is at least minShare.
func (e *Engine) limit(order wire.Order) int {
	w := e.opt.Window
	if order != wire.Record {
		w -= w / 8
	}
	return max(min(minShare, w), w/max(1, e.senders))
}

// minShare is the least a sender's share of the window shrinks to.
const minShare = 64

// byteLimit is limit in payload bytes (Options.WindowBytes), shared the
// same way, at least minShare datagrams' worth; with Directed, at most
// the fan-out bound too (fanOutLimit); 0 when there is no bound.
func (e *Engine) byteLimit(order wire.Order) int {
	w := e.opt.WindowBytes
	if w > 0 {
		if order != wire.Record {
			w -= w / 8
		}
		w = max(min(minShare*e.opt.DatagramSize, w), w/max(1, e.senders))
	}
	if f := e.fanOutLimit(); f > 0 {
		if order != wire.Record {
			f -= f / 8
		}
		if w <= 0 || f < w {
			w = f
		}
	}
	return w
}

// fanOutLimit is the payload bytes of unstable own messages whose copies,
// one per destination, fit Options.FanOutBytes (at least a datagram's
// worth); 0 without the bound. The destinations are the other members
// of the view, or the live peers when they are more (a joiner hears the
// group's data too). It is this node's own send buffer, not shared.
func (e *Engine) fanOutLimit() int {
	if !e.opt.Directed || e.opt.FanOutBytes <= 0 {
		return 0
	}
	n := max(1, len(e.members)-1, len(e.peers))
	return max(e.opt.DatagramSize, e.opt.FanOutBytes/n)
}

// countSenders counts this node and the sources that sent data within
// the last two heartbeats.
func (e *Engine) countSenders(now time.Time) {
	n := 1
	for _, st := range e.streams {
		if !st.dataAt.IsZero() && now.Sub(st.dataAt) < 2*e.opt.Heartbeat {
			n++
		}
	}
	e.senders = n
}

// Unstable is the number of this node's messages (fragments) that are not
// yet held by every live peer: what the send window limits.
func (e *Engine) Unstable() int { return int(e.own.received() - e.own.stable) }

// fragmentSize is the most payload bytes one fragment may carry so that it
// fits one datagram both as data and as a repair, with the largest header
// and sequence numbers.
func (e *Engine) fragmentSize(serviceLen int) int {
	worst := wire.Data{Seq: ^uint64(0), Order: wire.Safe, Dest: ^uint64(0),
		FragIndex: ^uint32(0) - 1, FragCount: ^uint32(0)}
	// DataSize counted an empty service (1 byte) and an empty payload's
	// 2-byte length; a service takes at most 5+len, a long payload's
	// length up to 5.
	overhead := wire.MaxHeader + wire.DataSize(&worst) + wire.RepairExtra + 5 + serviceLen + 3
	return e.opt.DatagramSize - overhead
}

// packData moves the queued messages into envelopes: one data message
// alone as KindData, several as a KindBatch, each envelope filled up to the
// datagram size.
func (e *Engine) packData() {
	if len(e.sendq) == 0 {
		return
	}
	// Every batch is a window of one reused array: no allocation per datagram.
	all := e.batchBuf[:0]
	var t tail // the datagram being filled: tail.add decides where one ends
	pk := e.packing()
	start := 0
	for _, q := range e.sendq {
		en := e.own.ring.get(q.seq)
		if en == nil {
			continue
		}
		if full := t; t.add(&pk, wire.DataSize(&en.data), q.small) && full.n > 0 {
			e.emitBatch(all[start:len(all):len(all)], full.fields)
			start = len(all)
		}
		all = append(all, en.data)
	}
	e.emitBatch(all[start:len(all):len(all)], t.fields)
	e.batchBuf = all
	e.sendq, e.tail = e.sendq[:0], tail{}
	e.probe()
}

// emitBatch queues one datagram of the batch, whose messages' DataSize
// values sum to fields.
func (e *Engine) emitBatch(batch []wire.Data, fields int) {
	switch len(batch) {
	case 0:
		return
	case 1:
		env := wire.Envelope{Header: e.header(wire.KindData), Data: batch[0]}
		e.out = append(e.out, env)
	default:
		env := wire.Envelope{Header: e.header(wire.KindBatch), Batch: batch}
		e.out = append(e.out, env)
		if wire.BatchSize(&env.Header, len(batch), fields) > e.opt.DatagramSize {
			e.stats.BulkDatagrams++
		}
	}
	e.stats.DataDatagrams++
}
