package lan

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCPUHoldsAProcess: a busy process held to 5 % of one CPU gets about
// that (at most 15 % here) over a second, and Close takes the group away.
// It needs a writable cpu controller (root in CI); elsewhere it skips.
func TestCPUHoldsAProcess(t *testing.T) {
	cpu, err := OpenCPU("huddle-test-" + strconv.Itoa(os.Getpid()) + "-")
	if err != nil {
		t.Skipf("no CPU hold here: %v", err)
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	if err := cpu.Limit("busy", busy.Process.Pid, 5); err != nil {
		t.Fatal(err)
	}
	before := cpuTime(t, busy.Process.Pid)
	time.Sleep(time.Second)
	used := cpuTime(t, busy.Process.Pid) - before
	if used > 150*time.Millisecond {
		t.Errorf("held to 5 %% of a CPU, a busy process used %v in 1 s", used)
	}
	dir := filepath.Join(cpu.root, cpu.prefix+"busy")
	if err := cpu.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", dir, err)
	}
	t.Logf("held to 5 %% of a CPU (%s), a busy process used %v in 1 s", map[bool]string{false: "cgroup v1", true: "cgroup v2"}[cpu.v2], used)
}

// cpuTime is process pid's user and system time.
func cpuTime(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)       // utime, field 14
	s, _ := strconv.ParseInt(f[12], 10, 64)       // stime, field 15
	return time.Duration(u+s) * time.Second / 100 // USER_HZ
}

// TestCPURefusesClearly: where no hierarchy offers the cpu controller,
// OpenCPU says so.
func TestCPURefusesClearly(t *testing.T) {
	old := cgroupRoot
	defer func() { cgroupRoot = old }()
	cgroupRoot = t.TempDir()
	if _, err := OpenCPU("x-"); err == nil || !strings.Contains(err.Error(), "has neither") {
		t.Errorf("no hierarchy: %v, want an error saying this system has neither", err)
	}
	if err := os.WriteFile(filepath.Join(cgroupRoot, "cgroup.controllers"), []byte("memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCPU("x-"); err == nil || !strings.Contains(err.Error(), `offers only "memory pids"`) {
		t.Errorf("v2 without cpu: %v, want an error naming what it offers", err)
	}
}
