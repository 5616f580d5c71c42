package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartNode starts a huddle node, argv being a `huddle run` command line,
// on host as Start does, and connects it to the LAN's faults that the
// kernel cannot apply here: with the built-in drop (LossMethod "builtin"),
// it adds --drop-rate with the host's loss in force and --drop-seed, and
// remembers the node's control socket, through which SetLoss changes the
// rate later. The socket is the one argv names with --control-socket, or
// one the LAN chooses when argv names none or turns it off. With kernel
// loss, argv runs unchanged.
func (l *LAN) StartNode(host int, name string, argv []string) (*Proc, error) {
	h, err := l.host(host)
	if err != nil {
		return nil, err
	}
	extra, err := l.nodeArgs(h, argv)
	if err != nil {
		return nil, err
	}
	return l.Start(host, name, append(append([]string(nil), argv...), extra...))
}

// nodeArgs returns the flags StartNode adds to argv for host h.
func (l *LAN) nodeArgs(h Host, argv []string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errClosed
	}
	if err := l.chooseLoss(h); err != nil {
		return nil, err
	}
	if l.lossMeth != MethodBuiltin {
		return nil, nil
	}
	extra := []string{"--drop-rate", strconv.FormatFloat(l.drops[h.Index], 'f', -1, 64),
		"--drop-seed", strconv.FormatUint(l.opts.Seed*1000+uint64(h.Index), 10)}
	sock := flagValue(argv, "control-socket")
	if sock == "" || sock == "off" {
		dir, err := l.socketDir()
		if err != nil {
			return nil, err
		}
		sock = filepath.Join(dir, h.Name+".sock")
		extra = append(extra, "--control-socket", sock)
	}
	l.sockets[h.Index] = sock
	return extra, nil
}

// socketDir returns the directory of the nodes' control sockets that the
// LAN chooses, made on first use and removed by Close; the caller holds
// l.mu.
func (l *LAN) socketDir() (string, error) {
	if l.sockDir == "" {
		// Short: a socket's path must fit in 108 bytes.
		dir, err := os.MkdirTemp("", "hudlab")
		if err != nil {
			return "", fmt.Errorf("lab: socket directory: %w", err)
		}
		l.sockDir = dir
	}
	return l.sockDir, nil
}

// flagValue returns the last value argv gives the flag name ("--name V",
// "--name=V", with one or two dashes), or "".
func flagValue(argv []string, name string) string {
	v := ""
	for i, a := range argv {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		switch {
		case a == name && i+1 < len(argv):
			v = argv[i+1]
		case strings.HasPrefix(a, name+"="):
			v = strings.TrimPrefix(a, name+"=")
		}
	}
	return v
}

// tellNode sets the built-in drop of the node on h to the host's loss, if
// a node started by StartNode runs there; the caller holds l.mu. A node
// that does not run gets the loss when it starts.
func (l *LAN) tellNode(h Host) error {
	sock := l.sockets[h.Index]
	if sock == "" {
		return nil
	}
	err := setDrop(sock, l.drops[h.Index])
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil // the node is not running now
	}
	if err != nil {
		return fmt.Errorf("lab: setting the built-in drop of the node on %s: %w", h.Name, err)
	}
	return nil
}

// setDrop asks the node at the control socket sock to drop received
// datagrams at rate (the control protocol's drop command, as huddle drop
// sends it).
func setDrop(sock string, rate float64) error {
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req, _ := json.Marshal(map[string]any{"cmd": "drop", "args": map[string]any{"rate": rate}})
	if _, err := conn.Write(append(req, '\n')); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	var rep struct {
		OK    bool `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return fmt.Errorf("malformed answer %q: %w", line, err)
	}
	if !rep.OK {
		if rep.Error != nil && rep.Error.Code == "stopped" {
			return nil
		}
		return fmt.Errorf("the node refused: %s", strings.TrimSpace(string(line)))
	}
	return nil
}
