package lan_test

// The test binary doubles as a tiny UDP tool inside the hosts: run with
// LAB_HELPER=1 it sends or receives datagrams instead of testing.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/testutil"
)

func TestMain(m *testing.M) {
	if os.Getenv("LAB_HELPER") == "1" {
		if err := helperMain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testutil.Exclusive() // real timers: not beside the VM or the simulator's heaviest package
	os.Exit(m.Run())
}

func helperMain(args []string) error {
	if len(args) == 0 {
		return errors.New("no mode")
	}
	switch args[0] {
	case "recv": // recv ADDR IFACE MAX TOTAL IDLE
		if len(args) != 6 {
			return errors.New("usage: recv addr iface max total idle")
		}
		max, _ := strconv.Atoi(args[3])
		total, err1 := time.ParseDuration(args[4])
		idle, err2 := time.ParseDuration(args[5])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		return recv(args[1], args[2], max, total, idle)
	case "send": // send ADDR[,ADDR...] COUNT INTERVAL
		if len(args) != 4 {
			return errors.New("usage: send addrs count interval")
		}
		count, _ := strconv.Atoi(args[2])
		gap, err := time.ParseDuration(args[3])
		if err != nil {
			return err
		}
		for _, addr := range strings.Split(args[1], ",") {
			if err := send(addr, count, gap); err != nil {
				return err
			}
		}
		return nil
	case "stubborn": // ignores SIGTERM and sleeps
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Minute)
		return nil
	}
	return fmt.Errorf("unknown mode %q", args[0])
}

// recv prints "ready", then one "from IP" line per datagram, and "got N" when
// max datagrams arrived, total elapsed, or idle passed without a datagram
// after the first.
func recv(addr, iface string, max int, total, idle time.Duration) error {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return err
	}
	var conn *net.UDPConn
	if ua.IP.IsMulticast() {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		conn, err = net.ListenMulticastUDP("udp4", ifi, ua)
		if err != nil {
			return err
		}
	} else if conn, err = net.ListenUDP("udp4", ua); err != nil {
		return err
	}
	defer conn.Close()
	conn.SetReadBuffer(1 << 20)
	fmt.Println("ready")
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	end := time.Now().Add(total)
	buf := make([]byte, 2048)
	n := 0
	for n < max {
		deadline := end
		if quiet := time.Now().Add(idle); n > 0 && quiet.Before(end) {
			deadline = quiet
		}
		conn.SetReadDeadline(deadline)
		_, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			break
		}
		n++
		fmt.Fprintf(out, "from %s\n", from.IP)
	}
	fmt.Fprintf(out, "got %d\n", n)
	return nil
}

func send(addr string, count int, gap time.Duration) error {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return err
	}
	conn, err := net.DialUDP("udp4", nil, ua)
	if err != nil {
		return err
	}
	defer conn.Close()
	for i := range count {
		if _, err := fmt.Fprintf(conn, "datagram %d", i); err != nil {
			return err
		}
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	return nil
}

// helperArgv returns the command that runs the helper in mode with args.
func helperArgv(t testing.TB, args ...string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// GORACE: a race-enabled binary otherwise sleeps 1s at exit.
	return append([]string{"env", "LAB_HELPER=1", "GORACE=atexit_sleep_ms=0", self}, args...)
}

// newLAN builds a LAN closed at cleanup, or skips when none can be built.
func newLAN(t *testing.T, opts lan.Options) *lan.LAN {
	t.Helper()
	testutil.NeedLAN(t, lan.Available())
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	l, err := lan.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return l
}

// receiver is a started recv helper.
type receiver struct {
	host int
	proc *lan.Proc
}

// recvSpec says what a receiver listens to and when it stops: after max
// datagrams, after total, or idle after the last datagram.
type recvSpec struct {
	addr        string
	max         int
	total, idle time.Duration
}

var recvSeq atomic.Int64

// startRecv starts a receiver on each of hosts and waits until they listen.
func startRecv(t *testing.T, l *lan.LAN, hosts []int, spec recvSpec) []receiver {
	t.Helper()
	var rs []receiver
	for _, host := range hosts {
		addr := spec.addr
		if addr == "" { // unicast: the host's own address
			addr = l.Host(host).Addr.String() + ":7000"
		}
		name := fmt.Sprintf("recv%d-h%d", recvSeq.Add(1), host)
		argv := helperArgv(t, "recv", addr, lan.Iface, strconv.Itoa(spec.max), spec.total.String(), spec.idle.String())
		p, err := l.Start(host, name, argv)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, receiver{host: host, proc: p})
	}
	for _, r := range rs {
		waitLog(t, r.proc, "ready", 5*time.Second)
	}
	return rs
}

// result waits for the receiver and returns the count and the sources.
func (r receiver) result(t *testing.T) (int, map[string]int) {
	t.Helper()
	if err := r.proc.WaitTimeout(15 * time.Second); err != nil {
		t.Fatalf("receiver on host %d: %v\n%s", r.host, err, readLog(t, r.proc))
	}
	from := map[string]int{}
	got := -1
	for _, line := range strings.Split(readLog(t, r.proc), "\n") {
		if ip, ok := strings.CutPrefix(line, "from "); ok {
			from[ip]++
		} else if n, ok := strings.CutPrefix(line, "got "); ok {
			got, _ = strconv.Atoi(n)
		}
	}
	if got < 0 {
		t.Fatalf("receiver on host %d printed no count:\n%s", r.host, readLog(t, r.proc))
	}
	return got, from
}

// sendFrom runs the send helper on host to completion.
func sendFrom(t *testing.T, l *lan.LAN, host int, addr string, count int, gap time.Duration) {
	t.Helper()
	if out, err := l.Exec(host, helperArgv(t, "send", addr, strconv.Itoa(count), gap.String())...); err != nil {
		t.Fatalf("send from host %d: %v\n%s", host, err, out)
	}
}

func readLog(t *testing.T, p *lan.Proc) string {
	t.Helper()
	b, err := os.ReadFile(p.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitLog polls p's log until it contains s.
func waitLog(t *testing.T, p *lan.Proc, s string, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		exited := p.Exited()
		if strings.Contains(readLog(t, p), s) {
			return
		}
		if exited {
			break
		}
	}
	t.Fatalf("%s: no %q in its log within %v:\n%s", p.Name, s, timeout, readLog(t, p))
}
