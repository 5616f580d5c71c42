package wire

import (
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder. It must never panic, and
// whatever it accepts must survive a re-encode and decode unchanged. `go test`
// runs the seed corpus (the samples plus testdata/fuzz/FuzzDecode); run
// `go test -fuzz FuzzDecode ./internal/wire` to search further.
func FuzzDecode(f *testing.F) {
	enc := NewEncoder()
	for _, e := range samples() {
		b, _ := enc.Append(nil, e)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec, env := NewDecoder(), NewEnvelope(len(data))
		if err := dec.Decode(data, env); err != nil {
			return
		}
		again, err := NewEncoder().Append(nil, env)
		if err != nil {
			t.Fatalf("decoded %v but cannot encode it: %v", env.Kind, err)
		}
		env2 := NewEnvelope(len(again))
		if err := NewDecoder().Decode(again, env2); err != nil {
			t.Fatalf("re-encoded datagram does not decode: %v", err)
		}
		if a, b := normalize(env), normalize(env2); !reflect.DeepEqual(a, b) {
			t.Fatalf("decode/encode/decode changed the envelope:\n%+v\n%+v", a, b)
		}
	})
}
