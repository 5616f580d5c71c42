//go:build unix

package control

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate checks that dir is a directory of this user that nobody
// else can enter or write.
func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control: socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("control: socket directory %s is not a directory", dir)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("control: socket directory %s belongs to user %d, not to this user (%d); remove it, or set --control-socket", dir, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("control: socket directory %s has permission %04o; it must be private (chmod 700 %s)", dir, fi.Mode().Perm(), dir)
	}
	return nil
}
