package vm

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/huddle-lan/huddle/internal/systool"
)

// ErrUnavailable is wrapped by the errors of Available, FindKernel and Run
// when this machine lacks what a VM needs; the message names the Debian
// package to install.
var ErrUnavailable = errors.New("vm: cannot boot a VM here")

// AccelEnv picks qemu's accelerator (Options.Accel): tcg, the default, or
// kvm where the host's KVM takes the guest.
const AccelEnv = "HUDDLE_VM_ACCEL"

// qemu is the emulator, from Debian's package qemu-system-x86 (a
// variable for the tests).
var qemu = "qemu-system-x86_64"

// The commands the guest gets from this machine, with their Debian
// packages, at their place in the guest.
var guestTools = []struct{ name, pkg, at string }{
	{"busybox", "busybox-static", "/bin/busybox"},
	{"ip", "iproute2", "/usr/sbin/ip"},
	{"tc", "iproute2", "/usr/sbin/tc"},
}

// Available reports whether Run can boot a VM here: an x86-64 machine,
// qemu-system-x86_64, a kernel with modules (FindKernel), busybox, ip and
// tc. The error wraps ErrUnavailable and names what to install.
func Available() error {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return fmt.Errorf("%w: the guest takes this machine's busybox, ip and tc: it needs linux/amd64, not %s/%s",
			ErrUnavailable, runtime.GOOS, runtime.GOARCH)
	}
	if _, err := systool.Path(qemu); err != nil {
		return fmt.Errorf("%w: %s not found: install Debian's package qemu-system-x86", ErrUnavailable, qemu)
	}
	for _, t := range guestTools {
		if _, err := systool.Path(t.name); err != nil {
			return fmt.Errorf("%w: %s not found: install Debian's package %s", ErrUnavailable, t.name, t.pkg)
		}
	}
	_, err := FindKernel()
	return err
}

// Options say what to run in the VM and how.
type Options struct {
	// Script is a busybox sh script, run as root in /out once the guest
	// has /proc, /sys, /dev, /run and /tmp mounted, the modules loaded and
	// lo up. What it leaves in /out comes back in OutDir.
	Script string
	// Files are put in the guest: guest path → path on this machine. A
	// dynamically linked ELF file takes the libraries ldd lists along.
	// busybox (/bin/busybox, with its applets in /bin), ip and tc
	// (/usr/sbin) are always there.
	Files map[string]string
	// OutDir receives the files the script left in /out; empty: a new
	// temporary directory (Result.OutDir), which the caller removes.
	OutDir string
	// Timeout bounds the whole run, boot included; qemu is killed then.
	// Default 5 minutes.
	Timeout time.Duration
	// MemoryMiB is the guest's memory, default 1024. CPUs is its number
	// of processors, default 1: each costs a host core while the guest
	// runs, and a second made no difference to TestNetemInVM.
	MemoryMiB, CPUs int
	// Accel is qemu's accelerator: "tcg" (software emulation, the default,
	// or $HUDDLE_VM_ACCEL) or "kvm".
	Accel string
	// Kernel is the kernel to boot; nil: FindKernel.
	Kernel *Kernel
	// Modules are the kernel modules the guest loads, with their
	// dependencies; nil: DefaultModules.
	Modules []string
	// Logf receives the guest's console, line by line, and the harness's
	// progress; nil: silent.
	Logf func(format string, args ...any)
	// Stream receives the script's output as it runs, line by line, read
	// from the console (without its control characters); nil: none.
	// Result.Output has it whole, exactly, at the end.
	Stream func(line string)
}

// Result is what a run brought back.
type Result struct {
	Status  int           // the script's exit status
	Output  []byte        // the script's standard output and error
	OutDir  string        // holds the files the script left in /out
	Files   []string      // those files, relative to OutDir
	Console []byte        // the guest's serial console: the kernel's and init's messages, and the script's output
	Boot    time.Duration // from qemu's start until the script started
	Elapsed time.Duration // from qemu's start until it exited

	tgz []byte // the files, as the guest sent them
}

