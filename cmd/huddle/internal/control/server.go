package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/internal/logs"
)

// A Handler runs one command with its arguments (the request's args, nil
// when it has none) and returns a result to encode as JSON, or an error:
// an *Error reaches the client with its code, anything else as "failed".
// ctx ends at the request's timeout or when the server closes.
type Handler func(ctx context.Context, args json.RawMessage) (any, error)

// A Stream is the result of a streaming command: the server calls it with
// emit, which writes one event line to the client (a Reply with Event),
// and a context that ends when the client hangs up or the server closes;
// what it returns is the last line. At most MaxStreams run at once, and
// they run without the request's timeout.
type Stream func(ctx context.Context, emit func(event any) error) (any, error)

// A Server serves commands on a Unix socket. Make it with Listen.
type Server struct {
	path    string
	file    os.FileInfo // the socket file we bound, to remove only ours
	ln      *net.UnixListener
	cmds    map[string]Handler
	log     zerolog.Logger
	ctx     context.Context
	stop    context.CancelFunc
	slots   chan struct{} // one per connection being handled
	streams chan struct{} // one per stream running
	wg      sync.WaitGroup
	once    sync.Once

	readTimeout time.Duration // tests shorten it
}

// Listen creates the control socket at path, with permission 0600, and
// returns a server for cmds; call Serve to answer requests. Missing
// directories are created with permission 0700; the default directory
// (DefaultDir) must belong to this user and be private to it. A socket
// file at path where nobody answers (left by a node that crashed) is
// replaced; one where a node answers is an error naming the path, as is
// a file that is not a socket.
func Listen(path string, cmds map[string]Handler, log zerolog.Logger) (*Server, error) {
	if path == "" {
		return nil, errors.New("control: no socket path")
	}
	if err := CheckPath(path); err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if err := makeDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control: socket %s: %w", path, err)
	}
	// Close must not unlink a socket that a later node put at path.
	ln.SetUnlinkOnClose(false)
	// The file is born with the umask's permission. The peer check in
	// Serve covers a client that connected before this chmod.
	fi, err := chmodSocket(path)
	if err != nil {
		ln.Close()
		os.Remove(path)
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Server{
		path: path, file: fi, ln: ln, cmds: cmds, log: log, ctx: ctx, stop: stop,
		slots: make(chan struct{}, MaxConns), streams: make(chan struct{}, MaxStreams), readTimeout: readTimeout,
	}, nil
}

func chmodSocket(path string) (os.FileInfo, error) {
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("control: socket %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("control: socket %s: %w", path, err)
	}
	return fi, nil
}

// makeDir creates dir (0700) if it is missing. The default directory must
// be this user's and private: in /tmp, another user could have made it.
func makeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("control: socket directory: %w", err)
	}
	if filepath.Clean(dir) != DefaultDir() {
		return nil
	}
	return checkPrivate(dir)
}

// clearStale removes a socket file at path that nobody answers at.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control: socket %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("control: socket %s: the file exists and is not a socket; remove it or set another --control-socket", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("control: socket %s is in use: another node answers there%s; stop it, or give this node its own --id or --control-socket",
			path, whoIs(path))
	case errors.Is(err, syscall.ECONNREFUSED):
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("control: removing the stale socket %s: %w", path, err)
		}
		return nil
	}
	return fmt.Errorf("control: socket %s exists and cannot be checked: %w", path, err)
}

// whoIs names the node answering at path, if it says.
func whoIs(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := Call(ctx, path, time.Second, "status", nil)
	var st struct {
		ID    uint64 `json:"id"`
		Group string `json:"group"`
	}
	if err != nil || json.Unmarshal(res, &st) != nil {
		return ""
	}
	return fmt.Sprintf(" (node %d of group %q)", st.ID, st.Group)
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Serve answers requests until Close; it returns nil after Close, or the
// error that stopped it accepting.
func (s *Server) Serve() error {
	var backoff time.Duration
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			if !isTemporary(err) {
				return fmt.Errorf("control: accept: %w", err)
			}
			// Out of file descriptors, say: wait instead of spinning.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn().Str(logs.EventKey, logs.ControlError).Err(err).Msg("control socket: cannot accept")
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		s.admit(c)
	}
}

func isTemporary(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EINTR)
}

// admit hands a connection to a goroutine of its own, if a slot is free.
func (s *Server) admit(c *net.UnixConn) {
	if !trusted(c) {
		s.log.Warn().Str(logs.EventKey, logs.ControlError).Msg("control socket: refused a connection from another user")
		c.Close()
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.reply(c, "", time.Now(), nil, errorf(ErrBusy, fmt.Sprintf("the node is handling %d requests already; try again", MaxConns)))
		c.Close()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.slots }()
		defer c.Close()
		s.handle(c)
	}()
}

