package config

import (
	"errors"
	"fmt"
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
// ("\"abc\" is not a number"); the caller adds the key and the source.
func (s setting) set(text string) error {
	switch p := s.v.Addr().Interface().(type) {
	case *Duration:
		return p.UnmarshalText([]byte(text))
	case *IDList:
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
		n, err := strconv.Atoi(text)
		if err != nil {
			return numberError(text, err)
		}
		*p = n
	case *uint64:
		// Parsed as signed: IDs stop at 2^63-1, and "-1" deserves a
		// better message than "not a number".
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return numberError(text, err)
		}
		if n < 0 {
			return fmt.Errorf("%q is negative (0 to 2^63-1)", text)
		}
		*p = uint64(n)
	case *float64:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return numberError(text, err)
		}
		*p = f
	default:
		// Only a field of a new type reaches here; the tests catch it.
		return fmt.Errorf("cannot set a %s from text", s.v.Type())
	}
	return nil
}

func numberError(text string, err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is out of range", text)
	}
	return fmt.Errorf("%q is not a number", text)
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
