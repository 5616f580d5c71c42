// Package config holds the one Config struct a huddle node runs from, its
// profiles (LAN for real networks, Local for one host and tests), and the
// loading rules: defaults of the chosen profile, then a TOML file, then
// HUDDLE_* environment variables, then command-line flags, each overriding
// the one before. Validate names the field, the bad value and what is
// allowed.
//
// In huddle run:
//
//	fs := flag.NewFlagSet("run", flag.ExitOnError)
//	flags := config.AddFlags(fs) // --id, --heartbeat, --srm-c1, ..., --config
//	fs.Parse(args)
//	cfg, err := config.Load(fs, flags, os.Environ()) // validated
//	if err == nil {
//		err = cfg.Resolve() // picks Iface and ID from the host
//	}
//
// Config.TOML writes the result back as a file Load reads.
package config
