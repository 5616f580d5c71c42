package config

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// decodeFile decodes the TOML document doc, read from path, over c.
func decodeFile(c *Config, path string, doc []byte) error {
	if path == "" {
		return nil
	}
	err := toml.NewDecoder(bytes.NewReader(doc)).DisallowUnknownFields().Decode(c)
	var unknown *toml.StrictMissingError
	var bad *toml.DecodeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unknown):
		errs := make([]error, len(unknown.Errors))
		for i, e := range unknown.Errors {
			errs[i] = fmt.Errorf("config: %s: unknown key %q", path, strings.Join(e.Key(), "."))
		}
		return errors.Join(errs...)
	case errors.As(err, &bad):
		return decodeError(path, doc, bad)
	}
	return fmt.Errorf("config: %s: %w", path, err)
}

// decodeError reports a syntax error at its line, and a value of the wrong
// type in the words used for the environment and flags, so that
// `id = "abc"` reads `config: huddle.toml:1: id: "abc" is not a number`.
func decodeError(path string, doc []byte, e *toml.DecodeError) error {
	line, _ := e.Position()
	where := fmt.Sprintf("%s:%d", path, line)
	msg := strings.TrimPrefix(e.Error(), "toml: ")
	key := strings.Join(e.Key(), ".")
	if key == "" {
		return fmt.Errorf("config: %s: %s", where, msg)
	}
	var scratch Config
	if s, ok := settingsByKey(&scratch)[key]; ok {
		if text, ok := rawString(doc, e.Key()); ok {
			msg = fmt.Sprintf("%q is a string; write it without quotes", text)
			if err := s.set(text); err != nil {
				msg = err.Error()
			}
		}
	}
	return fmt.Errorf("config: %s: %s: %s", where, key, msg)
}

// rawString returns the value at key in doc if it is a TOML string.
func rawString(doc []byte, key []string) (string, bool) {
	var table map[string]any
	if len(key) == 0 || toml.Unmarshal(doc, &table) != nil {
		return "", false
	}
	for _, k := range key[:len(key)-1] {
		if table, _ = table[k].(map[string]any); table == nil {
			return "", false
		}
	}
	s, ok := table[key[len(key)-1]].(string)
	return s, ok
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
