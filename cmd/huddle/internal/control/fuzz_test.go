package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/internal/wire"
)

// fuzzNode is a Node for FuzzRequest: it answers at once, counts calls,
// keeps what it was given, and fails with the error its mode picks.
type fuzzNode struct {
	mode    byte
	calls   int
	state   string
	payload []byte
	service []byte
	drop    *huddle.Drop
}

// fuzzErrors are the errors a node can answer with, by mode (0: none).
var fuzzErrors = []error{nil, context.DeadlineExceeded, huddle.ErrClosed, context.Canceled, huddle.ErrLockBusy,
	huddle.ErrLockLost, errors.New("something else"), ErrBusy}

func (f *fuzzNode) err() error { f.calls++; return fuzzErrors[int(f.mode)%len(fuzzErrors)] }

func (f *fuzzNode) Status(context.Context) (huddle.Status, error) {
	return huddle.Status{ID: 1, Group: "huddle", State: f.state, Counters: huddle.Counters{{Name: "injected_drops", Value: uint64(3)}}}, f.err()
}

func (f *fuzzNode) Multicast(_ context.Context, service, payload []byte, _ wire.Order) (uint64, error) {
	f.service, f.payload = service, payload
	return 7, f.err()
}

func (f *fuzzNode) Elect(context.Context) (huddle.ElectResult, error) {
	return huddle.ElectResult{}, f.err()
}
func (f *fuzzNode) Lock(context.Context) error { return f.err() }

func (f *fuzzNode) Probe(context.Context) (huddle.ProbeResult, error) {
	return huddle.ProbeResult{View: "1.1", Members: []huddle.ProbeRow{{ID: 1}}}, f.err()
}

// Watch gives a watcher whose channel is closed at once: the stream ends
// as when the node stops.
func (f *fuzzNode) Watch(...string) Watch {
	f.calls++
	w := &fakeWatch{c: make(chan huddle.WatchEvent)}
	close(w.c)
	return w
}
func (f *fuzzNode) Unlock(context.Context) error { f.calls++; return nil }

func (f *fuzzNode) ReloadKeys(ctx context.Context) error {
	f.calls++
	return nil
}

func (f *fuzzNode) SetDrop(_ context.Context, d huddle.Drop) (huddle.Drop, error) {
	f.drop = &d
	return huddle.Drop{}, f.err()
}

// documentedCodes reads the error codes of docs/control.md's table.
func documentedCodes(t testing.TB) map[string]bool {
	b, err := os.ReadFile("../../../../docs/control.md")
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllSubmatch(b, -1) {
		codes[string(m[1])] = true
	}
	for _, e := range []*Error{ErrBadRequest, ErrUnknownCommand, ErrTooLarge, ErrBusy, ErrTimeout, ErrNotInView, ErrStopped, ErrFailed} {
		if !codes[e.Code] {
			t.Fatalf("error code %s is not in docs/control.md's table %v", e.Code, codes)
		}
	}
	return codes
}

// FuzzRequest feeds arbitrary bytes, as a client would write them to the
// control socket, to what the server does with them: read one line
// (readLine, at the real limit or a small one, through a small buffer),
// parse it (parseRequest), find the command and run it, arguments and all,
// against a node that answers at once, with any of the errors a node
// gives. Nothing may panic; every failure must carry a code documented in
// docs/control.md, and the right one for what went wrong (a line too
// long, malformed JSON, an unknown command); the reply must encode as one
// JSON line that decodes to the same; the work is bounded (the node is
// called at most a few times, the line is never longer than the limit,
// the request's timeout is within its bounds); and what reaches the node
// obeys the commands' rules (send: no reserved service, the bytes given;
// drop: a rate in [0, 1], at most 1024 senders, IDs in range; lock: a
// hold that is not negative). `go test` runs the seeds and
// testdata/fuzz/FuzzRequest; `go test -run '^$' -fuzz FuzzRequest
// ./internal/control` searches further.
func FuzzRequest(f *testing.F) {
	for _, line := range []string{
		`{"cmd":"status"}`,
		`{"cmd":"status","args":null,"timeout_ms":10}`,
		`{"cmd":"send","args":{"text":"hello","order":"total"}}`,
		`{"cmd":"send","args":{"payload":"aGVsbG8=","order":"safe","service":"chat"},"timeout_ms":-5}`,
		`{"cmd":"send","args":{"text":"x","payload":"eA=="}}`,
		`{"cmd":"send","args":{"text":"x","service":"mutex"}}`,
		`{"cmd":"send","args":{"order":"fifo2"}}`,
		`{"cmd":"elect"}`,
		`{"cmd":"elect","args":{"x":1}}`,
		`{"cmd":"lock","args":{"hold_ms":5}}`,
		`{"cmd":"lock","args":{"hold_ms":-1}}`,
		`{"cmd":"lock","args":{"hold_ms":1e99}}`,
		`{"cmd":"drop","args":{"rate":0.5,"from":[1,2],"seed":9}}`,
		`{"cmd":"drop","args":{"rate":1.5}}`,
		`{"cmd":"drop","args":{"from":[1]}}`,
		`{"cmd":"drop","args":{"rate":0.1,"from":[0]}}`,
		`{"cmd":"drop","args":{"rate":0.1,"from":[18446744073709551615]}}`,
		`{"cmd":"drop"}`,
		`{"cmd":"nope"}`,
		`{"cmd":""}`,
		`{"cmd":"status","extra":1}`,
		`{"cmd":"status"} {"cmd":"status"}`,
		`{"cmd":"status","timeout_ms":99999999999999}`,
		`[1,2,3]`,
		`{"cmd":"send","args":{"text":"\ud800"}}`,
		"",
		"\n",
		`{"cmd":"status"`,
	} {
		f.Add(byte(0), []byte(line+"\n"))
		f.Add(byte(0x81), []byte(line))
	}
	codes := documentedCodes(f)
	f.Fuzz(func(t *testing.T, mode byte, data []byte) {
		// mode: bits 0–2 the node's error, bit 3 joining, bit 7 a small line limit.
		limit := MaxRequest
		if mode&0x80 != 0 {
			limit = 1 + len(data)/2
		}
		fn := &fuzzNode{mode: mode & 7, state: huddle.StateMember}
		if mode&8 != 0 {
			fn.state = huddle.StateJoining
		}
		start := time.Now()
		line, err := readLine(bufio.NewReaderSize(bytes.NewReader(data), 16), limit, "request")
		if err == nil && len(line) > limit {
			t.Fatalf("readLine returned %d bytes, over the limit of %d", len(line), limit)
		}
		nl := bytes.IndexByte(data, '\n')
		first := data
		if nl >= 0 {
			first = data[:nl]
		}
		switch {
		case len(first) > limit:
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("a line of %d bytes over the limit %d: %v", len(first), limit, err)
			}
			return
		case len(bytes.TrimSpace(first)) == 0 && nl < 0:
			if err != errEmpty {
				t.Fatalf("nothing but blanks: %v", err)
			}
			return
		case err != nil:
			t.Fatalf("a line of %d bytes (limit %d): %v", len(first), limit, err)
		case !bytes.Equal(line, first):
			t.Fatalf("readLine returned %q, want %q", line, first)
		}
		cmd, res, err := answer(fn, line)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !codes[e.Code] {
				t.Fatalf("request %q: error %v has no documented code", line, err)
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("request %q took %v", line, d)
		}
		if fn.calls > 3 {
			t.Fatalf("request %q called the node %d times", line, fn.calls)
		}
		checkReply(t, line, res, err)
		checkReachedNode(t, cmd, line, fn, err)
	})
}

