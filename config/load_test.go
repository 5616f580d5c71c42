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

// load runs AddFlags, Parse and Load as huddle run does.
func load(t *testing.T, args, env []string) (Config, error) {
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
			env:  []string{"HUDDLE_ID=", "HUDDLE_PROFILE=", "HUDDLE_TEST_SEED=1", "HUDDLE_TEST_ANYTHING=x"},
			want: func(c *Config) {},
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
			want: []string{`config: <file>: unknown key "hearbeat"`, `config: <file>: unknown key "srm.c9"`},
		},
		{
			name: "syntax error names the line",
			file: "id = 1\n[srm\n",
			want: []string{`config: <file>:2: expected ']' to close table name`},
		},
		{
			name: "file value of the wrong type",
			file: "\nid = \"abc\"\n",
			want: []string{`config: <file>:2: id: "abc" is not a number`},
		},
		{
			name: "file number in quotes",
			file: "ttl = \"5\"\n",
			want: []string{`config: <file>:1: ttl: "5" is a string; write it without quotes`},
		},
		{
			name: "file duration",
			file: "heartbeat = \"fast\"\n",
			want: []string{`config: <file>:1: heartbeat: "fast" is not a duration (examples: 400ms, 1.5s)`},
		},
		{
			name: "bad profile in file",
			file: "profile = \"fast\"\n",
			want: []string{`config: profile (<file>): "fast" is not a profile (lan, local)`},
		},
		{
			name: "unknown and bad variables",
			env:  []string{"HUDDLE_HEARTBEET=1s", "HUDDLE_ID=abc", "HUDDLE_LOOPBACK=maybe"},
			want: []string{
				`config: HUDDLE_HEARTBEET: unknown environment variable (HUDDLE_ + a config key, e.g. HUDDLE_SRM_C1)`,
				`config: id (HUDDLE_ID): "abc" is not a number`,
				`config: loopback (HUDDLE_LOOPBACK): "maybe" is not a boolean (true or false)`,
			},
		},
		{
			name: "bad profile in env",
			env:  []string{"HUDDLE_PROFILE=wan"},
			want: []string{`config: profile (HUDDLE_PROFILE): "wan" is not a profile (lan, local)`},
		},
		{
			name: "bad flags",
			args: []string{"--id", "abc", "--heartbeat", "fast", "--loopback=maybe", "--ttl=1.5", "--srm-c1=x"},
			want: []string{
				`config: heartbeat: "fast" is not a duration (examples: 400ms, 1.5s)`,
				`config: id: "abc" is not a number`,
				`config: loopback: "maybe" is not a boolean (true or false)`,
				`config: srm.c1: "x" is not a number`,
				`config: ttl: "1.5" is not a number`,
			},
		},
		{
			name: "numbers out of range",
			args: []string{"--id=-1", "--send-window=99999999999999999999"},
			want: []string{
				`config: id: "-1" is negative (0 to 2^63-1)`,
				`config: send_window: "99999999999999999999" is out of range`,
			},
		},
		{
			name: "validation after loading",
			env:  []string{"HUDDLE_ADDR=10.0.0.1:7468"},
			args: []string{"--ttl=0"},
			want: []string{
				`config: addr: 10.0.0.1 is not a multicast address (224.0.0.0/4)`,
				`config: ttl: 0 is out of range (1 to 255)`,
			},
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

func TestLoadWithoutFlags(t *testing.T) {
	c, err := Load(nil, nil, []string{"HUDDLE_ID=3"})
	if err != nil || c.ID != 3 {
		t.Errorf("Load(nil, nil, env) = id %d, %v", c.ID, err)
	}
}

// everything returns a valid Config in which every field differs from LAN.
func everything() Config {
	return Config{
		Profile:         ProfileLocal,
		ID:              42,
		Group:           "team",
		Addr:            "239.1.2.3:9000",
		Iface:           "eth1",
		TTL:             4,
		Loopback:        false,
		DatagramSize:    9000,
		RecvBuffer:      1 << 20,
		Heartbeat:       ms(30),
		SuspectTimeout:  ms(300),
		JoinTimeout:     ms(250),
		StatsInterval:   0,
		SendWindow:      128,
		MaxMessageSize:  65536,
		SendRate:        2000,
		SendSize:        100,
		SendCount:       5000,
		SendOrder:       "safe",
		ControlSocket:   "/run/huddle/team.sock",
		Duration:        ms(60000),
		TraceDeliveries: true,
		SRM:             SRM{C1: 1.5, C2: 2.5, D1: 0.5, D2: 2.25, MinDelay: ms(2)},
		Log:             Log{Level: "debug", Format: "console", File: "/var/log/huddle.log"},
		Election:        Election{Algorithm: "bully", Every: ms(1500), Count: 7},
		Mutex:           Mutex{Quorum: 5, Think: "3s-5s", Hold: ms(4000)},
		Security:        Security{Key: "0123456789abcdef-'\"x"},
		Drop:            Drop{Rate: 0.25, From: IDList{3, 4}, Seed: 9},
	}
}

// TestEveryFieldHasFlagAndEnv fails for a field added to Config without a
// usage line, or without a value in everything() to prove it loads.
func TestEveryFieldHasFlagAndEnv(t *testing.T) {
	all, lan := everything(), LAN()
	lanByKey := settingsByKey(&lan)
	var env, args []string
	for _, s := range settings(&all) {
		if s.String() == lanByKey[s.key].String() {
			t.Errorf("%s: everything() must differ from LAN", s.key)
		}
		if usage[s.key] == "" {
			t.Errorf("%s: no usage line", s.key)
		}
		env = append(env, envName(s.key)+"="+s.String())
		args = append(args, "--"+flagName(s.key)+"="+s.String())
	}
	if len(usage) != len(settings(&all)) {
		t.Errorf("usage has %d lines for %d settings", len(usage), len(settings(&all)))
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

func TestTOMLRoundTrip(t *testing.T) {
	for _, c := range []Config{LAN(), Local(), everything()} {
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
	var d Duration
	err := d.UnmarshalText([]byte("fast"))
	if want := `"fast" is not a duration (examples: 400ms, 1.5s)`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
