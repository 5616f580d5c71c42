package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// parseUDPDrops sums the drops column of a /proc/net/udp listing over the
// sockets whose local port is port.
func parseUDPDrops(listing string, port int) (int64, bool) {
	want := fmt.Sprintf(":%04X", port)
	var sum int64
	found := false
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 13 || !strings.HasSuffix(f[1], want) {
			continue
		}
		if n, err := strconv.ParseInt(f[len(f)-1], 10, 64); err == nil {
			sum += n
			found = true
		}
	}
	return sum, found
}

// procCPU returns the user+system CPU time of pid in seconds, and its
// command name.
func procCPU(pid int) (float64, string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return 0, "", fmt.Errorf("odd /proc/%d/stat", pid)
	}
	comm := s[open+1 : close]
	f := strings.Fields(s[close+1:])
	// After the command: state(0) ppid(1) ... utime(11) stime(12).
	if len(f) < 13 {
		return 0, comm, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks, comm, nil
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuSample is the machine's CPU time from /proc/stat, in ticks.
type cpuSample struct {
	total, idle, softirq float64
}

func readCPU() cpuSample {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return cpuSample{}
	}
	var s cpuSample
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i >= 8 { // guest time is already in user
			break
		}
		s.total += x
		switch i {
		case 3, 4: // idle, iowait
			s.idle += x
		case 6:
			s.softirq += x
		}
	}
	return s
}

// machineLoad describes the machine's CPU use between two samples: busy
// and softirq as fractions of all CPUs.
func machineLoad(a, b cpuSample) string {
	d := b.total - a.total
	if d <= 0 {
		return "machine CPU unknown"
	}
	return fmt.Sprintf("machine CPU busy %.0f %% of %d (softirq %.0f %%)",
		100*(1-(b.idle-a.idle)/d), runtime.NumCPU(), 100*(b.softirq-a.softirq)/d)
}

// ctxSwitches sums the voluntary and involuntary context switches of all
// threads of pid; -1 when unreadable.
func ctxSwitches(pid int) int64 {
	dirs, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return -1
	}
	var sum int64
	for _, d := range dirs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, d.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, k := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
				if v, ok := strings.CutPrefix(line, k); ok {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					sum += n
				}
			}
		}
	}
	return sum
}
