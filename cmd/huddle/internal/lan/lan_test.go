package lan_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/systool"
	"github.com/huddle-lan/huddle/internal/testutil"
)

const group = "239.192.72.68:7468"

func TestLANConnectivity(t *testing.T) {
	l := newLAN(t, lan.Options{Hosts: 3})
	checkHosts(t, l)
	checkUnicast(t, l)
	if got := reach(t, l, 1, []int{2, 3}); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("multicast from host 1 reached hosts %v, want [2 3]", got)
	}
}

// TestMulticastOff takes multicast away from one host, as a snooping
// switch without a querier does: it no longer receives the group, while
// its own multicast and unicast both ways still pass; then gives it back.
func TestMulticastOff(t *testing.T) {
	l := newLAN(t, lan.Options{Hosts: 3})
	if err := l.SetMulticast(3, false); err != nil {
		t.Fatal(err)
	}
	if got := reach(t, l, 1, []int{2, 3}); !slices.Equal(got, []int{2}) {
		t.Fatalf("with multicast off towards host 3, multicast from host 1 reached hosts %v, want [2]", got)
	}
	if got := reach(t, l, 3, []int{1, 2}); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("multicast from host 3 reached hosts %v, want [1 2]", got)
	}
	checkUnicast(t, l)
	if err := l.SetMulticast(3, true); err != nil {
		t.Fatal(err)
	}
	if got := reach(t, l, 1, []int{2, 3}); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("with multicast back on, multicast from host 1 reached hosts %v, want [2 3]", got)
	}
}

