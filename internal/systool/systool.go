// Package systool finds the system commands that the lab, the demo and the
// tests run (ip, tc, iptables-restore, nft, unshare, nsenter) where the
// user's PATH lacks them. Debian installs iptables, nft and tc in /usr/sbin,
// which is not on an ordinary user's PATH, yet an unprivileged user may run
// them inside a user namespace of its own.
package systool

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Dirs are searched, in order, after PATH. The environment variable
// HUDDLE_TEST_SYSTOOL_DIRS replaces them (a list like PATH; "none" for no
// directory), so that a test can play a machine without these commands.
var Dirs = dirs()

func dirs() []string {
	switch v := os.Getenv("HUDDLE_TEST_SYSTOOL_DIRS"); v {
	case "":
		return []string{"/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"}
	case "none":
		return nil
	default:
		return filepath.SplitList(v)
	}
}

var cache sync.Map // name → result

type result struct {
	path string
	err  error
}

// Path returns the absolute path of the command name: from PATH, else from
// Dirs. A name with a slash is returned as it is. The error says where it
// looked, and wraps exec.ErrNotFound.
func Path(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	if r, ok := cache.Load(name); ok {
		return r.(result).path, r.(result).err
	}
	r := find(name)
	cache.Store(name, r)
	return r.path, r.err
}

func find(name string) result {
	if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return result{path: abs}
		}
	}
	for _, dir := range Dirs {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return result{path: p}
		}
	}
	return result{err: &NotFoundError{Name: name}}
}

// NotFoundError says that a command is not installed.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s: %v (looked in PATH and %s)", e.Name, exec.ErrNotFound, strings.Join(Dirs, ", "))
}

func (e *NotFoundError) Unwrap() error { return exec.ErrNotFound }

// Have reports whether the command name can be found.
func Have(name string) bool {
	_, err := Path(name)
	return err == nil
}

// Command is exec.Command with the command found by Path; when it cannot be
// found, the command's Err says so and Run and Start return that error.
func Command(name string, args ...string) *exec.Cmd {
	p, err := Path(name)
	cmd := exec.Command(p, args...)
	if err != nil {
		cmd = exec.Command(name, args...)
		cmd.Err = err
	}
	return cmd
}

// IsNotFound reports whether err says a command is not installed.
func IsNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }
