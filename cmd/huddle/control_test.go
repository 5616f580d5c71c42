//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
)

// fakeNode answers the control commands in-process, so that the
// commands' parsing, socket finding and output can be tested without a
// network.
type fakeNode struct {
	id      uint64
	group   string
	joining bool
	mu      sync.Mutex
	sent    []string // "payload/order"
	drop    huddle.Drop
}

func (f *fakeNode) Status(context.Context) (huddle.Status, error) {
	st := huddle.Status{ID: f.id, Incarnation: 100 + f.id, Group: f.group, Addr: "239.192.72.68:7468", Iface: "lo",
		Src: "127.0.0.1:7468", State: huddle.StateMember, View: fmt.Sprintf("4.%d", f.id), Coordinator: f.id,
		Members: []huddle.StatusMember{{ID: f.id, Incarnation: 100 + f.id}, {ID: 77, Incarnation: 177}}, Primary: true, Quorum: "off", Peers: []uint64{77},
		Counters: huddle.Counters{{Name: "msgs_sent", Value: uint64(12345)}, {Name: "srm_spread", Value: 1.5}}}
	f.mu.Lock()
	if f.drop.Active() {
		d := f.drop
		st.Drop = &d
		st.Counters = append(st.Counters, huddle.Counter{Name: "injected_drops", Value: uint64(42)})
	}
	f.mu.Unlock()
	if f.joining {
		st.State, st.View, st.Coordinator, st.Members, st.Peers = huddle.StateJoining, "0.0", 0, []huddle.StatusMember{}, []uint64{}
	}
	return st, nil
}

func (f *fakeNode) SetDrop(_ context.Context, d huddle.Drop) (huddle.Drop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.drop
	f.drop = d
	return old, nil
}

func (f *fakeNode) Probe(context.Context) (huddle.ProbeResult, error) {
	return huddle.ProbeResult{View: fmt.Sprintf("4.%d", f.id), Asker: f.id, WaitMS: 1000, Members: []huddle.ProbeRow{
		{ID: f.id, Incarnation: 100 + f.id, Answered: true, Info: &huddle.ProbeInfo{ID: f.id, Incarnation: 100 + f.id,
			Addr: "10.0.0.1:7468", View: fmt.Sprintf("4.%d", f.id), State: huddle.StateMember, Role: "coordinator+leader",
			UptimeMS: 3723000, Delivered: 12345, NACKs: 7, Repairs: 3, Lock: "held", Leader: f.id, LeaderRound: 2}},
		{ID: 77, Incarnation: 177}}}, nil
}

// Watch streams the state, as the group's watcher begins, then two
// events, and then the node stops.
func (f *fakeNode) Watch(...string) control.Watch {
	w := &fakeWatch{c: make(chan huddle.WatchEvent, 5)}
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	w.c <- huddle.WatchEvent{Time: at, Snapshot: true, Event: logs.ViewInstalled, View: "4.0", Members: []uint64{1}}
	w.c <- huddle.WatchEvent{Time: at, Snapshot: true, Event: logs.LeaderChanged, View: "4.0", Leader: 1, Round: 3}
	w.c <- huddle.WatchEvent{Time: at, Snapshot: true, Event: logs.MutexReleased, View: "4.0", Node: 1}
	w.c <- huddle.WatchEvent{Time: at, Event: logs.ViewInstalled, View: "4.1", Members: []uint64{1, 77}, Joined: []uint64{77}}
	w.c <- huddle.WatchEvent{Time: at, Event: logs.Deliver, Service: "chat", From: 77, Seq: 5, Order: "fifo", Payload: []byte("hello")}
	close(w.c) // then the node stops
	return w
}

type fakeWatch struct{ c chan huddle.WatchEvent }

func (w *fakeWatch) C() <-chan huddle.WatchEvent { return w.c }
func (w *fakeWatch) Dropped() uint64             { return 0 }
func (w *fakeWatch) Close()                      {}

func (f *fakeNode) Lock(context.Context) error       { return nil }
func (f *fakeNode) ReloadKeys(context.Context) error { return nil }

