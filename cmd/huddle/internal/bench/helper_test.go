package bench

// The test binary doubles as the raw UDP multicast blaster and its sinks
// inside the lab's hosts (or their unicast fan-out twins: the blaster
// sending each datagram to a list of unicast addresses, the sinks bound
// to one), and as a node of the raw token ring: run with
// HUDDLE_BENCH_HELPER=1 it blasts, counts or passes the token on instead
// of benchmarking (see TestMain).

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/multicast"
)

const helperEnv = "HUDDLE_BENCH_HELPER"

// blastResult is what the blaster prints (one JSON line) when it is done.
type blastResult struct {
	Sent    int64   `json:"sent"`            // datagrams, each sent to every destination
	Dests   int     `json:"dests,omitempty"` // unicast destinations; 0: the multicast group
	Errors  int64   `json:"errors"`
	Seconds float64 `json:"seconds"`
	CPU     float64 `json:"cpu"` // user+system CPU seconds
}

// sinkResult is what a sink prints (one JSON line) when it is done.
type sinkResult struct {
	Got     int64   `json:"got"`
	FirstNs int64   `json:"first_ns"` // arrival of the first datagram, Unix ns
	LastNs  int64   `json:"last_ns"`  // arrival of the last one
	Drops   int64   `json:"drops"`    // the socket's kernel drops (/proc/net/udp)
	RcvBuf  int     `json:"rcvbuf"`   // receive buffer the kernel granted
	CPU     float64 `json:"cpu"`      // user+system CPU seconds
	CtxSw   int64   `json:"ctxsw"`    // context switches
}

func helperMain(args []string) error {
	if len(args) == 0 {
		return errors.New("no mode")
	}
	switch args[0] {
	case "blast": // blast GROUP:PORT|ADDR:PORT,... IFACE SIZE DURATION BATCH RATE RUNS
		if len(args) != 8 {
			return errors.New("usage: blast group:port|addr:port,... iface size duration batch rate runs")
		}
		size, err1 := strconv.Atoi(args[3])
		d, err2 := time.ParseDuration(args[4])
		batch, err3 := strconv.Atoi(args[5])
		rate, err4 := strconv.ParseFloat(args[6], 64)
		runs, err5 := strconv.ParseBool(args[7])
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return err
		}
		return blast(args[1], args[2], size, d, batch, rate, runs)
	case "sink": // sink GROUP:PORT|ADDR:PORT IFACE RCVBUF IDLE TOTAL
		if len(args) != 6 {
			return errors.New("usage: sink group:port|addr:port iface rcvbuf idle total")
		}
		rcvbuf, err1 := strconv.Atoi(args[3])
		idle, err2 := time.ParseDuration(args[4])
		total, err3 := time.ParseDuration(args[5])
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		return sink(args[1], args[2], rcvbuf, idle, total)
	case "token": // token LISTEN NEXT RUN IDLE TOTAL INJECT
		return tokenMain(args)
	case "ping": // ping LISTEN PEER SIZE RATE COUNT PINGER
		return pingMain(args)
	case "hop": // hop GROUP:PORT IFACE ROLE SIZE RATE COUNT
		return hopMain(args)
	}
	return fmt.Errorf("unknown mode %q", args[0])
}

// blast multicasts size-byte datagrams to group on iface for d, batch
// datagrams per sendmmsg call, with multicast loopback off (nothing
// listens on this host): as fast as it can with rate 0, else paced to
// rate datagrams per second (the count sent kept at rate × elapsed, in
// steps of 200 µs). It sends through huddle's own socket layer
// (multicast.Open, WriteBatch), with huddle's socket options, so that the
// ceiling and huddle differ by the protocol alone, not by how they make
// their system calls.
//
// When group is a comma-separated list of unicast addresses instead, it
// sends every datagram to each of them in turn, as huddle's unicast
// transport does (multicast.OpenUnicast bound to iface's address at the
// first destination's port, WriteBatch: sendmmsg with an address per
// datagram, batch headers a call); rate and the count sent are then
// datagrams before the fan-out, each one per destination.
func blast(group, iface string, size int, d time.Duration, batch int, rate float64, runs bool) error {
	c, dests, err := openBlaster(group, iface, batch, runs)
	if err != nil {
		return err
	}
	defer c.Close()
	dgrams := make([][]byte, batch)
	for i := range dgrams {
		dgrams[i] = make([]byte, size)
	}
	res := blastResult{Dests: dests}
	start := time.Now()
	end := start.Add(d)
	for seq := uint64(0); ; {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		n := len(dgrams)
		if rate > 0 {
			due := int64(rate*now.Sub(start).Seconds()) - res.Sent
			if due <= 0 {
				time.Sleep(200 * time.Microsecond)
				continue
			}
			n = int(min(due, int64(n)))
		}
		for i := range dgrams[:n] {
			seq++
			binary.BigEndian.PutUint64(dgrams[i], seq)
		}
		if err := c.WriteBatch(dgrams[:n]); err != nil {
			res.Errors++
			if res.Errors > 1000 {
				return fmt.Errorf("send: %w", err)
			}
			continue
		}
		res.Sent += int64(n)
	}
	res.Seconds = time.Since(start).Seconds()
	res.CPU = cpuSeconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}

