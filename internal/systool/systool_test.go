package systool

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPathOutsidePATH finds a command in Dirs when PATH does not name its
// directory, as iptables in /usr/sbin for an ordinary Debian user.
func TestPathOutsidePATH(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "hudtool-test")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := Dirs
	Dirs = []string{dir}
	t.Cleanup(func() { Dirs = saved; cache.Delete("hudtool-test"); cache.Delete("hudtool-missing") })
	t.Setenv("PATH", "/nonexistent")
	p, err := Path("hudtool-test")
	if err != nil || p != tool {
		t.Fatalf("Path = %q, %v; want %q", p, err, tool)
	}
	out, err := Command("hudtool-test").Output()
	if err != nil || string(out) != "hi\n" {
		t.Fatalf("Command: %q, %v", out, err)
	}
	if _, err := Path("hudtool-missing"); !IsNotFound(err) {
		t.Fatalf("Path of a missing command: %v", err)
	}
	if err := Command("hudtool-missing").Run(); !IsNotFound(err) {
		t.Fatalf("Run of a missing command: %v", err)
	}
	if Have("hudtool-missing") || !Have("hudtool-test") {
		t.Fatal("Have is wrong")
	}
}
