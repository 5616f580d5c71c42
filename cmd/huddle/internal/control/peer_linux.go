package control

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// trusted reports whether the peer of c runs as this user or as root. The
// socket's permission already keeps others out; this also refuses one that
// connected in the moment between bind and chmod.
func trusted(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cerr != nil || err != nil {
		return false
	}
	return cred.Uid == 0 || int(cred.Uid) == os.Geteuid()
}
