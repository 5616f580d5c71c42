package logcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"unicode/utf8"
)

var scanLines = []string{
	`{"level":"info","node":2,"event":"deliver","from":1,"seq":17,"len":1000,"crc":3735928559,"time":"2025-01-02T03:04:05.123456789Z","message":"delivered"}`,
	`  {"a":"x\"y\\z","b":[1,{"c":"]}"}],"d":{"e":[]},"f":true,"g":null,"h":-1.5e3}  `,
	`{}`,
	`{"node":"18446744073709551615","event":"e"}`,
}

func TestSplitObject(t *testing.T) {
	for _, line := range scanLines {
		ms, ok := splitObject([]byte(line), nil)
		if !ok {
			t.Errorf("splitObject(%s) failed", line)
			continue
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatal(err)
		}
		if len(ms) != len(want) {
			t.Errorf("%s: %d members, want %d", line, len(ms), len(want))
		}
		for _, m := range ms {
			raw := string(want[string(m.key)])
			if m.kind == kindString {
				s, _ := m.text()
				var ws string
				json.Unmarshal([]byte(raw), &ws)
				if s != ws {
					t.Errorf("%s: %s = %q, want %q", line, m.key, s, ws)
				}
			} else if string(m.val) != raw {
				t.Errorf("%s: %s = %s, want %s", line, m.key, m.val, raw)
			}
		}
	}
	for _, bad := range []string{``, `x`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":"b`, `{"a":[1,2}`, `{"a":1 "b":2}`, `[1]`, `{"a":tru}`} {
		if _, ok := splitObject([]byte(bad), nil); ok {
			t.Errorf("splitObject(%q) succeeded", bad)
		}
	}
}

func TestMemberUint(t *testing.T) {
	for val, want := range map[string]uint64{`7`: 7, `"42"`: 42, `18446744073709551615`: 1<<64 - 1} {
		ms, _ := splitObject([]byte(`{"n":`+val+`}`), nil)
		if got, ok := ms[0].uint(); !ok || got != want {
			t.Errorf("uint(%s) = %d, %v", val, got, ok)
		}
	}
	for _, val := range []string{`-1`, `1.5`, `18446744073709551616`, `"x"`, `true`, `""`} {
		ms, _ := splitObject([]byte(`{"n":`+val+`}`), nil)
		if got, ok := ms[0].uint(); ok {
			t.Errorf("uint(%s) = %d, want failure", val, got)
		}
	}
}

// FuzzSplitObject: never a panic, and every valid JSON object splits into
// its members.
func FuzzSplitObject(f *testing.F) {
	for _, l := range scanLines {
		f.Add([]byte(l))
	}
	f.Add([]byte("  {\"0\":\"0\\00000\",\"0\":["))
	f.Add([]byte("{\"\x87\":0}"))
	f.Fuzz(func(t *testing.T, line []byte) {
		ms, ok := splitObject(line, nil)
		var want map[string]json.RawMessage
		if json.Unmarshal(line, &want) != nil || !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
			return
		}
		if !ok {
			t.Fatalf("valid object %q not split", line)
		}
		for _, m := range ms {
			if !bytes.Contains(m.key, []byte{'\\'}) && utf8.Valid(m.key) {
				if _, found := want[string(m.key)]; !found {
					t.Fatalf("%q: key %q not in %v", line, m.key, want)
				}
			}
			m.text()
			m.uint()
			m.int()
		}
	})
}

// BenchmarkRead reads a log of 100 000 deliver events.
func BenchmarkRead(b *testing.B) {
	var sb strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&sb, `{"level":"info","node":2,"event":"deliver","from":1,"seq":%d,"len":1000,"crc":%d,"time":"2025-01-02T03:04:05.%09dZ","message":"delivered"}`+"\n",
			i+1, crc32.ChecksumIEEE([]byte{byte(i)}), i)
	}
	log := sb.String()
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		r := &Run{}
		if err := r.Read("node2.json", strings.NewReader(log)); err != nil || len(r.Lives[0].Delivers) != 100000 {
			b.Fatal(err)
		}
	}
}
