package testutil

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/systool"
)

// NetnsEnv is set in the environment of a test binary that PrivateNetwork
// re-ran inside a private network namespace.
const NetnsEnv = "HUDDLE_TEST_NETNS"

// PrivateNetwork runs the calling test in a network namespace of its own, so
// that it can open real sockets and join multicast groups without a packet
// reaching the host's interfaces. A test that needs real sockets starts with
//
//	if !testutil.PrivateNetwork(t) {
//		return
//	}
//
// In the ordinary test process it re-runs the test binary with
// -test.run '^TestName$' under `unshare -rn` (a new user and network
// namespace: it works unprivileged where user namespaces are allowed, and as
// root), logs the child's output through t.Log as it arrives, fails t if the
// child's test failed, skips t if it skipped, and returns false. Inside the
// child (NetnsEnv set) it brings lo up with the MULTICAST flag and a route
// for 224.0.0.0/4, once per process, and returns true: lo is then the only
// interface, and multicast sent on it loops back to the sockets joined there.
//
// Only top-level tests are supported: call it before any t.Run. The child is
// given -test.v, a -test.timeout ending at the parent's deadline, the parent's
// GOMAXPROCS, and -seed, -test.short, -test.benchtime, -test.benchmem and
// -test.gocoverdir when they were set. -test.count is not passed on: the
// parent already runs the test count times, each in a fresh child. If
// unshare is missing or not permitted, t is skipped with the reason.
func PrivateNetwork(t *testing.T) bool {
	t.Helper()
	if os.Getenv(NetnsEnv) != "" {
		if err := setupLoopback(); err != nil {
			t.Fatalf("testutil: private network: %v", err)
		}
		return true
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("testutil: PrivateNetwork is for top-level tests; %s is a subtest", t.Name())
	}
	lines, err := runInNetns(t, "-test.run="+runPattern(t.Name()))
	switch {
	case err != nil || hasLine(lines, "--- FAIL: "+t.Name()+" "):
		t.Fatalf("%s failed in its private network namespace (%v); its output is above", t.Name(), err)
	case hasLine(lines, "--- SKIP: "+t.Name()+" "):
		t.Skipf("%s skipped in its private network namespace; the reason is above", t.Name())
	case !hasLine(lines, "--- PASS: "+t.Name()+" "):
		t.Fatalf("%s did not run in its private network namespace; the child's output is above", t.Name())
	}
	return false
}

// PrivateNetworkB is PrivateNetwork for benchmarks. The parent runs the
// benchmark once per process in the child (-test.bench '^Name$') and reports
// the child's metrics (ns/op and any custom ones) as its own, so
// `go test -bench` prints them; the iteration count it prints is the
// parent's (usually 1) and means nothing: the child's is in the log.
func PrivateNetworkB(b *testing.B) bool {
	b.Helper()
	if os.Getenv(NetnsEnv) != "" {
		if err := setupLoopback(); err != nil {
			b.Fatalf("testutil: private network: %v", err)
		}
		return true
	}
	res := benchResult(b)
	if res.err != nil {
		b.Fatal(res.err)
	}
	for _, m := range res.metrics {
		b.ReportMetric(m.v, m.unit)
	}
	return false
}

type metric struct {
	v    float64
	unit string
}

type benchRun struct {
	metrics []metric
	err     error
}

// benchRuns caches each benchmark's child result: the testing package calls
// a benchmark function several times while it ramps b.N up.
var benchRuns sync.Map // name → *benchRun

func benchResult(b *testing.B) *benchRun {
	b.Helper()
	if r, ok := benchRuns.Load(b.Name()); ok {
		return r.(*benchRun)
	}
	lines, err := runInNetns(b, "-test.run=^$", "-test.bench="+runPattern(b.Name()))
	r := &benchRun{}
	if err != nil {
		r.err = fmt.Errorf("%s failed in its private network namespace (%v); its output is above", b.Name(), err)
	} else if r.metrics = benchMetrics(lines, b.Name()); r.metrics == nil {
		r.err = fmt.Errorf("%s reported no result from its private network namespace; its output is above", b.Name())
	}
	benchRuns.Store(b.Name(), r)
	return r
}

// benchMetrics parses the child's result line,
// "BenchmarkX-8  1234  5678 ns/op  9.1 dgram/s".
func benchMetrics(lines []string, name string) []metric {
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 4 || (f[0] != name && !strings.HasPrefix(f[0], name+"-")) {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		var ms []metric
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil
			}
			ms = append(ms, metric{v, f[i+1]})
		}
		return ms
	}
	return nil
}

// runPattern matches exactly one top-level test or benchmark name.
func runPattern(name string) string { return "^" + regexp.QuoteMeta(name) + "$" }

func hasLine(lines []string, prefix string) bool {
	return slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(strings.TrimSpace(l)+" ", prefix)
	})
}