// handle reads one request from c and writes the reply.
func (s *Server) handle(c *net.UnixConn) {
	start := time.Now()
	c.SetReadDeadline(start.Add(s.readTimeout))
	br := bufio.NewReader(c)
	line, err := readLine(br, MaxRequest, "request")
	if e := (*Error)(nil); err != nil && !errors.As(err, &e) {
		return // connected and went away, or said nothing: no one to answer
	}
	if err != nil {
		s.reply(c, "", start, nil, err)
		return
	}
	req, err := parseRequest(line)
	if err != nil {
		s.reply(c, req.Cmd, start, nil, err)
		return
	}
	h, ok := s.cmds[req.Cmd]
	if !ok {
		s.reply(c, req.Cmd, start, nil, errorf(ErrUnknownCommand,
			fmt.Sprintf("unknown command %q (this node knows: %s)", req.Cmd, strings.Join(s.names(), ", "))))
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, req.timeout())
	defer cancel()
	res, err := s.run(req.Cmd, func() (any, error) { return h(ctx, req.Args) })
	if st, ok := res.(Stream); ok && err == nil {
		s.stream(c, br, req.Cmd, start, st)
		return
	}
	s.reply(c, req.Cmd, start, res, err)
}

// stream runs a streaming command's Stream until it ends, the client
// hangs up (anything it sends after the request is read and ignored) or
// the server closes.
func (s *Server) stream(c *net.UnixConn, br *bufio.Reader, cmd string, start time.Time, st Stream) {
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		s.reply(c, cmd, start, nil, errorf(ErrBusy, fmt.Sprintf("the node serves %d streams (watch) already; stop one", MaxStreams)))
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	c.SetReadDeadline(time.Time{})
	go func() {
		io.Copy(io.Discard, br) // returns when the client hangs up, or handle closes c
		cancel()
	}()
	emit := func(ev any) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		line, _ := json.Marshal(Reply{OK: true, Event: b}) // a Reply always encodes
		c.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err = c.Write(append(line, '\n'))
		return err
	}
	res, err := s.run(cmd, func() (any, error) { return st(ctx, emit) })
	s.reply(c, cmd, start, res, err)
}

var errEmpty = errors.New("control: empty request")

// readLine reads one line (or everything up to EOF) of at most max bytes,
// without the newline. Nothing at all is errEmpty at EOF, else the read's
// error; a line too long or cut short is an *Error. what names the line.
func readLine(r *bufio.Reader, max int, what string) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		// max+1 bytes are a line of max and its newline; without the
		// newline, max+1 bytes are too many, whatever follows.
		if n := len(line) + len(chunk); n > max+1 || n == max+1 && chunk[len(chunk)-1] != '\n' {
			return nil, errorf(ErrTooLarge, fmt.Sprintf("%s longer than %d bytes", what, max))
		}
		line = append(line, chunk...)
		blank := len(bytes.TrimSpace(line)) == 0
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && blank:
			return nil, errEmpty
		case errors.Is(err, io.EOF):
			return line, nil
		case blank:
			return nil, err
		}
		return nil, errorf(ErrBadRequest, fmt.Sprintf("incomplete %s: no newline before %s", what, timeoutOr(err)))
	}
}

func timeoutOr(err error) string {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "the read timeout"
	}
	return err.Error()
}

// parseRequest decodes a request strictly: unknown fields are errors, so
// that a misspelt one is not silently ignored.
func parseRequest(line []byte) (Request, error) {
	var req Request
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		return Request{}, errorf(ErrBadRequest, "malformed request: "+err.Error())
	}
	if d.More() {
		return Request{}, errorf(ErrBadRequest, "malformed request: more than one JSON value on the line")
	}
	if req.Cmd == "" {
		return req, errorf(ErrBadRequest, `malformed request: no "cmd"`)
	}
	return req, nil
}

// run calls command cmd's f (its handler, or its stream); a panicking
// command fails its request, not the node.
func (s *Server) run(cmd string, f func() (any, error)) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Str(logs.EventKey, logs.ControlError).Str(logs.CmdKey, cmd).Interface(logs.PanicKey, p).Msg("control command panicked")
			res, err = nil, errorf(ErrFailed, fmt.Sprintf("command %s failed: internal error: %v", cmd, p))
		}
	}()
	return f()
}

// reply writes the reply to one request and logs it at debug level.
func (s *Server) reply(c net.Conn, cmd string, start time.Time, res any, err error) {
	rep := Reply{OK: err == nil}
	if err == nil {
		b, merr := json.Marshal(res)
		if merr != nil {
			err = merr
		} else {
			rep.Result = b
		}
	}
	if err != nil {
		rep = Reply{Error: asError(err)}
	}
	b, _ := json.Marshal(rep) // a Reply always encodes
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, werr := c.Write(append(b, '\n'))
	e := s.log.Debug().Str(logs.EventKey, logs.ControlRequest).Str(logs.CmdKey, cmd).Int64(logs.MsKey, time.Since(start).Milliseconds())
	if rep.Error != nil {
		e = e.Str(logs.CodeKey, rep.Error.Code)
	}
	if werr != nil {
		e = e.AnErr(logs.WriteKey, werr)
	}
	e.Msg("control request")
}

// asError gives any error a code.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return errorf(ErrFailed, err.Error())
}

func (s *Server) names() []string {
	var names []string
	for n := range s.cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Close stops accepting, cancels the requests being handled and waits for
// them, and removes the socket file if it is still the one Listen made.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.stop()
		err = s.ln.Close()
		s.wg.Wait()
		if fi, serr := os.Lstat(s.path); serr == nil && os.SameFile(fi, s.file) {
			if rerr := os.Remove(s.path); rerr != nil && err == nil {
				err = rerr
			}
		}
	})
	return err
}