// Markers of the data channel, the guest's second serial port.
const (
	markReady  = "HUDDLE-VM-READY" // on the console: the script starts
	markOutput = "HUDDLE-VM-OUTPUT"
	markFiles  = "HUDDLE-VM-FILES"
	markStatus = "HUDDLE-VM-STATUS"
	markError  = "HUDDLE-VM-ERROR"
)

// Run boots a VM, runs o.Script in it as root, and brings back its exit
// status, its output and the files it left in /out. An error means the
// harness failed (nothing to boot, the guest did not come up, the timeout);
// a script that fails is Result.Status.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.MemoryMiB <= 0 {
		o.MemoryMiB = 1024
	}
	if o.CPUs <= 0 {
		o.CPUs = 1
	}
	if o.Accel == "" {
		o.Accel = cmp.Or(os.Getenv(AccelEnv), "tcg")
	}
	if o.Modules == nil {
		o.Modules = DefaultModules
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Kernel == nil {
		k, err := FindKernel()
		if err != nil {
			return nil, err
		}
		o.Kernel = k
	}
	work, err := os.MkdirTemp("", "huddle-vm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	initrd := filepath.Join(work, "initrd.gz")
	start := time.Now()
	if err := buildInitramfs(initrd, o); err != nil {
		return nil, err
	}
	o.Logf("vm: initramfs of kernel %s built in %v (%s)", o.Kernel.Version, time.Since(start).Round(time.Millisecond), sizeOf(initrd))
	res, err := boot(ctx, o, initrd, filepath.Join(work, "data"))
	if err != nil {
		return res, err
	}
	if res.OutDir, err = outDir(o.OutDir); err != nil {
		return res, err
	}
	return res, res.unpack()
}

func sizeOf(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(fi.Size())/(1<<20))
}

func outDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "huddle-vm-out-")
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// initScript is the guest's /init. %s: the modules directory; the list
// of modules to load is /modules.
const initScript = `#!/bin/busybox sh
# /init of huddle's VM harness (cmd/huddle/internal/vm).
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
dmesg -n 1
data=/dev/ttyS1
stty -F $data raw -echo 2>/dev/null
fail() {
	echo "huddle-vm: $*"
	echo "` + markError + ` $*" > $data
	poweroff -f
}
while read -r m; do
	insmod "%s/$m" || fail "insmod $m failed"
done < /modules
ip link set lo up || fail "ip link set lo up failed"
printf '\n%%s\n' ` + markReady + `
cd /out
: > /tmp/output
tail -f /tmp/output &
tailpid=$!
sh /script > /tmp/output 2>&1 < /dev/null
status=$?
sleep 1
kill $tailpid 2>/dev/null
{
	echo ` + markOutput + `
	base64 /tmp/output
	echo ` + markFiles + `
	tar -czf - -C /out . | base64
	echo "` + markStatus + ` $status"
} > $data
echo "` + markExited + ` $status"
poweroff -f
`

// scriptPrelude begins the guest's /script. busybox-static's sh runs its
// own applets before any command on PATH, and busybox's ip and tc know
// neither netns nor netem: these functions call iproute2's. A script that
// runs ip or tc through another sh (sh -c) names them /usr/sbin/ip and
// /usr/sbin/tc; programs that exec them (ip netns exec) find them on PATH.
const scriptPrelude = `ip() { /usr/sbin/ip "$@"; }
tc() { /usr/sbin/tc "$@"; }
`

