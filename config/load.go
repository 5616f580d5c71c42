package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// An assignment is one value for one setting, from the environment or a
// flag, with where it came from ("HUDDLE_ID") for error messages.
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
//     unknown key is an error;
//  3. HUDDLE_* environment variables (HUDDLE_SRM_C1 for srm.c1); an empty
//     variable counts as unset, HUDDLE_TEST_* are left to tests, and any
//     other unknown HUDDLE_ variable is an error;
//  4. the flags given on the command line.
//
// The result is validated. Every problem found is reported, joined, in the
// form "config: <key>: <problem>". Load does not touch the network: call
// Resolve for the interface and the ID.
func Load(fs *flag.FlagSet, f *Flags, environ []string) (Config, error) {
	flags := f.set(fs)
	envPath, env, err := readEnv(environ)
	errs := []error{err}

	path, pathSource := envPath, "HUDDLE_CONFIG"
	if f != nil && f.path != "" {
		path, pathSource = f.path, "--config"
	}
	var doc []byte
	if path != "" {
		if doc, err = os.ReadFile(path); err != nil {
			// A file named explicitly but unreadable must not be skipped.
			return Config{}, fmt.Errorf("config: config file (%s): %w", pathSource, err)
		}
	}

	c, err := startFrom(chooseProfile(path, doc, env, flags))
	errs = append(errs, err, decodeFile(&c, path, doc), apply(&c, env), apply(&c, flags))
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// readEnv picks the HUDDLE_* variables out of environ.
func readEnv(environ []string) (path string, sets []assignment, err error) {
	known := make(map[string]string)
	for _, s := range settings(&Config{}) {
		known[envName(s.key)] = s.key
	}
	var errs []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		key, ok := known[name]
		switch {
		case !strings.HasPrefix(name, "HUDDLE_"), strings.HasPrefix(name, "HUDDLE_TEST_"), value == "":
		case name == "HUDDLE_CONFIG":
			path = value
		case !ok:
			errs = append(errs, fmt.Errorf("config: %s: unknown environment variable (HUDDLE_ + a config key, e.g. HUDDLE_SRM_C1)", name))
		default:
			sets = append(sets, assignment{key, value, name})
		}
	}
	return path, sets, errors.Join(errs...)
}

// chooseProfile names the profile whose defaults come first, and where the
// name came from: the flag, else the environment, else the file.
func chooseProfile(path string, doc []byte, env, flags []assignment) (name, source string) {
	for _, sets := range [][]assignment{flags, env} {
		for i := len(sets) - 1; i >= 0; i-- {
			if sets[i].key == "profile" {
				return sets[i].value, sets[i].source
			}
		}
	}
	var file struct {
		Profile string `toml:"profile"`
	}
	_ = toml.Unmarshal(doc, &file) // a bad file is reported by decodeFile
	return file.Profile, path
}

// startFrom returns the defaults of the named profile; for an unknown name
// it returns LAN's along with the error, so that Load can go on and report
// every other problem too.
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
			errs = append(errs, problem(a.key, a.source, "%v", err))
		}
	}
	return errors.Join(errs...)
}