// passedFlags are the test binary's flags that the child inherits when set.
var passedFlags = []string{"seed", "test.short", "test.benchtime", "test.benchmem", "test.gocoverdir"}

// runInNetns re-runs this test binary under unshare -rn with args, logging
// each line of its output through tb.Log as it arrives. It returns the lines
// and the child's exit error.
func runInNetns(tb testing.TB, args ...string) ([]string, error) {
	tb.Helper()
	if err := unshareWorks(); err != nil {
		NeedLAN(tb, fmt.Errorf("needs a private network namespace, which this machine cannot make: %w", err))
	}
	args = append(append(unshareFlags(), "--", os.Args[0], "-test.v=true"), args...)
	// The child ends by the parent's deadline, so that a hung child cannot
	// outlive a parent killed by -test.timeout.
	if d, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			args = append(args, "-test.timeout="+time.Until(dl).Round(time.Millisecond).String())
		}
	}
	flag.Visit(func(f *flag.Flag) {
		if slices.Contains(passedFlags, f.Name) {
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	cmd := systool.Command("unshare", args...)
	// The race runtime sleeps a second at exit unless told not to.
	race := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), NetnsEnv+"=1", "GORACE="+race,
		"GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	if base, err := seedBase(); err == nil {
		cmd.Env = append(cmd.Env, SeedBaseEnv+"="+strconv.FormatInt(base, 10)) // the child runs this run's seeds
	}
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatalf("testutil: pipe: %v", err)
	}
	defer r.Close()
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		tb.Fatalf("testutil: starting %v: %v", cmd.Args, err)
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		tb.Log(sc.Text())
	}
	return lines, cmd.Wait()
}

// unshareFlags are unshare's flags for a private network namespace: root
// needs no user namespace (which a kernel may forbid even to root);
// another user gets one in which it is root, if the kernel allows it.
func unshareFlags() []string {
	if os.Geteuid() == 0 {
		return []string{"-n"}
	}
	return []string{"-rn"}
}

// unshareWorks says once per process whether unshare can make a private
// network namespace, and if not, what is missing and how to get it.
var unshareWorks = sync.OnceValue(func() error {
	for _, tool := range []string{"unshare", "ip"} {
		if !systool.Have(tool) {
			return fmt.Errorf("the %s command is not installed (apt install %s)", tool, map[string]string{"unshare": "util-linux", "ip": "iproute2"}[tool])
		}
	}
	out, err := systool.Command("unshare", append(unshareFlags(), "true")...).CombinedOutput()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	if os.Geteuid() != 0 {
		return fmt.Errorf("unshare -rn: %v: %s; unprivileged user namespaces are off here (enable them with sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces>0, or run the tests as root)", err, msg)
	}
	return fmt.Errorf("unshare -n: %v: %s", err, msg)
})

// setupLoopback readies lo in the child, once per process. It refuses to
// touch anything if it can see an interface besides lo: then NetnsEnv was
// set by hand in the host's namespace, not by PrivateNetwork.
var setupLoopback = sync.OnceValue(func() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, ifi := range ifs {
		if ifi.Name != "lo" {
			return fmt.Errorf("%s is set but this process sees interface %s, so it is not in a private network namespace; refusing to reconfigure lo", NetnsEnv, ifi.Name)
		}
	}
	for _, cmd := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "set", "lo", "multicast", "on"},
		{"route", "replace", "224.0.0.0/4", "dev", "lo"},
	} {
		if out, err := systool.Command("ip", cmd...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(cmd, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
})

// RequireLANEnv, when set, makes a test that needs a network namespace
// fail where it would skip (NeedLAN, PrivateNetwork): CI sets it, so that
// the tests of the real network cannot all skip and stay green.
const RequireLANEnv = "HUDDLE_TEST_REQUIRE_LAN"

// NeedLAN skips t, or fails it under RequireLANEnv, when err says that
// this machine cannot build the virtual LAN the test needs.
func NeedLAN(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv(RequireLANEnv) != "" {
		t.Fatalf("%v (%s is set: this machine must run the virtual-LAN tests)", err, RequireLANEnv)
	}
	t.Skip(err)
}

// RequireVMEnv, set to 1, makes a test that boots a VM (package
// cmd/huddle/internal/vm) fail where it would skip for want of qemu or a
// kernel (NeedVM): CI installs them.
const RequireVMEnv = "HUDDLE_TEST_REQUIRE_VM"

// NeedVM skips t under -short (a boot costs tens of seconds of a core)
// and when err, vm.Available's, says that no VM can boot here; under
// RequireVMEnv=1 the latter fails t instead.
func NeedVM(t testing.TB, err error) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a VM (software emulation, tens of seconds of a core): not with -short")
	}
	if err == nil {
		return
	}
	if os.Getenv(RequireVMEnv) == "1" {
		t.Fatalf("%v (%s=1: this machine must boot the VM)", err, RequireVMEnv)
	}
	t.Skipf("%v (%s=1 makes this a failure)", err, RequireVMEnv)
}
