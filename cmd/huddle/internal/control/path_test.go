package control

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/huddle-lan/huddle/config"
)

func TestDefaultDir(t *testing.T) {
	for _, c := range []struct {
		xdg  string
		want string
	}{
		{"/run/user/1000", "/run/user/1000/huddle"},
		{"/run/user/1000/", "/run/user/1000/huddle"},
		{"", "/tmp/huddle-1000"},
		{"relative/dir", "/tmp/huddle-1000"}, // the XDG spec: ignore a relative path
	} {
		if got := defaultDir(c.xdg, 1000); got != c.want {
			t.Errorf("XDG_RUNTIME_DIR=%q: %s, want %s", c.xdg, got, c.want)
		}
	}
}

func TestPath(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/7")
	for _, c := range []struct {
		socket, group string
		id            uint64
		want          string
	}{
		{"", "huddle", 1, "/run/user/7/huddle/huddle-1.sock"},
		{"", "lab", 167772165, "/run/user/7/huddle/lab-167772165.sock"},
		{"/srv/n.sock", "huddle", 1, "/srv/n.sock"},
		{"off", "huddle", 1, ""},
	} {
		cfg := config.LAN()
		cfg.ControlSocket, cfg.Group, cfg.ID = c.socket, c.group, c.id
		if got := Path(cfg); got != c.want {
			t.Errorf("control_socket %q, group %q, id %d: %q, want %q", c.socket, c.group, c.id, got, c.want)
		}
	}
}

func TestSocketName(t *testing.T) {
	for _, c := range []struct {
		group string
		id    uint64
		want  string
	}{
		{"huddle", 1, "huddle-1.sock"},
		{"my-group_2.x", 18446744073709551615, "my-group_2.x-18446744073709551615.sock"},
		{"a/b", 3, "a%2Fb-3.sock"},
		{"..", 3, "..-3.sock"},
		{"50% off", 3, "50%25%20off-3.sock"},
		{"grüppe", 3, "gr%C3%BCppe-3.sock"},
		{"\x00", 3, "%00-3.sock"},
	} {
		got := SocketName(c.group, c.id)
		if got != c.want {
			t.Errorf("SocketName(%q, %d) = %q, want %q", c.group, c.id, got, c.want)
		}
		if g, id, ok := parseSocketName(got); !ok || g != c.group || id != c.id {
			t.Errorf("parseSocketName(%q) = %q, %d, %v; want %q, %d", got, g, id, ok, c.group, c.id)
		}
	}
	for _, name := range []string{"huddle.sock", "-1.sock", "huddle-x.sock", "huddle-1.socket", "a%2-1.sock", "a%zz-1.sock"} {
		if g, id, ok := parseSocketName(name); ok {
			t.Errorf("parseSocketName(%q) = %q, %d; want no match", name, g, id)
		}
	}
}

func TestCandidates(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"lab-2.sock", "huddle-10.sock", "huddle-9.sock", "a%2Fb-1.sock", "junk.sock"} {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, name), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close()
	}
	os.WriteFile(filepath.Join(dir, "huddle-3.sock"), nil, 0o600) // not a socket
	got, err := Candidates(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Candidate{
		{filepath.Join(dir, "a%2Fb-1.sock"), "a/b", 1},
		{filepath.Join(dir, "huddle-9.sock"), "huddle", 9},
		{filepath.Join(dir, "huddle-10.sock"), "huddle", 10},
		{filepath.Join(dir, "lab-2.sock"), "lab", 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Candidates:\n got %v\nwant %v", got, want)
	}
	if f := want[0].Flags(); f != "--group a/b --id 1" {
		t.Errorf("Flags: %q", f)
	}
	if f := (Candidate{Group: "my group"}).Flags(); f != "--group 'my group' --id 0" {
		t.Errorf("Flags: %q", f)
	}
	if got, err := Candidates(filepath.Join(dir, "missing")); got != nil || err != nil {
		t.Errorf("Candidates of a missing directory: %v, %v", got, err)
	}
}
