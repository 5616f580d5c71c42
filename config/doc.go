// Package config holds the one Config struct a huddle node runs from, its
// profiles (LAN for real networks, Local for one host and tests), and the
// loading rules: defaults of the chosen profile, then a TOML file, then
// HUDDLE_* environment variables, then command-line flags, each overriding
// the one before. Validate names the field, the bad value and what is
// allowed; Load's errors also say where the value came from (the file and
// line, the variable, the flag). Durations take a unit everywhere
// ("400ms"): a bare number other than 0 is an error, not nanoseconds.
//
// In huddle run:
//
//	fs := flag.NewFlagSet("run", flag.ExitOnError)
//	flags := config.AddFlags(fs) // --id, --heartbeat, --srm-c1, ..., --config
//	fs.Parse(args)
//	cfg, warnings, err := config.Load(fs, flags, os.Environ()) // validated
//	for _, w := range warnings {
//		fmt.Fprintln(os.Stderr, "huddle: warning:", w) // HUDDLE_HEARTBAET is not a setting; ...
//	}
//	if err == nil {
//		err = cfg.Resolve() // picks Iface and ID from the host
//	}
//
// Config.TOML writes the result back as a file Load reads; ResolvedTOML
// writes what Resolve derives on this host (the ID, the interface) as
// comments instead, so that the file can be copied to other machines.
package config
