package lan

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/internal/systool"
)

// runner runs the lab's commands: directly as root, or inside the user,
// network and mount namespaces of a helper process in rootless mode.
type runner struct {
	prefix []string  // argv prefix; empty as root
	helper *exec.Cmd // rootless helper, nil as root
	stdin  io.WriteCloser
}

// helperScript runs inside `unshare -Urnm`: it gives `ip netns` a private,
// writable /run/netns, reports readiness, then waits for its stdin to close,
// so the namespaces die with the process that owns the LAN.
const helperScript = `set -e
if [ -d /run/netns ]; then mount -t tmpfs -o mode=0755 hudlab /run/netns
else mount -t tmpfs -o mode=0755 hudlab /run; mkdir /run/netns; fi
echo ready
exec cat >/dev/null`

// rootRunner returns a runner for a process that has CAP_NET_ADMIN and
// CAP_SYS_ADMIN in the root namespaces.
func rootRunner() *runner { return &runner{} }

// rootlessRunner starts the helper holding a private user, network and mount
// namespace and returns a runner that enters it with nsenter.
func rootlessRunner() (*runner, error) {
	for _, tool := range []string{"unshare", "nsenter", "ip"} {
		if _, err := systool.Path(tool); err != nil {
			return nil, err
		}
	}
	cmd := systool.Command("unshare", "-Urnm", "sh", "-c", helperScript)
	// A process group of its own: a terminal's Ctrl-C goes to the
	// foreground group, and must not kill the namespaces under the nodes
	// before Close takes them down in order. Pdeathsig still ends it with
	// this process.
	cmd.SysProcAttr = childAttr(true)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting unshare: %w", err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		stdin.Close()
		werr := cmd.Wait()
		return nil, fmt.Errorf("unshare -Urnm: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	nsenter, _ := systool.Path("nsenter")
	return &runner{
		prefix: []string{nsenter, "--preserve-credentials", "-U", "-n", "-m", "-t", pid},
		helper: cmd,
		stdin:  stdin,
	}, nil
}

// rootless reports whether commands run inside the helper's namespaces.
func (r *runner) rootless() bool { return r.helper != nil }

// command returns an unstarted command for argv. System commands are
// found where PATH lacks them (systool), including the one that
// `ip netns exec NS` runs, since ip and nsenter look in PATH only.
func (r *runner) command(ctx context.Context, argv ...string) *exec.Cmd {
	argv, err := resolve(argv)
	full := append(append([]string{}, r.prefix...), argv...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	if err != nil {
		cmd.Err = err
	}
	return cmd
}

// resolve returns argv with its command, and the command of
// `ip netns exec NS CMD ...`, as absolute paths.
func resolve(argv []string) ([]string, error) {
	argv = append([]string(nil), argv...)
	var err error
	if len(argv) > 0 {
		argv[0], err = systool.Path(argv[0])
	}
	if err == nil && len(argv) > 4 && filepath.Base(argv[0]) == "ip" && argv[1] == "netns" && argv[2] == "exec" {
		argv[4], err = systool.Path(argv[4])
	}
	return argv, err
}

// commandTimeout bounds every setup and inspection command.
const commandTimeout = 30 * time.Second

// run runs argv with stdin as its input and returns its combined output;
// the error names the command and quotes its output.
func (r *runner) run(stdin string, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return r.runContext(ctx, stdin, argv...)
}

func (r *runner) runContext(ctx context.Context, stdin string, argv ...string) ([]byte, error) {
	cmd := r.command(ctx, argv...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, &CommandError{Argv: argv, Input: stdin, Output: string(out), Err: err}
	}
	return out, nil
}

// close stops the rootless helper; its namespaces go away with it once no
// process is left inside them.
func (r *runner) close() error {
	if r.helper == nil {
		return nil
	}
	r.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- r.helper.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Second):
		r.helper.Process.Kill()
		<-done
		return nil
	}
}

// CommandError is a failed lab command with its output.
type CommandError struct {
	Argv   []string
	Input  string // stdin given to the command (batch scripts), if any
	Output string
	Err    error
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("lab: %q failed: %v", strings.Join(e.Argv, " "), e.Err)
	if out := strings.TrimSpace(e.Output); out != "" {
		msg += ": " + out
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// isNotExist reports whether a command failed because its object is gone.
func isNotExist(err error) bool {
	var ce *CommandError
	if !errors.As(err, &ce) {
		return false
	}
	out := strings.ToLower(ce.Output)
	return strings.Contains(out, "no such") || strings.Contains(out, "cannot find") ||
		strings.Contains(out, "does not exist")
}

// selfPID is this process's PID, used in namespace names.
var selfPID = os.Getpid()
