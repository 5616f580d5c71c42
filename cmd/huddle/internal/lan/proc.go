package lan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a process started in a host with Start.
type Proc struct {
	Name string
	Host int

	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // of Wait, valid once done is closed
}

// Start runs argv inside host's namespace with its stdout and stderr
// appended to LogPath(name) (so a restarted process keeps one log). The
// process gets SIGKILL (Pdeathsig) if the thread that started it dies, which
// in practice means the test process; Close stops it.
func (l *LAN) Start(host int, name string, argv []string) (*Proc, error) {
	h, err := l.host(host)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 || name == "" || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("lab: start %q: want a plain name and a command", name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errClosed
	}
	p := &Proc{Name: name, Host: host, logPath: l.LogPath(name), done: make(chan struct{})}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab: start %s: %w", name, err)
	}
	defer logFile.Close() // the child holds its own copy
	p.cmd = l.run.command(context.Background(), append([]string{"ip", "netns", "exec", h.Netns}, argv...)...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = childAttr(false)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("lab: start %s on %s: %q: %w", name, h.Name, strings.Join(argv, " "), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	l.procs = append(l.procs, p)
	return p, nil
}

// PID is the process ID (ip netns exec and nsenter exec argv in place).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// LogPath is the file holding the process's stdout and stderr.
func (p *Proc) LogPath() string { return p.logPath }

// Output returns the last max bytes of what the process wrote so far.
func (p *Proc) Output(max int) string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Signal sends sig; it returns os.ErrProcessDone once the process exited.
func (p *Proc) Signal(sig os.Signal) error {
	if p.Exited() {
		return os.ErrProcessDone
	}
	return p.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL.
func (p *Proc) Kill() error { return p.Signal(syscall.SIGKILL) }

// Wait waits for the process to exit and returns what exec.Cmd.Wait
// returned: nil for exit status 0, an *exec.ExitError otherwise. It may be
// called many times and from many goroutines.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// WaitTimeout is Wait with a limit; it returns an error if the process is
// still running after d.
func (p *Proc) WaitTimeout(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("lab: %s still running after %v", p.Name, d)
	}
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitCode is the exit status, or -1 while running or when killed by a signal.
func (p *Proc) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// stopAll sends SIGTERM to the running processes, SIGKILL to those still
// running after grace, and waits for all of them.
func stopAll(procs []*Proc, grace time.Duration) {
	for _, p := range procs {
		p.Signal(syscall.SIGTERM)
	}
	deadline := time.After(grace)
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-p.done:
			case <-deadline:
				p.Kill()
				<-p.done
			}
		}()
	}
	wg.Wait()
}

// Exec runs a short command in host and returns its combined output; the
// error names the command and quotes the output. It times out after 30s.
func (l *LAN) Exec(host int, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return l.ExecContext(ctx, host, argv...)
}

// ExecContext is Exec with a context.
func (l *LAN) ExecContext(ctx context.Context, host int, argv ...string) ([]byte, error) {
	h, err := l.host(host)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, errors.New("lab: exec: empty command")
	}
	return l.run.runContext(ctx, "", append([]string{"ip", "netns", "exec", h.Netns}, argv...)...)
}

// ProcStatus returns a field of /proc/<pid>/status in kB, such as VmRSS
// (resident memory now) or VmHWM (its peak).
func ProcStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
			break
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}
