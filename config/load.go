package config

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/huddle-lan/huddle/internal/suggest"
)

// An assignment is one value for one setting, from the environment or a
// flag, with where it came from ("HUDDLE_ID", "--id") for error messages.
type assignment struct{ key, value, source string }

// Load builds the effective configuration; call it after fs.Parse, with the
// Flags that AddFlags returned for fs and the process environment
// (os.Environ()).
//
// Each source overrides the one before:
//
//  1. the defaults of the profile named by --profile, else HUDDLE_PROFILE,
//     else the file's profile key, else "lan";
//  2. the TOML file named by --config, else HUDDLE_CONFIG, if any; an
//     unknown key is an error, and so is a file over 1 MiB;
//  3. HUDDLE_* environment variables (HUDDLE_SRM_C1 for srm.c1); an empty
//     variable counts as unset, HUDDLE_TEST_* are left to tests, and any
//     other HUDDLE_ variable that is not a setting (scripts set HUDDLE_BIN,
//     HUDDLE_HOME) is ignored with a warning;
//  4. the flags given on the command line.
//
// The result is validated. Every problem found is reported, joined, in the
// form "config: <where>: <key>: <problem>", where says where the value came
// from: the file and line ("huddle.toml:3"), the variable ("HUDDLE_TTL") or
// the flag ("--ttl"); a profile's default names no source. Warnings, one
// line each without a prefix, are returned even along with an error, for
// the caller to show. Load does not touch the network: call Resolve for the
// interface and the ID.
func Load(fs *flag.FlagSet, f *Flags, environ []string) (c Config, warnings []string, err error) {
	flags := f.set(fs)
	envPath, env, warnings := readEnv(environ)

	path, pathSource := envPath, "HUDDLE_CONFIG"
	if f != nil && f.path != "" {
		path, pathSource = f.path, "--config"
	}
	var doc []byte
	var sc fileScan
	if path != "" {
		if doc, err = readFile(path, pathSource); err != nil {
			return Config{}, warnings, err
		}
		sc = scanFile(doc)
	}

	sources := make(map[string]string) // key → where its value came from
	for key, fk := range sc.keys {
		sources[key] = fmt.Sprintf("%s:%d", path, fk.line)
	}
	for _, a := range slices.Concat(env, flags) {
		sources[a.key] = a.source
	}

	c, err = startFrom(chooseProfile(sc.keys, env, flags), sources["profile"])
	readErr := errors.Join(err, decodeFile(&c, path, doc, sc), apply(&c, env), apply(&c, flags))
	// The values that were read are checked too, so that one run reports
	// every problem; not those that could not be read (they hold a default
	// now), nor any when the file could not be read at all.
	var checkErr error
	if path == "" || sc.keys != nil {
		checkErr = c.validate(sources, keysOf(readErr))
	}
	if err := errors.Join(readErr, checkErr); err != nil {
		return Config{}, warnings, err
	}
	return c, warnings, nil
}

// keysOf returns the settings that err, joined or not, reports problems of.
func keysOf(err error) map[string]bool {
	keys := map[string]bool{}
	var walk func(error)
	walk = func(err error) {
		if p, ok := err.(*problemError); ok {
			keys[p.key] = true
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return keys
}

// readEnv picks the HUDDLE_* variables out of environ, and warns of those
// that are not settings.
func readEnv(environ []string) (path string, sets []assignment, warnings []string) {
	known := make(map[string]string)
	var keys []string
	for _, s := range settings(&Config{}) {
		known[envName(s.key)] = s.key
		keys = append(keys, s.key)
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		key, ok := known[name]
		switch {
		case !strings.HasPrefix(name, "HUDDLE_"), strings.HasPrefix(name, "HUDDLE_TEST_"), value == "":
		case name == "HUDDLE_CONFIG":
			path = value
		case !ok:
			w := name + " is not a setting; ignoring it"
			// The name as a key: HUDDLE_SRM_C1 is srm_c1, which the
			// comparison sees as srm.c1 with its "." as "_".
			flat := func(k string) string { return strings.ReplaceAll(k, ".", "_") }
			if k, ok := suggest.Closest(strings.ToLower(strings.TrimPrefix(name, "HUDDLE_")), keys, flat); ok {
				w = name + " is not a setting; did you mean " + envName(k) + "?"
			}
			warnings = append(warnings, w)
		default:
			sets = append(sets, assignment{key, value, name})
		}
	}
	return path, sets, warnings
}

// chooseProfile names the profile whose defaults come first: the flag's,
// else the environment's, else the file's.
func chooseProfile(keys map[string]fileKey, env, flags []assignment) string {
	for _, sets := range [][]assignment{flags, env} {
		for i := len(sets) - 1; i >= 0; i-- {
			if sets[i].key == "profile" {
				return sets[i].value
			}
		}
	}
	if fk := keys["profile"]; fk.kind == unstable.String {
		return fk.value
	}
	return "" // a profile that is not a string is decodeFile's to report
}

// startFrom returns the defaults of the named profile, named by source;
// for an unknown name it returns LAN's along with the error, so that Load
// can go on and report every other problem too.
func startFrom(name, source string) (Config, error) {
	c, err := ForProfile(name)
	if err != nil {
		return LAN(), problem("profile", source, "%q is not a profile (lan, local)", name)
	}
	return c, nil
}

// apply parses each assignment into c; later ones win.
func apply(c *Config, sets []assignment) error {
	byKey := settingsByKey(c)
	var errs []error
	for _, a := range sets {
		if err := byKey[a.key].set(a.value); err != nil {
			errs = append(errs, problem(a.key, a.source, "%v", c.complete(err, a.key, a.assign)))
		}
	}
	return errors.Join(errs...)
}

// assign writes value as the assignment's source takes it: --heartbeat
// 50ms, HUDDLE_HEARTBEAT=50ms.
func (a assignment) assign(value string) string {
	if strings.HasPrefix(a.source, "-") {
		return a.source + " " + value
	}
	return a.source + "=" + value
}
