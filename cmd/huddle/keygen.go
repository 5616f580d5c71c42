package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/huddle-lan/huddle/internal/seal"
)

// cmdKeygen writes a new group key to a file, as Corosync's
// corosync-keygen writes its authkey: 32 random bytes, readable by this
// user only (0600).
func cmdKeygen(args []string, stdout, stderr io.Writer) int {
	fs, parseOut := newFlagSet("huddle keygen")
	force := fs.Bool("force", false, "replace FILE if it exists")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: huddle keygen [--force] FILE

Writes a new group key to FILE, with permission 0600, and prints its
fingerprint. Copy the file to every member (keeping its owner and mode)
and set security.key_file to it: every datagram of the group is then
sealed with AES-256-GCM. A key file holds one key, or two during a
rollover (the first seals, both open): see docs/security.md.

Flags:

`)
		fs.PrintDefaults()
	}
	// FILE may come before or after the flag.
	files, code, done := parseOperands(fs, parseOut, args, stdout, stderr)
	switch {
	case done:
		return code
	case len(files) == 0:
		fmt.Fprintln(stderr, "huddle keygen: want the FILE to write the key to (huddle keygen --help)")
		return exitUsage
	case len(files) > 1:
		fmt.Fprintf(stderr, "huddle keygen: unexpected argument %q: one FILE (huddle keygen --help)\n", files[1])
		return exitUsage
	}
	path := files[0]
	k, text, err := seal.NewKey()
	if err != nil {
		fmt.Fprintln(stderr, "huddle keygen:", err)
		return exitFailure
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, os.ErrExist) {
		fmt.Fprintf(stderr, "huddle keygen: %s exists; it may be a key in use: choose another file, or --force to replace it\n", path)
		return exitFailure
	}
	if err == nil {
		err = f.Chmod(0o600) // an existing file keeps its mode otherwise
	}
	if err == nil {
		_, err = fmt.Fprintln(f, text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "huddle keygen:", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "wrote a new group key to %s (fingerprint %s)\n", path, k.Fingerprint())
	return exitOK
}
