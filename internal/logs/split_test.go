package logs

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

var splitLines = []string{
	`{"level":"info","node":2,"event":"deliver","from":1,"seq":17,"len":1000,"crc":3735928559,"time":"2025-01-02T03:04:05.123456789Z","message":"delivered"}`,
	`  {"a":"x\"y\\z","b":[1,{"c":"]}"}],"d":{"e":[]},"f":true,"g":null,"h":-1.5e3}  `,
	`{}`,
	`{"node":"18446744073709551615","event":"e"}`,
}

func TestSplitObject(t *testing.T) {
	for _, line := range splitLines {
		b := []byte(line)
		ms, ok := splitObject(b, nil)
		if !ok {
			t.Errorf("splitObject(%s) failed", line)
			continue
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if len(ms) != len(want) {
			t.Errorf("%s: %d members, want %d", line, len(ms), len(want))
		}
		for _, m := range ms {
			key, v := string(b[m.key:m.keyEnd]), m.value(b)
			raw := string(want[key])
			if v.kind == kindString {
				s, _ := v.text()
				var ws string
				json.Unmarshal([]byte(raw), &ws)
				if s != ws {
					t.Errorf("%s: %s = %q, want %q", line, key, s, ws)
				}
			} else if string(v.raw) != raw {
				t.Errorf("%s: %s = %s, want %s", line, key, v.raw, raw)
			}
		}
	}
	for _, bad := range []string{``, `x`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":"b`, `{"a":[1,2}`, `{"a":1 "b":2}`, `[1]`, `{"a":tru}`} {
		if _, ok := splitObject([]byte(bad), nil); ok {
			t.Errorf("splitObject(%q) succeeded", bad)
		}
	}
}

func TestValueUint(t *testing.T) {
	for val, want := range map[string]uint64{`7`: 7, `"42"`: 42, `18446744073709551615`: 1<<64 - 1} {
		b := []byte(`{"n":` + val + `}`)
		ms, _ := splitObject(b, nil)
		if got, ok := ms[0].value(b).uint(); !ok || got != want {
			t.Errorf("uint(%s) = %d, %v", val, got, ok)
		}
	}
	for _, val := range []string{`-1`, `1.5`, `18446744073709551616`, `"x"`, `true`, `""`} {
		b := []byte(`{"n":` + val + `}`)
		ms, _ := splitObject(b, nil)
		if got, ok := ms[0].value(b).uint(); ok {
			t.Errorf("uint(%s) = %d, want failure", val, got)
		}
	}
}

// FuzzSplitObject: never a panic, and every valid JSON object splits into
// its members.
func FuzzSplitObject(f *testing.F) {
	for _, l := range splitLines {
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
			key, v := line[m.key:m.keyEnd], m.value(line)
			if !bytes.Contains(key, []byte{'\\'}) && utf8.Valid(key) {
				if _, found := want[string(key)]; !found {
					t.Fatalf("%q: key %q not in %v", line, key, want)
				}
			}
			v.text()
			v.uint()
			v.int()
			v.uints()
		}
	})
}
