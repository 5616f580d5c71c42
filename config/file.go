package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
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
	written string        // the key as written, relative to its table: "min_delay"
	kind    unstable.Kind // of the value; Table for a [table] header
	value   string        // a string's contents, a number's or boolean's text
}

// scanFile indexes the keys of a TOML document by their full key
// ("srm.min_delay"), tables included, for what go-toml's decoder does not
// say: the line of every value, and the kind of value written. It returns
// nil for a document that does not parse; decodeFile reports why.
func scanFile(doc []byte) map[string]fileKey {
	var lines []int // the offset of every line after the first
	for i, b := range doc {
		if b == '\n' {
			lines = append(lines, i+1)
		}
	}
	s := fileScan{keys: make(map[string]fileKey), lines: lines}
	p := new(unstable.Parser)
	p.Reset(doc)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var first *unstable.Node
			table, first = keyParts(e.Key())
			s.add(nil, table, first, e.Kind, "")
		case unstable.KeyValue:
			s.keyValue(table, e)
		}
	}
	if p.Error() != nil {
		return nil
	}
	return s.keys
}

type fileScan struct {
	keys  map[string]fileKey
	lines []int
}

// keyValue records the key-value kv found in table, and the key-values of
// an inline table it holds.
func (s *fileScan) keyValue(table []string, kv *unstable.Node) {
	written, first := keyParts(kv.Key())
	full := append(slices.Clone(table), written...)
	v := kv.Value()
	s.add(written, full, first, v.Kind, string(v.Data))
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

func (s *fileScan) add(written, full []string, first *unstable.Node, kind unstable.Kind, value string) {
	line := 1
	if first != nil {
		line = sort.SearchInts(s.lines, int(first.Raw.Offset)+1) + 1
	}
	s.keys[strings.Join(full, ".")] = fileKey{line, strings.Join(written, "."), kind, value}
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

// fullKey returns the key go-toml reports at line in full: inside an
// inline table (srm = { c9 = 1 }) it reports only the last part.
func fullKey(parts []string, line int, keys map[string]fileKey) string {
	key := strings.Join(parts, ".")
	for k, fk := range keys {
		if fk.line == line && strings.HasSuffix(k, "."+key) {
			return k
		}
	}
	return key
}

// decodeFile decodes the TOML document doc, read from path and indexed by
// scanFile as keys, over c.
func decodeFile(c *Config, path string, doc []byte, keys map[string]fileKey) error {
	if path == "" {
		return nil
	}
	err := toml.NewDecoder(bytes.NewReader(doc)).DisallowUnknownFields().Decode(c)
	badValues := checkValues(path, keys)
	var unknown *toml.StrictMissingError
	var bad *toml.DecodeError
	switch {
	case err == nil:
		return errors.Join(badValues...)
	case errors.As(err, &unknown):
		return errors.Join(append(badValues, unknownKeys(path, unknown, keys)...)...)
	case errors.As(err, &bad):
		line, _ := bad.Position()
		key := fullKey(bad.Key(), line, keys)
		if !slices.ContainsFunc(badValues, func(e error) bool {
			p, ok := e.(*problemError)
			return ok && p.key == key
		}) {
			badValues = append(badValues, decodeError(path, bad, keys))
		}
		return errors.Join(badValues...)
	case len(badValues) > 0:
		// go-toml's own word on one of them (a TextUnmarshaler's error
		// for a number or boolean), without the key.
		return errors.Join(badValues...)
	}
	return fmt.Errorf("config: %s: %w", path, err)
}

// unknownKeys reports each unknown key at its line, with the setting it
// may be a misspelling of.
func unknownKeys(path string, unknown *toml.StrictMissingError, keys map[string]fileKey) []error {
	var known []string
	lan := LAN()
	for _, s := range settings(&lan) {
		known = append(known, s.key)
		if table, _, ok := strings.Cut(s.key, "."); ok && !slices.Contains(known, table) {
			known = append(known, table)
		}
	}
	errs := make([]error, len(unknown.Errors))
	for i, e := range unknown.Errors {
		line, _ := e.Position()
		key := fullKey(e.Key(), line, keys)
		hint := ""
		if k, ok := closest(key, known, func(k string) string { return k }); ok {
			hint = fmt.Sprintf(" (did you mean %q?)", k)
		}
		errs[i] = fmt.Errorf("config: %s:%d: unknown key %q%s", path, line, key, hint)
	}
	return errs
}

// checkValues reports, in the order of the file, every bad value of a
// setting parsed from text (durations, lists of IDs), which go-toml would
// misread (a bare number for a duration, as nanoseconds), report without
// its key (a number or boolean), or report only if it is the first.
func checkValues(path string, keys map[string]fileKey) []error {
	var c Config
	var found []setting
	for _, s := range settings(&c) {
		if fk, ok := keys[s.key]; ok && valueProblem(s, fk) != nil {
			found = append(found, s)
		}
	}
	slices.SortStableFunc(found, func(a, b setting) int { return cmp.Compare(keys[a.key].line, keys[b.key].line) })
	errs := make([]error, len(found))
	for i, s := range found {
		fk := keys[s.key]
		err := withFix(valueProblem(s, fk), fk.assign)
		errs[i] = problem(s.key, fmt.Sprintf("%s:%d", path, fk.line), "%v", err)
	}
	return errs
}

// valueProblem returns what is wrong with the value fk gives s, if s is
// parsed from text; values of other kinds are go-toml's to report.
func valueProblem(s setting, fk fileKey) error {
	number := fk.kind == unstable.Integer || fk.kind == unstable.Float
	switch s.v.Addr().Interface().(type) {
	case *Duration:
		switch {
		case number && !isZero(fk):
			return numberAsDuration(fk)
		case fk.kind == unstable.Bool, fk.kind == unstable.String:
			return s.set(fk.value)
		}
	case *IDList:
		if fk.kind == unstable.Float || fk.kind == unstable.Bool || fk.kind == unstable.String {
			return s.set(fk.value)
		}
	}
	return nil
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

// decodeError reports a syntax error at its line, and a value of the wrong
// type in the words used for the environment and flags, so that
// `id = "abc"` reads `config: huddle.toml:1: id: "abc" is not a number`.
func decodeError(path string, e *toml.DecodeError, keys map[string]fileKey) error {
	line, _ := e.Position()
	where := fmt.Sprintf("%s:%d", path, line)
	msg := strings.TrimPrefix(e.Error(), "toml: ")
	if len(e.Key()) == 0 {
		return fmt.Errorf("config: %s: %s", where, msg)
	}
	key := fullKey(e.Key(), line, keys)
	var scratch Config
	if s, ok := settingsByKey(&scratch)[key]; ok {
		if fk := keys[key]; fk.kind == unstable.String {
			msg = fmt.Sprintf("%q is a string; write it without quotes", fk.value)
			if err := s.set(fk.value); err != nil {
				msg = withFix(err, fk.assign).Error()
			}
		}
	}
	return problem(key, where, "%s", msg)
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
