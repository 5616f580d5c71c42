package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// ErrNoNode is returned by Call when no node listens at the path: there is
// no socket file, or nobody answers at it (a node that crashed left it).
var ErrNoNode = errors.New("control: no node is running")

// replyGrace is how much longer than the request's timeout Call waits for
// the reply, so that the node's own "timeout" reply arrives first.
const replyGrace = time.Second

// Call runs command cmd with args (nil for none, else encoded as JSON) at
// the node listening at path, and returns its result as JSON. The node
// works on the command for at most timeout (0: DefaultTimeout); Call waits
// for the reply that long and a second more, or until ctx ends. A failure
// the node reports is an *Error, to be matched with errors.Is against
// ErrNotInView and the other codes.
func Call(ctx context.Context, path string, timeout time.Duration, cmd string, args any) (json.RawMessage, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	line, err := request(cmd, timeout, args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+replyGrace)
	defer cancel()
	c, err := dial(ctx, path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) }) // ctx cancelled early
	defer stop()
	_, werr := c.Write(append(line, '\n'))
	// Even when the write failed, the node may have replied (and closed
	// the connection) before it read everything: read that reply.
	rep, rerr := readReply(bufio.NewReader(c))
	switch {
	case rerr == nil:
	case werr != nil:
		return nil, fmt.Errorf("control: %s: sending the request to %s: %w", cmd, path, werr)
	case errors.Is(ctx.Err(), context.Canceled):
		return nil, fmt.Errorf("control: %s: %w", cmd, context.Cause(ctx))
	case errors.Is(rerr, os.ErrDeadlineExceeded):
		return nil, errorf(ErrTimeout, fmt.Sprintf("no reply from the node at %s within %v", path, timeout+replyGrace))
	default:
		return nil, fmt.Errorf("control: %s: reading the reply from %s: %v", cmd, path, rerr)
	}
	if !rep.OK {
		if rep.Error == nil {
			return nil, errorf(ErrFailed, "the node replied with an error but said nothing")
		}
		return nil, rep.Error
	}
	return rep.Result, nil
}

// request encodes a request line.
func request(cmd string, timeout time.Duration, args any) ([]byte, error) {
	req := Request{Cmd: cmd, TimeoutMS: max(1, timeout.Milliseconds())}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("control: %s: %w", cmd, err)
		}
		req.Args = b
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("control: %s: %w", cmd, err)
	}
	if len(line) > MaxRequest {
		return nil, errorf(ErrTooLarge, fmt.Sprintf("the request is %d bytes long; the node reads at most %d", len(line), MaxRequest))
	}
	return line, nil
}

// CallStream runs streaming command cmd (watch) at the node listening at
// path and hands each event to fn, until the node ends the stream (its
// last reply is returned as Call's), fn returns an error (returned), or
// ctx ends (nil: the caller stopped watching). The node's stream has no
// timeout.
func CallStream(ctx context.Context, path, cmd string, args any, fn func(event json.RawMessage) error) (json.RawMessage, error) {
	line, err := request(cmd, DefaultTimeout, args)
	if err != nil {
		return nil, err
	}
	c, err := dial(ctx, path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := c.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("control: %s: sending the request to %s: %w", cmd, path, err)
	}
	br := bufio.NewReader(c)
	for {
		rep, err := readReply(br)
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("control: %s: reading from %s: %v", cmd, path, err)
		}
		switch {
		case rep.Event != nil:
			if err := fn(rep.Event); err != nil {
				return nil, err
			}
		case rep.OK:
			return rep.Result, nil
		case rep.Error == nil:
			return nil, errorf(ErrFailed, "the node replied with an error but said nothing")
		default:
			return nil, rep.Error
		}
	}
}

func dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, syscall.ENOENT):
		return nil, fmt.Errorf("%w at %s (no such socket)", ErrNoNode, path)
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("%w at %s (a stale socket: nobody answers there)", ErrNoNode, path)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return nil, fmt.Errorf("control: permission denied on %s: the node runs as another user (run this as that user)", path)
	}
	return nil, fmt.Errorf("control: connecting to %s: %w", path, err)
}

// readReply reads one reply line.
func readReply(br *bufio.Reader) (Reply, error) {
	line, err := readLine(br, MaxReply, "reply")
	if errors.Is(err, errEmpty) {
		return Reply{}, errors.New("the node closed the connection without a reply")
	}
	if err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return Reply{}, fmt.Errorf("malformed reply: %w", err)
	}
	return rep, nil
}
