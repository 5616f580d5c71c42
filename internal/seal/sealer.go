package seal

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxStarts bounds the peers' starts a Sealer remembers (the key each
// seals with, and its replay window). Only a start whose datagram opened
// with the group key gets an entry, so only a key holder can make one;
// past the bound the least recently heard is forgotten.
const MaxStarts = 1024

// WindowSize is the replay window, in datagrams per sender start: a
// datagram more than this far behind the highest counter seen from its
// start is dropped as a replay.
const WindowSize = 1024

// Stats counts what a Sealer did.
type Stats struct {
	Sealed     uint64 // datagrams sealed
	Opened     uint64 // datagrams opened
	NotSealed  uint64 // cleartext datagrams dropped
	UnknownKey uint64 // sealed with a key this node does not hold
	Failed     uint64 // did not open: forged, damaged, malformed
	Replays    uint64 // replays, or too old for the window
	Forgotten  uint64 // peers' starts forgotten past MaxStarts
}

// Sealer seals one node's datagrams and opens its peers'. The node's loop
// owns it: it is not safe for concurrent use.
type Sealer struct {
	keys    []Key // keys[0] seals; every one opens (a rollover holds two)
	self    uint64
	inc     uint64
	salt    uint64
	counter uint64
	own     cipher.AEAD // this start's key, under keys[0]
	starts  map[startID]*start
	clock   uint64 // counts opens, for the least recently heard
	stats   Stats
}

type startID struct {
	key             uint32
	from, inc, salt uint64
}

type start struct {
	aead cipher.AEAD
	win  window
	used uint64
}

// NewSealer returns the Sealer of node self in its start inc, sealing
// with keys[0] and opening with any of keys (one or two). The salt of
// this start is drawn from rand (crypto/rand's Reader when nil).
func NewSealer(keys []Key, self, inc uint64, random io.Reader) (*Sealer, error) {
	if random == nil {
		random = rand.Reader
	}
	var b [8]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return nil, fmt.Errorf("seal: no randomness for a salt: %w", err)
	}
	s := &Sealer{self: self, inc: inc, salt: binary.BigEndian.Uint64(b[:]), starts: map[startID]*start{}}
	if err := s.SetKeys(keys); err != nil {
		return nil, err
	}
	return s, nil
}

// SetKeys replaces the keys, as a key reload does: keys[0] seals from now
// on (the counter goes on), and the peers' starts under a key no longer
// held are forgotten.
func (s *Sealer) SetKeys(keys []Key) error {
	switch {
	case len(keys) == 0 || len(keys) > 2:
		return fmt.Errorf("seal: %d keys: want one, or two during a rollover", len(keys))
	case len(keys) == 2 && keys[0].id == keys[1].id:
		return errors.New("seal: the two keys of a rollover have the same fingerprint")
	}
	for _, k := range keys {
		if k.IsZero() {
			return errors.New("seal: an empty key")
		}
	}
	if equalKeys(s.keys, keys) {
		return nil
	}
	own, err := startKey(keys[0], s.self, s.inc, s.salt)
	if err != nil {
		return err
	}
	s.keys, s.own = append([]Key(nil), keys...), own
	for id := range s.starts {
		if _, ok := s.key(id.key); !ok {
			delete(s.starts, id)
		}
	}
	return nil
}

// Keys returns the keys: the first seals.
func (s *Sealer) Keys() []Key { return s.keys }

// Own reports whether a sealed header is of this node's own start: a
// datagram of its own, looped back.
func (s *Sealer) Own(h Header) bool { return h.From == s.self && h.Inc == s.inc && h.Salt == s.salt }

// Stats returns the counters.
func (s *Sealer) Stats() Stats { return s.stats }

func (s *Sealer) key(id uint32) (Key, bool) {
	for _, k := range s.keys {
		if k.id == id {
			return k, true
		}
	}
	return Key{}, false
}

