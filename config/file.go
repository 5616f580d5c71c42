package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/huddle-lan/huddle/internal/suggest"
)

// maxFileSize is the largest config file Load reads. A real one is a few
// kilobytes; anything near this is a wrong path (a log, a device).
const maxFileSize = 1 << 20

// readFile reads the config file at path, named by source (--config or
// HUDDLE_CONFIG), reading no more than maxFileSize+1 bytes of it.
func readFile(path, source string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		// A file named explicitly but unreadable must not be skipped.
		return nil, fmt.Errorf("config: config file (%s): %w", source, err)
	}
	defer f.Close()
	doc, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: config file (%s): %w", source, err)
	}
	if len(doc) > maxFileSize {
		return nil, fmt.Errorf("config: %s: the file is larger than 1 MiB (%d bytes), the most a config file may be", path, maxFileSize)
	}
	return doc, nil
}

// A fileKey is one key of a TOML file: where it is and what it holds.
type fileKey struct {
	line    int
	offset  int           // of the key in the document, to take keys in order
	written string        // the key as written, relative to its table: "min_delay"
	kind    unstable.Kind // of the value; Table for a [table] header
	value   string        // a string's contents, a number's or boolean's text
	items   []fileKey     // an array's elements (kind and value)
}

// A fileScan is what scanFile found in a TOML document.
type fileScan struct {
	keys  map[string]fileKey // by full key ("srm.min_delay"), tables included
	twice []twice            // keys defined again, in the order of the file
	lines []int              // the offset of every line after the first
}

// twice is a key defined a second time.
type twice struct {
	key         string
	first, line int
}

// scanFile indexes the keys of a TOML document by their full key
// ("srm.min_delay"), tables included, with the line of every value and
// the kind of value written, so that decodeFile can take each key on its
// own and report every problem at its line, not only go-toml's first. It
// returns nil keys for a document that does not parse; decodeFile reports
// why.
func scanFile(doc []byte) fileScan {
	s := fileScan{keys: make(map[string]fileKey)}
	for i, b := range doc {
		if b == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	p := new(unstable.Parser)
	p.Reset(doc)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var first *unstable.Node
			table, first = keyParts(e.Key())
			s.add(nil, table, first, fileKey{kind: e.Kind})
		case unstable.KeyValue:
			s.keyValue(table, e)
		}
	}
	if p.Error() != nil {
		s.keys = nil
	}
	return s
}

// keyValue records the key-value kv found in table, and the key-values of
// an inline table it holds.
func (s *fileScan) keyValue(table []string, kv *unstable.Node) {
	written, first := keyParts(kv.Key())
	full := append(slices.Clone(table), written...)
	v := kv.Value()
	fk := fileKey{kind: v.Kind, value: string(v.Data)}
	if v.Kind == unstable.Array {
		for it := v.Children(); it.Next(); {
			fk.items = append(fk.items, fileKey{kind: it.Node().Kind, value: string(it.Node().Data)})
		}
	}
	s.add(written, full, first, fk)
	if v.Kind != unstable.InlineTable {
		return
	}
	for it := v.Children(); it.Next(); {
		if it.Node().Kind == unstable.KeyValue {
			s.keyValue(full, it.Node())
		}
	}
}

// assign writes value as this key's value: heartbeat = "50ms".
func (fk fileKey) assign(value string) string {
	return fmt.Sprintf("%s = %q", fk.written, value)
}

// add records fk, the value of the key full (written as written), whose
// first part is the node first.
func (s *fileScan) add(written, full []string, first *unstable.Node, fk fileKey) {
	fk.line = 1
	if first != nil {
		fk.offset = int(first.Raw.Offset)
		fk.line = sort.SearchInts(s.lines, fk.offset+1) + 1
	}
	fk.written = strings.Join(written, ".")
	key := strings.Join(full, ".")
	if before, ok := s.keys[key]; ok {
		s.twice = append(s.twice, twice{key, before.line, fk.line})
		return
	}
	s.keys[key] = fk
}

