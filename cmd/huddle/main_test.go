package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// noIface names no interface: runMain adds --iface noIface to a `run` that
// is expected to fail, so that if it did not fail where the test expects,
// Resolve stops it before a node could start on a real interface.
const noIface = "huddle-none0"

// runMain calls run as main does and returns its exit code and output.
// A `run` without --print-config or a help flag gets --iface noIface first
// (its own --iface, given later, would win): in-process tests never start a
// node.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if len(args) > 0 && args[0] == "run" && !hasAny(args, "--print-config", "-print-config", "--help", "-help", "-h") {
		args = append([]string{"run", "--iface", noIface}, args[1:]...)
	}
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func hasAny(args []string, names ...string) bool {
	for _, a := range args {
		for _, n := range names {
			if a == n || strings.HasPrefix(a, n+"=") {
				return true
			}
		}
	}
	return false
}

// clearHuddleEnv blanks the HUDDLE_* variables of the environment the tests
// run in (config counts an empty variable as unset), so that only what a
// test sets reaches Load. HUDDLE_TEST_* are left alone: config ignores them.
func clearHuddleEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "HUDDLE_") && !strings.HasPrefix(name, "HUDDLE_TEST_") {
			t.Setenv(name, "")
		}
	}
}

func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-help"}, {"-h"}, {"help"}} {
		code, stdout, stderr := runMain(t, args...)
		if code != exitOK || stderr != "" {
			t.Errorf("huddle %s: exit %d, stderr %q; want 0 and nothing", args[0], code, stderr)
		}
		for _, want := range []string{"huddle demo [flags]", "huddle run [flags]", "huddle status", "huddle send TEXT", "huddle elect",
			"huddle lock", "huddle version", "huddle help", "huddle run --help"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("huddle %s: the usage does not mention %q:\n%s", args[0], want, stdout)
			}
		}
	}
	code, stdout, stderr := runMain(t)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "huddle run [flags]") {
		t.Errorf("huddle with no command: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", code, stdout, stderr)
	}
}

// helpBlocks splits flag.PrintDefaults output into one block per flag.
func helpBlocks(help string) map[string]string {
	blocks := make(map[string]string)
	name := ""
	for _, line := range strings.Split(help, "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ = strings.Cut(rest, " ")
		}
		if name != "" {
			blocks[name] += line + "\n"
		}
	}
	return blocks
}

func TestRunHelpListsEveryFlag(t *testing.T) {
	code, stdout, stderr := runMain(t, "run", "--help")
	if code != exitOK || stderr != "" {
		t.Fatalf("huddle run --help: exit %d, stderr %q; want 0 and the help on stdout", code, stderr)
	}
	if !strings.HasPrefix(stdout, "Usage: huddle run [flags]") {
		t.Errorf("huddle run --help does not start with its usage line:\n%s", stdout)
	}
	blocks := helpBlocks(stdout)

	// The flags huddle run registers: config's, and --print-config.
	want := flag.NewFlagSet("want", flag.ContinueOnError)
	config.AddFlags(want)
	want.Bool("print-config", false, "")
	n := 0
	want.VisitAll(func(f *flag.Flag) {
		n++
		block, ok := blocks[f.Name]
		if !ok {
			t.Errorf("--%s is not listed by huddle run --help", f.Name)
			return
		}
		b, isBool := f.Value.(interface{ IsBoolFlag() bool })
		if f.DefValue == "" || (isBool && b.IsBoolFlag() && f.DefValue == "false") {
			return // no default worth showing
		}
		if !strings.Contains(block, "(default "+f.DefValue+")") {
			t.Errorf("--%s: the help does not give its default %q:\n%s", f.Name, f.DefValue, block)
		}
	})
	if n < 30 {
		t.Errorf("only %d flags registered; AddFlags changed?", n)
	}
	// The local profile's different defaults are given too.
	if !strings.Contains(blocks["suspect-timeout"], "local profile: 150ms") {
		t.Errorf("--suspect-timeout does not give the local profile's default:\n%s", blocks["suspect-timeout"])
	}
}

