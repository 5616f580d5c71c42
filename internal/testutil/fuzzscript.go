package testutil

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/huddle-lan/huddle/internal/wire"
)

// Script reads a fuzzer's bytes as a script: each step of a fuzz test
// reads the choices it needs (which node, which kind, which number), so
// that every input is a script, and a mutation changes a choice. Past the
// end it reads zeros.
type Script struct{ b []byte }

// NewScript returns a Script reading b.
func NewScript(b []byte) *Script { return &Script{b: b} }

// Byte reads one byte.
func (s *Script) Byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

// Done reports whether every byte has been read.
func (s *Script) Done() bool { return len(s.b) == 0 }

// Bytes reads a length and that many bytes (at most max, at most what is
// left). They alias the script.
func (s *Script) Bytes(max int) []byte {
	n := min(int(s.Byte()), max, len(s.b))
	out := s.b[:n]
	s.b = s.b[n:]
	return out
}

// U64 reads a number: a selector byte, then what it needs. The context
// values are the numbers that matter to the test right now (IDs,
// incarnations, sequence numbers held), so that a forgery can hit them,
// or land one or two above.
func (s *Script) U64(ctx []uint64) uint64 {
	sel := s.Byte()
	switch sel % 10 {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return uint64(s.Byte())
	case 3:
		return uint64(s.Byte())<<8 | uint64(s.Byte())
	case 4:
		return math.MaxUint64 - uint64(s.Byte())
	case 5:
		return wire.MaxSeq - 2 + uint64(s.Byte()%4)
	case 6:
		var b [8]byte
		for i := range b {
			b[i] = s.Byte()
		}
		return binary.BigEndian.Uint64(b[:])
	default:
		if len(ctx) == 0 {
			return uint64(sel)
		}
		v := ctx[int(s.Byte())%len(ctx)]
		return v + uint64(sel%10-7) // the value, or one or two above it
	}
}

// FuzzScripts fuzzes run, a test that reads its input as a Script, after
// adding seeds to the corpus (besides testdata/fuzz).
func FuzzScripts(f *testing.F, seeds [][]byte, run func(t *testing.T, script []byte)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(run)
}