// keyParts returns the parts of a dotted key and its first node.
func keyParts(it unstable.Iterator) (parts []string, first *unstable.Node) {
	for it.Next() {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return parts, first
}

// decodeFile applies the TOML document doc, read from path and indexed by
// scanFile as sc, over c: each key on its own, so that every problem is
// reported, at its line, in the order of the file.
func decodeFile(c *Config, path string, doc []byte, sc fileScan) error {
	if path == "" {
		return nil
	}
	if sc.keys == nil {
		return tomlError(path, doc)
	}
	type found struct {
		line int
		err  error
	}
	var errs []found
	byKey := settingsByKey(c)
	tables := tableNames()
	reported := map[string]bool{} // keys reported: their own keys are not
	for _, key := range keysInOrder(sc.keys) {
		fk := sc.keys[key]
		if insideOf(key, reported) {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, fk.line)
		s, isSetting := byKey[key]
		var err error
		switch {
		case isSetting:
			if err = fileSet(s, fk); err != nil {
				err = problem(key, where, "%v", c.complete(err, key, fk.assign))
			}
		case tables[key] && (fk.kind == unstable.Table || fk.kind == unstable.InlineTable):
		case tables[key]:
			err = problem(key, where, "%s is %s, not a table of settings (write [%s] above its settings)", shown(fk), kindName(fk.kind), key)
		default:
			err = unknownKey(where, key)
		}
		if err != nil {
			reported[key] = true
			errs = append(errs, found{fk.line, err})
		}
	}
	for _, t := range sc.twice {
		errs = append(errs, found{t.line, problem(t.key, fmt.Sprintf("%s:%d", path, t.line), "is set twice, on lines %d and %d: keep one", t.first, t.line)})
	}
	slices.SortStableFunc(errs, func(a, b found) int { return cmp.Compare(a.line, b.line) })
	all := make([]error, len(errs))
	for i, f := range errs {
		all[i] = f.err
	}
	if len(all) == 0 {
		// What the scan does not see: a table a dotted key made, given a
		// [header] again.
		return tomlError(path, doc)
	}
	return errors.Join(all...)
}

// tomlError returns go-toml's objection to doc, at its line; nil when it
// has none.
func tomlError(path string, doc []byte) error {
	var m map[string]any
	err := toml.Unmarshal(doc, &m)
	var de *toml.DecodeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		line, _ := de.Position()
		return fmt.Errorf("config: %s:%d: %s", path, line, strings.TrimPrefix(de.Error(), "toml: "))
	}
	return fmt.Errorf("config: %s: %w", path, err)
}

// keysInOrder returns the keys of a scan in the order of the file.
func keysInOrder(keys map[string]fileKey) []string {
	out := slices.Collect(maps.Keys(keys))
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(keys[a].offset, keys[b].offset), strings.Compare(a, b))
	})
	return out
}

// insideOf reports whether key is a key of a table among reported.
func insideOf(key string, reported map[string]bool) bool {
	for i := range len(key) {
		if key[i] == '.' && reported[key[:i]] {
			return true
		}
	}
	return false
}

// tableNames are the tables of the settings: srm, log, election, ...
func tableNames() map[string]bool {
	tables := map[string]bool{}
	for _, s := range settings(&Config{}) {
		if table, _, ok := strings.Cut(s.key, "."); ok {
			tables[table] = true
		}
	}
	return tables
}

// unknownKey reports a key that is no setting, with the setting it may be
// a misspelling of.
func unknownKey(where, key string) error {
	var known []string
	for _, s := range settings(&Config{}) {
		known = append(known, s.key)
	}
	known = append(known, slices.Sorted(maps.Keys(tableNames()))...)
	hint := ""
	if k, ok := suggest.Closest(key, known, func(k string) string { return k }); ok {
		hint = fmt.Sprintf(" (did you mean %q?)", k)
	}
	return fmt.Errorf("config: %s: unknown key %q%s", where, key, hint)
}

// fileSet sets s from the value fk of the file. Its errors, like set's,
// are the problem alone.
func fileSet(s setting, fk fileKey) error {
	number := fk.kind == unstable.Integer || fk.kind == unstable.Float
	switch s.v.Addr().Interface().(type) {
	case *Duration:
		switch {
		case number && isZero(fk):
			return s.set("0")
		case number:
			return numberAsDuration(fk)
		case fk.kind == unstable.String, fk.kind == unstable.Bool:
			return s.set(fk.value)
		}
	case *IDList:
		switch {
		case fk.kind == unstable.Array:
			return s.set(idItems(fk))
		case number, fk.kind == unstable.String, fk.kind == unstable.Bool:
			return s.set(fk.value)
		}
	case *AddrList:
		switch {
		case fk.kind == unstable.Array:
			return s.set(addrItems(fk))
		case fk.kind == unstable.String:
			return s.set(fk.value)
		}
	case *string:
		switch {
		case fk.kind == unstable.String:
			return s.set(fk.value)
		case number, fk.kind == unstable.Bool:
			return fmt.Errorf("%s is %s, not text; write %s", fk.value, kindName(fk.kind), fk.assign(fk.value))
		}
	case *bool:
		switch fk.kind {
		case unstable.Bool:
			return s.set(fk.value)
		case unstable.String:
			return quoted(s, fk)
		}
	case *int, *uint64, *float64:
		switch fk.kind {
		case unstable.Integer:
			return s.set(integerText(fk.value))
		case unstable.Float:
			if _, isFloat := s.v.Addr().Interface().(*float64); !isFloat {
				return &numberError{text: fk.value, problem: "is not a whole number"}
			}
			return s.set(strings.ReplaceAll(fk.value, "_", ""))
		case unstable.String:
			return quoted(s, fk)
		}
	}
	return fmt.Errorf("%s is %s, not %s", shown(fk), kindName(fk.kind), wants(s))
}

