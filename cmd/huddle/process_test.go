//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logx"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// binEnv passes the huddle binary, built once in the ordinary test process,
// to the test re-run in a private network namespace.
const binEnv = "HUDDLE_TEST_HUDDLE_BIN"

// buildHuddle builds this command into a temporary directory.
func buildHuddle(t *testing.T) string {
	t.Helper()
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Skip("needs the go command to build huddle")
		}
	}
	bin := filepath.Join(t.TempDir(), "huddle")
	out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestProcess runs the huddle binary as a user would, in a private network
// namespace where lo is the only interface: every node the test starts
// sends only there. The binary is built once, outside the namespace.
func TestProcess(t *testing.T) {
	if os.Getenv(testutil.NetnsEnv) == "" {
		t.Setenv(binEnv, buildHuddle(t))
	}
	if !testutil.PrivateNetwork(t) {
		return
	}
	bin := os.Getenv(binEnv)
	if bin == "" {
		t.Fatalf("%s is not set", binEnv)
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // the nodes' control sockets

	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			n := startProc(t, bin, 1)
			n.waitEvent(t, 5*time.Second, logs.NodeStarted, nil)
			time.Sleep(100 * time.Millisecond) // a few heartbeats, so that there are stats
			n.stop(t, sig)
			lines := checkJSONLog(t, n.log, 1)
			want := map[syscall.Signal]string{syscall.SIGTERM: "terminated", syscall.SIGINT: "interrupt"}[sig]
			checkLastEvents(t, lines, want)
			if s := lines[len(lines)-2]; num(s["sessions_sent"]) == 0 {
				t.Errorf("the exit stats count no session sent: %v", s)
			}
		})
	}

	t.Run("two nodes", func(t *testing.T) {
		n1, n2 := startProc(t, bin, 1), startProc(t, bin, 2)
		n1.waitEvent(t, 5*time.Second, logs.PeerSeen, func(l logLine) bool { return num(l[logs.PeerKey]) == 2 })
		n2.waitEvent(t, 5*time.Second, logs.PeerSeen, func(l logLine) bool { return num(l[logs.PeerKey]) == 1 })
		n2.stop(t, syscall.SIGTERM)
		stopped := lastEvent(t, checkJSONLog(t, n2.log, 2), logs.NodeStopped)

		// The local profile suspects a peer after 150ms of silence.
		const suspect, slack = 150 * time.Millisecond, 850 * time.Millisecond
		lost := n1.waitEvent(t, suspect+slack+time.Second, logs.PeerLost, func(l logLine) bool { return num(l[logs.PeerKey]) == 2 })
		if silent := num(lost[logs.SilentMsKey]); silent < suspect.Milliseconds() {
			t.Errorf("peer.lost after %dms of silence, want at least %v: %v", silent, suspect, lost)
		}
		if d := lost.time(t).Sub(stopped.time(t)); d > suspect+slack || d < 0 {
			t.Errorf("node 1 logged peer.lost %v after node 2 stopped, want within %v", d, suspect+slack)
		}
		n1.stop(t, syscall.SIGTERM)
		lines := checkJSONLog(t, n1.log, 1)
		checkLastEvents(t, lines, "terminated")
	})

	t.Run("refused", func(t *testing.T) {
		n1 := startProc(t, bin, 1)
		n1.waitEvent(t, 5*time.Second, logs.ViewInstalled, nil)
		// A second live node with ID 1 is refused, naming the first one's
		// address; so is a node whose heartbeat differs from the group's.
		// Its own socket (off): the group, not the control socket, must refuse it.
		twin := startProc(t, bin, 1, "--control-socket", "off")
		odd := startProc(t, bin, 2, "--heartbeat", "40ms")
		for _, c := range []struct {
			p    *proc
			want string
		}{{twin, "another live node at 127.0.0.1 uses ID 1"}, {odd, `heartbeat is "40ms" but the group's`}} {
			select {
			case <-c.p.done:
			case <-time.After(10 * time.Second):
				t.Fatalf("not refused within 10s (want %q):\n%s\n%s", c.want, c.p.stderr, readFile(c.p.log))
			}
			if code := c.p.cmd.ProcessState.ExitCode(); code != exitRefused || !strings.Contains(c.p.stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, c.p.stderr, exitRefused, c.want)
			}
		}
		n1.checkRunning(t)
		n1.stop(t, syscall.SIGTERM)
	})

	t.Run("bogus interface", func(t *testing.T) {
		code, stderr := runBinary(t, bin, "run", "--id", "1", "--iface", "bogus0")
		if code != exitFailure || !strings.Contains(stderr, `config: iface: "bogus0" does not exist (interfaces: lo)`) {
			t.Errorf("exit %d, stderr %q; want %d and the interface named", code, stderr, exitFailure)
		}
	})

	t.Run("version", func(t *testing.T) {
		// A real build: the module's path, a version ("(devel)" where go
		// build records no VCS information), and the revision in the
		// line when it does.
		code, out := runBinary(t, bin, "version", "--json")
		if code != exitOK {
			t.Fatalf("huddle version --json: exit %d: %s", code, out)
		}
		v := checkVersionJSON(t, out)
		code, line := runBinary(t, bin, "version")
		if rev, _ := v["revision"].(string); code != exitOK || !strings.HasPrefix(line, "huddle "+v["version"].(string)+" ") || !strings.Contains(line, rev[:min(len(rev), 10)]) {
			t.Errorf("huddle version: exit %d, %q; want the version and revision of %s", code, line, out)
		}
	})

	t.Run("bad flag", func(t *testing.T) {
		code, stderr := runBinary(t, bin, "run", "--iface", "lo", "--id", "abc")
		if code != exitUsage || !strings.Contains(stderr, `config: --id: id: "abc" is not a number`) {
			t.Errorf("exit %d, stderr %q; want %d and the validation message", code, stderr, exitUsage)
		}
	})

	t.Run("unknown variable", func(t *testing.T) {
		// A HUDDLE_ variable that is no setting is warned of; the node runs.
		log := filepath.Join(t.TempDir(), "node.log")
		cmd := exec.Command(bin, "run", "--profile", "local", "--iface", "lo", "--id", "1", "--log-file", log, "--duration", "300ms")
		cmd.Env = append(testEnv(), "HUDDLE_BIN="+bin, "HUDDLE_HEARTBAET=20ms")
		out, err := cmd.CombinedOutput()
		want := "huddle: warning: HUDDLE_BIN is not a setting; ignoring it\n" +
			"huddle: warning: HUDDLE_HEARTBAET is not a setting; did you mean HUDDLE_HEARTBEAT?\n"
		if err != nil || string(out) != want {
			t.Errorf("%v, output:\n%s\nwant:\n%s", err, out, want)
		}
		checkLastEvents(t, checkJSONLog(t, log, 1), "duration")
	})

	t.Run("port in use", func(t *testing.T) {
		// A socket without SO_REUSEADDR on the group's address and port
		// (Go's net package would set it for a multicast address).
		const port = 17468
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{239, 192, 72, 68}}); err != nil {
			t.Skipf("cannot bind the group address to hold its port: %v", err)
		}
		log := filepath.Join(t.TempDir(), "node.log")
		code, stderr := runBinary(t, bin, "run", "--profile", "local", "--iface", "lo", "--id", "1",
			"--addr", fmt.Sprintf("239.192.72.68:%d", port), "--log-file", log, "--duration", "5s")
		if code != exitFailure || !strings.Contains(stderr, "address in use") {
			t.Errorf("exit %d, stderr %q; want %d and the address in use", code, stderr, exitFailure)
		}
		lines := checkJSONLog(t, log, 1)
		if last := lines[len(lines)-1]; last[logs.EventKey] != logs.NodeFailed || last[logs.LevelKey] != logs.LevelError {
			t.Errorf("last log line %v, want an error node.failed", last)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		// Port 0: the node picks one and logs it in node.started.
		n := startProc(t, bin, 1, "--metrics-addr", "127.0.0.1:0")
		started := n.waitEvent(t, 5*time.Second, logs.NodeStarted, nil)
		addr, _ := started[logs.MetricsKey].(string)
		if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
			t.Fatalf("node.started logs metrics %q, want the address taken", addr)
		}
		n.waitEvent(t, 5*time.Second, logs.ViewInstalled, nil)
		get := func(path string) (int, string) {
			res, err := http.Get("http://" + addr + path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(body)
		}
		code, body := get("/metrics")
		for _, want := range []string{"huddle_up 1\n", "huddle_view_members 1\n", `huddle_state{state="member"} 1`, "# TYPE huddle_sessions_sent_total counter"} {
			if code != 200 || !strings.Contains(body, want) {
				t.Errorf("GET /metrics: %d, no %q in:\n%s", code, want, body)
			}
		}
		if code, _ := get("/debug/pprof/"); code != http.StatusNotFound {
			t.Errorf("/debug/pprof/ without --metrics-pprof: %d, want 404", code)
		}
		// A second node cannot take the same port: it says so and exits 1.
		code2, stderr := runBinary(t, bin, "run", "--profile", "local", "--iface", "lo", "--id", "2", "--metrics-addr", addr, "--duration", "5s")
		if code2 != exitFailure || !strings.Contains(stderr, "metrics.addr "+addr) || !strings.Contains(stderr, "address already in use") {
			t.Errorf("a second node on the metrics port: exit %d, stderr %q; want %d and the address in use", code2, stderr, exitFailure)
		}
		n.stop(t, syscall.SIGTERM)
	})

	t.Run("systemd", func(t *testing.T) {
		// The service manager's side of sd_notify: a datagram socket.
		path := filepath.Join(t.TempDir(), "notify")
		sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
		if err != nil {
			t.Skipf("no unixgram socket: %v", err)
		}
		defer sock.Close()
		t.Setenv("NOTIFY_SOCKET", path)
		t.Setenv("WATCHDOG_USEC", "200000") // pings every 100ms
		n := startProc(t, bin, 1)
		var got []string
		read := func(want string, within time.Duration) string {
			t.Helper()
			buf := make([]byte, 512)
			deadline := time.Now().Add(within)
			for {
				sock.SetReadDeadline(deadline)
				k, err := sock.Read(buf)
				if err != nil {
					t.Fatalf("no %q within %v; got %q", want, within, got)
				}
				got = append(got, string(buf[:k]))
				if strings.Contains(string(buf[:k]), want) {
					return string(buf[:k])
				}
			}
		}
		if msg := read("READY=1", 5*time.Second); !strings.Contains(msg, "STATUS=node 1 in view") {
			t.Errorf("READY=1 came with %q, want the view in STATUS", msg)
		}
		pings := 0
		for start := time.Now(); pings < 3; pings++ {
			read("WATCHDOG=1", time.Second)
			if time.Since(start) > 2*time.Second {
				t.Fatalf("3 watchdog pings took %v, want one every 100ms", time.Since(start))
			}
		}
		n.stop(t, syscall.SIGTERM)
		read("STOPPING=1", time.Second)
	})

	// huddle status --group and huddle watch against three real nodes:
	// every member answers the probe with the view the asker has, and the
	// watch sees a delivery and the view that drops a killed member.
	t.Run("group status and watch", func(t *testing.T) {
		n1, n2, n3 := startProc(t, bin, 1), startProc(t, bin, 2), startProc(t, bin, 3)
		for _, n := range []*proc{n1, n2, n3} {
			n.waitEvent(t, 10*time.Second, logs.ViewInstalled, func(l logLine) bool { return len(l[logs.MembersKey].([]any)) == 3 })
		}
		watch := exec.Command(bin, "watch", "--id", "1", "--json", "--service", "")
		watch.Env = testEnv()
		var wout syncBuffer
		watch.Stdout, watch.Stderr = &wout, &wout
		if err := watch.Start(); err != nil {
			t.Fatal(err)
		}
		defer watch.Process.Kill()
		time.Sleep(200 * time.Millisecond) // the watch is connected
		if code, out := runBinary(t, bin, "send", "--id", "2", "hello group"); code != 0 {
			t.Fatalf("huddle send: exit %d: %s", code, out)
		}
		code, out := runBinary(t, bin, "status", "--id", "1", "--group", "--json")
		var pr struct {
			View    string `json:"view"`
			Members []struct {
				ID       uint64 `json:"id"`
				Answered bool   `json:"answered"`
				Info     struct {
					ID   uint64 `json:"id"`
					View string `json:"view"`
					Role string `json:"role"`
				} `json:"info"`
			} `json:"members"`
		}
		if err := json.Unmarshal([]byte(out), &pr); code != 0 || err != nil || len(pr.Members) != 3 {
			t.Fatalf("huddle status --group: exit %d, %v:\n%s", code, err, out)
		}
		for i, m := range pr.Members {
			if !m.Answered || m.Info.ID != m.ID || m.Info.View != pr.View || (i == 0) != strings.Contains(m.Info.Role, "coordinator") {
				t.Errorf("member %d answered %+v in view %s", m.ID, m, pr.View)
			}
		}
		if code, out := runBinary(t, bin, "status", "--id", "2", "--group"); code != 0 || !strings.Contains(out, "3 members, 3 answered") {
			t.Errorf("huddle status --group: exit %d:\n%s", code, out)
		}
		n3.cmd.Process.Kill()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(wout.String(), `"crashed":[3]`) {
			if time.Now().After(deadline) {
				t.Fatalf("the watch saw no view without node 3 in 10s:\n%s", wout.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		watch.Process.Signal(syscall.SIGINT)
		if err := watch.Wait(); err != nil {
			t.Errorf("huddle watch after SIGINT: %v\n%s", err, wout.String())
		}
		text := wout.String()
		// It begins with the state: the view of three, then the lock.
		lines := strings.Split(text, "\n")
		if !strings.Contains(lines[0], `"event":"view.installed","snapshot":true,`) || !strings.Contains(lines[0], `"members":[`) ||
			!strings.Contains(text, `"event":"mutex.released","snapshot":true,`) {
			t.Errorf("the watch did not begin with the node's state:\n%s", text)
		}
		for _, want := range []string{`"from":2,"seq":`, `"order":"fifo","payload":"` + base64.StdEncoding.EncodeToString([]byte("hello group")) + `"`, `"event":"deliver","view":"`,
			`"event":"member.suspected"`, `"event":"view.installed"`} {
			if !strings.Contains(text, want) {
				t.Errorf("the watch printed no %s:\n%s", want, text)
			}
		}
		n1.stop(t, syscall.SIGTERM)
		n2.stop(t, syscall.SIGTERM)
	})

	// huddle elect on three real nodes prints the round's messages across
	// the group, which the leader counted from every member's TALLY and
	// logged as election.round: node 1 follows node 3 (the highest) on the
	// ring by ID, so Chang–Roberts' worst single initiator, 3n−1 = 8.
	t.Run("elect", func(t *testing.T) {
		n1, n2, n3 := startProc(t, bin, 1), startProc(t, bin, 2), startProc(t, bin, 3)
		for _, n := range []*proc{n1, n2, n3} {
			n.waitEvent(t, 10*time.Second, logs.LeaderChanged, func(l logLine) bool { return num(l[logs.LeaderKey]) == 3 })
		}
		time.Sleep(200 * time.Millisecond) // the first round's accounting is over
		code, out := runBinary(t, bin, "elect", "--id", "1")
		if code != 0 || !strings.Contains(out, "leader 3 (ring election, round ") || !strings.Contains(out, "): 8 messages in the round across the group") {
			t.Fatalf("huddle elect: exit %d: %q", code, out)
		}
		round := n3.waitEvent(t, 5*time.Second, logs.ElectionRound, func(l logLine) bool { return num(l[logs.MessagesKey]) == 8 })
		if num(round[logs.DatagramsKey]) != 8 || num(round[logs.MembersKey]) != 3 {
			t.Errorf("election.round at the leader: %v", round)
		}
		for _, n := range []*proc{n1, n2, n3} {
			n.stop(t, syscall.SIGTERM)
		}
	})

	t.Run("console log", func(t *testing.T) {
		n := startProc(t, bin, 1, "--log-format", "console")
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(readFile(n.log), " node.started ") {
			n.checkRunning(t)
			if time.Now().After(deadline) {
				t.Fatalf("no node.started line in 5s:\n%s", readFile(n.log))
			}
			time.Sleep(10 * time.Millisecond)
		}
		n.stop(t, syscall.SIGTERM)
		text := readFile(n.log)
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			if json.Valid([]byte(line)) {
				t.Errorf("console line is JSON: %s", line)
			}
			clock, _, _ := strings.Cut(line, " ")
			if _, err := time.Parse(logx.ConsoleTimeFormat, clock); err != nil {
				t.Errorf("console line does not start with the time: %q", line)
			}
		}
		// The event follows the level; a message that only repeats it
		// ("node started") is left out.
		for _, want := range []string{"INF node.started incarnation=", "node=1\n", "INF node.stopped reason="} {
			if !strings.Contains(text, want) {
				t.Errorf("console log has no %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "event=") || strings.Contains(text, "node started") {
			t.Errorf("console log repeats the event:\n%s", text)
		}
	})
}

// A proc is one huddle run process started by the test.
type proc struct {
	cmd    *exec.Cmd
	log    string
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's, once done is closed
}

// startProc starts huddle run with the local profile on lo, logging to a
// file. --duration bounds the process's life should the test lose track
// of it; the cleanup kills it if it still runs.
func startProc(t *testing.T, bin string, id int, args ...string) *proc {
	t.Helper()
	n := &proc{log: filepath.Join(t.TempDir(), fmt.Sprintf("node%d.log", id)), stderr: new(syncBuffer), done: make(chan struct{})}
	args = append([]string{"run", "--profile", "local", "--iface", "lo", "--id", fmt.Sprint(id),
		"--log-file", n.log, "--duration", "30s"}, args...)
	n.cmd = exec.Command(bin, args...)
	n.cmd.Env = testEnv()
	n.cmd.Stdout, n.cmd.Stderr = n.stderr, n.stderr
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.err = n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		select {
		case <-n.done:
		default:
			n.cmd.Process.Kill()
			<-n.done
		}
	})
	return n
}

// testEnv is this process's environment without HUDDLE_* settings.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HUDDLE_") || strings.HasPrefix(kv, "HUDDLE_TEST_") {
			env = append(env, kv)
		}
	}
	return env
}

