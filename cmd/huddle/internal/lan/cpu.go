package lan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// CPU holds processes to a share of one CPU, each in a control group of
// its own, as a starved host would be: the lab's fault cpu:NODES:PERCENT.
// It uses cgroup v1's cpu controller (cpu.cfs_quota_us) where that is
// mounted, else cgroup v2's cpu.max, and needs write access to the
// hierarchy (root, or a delegated v2 subtree). Close moves every process
// it holds back and removes its groups.
type CPU struct {
	root   string // the hierarchy: /sys/fs/cgroup/cpu (v1) or the v2 mount
	v2     bool
	prefix string // of the groups' names
	mu     sync.Mutex
	made   []string // groups made, to remove
}

// period is the quota's period, in microseconds: 100 ms, the kernel's
// default, so that a 1 % share runs 1 ms in each 100 ms.
const period = 100000

// cgroupRoot is where control groups are mounted (a test sets another).
var cgroupRoot = "/sys/fs/cgroup"

// OpenCPU finds a hierarchy in which it can hold processes' CPU, or says
// why none can be used. Groups are named prefix and the name Limit gets.
func OpenCPU(prefix string) (*CPU, error) {
	v1 := filepath.Join(cgroupRoot, "cpu")
	if fileExists(filepath.Join(v1, "cpu.cfs_quota_us")) {
		if err := writable(v1); err != nil {
			return nil, fmt.Errorf("lab: holding a node's CPU needs cgroup v1's cpu controller at %s to be writable: %w (run as root)", v1, err)
		}
		return &CPU{root: v1, prefix: prefix}, nil
	}
	for _, root := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
		b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
		if err != nil {
			continue
		}
		if !slices.Contains(strings.Fields(string(b)), "cpu") {
			return nil, fmt.Errorf("lab: holding a node's CPU needs the cpu controller: cgroup v2 at %s offers only %q, and cgroup v1's cpu controller is not mounted", root, strings.TrimSpace(string(b)))
		}
		if err := writable(root); err != nil {
			return nil, fmt.Errorf("lab: holding a node's CPU needs cgroup v2 at %s to be writable: %w (run as root, or delegate a subtree)", root, err)
		}
		// The groups are children of root: root must hand them the cpu
		// controller. Writing it again is harmless.
		if err := os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
			return nil, fmt.Errorf("lab: holding a node's CPU: enabling the cpu controller in %s: %w", root, err)
		}
		return &CPU{root: root, v2: true, prefix: prefix}, nil
	}
	return nil, fmt.Errorf("lab: holding a node's CPU needs control groups with the cpu controller (v1 at %s/cpu, or v2), and this system has neither", cgroupRoot)
}

// Limit holds process pid to percent of one CPU (more than 100 spans
// several), in the group of that name; percent 0 lifts the hold (the
// process stays in its group, without a quota). A process started anew
// (a restart) needs Limit again.
func (c *CPU) Limit(name string, pid int, percent float64) error {
	if percent < 0 || percent > 100*1024 {
		return fmt.Errorf("lab: CPU share %v %%: want 0 (no limit) or more, up to 100 per CPU", percent)
	}
	dir := filepath.Join(c.root, c.prefix+name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.made, dir) {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("lab: holding CPU: %w", err)
		}
		c.made = append(c.made, dir)
	}
	quota := int64(percent / 100 * period)
	if percent > 0 {
		quota = max(quota, 1000) // the kernel's least quota: 1 ms
	}
	var file, value string
	switch {
	case c.v2 && percent == 0:
		file, value = "cpu.max", "max "+strconv.Itoa(period)
	case c.v2:
		file, value = "cpu.max", fmt.Sprintf("%d %d", quota, period)
	default:
		if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0); err != nil {
			return fmt.Errorf("lab: holding CPU: %w", err)
		}
		file, value = "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)
		if percent == 0 {
			value = "-1"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("lab: holding CPU: %s: %w", file, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("lab: holding CPU: moving process %d into %s: %w", pid, dir, err)
	}
	return nil
}

// Close moves the processes still in its groups back to the hierarchy's
// root and removes the groups.
func (c *CPU) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, dir := range c.made {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, pid := range strings.Fields(string(b)) {
			// A process that exited meanwhile cannot be moved: no matter.
			_ = os.WriteFile(filepath.Join(c.root, "cgroup.procs"), []byte(pid), 0)
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("lab: removing %s: %w", dir, err))
		}
	}
	c.made = nil
	return errors.Join(errs...)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writable says whether this process may make a group in dir.
func writable(dir string) error {
	probe, err := os.MkdirTemp(dir, ".huddle-probe-")
	if err != nil {
		return err
	}
	return os.Remove(probe)
}
