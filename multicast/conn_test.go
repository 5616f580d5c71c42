package multicast_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/systool"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/multicast"
)

// Every test here runs in a network namespace of its own (see
// testutil.PrivateNetwork), so the fixed group and port never collide and
// no packet leaves the namespace.
var group = netip.MustParseAddrPort("239.192.72.68:7468")

// watchdog bounds a blocking read: a datagram that never comes fails the test
// instead of hanging it.
const watchdog = 2 * time.Second

func opts(iface string) multicast.SocketOptions {
	return multicast.SocketOptions{Group: group, Iface: iface, TTL: 1, Loopback: true, RecvBuffer: 1 << 20}
}

func open(t *testing.T, o multicast.SocketOptions) *multicast.Conn {
	t.Helper()
	c, err := multicast.Open(o, zerolog.Nop())
	if err != nil {
		t.Fatalf("Open(%+v): %v", o, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func packets(n, size int) []multicast.Packet {
	pkts := make([]multicast.Packet, n)
	for i := range pkts {
		pkts[i].Buf = make([]byte, size)
	}
	return pkts
}

// datagram i of a test: varying length, content that names it.
func datagram(i int) []byte {
	d := bytes.Repeat([]byte{byte(i)}, 1+(i*37)%1400)
	copy(d, strconv.Itoa(i)+":")
	return d
}

// received is one datagram as read, copied out of its buffer.
type received struct {
	data  []byte
	n     int // Packet.N: len(data), or len(Buf)+1 when truncated
	src   netip.AddrPort
	batch int // the size of the ReadBatch it came in
}

// read reads from c until it has n datagrams, failing t if they do not all
// arrive within the watchdog.
func read(t *testing.T, c *multicast.Conn, n, bufSize int) []received {
	t.Helper()
	var got []received
	for len(got) < n {
		k, err := readBatch(c, packets(min(n-len(got), 64), bufSize))
		if err != nil {
			t.Fatalf("got %d of %d datagrams: %v", len(got), n, err)
		}
		got = append(got, k...)
	}
	return got
}

func readBatch(c *multicast.Conn, pkts []multicast.Packet) ([]received, error) {
	stop := time.AfterFunc(watchdog, func() { c.Close() })
	defer stop.Stop()
	k, err := c.ReadBatch(pkts)
	if err != nil {
		return nil, err
	}
	got := make([]received, k)
	for i, p := range pkts[:k] {
		got[i] = received{data: bytes.Clone(p.Buf[:min(p.N, len(p.Buf))]), n: p.N, src: p.Src, batch: k}
	}
	return got, nil
}

func TestBatchRoundTrip(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	defer goleak.VerifyNone(t)
	a, b := open(t, opts("lo")), open(t, opts("lo"))
	want := make([][]byte, 200)
	for i := range want {
		want[i] = datagram(i)
	}
	if err := a.WriteBatch(want); err != nil {
		t.Fatal(err)
	}
	got := read(t, b, len(want), 2048)
	largest := 0
	for i, r := range got {
		if !bytes.Equal(r.data, want[i]) {
			t.Fatalf("datagram %d: got %d bytes %.8q…, want %d bytes %.8q…", i, r.n, r.data, len(want[i]), want[i])
		}
		if r.src != a.LocalAddr() || r.src != netip.MustParseAddrPort("127.0.0.1:7468") {
			t.Fatalf("datagram %d: Src = %v, want A's LocalAddr %v = 127.0.0.1:7468", i, r.src, a.LocalAddr())
		}
		largest = max(largest, r.batch)
	}
	if largest < 2 {
		t.Fatalf("every ReadBatch returned one datagram; want batches")
	}
	t.Logf("largest ReadBatch: %d datagrams", largest)
}

// TestLoopback pins down what SocketOptions.Loopback (IP_MULTICAST_LOOP)
// does on Linux. It acts on the sender and covers every socket of the host,
// the sender's own included: with it off, no local socket gets the
// datagram. But on lo it does nothing: lo hands every datagram back to the
// host, so all local members get it exactly once either way.
func TestLoopback(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	defer goleak.VerifyNone(t)
	// A bridge without ports stands for a real interface: it can multicast
	// and drops what it sends.
	ip(t, "link", "add", "hb0", "type", "bridge")
	ip(t, "addr", "add", "10.99.0.1/24", "dev", "hb0")
	ip(t, "link", "set", "hb0", "up")
	for _, tc := range []struct {
		iface    string
		loopback bool
		want     bool // the sender and another local socket get the datagram
	}{
		{"hb0", true, true},
		{"hb0", false, false},
		{"lo", true, true},
		{"lo", false, true},
	} {
		t.Run(fmt.Sprintf("%s/loopback=%v", tc.iface, tc.loopback), func(t *testing.T) {
			o := opts(tc.iface)
			o.Loopback = tc.loopback
			a := open(t, o)
			b, marker := open(t, opts(tc.iface)), open(t, opts(tc.iface))
			if err := a.WriteBatch([][]byte{[]byte("from a")}); err != nil {
				t.Fatal(err)
			}
			// The marker is sent after A's datagram and looped back to every
			// local socket: reading up to it shows whether A's came.
			if err := marker.WriteBatch([][]byte{[]byte("marker")}); err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]*multicast.Conn{"A": a, "B": b} {
				if got := receivedBeforeMarker(t, c); got != tc.want {
					t.Errorf("%s received A's datagram: %v, want %v", name, got, tc.want)
				}
			}
		})
	}
}

// receivedBeforeMarker reads c up to the "marker" datagram and says whether
// "from a" came first, failing t on anything else.
func receivedBeforeMarker(t *testing.T, c *multicast.Conn) bool {
	t.Helper()
	seen := false
	for {
		r := read(t, c, 1, 64)[0]
		switch string(r.data) {
		case "marker":
			return seen
		case "from a":
			if seen {
				t.Errorf("A's datagram arrived twice")
			}
			seen = true
		default:
			t.Fatalf("unexpected datagram %q", r.data)
		}
	}
}

func TestTruncation(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	defer goleak.VerifyNone(t)
	a, b := open(t, opts("lo")), open(t, opts("lo"))
	long, short := bytes.Repeat([]byte("L"), 101), []byte("short")
	if err := a.WriteBatch([][]byte{long, short}); err != nil {
		t.Fatal(err)
	}
	got := read(t, b, 2, 100)
	if got[0].n != 101 || !bytes.Equal(got[0].data, long[:100]) {
		t.Errorf("long datagram: N = %d (%d bytes kept), want N = len(Buf)+1 = 101", got[0].n, len(got[0].data))
	}
	if !bytes.Equal(got[1].data, short) || got[1].n != len(short) {
		t.Errorf("next datagram: N = %d %q, want %q", got[1].n, got[1].data, short)
	}
}

func TestOpenErrors(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	defer goleak.VerifyNone(t)
	ip(t, "link", "add", "hb1", "type", "bridge") // left down
	ip(t, "addr", "add", "10.99.1.1/24", "dev", "hb1")
	o := opts("lo")
	unicast := o
	unicast.Group = netip.MustParseAddrPort("10.0.0.1:7468")
	v6 := o
	v6.Group = netip.MustParseAddrPort("[ff02::1]:7468")
	for _, tc := range []struct {
		name  string
		o     multicast.SocketOptions
		setup func(t *testing.T)
		want  error
		hint  string
	}{
		{"missing interface", opts("eth9"), nil, multicast.ErrNoInterface, `"eth9" (interfaces: lo, hb1)`},
		{"interface down", opts("hb1"), nil, multicast.ErrNotMulticast, "hb1 is down (ip link set hb1 up)"},
		{"no multicast flag", o, loMulticastOff, multicast.ErrNotMulticast, "ip link set lo multicast on"},
		{"unicast group", unicast, nil, multicast.ErrNotMulticastIP, "10.0.0.1 is not an IPv4 multicast address"},
		{"IPv6 group", v6, nil, multicast.ErrNotMulticastIP, "ff02::1 is not an IPv4 multicast address"},
		{"port held", o, holdPort, multicast.ErrAddrInUse, "without SO_REUSEADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			c, err := multicast.Open(tc.o, zerolog.Nop())
			if err == nil {
				c.Close()
				t.Fatalf("Open succeeded, want %v", tc.want)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("Open: %v\nwant errors.Is %v and the hint %q", err, tc.want, tc.hint)
			}
		})
	}
}

func loMulticastOff(t *testing.T) {
	ip(t, "link", "set", "lo", "multicast", "off")
	t.Cleanup(func() { ip(t, "link", "set", "lo", "multicast", "on") })
}

// holdPort binds the group's port on all addresses without SO_REUSEADDR,
// as an unrelated program would.
func holdPort(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: int(group.Port())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
}

// TestNoRouteNeeded: with the interface named (IP_MULTICAST_IF), Linux sends
// a group's datagrams out of it without any route for 224.0.0.0/4, so Open
// has nothing to complain about and the datagrams arrive.
func TestNoRouteNeeded(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	defer goleak.VerifyNone(t)
	ip(t, "route", "del", "224.0.0.0/4", "dev", "lo")
	t.Cleanup(func() { ip(t, "route", "replace", "224.0.0.0/4", "dev", "lo") })
	if out := ip(t, "route", "show", "table", "all", "224.0.0.0/4"); out != "" {
		t.Fatalf("a route for the group is left: %s", out)
	}
	a, b := open(t, opts("lo")), open(t, opts("lo"))
	if err := a.WriteBatch([][]byte{[]byte("routeless")}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, b, 1, 64); string(got[0].data) != "routeless" {
		t.Fatalf("got %q, want %q", got[0].data, "routeless")
	}
}

func TestRecvBuffer(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	defer goleak.VerifyNone(t)
	rmemMax := readSysctl(t, "net/core/rmem_max")
	if rmemMax > 1<<29 {
		t.Skipf("net.core.rmem_max = %d: too large to ask for more", rmemMax)
	}
	for _, tc := range []struct {
		ask, granted int
		warn         bool
	}{
		{rmemMax + 1<<16, rmemMax, true},
		{min(rmemMax, 1<<16), min(rmemMax, 1<<16), false},
	} {
		var log bytes.Buffer
		o := opts("lo")
		o.RecvBuffer = tc.ask
		c, err := multicast.Open(o, zerolog.New(&log))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if c.RcvBuf != tc.granted {
			t.Errorf("asked for %d with rmem_max %d: RcvBuf = %d, want %d", tc.ask, rmemMax, c.RcvBuf, tc.granted)
		}
		evs, _, _ := logs.Read(bytes.NewReader(log.Bytes()))
		warned := slices.ContainsFunc(evs, func(ev logs.Event) bool {
			msg, _ := ev.Str(logs.MessageKey)
			return ev.Level == logs.LevelWarn && ev.Name == logs.SocketRcvbufCapped && strings.Contains(msg, "net.core.rmem_max")
		})
		if warned != tc.warn || (!tc.warn && log.Len() > 0) {
			t.Errorf("asked for %d with rmem_max %d: log %q, want a socket.rcvbuf_capped warning: %v", tc.ask, rmemMax, log.String(), tc.warn)
		}
	}
}

func TestCloseUnblocksRead(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	defer goleak.VerifyNone(t)
	c, err := multicast.Open(opts("lo"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := c.ReadBatch(packets(4, 64))
		done <- err
	}()
	// Close only once the reader waits inside ReadBatch, or the test
	// would prove only that a closed Conn refuses to read.
	if !waitBlocked("multicast.(*Conn).ReadBatch", watchdog) {
		t.Fatal("the reader never blocked in ReadBatch")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("ReadBatch after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(watchdog):
		t.Fatal("Close did not unblock ReadBatch")
	}
}

// waitBlocked waits until a goroutine waits for the network inside fn
// (its stack shows fn above the poller's wait), at most for d.
func waitBlocked(fn string, d time.Duration) bool {
	buf := make([]byte, 1<<20)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, fn) && (strings.Contains(g, "[IO wait") || strings.Contains(g, "[syscall")) {
				return true
			}
		}
	}
	return false
}