func (f *fakeNode) Unlock(context.Context) error { return nil }

func (f *fakeNode) Elect(context.Context) (huddle.ElectResult, error) {
	return huddle.ElectResult{Started: true, Algorithm: "bully", Leader: 77, Round: 3}, nil
}

func (f *fakeNode) Multicast(_ context.Context, _, payload []byte, order wire.Order) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, string(payload)+"/"+order.String())
	return uint64(len(f.sent)), nil
}

// serveFake serves a fake node at path until the test ends.
func serveFake(t *testing.T, path string, f *fakeNode) {
	t.Helper()
	s, err := control.Listen(path, control.Commands(f), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
}

// staleSocket leaves a socket file at path that nobody answers at, as a
// crashed node does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

// TestControlCommands runs huddle status and huddle send in-process against
// fake nodes with default sockets in a private XDG_RUNTIME_DIR.
func TestControlCommands(t *testing.T) {
	clearHuddleEnv(t)
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dir := filepath.Join(xdg, "huddle")
	os.Mkdir(dir, 0o700)
	one := &fakeNode{id: 1, group: "huddle"}
	serveFake(t, control.DefaultPath("huddle", 1), one)
	serveFake(t, control.DefaultPath("lab", 2), &fakeNode{id: 2, group: "lab"})
	serveFake(t, control.DefaultPath("lab", 3), &fakeNode{id: 3, group: "lab", joining: true})
	staleSocket(t, control.DefaultPath("huddle", 5))
	explicit := filepath.Join(t.TempDir(), "n.sock")
	serveFake(t, explicit, &fakeNode{id: 9, group: "huddle"})
	p1 := control.DefaultPath("huddle", 1)

	for _, c := range []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout []string // each in stdout
		stderr []string // each in stderr
		sent   string   // the messages node 1 got
		// partial: a failure that still prints (a group table with silent
		// members, a watch that ended with the node)
		partial bool
	}{
		{name: "status", args: []string{"status", "--id", "1"}, stdout: []string{
			`node 1 (incarnation 101), group "huddle"`, "address 239.192.72.68:7468 on lo, sending from 127.0.0.1:7468",
			"control socket " + p1, "view 4.1 (member, primary, no quorum), coordinator 1, 2 members, oldest first:",
			"  1   incarnation 101  coordinator, this node\n  77  incarnation 177\n", "live peers: 77",
			"  msgs_sent   12345\n  srm_spread    1.5\n"}},
		{name: "status json", args: []string{"status", "--json", "--id=1"}, stdout: []string{`{"id":1,"incarnation":101,"group":"huddle",`,
			`"view":"4.1","coordinator":1,"members":[{"id":1,"incarnation":101},{"id":77,"incarnation":177}],"primary":true,"quorum":"off","peers":[77],"leader":0,"leader_round":0,"election":"","lock":"","lock_messages":0,"counters":{"msgs_sent":12345,"srm_spread":1.5}}` + "\n"}},
		{name: "the only node of the group", args: []string{"status", "--json"}, stdout: []string{`{"id":1,`}},
		{name: "two nodes of the group", env: []string{"HUDDLE_GROUP=lab"}, args: []string{"status"}, code: 1,
			stderr: []string{`2 nodes of group "lab" run on this host: choose one with --id`, "Nodes running on this host:", "lab-2.sock  (--group lab --id 2)", "lab-3.sock  (--group lab --id 3)", "huddle-1.sock  (--group huddle --id 1)"}},
		{name: "ID from the environment", env: []string{"HUDDLE_ID=2", "HUDDLE_GROUP=lab"}, args: []string{"status"}, stdout: []string{"node 2 (incarnation 102), group \"lab\""}},
		{name: "explicit socket", args: []string{"status", "--control-socket", explicit}, stdout: []string{"node 9 ", "control socket " + explicit}},
		{name: "joining", args: []string{"status", "--group", "lab", "--id", "3"}, stdout: []string{"no view yet: joining the group", "live peers: none"}},
		{name: "no such node", args: []string{"status", "--id", "4"}, code: 1, stderr: []string{
			"huddle status: no node is running at " + control.DefaultPath("huddle", 4) + ".\nStart one with `huddle run`",
			"--control-socket", "huddle-1.sock  (--group huddle --id 1)"}},
		{name: "stale socket", args: []string{"status", "--id", "5"}, code: 1, stderr: []string{"huddle-5.sock (a stale socket: the node that made it is gone)."}},
		{name: "no socket at the path given", args: []string{"status", "--control-socket", filepath.Join(xdg, "none.sock")}, code: 1,
			stderr: []string{"no node is running at " + filepath.Join(xdg, "none.sock")}},
		{name: "socket off", args: []string{"status", "--control-socket", "off"}, code: 2, stderr: []string{"config: control_socket: is off"}},
		{name: "bad config", args: []string{"status", "--id", "x"}, code: 2, stderr: []string{`config: --id: id: "x" is not a number`}},
		{name: "bad environment", env: []string{"HUDDLE_ID=x"}, args: []string{"status"}, code: 2, stderr: []string{`config: HUDDLE_ID: id: "x" is not a number`}},
		{name: "unknown variable", env: []string{"HUDDLE_BOGUS=1", "HUDDLE_GRUOP=lab"}, args: []string{"status", "--id", "1"},
			stdout: []string{"node 1 (incarnation 101)"}, stderr: []string{
				"huddle: warning: HUDDLE_BOGUS is not a setting; ignoring it\nhuddle: warning: HUDDLE_GRUOP is not a setting; did you mean HUDDLE_GROUP?\n"}},
		{name: "status argument", args: []string{"status", "extra"}, code: 2, stderr: []string{`unexpected argument "extra"`}},
		{name: "status help", args: []string{"status", "--help"}, stdout: []string{"Usage: huddle status [--group] [flags]", "-wait duration", "-all", "-control-socket path", "-timeout duration", "-json", "Every flag of huddle run is accepted"}},

		{name: "status group", args: []string{"status", "--id", "1", "--group"}, code: 1, partial: true, stdout: []string{
			"view 4.1 as node 1 sees it: 2 members, 1 answered",
			"ID  ADDRESS        INCARNATION  VIEW  ROLE                UPTIME  DELIVERED  NACKS  REPAIRS  LOCK  LEADER\n",
			"1   10.0.0.1:7468  101          4.1   coordinator+leader  1h2m3s  12345      7      3        held  1 (round 2)\n",
			"77  -              177          -     silent              -       -          -      -        -     -\n", "silent: 77 did not answer within 1s"}},
		{name: "status group json", args: []string{"status", "--group", "--json", "--group", "lab", "--id", "2", "--wait", "300ms"}, code: 1, partial: true, stdout: []string{
			`{"view":"4.2","asker":2,"wait_ms":1000,"members":[{"id":2,"incarnation":102,"answered":true,"info":{"id":2,`, `{"id":77,"incarnation":177,"answered":false}]}`}},
		{name: "status all", args: []string{"status", "--all", "--group", "lab", "--id", "2"}, code: 1, partial: true, stdout: []string{"view 4.2 as node 2 sees it"}},
		{name: "status group bad wait", args: []string{"status", "--group", "--wait", "0s"}, code: 2, stderr: []string{"huddle status: --wait 0s is out of range"}},
		{name: "watch", args: []string{"watch", "--id", "1", "--service", "chat"}, code: 1, partial: true, stdout: []string{
			" now view 4.0: members 1\n", " now leader 1 (round 3)\n", " now lock neither held nor wanted by 1\n",
			" view 4.1: members 1, 77; joined 77\n", `deliver chat from 77 seq 5 (fifo): "hello"` + "\n"}, stderr: []string{"huddle watch: the node stopped\n"}},
		{name: "watch json", args: []string{"watch", "--id", "1", "--json"}, code: 1, partial: true, stdout: []string{
			`{"time":"2026-11-24T10:00:00Z","event":"view.installed","snapshot":true,"view":"4.0","members":[1]}` + "\n" +
				`{"time":"2026-11-24T10:00:00Z","event":"leader.changed","snapshot":true,"view":"4.0","leader":1,"round":3}` + "\n" +
				`{"time":"2026-11-24T10:00:00Z","event":"mutex.released","snapshot":true,"view":"4.0","node":1}` + "\n" +
				`{"time":"2026-11-24T10:00:00Z","event":"view.installed","view":"4.1","members":[1,77],"joined":[77]}` + "\n"}},
		{name: "watch too many services", args: []string{"watch", "--service", "1", "--service", "2", "--service", "3", "--service", "4", "--service", "5",
			"--service", "6", "--service", "7", "--service", "8", "--service", "9", "--service", "10", "--service", "11", "--service", "12",
			"--service", "13", "--service", "14", "--service", "15", "--service", "16", "--service", "17"}, code: 2, stderr: []string{"17 --service flags (at most 16)"}},
		{name: "watch argument", args: []string{"watch", "x"}, code: 2, stderr: []string{`unexpected argument "x"`}},

		{name: "send", args: []string{"send", "--id", "1", "hello"}, stdout: []string{"sent: seq 1, order fifo\n"}, sent: "hello/fifo"},
		{name: "send flags after the text", args: []string{"send", "hello world", "--order", "total", "--id", "1"}, stdout: []string{"sent: seq 1, order total\n"}, sent: "hello world/total"},
		{name: "send json", args: []string{"send", "--json", "--order=safe", "x"}, stdout: []string{`{"seq":1,"order":"safe"}` + "\n"}, sent: "x/safe"},
		{name: "send a text like a flag", args: []string{"send", "--id", "1", "--", "--order"}, stdout: []string{"seq 1"}, sent: "--order/fifo"},
		{name: "send bytes", args: []string{"send", "--id", "1", "\xff\x00"}, stdout: []string{"seq 1"}, sent: "\xff\x00/fifo"},
		{name: "send empty", args: []string{"send", "--id", "1", ""}, stdout: []string{"seq 1"}, sent: "/fifo"},
		{name: "send while joining", args: []string{"send", "--group", "lab", "--id", "3", "x"}, code: 1,
			stderr: []string{`huddle send: node 3 is not in a view yet: it is still joining group "lab"; try again in a moment` + "\n"}},
		{name: "send no text", args: []string{"send", "--id", "1"}, code: 2, stderr: []string{"want one TEXT argument (quote it), or - for standard input, got 0"}},
		{name: "send two texts", args: []string{"send", "a", "b"}, code: 2, stderr: []string{"want one TEXT argument (quote it), or - for standard input, got 2"}},
		{name: "send bad order", args: []string{"send", "--order", "random", "a"}, code: 2, stderr: []string{`--order "random" is not fifo, total, safe or causal`}},
		{name: "send bad timeout", args: []string{"send", "--timeout", "0s", "a"}, code: 2, stderr: []string{"--timeout must be above 0"}},
		{name: "send unknown flag", args: []string{"send", "a", "--bogus"}, code: 2, stderr: []string{"huddle send: unknown flag --bogus (huddle send --help lists the flags)\n"}},
		{name: "send to no node", args: []string{"send", "--id", "4", "a"}, code: 1, stderr: []string{"huddle send: no node is running at"}},

		{name: "drop report", args: []string{"drop", "--id", "9", "--control-socket", explicit}, stdout: []string{"built-in drop off; 0 datagrams dropped so far\n"}},
		{name: "drop set", args: []string{"drop", "--control-socket", explicit, "--rate", "0.05", "--from", "3,4"},
			stdout: []string{"built-in drop: 5% of the datagrams from nodes 3,4; 42 datagrams dropped so far\n"}},
		{name: "drop shows in status", args: []string{"status", "--control-socket", explicit},
			stdout: []string{"built-in drop: 5% of the datagrams from nodes 3,4 (an experiment: huddle drop --rate 0 ends it)", "injected_drops     42"}},
		{name: "drop in bursts", args: []string{"drop", "--control-socket", explicit, "--rate", "0.2", "--burst", "4"},
			stdout: []string{"built-in drop: 20% of the datagrams from every sender in bursts of 4; 42 datagrams dropped so far\n"}},
		{name: "drop bursts show in status", args: []string{"status", "--control-socket", explicit},
			stdout: []string{"built-in drop: 20% of the datagrams from every sender in bursts of 4 (an experiment"}},
		{name: "drop json after bursts", args: []string{"drop", "--control-socket", explicit, "--json", "--rate", "0.05", "--from", "3,4"},
			stdout: []string{`"before":{"rate":0.2,"burst":4}`}},
		{name: "drop json", args: []string{"drop", "--control-socket", explicit, "--json", "--rate", "0"},
			stdout: []string{`{"drop":{"rate":0},"before":{"rate":0.05,"from":[3,4]},"injected_drops":0}` + "\n"}},
		{name: "drop bad rate", args: []string{"drop", "--rate", "2"}, code: 2, stderr: []string{"--rate 2 is out of range (0 to 1)"}},
		{name: "drop bad from", args: []string{"drop", "--rate", "1", "--from", "3,x"}, code: 2, stderr: []string{`--from: "3,x" is not a list of node IDs`}},
		{name: "drop from without rate", args: []string{"drop", "--from", "3"}, code: 2, stderr: []string{"--from, --seed and --burst go with --rate"}},
		{name: "drop burst without rate", args: []string{"drop", "--burst", "3"}, code: 2, stderr: []string{"--from, --seed and --burst go with --rate"}},
		{name: "drop bad burst", args: []string{"drop", "--rate", "0.1", "--burst", "0.5"}, code: 2, stderr: []string{"huddle drop: --burst 0.5 is out of range (0 or 1 for independent losses, else 1 to 1000)"}},
		{name: "drop burst too short", args: []string{"drop", "--rate", "0.8", "--burst", "2"}, code: 2, stderr: []string{"huddle drop: --burst 2 is too short for a loss of 0.8"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			one.mu.Lock()
			one.sent = nil
			one.mu.Unlock()
			var stdout, stderr bytes.Buffer
			code := run(c.args, &stdout, &stderr)
			if code != c.code {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, c.code, &stdout, &stderr)
			}
			for _, want := range c.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout does not contain %q:\n%s", want, &stdout)
				}
			}
			for _, want := range c.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not contain %q:\n%s", want, &stderr)
				}
			}
			// Success prints nothing to stderr but warnings.
			warned := regexp.MustCompile(`(?m)^huddle: warning: .*\n`).ReplaceAllString(stderr.String(), "")
			if c.code == 0 && warned != "" || c.code != 0 && stdout.Len() > 0 && !c.partial {
				t.Errorf("exit %d with stdout %q and stderr %q", code, &stdout, &stderr)
			}
			one.mu.Lock()
			sent := strings.Join(one.sent, " ")
			one.mu.Unlock()
			if sent != c.sent {
				t.Errorf("node 1 got %q, want %q", sent, c.sent)
			}
		})
	}
}