// buildInitramfs writes the gzipped cpio the guest boots from: busybox,
// ip, tc, o.Files with their libraries, the modules, /init and /script.
func buildInitramfs(dst string, o Options) error {
	files := map[string]string{}
	for _, t := range guestTools {
		p, err := systool.Path(t.name)
		if err != nil {
			return fmt.Errorf("%w: %s not found: install Debian's package %s", ErrUnavailable, t.name, t.pkg)
		}
		files[t.at] = p
	}
	for g, h := range o.Files {
		files[g] = h
	}
	libs := map[string]bool{}
	for _, h := range files {
		ls, err := libraries(h)
		if err != nil {
			return err
		}
		for _, l := range ls {
			libs[l] = true
		}
	}
	for l := range libs {
		if _, ok := files[l]; !ok {
			files[l] = l
		}
	}
	mods, err := o.Kernel.moduleOrder(o.Modules)
	if err != nil {
		return fmt.Errorf("vm: %w", err)
	}
	guestMods := "/lib/modules/" + o.Kernel.Version

	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	c := newCPIO(zw)
	for _, d := range []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/proc", "/sys", "/dev", "/run", "/tmp", "/out", "/root", "/etc", "/var"} {
		c.Dir(d)
	}
	c.CharDev("/dev/console", 0o600, 5, 1)
	c.Symlink("/var/run", "/run")
	c.File("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	c.File("/etc/group", 0o644, []byte("root:x:0:\n"))
	for _, g := range slices.Sorted(maps.Keys(files)) {
		b, err := os.ReadFile(files[g])
		if err != nil {
			return fmt.Errorf("vm: %s for the guest's %s: %w", files[g], g, err)
		}
		c.File(g, 0o755, b)
	}
	for _, m := range mods {
		b, err := os.ReadFile(filepath.Join(o.Kernel.Modules, m))
		if err != nil {
			return fmt.Errorf("vm: module %s: %w", m, err)
		}
		c.File(path.Join(guestMods, m), 0o644, b)
	}
	c.File("/modules", 0o644, []byte(strings.Join(mods, "\n")+"\n"))
	c.File("/init", 0o755, []byte(fmt.Sprintf(initScript, guestMods)))
	c.File("/script", 0o755, []byte(scriptPrelude+o.Script))
	if err := c.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// libraries returns the shared libraries and the loader a dynamically
// linked ELF file needs, as ldd lists them; nothing for a static one or a
// file that is no ELF (a script).
func libraries(file string) ([]string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, nil
	}
	dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	f.Close()
	if !dynamic {
		return nil, nil
	}
	ldd, err := systool.Path("ldd")
	if err != nil {
		return nil, fmt.Errorf("%w: %s is dynamically linked and ldd is not found: install Debian's package libc-bin", ErrUnavailable, file)
	}
	out, err := exec.Command(ldd, file).Output()
	if err != nil {
		return nil, fmt.Errorf("vm: ldd %s: %v", file, err)
	}
	return parseLdd(string(out))
}

// parseLdd reads ldd's lines: "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1
// (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)", and "linux-vdso.so.1
// (0x...)", which is the kernel's and no file.
func parseLdd(out string) ([]string, error) {
	var libs []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("vm: a library is missing: %s", line)
		}
		if _, after, ok := strings.Cut(line, "=>"); ok {
			line = strings.TrimSpace(after)
		}
		if p, _, _ := strings.Cut(line, " "); strings.HasPrefix(p, "/") {
			libs = append(libs, p)
		}
	}
	return libs, nil
}

