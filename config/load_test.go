package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// load runs AddFlags, Parse and Load as huddle run does, and fails the
// test on a warning.
func load(t *testing.T, args, env []string) (Config, error) {
	t.Helper()
	c, warnings, err := loadWarn(t, args, env)
	if len(warnings) > 0 {
		t.Errorf("warnings: %q", warnings)
	}
	return c, err
}

// loadWarn is load returning the warnings.
func loadWarn(t *testing.T, args, env []string) (Config, []string, error) {
	t.Helper()
	fs := flag.NewFlagSet("huddle", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return Load(fs, f, env)
}

// writeFile writes a TOML file and returns its path.
func writeFile(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "huddle.toml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func ms(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name string
		file string // written to a file passed with --config when not empty
		env  []string
		args []string
		want func(c *Config)
	}{
		{name: "defaults", want: func(c *Config) {}},
		{
			name: "file over profile",
			file: "heartbeat = \"100ms\"\n[srm]\nc1 = 3.5\n",
			want: func(c *Config) { c.Heartbeat = ms(100); c.SRM.C1 = 3.5 },
		},
		{
			name: "env over file",
			file: "id = 7\nheartbeat = \"100ms\"\n",
			env:  []string{"HUDDLE_HEARTBEAT=60ms", "HUDDLE_SRM_C1=1.5", "PATH=/bin"},
			want: func(c *Config) { c.ID = 7; c.Heartbeat = ms(60); c.SRM.C1 = 1.5 },
		},
		{
			name: "flag over env, unset flags keep file and env",
			file: "id = 7\ngroup = \"g\"\n",
			env:  []string{"HUDDLE_HEARTBEAT=60ms", "HUDDLE_GROUP=e"},
			args: []string{"--heartbeat=70ms", "--log-level", "debug"},
			want: func(c *Config) { c.ID = 7; c.Group = "e"; c.Heartbeat = ms(70); c.Log.Level = "debug" },
		},
		{
			name: "profile from file",
			file: "profile = \"local\"\n",
			want: func(c *Config) { *c = Local() },
		},
		{
			name: "profile from env over file",
			file: "profile = \"local\"\n",
			env:  []string{"HUDDLE_PROFILE=lan"},
			want: func(c *Config) {},
		},
		{
			name: "profile from flag over env",
			env:  []string{"HUDDLE_PROFILE=lan"},
			args: []string{"--profile", "local"},
			want: func(c *Config) { *c = Local() },
		},
		{
			name: "file over the profile it chose",
			file: "profile = \"local\"\njoin_timeout = \"1s\"\n",
			want: func(c *Config) { *c = Local(); c.JoinTimeout = ms(1000) },
		},
		{
			name: "election alias and bare boolean",
			env:  []string{"HUDDLE_LOOPBACK=false"},
			args: []string{"--election", "bully", "--loopback"},
			want: func(c *Config) { c.Election.Algorithm = "bully" },
		},
		{
			name: "the ring_voting aliases",
			args: []string{"--elections", "5", "--election-interval", "2s"},
			want: func(c *Config) { c.Election.Count = 5; c.Election.Every = ms(2000) },
		},
		{
			name: "empty variables and test knobs are ignored",
			env:  []string{"HUDDLE_ID=", "HUDDLE_PROFILE=", "HUDDLE_TEST_SEED=1", "HUDDLE_TEST_ANYTHING=x", "HUDDLE_BIN="},
			want: func(c *Config) {},
		},
		{
			name: "durations written with units",
			file: "heartbeat = \"40ms\"\nsuspect_timeout = \"1.5s\"\n[srm]\nmin_delay = \"250us\"\n",
			env:  []string{"HUDDLE_JOIN_TIMEOUT=1.5s"},
			args: []string{"--election-interval", "400ms"},
			want: func(c *Config) {
				c.Heartbeat, c.SuspectTimeout, c.SRM.MinDelay = ms(40), ms(1500), Duration(250*time.Microsecond)
				c.JoinTimeout, c.Election.Every = ms(1500), ms(400)
			},
		},
		{
			name: "a duration of 0 needs no unit",
			file: "duration = 0\n[election]\nevery = 0\n",
			env:  []string{"HUDDLE_STATS_INTERVAL=0"},
			args: []string{"--mutex-hold", "0"},
			want: func(c *Config) { c.StatsInterval = 0 },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.file != "" {
				args = append([]string{"--config", writeFile(t, tt.file)}, args...)
			}
			got, err := load(t, args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			want := LAN()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLoadConfigPath(t *testing.T) {
	fromEnv := writeFile(t, "id = 1\n")
	fromFlag := writeFile(t, "id = 2\n")
	for _, tt := range []struct {
		args []string
		want uint64
	}{
		{nil, 1},
		{[]string{"--config", fromFlag}, 2},
	} {
		c, err := load(t, tt.args, []string{"HUDDLE_CONFIG=" + fromEnv})
		if err != nil || c.ID != tt.want {
			t.Errorf("args %q: id %d, %v; want %d", tt.args, c.ID, err, tt.want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  []string
		args []string
		want []string // each line of the error; <file> stands for the path
	}{
		{
			name: "unknown file keys",
			file: "hearbeat = \"1s\"\n[srm]\nc9 = 1\n",
			want: []string{`config: <file>:1: unknown key "hearbeat" (did you mean "heartbeat"?)`, `config: <file>:3: unknown key "srm.c9"`},
		},
		{
			name: "unknown keys near a key of another table",
			file: "c1 = 2\n[log]\nheartbeat = \"1s\"\n[mutex]\nthnik = \"1s\"\n[logs]\nlevel = \"debug\"\n",
			want: []string{
				`config: <file>:1: unknown key "c1" (did you mean "srm.c1"?)`,
				`config: <file>:3: unknown key "log.heartbeat" (did you mean "heartbeat"?)`,
				`config: <file>:5: unknown key "mutex.thnik" (did you mean "mutex.think"?)`,
				`config: <file>:6: unknown key "logs" (did you mean "log"?)`,
			},
		},
		{
			name: "unknown key in an inline table",
			file: "id = 1\nsrm = { c1 = 2, min_dealy = \"1ms\" }\n",
			want: []string{`config: <file>:2: unknown key "srm.min_dealy" (did you mean "srm.min_delay"?)`},
		},
		{
			name: "durations without a unit in the file",
			file: "id = 1\n\nheartbeat = 50\nsuspect_timeout = 1.5\njoin_timeout = \"500\"\n[srm]\nmin_delay = 1_000\n[election]\nevery = 0x10\n",
			want: []string{
				`config: <file>:3: heartbeat: 50 has no unit; write heartbeat = "50ms" (units: ns, us, ms, s, m, h)`,
				`config: <file>:4: suspect_timeout: 1.5 has no unit; write suspect_timeout = "1.5ms" (units: ns, us, ms, s, m, h)`,
				`config: <file>:5: join_timeout: 500 has no unit; write join_timeout = "500ms" (units: ns, us, ms, s, m, h)`,
				`config: <file>:7: srm.min_delay: 1_000 has no unit; write min_delay = "1000ms" (units: ns, us, ms, s, m, h)`,
				`config: <file>:9: election.every: 0x10 has no unit; write every = "16ms" (units: ns, us, ms, s, m, h)`,
			},
		},
		{
			name: "durations without a unit in dotted keys and inline tables",
			file: "srm.min_delay = 2\nmutex = { hold = -3.0 }\n",
			want: []string{
				`config: <file>:1: srm.min_delay: 2 has no unit; write srm.min_delay = "2ms" (units: ns, us, ms, s, m, h)`,
				`config: <file>:2: mutex.hold: -3.0 has no unit; write hold = "-3ms" (units: ns, us, ms, s, m, h)`,
			},
		},
		{
			name: "numbers and booleans for settings read from text",
			file: "duration = true\nstats_interval = inf\nheartbeat = 1e300\n[drop]\nfrom = 1.5\n",
			want: []string{
				`config: <file>:1: duration: "true" is not a duration (examples: 400ms, 1.5s)`,
				`config: <file>:2: stats_interval: inf is not a duration (examples: 400ms, 1.5s)`,
				`config: <file>:3: heartbeat: 1e300 is not a duration (examples: 400ms, 1.5s)`,
				`config: <file>:5: drop.from: "1.5" is not a list of node IDs (e.g. 3,4; each 1 to 2^63-1)`,
			},
		},
		{
			name: "durations without a unit in the environment and flags",
			env:  []string{"HUDDLE_HEARTBEAT=50", "HUDDLE_SRM_MIN_DELAY=.5"},
			args: []string{"--suspect-timeout", "400", "--election-interval=2", "--lock-hold", "1e3"},
			want: []string{
				`config: HUDDLE_HEARTBEAT: heartbeat: 50 has no unit; write HUDDLE_HEARTBEAT=50ms (units: ns, us, ms, s, m, h)`,
				`config: HUDDLE_SRM_MIN_DELAY: srm.min_delay: .5 has no unit; write HUDDLE_SRM_MIN_DELAY=.5ms (units: ns, us, ms, s, m, h)`,
				`config: --election-interval: election.every: 2 has no unit; write --election-interval 2ms (units: ns, us, ms, s, m, h)`,
				`config: --lock-hold: mutex.hold: "1e3" is not a duration (examples: 400ms, 1.5s)`,
				`config: --suspect-timeout: suspect_timeout: 400 has no unit; write --suspect-timeout 400ms (units: ns, us, ms, s, m, h)`,
			},
		},
		{
			name: "syntax error names the line",
			file: "id = 1\n[srm\n",
			want: []string{`config: <file>:2: expected ']' to close table name`},
		},
		{
			name: "file value of the wrong type",
			file: "\nid = \"abc\"\n",
			want: []string{`config: <file>:2: id: "abc" is not a number (0 to 2^63-1)`},
		},
		{
			name: "file number in quotes",
			file: "ttl = \"5\"\n",
			want: []string{`config: <file>:1: ttl: "5" is a string; write it without quotes: ttl = 5`},
		},
		{
			name: "file duration",
			file: "heartbeat = \"fast\"\n",
			want: []string{`config: <file>:1: heartbeat: "fast" is not a duration (examples: 400ms, 1.5s)`},
		},
		{
			name: "bad profile in file",
			file: "\nprofile = \"fast\"\n",
			want: []string{`config: <file>:2: profile: "fast" is not a profile (lan, local)`},
		},
		{
			name: "bad variables",
			env:  []string{"HUDDLE_ID=abc", "HUDDLE_LOOPBACK=maybe"},
			want: []string{
				`config: HUDDLE_ID: id: "abc" is not a number (0 to 2^63-1)`,
				`config: HUDDLE_LOOPBACK: loopback: "maybe" is not a boolean (true or false)`,
			},
		},
		{
			name: "bad profile in env",
			env:  []string{"HUDDLE_PROFILE=wan"},
			want: []string{`config: HUDDLE_PROFILE: profile: "wan" is not a profile (lan, local)`},
		},
		{
			name: "bad flags",
			args: []string{"--id", "abc", "--heartbeat", "fast", "--loopback=maybe", "--ttl=1.5", "--srm-c1=x"},
			want: []string{
				`config: --heartbeat: heartbeat: "fast" is not a duration (examples: 400ms, 1.5s)`,
				`config: --id: id: "abc" is not a number (0 to 2^63-1)`,
				`config: --loopback: loopback: "maybe" is not a boolean (true or false)`,
				`config: --srm-c1: srm.c1: "x" is not a number (0 to 100)`,
				`config: --ttl: ttl: "1.5" is not a whole number (1 to 255)`,
			},
		},
		{
			name: "file values of the wrong kind",
			file: "ttl = 1.5\nloopback = 1\ngroup = true\nsend_order = 5\ndatagram_size = [1]\nrecv_buffer = 1979-05-27\nsrm = 5\n[drop]\nfrom = [3, \"x\"]\nrate = \"0.5\"\n[id]\nx = 1\n",
			want: []string{
				`config: <file>:1: ttl: 1.5 is not a whole number (1 to 255)`,
				`config: <file>:2: loopback: 1 is a number, not true or false`,
				`config: <file>:3: group: true is a boolean, not text; write group = "true"`,
				`config: <file>:4: send_order: 5 is a number, not text; write send_order = "5"`,
				`config: <file>:5: datagram_size: […] is a list, not a number`,
				`config: <file>:6: recv_buffer: 1979-05-27 is a date or time, not a number`,
				`config: <file>:7: srm: 5 is a number, not a table of settings (write [srm] above its settings)`,
				`config: <file>:9: drop.from: "3,x" is not a list of node IDs (e.g. 3,4; each 1 to 2^63-1)`,
				`config: <file>:10: drop.rate: "0.5" is a string; write it without quotes: rate = 0.5`,
				`config: <file>:11: id: {…} is a table, not a number`,
			},
		},
		{
			name: "a key set twice",
			file: "group = \"a\"\ngroup = \"b\"\n[srm]\nc1 = 1\n[log]\nlevel = \"info\"\n[srm]\nc2 = 1\n",
			want: []string{
				`config: <file>:2: group: is set twice, on lines 1 and 2: keep one`,
				`config: <file>:7: srm: is set twice, on lines 3 and 7: keep one`,
			},
		},
		{
			name: "every problem of a file and of the other sources, values checked too",
			file: "ttl = 1.5\nheartbeat = 50\nhaertbeat = \"1s\"\ngroup = \"a\"\ngroup = \"b\"\nsend_window = 3\n[srm]\nc2 = 0.0\n",
			env:  []string{"HUDDLE_DATAGRAM_SIZE=1.5"},
			args: []string{"--log-level", "loud"},
			want: []string{
				`config: <file>:1: ttl: 1.5 is not a whole number (1 to 255)`,
				`config: <file>:2: heartbeat: 50 has no unit; write heartbeat = "50ms" (units: ns, us, ms, s, m, h)`,
				`config: <file>:3: unknown key "haertbeat" (did you mean "heartbeat"?)`,
				`config: <file>:5: group: is set twice, on lines 4 and 5: keep one`,
				`config: HUDDLE_DATAGRAM_SIZE: datagram_size: "1.5" is not a whole number (512 to 65000)`,
				`config: <file>:6: send_window: 3 is out of range (16 to 1048576)`,
				`config: <file>:8: srm.c2: 0 is out of range (above 0, up to 100)`,
				`config: --log-level: log.level: "loud" is not a log level (trace, debug, info, warn, error)`,
			},
		},
		{
			name: "a table a dotted key made, given a header again",
			file: "srm.c1 = 1\n[srm]\nc2 = 1\n",
			want: []string{`config: <file>:2: table srm already exists as defined by a dotted key`},
		},
		{
			name: "numbers out of range",
			env:  []string{"HUDDLE_ID=99999999999999999999"},
			args: []string{"--id=-1", "--send-window=99999999999999999999", "--drop-seed", "99999999999999999999", "--srm-c1", "1e999"},
			want: []string{
				`config: HUDDLE_ID: id: "99999999999999999999" is out of range (0 to 2^63-1)`,
				`config: --drop-seed: drop.seed: "99999999999999999999" is out of range (0 to 2^63-1)`,
				`config: --id: id: "-1" is negative (0 to 2^63-1)`,
				`config: --send-window: send_window: "99999999999999999999" is out of range (16 to 1048576)`,
				`config: --srm-c1: srm.c1: "1e999" is out of range (0 to 100)`,
			},
		},
		{
			name: "validation after loading names the source",
			env:  []string{"HUDDLE_ADDR=10.0.0.1:7468"},
			args: []string{"--ttl=0", "--election", "raft"},
			want: []string{
				`config: HUDDLE_ADDR: addr: 10.0.0.1 is not a multicast address (224.0.0.0/4)`,
				`config: --ttl: ttl: 0 is out of range (1 to 255)`,
				`config: --election: election.algorithm: "raft" is not an election algorithm (ring, bully)`,
			},
		},
		{
			name: "validation names the file and line",
			file: "profile = \"local\"\nheartbeat = \"100ms\"\n\nsuspect_timeout = \"10ms\"\n[log]\nlevel = \"loud\"\n",
			want: []string{
				`config: <file>:4: suspect_timeout: 10ms is out of range (300ms, 3 heartbeats of 100ms, to 10m0s)`,
				`config: <file>:6: log.level: "loud" is not a log level (trace, debug, info, warn, error)`,
			},
		},
		{
			name: "validation names the source that won",
			file: "ttl = 3\nsend_order = \"random\"\nsrm = { c2 = 0.0 }\n",
			env:  []string{"HUDDLE_TTL=0"},
			args: []string{"--send-order", "agreed"},
			want: []string{
				`config: HUDDLE_TTL: ttl: 0 is out of range (1 to 255)`,
				`config: --send-order: send_order: "agreed" is not a delivery order (fifo, total, safe, causal)`,
				`config: <file>:3: srm.c2: 0 is out of range (above 0, up to 100)`,
			},
		},
		{
			name: "a default out of range for a value set names no source",
			args: []string{"--heartbeat", "200ms"},
			want: []string{`config: suspect_timeout: 400ms is out of range (600ms, 3 heartbeats of 200ms, to 10m0s)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, path := tt.args, ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
				args = append([]string{"--config", path}, args...)
			}
			_, err := load(t, args, tt.env)
			if err == nil {
				t.Fatal("no error")
			}
			want := strings.ReplaceAll(strings.Join(tt.want, "\n"), "<file>", path)
			if err.Error() != want {
				t.Errorf("error:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.toml")
	_, err := load(t, nil, []string{"HUDDLE_CONFIG=" + path})
	want := "config: config file (HUDDLE_CONFIG): open " + path + ": no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestLoadFileTooLarge(t *testing.T) {
	// A file of comments (valid TOML) just over the limit.
	line := "# " + strings.Repeat("x", 61) + "\n"
	doc := "id = 1\n" + strings.Repeat(line, maxFileSize/len(line)+1)
	path := writeFile(t, doc)
	_, err := load(t, []string{"--config", path}, nil)
	want := "config: " + path + ": the file is larger than 1 MiB (1048576 bytes), the most a config file may be"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	// Just under it, it is read.
	if c, err := load(t, []string{"--config", writeFile(t, doc[:maxFileSize])}, nil); err != nil || c.ID != 1 {
		t.Errorf("a file of 1 MiB: id %d, %v", c.ID, err)
	}
}

func TestLoadWarnings(t *testing.T) {
	file := writeFile(t, "id = 4\n")
	c, warnings, err := loadWarn(t, nil, []string{
		"HUDDLE_BIN=/usr/local/bin/huddle", "HUDDLE_HEARTBAET=1s", "HUDDLE_HOME=/home/h", "HUDDLE_MIN_DELAY=1ms",
		"HUDDLE_CONFIG=" + file, "HUDDLE_TEST_SOAK=1", "HUDDLE_SRM_C=1", "HUDDLE_LEVEL=debug", "HUDDLE_TTL=2",
	})
	if err != nil || c.ID != 4 || c.TTL != 2 {
		t.Fatalf("id %d, ttl %d, %v; want 4, 2 and no error", c.ID, c.TTL, err)
	}
	want := []string{
		"HUDDLE_BIN is not a setting; ignoring it",
		"HUDDLE_HEARTBAET is not a setting; did you mean HUDDLE_HEARTBEAT?",
		"HUDDLE_HOME is not a setting; ignoring it",
		"HUDDLE_MIN_DELAY is not a setting; did you mean HUDDLE_SRM_MIN_DELAY?",
		"HUDDLE_SRM_C is not a setting; ignoring it", // srm.c1 or srm.c2?
		"HUDDLE_LEVEL is not a setting; did you mean HUDDLE_LOG_LEVEL?",
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	// Warnings come with an error too, so that both are shown.
	_, warnings, err = loadWarn(t, nil, []string{"HUDDLE_HEARTBEET=1s", "HUDDLE_TTL=0"})
	if err == nil || len(warnings) != 1 {
		t.Errorf("with an error: warnings %q, error %v", warnings, err)
	}
}

func TestLoadWithoutFlags(t *testing.T) {
	c, warnings, err := Load(nil, nil, []string{"HUDDLE_ID=3"})
	if err != nil || c.ID != 3 || warnings != nil {
		t.Errorf("Load(nil, nil, env) = id %d, %q, %v", c.ID, warnings, err)
	}
}

// everything returns a valid Config in which every field differs from LAN.
func everything() Config {
	return Config{
		Profile:          ProfileLocal,
		ID:               42,
		Group:            "team",
		Addr:             "239.1.2.3:9000",
		Iface:            "eth1",
		TTL:              4,
		Loopback:         false,
		DatagramSize:     9000,
		RecvBuffer:       1 << 20,
		BusyPoll:         ms(1),
		Sequencer:        "coordinator",
		Heartbeat:        ms(30),
		SuspectTimeout:   ms(300),
		JoinTimeout:      ms(250),
		Transport:        "unicast",
		Peers:            AddrList{"10.0.0.2:7468", "node3"},
		Listen:           "10.0.0.1:7500",
		PeersOnly:        true,
		Quorum:           "static",
		QuorumExpected:   5,
		QuorumTieBreaker: 3,
		QuorumWaitForAll: true,
		StateMaxSize:     1 << 20,
		StatsInterval:    0,
		SendWindow:       128,
		MaxMessageSize:   65536,
		SendRate:         2000,
		SendSize:         100,
		SendCount:        5000,
		SendOrder:        "safe",
		ControlSocket:    "/run/huddle/team.sock",
		Duration:         ms(60000),
		TraceDeliveries:  true,
		SRM:              SRM{C1: 1.5, C2: 2.5, D1: 0.5, D2: 2.25, MinDelay: ms(2)},
		Log:              Log{Level: "debug", Format: "console", File: "/var/log/huddle.log"},
		Election: Election{Algorithm: "bully", Every: ms(1500), Count: 7, RingOrder: "join", HopDelay: ms(250),
			AnswerTimeout: ms(900), CoordinatorTimeout: ms(2000)},
		Mutex:    Mutex{Quorum: 5, Algorithm: "ra", Think: "3s-5s", Hold: ms(4000)},
		KV:       KV{Keys: 1000, Rate: 50, Size: 200, Fill: true},
		Security: Security{Key: "0123456789abcdef-'\"x"},
		Drop:     Drop{Rate: 0.25, From: IDList{3, 4}, Seed: 9, Burst: 2.5},
		Metrics:  Metrics{Addr: "127.0.0.1:9468", Pprof: true},
	}
}

// TestEveryFieldHasFlagAndEnv fails for a field added to Config without a
// usage line, or without a value in everything() to prove it loads.
func TestEveryFieldHasFlagAndEnv(t *testing.T) {
	lan := LAN()
	lanByKey := settingsByKey(&lan)
	// everything() sets every setting but those it cannot set together
	// with another (security.key_file, beside security.key); the others
	// set those.
	variants := []Config{everything(), everythingElse()}
	differs := map[string]bool{}
	for _, all := range variants {
		var env, args []string
		for _, s := range settings(&all) {
			if s.String() != lanByKey[s.key].String() {
				differs[s.key] = true
			}
			env = append(env, envName(s.key)+"="+s.String())
			args = append(args, "--"+flagName(s.key)+"="+s.String())
		}
		for name, src := range map[string]struct{ args, env []string }{"env": {nil, env}, "flags": {args, nil}} {
			got, err := load(t, src.args, src.env)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !reflect.DeepEqual(got, all) {
				t.Errorf("%s:\ngot  %+v\nwant %+v", name, got, all)
			}
		}
	}
	for _, s := range settings(&lan) {
		if !differs[s.key] {
			t.Errorf("%s: everything() or everythingElse() must differ from LAN", s.key)
		}
		if usage[s.key] == "" {
			t.Errorf("%s: no usage line", s.key)
		}
	}
	if len(usage) != len(settings(&lan)) {
		t.Errorf("usage has %d lines for %d settings", len(usage), len(settings(&lan)))
	}
}

// everythingElse is everything() with the settings it cannot hold at once.
func everythingElse() Config {
	c := everything()
	c.Security = Security{KeyFile: "/etc/huddle/group.key"}
	c.Mutex.Quorum, c.Mutex.Algorithm = 0, "token" // quorum mode is Ricart–Agrawala's
	return c
}

func TestTOMLRoundTrip(t *testing.T) {
	for _, c := range []Config{LAN(), Local(), everything(), everythingElse()} {
		doc := c.TOML()
		got, err := load(t, []string{"--config", writeFile(t, string(doc))}, nil)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("round trip:\ngot  %+v\nwant %+v\n%s", got, c, doc)
		}
	}
	if doc := string(LAN().TOML()); !strings.Contains(doc, "heartbeat = '50ms'") || !strings.HasPrefix(doc, "# ") {
		t.Errorf("TOML() lacks the header or a duration as text:\n%s", doc)
	}
}

func TestTOMLInvalidID(t *testing.T) {
	c := LAN()
	c.ID = 1 << 63
	if doc := string(c.TOML()); !strings.Contains(doc, "# cannot encode") {
		t.Errorf("TOML() of an invalid ID:\n%s", doc)
	}
}

func TestDurationText(t *testing.T) {
	for _, s := range []string{"0s", "400ms", "1.5s", "1m0s", "1h30m0s", "250µs"} {
		var d Duration
		if err := d.UnmarshalText([]byte(s)); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if b, _ := d.MarshalText(); string(b) != s {
			t.Errorf("%s: round trip gives %s", s, b)
		}
	}
	for text, want := range map[string]string{
		"fast":                 `"fast" is not a duration (examples: 400ms, 1.5s)`,
		"50":                   `50 has no unit (units: ns, us, ms, s, m, h; e.g. 50ms)`,
		"-1.5":                 `-1.5 has no unit (units: ns, us, ms, s, m, h; e.g. -1.5ms)`,
		"1.":                   `1. has no unit (units: ns, us, ms, s, m, h; e.g. 1.ms)`,
		"1e3":                  `"1e3" is not a duration (examples: 400ms, 1.5s)`,
		"--5":                  `"--5" is not a duration (examples: 400ms, 1.5s)`,
		".":                    `"." is not a duration (examples: 400ms, 1.5s)`,
		"1.2.3":                `"1.2.3" is not a duration (examples: 400ms, 1.5s)`,
		"99999999999999999999": `"99999999999999999999" is not a duration (examples: 400ms, 1.5s)`,
	} {
		var d Duration
		if err := d.UnmarshalText([]byte(text)); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", text, err, want)
		}
	}
	var d Duration = 5
	if err := d.UnmarshalText([]byte("0")); err != nil || d != 0 {
		t.Errorf("0: %v, %v", d, err)
	}
}

// TestLoadPeersList: peers is a list of strings in a file, or one string
// of commas; a list with a number in it is refused, naming the key.
func TestLoadPeersList(t *testing.T) {
	got, err := load(t, []string{"--config", writeFile(t, "transport = \"unicast\"\npeers = [\"10.0.0.2:7468\", \"node3\"]\n")}, nil)
	if err != nil || !reflect.DeepEqual(got.Peers, AddrList{"10.0.0.2:7468", "node3"}) {
		t.Fatalf("peers %v, %v", got.Peers, err)
	}
	got, err = load(t, []string{"--config", writeFile(t, "transport = \"unicast\"\npeers = \"a:1, b:2\"\n")}, nil)
	if err != nil || !reflect.DeepEqual(got.Peers, AddrList{"a:1", "b:2"}) {
		t.Fatalf("peers %v, %v", got.Peers, err)
	}
	if _, err := load(t, []string{"--config", writeFile(t, "transport = \"unicast\"\npeers = [\"a\", 7]\n")}, nil); err == nil || !strings.Contains(err.Error(), "peers") {
		t.Fatalf("a number in peers: %v", err)
	}
}
