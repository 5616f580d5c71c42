package ping

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestProbeRoundTrip(t *testing.T) {
	for _, p := range []Probe{
		{Kind: ProbeMulticast, Seq: 1, Sent: 12345, Peers: 2, ID: "h1"},
		{Kind: EchoUnicast, Seq: 1<<32 - 1, Sent: 1<<64 - 1, Peers: 65535, ID: strings.Repeat("é", 32)},
		{Kind: Done, ID: "x"},
	} {
		b := p.Append(nil)
		if len(b) != headerLen+len(p.ID) {
			t.Errorf("%+v: %d bytes", p, len(b))
		}
		got, err := Decode(b)
		if err != nil || got != p {
			t.Errorf("Decode(Append(%+v)) = %+v, %v", p, got, err)
		}
	}
}

// TestDecodeRejects: every field a sender controls is checked, and what
// fails is ErrMalformed, or ErrVersion for another version.
func TestDecodeRejects(t *testing.T) {
	good := Probe{Kind: ProbeUnicast, Seq: 7, Sent: 9, ID: "h2"}.Append(nil)
	set := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"empty":          {nil, ErrMalformed},
		"short header":   {good[:headerLen-1], ErrMalformed},
		"no ID":          {good[:headerLen], ErrMalformed},
		"bad magic":      {set(0, 'X'), ErrMalformed},
		"version 0":      {set(4, 0), ErrVersion},
		"version 2":      {set(4, 2), ErrVersion},
		"kind 0":         {set(5, 0), ErrMalformed},
		"kind 6":         {set(5, 6), ErrMalformed},
		"ID length long": {set(6, 3), ErrMalformed},
		"ID length 0":    {set(6, 0), ErrMalformed},
		"ID length 255":  {set(6, 255), ErrMalformed},
		"trailing byte":  {append(bytes.Clone(good), 0), ErrMalformed},
		"control char":   {set(headerLen, '\n'), ErrMalformed},
		"escape":         {set(headerLen, 0x1b), ErrMalformed},
		"space":          {set(headerLen, ' '), ErrMalformed},
		"not UTF-8":      {set(headerLen, 0xff), ErrMalformed},
		"other protocol": {[]byte("GET / HTTP/1.0\r\n\r\n........"), ErrMalformed},
	} {
		p, err := Decode(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Decode = %+v, %v; want %v", name, p, err, c.want)
		}
	}
	long := Probe{Kind: Done, ID: strings.Repeat("a", MaxIDLen+1)}
	if _, err := Decode(long.Append(nil)); !errors.Is(err, ErrMalformed) {
		t.Errorf("an ID of %d bytes: %v", MaxIDLen+1, err)
	}
}

func TestCheckID(t *testing.T) {
	for _, id := range []string{"h1", "node-7.example.org", "ünïcode", "a/b:c", strings.Repeat("z", MaxIDLen)} {
		if err := CheckID(id); err != nil {
			t.Errorf("CheckID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", " ", "a b", "tab\t", "bell\a", "\x1b[31mred", "\u200b", "\xff", strings.Repeat("z", MaxIDLen+1)} {
		if err := CheckID(id); err == nil {
			t.Errorf("CheckID(%q) accepts it", id)
		}
	}
}

// FuzzDecode: no input panics Decode, and what it accepts encodes back
// to the same bytes (but for the reserved bytes, which it ignores).
func FuzzDecode(f *testing.F) {
	f.Add(Probe{Kind: ProbeMulticast, Seq: 1, ID: "h1"}.Append(nil))
	f.Add([]byte("HPNG"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		again := p.Append(nil)
		b = bytes.Clone(b)
		b[7], b[22], b[23] = 0, 0, 0
		if !bytes.Equal(again, b) {
			t.Errorf("Decode(%x) = %+v, which encodes as %x", b, p, again)
		}
	})
}