// Seal appends datagram, sealed, to dst[:0] and returns it; dst should
// have room for len(datagram)+Overhead bytes.
func (s *Sealer) Seal(dst, datagram []byte) []byte {
	s.counter++
	s.stats.Sealed++
	out := append(dst[:0], make([]byte, HeaderSize)...)
	Header{KeyID: s.keys[0].id, From: s.self, Inc: s.inc, Salt: s.salt, Counter: s.counter}.put(out)
	n := nonce(s.counter)
	return s.own.Seal(out, n[:], datagram, out[:HeaderSize])
}

// Open opens a sealed datagram into dst[:0] and returns the cleartext
// datagram and the header, whose From and Inc the datagram's own header
// must repeat (the caller checks). It fails, and counts, for a cleartext
// datagram (ErrNotSealed), one it cannot parse (ErrMalformed), one sealed
// with a key it does not hold (ErrUnknownKey: the header names it), one
// that does not open (ErrOpen), and a replay (ErrReplay).
func (s *Sealer) Open(dst, sealed []byte) ([]byte, Header, error) {
	h, err := ReadHeader(sealed)
	switch {
	case errors.Is(err, ErrNotSealed):
		s.stats.NotSealed++
		return nil, h, err
	case err != nil:
		s.stats.Failed++
		return nil, h, err
	case h.Counter == 0:
		s.stats.Failed++
		return nil, h, ErrMalformed
	}
	k, ok := s.key(h.KeyID)
	if !ok {
		s.stats.UnknownKey++
		return nil, h, ErrUnknownKey
	}
	id := startID{h.KeyID, h.From, h.Inc, h.Salt}
	st := s.starts[id]
	if st != nil && !st.win.fresh(h.Counter) {
		s.stats.Replays++
		return nil, h, ErrReplay
	}
	aead := s.own
	if h.From != s.self || h.Inc != s.inc || h.Salt != s.salt || h.KeyID != s.keys[0].id {
		if st != nil {
			aead = st.aead
		} else if aead, err = startKey(k, h.From, h.Inc, h.Salt); err != nil {
			s.stats.Failed++
			return nil, h, err
		}
	}
	n := nonce(h.Counter)
	plain, err := aead.Open(dst[:0], n[:], sealed[HeaderSize:], sealed[:HeaderSize])
	if err != nil {
		s.stats.Failed++
		return nil, h, ErrOpen
	}
	if st == nil {
		st = &start{aead: aead}
		s.remember(id, st)
	}
	s.clock++
	st.used = s.clock
	st.win.mark(h.Counter)
	s.stats.Opened++
	return plain, h, nil
}

// remember keeps a start that opened, forgetting the least recently heard
// one past MaxStarts.
func (s *Sealer) remember(id startID, st *start) {
	if len(s.starts) >= MaxStarts {
		var oldest startID
		least := ^uint64(0)
		for k, v := range s.starts {
			if v.used < least {
				oldest, least = k, v.used
			}
		}
		delete(s.starts, oldest)
		s.stats.Forgotten++
	}
	s.starts[id] = st
}

// window is a replay window: the highest counter seen, and which of the
// WindowSize counters below it were seen.
type window struct {
	highest uint64
	seen    [WindowSize / 64]uint64 // bit i of the ring: counter highest-i... by position c % WindowSize
}

// fresh reports whether counter c was not seen and is not too old.
func (w *window) fresh(c uint64) bool {
	switch {
	case c > w.highest:
		return true
	case w.highest-c >= WindowSize:
		return false
	}
	return w.seen[(c%WindowSize)/64]&(1<<(c%64)) == 0
}

// mark records counter c as seen (fresh(c) must have held).
func (w *window) mark(c uint64) {
	if c > w.highest {
		if c-w.highest >= WindowSize {
			clear(w.seen[:])
		} else {
			for x := w.highest + 1; x < c; x++ { // the counters skipped are not seen yet
				w.seen[(x%WindowSize)/64] &^= 1 << (x % 64)
			}
		}
		w.highest = c
	}
	w.seen[(c%WindowSize)/64] |= 1 << (c % 64)
}