// quoted is the error for a string given for a number or a boolean: the
// fix when the text without quotes would do, else why it would not.
func quoted(s setting, fk fileKey) error {
	scratch := reflect.New(s.v.Type()).Elem()
	if err := (setting{s.key, scratch}).set(fk.value); err != nil {
		return err
	}
	return fmt.Errorf("%q is a string; write it without quotes: %s = %s", fk.value, fk.written, fk.value)
}

// integerText writes a TOML integer (1_000, 0x10, +5) in decimal, or
// returns it without its underscores when it does not fit 64 bits.
func integerText(v string) string {
	v = strings.ReplaceAll(v, "_", "")
	if n, err := strconv.ParseInt(v, 0, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	return v
}

// idItems writes the elements of a TOML array as IDList's text ("3,4"),
// a non-integer element as it is, for UnmarshalText to refuse.
func idItems(fk fileKey) string {
	parts := make([]string, len(fk.items))
	for i, it := range fk.items {
		parts[i] = it.value
		if it.kind == unstable.Integer {
			parts[i] = integerText(it.value)
		} else if it.kind != unstable.String {
			parts[i] = "[" + it.value + "]" // not a number
		}
	}
	return strings.Join(parts, ",")
}

// addrItems writes the elements of a TOML array as AddrList's text; an
// element that is not a string is an error first.
func addrItems(fk fileKey) string {
	parts := make([]string, len(fk.items))
	for i, it := range fk.items {
		parts[i] = it.value
		if it.kind != unstable.String {
			parts[i] = "[" + it.value + "]" // Validate names it
		}
	}
	return strings.Join(parts, ",")
}

// shown writes a value of the file for a message.
func shown(fk fileKey) string {
	switch fk.kind {
	case unstable.String:
		return strconv.Quote(fk.value)
	case unstable.Array:
		return "[…]"
	case unstable.Table, unstable.InlineTable, unstable.ArrayTable:
		return "{…}"
	}
	return fk.value
}

// kindName names a kind of TOML value for a message.
func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Integer, unstable.Float:
		return "a number"
	case unstable.Bool:
		return "a boolean"
	case unstable.Array:
		return "a list"
	case unstable.Table, unstable.InlineTable, unstable.ArrayTable:
		return "a table"
	}
	return "a date or time"
}

// wants says what a setting takes, for a message.
func wants(s setting) string {
	switch s.v.Addr().Interface().(type) {
	case *Duration:
		return `a duration (e.g. "400ms")`
	case *IDList:
		return "a list of node IDs (e.g. [3, 4])"
	case *AddrList:
		return `a list of addresses (e.g. ["10.0.0.1:7468", "node2:7468"])`
	case *string:
		return "text in quotes"
	case *bool:
		return "true or false"
	}
	return "a number"
}

// isZero reports whether a number written in TOML is 0: a duration of 0
// needs no unit.
func isZero(fk fileKey) bool {
	n, err := strconv.ParseInt(strings.ReplaceAll(fk.value, "_", ""), 0, 64)
	return fk.kind == unstable.Integer && err == nil && n == 0
}

// numberAsDuration is the error for a TOML number given for a duration.
func numberAsDuration(fk fileKey) error {
	text := strings.ReplaceAll(fk.value, "_", "")
	value := ""
	if fk.kind == unstable.Integer {
		if n, err := strconv.ParseInt(text, 0, 64); err == nil {
			value = strconv.FormatInt(n, 10)
		}
	} else if f, err := strconv.ParseFloat(text, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		value = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if value != "" {
		if e := noUnit(fk.value, value); e != nil {
			return e
		}
	}
	return fmt.Errorf("%s is not a duration (examples: 400ms, 1.5s)", fk.value)
}

// TOML returns c as a TOML document that Load reads back to the same
// Config: every setting, defaults included, durations as text ("400ms").
// It includes security.key when one is set, so treat the output as secret.
func (c Config) TOML() []byte {
	var b bytes.Buffer
	b.WriteString("# huddle configuration: every setting, defaults included.\n")
	b.WriteString("# Read it back with: huddle run --config FILE\n")
	if c.Security.Key != "" {
		b.WriteString("# It holds the group key: keep it private.\n")
	}
	body, err := toml.Marshal(c)
	if err != nil {
		// Only an ID above 2^63-1, which Validate rejects, gets here.
		fmt.Fprintf(&b, "# cannot encode this configuration: %v\n", err)
		return b.Bytes()
	}
	b.WriteString("\n")
	b.Write(body)
	return b.Bytes()
}
