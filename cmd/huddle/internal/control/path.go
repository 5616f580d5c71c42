package control

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/huddle-lan/huddle/config"
)

// Off is the control_socket setting that disables the socket.
const Off = "off"

// maxPath is the longest path a Unix socket can be bound to on Linux
// (sun_path holds 108 bytes with the terminating NUL).
const maxPath = 107

// Path returns where the node configured by cfg listens: cfg.ControlSocket
// when set, else DefaultPath; "" when the socket is off.
func Path(cfg config.Config) string {
	switch cfg.ControlSocket {
	case Off:
		return ""
	case "":
		return DefaultPath(cfg.Group, cfg.ID)
	}
	return cfg.ControlSocket
}

// CheckPath says whether a socket can be bound at path: a Unix socket's
// path has at most 107 bytes. The node checks it before it starts, as a
// problem of its configuration.
func CheckPath(path string) error {
	if len(path) > maxPath {
		return fmt.Errorf("socket path %s is %d bytes long; a Unix socket's path has at most %d (set a shorter --control-socket)", path, len(path), maxPath)
	}
	return nil
}

// DefaultPath is the socket of the node with this group and ID when
// control_socket is empty: DefaultDir()/SocketName(group, id).
func DefaultPath(group string, id uint64) string {
	return filepath.Join(DefaultDir(), SocketName(group, id))
}

// DefaultDir is the directory of the default sockets:
// $XDG_RUNTIME_DIR/huddle, or /tmp/huddle-<uid> where XDG_RUNTIME_DIR is
// unset or not absolute (the XDG spec says to ignore a relative one).
func DefaultDir() string { return defaultDir(os.Getenv("XDG_RUNTIME_DIR"), os.Getuid()) }

func defaultDir(xdg string, uid int) string {
	if filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "huddle")
	}
	return filepath.Join("/tmp", "huddle-"+strconv.Itoa(uid))
}

// SocketName is the file name of a default socket, "<group>-<id>.sock".
// Bytes of the group name other than letters, digits, '.', '_' and '-'
// are written %XX, so that any name makes one file name.
func SocketName(group string, id uint64) string {
	var b strings.Builder
	for i := range len(group) {
		c := group[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String() + "-" + strconv.FormatUint(id, 10) + ".sock"
}

// parseSocketName reverses SocketName.
func parseSocketName(name string) (group string, id uint64, ok bool) {
	base, ok := strings.CutSuffix(name, ".sock")
	i := strings.LastIndexByte(base, '-')
	if !ok || i < 1 {
		return "", 0, false
	}
	id, err := strconv.ParseUint(base[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	var g []byte
	for j := 0; j < i; j++ {
		if base[j] != '%' {
			g = append(g, base[j])
			continue
		}
		if j+2 >= i {
			return "", 0, false
		}
		c, err := strconv.ParseUint(base[j+1:j+3], 16, 8)
		if err != nil {
			return "", 0, false
		}
		g, j = append(g, byte(c)), j+2
	}
	return string(g), id, true
}

// A Candidate is a default socket found in a directory.
type Candidate struct {
	Path  string
	Group string
	ID    uint64
}

// Flags returns the command-line flags that select this node.
func (c Candidate) Flags() string {
	return fmt.Sprintf("--group %s --id %d", quoteArg(c.Group), c.ID)
}

// Candidates lists the sockets named like default ones in dir, ordered by
// group and ID; none when dir does not exist. It does not say whether a
// node answers at them.
func Candidates(dir string) ([]Candidate, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	var out []Candidate
	for _, e := range entries {
		group, id, ok := parseSocketName(e.Name())
		if ok && e.Type()&os.ModeSocket != 0 {
			out = append(out, Candidate{filepath.Join(dir, e.Name()), group, id})
		}
	}
	slices.SortFunc(out, func(a, b Candidate) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// quoteArg quotes s for a POSIX shell when it needs it.
func quoteArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