// boot runs qemu until the guest powers off, the timeout, or ctx's end.
func boot(ctx context.Context, o Options, initrd, data string) (*Result, error) {
	bin, err := systool.Path(qemu)
	if err != nil {
		return nil, fmt.Errorf("%w: %s not found: install Debian's package qemu-system-x86", ErrUnavailable, qemu)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	args := []string{
		"-accel", o.Accel, "-m", strconv.Itoa(o.MemoryMiB), "-smp", strconv.Itoa(o.CPUs),
		"-nographic", "-nodefaults", "-no-user-config", "-no-reboot", "-nic", "none",
		"-kernel", o.Kernel.Image, "-initrd", initrd,
		"-append", "console=ttyS0 quiet panic=-1",
		"-serial", "stdio", "-serial", "file:" + data,
	}
	if nice, err := exec.LookPath("nice"); err == nil {
		// The emulated CPU takes a whole core: below the other work of
		// the machine (the tests of real processes beside it, whose
		// timers are tighter than the guest's).
		args = append([]string{"-n", "10", bin}, args...)
		bin = nice
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	con := &console{logf: o.Logf, stream: o.Stream, start: time.Now()}
	cmd.Stdout, cmd.Stderr = con, con
	cmd.WaitDelay = 5 * time.Second
	o.Logf("vm: %s %s", bin, strings.Join(args, " "))
	res := &Result{}
	err = cmd.Run()
	res.Elapsed = time.Since(con.start)
	res.Console = con.bytes()
	res.Boot = con.ready
	if ctx.Err() != nil {
		return res, fmt.Errorf("vm: the guest did not finish within %v (qemu killed); the console's end:\n%s", o.Timeout, tail(res.Console, 30))
	}
	if err != nil {
		return res, fmt.Errorf("vm: qemu: %v; the console's end:\n%s", err, tail(res.Console, 30))
	}
	b, err := os.ReadFile(data)
	if err != nil {
		return res, fmt.Errorf("vm: the data channel: %v", err)
	}
	if err := res.parseData(b); err != nil {
		return res, fmt.Errorf("%v; the console's end:\n%s", err, tail(res.Console, 30))
	}
	return res, nil
}

// console collects qemu's standard output, the guest's console, and logs
// it line by line.
type console struct {
	logf   func(string, ...any)
	stream func(string) // the script's lines, between markReady and markExited
	ended  bool         // the script exited: nothing more to stream
	start  time.Time
	ready  time.Duration
	mu     sync.Mutex
	buf    bytes.Buffer
	line   []byte
}

// markExited begins init's line on the console after the script.
const markExited = "huddle-vm: the script exited"

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	for _, b := range p {
		if b != '\n' {
			c.line = append(c.line, b)
			continue
		}
		line := printable(string(c.line))
		c.line = c.line[:0]
		if strings.HasSuffix(line, markReady) && c.ready == 0 {
			c.ready = time.Since(c.start)
			c.logf("vm: booted in %v; the script starts", c.ready.Round(time.Millisecond))
			continue
		}
		if strings.HasPrefix(line, markExited) {
			c.ended = true
		}
		if c.stream != nil && c.ready != 0 && !c.ended {
			c.stream(line)
		}
		if line != "" {
			c.logf("vm %6.2fs| %s", time.Since(c.start).Seconds(), line)
		}
	}
	return len(p), nil
}

// escapes are the terminal's control sequences the firmware writes.
var escapes = regexp.MustCompile(`\x1b(\[[0-9;?]*[A-Za-z]|.)`)

// printable returns a console line without terminal escapes and control
// characters.
func printable(line string) string {
	line = escapes.ReplaceAllString(line, "")
	return strings.Map(func(r rune) rune {
		if r < ' ' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, line)
}

func (c *console) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\r\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// parseData reads the data channel: the output's base64, the files'
// (a tar.gz, base64) and the status, each after its marker.
func (r *Result) parseData(b []byte) error {
	var section string
	var out, files strings.Builder
	status := -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, markError):
			return fmt.Errorf("vm: the guest's init failed: %s", strings.TrimSpace(strings.TrimPrefix(line, markError)))
		case line == markOutput, line == markFiles:
			section = line
		case strings.HasPrefix(line, markStatus+" "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, markStatus+" "))
			if err != nil {
				return fmt.Errorf("vm: bad status line %q", line)
			}
			status = n
		case section == markOutput:
			out.WriteString(line)
		case section == markFiles:
			files.WriteString(line)
		}
	}
	if status < 0 {
		return errors.New("vm: the guest stopped before it sent the script's status")
	}
	r.Status = status
	var err error
	if r.Output, err = base64.StdEncoding.DecodeString(out.String()); err != nil {
		return fmt.Errorf("vm: the script's output: %v", err)
	}
	r.tgz, err = base64.StdEncoding.DecodeString(files.String())
	if err != nil {
		return fmt.Errorf("vm: the files: %v", err)
	}
	return nil
}

// unpack writes the files of r.tgz into r.OutDir: regular files and
// directories only, none outside it.
func (r *Result) unpack() error {
	zr, err := gzip.NewReader(bytes.NewReader(r.tgz))
	if err != nil {
		return fmt.Errorf("vm: the files: %v", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("vm: the files: %v", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." || !filepath.IsLocal(name) {
			continue
		}
		dst := filepath.Join(r.OutDir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			r.Files = append(r.Files, name)
		}
	}
}
