package control

import (
	"encoding/json"
	"time"
)

// Limits of the protocol.
const (
	// MaxRequest is the largest request line the server reads, in bytes;
	// a longer one gets a too_large reply. It bounds a node's memory per
	// connection, and so what `huddle send` can send (less JSON's escapes).
	MaxRequest = 1 << 20
	// MaxReply is the largest reply line a client reads.
	MaxReply = 4 << 20
	// MaxConns is the most connections a server handles at once; more get
	// a busy reply at once.
	MaxConns = 16
	// DefaultTimeout bounds a request that names no timeout.
	DefaultTimeout = 5 * time.Second
	// MaxTimeout bounds any request's timeout.
	MaxTimeout = 10 * time.Minute
	// readTimeout is how long a client may take to send its request once
	// connected; a silent client must not hold a connection slot.
	readTimeout = 5 * time.Second
	// writeTimeout is how long a reply may wait for a client that does
	// not read.
	writeTimeout = 5 * time.Second
	// MaxStreams is the most streaming requests (watch) a server serves
	// at once, so that they leave room for the other commands.
	MaxStreams = MaxConns / 2
)

// A Request is one command to the node, one JSON line.
type Request struct {
	Cmd  string          `json:"cmd"`
	Args json.RawMessage `json:"args,omitempty"`
	// TimeoutMS bounds how long the node works on the request, in
	// milliseconds: 0 is DefaultTimeout, and at most MaxTimeout. A
	// blocked send that runs out of time is not sent.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// timeout returns the request's timeout, bounded.
func (r *Request) timeout() time.Duration {
	d := time.Duration(r.TimeoutMS) * time.Millisecond
	switch {
	case r.TimeoutMS <= 0:
		return DefaultTimeout
	case r.TimeoutMS > MaxTimeout.Milliseconds():
		return MaxTimeout
	}
	return d
}

// A Reply answers one request, one JSON line: Result when OK, else Error.
type Reply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	// Event is one event of a streaming command (watch): more lines
	// follow, up to a last one without Event.
	Event json.RawMessage `json:"event,omitempty"`
}

// An Error is a command's failure as the node reports it: a stable code
// for programs and a message for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return "control: " + e.Message }

// Is matches errors of the same code, so that errors.Is(err, ErrNotInView)
// holds for any not_in_view reply.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The error codes of replies, as sentinels for errors.Is.
var (
	ErrBadRequest     = &Error{Code: "bad_request", Message: "malformed request"}
	ErrUnknownCommand = &Error{Code: "unknown_command", Message: "unknown command"}
	ErrTooLarge       = &Error{Code: "too_large", Message: "request too large"}
	ErrBusy           = &Error{Code: "busy", Message: "too many requests at once"}
	ErrTimeout        = &Error{Code: "timeout", Message: "timed out"}
	ErrNotInView      = &Error{Code: "not_in_view", Message: "not in a view yet"}
	ErrStopped        = &Error{Code: "stopped", Message: "the node is stopping"}
	ErrFailed         = &Error{Code: "failed", Message: "failed"}
)

// errorf returns an error of sentinel's code with a message of its own.
func errorf(sentinel *Error, msg string) *Error {
	return &Error{Code: sentinel.Code, Message: msg}
}
