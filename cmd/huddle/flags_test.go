package main

import (
	"slices"
	"strings"
	"testing"
)

// TestFlagErrors: a bad flag gets one message that names the flag, the
// value and what it takes (a misspelled flag, the one meant), on stderr,
// exit 2, and never the flag package's words or the whole help.
func TestFlagErrors(t *testing.T) {
	clearHuddleEnv(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--hartbeat", "5ms"}, "huddle run: unknown flag --hartbeat; did you mean --heartbeat? (huddle run --help lists the flags)\n"},
		{[]string{"run", "--suspect-timout=1s"}, "huddle run: unknown flag --suspect-timout; did you mean --suspect-timeout? (huddle run --help lists the flags)\n"},
		{[]string{"status", "--jsn"}, "huddle status: unknown flag --jsn; did you mean --json? (huddle status --help lists the flags)\n"},
		{[]string{"lab", "--presett", "dist-sync"}, "huddle lab: unknown flag --presett; did you mean --preset? (huddle lab --help lists the flags)\n"},
		{[]string{"check", "--xyz", "a.json"}, "huddle check: unknown flag --xyz (huddle check --help lists the flags)\n"},
		{[]string{"lock", "--hold", "5"}, "huddle lock: --hold 5: 5 has no unit; write --hold 5s (units: ns, us, ms, s, m, h)\n  --hold duration: how long to hold the lock\n"},
		{[]string{"demo", "--duration", "30"}, "huddle demo: --duration 30: 30 has no unit; write --duration 30s (units: ns, us, ms, s, m, h)\n  --duration time: time from the start of the nodes to their stop, 5s to 10m0s\n"},
		{[]string{"check", "--skew", "abc", "a.json"}, "huddle check: --skew abc: \"abc\" is not a duration (examples: 400ms, 1.5s)\n  --skew skew: the clock skew to forgive between logs of different machines (the lock and liveness checks compare their times)\n"},
		{[]string{"check", "--skew", "2", "a.json"}, "huddle check: --skew 2: 2 has no unit; write --skew 2ms (units: ns, us, ms, s, m, h)\n"},
		{[]string{"status", "--group", "--wait", "3"}, "huddle status: --wait 3: 3 has no unit; write --wait 3s (units: ns, us, ms, s, m, h)\n"},
		{[]string{"send", "--timeout", "1.5", "x"}, "huddle send: --timeout 1.5: 1.5 has no unit; write --timeout 1.5s (units: ns, us, ms, s, m, h)\n"},
		{[]string{"demo", "--nodes", "2.5"}, "huddle demo: --nodes 2.5: \"2.5\" is not a whole number\n  --nodes number: number of nodes, 2 to"},
		{[]string{"drop", "--rate", "lots"}, "huddle drop: --rate lots: \"lots\" is not a number\n  --rate probability: drop each received datagram with this probability, 0 to 1\n"},
		{[]string{"watch", "--json=maybe"}, "huddle watch: --json maybe: \"maybe\" is not a boolean (true or false)\n  --json: print the answer as one JSON object\n"},
		{[]string{"report", "--out"}, "huddle report: --out needs a value (huddle report --help)\n"},
	} {
		code, stdout, stderr := runMain(t, tt.args...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("huddle %s: exit %d, stdout %q, stderr:\n%s\nwant exit 2, nothing on stdout, and on stderr:\n%s", strings.Join(tt.args, " "), code, stdout, stderr, tt.want)
		}
		for _, never := range []string{"Usage", "flag provided", "parse error", "invalid value"} {
			if strings.Contains(stderr, never) {
				t.Errorf("huddle %s: stderr says %q:\n%s", strings.Join(tt.args, " "), never, stderr)
			}
		}
	}
}

// TestHelpOnce: every command's --help (and huddle help COMMAND) prints
// its help once, on stdout, and exits 0; the help's synopsis is the one
// the manual page and the completions show.
func TestHelpOnce(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			code, stdout, stderr := runMain(t, args...)
			ok := strings.HasPrefix(stdout, "Usage: "+c.synopsis+"\n")
			if c.name == "help" {
				ok = strings.Contains(stdout, "Usage:\n  huddle demo") // the commands
			}
			if code != exitOK || stderr != "" || strings.Count(stdout, "Usage:") != 1 || !ok {
				t.Errorf("huddle %s: exit %d, %d Usage: lines on stdout, stderr %q; want 0, one, nothing:\n%s",
					strings.Join(args, " "), code, strings.Count(stdout, "Usage:"), stderr, stdout)
			}
		}
	}
}

// TestHelpShowsEveryOwnFlag: the help of a command that talks to a node
// lists every flag of its own (drop --burst, send --raw and --raw-size),
// beside the settings that find the node's socket; the other settings of
// huddle run, which it accepts too, are left to huddle run --help.
func TestHelpShowsEveryOwnFlag(t *testing.T) {
	settings := map[string]bool{}
	for _, f := range flagsOf("run") {
		settings[f.name] = true
	}
	for _, name := range []string{"status", "watch", "send", "elect", "lock", "drop", "key"} {
		_, help, _ := runMain(t, name, "--help")
		for _, f := range flagsOf(name) {
			own := !settings[f.name] || slices.Contains(socketFlags, f.name)
			if shown := strings.Contains(help, "\n  -"+f.name+" ") || strings.Contains(help, "\n  -"+f.name+"\n"); shown != own {
				t.Errorf("huddle %s --help: shows --%s %v, want %v:\n%s", name, f.name, shown, own, help)
			}
		}
	}
}
