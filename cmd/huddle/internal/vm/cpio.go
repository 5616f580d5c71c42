package vm

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// cpioWriter writes a cpio archive in the "newc" format, the one the
// kernel unpacks as an initramfs: per entry a 110-byte ASCII header, the
// name with its NUL, padded to 4 bytes, then the data, padded to 4 bytes;
// a last entry named TRAILER!!! ends it.
type cpioWriter struct {
	w    io.Writer
	ino  int
	dirs map[string]bool // directories written, so that each is once
	err  error
}

func newCPIO(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, ino: 1, dirs: map[string]bool{".": true, "/": true, "": true}}
}

// File modes of the newc header (the st_mode bits of Linux).
const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
	modeChar = 0o020000
)

// entry writes one header, name and data. name is relative ("bin/sh").
func (c *cpioWriter) entry(name string, mode uint32, data []byte, rdevMajor, rdevMinor int) {
	if c.err != nil {
		return
	}
	nlink := 1
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	c.ino++
	buf := make([]byte, 0, len(hdr)+len(name)+4+len(data)+3)
	buf = append(buf, hdr...)
	buf = append(buf, name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	buf = append(buf, data...)
	buf = pad4(buf)
	_, c.err = c.w.Write(buf)
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// clean makes p relative and clean: "/bin/sh" is "bin/sh".
func clean(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// Dir writes a directory and its parents, each once.
func (c *cpioWriter) Dir(p string) {
	p = clean(p)
	if c.dirs[p] {
		return
	}
	c.Dir(path.Dir(p))
	c.dirs[p] = true
	c.entry(p, modeDir|0o755, nil, 0, 0)
}

// File writes a regular file with its parent directories.
func (c *cpioWriter) File(p string, perm uint32, data []byte) {
	p = clean(p)
	c.Dir(path.Dir(p))
	c.entry(p, modeFile|perm&0o7777, data, 0, 0)
}

// Symlink writes a symbolic link p pointing at target.
func (c *cpioWriter) Symlink(p, target string) {
	p = clean(p)
	c.Dir(path.Dir(p))
	c.entry(p, modeLink|0o777, []byte(target), 0, 0)
}

// CharDev writes a character device node.
func (c *cpioWriter) CharDev(p string, perm uint32, major, minor int) {
	p = clean(p)
	c.Dir(path.Dir(p))
	c.entry(p, modeChar|perm&0o7777, nil, major, minor)
}

// Close writes the trailer. It does not close the underlying writer.
func (c *cpioWriter) Close() error {
	c.entry("TRAILER!!!", 0, nil, 0, 0)
	return c.err
}
