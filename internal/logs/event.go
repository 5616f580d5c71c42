package logs

import (
	"iter"
	"time"
)

// Event is one line of a log: a JSON object with a string EventKey
// member. The common fields are read into the struct; the others, by
// name, with the accessors, which report false when the field is absent
// or of another type.
type Event struct {
	Name  string    // the event: one of the constants of this package, for huddle's
	Level string    // LevelDebug, LevelInfo, LevelWarn or LevelError; "" if absent
	Node  uint64    // 0 if absent; Uint(NodeKey) tells
	Time  time.Time // zero if absent or not RFC 3339
	Line  int       // its line number in its log, from 1 (Parse: 0)

	line    []byte   // the JSON object
	members []member // every member of line, in order
}

// Parse reads one line. ok is false when it is not an event: not one
// JSON object, or without a string EventKey member. The event refers to
// line: Clone it to keep it past a change of line.
func Parse(line []byte) (ev Event, ok bool) {
	ok = ev.parse(line, nil, nil)
	return ev, ok
}

// parse sets e to line's event, reusing ms for its members, and strings
// of names (the event names and levels already read; nil: none).
func (e *Event) parse(line []byte, ms []member, names map[string]string) bool {
	var ok bool
	*e = Event{line: line}
	e.members, ok = splitObject(line, ms)
	if !ok {
		return false
	}
	name, ok := e.value(EventKey)
	if !ok || name.kind != kindString {
		return false
	}
	e.Name = intern(name, names)
	if v, ok := e.value(LevelKey); ok && v.kind == kindString {
		e.Level = intern(v, names)
	}
	e.Node, _ = e.Uint(NodeKey)
	if v, ok := e.value(TimeKey); ok {
		e.Time, _ = v.time()
	}
	return true
}

// maxNames bounds the strings a Scanner keeps to save a copy of each
// line's event name and level: a log of huddle's has a few dozen.
const maxNames = 256

// intern returns a string value, the string of names when it is there
// (adding it when there is room).
func intern(v value, names map[string]string) string {
	if s, ok := names[string(v.raw)]; ok {
		return s
	}
	s, _ := v.text()
	if names != nil && len(names) < maxNames {
		names[string(v.raw)] = s
	}
	return s
}

// Clone returns a copy of e that owns its line.
func (e Event) Clone() Event {
	e.line = append([]byte(nil), e.line...)
	e.members = append([]member(nil), e.members...)
	return e
}

// String returns the event's JSON line.
func (e Event) String() string { return string(e.line) }

// value returns the member named key.
func (e Event) value(key string) (value, bool) {
	for _, m := range e.members {
		if string(e.line[m.key:m.keyEnd]) == key {
			return m.value(e.line), true
		}
	}
	return value{}, false
}

// Keys returns the names of the line's fields, in their order.
func (e Event) Keys() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, m := range e.members {
			if !yield(string(e.line[m.key:m.keyEnd])) {
				return
			}
		}
	}
}

// Has reports whether the line has the field key.
func (e Event) Has(key string) bool {
	_, ok := e.value(key)
	return ok
}

// Str returns a string field.
func (e Event) Str(key string) (string, bool) {
	v, _ := e.value(key)
	return v.text()
}

// Uint returns an unsigned integer field: a JSON number, or a decimal
// string.
func (e Event) Uint(key string) (uint64, bool) {
	v, _ := e.value(key)
	return v.uint()
}

// Int returns a number field as an int64; a fraction is truncated.
func (e Event) Int(key string) (int64, bool) {
	v, _ := e.value(key)
	return v.int()
}

// Float returns a number field.
func (e Event) Float(key string) (float64, bool) {
	v, _ := e.value(key)
	return v.float()
}

// Bool returns a boolean field.
func (e Event) Bool(key string) (bool, bool) {
	v, _ := e.value(key)
	return v.boolean()
}

// Uints returns a field that is an array of unsigned integers (JSON
// numbers or decimal strings); null and [] are an empty list (nil). A
// list with anything else in it is not read: ok is false.
func (e Event) Uints(key string) ([]uint64, bool) {
	v, ok := e.value(key)
	if !ok {
		return nil, false
	}
	return v.uints()
}

// Text returns any field as text: a string's contents, or else the
// value's JSON (a number's digits, true, [1,2]).
func (e Event) Text(key string) (string, bool) {
	v, ok := e.value(key)
	if !ok || v.kind == kindString {
		s, ok2 := v.text()
		return s, ok && ok2
	}
	return string(v.raw), true
}

// Tag returns the text of a line of the event name that names it,
// `"event":"name"` as zerolog writes it: a filter for lines worth
// parsing, or a way to count an event's lines without parsing them.
func Tag(name string) []byte {
	return []byte(`"` + EventKey + `":"` + name + `"`)
}
