package logs

import (
	"encoding/json"
	"strconv"
	"time"
)

// A log line is a flat JSON object written by zerolog. Decoding every line
// with encoding/json into a map costs a few microseconds and a dozen
// allocations; a run at 20 000 msg/s writes that many lines per second
// per node. So lines are split into their top-level members by a small
// scanner that allocates nothing, and only the values asked for are
// converted. Nested objects and arrays are skipped whole.

// Value kinds of a member.
const (
	kindString = 's'
	kindNumber = 'n'
	kindOther  = 'o' // true, false, null, an object or an array
)

// member is one member of a line, as offsets into it: its key (between
// the quotes) and its value (for a string, between the quotes, still
// escaped).
type member struct {
	key, keyEnd int
	val, valEnd int
	kind        byte
	esc         bool // the string value holds a backslash escape
}

// value is a member's value with its line.
type value struct {
	raw  []byte
	kind byte
	esc  bool
}

func (m member) value(line []byte) value {
	return value{line[m.val:m.valEnd], m.kind, m.esc}
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
		m.key = i + 1
		if m.keyEnd, _, i, ok = scanString(line, i); !ok {
			return ms, false
		}
		i = skipSpace(line, i)
		if i >= len(line) || line[i] != ':' {
			return ms, false
		}
		i = skipSpace(line, i+1)
		if m.val, m.valEnd, m.kind, m.esc, i, ok = scanValue(line, i); !ok {
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

// scanString scans the string starting at b[i] == '"' and returns the
// end of its raw contents (which start at i+1) and the index after the
// closing quote.
func scanString(b []byte, i int) (end int, esc bool, next int, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '\\':
			esc = true
			j++
		case c == '"':
			return j, esc, j + 1, true
		case c < 0x20:
			return 0, false, 0, false
		}
	}
	return 0, false, 0, false
}

// scanValue scans the value starting at b[i]: its raw text is b[start:end].
func scanValue(b []byte, i int) (start, end int, kind byte, esc bool, next int, ok bool) {
	if i >= len(b) {
		return 0, 0, 0, false, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, esc, next, ok = scanString(b, i)
		return i + 1, end, kindString, esc, next, ok
	case c == '{' || c == '[':
		if next, ok = skipNested(b, i); !ok {
			return 0, 0, 0, false, 0, false
		}
		return i, next, kindOther, false, next, true
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(b) && isNumberByte(b[j]) {
			j++
		}
		return i, j, kindNumber, false, j, true
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
				return i, i + len(lit), kindOther, false, i + len(lit), true
			}
		}
		return 0, 0, 0, false, 0, false
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

// text returns a string value, unescaped.
func (v value) text() (string, bool) {
	if v.kind != kindString {
		return "", false
	}
	if !v.esc {
		return string(v.raw), true
	}
	var s string
	q := make([]byte, 0, len(v.raw)+2)
	q = append(append(append(q, '"'), v.raw...), '"')
	if json.Unmarshal(q, &s) != nil {
		return "", false
	}
	return s, true
}

// uint returns a value holding an unsigned decimal integer, written as a
// JSON number or as a string (zerolog writes uint64 as a number; other
// writers quote large IDs).
func (v value) uint() (uint64, bool) {
	if (v.kind != kindNumber && v.kind != kindString) || len(v.raw) == 0 || len(v.raw) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range v.raw {
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

// int returns a number as an int64; a fraction is truncated.
func (v value) int() (int64, bool) {
	if v.kind != kindNumber {
		return 0, false
	}
	s := string(v.raw)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f || f > 1<<63-1 || f < -(1<<63) {
		return 0, false
	}
	return int64(f), true
}

// float returns a number as a float64.
func (v value) float() (float64, bool) {
	if v.kind != kindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.raw), 64)
	return f, err == nil
}

// boolean returns true or false.
func (v value) boolean() (bool, bool) {
	switch {
	case v.kind != kindOther:
		return false, false
	case string(v.raw) == "true":
		return true, true
	case string(v.raw) == "false":
		return false, true
	}
	return false, false
}

// uints returns an array whose elements are all unsigned integers
// (numbers or quoted, as uint reads them); null is an empty list. It
// reports false for anything else, so that a garbled list is not read as
// a shorter one.
func (v value) uints() ([]uint64, bool) {
	b := v.raw
	if v.kind != kindOther || len(b) == 0 || b[0] != '[' {
		return nil, v.kind == kindOther && string(b) == "null"
	}
	var ns []uint64
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return ns, true
	}
	for i < len(b) {
		var e value
		var start, end int
		var ok bool
		if start, end, e.kind, e.esc, i, ok = scanValue(b, i); !ok {
			return nil, false
		}
		e.raw = b[start:end]
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

// time returns a string in RFC 3339 (fractional seconds optional).
func (v value) time() (time.Time, bool) {
	s, ok := v.text()
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
