//go:build unix

package config

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkKeyFileMode refuses a key file that others may read or write, or
// that another user owns, as Corosync refuses its authkey.
func checkKeyFileMode(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("is not a regular file")
	}
	if perm := fi.Mode().Perm(); perm != 0o600 && perm != 0o400 {
		return fmt.Errorf("has mode %04o; it must be 0600 or 0400 (chmod 600 the file)", perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := os.Geteuid(); int(st.Uid) != uid && st.Uid != 0 {
			return fmt.Errorf("is owned by user %d, not by this user (%d) or root", st.Uid, uid)
		}
	}
	return nil
}