// TestControlProcess runs a real node in a private network namespace and
// talks to it with huddle status and huddle send, as a user would.
func TestControlProcess(t *testing.T) {
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
	// The nodes and the commands find their sockets here.
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	sock := func(id int) string { return filepath.Join(xdg, "huddle", fmt.Sprintf("huddle-%d.sock", id)) }

	t.Run("status and send", func(t *testing.T) {
		n := startProc(t, bin, 1, "--trace-deliveries")
		started := n.waitEvent(t, 5*time.Second, logs.NodeStarted, nil)
		if started[logs.ControlSocketKey] != sock(1) {
			t.Errorf("node.started: control_socket %v, want %s", started[logs.ControlSocketKey], sock(1))
		}
		if fi, err := os.Stat(sock(1)); err != nil || fi.Mode() != os.ModeSocket|0o600 {
			t.Errorf("the socket: %v, %v; want a socket with permission 0600", fi, err)
		}
		view := n.waitEvent(t, 5*time.Second, logs.ViewInstalled, nil)

		code, out := runBinary(t, bin, "status", "--json", "--id", "1")
		if code != exitOK {
			t.Fatalf("huddle status --json: exit %d\n%s", code, out)
		}
		st := parseStatus(t, out)
		inc := fmt.Sprint(started[logs.IncarnationKey])
		if fmt.Sprint(st["id"]) != "1" || fmt.Sprint(st["incarnation"]) != inc || st["group"] != "huddle" || st["iface"] != "lo" ||
			st["state"] != "member" || st["view"] != view[logs.ViewKey] || fmt.Sprint(st["coordinator"]) != "1" || fmt.Sprint(st["sequencer"]) != "1" ||
			fmt.Sprint(st["members"]) != fmt.Sprintf("[map[id:1 incarnation:%s]]", inc) {
			t.Errorf("huddle status --json: %s\nwant node 1 of incarnation %s, alone in view %v", out, inc, view[logs.ViewKey])
		}
		counters, _ := st["counters"].(map[string]any)
		if num(counters["sessions_sent"]) <= 0 || num(counters["views_installed"]) != 1 {
			t.Errorf("counters: %v", counters)
		}

		// No --id: the ID derived from lo (127.0.0.1) has no node, and
		// the only node of the group on this host is used.
		code, out = runBinary(t, bin, "send", "--order", "total", "hello")
		m := regexp.MustCompile(`^sent: seq (\d+), order total\n$`).FindStringSubmatch(out)
		if code != exitOK || m == nil {
			t.Fatalf("huddle send --order total hello: exit %d, %q", code, out)
		}
		n.waitEvent(t, 5*time.Second, logs.Deliver, func(l logLine) bool {
			return l[logs.OrderKey] == "total" && fmt.Sprint(l[logs.SeqKey]) == m[1] && num(l[logs.FromKey]) == 1 && num(l[logs.LenKey]) == 5 &&
				num(l[logs.CRCKey]) == int64(crc32.ChecksumIEEE([]byte("hello"))) && num(l[logs.GSeqKey]) > 0
		})
		code, out = runBinary(t, bin, "send", "hello, safely", "--json", "--order", "safe", "--id", "1")
		var sent control.SendResult
		if code != exitOK || json.Unmarshal([]byte(out), &sent) != nil || sent.Order != "safe" {
			t.Fatalf("huddle send ... --json --order safe: exit %d, %q", code, out)
		}
		n.waitEvent(t, 5*time.Second, logs.Deliver, func(l logLine) bool {
			return l[logs.OrderKey] == "safe" && num(l[logs.SeqKey]) == int64(sent.Seq) && num(l[logs.CRCKey]) == int64(crc32.ChecksumIEEE([]byte("hello, safely")))
		})
		code, out = runBinary(t, bin, "status", "--id", "1")
		if code != exitOK || !strings.Contains(out, "node 1 (incarnation "+inc+`), group "huddle"`) ||
			!strings.Contains(out, "coordinator, this node, orders total order") || !strings.Contains(out, "lock: this node neither holds nor wants it") || !regexp.MustCompile(`(?m)^  msgs_sent +[1-9]`).MatchString(out) {
			t.Errorf("huddle status: exit %d\n%s", code, out)
		}

		// huddle send --service: a program's service.
		code, out = runBinary(t, bin, "send", "--service", "chat", "--id", "1", "on chat")
		if m := regexp.MustCompile(`^sent: seq (\d+), order fifo\n$`).FindStringSubmatch(out); code != exitOK || m == nil {
			t.Errorf("huddle send --service chat: exit %d, %q", code, out)
		} else {
			n.waitEvent(t, 5*time.Second, logs.Deliver, func(l logLine) bool { return l[logs.ServiceKey] == "chat" && fmt.Sprint(l[logs.SeqKey]) == m[1] })
		}
		if code, out = runBinary(t, bin, "send", "--service", "election", "--id", "1", "x"); code != exitFailure || !strings.Contains(out, `service "election" is the node's own`) {
			t.Errorf("huddle send --service election: exit %d, %q", code, out)
		}

		// huddle lock: alone in its view, the node takes the lock at once.
		code, out = runBinary(t, bin, "lock", "--hold", "50ms", "--id", "1")
		if code != exitOK || !regexp.MustCompile(`^held the lock for \d+\.\d ms after waiting \d+\.\d ms; 0 lock messages for the entry across the group\n$`).MatchString(out) {
			t.Errorf("huddle lock --hold 50ms: exit %d, %q", code, out)
		}
		n.waitEvent(t, 5*time.Second, logs.MutexAcquired, func(l logLine) bool { return num(l[logs.MessagesKey]) == 0 })
		n.waitEvent(t, 5*time.Second, logs.MutexReleased, func(l logLine) bool {
			h, _ := l[logs.HeldMsKey].(json.Number)
			held, err := h.Float64()
			return err == nil && held >= 50
		})
		code, out = runBinary(t, bin, "lock", "--json", "--id", "1")
		var locked control.LockResult
		if code != exitOK || json.Unmarshal([]byte(out), &locked) != nil || locked.HeldMs > 1000 {
			t.Errorf("huddle lock --json: exit %d, %q", code, out)
		}
		if code, out = runBinary(t, bin, "lock", "--hold", "-1s", "--id", "1"); code != exitUsage || !strings.Contains(out, "--hold is negative") {
			t.Errorf("huddle lock --hold -1s: exit %d, %q", code, out)
		}

		// A second node with the same ID on this host finds the socket in
		// use, and says so before it joins.
		log := filepath.Join(t.TempDir(), "twin.log")
		code, out = runBinary(t, bin, "run", "--profile", "local", "--iface", "lo", "--id", "1", "--log-file", log, "--duration", "5s")
		if code != exitFailure || !strings.Contains(out, "socket "+sock(1)+" is in use: another node answers there (node 1 of group \"huddle\")") {
			t.Errorf("a second node 1: exit %d, %q; want %d and the socket in use", code, out, exitFailure)
		}

		n.stop(t, syscall.SIGTERM)
		if _, err := os.Lstat(sock(1)); !os.IsNotExist(err) {
			t.Errorf("the socket is still there after the node stopped: %v", err)
		}
		// node.stats (in the log) and huddle status show the same counters.
		stats := lastEvent(t, checkJSONLog(t, n.log, 1), logs.NodeStats)
		var logged []string
		for k := range stats {
			if !slices.Contains([]string{logs.TimeKey, logs.LevelKey, logs.NodeKey, logs.EventKey, logs.MessageKey, logs.WhyKey, logs.ViewKey, logs.MembersKey}, k) {
				logged = append(logged, k)
			}
		}
		var shown []string
		for k := range counters {
			shown = append(shown, k)
		}
		slices.Sort(logged)
		slices.Sort(shown)
		if !slices.Equal(logged, shown) {
			t.Errorf("node.stats logs %v\nhuddle status shows %v", logged, shown)
		}

		code, out = runBinary(t, bin, "status", "--id", "1")
		if code != exitFailure || !strings.Contains(out, "no node is running at "+sock(1)) || !strings.Contains(out, "huddle run") {
			t.Errorf("huddle status with no node: exit %d, %q", code, out)
		}
	})

	t.Run("not in a view yet", func(t *testing.T) {
		n := startProc(t, bin, 2, "--join-timeout", "1m")
		n.waitEvent(t, 5*time.Second, logs.NodeStarted, nil)
		code, out := runBinary(t, bin, "send", "--id", "2", "early")
		if code != exitFailure || !strings.Contains(out, "node 2 is not in a view yet") {
			t.Errorf("huddle send before a view: exit %d, %q", code, out)
		}
		code, out = runBinary(t, bin, "status", "--id", "2")
		if code != exitOK || !strings.Contains(out, "no view yet") {
			t.Errorf("huddle status before a view: exit %d, %q", code, out)
		}
		n.stop(t, syscall.SIGTERM)
	})

	t.Run("stale socket", func(t *testing.T) {
		os.MkdirAll(filepath.Dir(sock(3)), 0o700)
		staleSocket(t, sock(3))
		n := startProc(t, bin, 3)
		n.waitEvent(t, 5*time.Second, logs.NodeStarted, nil)
		if code, out := runBinary(t, bin, "status", "--id", "3"); code != exitOK || !strings.Contains(out, "node 3 ") {
			t.Errorf("huddle status at a node that replaced a stale socket: exit %d, %q", code, out)
		}
		n.stop(t, syscall.SIGTERM)
		if _, err := os.Lstat(sock(3)); !os.IsNotExist(err) {
			t.Errorf("the socket is still there after the node stopped: %v", err)
		}
	})

	t.Run("off", func(t *testing.T) {
		n := startProc(t, bin, 4, "--control-socket", "off")
		started := n.waitEvent(t, 5*time.Second, logs.NodeStarted, nil)
		if started[logs.ControlSocketKey] != "off" {
			t.Errorf("node.started: control_socket %v, want off", started[logs.ControlSocketKey])
		}
		if _, err := os.Lstat(sock(4)); !os.IsNotExist(err) {
			t.Errorf("a node with control_socket off made a socket: %v", err)
		}
		n.stop(t, syscall.SIGTERM)
	})
}

