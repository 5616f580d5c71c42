package testutil

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Msgpack returns vs as a msgpack array, failing t if it cannot.
func Msgpack(t testing.TB, vs ...any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(vs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// NotArrays are the payloads that a decoder of msgpack arrays of at most
// max bytes must reject whatever fields it wants: empty, not an array,
// nil, longer than max, and an array that claims 2^32−1 elements.
// The map is new: a test may add its own cases, by name.
func NotArrays(max int) map[string][]byte {
	return map[string][]byte{
		"empty":        nil,
		"not an array": {0x01},
		"nil":          {0xc0},
		"too long":     make([]byte, max+1),
		"huge array":   {0xdd, 0xff, 0xff, 0xff, 0xff},
	}
}
