//go:build unix

package testutil

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockExclusive takes an exclusive flock on path, waiting for it, and
// keeps the file open for the life of the process. Another user's lock
// file is opened read-only: flock needs no write access.
func lockExclusive(path string) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testutil: the lock %s: %v; running without it\n", path, err)
		return
	}
	start := time.Now()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testutil: flock %s: %v; running without it\n", path, err)
		f.Close()
		return
	}
	if d := time.Since(start); d > time.Second {
		fmt.Fprintf(os.Stderr, "testutil: waited %v for the other heavy test packages (%s)\n", d.Round(time.Second), path)
	}
	exclusiveFile = f // held until the process exits
}

var exclusiveFile *os.File
