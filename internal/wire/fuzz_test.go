package wire

import (
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder. It must never panic, and
// whatever it accepts must survive a re-encode and decode unchanged, decode
// the same into an Envelope already used by other datagrams, and be sized
// exactly by EncodedSize. `go test` runs the seed corpus (the samples plus
// testdata/fuzz/FuzzDecode); run `go test -fuzz FuzzDecode ./internal/wire`
// to search further.
func FuzzDecode(f *testing.F) {
	enc := NewEncoder()
	var used [][]byte
	for _, e := range append(samples(), edgeSamples()...) {
		b, _ := enc.Append(nil, e)
		f.Add(b)
		f.Add(b[:len(b)/2])
		used = append(used, b)
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
		if n, _ := EncodedSize(env); n != len(again) {
			t.Fatalf("EncodedSize of %v = %d, encoding is %d", env.Kind, n, len(again))
		}
		env2 := NewEnvelope(len(again))
		if err := NewDecoder().Decode(again, env2); err != nil {
			t.Fatalf("re-encoded datagram does not decode: %v", err)
		}
		if a, b := normalize(env), normalize(env2); !reflect.DeepEqual(a, b) {
			t.Fatalf("decode/encode/decode changed the envelope:\n%+v\n%+v", a, b)
		}
		if a, b := normalize(env), normalize(decodeUsed(t, used, data)); !reflect.DeepEqual(a, b) {
			t.Fatalf("decoding into a used envelope differs:\n%+v\n%+v", a, b)
		}
	})
}

// decodeUsed decodes data into an Envelope that has first decoded every one
// of used, so that its slices hold leftovers.
func decodeUsed(t *testing.T, used [][]byte, data []byte) *Envelope {
	dec, env := NewDecoder(), &Envelope{}
	for _, b := range used {
		dec.Decode(b, env)
	}
	if err := dec.Decode(data, env); err != nil {
		t.Fatalf("decodes into a fresh envelope, not into a used one: %v", err)
	}
	return env
}
