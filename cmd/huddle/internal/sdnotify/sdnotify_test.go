package sdnotify

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func listen(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Skipf("no unixgram sockets here: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

func TestNotify(t *testing.T) {
	c, path := listen(t)
	t.Setenv("NOTIFY_SOCKET", path)
	n := FromEnv()
	if !n.Enabled() {
		t.Fatal("not enabled with NOTIFY_SOCKET set")
	}
	if err := n.Notify(Ready, Status("member of view 3.2\n(2 members)")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	k, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(buf[:k]), "READY=1\nSTATUS=member of view 3.2 (2 members)"; got != want {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

func TestNotifyWithoutManager(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := FromEnv()
	if n.Enabled() || n.Notify(Ready) != nil {
		t.Fatal("a notifier without NOTIFY_SOCKET must do nothing")
	}
}

func TestWatchdogInterval(t *testing.T) {
	for _, c := range []struct {
		usec, pid string
		want      time.Duration
		bad       bool
	}{
		{"", "", 0, false},
		{"2000000", "", 2 * time.Second, false},
		{"2000000", strconv.Itoa(os.Getpid()), 2 * time.Second, false},
		{"2000000", strconv.Itoa(os.Getpid() + 1), 0, false}, // another process's
		{"0", "", 0, true},
		{"abc", "", 0, true},
		{"2000000", "x", 0, true},
	} {
		t.Setenv("WATCHDOG_USEC", c.usec)
		t.Setenv("WATCHDOG_PID", c.pid)
		got, err := WatchdogInterval()
		if got != c.want || (err != nil) != c.bad {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v, %v; want %v, error %v", c.usec, c.pid, got, err, c.want, c.bad)
		}
	}
}