// TestRootless runs the unprivileged mode (a private user namespace), even
// as root, when the kernel allows it.
func TestRootless(t *testing.T) {
	testutil.NeedLAN(t, lan.Available())
	l, err := lan.New(lan.Options{Hosts: 2, Rootless: true, Logf: t.Logf})
	if errors.Is(err, lan.ErrUnavailable) {
		t.Skipf("rootless mode unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if l.Mode() != "rootless" {
		t.Fatalf("mode %q, want rootless", l.Mode())
	}
	checkHosts(t, l)
	if got := reach(t, l, 1, []int{2}); !slices.Equal(got, []int{2}) {
		t.Fatalf("multicast from host 1 reached hosts %v, want [2]", got)
	}
	if err := l.Cut([]int{1}, []int{2}); err != nil {
		t.Fatal(err)
	}
	if got := reach(t, l, 1, []int{2}); len(got) != 0 {
		t.Fatalf("multicast crossed the cut to hosts %v", got)
	}
}

func checkHosts(t *testing.T, l *lan.LAN) {
	t.Helper()
	for i := 1; i <= l.Hosts(); i++ {
		h := l.Host(i)
		if h.Index != i || h.Iface != "eth0" || h.Addr.String() != fmt.Sprintf("10.77.0.%d", i) {
			t.Errorf("Host(%d) = %+v", i, h)
		}
		out, err := l.Exec(i, "ip", "-4", "-o", "addr", "show", "dev", "eth0")
		if err != nil || !strings.Contains(string(out), h.Addr.String()+"/24") {
			t.Errorf("host %d eth0: %v %s", i, err, out)
		}
		// Every other host's MAC is known for good: the kernel's one
		// neighbour table for all namespaces cannot fill up (lan.go,
		// buildHost).
		out, err = l.Exec(i, "ip", "-4", "neigh", "show", "dev", "eth0", "nud", "permanent")
		for j := 1; j <= l.Hosts(); j++ {
			o := l.Host(j)
			if j != i && (err != nil || !strings.Contains(string(out), o.Addr.String()+" lladdr "+o.MAC()+" PERMANENT")) {
				t.Errorf("host %d: no permanent neighbour entry for host %d (%s at %s): %v\n%s", i, j, o.Addr, o.MAC(), err, out)
			}
		}
		if out, err := l.Exec(i, "ip", "-o", "link", "show", "dev", "eth0"); err != nil || !strings.Contains(string(out), "link/ether "+h.MAC()) {
			t.Errorf("host %d eth0 is not at %s: %v %s", i, h.MAC(), err, out)
		}
	}
}

// checkUnicast has every host send one datagram to every other host.
func checkUnicast(t *testing.T, l *lan.LAN) {
	t.Helper()
	n := l.Hosts()
	var all []int
	for i := 1; i <= n; i++ {
		all = append(all, i)
	}
	rs := startRecv(t, l, all, recvSpec{max: n - 1, total: 5 * time.Second, idle: 5 * time.Second})
	for i := 1; i <= n; i++ {
		var to []string
		for j := 1; j <= n; j++ {
			if i != j {
				to = append(to, l.Host(j).Addr.String()+":7000")
			}
		}
		sendFrom(t, l, i, strings.Join(to, ","), 1, 0)
	}
	for _, r := range rs {
		got, from := r.result(t)
		if got != n-1 || len(from) != n-1 {
			t.Errorf("host %d received %d unicast datagrams from %v, want one from each other host", r.host, got, from)
		}
	}
}

// reach sends a few multicast datagrams from host and returns which of the
// hosts in to received at least one.
func reach(t *testing.T, l *lan.LAN, from int, to []int) []int {
	t.Helper()
	rs := startRecv(t, l, to, recvSpec{addr: group, max: 1, total: time.Second, idle: time.Second})
	sendFrom(t, l, from, group, 3, 10*time.Millisecond)
	var got []int
	for _, r := range rs {
		if n, _ := r.result(t); n > 0 {
			got = append(got, r.host)
		}
	}
	return got
}

// TestLoss applies loss with the best method this machine has: the
// kernel's (netem, iptables, nft), measured with plain UDP receivers, or
// where none works, the nodes' built-in drop (TestBuiltinLoss's check).
func TestLoss(t *testing.T) {
	l := newLAN(t, lan.Options{Hosts: 3})
	method := l.LossMethod()
	t.Logf("loss method: %s", l.LossDescription())
	if method == lan.MethodBuiltin {
		checkBuiltinLoss(t, l)
		return
	}
	if !slices.Contains([]string{"netem", "iptables", "nft"}, method) {
		t.Fatalf("LossMethod() = %q", method)
	}
	if err := l.SetLoss(2, 0.5); err != nil {
		t.Fatal(err)
	}
	lossy, clean := countMulticast(t, l, 400)
	if lossy < 130 || lossy > 270 {
		t.Errorf("host 2 with 50%% loss received %d of 400", lossy)
	}
	if clean < 396 {
		t.Errorf("host 3 without loss received %d of 400", clean)
	}
	if err := l.SetLoss(2, 0); err != nil {
		t.Fatal(err)
	}
	if lossy, _ := countMulticast(t, l, 100); lossy < 99 {
		t.Errorf("host 2 received %d of 100 after removing the loss", lossy)
	}
}

// countMulticast sends n datagrams from host 1 and returns how many hosts 2
// and 3 received.
func countMulticast(t *testing.T, l *lan.LAN, n int) (int, int) {
	t.Helper()
	rs := startRecv(t, l, []int{2, 3}, recvSpec{addr: group, max: n, total: 10 * time.Second, idle: 500 * time.Millisecond})
	sendFrom(t, l, 1, group, n, 100*time.Microsecond)
	got2, _ := rs[0].result(t)
	got3, _ := rs[1].result(t)
	return got2, got3
}

// TestCutHeal cuts with the best method this machine has (a firewall, else
// routes); TestCutHealByRoutes forces the routes, which need only ip.
func TestCutHeal(t *testing.T) {
	checkCutHeal(t, newLAN(t, lan.Options{Hosts: 3}))
}

func TestCutHealByRoutes(t *testing.T) {
	l := newLAN(t, lan.Options{Hosts: 3, CutMethod: lan.MethodRoute})
	checkCutHeal(t, l)
	if m := l.CutMethod(); m != lan.MethodRoute {
		t.Fatalf("CutMethod() = %q, want route", m)
	}
}

func checkCutHeal(t *testing.T, l *lan.LAN) {
	t.Helper()
	t.Logf("cut method: %s", l.CutMethod())
	if err := l.Cut([]int{1}, []int{2}); err != nil {
		t.Fatal(err)
	}
	if got := reach(t, l, 1, []int{2, 3}); !slices.Equal(got, []int{3}) {
		t.Errorf("after Cut({1},{2}) multicast from 1 reached %v, want [3]", got)
	}
	if got := reach(t, l, 2, []int{1, 3}); !slices.Equal(got, []int{3}) {
		t.Errorf("after Cut({1},{2}) multicast from 2 reached %v, want [3]", got)
	}
	if err := l.Cut([]int{1}, []int{1}); err == nil {
		t.Error("Cut with a host on both sides succeeded")
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := reach(t, l, 1, []int{2, 3}); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("after Heal multicast from 1 reached %v, want [2 3]", got)
	}
}

func TestTeardown(t *testing.T) {
	testutil.NeedLAN(t, lan.Available())
	l, err := lan.New(lan.Options{Hosts: 2, Logf: t.Logf, Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	sleeper, err := l.Start(1, "sleep", []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	stubborn, err := l.Start(2, "stubborn", helperArgv(t, "stubborn"))
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, stubborn, "ready", 5*time.Second)
	dir := l.LogDir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if !sleeper.Exited() || !stubborn.Exited() {
		t.Fatal("processes still running after Close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("log dir %s left behind: %v", dir, err)
	}
	checkGone(t, l.Prefix(), sleeper.PID(), stubborn.PID())
	if _, err := l.Start(1, "late", []string{"true"}); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// TestTeardownAfterFailure runs a test that fails (and one that panics)
// while its LAN runs a process, in a child process, and checks that its
// cleanup left nothing behind.
func TestTeardownAfterFailure(t *testing.T) {
	testutil.NeedLAN(t, lan.Available())
	for _, mode := range []string{"fatal", "panic"} {
		t.Run(mode, func(t *testing.T) {
			self, _ := os.Executable()
			cmd := exec.Command(self, "-test.run=^TestTeardownChild$", "-test.v")
			cmd.Env = append(os.Environ(), "LAB_TEARDOWN_CHILD="+mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("child test passed, want failure:\n%s", out)
			}
			m := regexp.MustCompile(`LAN (\S+) pid (\d+)`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("child printed no LAN:\n%s", out)
			}
			pid, _ := strconv.Atoi(string(m[2]))
			checkGone(t, string(m[1]), pid)
		})
	}
}

// TestTeardownChild fails on purpose; TestTeardownAfterFailure runs it.
func TestTeardownChild(t *testing.T) {
	mode := os.Getenv("LAB_TEARDOWN_CHILD")
	if mode == "" {
		t.Skip("run by TestTeardownAfterFailure")
	}
	l := newLAN(t, lan.Options{Hosts: 2, Grace: 300 * time.Millisecond})
	p, err := l.Start(1, "sleep", []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("LAN %s pid %d\n", l.Prefix(), p.PID())
	if mode == "panic" {
		panic("deliberate panic")
	}
	t.Fatal("deliberate failure")
}

// checkGone checks that no namespace or link named after prefix exists and
// that the processes are gone.
func checkGone(t *testing.T, prefix string, pids ...int) {
	t.Helper()
	for _, argv := range [][]string{{"ip", "netns", "list"}, {"ip", "-o", "link"}} {
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			t.Logf("%v: %v", argv, err) // not root: nothing to see outside
			continue
		}
		if strings.Contains(string(out), prefix) {
			t.Errorf("%v still shows %s:\n%s", argv, prefix, out)
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists (kill 0: %v)", pid, err)
		}
	}
}

// TestLossNft runs loss and cuts with nft rules, the firewall tried second.
func TestLossNft(t *testing.T) {
	if !systool.Have("nft") {
		t.Skip("nft not installed: nothing to test of it here (TestLoss tests the method this machine has)")
	}
	lan.SetTestFirewall("nft")
	t.Cleanup(func() { lan.SetTestFirewall("") })
	l := newLAN(t, lan.Options{Hosts: 3, Loss: 0.5})
	if err := l.SetLoss(3, 0); err != nil {
		t.Fatal(err)
	}
	if m := l.LossMethod(); m != "nft" && m != "netem" {
		t.Fatalf("LossMethod() = %q, want nft (or netem where the kernel has it)", m)
	}
	lossy, clean := countMulticast(t, l, 400)
	if lossy < 130 || lossy > 270 || clean < 396 {
		t.Errorf("received %d (50%% loss) and %d (no loss) of 400", lossy, clean)
	}
	if err := l.Cut([]int{1}, []int{2, 3}); err != nil {
		t.Fatal(err)
	}
	out, err := l.Exec(2, "nft", "list", "chain", "inet", "hudlab", "cut")
	if err != nil || !strings.Contains(string(out), "ip saddr 10.77.0.1 drop") {
		t.Fatalf("host 2 cut chain: %v\n%s", err, out)
	}
	if err := errors.Join(l.Heal(), l.SetLoss(2, 0)); err != nil {
		t.Fatal(err)
	}
	if got := reach(t, l, 1, []int{2, 3}); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("after Heal multicast from 1 reached %v, want [2 3]", got)
	}
}

// TestStaleSweep checks that New deletes a namespace left by a dead process.
func TestStaleSweep(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("stale namespaces only exist in root mode")
	}
	testutil.NeedLAN(t, lan.Available())
	pid := 4194000 // above any live PID on most machines
	for syscall.Kill(pid, 0) == nil {
		pid++
	}
	stale := fmt.Sprintf("hud%d-1-h1", pid)
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", stale, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", stale).Run() })
	newLAN(t, lan.Options{Hosts: 1})
	checkGone(t, stale)
}
