package seal

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustKey(t testing.TB) Key {
	t.Helper()
	k, text, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseKey(text + "\n"); err != nil || back != k {
		t.Fatalf("ParseKey(%q) = %v, %v", text, back.Fingerprint(), err)
	}
	return k
}

func sealer(t testing.TB, keys []Key, self, inc uint64) *Sealer {
	t.Helper()
	s, err := NewSealer(keys, self, inc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpen(t *testing.T) {
	k := mustKey(t)
	a, b := sealer(t, []Key{k}, 1, 100), sealer(t, []Key{k}, 2, 200)
	for i := range 3 {
		msg := []byte(strings.Repeat("datagram ", i+1))
		sealed := a.Seal(nil, msg)
		if len(sealed) != len(msg)+Overhead {
			t.Fatalf("sealed %d bytes into %d, want +%d", len(msg), len(sealed), Overhead)
		}
		if bytes.Contains(sealed, []byte("datagram")) {
			t.Fatal("the sealed datagram shows its cleartext")
		}
		plain, h, err := b.Open(nil, sealed)
		if err != nil || !bytes.Equal(plain, msg) || h.From != 1 || h.Inc != 100 || h.Counter != uint64(i+1) || h.KeyID != k.ID() {
			t.Fatalf("Open: %q %+v %v", plain, h, err)
		}
		if _, _, err := b.Open(nil, sealed); !errors.Is(err, ErrReplay) {
			t.Fatalf("the same datagram again: %v, want ErrReplay", err)
		}
	}
	if s := b.Stats(); s.Opened != 3 || s.Replays != 3 {
		t.Fatalf("stats %+v", s)
	}
}

// TestTamper: a change to any byte, header or body, makes the datagram
// fail to open (the header is associated data).
func TestTamper(t *testing.T) {
	k := mustKey(t)
	a, b := sealer(t, []Key{k}, 1, 100), sealer(t, []Key{k}, 2, 200)
	sealed := a.Seal(nil, []byte("a datagram of some length"))
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x20
		_, _, err := b.Open(nil, bad)
		switch {
		case i < 2 && err == nil, i >= 2 && i < 6 && !errors.Is(err, ErrUnknownKey), i >= 6 && !errors.Is(err, ErrOpen):
			t.Fatalf("byte %d changed: %v", i, err)
		}
	}
	if _, _, err := b.Open(nil, sealed); err != nil {
		t.Fatalf("the untouched datagram: %v", err)
	}
}

func TestWrongKeyAndCleartext(t *testing.T) {
	k1, k2 := mustKey(t), mustKey(t)
	a, b := sealer(t, []Key{k1}, 1, 100), sealer(t, []Key{k2}, 2, 200)
	sealed := a.Seal(nil, []byte("x"))
	_, h, err := b.Open(nil, sealed)
	if !errors.Is(err, ErrUnknownKey) || Fingerprint(h.KeyID) != k1.Fingerprint() {
		t.Fatalf("another key: %v (header names %s)", err, Fingerprint(h.KeyID))
	}
	if _, _, err := b.Open(nil, []byte{0x98, 0xcd, 0x48, 0x03}); !errors.Is(err, ErrNotSealed) {
		t.Fatalf("cleartext: %v", err)
	}
	if _, _, err := b.Open(nil, []byte{Marker, Version, 1}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short: %v", err)
	}
	if s := b.Stats(); s.UnknownKey != 1 || s.NotSealed != 1 || s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRollover: a node holding the old and the new key opens both; one
// that seals with the new key is opened by every node that holds it.
func TestRollover(t *testing.T) {
	old, next := mustKey(t), mustKey(t)
	a := sealer(t, []Key{old}, 1, 100)
	b := sealer(t, []Key{old, next}, 2, 200) // seals with old, opens both
	c := sealer(t, []Key{next, old}, 3, 300) // seals with next, opens both
	for _, from := range []*Sealer{a, c} {
		if _, _, err := b.Open(nil, from.Seal(nil, []byte("m"))); err != nil {
			t.Fatalf("b opens %d: %v", from.self, err)
		}
	}
	if _, _, err := a.Open(nil, c.Seal(nil, []byte("m"))); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("a, without the new key: %v", err)
	}
	if err := a.SetKeys([]Key{next}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Open(nil, a.Seal(nil, []byte("m"))); err != nil {
		t.Fatalf("after a's reload: %v", err)
	}
	if err := a.SetKeys([]Key{next, next}); err == nil {
		t.Fatal("two equal keys accepted")
	}
}

// TestReplayWindow: out-of-order datagrams within the window open once
// each; one older than the window is dropped.
func TestReplayWindow(t *testing.T) {
	k := mustKey(t)
	a, b := sealer(t, []Key{k}, 1, 100), sealer(t, []Key{k}, 2, 200)
	var all [][]byte
	for range WindowSize + 10 {
		all = append(all, a.Seal(nil, []byte("m")))
	}
	r := rand.New(rand.NewPCG(1, 2))
	recent := all[10:]
	for _, i := range r.Perm(len(recent)) {
		if _, _, err := b.Open(nil, recent[i]); err != nil {
			t.Fatalf("datagram %d, out of order within the window: %v", i+10, err)
		}
	}
	for i := range recent {
		if _, _, err := b.Open(nil, recent[i]); !errors.Is(err, ErrReplay) {
			t.Fatalf("datagram %d again: %v", i+10, err)
		}
	}
	if _, _, err := b.Open(nil, all[0]); !errors.Is(err, ErrReplay) {
		t.Fatalf("a datagram behind the window: %v", err)
	}
}

// TestRestartSalt: a node restarting with the same incarnation (its clock
// went back) draws a new salt, so its datagrams open as a new start and
// never reuse a nonce under the same key.
func TestRestartSalt(t *testing.T) {
	k := mustKey(t)
	a1, a2, b := sealer(t, []Key{k}, 1, 100), sealer(t, []Key{k}, 1, 100), sealer(t, []Key{k}, 2, 200)
	if a1.salt == a2.salt {
		t.Fatal("two starts drew the same salt")
	}
	m1, m2 := a1.Seal(nil, []byte("m")), a2.Seal(nil, []byte("m"))
	if bytes.Equal(m1[HeaderSize:], m2[HeaderSize:]) {
		t.Fatal("two starts sealed the same message alike: the same key and nonce")
	}
	for _, m := range [][]byte{m1, m2} {
		if _, _, err := b.Open(nil, m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBoundedStarts: past MaxStarts, the least recently heard start is
// forgotten; memory does not grow with the number of senders.
func TestBoundedStarts(t *testing.T) {
	k := mustKey(t)
	b := sealer(t, []Key{k}, 1, 1)
	for i := range MaxStarts + 20 {
		a := sealer(t, []Key{k}, uint64(i+2), 1)
		if _, _, err := b.Open(nil, a.Seal(nil, []byte("m"))); err != nil {
			t.Fatal(err)
		}
	}
	if len(b.starts) != MaxStarts || b.Stats().Forgotten != 20 {
		t.Fatalf("%d starts remembered, %d forgotten", len(b.starts), b.Stats().Forgotten)
	}
}

func TestParseKey(t *testing.T) {
	for _, bad := range []string{"", "tiny", "huddle-key-v1:abc", "huddle-key-v1:" + strings.Repeat("A", 44)} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		} else if strings.Contains(err.Error(), bad) && bad != "" {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
	p1, err1 := ParseKey("a passphrase of some length")
	p2, err2 := ParseKey("  a passphrase of some length\n")
	if err1 != nil || err2 != nil || p1 != p2 {
		t.Fatalf("passphrases: %v %v", err1, err2)
	}
}

// FuzzOpen: whatever arrives, Open returns an error or a datagram, never
// panics, and never accepts what no key holder sealed.
func FuzzOpen(f *testing.F) {
	k := mustKey(f)
	a := sealer(f, []Key{k}, 1, 100)
	f.Add(a.Seal(nil, []byte("seed")))
	f.Add([]byte{Marker, Version})
	f.Add([]byte{0x98, 0xcd, 0x48, 0x03})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := sealer(t, []Key{k}, 2, 200)
		plain, _, err := b.Open(nil, data)
		if err == nil && !bytes.Equal(plain, []byte("seed")) {
			t.Fatalf("opened %q from a datagram nobody sealed", plain)
		}
	})
}

func BenchmarkSeal1000(b *testing.B) {
	k := mustKey(b)
	a := sealer(b, []Key{k}, 1, 100)
	msg, buf := make([]byte, 1000), make([]byte, 0, 1000+Overhead)
	b.SetBytes(1000)
	for b.Loop() {
		buf = a.Seal(buf, msg)
	}
}

func BenchmarkOpen1000(b *testing.B) {
	k := mustKey(b)
	a, r := sealer(b, []Key{k}, 1, 100), sealer(b, []Key{k}, 2, 200)
	msg := make([]byte, 1000)
	sealed := make([][]byte, 4096)
	for i := range sealed {
		sealed[i] = a.Seal(nil, msg)
	}
	buf := make([]byte, 0, 1000)
	b.SetBytes(1000)
	i := 0
	for b.Loop() {
		if i == len(sealed) { // fresh ones: the window would drop the same again
			b.StopTimer()
			for j := range sealed {
				sealed[j] = a.Seal(sealed[j], msg)
			}
			i = 0
			b.StartTimer()
		}
		if _, _, err := r.Open(buf, sealed[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
