package config_test

import (
	"flag"
	"fmt"

	"github.com/huddle-lan/huddle/config"
)

// Flags win over the environment, which wins over the file and the
// profile's defaults; every problem names its key and where its value came
// from, and every one is reported, not only the first. A HUDDLE_ variable that is not a setting is only a warning.
func ExampleLoad() {
	fs := flag.NewFlagSet("huddle", flag.ContinueOnError)
	flags := config.AddFlags(fs)
	_ = fs.Parse([]string{"--profile", "local", "--heartbeat", "10ms"})

	c, warnings, err := config.Load(fs, flags, []string{"HUDDLE_ID=7", "HUDDLE_HEARTBEAT=1s", "HUDDLE_HOME=/opt/huddle"})
	fmt.Println(c.Profile, c.ID, c.Heartbeat, c.SuspectTimeout, err)
	fmt.Println(warnings)

	_, _, err = config.Load(fs, flags, []string{"HUDDLE_ADDR=10.0.0.1:7468", "HUDDLE_JOIN_TIMEOUT=200"})
	fmt.Println(err)
	// Output:
	// local 7 10ms 150ms <nil>
	// [HUDDLE_HOME is not a setting; ignoring it]
	// config: HUDDLE_JOIN_TIMEOUT: join_timeout: 200 has no unit; write HUDDLE_JOIN_TIMEOUT=200ms (units: ns, us, ms, s, m, h)
	// config: HUDDLE_ADDR: addr: 10.0.0.1 is not a multicast address (224.0.0.0/4)
}
