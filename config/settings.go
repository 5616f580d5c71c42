package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// A setting is one leaf field of Config, named by its TOML key path
// ("srm.c1"). Walking the struct by reflection, instead of listing the
// fields by hand, is what guarantees that every field gets a flag and an
// environment variable, including fields added later.
type setting struct {
	key string
	v   reflect.Value // the addressable field
}

// settings returns the leaf fields of c in declaration order.
func settings(c *Config) []setting {
	return walk(reflect.ValueOf(c).Elem(), "", nil)
}

func walk(v reflect.Value, prefix string, out []setting) []setting {
	t := v.Type()
	for i := range t.NumField() {
		key := prefix + t.Field(i).Tag.Get("toml")
		if t.Field(i).Type.Kind() == reflect.Struct {
			out = walk(v.Field(i), key+".", out)
			continue
		}
		out = append(out, setting{key, v.Field(i)})
	}
	return out
}

// settingsByKey indexes settings(c) by TOML key.
func settingsByKey(c *Config) map[string]setting {
	m := make(map[string]setting)
	for _, s := range settings(c) {
		m[s.key] = s
	}
	return m
}

// flagName is the command-line flag of a TOML key: srm.c1 → srm-c1.
func flagName(key string) string {
	return strings.NewReplacer("_", "-", ".", "-").Replace(key)
}

// envName is the environment variable of a TOML key: srm.c1 → HUDDLE_SRM_C1.
func envName(key string) string {
	return "HUDDLE_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// String formats the setting's value the way set reads it back.
func (s setting) String() string { return fmt.Sprint(s.v.Interface()) }

// set parses text into the setting. Its errors are the problem alone
// ("\"abc\" is not a number"); the caller adds the key, the source and,
// with complete, what the setting allows.
func (s setting) set(text string) error {
	switch p := s.v.Addr().Interface().(type) {
	case *Duration:
		return p.UnmarshalText([]byte(text))
	case *IDList:
		return p.UnmarshalText([]byte(text))
	case *AddrList:
		return p.UnmarshalText([]byte(text))
	case *string:
		*p = text
	case *bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("%q is not a boolean (true or false)", text)
		}
		*p = b
	case *int:
		n, err := parseWhole(text)
		if err != nil {
			return err
		}
		*p = int(n)
	case *uint64:
		// Parsed as signed: IDs stop at 2^63-1, and "-1" deserves a
		// better message than "not a number".
		n, err := parseWhole(text)
		if err != nil {
			return err
		}
		if n < 0 {
			return &numberError{text: strconv.Quote(text), problem: "is negative"}
		}
		*p = uint64(n)
	case *float64:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			problem := "is not a number"
			if errors.Is(err, strconv.ErrRange) {
				problem = "is out of range"
			}
			return &numberError{text: strconv.Quote(text), problem: problem}
		}
		*p = f
	default:
		// Only a field of a new type reaches here; the tests catch it.
		return fmt.Errorf("cannot set a %s from text", s.v.Type())
	}
	return nil
}

// parseWhole parses a whole number of 64 bits, telling a number that is
// not whole (1.5) or too large from one that is no number at all.
func parseWhole(text string) (int64, error) {
	n, err := strconv.ParseInt(text, 10, 64)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, strconv.ErrRange):
		return 0, &numberError{text: strconv.Quote(text), problem: "is out of range"}
	}
	if _, ferr := strconv.ParseFloat(text, 64); ferr == nil {
		return 0, &numberError{text: strconv.Quote(text), problem: "is not a whole number"}
	}
	return 0, &numberError{text: strconv.Quote(text), problem: "is not a number"}
}

// A numberError is a number a setting cannot take. complete adds what the
// setting allows, which only the configuration's checks know.
type numberError struct {
	text    string // as the message shows it: "\"1.5\"" from a flag, 1.5 from a file
	problem string // "is not a number", "is not a whole number", "is out of range", "is negative"
}

func (e *numberError) Error() string { return e.text + " " + e.problem }

// complete finishes an error of set for the setting key of c: a number
// gets what the setting allows, a duration without a unit its fix, written
// as write writes a value (--heartbeat 50ms, heartbeat = "50ms").
func (c *Config) complete(err error, key string, write func(value string) string) error {
	var n *numberError
	if errors.As(err, &n) {
		if a := c.allowed(key); a != "" {
			return fmt.Errorf("%v (%s)", err, a)
		}
		return err
	}
	return withFix(err, write)
}

// allowed returns what the checks of Validate allow of the number setting
// key, in the words of their message for a value out of range ("1 to
// 255"), or "" when none bounds it. It asks them with each extreme value,
// so that the range is written once, in the check.
func (c *Config) allowed(key string) string {
	kind := reflect.Invalid
	for _, extreme := range []float64{math.MaxInt64, math.MinInt64} {
		probe := *c
		s, ok := settingsByKey(&probe)[key]
		if !ok {
			return ""
		}
		switch kind = s.v.Kind(); kind {
		case reflect.Int:
			s.v.SetInt(int64(extreme))
		case reflect.Uint64:
			s.v.SetUint(math.MaxUint64)
		case reflect.Float64:
			s.v.SetFloat(extreme)
		default:
			return ""
		}
		for _, err := range probe.problems() {
			if p, ok := err.(*problemError); ok && p.key == key {
				if _, r, ok := strings.Cut(p.msg, " is out of range ("); ok {
					return strings.TrimSuffix(r, ")")
				}
			}
		}
	}
	if kind == reflect.Uint64 {
		return "0 to 2^63-1" // what set reads
	}
	return ""
}

// A problemError is one problem with one setting. Its source says where
// the value came from ("huddle.toml:3", "HUDDLE_TTL", "--ttl"), and is
// empty for a value no one set: a profile's default.
type problemError struct {
	key, source, msg string
}

// Error reads "config: <source>: <key>: <problem>", or without the source
// "config: <key>: <problem>".
func (e *problemError) Error() string {
	if e.source == "" {
		return "config: " + e.key + ": " + e.msg
	}
	return "config: " + e.source + ": " + e.key + ": " + e.msg
}

// problem formats one problem with one setting the way every config error
// reads, naming where the value came from when source is not empty.
func problem(key, source, format string, args ...any) error {
	return &problemError{key, source, fmt.Sprintf(format, args...)}
}

// Effective returns every setting of c by its TOML key, in declaration
// order, with its value as --print-config writes it; the group key is
// "(set)" when set, never itself.
func (c Config) Effective() [][2]string {
	var out [][2]string
	for _, s := range settings(&c) {
		v := s.String()
		if s.key == "security.key" && v != "" {
			v = "(set)"
		}
		out = append(out, [2]string{s.key, v})
	}
	return out
}