// BenchmarkLoopbackBatch measures WriteBatch+ReadBatch of 1400-byte
// datagrams over lo, 64 per batch.
func BenchmarkLoopbackBatch(b *testing.B) {
	if !testutil.PrivateNetworkB(b) {
		return
	}
	o := opts("lo")
	o.RecvBuffer = 4 << 20
	w, err := multicast.Open(o, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	r, err := multicast.Open(o, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	const batch = 64
	out := make([][]byte, batch)
	for i := range out {
		out[i] = make([]byte, 1400)
	}
	in := packets(batch, 1500)
	b.SetBytes(batch * 1400)
	b.ResetTimer()
	for range b.N {
		if err := w.WriteBatch(out); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < batch; {
			n, err := r.ReadBatch(in[:batch-got])
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "dgram/s")
}

// ip runs the ip command inside the test's private namespace.
func ip(t *testing.T, args ...string) string {
	t.Helper()
	out, err := systool.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func readSysctl(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		t.Skipf("cannot read %s: %v", name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRefusedDatagramDoesNotSinkTheBatch: a datagram the kernel refuses
// costs that datagram, not the rest of the batch. The kernel refuses one
// too large for UDP (EMSGSIZE) on any machine, and, where a firewall can be
// had (iptables or nft), one that a rule refuses (EPERM). The one refused
// by the rule is followed by a longer one, so that it goes in a header of
// its own (see addRun): a run of datagrams passes the OUTPUT hook whole,
// and a rule on a packet's length sees the run's.
func TestRefusedDatagramDoesNotSinkTheBatch(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	refusals := []struct {
		name string
		bad  []byte
	}{{"too large for UDP", make([]byte, 70000)}}
	if fw, err := refuse777(); err == nil {
		refusals = append(refusals, struct {
			name string
			bad  []byte
		}{"refused by " + fw, make([]byte, 777)})
	} else {
		t.Logf("no firewall here, so no EPERM case: %v", err)
	}
	a, b := open(t, opts("lo")), open(t, opts("lo"))
	for _, r := range refusals {
		t.Logf("case: %s", r.name)
		third := append([]byte("third"), make([]byte, 800)...) // longer than 777
		batch := [][]byte{[]byte("first"), r.bad, third, []byte("fourth")}
		if err := a.WriteBatch(batch); err == nil {
			t.Fatalf("%s: WriteBatch reported no error for the refused datagram", r.name)
		}
		got := read(t, b, 3, 2048)
		for i, want := range []string{"first", string(third), "fourth"} {
			if string(got[i].data) != want {
				t.Fatalf("%s: datagram %d is %q, want %q: the batch after the refused one was lost", r.name, i, got[i].data, want)
			}
		}
	}
}

// refuse777 makes the kernel refuse to send 777-byte UDP payloads (EPERM),
// with iptables or else nft, and names the one it used.
func refuse777() (string, error) {
	// IP length 777+28; UDP length 777+8.
	out, err := systool.Command("iptables", "-A", "OUTPUT", "-p", "udp", "-m", "length", "--length", "805", "-j", "DROP").CombinedOutput()
	if err == nil {
		return "iptables", nil
	}
	cmd := systool.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader("table inet hudtest { chain out { type filter hook output priority 0; udp length 785 drop; } }\n")
	out2, err2 := cmd.CombinedOutput()
	if err2 == nil {
		return "nft", nil
	}
	return "", fmt.Errorf("iptables: %v: %s; nft: %v: %s", err, bytes.TrimSpace(out), err2, bytes.TrimSpace(out2))
}
