package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/internal/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeNode stands in for a running node.
type fakeNode struct {
	mu        sync.Mutex
	state     string
	stopped   bool          // every call fails with huddle.ErrClosed
	block     bool          // Multicast waits for its context
	entered   chan struct{} // if set, gets a value when a blocking Multicast starts waiting
	sent      []sentMsg
	elections int
	locks     int
	drop      huddle.Drop
	drops     uint64 // injected_drops reported
	watch     *fakeWatch
}

type sentMsg struct {
	service string
	payload string
	order   wire.Order
}

func (f *fakeNode) Status(ctx context.Context) (huddle.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return huddle.Status{}, huddle.ErrClosed
	}
	st := huddle.Status{ID: 1, Group: "g", State: f.state, View: "2.1", Coordinator: 1,
		Members:  []huddle.StatusMember{{ID: 1, Incarnation: 10}, {ID: 2, Incarnation: 20}},
		Counters: huddle.Counters{{Name: "msgs_sent", Value: uint64(len(f.sent))}, {Name: "srm_spread", Value: 2.5}}}
	if f.drop.Active() {
		d := f.drop
		st.Drop = &d
		st.Counters = append(st.Counters, huddle.Counter{Name: "injected_drops", Value: f.drops})
	}
	return st, nil
}

func (f *fakeNode) Probe(ctx context.Context) (huddle.ProbeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return huddle.ProbeResult{}, huddle.ErrClosed
	}
	<-ctx.Done() // member 2 never answers
	return huddle.ProbeResult{View: "2.1", Asker: 1, Members: []huddle.ProbeRow{
		{ID: 1, Incarnation: 10, Answered: true, Info: &huddle.ProbeInfo{ID: 1, Incarnation: 10, View: "2.1", Role: "coordinator"}},
		{ID: 2, Incarnation: 20}}}, nil
}

// Watch gives the test's watcher (f.watch), made on first use.
func (f *fakeNode) Watch(...string) Watch {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watch == nil {
		f.watch = &fakeWatch{c: make(chan huddle.WatchEvent, 8)}
	}
	f.watch.mu.Lock()
	f.watch.closed = false
	f.watch.mu.Unlock()
	return f.watch
}

// fakeWatch is a watcher fed by the test.
type fakeWatch struct {
	c       chan huddle.WatchEvent
	dropped atomic.Uint64
	closed  bool
	mu      sync.Mutex
}

func (w *fakeWatch) C() <-chan huddle.WatchEvent { return w.c }
func (w *fakeWatch) Dropped() uint64             { return w.dropped.Load() }
func (w *fakeWatch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

func (f *fakeNode) Lock(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return huddle.ErrClosed
	}
	f.locks++
	return nil
}

func (f *fakeNode) ReloadKeys(context.Context) error { return nil }

func (f *fakeNode) Unlock(ctx context.Context) error { return nil }

func (f *fakeNode) SetDrop(ctx context.Context, d huddle.Drop) (huddle.Drop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return huddle.Drop{}, huddle.ErrClosed
	}
	old := f.drop
	f.drop, f.drops = d, 7
	return old, nil
}

func (f *fakeNode) Elect(ctx context.Context) (huddle.ElectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return huddle.ElectResult{}, huddle.ErrClosed
	}
	f.elections++
	return huddle.ElectResult{Started: true, Algorithm: "ring", Leader: 2, Round: uint64(f.elections)}, nil
}

func (f *fakeNode) Multicast(ctx context.Context, service, payload []byte, order wire.Order) (uint64, error) {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block {
		if f.entered != nil {
			f.entered <- struct{}{}
		}
		<-ctx.Done()
		return 0, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, sentMsg{string(service), string(payload), order})
	return uint64(len(f.sent)), nil
}

// serve starts a server for cmds on a socket in a fresh directory; the
// test's cleanup closes it.
func serve(t *testing.T, cmds map[string]Handler) *Server {
	t.Helper()
	return serveWith(t, cmds, func(*Server) {})
}

