// Command huddle runs a group-communication node, one per machine of a LAN.
//
//	huddle run [flags]   run a node until SIGINT or SIGTERM
//	huddle run --help    every flag, with its default
//	huddle version
//
// A node's settings come from the profile's defaults, a TOML file
// (--config), HUDDLE_* environment variables and flags, each overriding
// the one before. Exit codes: 0 after a clean stop, 1 when the node cannot
// start or its socket fails, 2 for a bad command line or configuration.
// See README.md for the settings and the log events.
package main