// parseStatus decodes huddle status --json, numbers as json.Number.
func parseStatus(t *testing.T, out string) map[string]any {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Errorf("huddle status --json printed %d lines, want one:\n%s", strings.Count(out, "\n"), out)
	}
	d := json.NewDecoder(strings.NewReader(out))
	d.UseNumber()
	var st map[string]any
	if err := d.Decode(&st); err != nil {
		t.Fatalf("huddle status --json: %v\n%s", err, out)
	}
	for _, k := range []string{"id", "incarnation", "group", "addr", "iface", "src", "state", "view", "coordinator", "members", "peers", "leader", "leader_round", "election", "lock", "counters"} {
		if _, ok := st[k]; !ok {
			t.Errorf("huddle status --json has no %q: %s", k, out)
		}
	}
	return st
}

// TestSendStandardInput: huddle send - sends standard input a message per
// line, or with --raw as a stream cut in --raw-size pieces whose payloads,
// joined, are the stream.
func TestSendStandardInput(t *testing.T) {
	clearHuddleEnv(t)
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	os.Mkdir(filepath.Join(xdg, "huddle"), 0o700)
	one := &fakeNode{id: 1, group: "huddle"}
	serveFake(t, control.DefaultPath("huddle", 1), one)
	for _, c := range []struct {
		name, stdin string
		args        []string
		code        int
		stdout      string
		sent        string
	}{
		{name: "lines", stdin: "one\ntwo\r\n\nlast without newline", args: []string{"-"},
			stdout: "sent 4 messages: seq 1 to 4, order fifo\n", sent: "one/fifo two/fifo /fifo last without newline/fifo"},
		{name: "lines total", stdin: "a\nb\n", args: []string{"--order", "total", "-"}, stdout: "sent 2 messages: seq 1 to 2, order total\n", sent: "a/total b/total"},
		{name: "empty", stdin: "", args: []string{"-"}, stdout: "sent nothing: standard input was empty\n"},
		{name: "raw", stdin: "abcdefg\x00\xff", args: []string{"--raw", "--raw-size", "4", "-"},
			stdout: "sent 3 messages: seq 1 to 3, order fifo\n", sent: "abcd/fifo efg\x00/fifo \xff/fifo"},
		{name: "raw needs -", args: []string{"--raw", "text"}, code: 2},
		{name: "raw size", args: []string{"--raw", "--raw-size", "0", "-"}, code: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			one.mu.Lock()
			one.sent = nil
			one.mu.Unlock()
			var stdout, stderr bytes.Buffer
			code := cmdSendFrom(append([]string{"--id", "1"}, c.args...), strings.NewReader(c.stdin), &stdout, &stderr)
			if code != c.code || (c.code == 0 && stdout.String() != c.stdout) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", code, &stdout, &stderr, c.code, c.stdout)
			}
			one.mu.Lock()
			sent := strings.Join(one.sent, " ")
			one.mu.Unlock()
			if sent != c.sent {
				t.Errorf("node 1 got %q, want %q", sent, c.sent)
			}
		})
	}
}
