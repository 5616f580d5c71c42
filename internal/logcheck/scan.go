package logcheck

import (
	"encoding/json"
	"strconv"
	"time"
)

// A log line is a flat JSON object written by zerolog. Decoding every line
// with encoding/json into a map costs a few microseconds and a dozen
// allocations; a run at 20 000 msg/s writes that many lines per second
// per node. So lines are split into their top-level members by a small
// scanner that allocates nothing, and only the values the checks need are
// converted. Nested objects and arrays are skipped whole.

// Value kinds of a member.
const (
	kindString = 's'
	kindNumber = 'n'
	kindOther  = 'o' // true, false, null, an object or an array
)

type member struct {
	key  []byte // raw, between the quotes
	val  []byte // raw; for a string, between the quotes (still escaped)
	kind byte
	esc  bool // the string value holds a backslash escape
}

// splitObject splits line into its top-level members, appending them to
// ms[:0]. It reports false when line is not one well-formed JSON object
// (a crash trace, a line cut short by a kill).
func splitObject(line []byte, ms []member) ([]member, bool) {
	ms = ms[:0]
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return ms, false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return ms, skipSpace(line, i+1) == len(line)
	}
	for {
		var m member
		var ok bool
		if i >= len(line) || line[i] != '"' {
			return ms, false
		}
		if m.key, _, i, ok = scanString(line, i); !ok {
			return ms, false
		}
		i = skipSpace(line, i)
		if i >= len(line) || line[i] != ':' {
			return ms, false
		}
		i = skipSpace(line, i+1)
		if m.val, m.kind, m.esc, i, ok = scanValue(line, i); !ok {
			return ms, false
		}
		ms = append(ms, m)
		i = skipSpace(line, i)
		if i >= len(line) {
			return ms, false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return ms, skipSpace(line, i+1) == len(line)
		default:
			return ms, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// scanString scans the string starting at b[i] == '"' and returns its raw
// contents and the index after the closing quote.
func scanString(b []byte, i int) (raw []byte, esc bool, next int, ok bool) {
	start := i + 1
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '\\':
			esc = true
			j++
		case c == '"':
			return b[start:j], esc, j + 1, true
		case c < 0x20:
			return nil, false, 0, false
		}
	}
	return nil, false, 0, false
}

func scanValue(b []byte, i int) (val []byte, kind byte, esc bool, next int, ok bool) {
	if i >= len(b) {
		return nil, 0, false, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		val, esc, next, ok = scanString(b, i)
		return val, kindString, esc, next, ok
	case c == '{' || c == '[':
		if next, ok = skipNested(b, i); !ok {
			return nil, 0, false, 0, false
		}
		return b[i:next], kindOther, false, next, true
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(b) && isNumberByte(b[j]) {
			j++
		}
		return b[i:j], kindNumber, false, j, true
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
				return b[i : i+len(lit)], kindOther, false, i + len(lit), true
			}
		}
		return nil, 0, false, 0, false
	}
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// skipNested skips the object or array starting at b[i], strings included.
func skipNested(b []byte, i int) (int, bool) {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			_, _, next, ok := scanString(b, j)
			if !ok {
				return 0, false
			}
			j = next - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

// lookup returns the member named key.
func lookup(ms []member, key string) (member, bool) {
	for _, m := range ms {
		if string(m.key) == key {
			return m, true
		}
	}
	return member{}, false
}

// text returns a string member's value, unescaped.
func (m member) text() (string, bool) {
	if m.kind != kindString {
		return "", false
	}
	if !m.esc {
		return string(m.val), true
	}
	var s string
	q := make([]byte, 0, len(m.val)+2)
	q = append(append(append(q, '"'), m.val...), '"')
	if json.Unmarshal(q, &s) != nil {
		return "", false
	}
	return s, true
}

// uint returns a member holding an unsigned decimal integer, written as a
// JSON number or as a string (zerolog writes uint64 as a number; other
// writers quote large IDs).
func (m member) uint() (uint64, bool) {
	if (m.kind != kindNumber && m.kind != kindString) || len(m.val) == 0 || len(m.val) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range m.val {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// int returns a number member as an int64; fractions are truncated.
func (m member) int() (int64, bool) {
	if m.kind != kindNumber {
		return 0, false
	}
	s := string(m.val)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f || f > 1<<63-1 || f < -(1<<63) {
		return 0, false
	}
	return int64(f), true
}

// float returns a number member as a float64.
func (m member) float() (float64, bool) {
	if m.kind != kindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(m.val), 64)
	return f, err == nil
}

// uints returns an array member whose elements are all unsigned integers
// (numbers or quoted, as uint reads them); null is an empty list. It
// reports false for anything else, so that a garbled list is not read as
// a shorter one.
func (m member) uints() ([]uint64, bool) {
	b := m.val
	if m.kind != kindOther || len(b) == 0 || b[0] != '[' {
		return nil, m.kind == kindOther && string(b) == "null"
	}
	var ns []uint64
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return ns, true
	}
	for i < len(b) {
		var e member
		var ok bool
		if e.val, e.kind, e.esc, i, ok = scanValue(b, i); !ok {
			return nil, false
		}
		n, ok := e.uint()
		if !ok {
			return nil, false
		}
		ns = append(ns, n)
		if i = skipSpace(b, i); i < len(b) && b[i] == ']' {
			return ns, true
		}
		if i >= len(b) || b[i] != ',' {
			return nil, false
		}
		i = skipSpace(b, i+1)
	}
	return nil, false
}

// time returns a string member in RFC 3339 (nanoseconds optional).
func (m member) time() (time.Time, bool) {
	s, ok := m.text()
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
