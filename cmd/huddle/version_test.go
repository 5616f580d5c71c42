package main

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/huddle-lan/huddle/internal/wire"
)

const modulePath = "github.com/huddle-lan/huddle"

// checkVersionJSON checks huddle version --json's output: every field, the
// module, the wire version, and no field left at an old placeholder.
func checkVersionJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("huddle version --json: not one JSON object on one line (%v): %q", err, out)
	}
	want := []string{"module", "version", "revision", "modified", "vcs_time", "go", "os", "arch", "wire"}
	for k := range v {
		if !slices.Contains(want, k) {
			t.Errorf("unexpected field %q in %s", k, out)
		}
	}
	for _, k := range want {
		if _, ok := v[k]; !ok {
			t.Errorf("no field %q in %s", k, out)
		}
	}
	if v["module"] != modulePath || v["wire"] != float64(wire.Version) || v["version"] == "" ||
		v["go"] != runtime.Version() || v["os"] != runtime.GOOS || v["arch"] != runtime.GOARCH {
		t.Errorf("huddle version --json: %s; want module %s, wire %d, a version, and this Go and system", out, modulePath, wire.Version)
	}
	for k, x := range v {
		if s, ok := x.(string); ok && (s == "dev" || s == "unknown") {
			t.Errorf("field %s is %q: %s", k, s, out)
		}
	}
	return v
}

// The test binary has build information too: module, "(devel)", Go.
func TestVersion(t *testing.T) {
	for _, cmd := range []string{"version", "--version", "-version"} {
		code, stdout, stderr := runMain(t, cmd)
		if code != exitOK || stderr != "" || stdout != readBuildInfo().String()+"\n" {
			t.Errorf("huddle %s: exit %d, stdout %q, stderr %q", cmd, code, stdout, stderr)
		}
		for _, want := range []string{"huddle ", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH, ", wire version 4"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("huddle %s: %q does not contain %q", cmd, stdout, want)
			}
		}
		if f := strings.Fields(stdout); len(f) < 2 || f[1] == "dev" {
			t.Errorf("huddle %s: %q", cmd, stdout)
		}
		code, stdout, stderr = runMain(t, cmd, "--json")
		if code != exitOK || stderr != "" {
			t.Errorf("huddle %s --json: exit %d, stderr %q", cmd, code, stderr)
		}
		checkVersionJSON(t, stdout)
	}
	if code, _, stderr := runMain(t, "version", "extra"); code != exitUsage || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Errorf("huddle version extra: exit %d, stderr %q; want %d", code, stderr, exitUsage)
	}
	if code, stdout, _ := runMain(t, "version", "--help"); code != exitOK || !strings.HasPrefix(stdout, "Usage: huddle version [--json]") {
		t.Errorf("huddle version --help: exit %d, stdout %q", code, stdout)
	}
}

// What a build in a repository records, and what it prints.
func TestVersionLine(t *testing.T) {
	sys := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ", wire version 4"
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	main := func(version string) debug.Module { return debug.Module{Path: modulePath, Version: version} }
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go build in a modified checkout",
			&debug.BuildInfo{Main: main("v0.0.0-20261123100000-9a5405e1c2ab+dirty"), Settings: vcs(
				"GOOS", "linux", "vcs", "git", "vcs.revision", "9a5405e1c2ab3f1e6a3d1c0b2a4f5e6d7c8b9a00",
				"vcs.time", "2026-11-23T10:00:00Z", "vcs.modified", "true")},
			"huddle v0.0.0-20261123100000-9a5405e1c2ab+dirty (revision 9a5405e1c2, dirty; committed 2026-11-23T10:00:00Z) " + sys},
		{"a clean tag",
			&debug.BuildInfo{Main: main("v1.2.0"), Settings: vcs(
				"vcs.revision", "9a5405e1c2ab3f1e6a3d1c0b2a4f5e6d7c8b9a00", "vcs.time", "2026-11-23T10:00:00Z", "vcs.modified", "false")},
			"huddle v1.2.0 (revision 9a5405e1c2; committed 2026-11-23T10:00:00Z) " + sys},
		{"go install module@version", &debug.BuildInfo{Main: main("v1.2.0")}, "huddle v1.2.0 " + sys},
		{"go run", &debug.BuildInfo{Main: main("(devel)")}, "huddle (devel) (no revision recorded) " + sys},
		{"no build information", nil, "huddle unknown " + sys},
	} {
		b := fromBuildInfo(tt.bi)
		if got := b.String(); got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.name, got, tt.want)
		}
	}
	b := fromBuildInfo(&debug.BuildInfo{Main: main("v1.2.0"), Settings: vcs("vcs.revision", "abc", "vcs.modified", "true", "vcs.time", "2026-11-23T10:00:00Z")})
	want := buildInfo{Module: modulePath, Version: "v1.2.0", Revision: "abc", Modified: true, VCSTime: "2026-11-23T10:00:00Z",
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Wire: wire.Version}
	if b != want {
		t.Errorf("fromBuildInfo:\ngot  %+v\nwant %+v", b, want)
	}
}
