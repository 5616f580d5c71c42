package vm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readCPIO parses a newc archive: name → (mode, data), and the names in
// order; it fails on anything malformed and wants the trailer last.
func readCPIO(t *testing.T, b []byte) (map[string]cpioEntry, []string) {
	t.Helper()
	entries := map[string]cpioEntry{}
	var names []string
	for off := 0; ; {
		if len(b)-off < 110 || string(b[off:off+6]) != "070701" {
			t.Fatalf("offset %d: no newc header", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatalf("offset %d field %d: %v", off, i, err)
			}
			return int(v)
		}
		mode, size, major, minor, namesize := field(1), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+namesize-1])
		if b[off+110+namesize-1] != 0 {
			t.Fatalf("%s: name without its NUL", name)
		}
		off = align4(off + 110 + namesize)
		data := b[off : off+size]
		off = align4(off + size)
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return entries, names
		}
		entries[name] = cpioEntry{mode: uint32(mode), data: string(data), major: major, minor: minor}
		names = append(names, name)
	}
}

type cpioEntry struct {
	mode         uint32
	data         string
	major, minor int
}

func align4(n int) int { return (n + 3) &^ 3 }

func TestCPIO(t *testing.T) {
	var buf bytes.Buffer
	c := newCPIO(&buf)
	c.File("/usr/sbin/ip", 0o755, []byte("elf"))
	c.File("init", 0o755, []byte("#!/bin/sh\n"))
	c.Dir("/usr")
	c.Symlink("/var/run", "/run")
	c.CharDev("/dev/console", 0o600, 5, 1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	entries, names := readCPIO(t, buf.Bytes())
	want := []string{"usr", "usr/sbin", "usr/sbin/ip", "init", "var", "var/run", "dev", "dev/console"}
	if !slices.Equal(names, want) {
		t.Errorf("entries %q, want %q (each directory once, before what it holds)", names, want)
	}
	for name, w := range map[string]cpioEntry{
		"usr":         {mode: modeDir | 0o755},
		"usr/sbin/ip": {mode: modeFile | 0o755, data: "elf"},
		"init":        {mode: modeFile | 0o755, data: "#!/bin/sh\n"},
		"var/run":     {mode: modeLink | 0o777, data: "/run"},
		"dev/console": {mode: modeChar | 0o600, major: 5, minor: 1},
	} {
		if got := entries[name]; got != w {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
}

// fakeKernel writes a kernel tree under root: boot/vmlinuz-v and
// lib/modules/v/kernel, with modules.dep and modules.builtin when given.
func fakeKernel(t *testing.T, root, v, dep, builtin string) {
	t.Helper()
	mods := filepath.Join(root, "lib/modules", v)
	for name, data := range map[string]string{
		filepath.Join(root, "boot", "vmlinuz-"+v): "image",
		filepath.Join(mods, "kernel", ".keep"):    "",
		filepath.Join(mods, "modules.dep"):        dep,
		filepath.Join(mods, "modules.builtin"):    builtin,
	} {
		if data == "" && !strings.HasSuffix(name, ".keep") {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestModuleOrderFromModulesDep(t *testing.T) {
	root := t.TempDir()
	fakeKernel(t, root, "6.1.0-9-amd64", `kernel/net/bridge/bridge.ko: kernel/net/802/stp.ko kernel/net/llc/llc.ko
kernel/net/802/stp.ko: kernel/net/llc/llc.ko
kernel/net/llc/llc.ko:
kernel/net/sched/sch_netem.ko:
kernel/net/bridge/br_netfilter.ko: kernel/net/bridge/bridge.ko kernel/net/802/stp.ko kernel/net/llc/llc.ko
`, "kernel/drivers/net/veth.ko\n")
	k, err := kernelIn(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.moduleOrder([]string{"sch_netem", "veth", "bridge", "br-netfilter"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kernel/net/sched/sch_netem.ko", "kernel/net/llc/llc.ko", "kernel/net/802/stp.ko",
		"kernel/net/bridge/bridge.ko", "kernel/net/bridge/br_netfilter.ko"}
	if !slices.Equal(got, want) {
		t.Errorf("order %q, want %q (dependencies first, built-in veth without a file)", got, want)
	}
	if _, err := k.moduleOrder([]string{"ifb"}); err == nil || !strings.Contains(err.Error(), "no module ifb") {
		t.Errorf("a missing module: %v, want an error naming it", err)
	}
}

// TestModuleOrderFromModinfo: without modules.dep (a kernel package
// unpacked with dpkg-deb), the dependencies come from the modules
// themselves, and agree with depmod's. It needs a real kernel's modules.
func TestModuleOrderFromModinfo(t *testing.T) {
	k, err := FindKernel()
	if err != nil {
		t.Skip(err)
	}
	want, err := k.moduleOrder(DefaultModules)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	fakeKernel(t, root, k.Version, "", "")
	for _, m := range want {
		b, err := os.ReadFile(filepath.Join(k.Modules, m))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, "lib/modules", k.Version, m)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copied, err := kernelIn(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := copied.moduleOrder(DefaultModules)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("from .modinfo %q, from modules.dep %q", got, want)
	}
	for _, dep := range [][2]string{{"llc", "stp"}, {"stp", "bridge"}} {
		if slices.IndexFunc(got, isModule(dep[0])) > slices.IndexFunc(got, isModule(dep[1])) {
			t.Errorf("%s loads after %s, which needs it: %q", dep[0], dep[1], got)
		}
	}
	t.Logf("kernel %s: %q", k.Version, got)
}

func isModule(name string) func(string) bool {
	return func(path string) bool { return moduleName(path) == name }
}

func TestKernelIn(t *testing.T) {
	root := t.TempDir()
	fakeKernel(t, root, "6.1.0-9-amd64", "x.ko:\n", "")
	fakeKernel(t, root, "6.1.0-56-amd64", "x.ko:\n", "")
	if err := os.WriteFile(filepath.Join(root, "boot", "vmlinuz-6.10.0-1-amd64"), nil, 0o644); err != nil {
		t.Fatal(err) // an image without modules: passed over
	}
	k, err := kernelIn(root)
	if err != nil {
		t.Fatal(err)
	}
	if k.Version != "6.1.0-56-amd64" || k.Modules != filepath.Join(root, "lib/modules/6.1.0-56-amd64") {
		t.Errorf("found %+v, want 6.1.0-56-amd64, the newest with modules", k)
	}
	empty := t.TempDir()
	t.Setenv(KernelDirEnv, empty)
	_, err = FindKernel()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "linux-image-amd64") || !strings.Contains(err.Error(), empty) {
		t.Errorf("FindKernel in an empty %s: %v, want ErrUnavailable naming the directory and linux-image-amd64", KernelDirEnv, err)
	}
	t.Setenv(KernelDirEnv, root)
	if k, err := FindKernel(); err != nil || k.Version != "6.1.0-56-amd64" {
		t.Errorf("FindKernel with %s=%s: %+v, %v", KernelDirEnv, root, k, err)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"6.1.0-56-amd64", "6.1.0-9-amd64", 1},
		{"6.10.0-1-amd64", "6.9.0-3-amd64", 1},
		{"6.1.0-9-amd64", "6.1.0-9-amd64", 0},
		{"5.10.0-30-amd64", "6.1.0-1-amd64", -1},
	} {
		if got := compareVersions(c.a, c.b); (got > 0) != (c.want > 0) || (got < 0) != (c.want < 0) {
			t.Errorf("compareVersions(%s, %s) = %d, want sign %d", c.a, c.b, got, c.want)
		}
	}
}

func TestParseLdd(t *testing.T) {
	libs, err := parseLdd(`	linux-vdso.so.1 (0x00007ffd)
	libbpf.so.1 => /lib/x86_64-linux-gnu/libbpf.so.1 (0x00007f4c)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f4c)
	/lib64/ld-linux-x86-64.so.2 (0x00007f4c)
`)
	want := []string{"/lib/x86_64-linux-gnu/libbpf.so.1", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if err != nil || !slices.Equal(libs, want) {
		t.Errorf("parseLdd: %q, %v; want %q", libs, err, want)
	}
	if _, err := parseLdd("\tlibfoo.so.1 => not found\n"); err == nil {
		t.Error("parseLdd: a missing library is no error")
	}
}

func TestParseData(t *testing.T) {
	data := fmt.Sprintf("%s\r\naGVsbG8K\r\n%s\r\nH4sIAAAAAAAAA+3OMQqAMAwF0M6eIicQ\r\n%s 3\r\n", markOutput, markFiles, markStatus)
	var r Result
	if err := r.parseData([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if r.Status != 3 || string(r.Output) != "hello\n" || len(r.tgz) == 0 {
		t.Errorf("status %d, output %q, %d bytes of files", r.Status, r.Output, len(r.tgz))
	}
	if err := r.parseData([]byte(markOutput + "\naGVsbG8K\n")); err == nil || !strings.Contains(err.Error(), "status") {
		t.Errorf("without a status: %v", err)
	}
	if err := r.parseData([]byte(markError + " insmod kernel/net/sched/sch_netem.ko failed\n")); err == nil || !strings.Contains(err.Error(), "sch_netem") {
		t.Errorf("an init failure: %v", err)
	}
}

func TestAvailableNamesQemuPackage(t *testing.T) {
	defer func(q string) { qemu = q }(qemu)
	qemu = "huddle-test-no-such-qemu"
	err := Available()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "qemu-system-x86") && !strings.Contains(err.Error(), "linux/amd64") {
		t.Errorf("Available without qemu: %v, want ErrUnavailable naming the package qemu-system-x86", err)
	}
}

func TestPrintable(t *testing.T) {
	if got := printable("\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS (version 1.16)\r"); got != "SeaBIOS (version 1.16)" {
		t.Errorf("printable: %q", got)
	}
}

// TestConsoleStream: Options.Stream gets the console's lines between the
// ready marker and init's line after the script, without control
// characters, blank lines included.
func TestConsoleStream(t *testing.T) {
	var got []string
	c := &console{logf: func(string, ...any) {}, stream: func(l string) { got = append(got, l) }, start: time.Now()}
	for _, chunk := range []string{
		"[    0.5] booting\r\n", "\r\n" + markReady + "\r\n",
		"huddle lab: 3 nodes\r\n\r\n  net", "work  netem ±1ms\r\n",
		markExited + " 0\r\n", "reboot: Power down\r\n",
	} {
		c.Write([]byte(chunk))
	}
	want := []string{"huddle lab: 3 nodes", "", "  network  netem ±1ms"}
	if !slices.Equal(got, want) {
		t.Errorf("streamed %q, want %q", got, want)
	}
}
