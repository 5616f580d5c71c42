package workload

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
)

// KVService is the service the experiment's key-value store replicates.
const KVService = "kv"

// KV is the experiment's replicated key-value store (config kv.*): a map
// from 8-byte keys to values, changed by total-order puts, taken by a
// node that joins by state transfer. At every view it logs kv.state with
// the hash of its state at the view's cut, which huddle check holds the
// members of the view to.
type KV struct {
	mu   sync.Mutex
	m    map[uint64][]byte
	self uint64
	log  zerolog.Logger
}

// NewKV returns the store cfg asks for, nil for none; Options passes it
// to huddle.Start.
func NewKV(cfg config.Config, log zerolog.Logger) *KV {
	if cfg.KV.Keys == 0 {
		return nil
	}
	s := &KV{m: map[uint64][]byte{}, self: cfg.ID, log: log}
	if cfg.KV.Fill {
		s.m = filled(cfg.KV.Keys, cfg.KV.Size)
	}
	return s
}

// filled is the store kv.fill starts with: every key 0 to keys-1 holding
// fillValue(key, size), the same on every node.
func filled(keys, size int) map[uint64][]byte {
	m := make(map[uint64][]byte, keys)
	buf := make([]byte, keys*size) // one allocation for every value
	for k := range uint64(keys) {
		v := buf[int(k)*size : (int(k)+1)*size : (int(k)+1)*size]
		fillValue(v, k)
		m[k] = v
	}
	return m
}

// fillValue writes key k's value of kv.fill into v: bytes of a PCG stream
// seeded by the key, so that no two keys hold the same value.
func fillValue(v []byte, k uint64) {
	rng := rand.NewPCG(k, 0x66696c6c)
	for i := 0; i < len(v); i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		copy(v[i:], w[:])
	}
}

// Options are huddle.Start's options for the store: none without one.
func (s *KV) Options() []huddle.Option {
	if s == nil {
		return nil
	}
	return []huddle.Option{huddle.Replicated(KVService, s)}
}

// Apply implements huddle.StateMachine: a put is [key (8 bytes), value].
func (s *KV) Apply(m huddle.Message) {
	if len(m.Payload) < 8 {
		return
	}
	s.mu.Lock()
	s.m[binary.BigEndian.Uint64(m.Payload)] = m.Payload[8:] // the message's own copy
	s.mu.Unlock()
}

// Snapshot implements huddle.StateMachine: the entries by key, each
// [key, length, value].
func (s *KV) Snapshot(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(w)
}

func (s *KV) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var b [binary.MaxVarintLen64 + 8]byte
	binary.BigEndian.PutUint64(b[:], uint64(len(s.m)))
	bw.Write(b[:8])
	for _, k := range slices.Sorted(maps.Keys(s.m)) {
		v := s.m[k]
		binary.BigEndian.PutUint64(b[:], k)
		n := binary.PutUvarint(b[8:], uint64(len(v)))
		bw.Write(b[:8+n])
		bw.Write(v)
	}
	return bw.Flush()
}

var errKV = errors.New("not a snapshot of the kv store")

// Restore implements huddle.StateMachine.
func (s *KV) Restore(r io.Reader) error {
	br := bufio.NewReader(r)
	var b [8]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return fmt.Errorf("%w: %v", errKV, err)
	}
	n := binary.BigEndian.Uint64(b[:])
	m := make(map[uint64][]byte, min(n, 1<<20))
	for range n {
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return fmt.Errorf("%w: %v", errKV, err)
		}
		l, err := binary.ReadUvarint(br)
		if err != nil || l > 1<<16 {
			return fmt.Errorf("%w: a value of %d bytes (%v)", errKV, l, err)
		}
		v := make([]byte, l)
		if _, err := io.ReadFull(br, v); err != nil {
			return fmt.Errorf("%w: %v", errKV, err)
		}
		m[binary.BigEndian.Uint64(b[:])] = v
	}
	s.mu.Lock()
	s.m = m
	s.mu.Unlock()
	return nil
}

// ViewChanged logs the store's state at the view's cut: its hash, keys
// and bytes, and whether this node is behind (it then takes the group's
// state, and its own says nothing).
func (s *KV) ViewChanged(v huddle.View) {
	h := sha256.New()
	s.mu.Lock()
	s.write(h)
	keys := len(s.m)
	s.mu.Unlock()
	sum := h.Sum(nil)
	s.log.Info().Str(logs.EventKey, logs.KVState).Str(logs.ServiceKey, KVService).Str(logs.ViewKey, v.ID.String()).
		Str(logs.HashKey, fmt.Sprintf("%x", sum[:16])).Int(logs.KeysKey, keys).Bool(logs.BehindKey, v.WaitsForState(s.self)).
		Msgf("kv store at view %s: %d keys", v.ID, keys)
}

// puts multicasts puts at cfg.KV.Rate to random keys, in total order,
// from start on; outside the primary component the puts due are skipped.
func puts(ctx context.Context, g *huddle.Group, cfg config.Config, start time.Time) {
	svc := g.Service(KVService)
	rng := rand.New(rand.NewPCG(g.Self().Inc, 0x6b76))
	<-g.Replica(KVService).Current()
	every := time.Second / time.Duration(cfg.KV.Rate)
	for next := start; ; next = next.Add(every) {
		if !sleepUntil(ctx, next) {
			return
		}
		p := make([]byte, 8+cfg.KV.Size)
		binary.BigEndian.PutUint64(p, rng.Uint64N(uint64(cfg.KV.Keys)))
		for i := 8; i < len(p); i++ {
			p[i] = byte(rng.Uint32())
		}
		_, err := svc.Multicast(ctx, p, huddle.Total)
		switch {
		case err == nil, errors.Is(err, huddle.ErrNotPrimary), errors.Is(err, huddle.ErrNotInView):
		default:
			return
		}
		if now := time.Now(); now.Sub(next) > time.Second {
			next = now // fallen far behind (a long view change): do not catch up in a burst
		}
	}
}