// blaster is what blast sends through: a multicast.Conn, or a
// multicast.Unicast with its destinations set.
type blaster interface {
	WriteBatch(datagrams [][]byte) error
	Close() error
}

// openBlaster opens blast's socket for target, a group address or a list
// of unicast addresses, and says how many destinations the list has (0
// for a group).
func openBlaster(target, iface string, batch int, runs bool) (blaster, int, error) {
	if !strings.Contains(target, ",") {
		if ga, err := netip.ParseAddrPort(target); err == nil && ga.Addr().IsMulticast() {
			c, err := multicast.Open(multicast.SocketOptions{Group: ga, Iface: iface, TTL: 1, SendBuffer: 4 << 20, MaxBatch: batch, NoSegmentation: !runs}, zerolog.Nop())
			return c, 0, err
		}
	}
	var dests []netip.AddrPort
	for _, a := range strings.Split(target, ",") {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return nil, 0, err
		}
		if !ap.Addr().Is4() || ap.Addr().IsMulticast() {
			return nil, 0, fmt.Errorf("%v: not an IPv4 unicast destination (a list must be of unicast addresses)", ap)
		}
		dests = append(dests, ap)
	}
	src, err := ifaceAddr(iface)
	if err != nil {
		return nil, 0, err
	}
	u, err := multicast.OpenUnicast(multicast.UnicastOptions{Listen: netip.AddrPortFrom(src, dests[0].Port()), SendBuffer: 4 << 20, MaxBatch: batch, NoSegmentation: !runs}, zerolog.Nop())
	if err != nil {
		return nil, 0, err
	}
	u.SetDestinations(dests)
	return unicastSockets{u}, len(dests), nil
}

// unicastSockets is a Unicast whose Close closes both its sockets.
type unicastSockets struct{ *multicast.Unicast }

func (u unicastSockets) Close() error { u.Repair().Close(); return u.Unicast.Close() }

// ifaceAddr is the first IPv4 address of iface.
func ifaceAddr(iface string) (netip.Addr, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			return p.Addr(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s has no IPv4 address", iface)
}

// sink joins group on iface through huddle's socket layer, as huddle does
// (multicast.Open, ReadBatch of 64), prints "ready", counts the datagrams
// that arrive, and stops after idle without a datagram once the first
// arrived, or after total. It prints a sinkResult. When group is a
// unicast address (this host's), the sink binds it as huddle's unicast
// transport binds its data port (multicast.OpenUnicast, which takes the
// next port too) and counts what arrives there.
func sink(group, iface string, rcvbuf int, idle, total time.Duration) error {
	ga, err := netip.ParseAddrPort(group)
	if err != nil {
		return err
	}
	var c sinkConn
	if ga.Addr().IsMulticast() {
		c, err = multicast.Open(multicast.SocketOptions{Group: ga, Iface: iface, TTL: 1, RecvBuffer: rcvbuf}, zerolog.Nop())
	} else {
		var u *multicast.Unicast
		if u, err = multicast.OpenUnicast(multicast.UnicastOptions{Listen: ga, RecvBuffer: rcvbuf}, zerolog.Nop()); err == nil {
			c = unicastSockets{u}
		}
	}
	if err != nil {
		return err
	}
	defer c.Close()
	res := sinkResult{RcvBuf: c.ReceiveBuffer()}
	pkts := make([]huddle.Packet, 64)
	for i := range pkts {
		pkts[i].Buf = make([]byte, 65536)
	}
	// The socket has no read deadline: a watcher closes it once the
	// sink has been idle long enough, or at the end.
	var last atomic.Int64 // arrival of the last datagram, Unix ns; 0 before the first
	stop := make(chan struct{})
	go func() {
		end := time.Now().Add(total)
		for {
			select {
			case <-stop:
				return
			case <-time.After(idle / 4):
			}
			now := time.Now()
			if l := last.Load(); now.After(end) || l != 0 && now.Sub(time.Unix(0, l)) > idle {
				c.Close()
				return
			}
		}
	}()
	defer close(stop)
	fmt.Println("ready")
	for {
		n, err := c.ReadBatch(pkts)
		if err != nil {
			break
		}
		now := time.Now().UnixNano()
		if res.Got == 0 {
			res.FirstNs = now
		}
		res.LastNs = now
		last.Store(now)
		res.Got += int64(n)
	}
	res.Drops = udpDrops(int(ga.Port()))
	res.CPU = cpuSeconds()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		res.CtxSw = ru.Nvcsw + ru.Nivcsw
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// sinkConn is what sink reads: a multicast.Conn or a multicast.Unicast.
type sinkConn interface {
	ReadBatch(pkts []huddle.Packet) (int, error)
	ReceiveBuffer() int
	Close() error
}

// udpDrops sums the drops column of /proc/net/udp over the sockets bound
// to port in this network namespace; -1 when unreadable.
func udpDrops(port int) int64 {
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return -1
	}
	d, _ := parseUDPDrops(string(b), port)
	return d
}

// cpuSeconds is this process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
