package multicast

import (
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Multicast queues a message for the group and returns the sequence number
// of its first fragment. The message goes out at the next Pack (and the
// Ready after it), packed with whatever else is queued then (batching
// without added delay), or split into fragments that each fit one
// datagram. It fails with
// ErrWindowFull, without side effects, when the message's fragments would
// take more than the window of unstable messages: the caller waits for
// stability (Unstable decreasing) and tries again. The payload is copied.
func (e *Engine) Multicast(service, payload []byte, order wire.Order, dest uint64) (uint64, error) {
	n, err := e.fragments(len(service), len(payload))
	if err != nil {
		return 0, err
	}
	if size := len(service)*n + len(payload); !e.fits(n, size, order) {
		if e.refreshOwn(); !e.fits(n, size, order) {
			return 0, ErrWindowFull
		}
	}
	per := e.fragmentSize(len(service))
	d := owned(&wire.Data{Order: order, Dest: dest, Service: service, Payload: payload})
	if n > 1 {
		d.FragCount = uint32(n)
	}
	first, body := e.own.next, d.Payload
	for i := range n {
		d.Seq, d.FragIndex = e.own.next, uint32(i)
		d.Payload = body[i*per : min(len(body), (i+1)*per)]
		e.own.ring.put(d, e.view)
		e.sendq = append(e.sendq, d.Seq)
		e.own.next++
	}
	e.own.high = e.own.next - 1
	e.stats.MsgsSent++
	e.stats.BytesSent += uint64(len(payload))
	return first, nil
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

// Fits reports whether a message of these sizes would fit the send window
// now (a message too large ever to fit reports true: Multicast will say so).
func (e *Engine) Fits(serviceLen, payloadLen int) bool {
	n, err := e.fragments(serviceLen, payloadLen)
	size := serviceLen*n + payloadLen
	if err == nil && !e.fits(n, size, wire.FIFO) {
		e.refreshOwn()
	}
	return err != nil || e.fits(n, size, wire.FIFO)
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
	h := e.header(wire.KindBatch)
	// Every batch is a window of one reused array: no allocation per datagram.
	all := e.batchBuf[:0]
	start, fields := 0, 0
	for _, s := range e.sendq {
		en := e.own.ring.get(s)
		if en == nil {
			continue
		}
		sz := wire.DataSize(&en.data)
		if n := len(all) - start; n > 0 && wire.BatchSize(&h, n+1, fields+sz) > e.opt.DatagramSize {
			e.emitBatch(all[start:len(all):len(all)])
			start, fields = len(all), 0
		}
		all = append(all, en.data)
		fields += sz
	}
	e.emitBatch(all[start:len(all):len(all)])
	e.batchBuf = all
	e.sendq = e.sendq[:0]
	e.probe()
}

func (e *Engine) emitBatch(batch []wire.Data) {
	switch len(batch) {
	case 0:
		return
	case 1:
		env := wire.Envelope{Header: e.header(wire.KindData), Data: batch[0]}
		e.out = append(e.out, env)
	default:
		env := wire.Envelope{Header: e.header(wire.KindBatch), Batch: batch}
		e.out = append(e.out, env)
	}
	e.stats.DataDatagrams++
}