// answer is what the server's handle does with a line: parse it, find
// the command, run it (here with a context already over, so that a lock's
// hold ends at once).
func answer(fn *fuzzNode, line []byte) (cmd string, res any, err error) {
	req, err := parseRequest(line)
	if err != nil {
		if !errors.Is(err, ErrBadRequest) {
			return req.Cmd, nil, fmt.Errorf("a request that does not parse is not a bad_request: %w", err)
		}
		return req.Cmd, nil, err
	}
	if d := req.timeout(); d <= 0 || d > MaxTimeout {
		return req.Cmd, nil, fmt.Errorf("timeout %v out of its bounds", d)
	}
	h, ok := Commands(fn)[req.Cmd]
	if !ok {
		return req.Cmd, nil, errorf(ErrUnknownCommand, "unknown")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = h(ctx, req.Args)
	return req.Cmd, res, err
}

// checkReply checks that the reply encodes as one line that decodes to
// the same code or result.
func checkReply(t *testing.T, line []byte, res any, err error) {
	t.Helper()
	rep := Reply{OK: err == nil}
	if err == nil {
		b, merr := json.Marshal(res)
		if merr != nil {
			t.Fatalf("request %q: result %#v does not encode: %v", line, res, merr)
		}
		rep.Result = b
	} else {
		rep = Reply{Error: asError(err)}
	}
	b, merr := json.Marshal(rep)
	if merr != nil || bytes.ContainsAny(b, "\n\r") {
		t.Fatalf("request %q: reply %q (%v) is not one line", line, b, merr)
	}
	var back Reply
	if err := json.Unmarshal(b, &back); err != nil || back.OK != rep.OK || (back.Error == nil) != (rep.Error == nil) || back.Error != nil && back.Error.Code != rep.Error.Code {
		t.Fatalf("request %q: reply %s decodes as %+v (%v)", line, b, back, err)
	}
}

// checkReachedNode checks what the commands passed on to the node.
func checkReachedNode(t *testing.T, cmd string, line []byte, fn *fuzzNode, err error) {
	t.Helper()
	switch {
	case fn.payload != nil || fn.service != nil:
		s := string(fn.service)
		if cmd != "send" || huddle.Reserved(s) || len(s) > huddle.MaxServiceName || fn.state == huddle.StateJoining || len(fn.payload) > len(line) {
			t.Fatalf("request %q: sent %d bytes on service %q (joining %v)", line, len(fn.payload), s, fn.state == huddle.StateJoining)
		}
	case fn.drop != nil:
		d := fn.drop
		if cmd != "drop" || !(d.Rate >= 0 && d.Rate <= 1) || len(d.From) > maxDropFrom {
			t.Fatalf("request %q: set drop %+v", line, *d)
		}
		for _, id := range d.From {
			if id == 0 || id > math.MaxInt64 {
				t.Fatalf("request %q: drop from %d", line, id)
			}
		}
	}
	if cmd == "lock" && err == nil && strings.Contains(string(line), `"hold_ms":-`) {
		t.Fatalf("request %q: a negative hold was taken", line)
	}
}
