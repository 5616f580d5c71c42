package lan

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
// kernel cannot apply here. With the built-in drop (LossMethod "builtin"),
// it adds --drop-rate and --drop-burst with the host's loss model in force
// and --drop-seed. With iptables or nft, which cannot drop in bursts, it
// adds them only while the host's model has bursts (SetLossModel). In
// both cases it remembers the node's control socket, through which
// SetLossModel changes the drop later: the one argv names with
// --control-socket, or one the LAN chooses when argv names none or turns
// it off. With netem, argv runs unchanged.
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
	if l.lossMeth == MethodNetem {
		return nil, nil
	}
	var extra []string
	if rate, burst := l.builtinDrop(h); l.lossMeth == MethodBuiltin || rate > 0 {
		extra = []string{"--drop-rate", strconv.FormatFloat(rate, 'f', -1, 64),
			"--drop-seed", strconv.FormatUint(l.dropSeed(h), 10)}
		if burst > 1 {
			extra = append(extra, "--drop-burst", strconv.FormatFloat(burst, 'f', -1, 64))
		}
	}
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

// dropSeed is the seed of the built-in drop of the node on h.
func (l *LAN) dropSeed(h Host) uint64 { return l.opts.Seed*1000 + uint64(h.Index) }

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

// tellNode sets the built-in drop of the node on h to the host's loss
// model (builtinDrop), if a node started by StartNode runs there; the
// caller holds l.mu. A node that does not run gets the drop when it
// starts. With iptables or nft, where the drop is the fallback for bursts
// alone, each change restarts the drop's random choices from the host's
// seed, so that a run's bursts repeat whenever they were set.
func (l *LAN) tellNode(h Host) error {
	sock := l.sockets[h.Index]
	if sock == "" {
		return nil
	}
	args := map[string]any{}
	args["rate"], args["burst"] = l.builtinDrop(h)
	if l.lossMeth != MethodBuiltin {
		args["seed"] = l.dropSeed(h)
	}
	err := setDrop(sock, args)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil // the node is not running now
	}
	if err != nil {
		return fmt.Errorf("lab: setting the built-in drop of the node on %s: %w", h.Name, err)
	}
	return nil
}

// setDrop asks the node at the control socket sock to set its built-in
// drop with args (the control protocol's drop command, as huddle drop
// sends it: rate, and maybe burst and seed).
func setDrop(sock string, args map[string]any) error {
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req, _ := json.Marshal(map[string]any{"cmd": "drop", "args": args})
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