// runBinary runs huddle to completion (at most 10s) and returns its exit
// code and output.
func runBinary(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = testEnv()
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

func (n *proc) checkRunning(t *testing.T) {
	t.Helper()
	select {
	case <-n.done:
		t.Fatalf("huddle exited early (%v); stderr:\n%s\nlog:\n%s", n.err, n.stderr, readFile(n.log))
	default:
	}
}

// stop sends sig to the node and expects it to exit with 0 within 5s.
func (n *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	n.checkRunning(t)
	if err := n.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("huddle did not exit within 5s of %v; log:\n%s", sig, readFile(n.log))
	}
	if code := n.cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("after %v huddle exited with %d (%v), want 0; stderr:\n%s", sig, code, n.err, n.stderr)
	}
}

// waitEvent waits until the node's log has an event of the given name for
// which match (if any) holds, and returns that line.
func (n *proc) waitEvent(t *testing.T, timeout time.Duration, event string, match func(logLine) bool) logLine {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range readLog(n.log) {
			if l[logs.EventKey] == event && (match == nil || match(l)) {
				return l
			}
		}
		n.checkRunning(t)
		if time.Now().After(deadline) {
			t.Fatalf("no %s event in %v; log:\n%s", event, timeout, readFile(n.log))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type logLine map[string]any

func (l logLine) time(t *testing.T) time.Time {
	t.Helper()
	s, _ := l[logs.TimeKey].(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return tm
}

// num returns a JSON number as an int64, or -1.
func num(v any) int64 {
	n, ok := v.(json.Number)
	if !ok {
		return -1
	}
	i, err := n.Int64()
	if err != nil {
		return -1
	}
	return i
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// readLog returns the complete lines of a JSON log that parse.
func readLog(path string) []logLine {
	var out []logLine
	text := readFile(path)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i+1]
	} else {
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l, err := parseLine(sc.Bytes()); err == nil {
			out = append(out, l)
		}
	}
	return out
}

func parseLine(b []byte) (logLine, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var l logLine
	if err := d.Decode(&l); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one value on the line")
	}
	return l, nil
}

// checkJSONLog checks every line of a finished node's log: one JSON object
// with time (RFC 3339 in UTC with nine fractional digits, logx.TimeFormat),
// level, node and event. A time may fall on a whole millisecond, but most
// must have digits below it.
func checkJSONLog(t *testing.T, path string, id int64) []logLine {
	t.Helper()
	text := readFile(path)
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("the log does not end with a complete line:\n%s", text)
	}
	var lines []logLine
	fine := 0
	for i, raw := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		l, err := parseLine([]byte(raw))
		if err != nil {
			t.Errorf("line %d is not a JSON object (%v): %s", i+1, err, raw)
			continue
		}
		lines = append(lines, l)
		s, _ := l[logs.TimeKey].(string)
		tm, err := time.Parse(logx.TimeFormat, s)
		if err != nil || !strings.HasSuffix(s, "Z") {
			t.Errorf("line %d: time %q is not RFC 3339 in UTC with nine fractional digits: %s", i+1, s, raw)
		} else if tm.Nanosecond()%int(time.Millisecond) != 0 {
			fine++
		}
		if lv, _ := l[logs.LevelKey].(string); lv == "" {
			t.Errorf("line %d has no level: %s", i+1, raw)
		}
		if got := num(l[logs.NodeKey]); got != id {
			t.Errorf("line %d: node %v, want %d: %s", i+1, l[logs.NodeKey], id, raw)
		}
		if ev, _ := l[logs.EventKey].(string); ev == "" {
			t.Errorf("line %d has no event: %s", i+1, raw)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("empty log %s", path)
	}
	if fine*2 <= len(lines) {
		t.Errorf("only %d of %d lines have a time finer than milliseconds:\n%s", fine, len(lines), text)
	}
	return lines
}

// checkLastEvents checks that a log ends with the exit stats and
// node.stopped, whose reason contains reason.
func checkLastEvents(t *testing.T, lines []logLine, reason string) {
	t.Helper()
	if len(lines) < 2 {
		t.Fatalf("%d log lines, want at least node.stats and node.stopped", len(lines))
	}
	stats, stopped := lines[len(lines)-2], lines[len(lines)-1]
	if stats[logs.EventKey] != logs.NodeStats || stats[logs.WhyKey] != "exit" {
		t.Errorf("second to last line %v, want node.stats with why=exit", stats)
	}
	if r, _ := stopped[logs.ReasonKey].(string); stopped[logs.EventKey] != logs.NodeStopped || !strings.Contains(r, reason) {
		t.Errorf("last line %v, want node.stopped with a reason containing %q", stopped, reason)
	}
}

func lastEvent(t *testing.T, lines []logLine, event string) logLine {
	t.Helper()
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i][logs.EventKey] == event {
			return lines[i]
		}
	}
	t.Fatalf("no %s event in the log", event)
	return nil
}

// syncBuffer is a bytes.Buffer safe for the process's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
