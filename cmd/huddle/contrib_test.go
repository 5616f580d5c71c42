//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/huddle-lan/huddle/config"
)

// requireSystemdEnv makes TestSystemdUnit fail, not skip, without
// systemd-analyze: CI sets it, and installs systemd.
const requireSystemdEnv = "HUDDLE_TEST_REQUIRE_SYSTEMD_ANALYZE"

// TestSystemdUnit: contrib/huddle.service passes `systemd-analyze
// verify` (with ExecStart pointing at a real build), and keeps the
// settings operations.md relies on: notify with the watchdog, no restart
// for a bad configuration (2) or a refusal (3), the sandbox that still
// allows multicast.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("../../contrib/huddle.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "WatchdogSec=", "RestartPreventExitStatus=2 3", "Restart=on-failure",
		"RestrictAddressFamilies=AF_INET AF_UNIX AF_NETLINK", "ExecStart=/usr/local/bin/huddle run --config /etc/huddle/huddle.toml",
		"EnvironmentFile=-/etc/huddle/huddle.env", "ExecReload=/bin/kill -HUP $MAINPID", "RuntimeDirectory=huddle"} {
		if !strings.Contains(string(unit), "\n"+want) {
			t.Errorf("contrib/huddle.service has no line %q", want)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv(requireSystemdEnv) != "" {
			t.Fatalf("systemd-analyze is not installed, and %s is set", requireSystemdEnv)
		}
		t.Skip("systemd-analyze is not installed (apt-get install systemd): the unit is not verified")
	}
	bin := buildHuddle(t)
	path := filepath.Join(t.TempDir(), "huddle.service")
	local := strings.ReplaceAll(string(unit), "/usr/local/bin/huddle", bin)
	if err := os.WriteFile(path, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestContribConfig: the example configuration loads and validates, and
// every variable the environment file names is a setting.
func TestContribConfig(t *testing.T) {
	if _, warnings, err := config.Load(nil, nil, []string{"HUDDLE_CONFIG=../../contrib/huddle.toml"}); err != nil || len(warnings) > 0 {
		t.Fatalf("contrib/huddle.toml: %v %v", err, warnings)
	}
	f, err := os.Open("../../contrib/huddle.env")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var env []string
	for s := bufio.NewScanner(f); s.Scan(); {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s.Text()), "#"))
		if k, _, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "HUDDLE_") && !strings.Contains(k, " ") {
			env = append(env, line)
		}
	}
	if len(env) == 0 {
		t.Fatal("contrib/huddle.env names no HUDDLE_ variable")
	}
	if _, warnings, err := config.Load(nil, nil, env); err != nil || len(warnings) > 0 {
		t.Fatalf("contrib/huddle.env: %v %v", err, warnings)
	}
}