func TestUsageErrors(t *testing.T) {
	clearHuddleEnv(t)
	badKeys := writeTemp(t, "bad.toml", "id = 3\nhearbeat = \"1s\"\n[srm]\nc9 = 1\n")
	missing := filepath.Join(t.TempDir(), "none.toml")
	large := writeTemp(t, "large.toml", strings.Repeat("# a comment\n", 100_000))
	unitless := writeTemp(t, "unitless.toml", "id = 3\nheartbeat = 50\n")
	openKey := writeTemp(t, "group.key", "huddle-key-v1:IXWVUAxqYK6FFtHJKX7hXA+vD1gJG20xa2qAPPIq6ZA=\n")
	if err := os.Chmod(openKey, 0o644); err != nil {
		t.Fatal(err)
	}
	outOfRange := writeTemp(t, "range.toml", "id = 3\n[srm]\nmin_delay = \"1s\"\n")
	manyProblems := writeTemp(t, "many.toml", "ttl = 1.5\nttl = 2\nhartbeat = \"1s\"\naddr = \"239.1.2.3:7468 \"\n")
	noDir := filepath.Join(t.TempDir(), "none", "huddle.json")
	longSocket := "/tmp/" + strings.Repeat("s", 128) + ".sock"
	tests := []struct {
		name string
		env  []string // NAME=value
		args []string
		want []string // each must appear in stderr
	}{
		{"unknown command", nil, []string{"runn"}, []string{`huddle: unknown command "runn"; did you mean run? (huddle help lists the commands)` + "\n"}},
		{"print-config checks what run checks", nil, []string{"run", "--print-config", "--security-key-file", openKey, "--log-file", noDir, "--control-socket", longSocket}, []string{
			"config: security.key_file: " + openKey + ": has mode 0644; it must be 0600 or 0400 (chmod 600 the file)\n",
			"config: log.file: cannot append the log to " + noDir + ": no such file or directory\n",
			"config: control_socket: the control socket path " + longSocket + " is 138 bytes long; a Unix socket's path has at most 107 (set a shorter --control-socket)\n",
		}},
		{"control socket path too long", nil, []string{"run", "--id", "7", "--control-socket", longSocket}, []string{
			"config: control_socket: the control socket path " + longSocket + " is 138 bytes long; a Unix socket's path has at most 107 (set a shorter --control-socket)\n",
		}},
		{"default control socket path too long", []string{"XDG_RUNTIME_DIR=/run/" + strings.Repeat("x", 100)}, []string{"run", "--id", "7"}, []string{
			"config: control_socket: the control socket path /run/" + strings.Repeat("x", 100) + "/huddle/huddle-7.sock is 126 bytes long",
		}},
		{"every problem of a file", nil, []string{"run", "--config", manyProblems}, []string{
			"config: " + manyProblems + ":1: ttl: 1.5 is not a whole number (1 to 255)\n",
			"config: " + manyProblems + ":2: ttl: is set twice, on lines 1 and 2: keep one\n",
			"config: " + manyProblems + `:3: unknown key "hartbeat" (did you mean "heartbeat"?)` + "\n",
			"config: " + manyProblems + ":4: addr: \"239.1.2.3:7468 \" has spaces around it; write 239.1.2.3:7468\n",
		}},
		{"id beyond its range", nil, []string{"run", "--id", "99999999999999999999"}, []string{`config: --id: id: "99999999999999999999" is out of range (0 to 2^63-1)`}},
		{"reserved group", nil, []string{"run", "--addr", "239.255.255.250:1900"}, []string{`config: --addr: addr: 239.255.255.250 is SSDP's group (UPnP discovery); use a group in 239.192.0.0/14`}},
		{"unknown flag", nil, []string{"run", "--bogus"}, []string{"huddle run: unknown flag --bogus (huddle run --help lists the flags)\n"}},
		{"misspelled flag", nil, []string{"run", "--hartbeat", "5ms"}, []string{"huddle run: unknown flag --hartbeat; did you mean --heartbeat? (huddle run --help lists the flags)\n"}},
		{"flag without value", nil, []string{"run", "--id"}, []string{"huddle run: --id needs a value (huddle run --help)\n"}},
		{"argument", nil, []string{"run", "extra"}, []string{`huddle run: unexpected argument "extra"`}},
		{"id not a number", nil, []string{"run", "--id", "abc"}, []string{`config: --id: id: "abc" is not a number`}},
		{"addr not multicast", nil, []string{"run", "--addr", "10.0.0.1:7468"},
			[]string{`config: --addr: addr: 10.0.0.1 is not a multicast address (224.0.0.0/4)`}},
		{"every bad value at once", nil, []string{"run", "--id", "x", "--heartbeat", "fast"}, []string{
			`config: --id: id: "x" is not a number`,
			`config: --heartbeat: heartbeat: "fast" is not a duration`,
		}},
		{"every invalid setting at once", nil, []string{"run", "--ttl", "0", "--log-level", "loud"}, []string{
			`config: --ttl: ttl: 0 is out of range (1 to 255)`,
			`config: --log-level: log.level: "loud" is not a log level`,
		}},
		{"unknown keys in the file", nil, []string{"run", "--config", badKeys}, []string{
			`config: ` + badKeys + `:2: unknown key "hearbeat" (did you mean "heartbeat"?)`,
			`config: ` + badKeys + `:4: unknown key "srm.c9"`,
		}},
		{"file from the environment", []string{"HUDDLE_CONFIG=" + badKeys}, []string{"run"},
			[]string{`unknown key "hearbeat"`}},
		{"missing file", nil, []string{"run", "--config", missing}, []string{"config: config file (--config): open " + missing}},
		{"large file", nil, []string{"run", "--config", large}, []string{"config: " + large + ": the file is larger than 1 MiB"}},
		{"bad variable", []string{"HUDDLE_ID=abc"}, []string{"run"}, []string{`config: HUDDLE_ID: id: "abc" is not a number`}},
		{"bad profile", nil, []string{"run", "--profile", "wan"}, []string{`config: --profile: profile: "wan" is not a profile (lan, local)`}},
		{"durations without a unit", []string{"HUDDLE_SUSPECT_TIMEOUT=400", "HUDDLE_CONFIG=" + unitless}, []string{"run", "--join-timeout", "500"}, []string{
			`config: ` + unitless + `:2: heartbeat: 50 has no unit; write heartbeat = "50ms" (units: ns, us, ms, s, m, h)`,
			`config: HUDDLE_SUSPECT_TIMEOUT: suspect_timeout: 400 has no unit; write HUDDLE_SUSPECT_TIMEOUT=400ms (units: ns, us, ms, s, m, h)`,
			`config: --join-timeout: join_timeout: 500 has no unit; write --join-timeout 500ms (units: ns, us, ms, s, m, h)`,
		}},
		{"file value out of range", []string{"HUDDLE_CONFIG=" + outOfRange}, []string{"run"},
			[]string{`config: ` + outOfRange + `:3: srm.min_delay: 1s is out of range (0s to 100ms)`}},
		{"unknown variable: a warning, then the next problem", []string{"HUDDLE_HEARTBEET=1s", "HUDDLE_TTL=0"}, []string{"run"}, []string{
			"huddle: warning: HUDDLE_HEARTBEET is not a setting; did you mean HUDDLE_HEARTBEAT?\n",
			`config: HUDDLE_TTL: ttl: 0 is out of range (1 to 255)`,
		}},
		{"short key", []string{"HUDDLE_SECURITY_KEY=0123456789"}, []string{"run"},
			[]string{"config: HUDDLE_SECURITY_KEY: security.key: a key of 10 bytes is too short (at least 16 bytes, or one written by huddle keygen)"}},
		{"key file others may read", nil, []string{"run", "--security-key-file", openKey},
			[]string{"config: security.key_file: " + openKey + ": has mode 0644; it must be 0600 or 0400 (chmod 600 the file)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kv := range tt.env {
				name, value, _ := strings.Cut(kv, "=")
				t.Setenv(name, value)
			}
			code, stdout, stderr := runMain(t, tt.args...)
			if code != exitUsage {
				t.Errorf("huddle %s: exit %d, want %d; stderr:\n%s", strings.Join(tt.args, " "), code, exitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// An interface that is missing (or down, or without multicast or IPv4) is
// the machine's state, which may change: exit 1, so that a service manager
// retries, where a bad command line or configuration is 2.
func TestInterfaceErrors(t *testing.T) {
	clearHuddleEnv(t)
	for _, args := range [][]string{
		{"run", "--id", "1", "--iface", "bogus0"},
		{"run", "--iface", "bogus0"}, // no ID to derive either: the interface is named
		{"run", "--print-config", "--iface", "bogus0"},
	} {
		code, stdout, stderr := runMain(t, args...)
		if code != exitFailure || stdout != "" || !strings.Contains(stderr, `config: iface: "bogus0" does not exist`) {
			t.Errorf("huddle %s: exit %d, stdout %q, stderr %q; want %d and the interface named",
				strings.Join(args, " "), code, stdout, stderr, exitFailure)
		}
	}
	// A bad value next to the missing interface is the command line's
	// fault, and said first.
	code, _, stderr := runMain(t, "run", "--iface", "bogus0", "--id", "abc")
	if code != exitUsage || !strings.Contains(stderr, `config: --id: id: "abc" is not a number`) || strings.Contains(stderr, "bogus0") {
		t.Errorf("huddle run --iface bogus0 --id abc: exit %d, stderr %q; want %d and only the ID's error", code, stderr, exitUsage)
	}
}

// The tests below resolve --iface lo, which must be up and multicast-capable:
// they run in a private network namespace, where it is (on most hosts the
// root namespace's lo has no MULTICAST flag). They only print the
// configuration: nothing is sent.

func TestPrintConfigRoundTrip(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	clearHuddleEnv(t)
	for _, args := range [][]string{
		{"--iface", "lo", "--id", "7"},
		{"--iface", "lo", "--id", "9223372036854775807", "--profile", "local", "--heartbeat", "30ms",
			"--srm-c1", "1.5", "--election", "bully", "--loopback=false", "--log-file", "/tmp/x y.log",
			"--group", `a "quoted" 'name'`, "--security-key", `0123456789abcdef\"'`},
	} {
		code, first, stderr := runMain(t, append([]string{"run", "--print-config"}, args...)...)
		if code != exitOK || stderr != "" {
			t.Fatalf("huddle run --print-config %q: exit %d, stderr %q", args, code, stderr)
		}
		var c config.Config
		if err := toml.Unmarshal([]byte(first), &c); err != nil {
			t.Fatalf("--print-config output is not TOML: %v\n%s", err, first)
		}
		if c.Iface != "lo" || (c.ID != 7 && c.ID != 1<<63-1) || c.Profile == "" || c.Addr == "" {
			t.Errorf("--print-config %q printed %+v", args, c)
		}

		path := writeTemp(t, "huddle.toml", first)
		code, second, stderr := runMain(t, "run", "--print-config", "--config", path)
		if code != exitOK || stderr != "" {
			t.Fatalf("reading back %q: exit %d, stderr %q\n%s", args, code, stderr, first)
		}
		if second != first {
			t.Errorf("round trip of %q changed the configuration:\nfirst:\n%s\nsecond:\n%s", args, first, second)
		}
	}
}

// TestPrintConfigCopies: what Resolve derives on this host is printed as
// comments, so that the file can be copied to other machines, which derive
// their own.
func TestPrintConfigCopies(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	clearHuddleEnv(t)
	code, first, stderr := runMain(t, "run", "--print-config", "--group", "lab")
	if code != exitOK || stderr != "" {
		t.Fatalf("huddle run --print-config: exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"\nid = 0\n# id = 2130706433   (derived from lo's address 127.0.0.1; set it to pin this node's ID)\n",
		"\niface = ''\n# iface = \"lo\"   (picked on this host; set it to pin the interface)\n",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("--print-config does not print\n%s\nin:\n%s", want, first)
		}
	}
	var c config.Config
	if err := toml.Unmarshal([]byte(first), &c); err != nil || c.ID != 0 || c.Iface != "" || c.Group != "lab" {
		t.Errorf("--print-config printed id %d, iface %q, group %q (%v); want 0, empty, lab", c.ID, c.Iface, c.Group, err)
	}
	code, second, stderr := runMain(t, "run", "--print-config", "--config", writeTemp(t, "huddle.toml", first))
	if code != exitOK || stderr != "" || second != first {
		t.Errorf("reading it back: exit %d, stderr %q, printed:\n%s\nwant:\n%s", code, stderr, second, first)
	}
}

func TestPrecedence(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	clearHuddleEnv(t)
	file := writeTemp(t, "huddle.toml", `profile = "local"
id = 5
group = "from-file"
heartbeat = "30ms"
ttl = 3
[srm]
c1 = 3.0
`)
	t.Setenv("HUDDLE_CONFIG", file)
	t.Setenv("HUDDLE_GROUP", "from-env")
	t.Setenv("HUDDLE_TTL", "4")
	t.Setenv("HUDDLE_SRM_C1", "2.5")
	t.Setenv("HUDDLE_TEST_WHATEVER", "ignored")

	print := func(args ...string) config.Config {
		t.Helper()
		code, stdout, stderr := runMain(t, append([]string{"run", "--print-config", "--iface", "lo"}, args...)...)
		if code != exitOK || stderr != "" {
			t.Fatalf("huddle run --print-config %q: exit %d, stderr %q", args, code, stderr)
		}
		var c config.Config
		if err := toml.Unmarshal([]byte(stdout), &c); err != nil {
			t.Fatalf("--print-config output is not TOML: %v\n%s", err, stdout)
		}
		return c
	}

	c := print("--ttl", "5")
	want := config.Local()                                  // the file's profile
	want.ID = 5                                             // file
	want.Heartbeat = config.Duration(30 * time.Millisecond) // file
	want.Group = "from-env"                                 // env over file
	want.SRM.C1 = 2.5                                       // env over file
	want.TTL = 5                                            // flag over env
	want.Iface = "lo"
	if !reflect.DeepEqual(c, want) {
		t.Errorf("file < env < flag:\ngot  %+v\nwant %+v", c, want)
	}

	// The profile: flag over env over file, and the rest stays.
	t.Setenv("HUDDLE_PROFILE", "lan")
	if c := print(); c.Profile != "lan" || c.SuspectTimeout != config.LAN().SuspectTimeout || c.TTL != 4 || c.ID != 5 {
		t.Errorf("HUDDLE_PROFILE=lan over the file's local: %+v", c)
	}
	if c := print("--profile", "local", "--config", writeTemp(t, "other.toml", "id = 6\n")); c.Profile != "local" || c.ID != 6 ||
		c.SuspectTimeout != config.Local().SuspectTimeout || c.Group != "from-env" {
		t.Errorf("--profile local and --config over HUDDLE_PROFILE and HUDDLE_CONFIG: %+v", c)
	}
}
