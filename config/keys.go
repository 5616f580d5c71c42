package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/huddle-lan/huddle/internal/seal"
)

// maxKeyFile bounds a key file: two keys and comments fit many times over.
const maxKeyFile = 64 << 10

// Keys returns the group keys: none without a key, one, or two from a key
// file during a rollover (the first seals, both open). It reads
// security.key_file, checking its owner and mode first, so call it at
// start and on a reload. The errors name the setting and the file, never
// a key.
func (s Security) Keys() ([]seal.Key, error) {
	switch {
	case s.Key != "" && s.KeyFile != "":
		return nil, problem("security.key", "", "is set, and so is security.key_file: set one of them")
	case s.Key != "":
		k, err := seal.ParseKey(s.Key)
		if err != nil {
			return nil, problem("security.key", "", "%s", strings.TrimPrefix(err.Error(), "seal: "))
		}
		return []seal.Key{k}, nil
	case s.KeyFile != "":
		return readKeyFile(s.KeyFile)
	}
	return nil, nil
}

// Sealed reports whether a key is set.
func (s Security) Sealed() bool { return s.Key != "" || s.KeyFile != "" }

func readKeyFile(path string) ([]seal.Key, error) {
	bad := func(format string, args ...any) error {
		return problem("security.key_file", "", "%s: %s", path, fmt.Sprintf(format, args...))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, bad("%v", unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, bad("%v", unwrapPath(err))
	}
	if err := checkKeyFileMode(fi); err != nil {
		return nil, bad("%v", err)
	}
	var keys []seal.Key
	sc := bufio.NewScanner(io.LimitReader(f, maxKeyFile))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, err := seal.ParseKey(text)
		if err != nil {
			return nil, bad("line %d: %s", line, strings.TrimPrefix(err.Error(), "seal: "))
		}
		keys = append(keys, k)
	}
	switch {
	case sc.Err() != nil:
		return nil, bad("%v", sc.Err())
	case len(keys) == 0:
		return nil, bad("holds no key (write one with: huddle keygen %s)", path)
	case len(keys) > 2:
		return nil, bad("holds %d keys: one, or two during a rollover", len(keys))
	case len(keys) == 2 && keys[0].ID() == keys[1].ID():
		return nil, bad("holds the same key twice")
	}
	return keys, nil
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
