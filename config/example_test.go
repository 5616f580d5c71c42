package config_test

import (
	"flag"
	"fmt"

	"github.com/huddle-lan/huddle/config"
)

// Flags win over the environment, which wins over the file and the
// profile's defaults; every problem names its key.
func ExampleLoad() {
	fs := flag.NewFlagSet("huddle", flag.ContinueOnError)
	flags := config.AddFlags(fs)
	_ = fs.Parse([]string{"--profile", "local", "--heartbeat", "10ms"})

	c, err := config.Load(fs, flags, []string{"HUDDLE_ID=7", "HUDDLE_HEARTBEAT=1s"})
	fmt.Println(c.Profile, c.ID, c.Heartbeat, c.SuspectTimeout, err)

	_, err = config.Load(fs, flags, []string{"HUDDLE_ADDR=10.0.0.1:7468"})
	fmt.Println(err)
	// Output:
	// local 7 10ms 150ms <nil>
	// config: addr: 10.0.0.1 is not a multicast address (224.0.0.0/4)
}