// serveWith is serve with a chance to set the server's fields first.
func serveWith(t *testing.T, cmds map[string]Handler, set func(*Server)) *Server {
	t.Helper()
	s, err := Listen(filepath.Join(t.TempDir(), "c.sock"), cmds, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	set(s)
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// rawCall writes raw to the socket (a newline is not added) and returns
// the reply line, or "" if the server closed without one.
func rawCall(t *testing.T, path, raw string, halfClose bool) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if len(raw) > 1<<16 {
		go c.Write([]byte(raw)) // it may not fit the socket's buffer: read the reply meanwhile
	} else {
		c.Write([]byte(raw))
	}
	if halfClose {
		c.(*net.UnixConn).CloseWrite()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && line == "" {
		return ""
	}
	return line
}

func TestRequests(t *testing.T) {
	panicky := func(context.Context, json.RawMessage) (any, error) { panic("boom") }
	for _, c := range []struct {
		name    string
		state   string // the fake's (default member)
		stopped bool
		block   bool
		raw     string
		half    bool   // shut down writing after the request instead of a newline
		code    string // the error's; "" for ok
		want    string // in the reply
		sent    string // the message the fake got, with its order
	}{
		{name: "status", raw: `{"cmd":"status"}` + "\n", want: `"members":[{"id":1,"incarnation":10},{"id":2,"incarnation":20}]`},
		{name: "status counters in order", raw: `{"cmd":"status","args":null}` + "\n", want: `"counters":{"msgs_sent":0,"srm_spread":2.5}`},
		{name: "status without newline", raw: `{"cmd":"status"}`, half: true, want: `"view":"2.1"`},
		{name: "status with CRLF", raw: `{"cmd":"status"}` + "\r\n", want: `"view":"2.1"`},
		{name: "status with arguments", raw: `{"cmd":"status","args":{"x":1}}` + "\n", code: "bad_request", want: `unknown field \"x\"`},
		{name: "status of the group", raw: `{"cmd":"status","args":{"group":true,"wait_ms":20}}` + "\n",
			want: `{"view":"2.1","asker":1,"wait_ms":0,"members":[{"id":1,"incarnation":10,"answered":true,"info":{"id":1,`},
		{name: "status of the group, silent member", raw: `{"cmd":"status","args":{"group":true,"wait_ms":20}}` + "\n", want: `{"id":2,"incarnation":20,"answered":false}]}`},
		{name: "status of the group, bad wait", raw: `{"cmd":"status","args":{"group":true,"wait_ms":-1}}` + "\n", code: "bad_request", want: "wait_ms -1 is out of range"},
		{name: "watch too many services", raw: `{"cmd":"watch","args":{"services":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}}` + "\n",
			code: "bad_request", want: "17 services (at most 16)"},
		{name: "watch a long service", raw: `{"cmd":"watch","args":{"services":["` + strings.Repeat("s", 65) + `"]}}` + "\n", code: "bad_request", want: "65 bytes (at most 64)"},
		{name: "send text", raw: `{"cmd":"send","args":{"text":"hi","order":"total"}}` + "\n", want: `{"seq":1,"order":"total"}`, sent: "hi/total"},
		{name: "send payload", raw: `{"cmd":"send","args":{"payload":"/2hp"}}` + "\n", want: `"order":"fifo"`, sent: "\xffhi/fifo"},
		{name: "send empty", raw: `{"cmd":"send","args":{"order":"safe"}}` + "\n", want: `"order":"safe"`, sent: "/safe"},
		{name: "send on a service", raw: `{"cmd":"send","args":{"text":"hi","service":"chat"}}` + "\n", want: `"order":"fifo"`, sent: "chat:hi/fifo"},
		{name: "send on the lock's service", raw: `{"cmd":"send","args":{"text":"hi","service":"mutex"}}` + "\n", code: "bad_request", want: `service \"mutex\" is the node's own`},
		{name: "send on a long service", raw: `{"cmd":"send","args":{"text":"hi","service":"` + strings.Repeat("s", 65) + `"}}` + "\n", code: "bad_request", want: "65 bytes (at most 64)"},
		{name: "send text and payload", raw: `{"cmd":"send","args":{"text":"a","payload":"Yg=="}}` + "\n", code: "bad_request", want: "not both"},
		{name: "send bad order", raw: `{"cmd":"send","args":{"text":"a","order":"record"}}` + "\n", code: "bad_request", want: `order \"record\" is not fifo, total, safe or causal`},
		{name: "send args not an object", raw: `{"cmd":"send","args":"a"}` + "\n", code: "bad_request", want: "malformed arguments"},
		{name: "send while joining", state: huddle.StateJoining, raw: `{"cmd":"send","args":{"text":"a"}}` + "\n", code: "not_in_view", want: "not in a view yet"},
		{name: "send times out", block: true, raw: `{"cmd":"send","args":{"text":"a"},"timeout_ms":30}` + "\n", code: "timeout", want: "was not sent"},
		{name: "status of a stopping node", stopped: true, raw: `{"cmd":"status"}` + "\n", code: "stopped"},
		{name: "elect", raw: `{"cmd":"elect"}` + "\n", want: `{"started":true,"algorithm":"ring","leader":2,"leader_round":1}`},
		{name: "elect with arguments", raw: `{"cmd":"elect","args":{"now":true}}` + "\n", code: "bad_request", want: `unknown field \"now\"`},
		{name: "elect on a stopping node", stopped: true, raw: `{"cmd":"elect"}` + "\n", code: "stopped"},
		{name: "lock", raw: `{"cmd":"lock","args":{"hold_ms":1}}` + "\n", want: `"held_ms":`},
		{name: "lock with a negative hold", raw: `{"cmd":"lock","args":{"hold_ms":-1}}` + "\n", code: "bad_request", want: "negative"},
		{name: "key report", raw: `{"cmd":"key"}` + "\n", want: `{"fingerprints":[]}`},
		{name: "key reload", raw: `{"cmd":"key","args":{"reload":true}}` + "\n", want: `{"fingerprints":[]}`},
		{name: "key bad args", raw: `{"cmd":"key","args":{"reload":1}}` + "\n", code: "bad_request"},
		{name: "drop report", raw: `{"cmd":"drop"}` + "\n", want: `{"drop":{"rate":0},"injected_drops":0}`},
		{name: "drop set", raw: `{"cmd":"drop","args":{"rate":0.25,"from":[3,4],"seed":9}}` + "\n", want: `{"drop":{"rate":0.25,"from":[3,4],"seed":9},"before":{"rate":0},"injected_drops":7}`},
		{name: "drop off", raw: `{"cmd":"drop","args":{"rate":0}}` + "\n", want: `{"drop":{"rate":0},"before":{"rate":0},"injected_drops":0}`},
		{name: "drop rate too high", raw: `{"cmd":"drop","args":{"rate":1.5}}` + "\n", code: "bad_request", want: "rate 1.5 is out of range (0 to 1)"},
		{name: "drop in bursts", raw: `{"cmd":"drop","args":{"rate":0.2,"burst":4}}` + "\n", want: `{"drop":{"rate":0.2,"burst":4},"before":{"rate":0},"injected_drops":7}`},
		{name: "drop burst too short", raw: `{"cmd":"drop","args":{"rate":0.9,"burst":2}}` + "\n", code: "bad_request", want: "drop: burst 2 is too short for a loss of 0.9 (bursts of 2 allow a loss of at most 0.6667"},
		{name: "drop burst out of range", raw: `{"cmd":"drop","args":{"rate":0.1,"burst":0.5}}` + "\n", code: "bad_request", want: "drop: burst 0.5 is out of range (0 or 1 for independent losses, else 1 to 1000)"},
		{name: "drop burst without rate", raw: `{"cmd":"drop","args":{"burst":3}}` + "\n", code: "bad_request", want: "from, seed and burst go with a rate"},
		{name: "drop from without rate", raw: `{"cmd":"drop","args":{"from":[3]}}` + "\n", code: "bad_request", want: "go with a rate"},
		{name: "drop from ID 0", raw: `{"cmd":"drop","args":{"rate":1,"from":[0]}}` + "\n", code: "bad_request", want: "sender ID 0 is out of range"},
		{name: "drop on a stopping node", stopped: true, raw: `{"cmd":"drop","args":{"rate":1}}` + "\n", code: "stopped"},
		{name: "unknown command", raw: `{"cmd":"unlock"}` + "\n", code: "unknown_command", want: `unknown command \"unlock\" (this node knows: drop, elect, key, lock, panic, send, status, watch)`},
		{name: "panicking command", raw: `{"cmd":"panic"}` + "\n", code: "failed", want: "internal error: boom"},
		{name: "not JSON", raw: "status\n", code: "bad_request", want: "malformed request"},
		{name: "no cmd", raw: "{}\n", code: "bad_request", want: `no \"cmd\"`},
		{name: "unknown field", raw: `{"cmd":"status","tiemout_ms":5}` + "\n", code: "bad_request", want: `unknown field \"tiemout_ms\"`},
		{name: "two requests on a line", raw: `{"cmd":"status"} {"cmd":"status"}` + "\n", code: "bad_request", want: "more than one"},
		{name: "array", raw: `["status"]` + "\n", code: "bad_request"},
		{name: "cut short", raw: `{"cmd":"sta`, half: true, code: "bad_request"},
		{name: "binary", raw: "\x00\xff\xfe\n", code: "bad_request"},
		{name: "too large", raw: `{"cmd":"send","args":{"text":"` + strings.Repeat("a", MaxRequest) + `"}}` + "\n", code: "too_large", want: "longer than 1048576 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeNode{state: cmpOr(c.state, huddle.StateMember), stopped: c.stopped, block: c.block}
			cmds := Commands(f)
			cmds["panic"] = panicky
			s := serve(t, cmds)
			line := rawCall(t, s.Path(), c.raw, c.half)
			var rep Reply
			if err := json.Unmarshal([]byte(line), &rep); err != nil {
				t.Fatalf("reply %q: %v", line, err)
			}
			switch {
			case c.code == "" && !rep.OK, c.code != "" && (rep.OK || rep.Error == nil || rep.Error.Code != c.code):
				t.Errorf("reply %s, want code %q", line, c.code)
			case !strings.Contains(line, c.want):
				t.Errorf("reply %s, want it to contain %s", line, c.want)
			}
			var sent string
			for _, m := range f.sent {
				if m.service != "" {
					sent += m.service + ":"
				}
				sent += m.payload + "/" + m.order.String()
			}
			if sent != c.sent {
				t.Errorf("the node sent %q, want %q", sent, c.sent)
			}
			// Whatever came before, the server still answers.
			if line := rawCall(t, s.Path(), `{"cmd":"status"}`+"\n", false); !strings.Contains(line, `"ok":`) {
				t.Errorf("after that, a request got %q", line)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// TestSilentClient: a client that connects and says nothing, or stops in
// the middle of its request, loses its connection after the read timeout.
// TestStream watches a fake node: events arrive one per line, a count of
// dropped events comes before the next event, hanging up closes the
// node's watcher, more than MaxStreams at once are refused, and closing
// the server ends a stream with its last reply.
func TestStream(t *testing.T) {
	f := &fakeNode{state: huddle.StateMember}
	s := serve(t, Commands(f))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 8)
	done := make(chan error, 1)
	go func() {
		_, err := CallStream(ctx, s.Path(), "watch", WatchArgs{Services: []string{"chat"}}, func(ev json.RawMessage) error {
			got <- string(ev)
			return nil
		})
		done <- err
	}()
	var w *fakeWatch
	for w == nil {
		time.Sleep(time.Millisecond)
		f.mu.Lock()
		w = f.watch
		f.mu.Unlock()
	}
	w.c <- huddle.WatchEvent{Event: "view.installed", View: "3.1"}
	if ev := <-got; !strings.Contains(ev, `"event":"view.installed","view":"3.1"`) {
		t.Errorf("first event %s", ev)
	}
	w.dropped.Store(5)
	w.c <- huddle.WatchEvent{Event: "deliver", Payload: []byte("x")}
	if ev := <-got; !strings.Contains(ev, `"event":"watch.dropped"`) || !strings.Contains(ev, `"count":5`) {
		t.Errorf("after 5 drops: %s", ev)
	}
	if ev := <-got; !strings.Contains(ev, `"event":"deliver"`) || !strings.Contains(ev, `"payload":"eA=="`) {
		t.Errorf("second event %s", ev)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("CallStream after its context ended: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		closed := w.closed
		w.mu.Unlock()
		if closed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client hung up and the node's watcher is still open")
		}
	}

	// MaxStreams at once, then one more.
	var results []chan error
	for range MaxStreams {
		r := make(chan error, 1)
		results = append(results, r)
		go func() {
			res, err := CallStream(context.Background(), s.Path(), "watch", nil, func(json.RawMessage) error { return nil })
			if err == nil && !strings.Contains(string(res), `"dropped":5`) {
				err = fmt.Errorf("last reply %s", res)
			}
			r <- err
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); len(s.streams) < MaxStreams; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams running, want %d", len(s.streams), MaxStreams)
		}
	}
	_, err := CallStream(context.Background(), s.Path(), "watch", nil, func(json.RawMessage) error { return nil })
	if !errors.Is(err, ErrBusy) {
		t.Errorf("stream %d: %v, want busy", MaxStreams+1, err)
	}
	s.Close()
	for _, r := range results {
		if err := <-r; err != nil {
			t.Errorf("a stream ended by Close: %v", err)
		}
	}
}

func TestSilentClient(t *testing.T) {
	s := serveWith(t, Commands(&fakeNode{state: huddle.StateMember}), func(s *Server) { s.readTimeout = 50 * time.Millisecond })
	for _, c := range []struct{ raw, want string }{{"", ""}, {`{"cmd":`, "incomplete request: no newline before the read timeout"}} {
		start := time.Now()
		line := rawCall(t, s.Path(), c.raw, false)
		if c.want == "" && line != "" || !strings.Contains(line, c.want) {
			t.Errorf("after %q: reply %q, want one containing %q", c.raw, line, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("after %q: the connection lasted %v", c.raw, d)
		}
	}
}

// TestBusy: past MaxConns requests at once, the next gets a busy reply at
// once, and once they are done requests are served again.
func TestBusy(t *testing.T) {
	started, release := make(chan struct{}, MaxConns), make(chan struct{})
	s := serve(t, map[string]Handler{
		"wait": func(ctx context.Context, _ json.RawMessage) (any, error) {
			started <- struct{}{}
			<-release
			return "done", nil
		},
		"quick": func(context.Context, json.RawMessage) (any, error) { return "quick", nil },
	})
	replies := make(chan string, MaxConns)
	for range MaxConns {
		go func() { replies <- rawCallNoT(s.Path(), `{"cmd":"wait"}`+"\n") }()
	}
	for range MaxConns {
		<-started
	}
	if line := rawCall(t, s.Path(), `{"cmd":"quick"}`+"\n", false); !strings.Contains(line, `"code":"busy"`) {
		t.Errorf("request %d got %q, want busy", MaxConns+1, line)
	}
	close(release)
	for range MaxConns {
		if line := <-replies; !strings.Contains(line, `"result":"done"`) {
			t.Errorf("a waiting request got %q", line)
		}
	}
	if line := rawCall(t, s.Path(), `{"cmd":"quick"}`+"\n", false); !strings.Contains(line, `"result":"quick"`) {
		t.Errorf("after the others finished: %q", line)
	}
}

func rawCallNoT(path, raw string) string {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte(raw))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// TestCloseCancels: Close ends requests in progress (their context is
// cancelled) and waits for them.
func TestCloseCancels(t *testing.T) {
	f := &fakeNode{state: huddle.StateMember, block: true, entered: make(chan struct{}, 1)}
	s, err := Listen(filepath.Join(t.TempDir(), "c.sock"), Commands(f), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	reply := make(chan error, 1)
	go func() {
		_, err := Call(context.Background(), s.Path(), time.Minute, "send", SendArgs{Text: "x"})
		reply <- err
	}()
	<-f.entered // the send is blocked in the node
	start := time.Now()
	s.Close()
	if err := <-reply; !errors.Is(err, ErrStopped) {
		t.Errorf("a send in progress at Close got %v, want %v", err, ErrStopped)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
}

func TestSocketFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "n.sock")
	s, err := Listen(path, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: os.ModeSocket | 0o600, dir: os.ModeDir | 0o700, filepath.Dir(dir): os.ModeDir | 0o700} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode(), err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after Close: %v", err)
	}

	// A server whose socket another one replaced leaves the newer socket.
	s1, err := Listen(path, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	s2, err := Listen(path, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s1.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("closing the replaced server removed the new socket: %v", err)
	}
	s2.Close()
}

func TestExistingSocket(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // a crashed node's socket: the file, and nobody answering
	regular := filepath.Join(dir, "file")
	os.WriteFile(regular, []byte("keep"), 0o600)

	t.Run("stale", func(t *testing.T) {
		if _, err := Call(context.Background(), stale, time.Second, "status", nil); !errors.Is(err, ErrNoNode) {
			t.Errorf("Call at a stale socket: %v, want %v", err, ErrNoNode)
		}
		s2, err := Listen(stale, Commands(&fakeNode{state: huddle.StateMember}), zerolog.Nop())
		if err != nil {
			t.Fatalf("a stale socket was not replaced: %v", err)
		}
		go s2.Serve()
		defer s2.Close()
		if _, err := Call(context.Background(), stale, time.Second, "status", nil); err != nil {
			t.Errorf("the new socket does not answer: %v", err)
		}
	})
	t.Run("live", func(t *testing.T) {
		s := serve(t, Commands(&fakeNode{state: huddle.StateMember}))
		_, err := Listen(s.Path(), nil, zerolog.Nop())
		want := fmt.Sprintf(`socket %s is in use: another node answers there (node 1 of group "g")`, s.Path())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Listen on a live socket: %v, want %q", err, want)
		}
		if _, err := Call(context.Background(), s.Path(), time.Second, "status", nil); err != nil {
			t.Errorf("the live node no longer answers: %v", err)
		}
	})
	t.Run("not a socket", func(t *testing.T) {
		_, err := Listen(regular, nil, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), "exists and is not a socket") {
			t.Errorf("Listen on a regular file: %v", err)
		}
		if b, _ := os.ReadFile(regular); string(b) != "keep" {
			t.Errorf("the file was touched: %q", b)
		}
	})
	t.Run("path too long", func(t *testing.T) {
		long := filepath.Join(dir, strings.Repeat("x", 110)+".sock")
		if _, err := Listen(long, nil, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "at most 107") {
			t.Errorf("Listen on a long path: %v", err)
		}
	})
}

// TestDefaultDirMustBePrivate: the default directory, which may sit in
// /tmp, is refused when others may enter it.
func TestDefaultDirMustBePrivate(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dir := filepath.Join(xdg, "huddle")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // whatever the umask
	_, err := Listen(DefaultPath("g", 1), nil, zerolog.Nop())
	if want := "has permission 0755; it must be private"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Listen in a shared default directory: %v, want %q", err, want)
	}
	os.Chmod(dir, 0o700)
	s, err := Listen(DefaultPath("g", 1), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestCallErrors(t *testing.T) {
	s := serve(t, Commands(&fakeNode{state: huddle.StateJoining}))
	ctx := context.Background()
	_, err := Call(ctx, s.Path(), time.Second, "send", SendArgs{Text: "x"})
	var e *Error
	if !errors.Is(err, ErrNotInView) || !errors.As(err, &e) || !strings.Contains(e.Message, "node 1 is not in a view yet") {
		t.Errorf("send while joining: %v, want %v", err, ErrNotInView)
	}
	missing := filepath.Join(t.TempDir(), "none.sock")
	if _, err := Call(ctx, missing, time.Second, "status", nil); !errors.Is(err, ErrNoNode) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Call at no socket: %v, want %v naming the path", err, ErrNoNode)
	}
	big := SendArgs{Text: strings.Repeat("a", MaxRequest)}
	if _, err := Call(ctx, s.Path(), time.Second, "send", big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Call with a huge request: %v, want %v", err, ErrTooLarge)
	}
	res, err := Call(ctx, s.Path(), time.Second, "status", nil)
	var st huddle.Status
	if err != nil || json.Unmarshal(res, &st) != nil || st.ID != 1 || len(st.Counters) != 2 || st.Counters[1].Name != "srm_spread" {
		t.Errorf("status: %+v, %v", st, err)
	}
	if v, ok := st.Counters.Get("srm_spread"); !ok || v.(json.Number) != "2.5" {
		t.Errorf("srm_spread decoded as %#v", v)
	}
}

// TestCallTimeout: a node that does not answer in time makes Call give up
// a little after its timeout.
func TestCallTimeout(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	path := filepath.Join(t.TempDir(), "mute.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			<-hold // read nothing, answer nothing
			c.Close()
		}
	}()
	start := time.Now()
	_, err = Call(context.Background(), path, 100*time.Millisecond, "status", nil)
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("Call at a mute socket: %v, want %v", err, ErrTimeout)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 100*time.Millisecond+replyGrace+time.Second {
		t.Errorf("Call gave up after %v", d)
	}
}
