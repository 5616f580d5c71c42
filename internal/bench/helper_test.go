package bench

// The test binary doubles as the raw UDP multicast blaster and its sinks
// inside the lab's hosts: run with HUDDLE_BENCH_HELPER=1 it blasts or
// counts datagrams instead of benchmarking (see TestMain).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

const helperEnv = "HUDDLE_BENCH_HELPER"

// blastResult is what the blaster prints (one JSON line) when it is done.
type blastResult struct {
	Sent    int64   `json:"sent"`
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
	case "blast": // blast GROUP:PORT IFACE SIZE DURATION BATCH
		if len(args) != 6 {
			return errors.New("usage: blast group:port iface size duration batch")
		}
		size, err1 := strconv.Atoi(args[3])
		d, err2 := time.ParseDuration(args[4])
		batch, err3 := strconv.Atoi(args[5])
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		return blast(args[1], args[2], size, d, batch)
	case "sink": // sink GROUP:PORT IFACE RCVBUF IDLE TOTAL
		if len(args) != 6 {
			return errors.New("usage: sink group:port iface rcvbuf idle total")
		}
		rcvbuf, err1 := strconv.Atoi(args[3])
		idle, err2 := time.ParseDuration(args[4])
		total, err3 := time.ParseDuration(args[5])
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		return sink(args[1], args[2], rcvbuf, idle, total)
	}
	return fmt.Errorf("unknown mode %q", args[0])
}

// blast multicasts size-byte datagrams to group on iface as fast as it can
// for d, batch datagrams per sendmmsg call (x/net/ipv4 WriteBatch), with
// multicast loopback off (nothing listens on this host).
func blast(group, iface string, size int, d time.Duration, batch int) error {
	ga, err := net.ResolveUDPAddr("udp4", group)
	if err != nil {
		return err
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return err
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return err
	}
	defer c.Close()
	pc := ipv4.NewPacketConn(c)
	if err := errors.Join(pc.SetMulticastInterface(ifi), pc.SetMulticastTTL(1), pc.SetMulticastLoopback(false)); err != nil {
		return err
	}
	// The default send buffer, as huddle's socket has.
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, size)}
		msgs[i].Addr = ga
	}
	var res blastResult
	start := time.Now()
	end := start.Add(d)
	for seq := uint64(0); time.Now().Before(end); {
		for i := range msgs {
			seq++
			binary.BigEndian.PutUint64(msgs[i].Buffers[0], seq)
		}
		for ms := msgs; len(ms) > 0; {
			n, err := pc.WriteBatch(ms, 0)
			if err != nil {
				res.Errors++
				if res.Errors > 1000 {
					return fmt.Errorf("send: %w", err)
				}
				break
			}
			res.Sent += int64(n)
			ms = ms[n:]
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.CPU = cpuSeconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}

// sink joins group on iface, prints "ready", counts the datagrams that
// arrive (recvmmsg batches of 64, as huddle reads), and stops after idle
// without a datagram once the first arrived, or after total. It prints a
// sinkResult.
func sink(group, iface string, rcvbuf int, idle, total time.Duration) error {
	ga, err := net.ResolveUDPAddr("udp4", group)
	if err != nil {
		return err
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return err
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		})
		return serr
	}}
	lp, err := lc.ListenPacket(context.Background(), "udp4", ga.String())
	if err != nil {
		return err
	}
	c := lp.(*net.UDPConn)
	defer c.Close()
	pc := ipv4.NewPacketConn(c)
	if err := pc.JoinGroup(ifi, ga); err != nil {
		return err
	}
	if err := c.SetReadBuffer(rcvbuf); err != nil {
		return err
	}
	var res sinkResult
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			res.RcvBuf, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
		})
	}
	msgs := make([]ipv4.Message, 64)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 65536)}
	}
	fmt.Println("ready")
	end := time.Now().Add(total)
	for {
		deadline := end
		if q := time.Now().Add(idle); res.Got > 0 && q.Before(end) {
			deadline = q
		}
		c.SetReadDeadline(deadline)
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			break
		}
		now := time.Now().UnixNano()
		if res.Got == 0 {
			res.FirstNs = now
		}
		res.LastNs = now
		res.Got += int64(n)
	}
	res.Drops = udpDrops(ga.Port)
	res.CPU = cpuSeconds()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		res.CtxSw = ru.Nvcsw + ru.Nivcsw
	}
	return json.NewEncoder(os.Stdout).Encode(res)
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
