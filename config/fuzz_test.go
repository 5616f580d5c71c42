package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// FuzzLoad feeds arbitrary TOML documents, with an arbitrary value for one
// variable and one flag, through Load: it must not panic, and must return
// either a valid Config or an error every line of which starts "config:".
//
//	go test -run '^$' -fuzz FuzzLoad -fuzztime 20s ./config
func FuzzLoad(f *testing.F) {
	keys := settings(&Config{})
	for _, c := range []Config{LAN(), Local(), everything()} {
		f.Add(string(c.TOML()), uint8(0), "", uint8(0), "")
	}
	for _, seed := range []struct {
		doc       string
		env       uint8
		envValue  string
		flag      uint8
		flagValue string
	}{
		{"profile = \"local\"\nid = 7\n[srm]\nc1 = 1.5\nmin_delay = \"2ms\"\n", 9, "100ms", 10, "1s"},
		{"heartbeat = 50\n[srm]\nmin_delay = 1_000\n", 9, "50", 10, "400"},
		{"srm = { c9 = 1, min_delay = 1.5 }\nc1 = 2\n[logs]\n", 3, "x", 1, "-1"},
		{"drop.from = [3, 4]\n[mutex]\nthink = \"3s-5s\"\nhold = true\n", 30, "1,2", 31, "0"},
		{"id = 1\n[srm\n", 0, "wan", 0, "local"},
		{"ttl = \"5\"\nsend_size = 1e3\nstats_interval = 0\n", 4, "0", 5, "65000"},
	} {
		f.Add(seed.doc, seed.env, seed.envValue, seed.flag, seed.flagValue)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, doc string, env uint8, envValue string, flagKey uint8, flagValue string) {
		path := filepath.Join(dir, "huddle.toml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		environ := []string{
			"HUDDLE_CONFIG=" + path,
			envName(keys[int(env)%len(keys)].key) + "=" + envValue,
			"HUDDLE_" + strings.ToUpper(envValue) + "=1", // most likely not a setting
		}
		fs := flag.NewFlagSet("huddle", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		flags := AddFlags(fs)
		if err := fs.Parse([]string{"--" + flagName(keys[int(flagKey)%len(keys)].key) + "=" + flagValue}); err != nil {
			t.Fatal(err)
		}
		c, warnings, err := Load(fs, flags, environ)
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("Load returned an invalid Config: %v\n%s", verr, doc)
			}
			if key, n, ok := bareDuration(doc); ok {
				t.Fatalf("Load accepted %s = %v, a duration without a unit:\n%s", key, n, doc)
			}
		} else {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "config: ") {
					t.Fatalf("an error line does not start with \"config: \": %q\nin %q", line, err)
				}
			}
		}
		for _, w := range warnings {
			if !strings.HasPrefix(w, "HUDDLE_") {
				t.Fatalf("warning %q", w)
			}
		}
	})
}

// bareDuration finds a duration given as a number other than 0 in doc, as
// go-toml reads it.
func bareDuration(doc string) (key string, n any, ok bool) {
	var table map[string]any
	if toml.Unmarshal([]byte(doc), &table) != nil {
		return "", nil, false
	}
	for _, s := range settings(&Config{}) {
		if _, isDuration := s.v.Addr().Interface().(*Duration); !isDuration {
			continue
		}
		v := any(table)
		for _, part := range strings.Split(s.key, ".") {
			m, _ := v.(map[string]any)
			v = m[part]
		}
		switch v := v.(type) {
		case int64:
			if v != 0 {
				return s.key, v, true
			}
		case float64:
			return s.key, v, true
		}
	}
	return "", nil, false
}
