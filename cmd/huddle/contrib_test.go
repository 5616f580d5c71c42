//go:build linux

package main

import (
	"bufio"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// TestContribCompose: each service of the Compose example has settings
// that load and validate as huddle run reads them (its environment, then
// its command's flags), on the unicast transport with the services as
// peers; and the image its Dockerfile builds is this module's command.
// Docker itself is not run here (docs/configuration.md, "Containers",
// says what was tried).
func TestContribCompose(t *testing.T) {
	raw, err := os.ReadFile("../../contrib/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	services := map[string][]string{}
	var service string
	for _, line := range strings.Split(string(raw), "\n") {
		switch trimmed := strings.TrimSpace(line); {
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(trimmed, ":"):
			service = strings.TrimSuffix(trimmed, ":")
		case strings.HasPrefix(trimmed, "HUDDLE_"):
			k, v, _ := strings.Cut(trimmed, ":")
			services[service] = append(services[service], k+"="+strings.Trim(strings.TrimSpace(v), `"`))
		}
	}
	if len(services) != 3 {
		t.Fatalf("contrib/compose.yaml: %d services with HUDDLE_ settings, want 3: %v", len(services), services)
	}
	ids := map[uint64]bool{}
	for name, env := range services {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		flags := config.AddFlags(fs)
		if err := fs.Parse([]string{"--send-rate", "10", "--send-order", "total"}); err != nil {
			t.Fatal(err)
		}
		cfg, warnings, err := config.Load(fs, flags, env)
		if err != nil || len(warnings) > 0 {
			t.Fatalf("service %s: %v %v", name, err, warnings)
		}
		if cfg.Transport != "unicast" || !slices.Contains(cfg.Peers, name+":7468") {
			t.Errorf("service %s: transport %q, peers %v: want unicast, with the service itself among the peers", name, cfg.Transport, cfg.Peers)
		}
		ids[cfg.ID] = true
	}
	if len(ids) != 3 {
		t.Errorf("the services' IDs %v are not three different ones", ids)
	}
	docker, err := os.ReadFile("../../contrib/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	_, goVersion, _ := strings.Cut(string(mod), "\ngo ")
	goVersion, _, _ = strings.Cut(goVersion, "\n")
	minor := strings.Join(strings.SplitN(goVersion, ".", 3)[:2], ".")
	if !strings.Contains(string(docker), "FROM golang:"+minor+" ") || !strings.Contains(string(docker), "./cmd/huddle") {
		t.Errorf("contrib/Dockerfile must build ./cmd/huddle with Go %s (go.mod's %s)", minor, goVersion)
	}
}
