package ping

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/multicast"
)

// Options configure Run.
type Options struct {
	Group    netip.AddrPort // multicast group and port
	Iface    string         // interface to join and send on
	TTL      int            // of the multicast probes
	ID       string         // this pinger's name; empty: its address
	Interval time.Duration  // between probes
	Count    int            // stop after this many probes; 0 no limit
	Duration time.Duration  // stop after probing this long; 0 no limit
	Peers    []netip.AddrPort
	// OnEvent, if set, gets every event as it happens, from Run's goroutine.
	OnEvent func(Event)
}

// lingerFor is how long a pinger that sent its last probe goes on
// answering peers that still probe: until all are done, at most this long.
func lingerFor(interval time.Duration) time.Duration {
	return max(3*interval, 2*time.Second)
}

type packet struct {
	data      []byte
	src       netip.AddrPort
	multicast bool
	at        time.Duration
}

// Run pings until the count or the duration is reached, or ctx is done,
// then returns the report. The sockets: the group's, opened as the node
// opens its own (multicast.Open: joined on the interface, TTL set,
// multicast loopback off), receives the probes to the group and sends
// this pinger's; a unicast socket bound to the interface's address and
// the same port (multicast.ListenUnicast) sends and receives the rest, so
// that a pinger's datagrams all come from one address and port. Two
// pingers on one host and port would share the unicast: run one per host. An error is returned only when the
// sockets cannot be opened.
func Run(ctx context.Context, o Options) (Report, error) {
	mc, err := multicast.Open(multicast.SocketOptions{Group: o.Group, Iface: o.Iface, TTL: o.TTL, MaxBatch: 16}, zerolog.Nop())
	if err != nil {
		return Report{}, err
	}
	defer mc.Close()
	local := mc.LocalAddr()
	uc, err := multicast.ListenUnicast(local)
	if err != nil {
		return Report{}, err
	}
	defer uc.Close()
	if o.ID == "" {
		o.ID = local.Addr().String()
	}
	p, err := New(Config{ID: o.ID, Local: local, Group: o.Group, Iface: o.Iface, Subnets: subnets(o.Iface),
		TTL: o.TTL, Interval: o.Interval, Seeds: o.Peers})
	if err != nil {
		return Report{}, err
	}

	start := time.Now()
	now := func() time.Duration { return time.Since(start) }
	pkts, quit := make(chan packet, 256), make(chan struct{})
	defer close(quit) // before the sockets close: the readers stop
	go readGroup(mc, pkts, quit, start)
	go readUnicast(uc, pkts, quit, start)
	send := func(ds []Datagram) {
		for _, d := range ds {
			if d.Multicast {
				mc.WriteBatch([][]byte{d.Data}) // a failure shows as no answers
			} else if _, err := uc.WriteToUDPAddrPort(d.Data, d.To); err != nil {
				p.SendFailed(d.To, err)
			}
		}
		for _, e := range p.Events() {
			if o.OnEvent != nil {
				o.OnEvent(e)
			}
		}
	}

	ticker := time.NewTicker(o.Interval)
	defer ticker.Stop()
	var stopProbing, stopAnswering <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		stopProbing = t.C
	}
	probing := true
	finish := func(linger time.Duration) {
		probing = false
		send(p.Finish())
		stopAnswering = time.After(linger)
	}
	tick := func() {
		send(p.Tick(now()))
		if probing && o.Count > 0 && p.Sent() >= o.Count {
			finish(lingerFor(o.Interval))
		}
	}
	tick()
	for {
		select {
		case pk := <-pkts:
			send(p.Receive(pk.data, pk.src, pk.multicast, pk.at))
		case <-ticker.C:
			if !probing && p.PeersDone(now()) {
				return p.Report(now()), nil
			}
			tick()
		case <-stopProbing:
			if probing {
				finish(lingerFor(o.Interval))
			}
		case <-ctx.Done():
			if !probing {
				return p.Report(now()), nil
			}
			// Stopped by hand: wait only for the answers in flight.
			finish(min(o.Interval, 300*time.Millisecond))
			ctx = context.Background()
		case <-stopAnswering:
			return p.Report(now()), nil
		}
	}
}

// maxRead is a receive buffer: longer than any valid datagram, so that a
// longer one is read whole enough to be seen as malformed.
const maxRead = 512

func readGroup(c *multicast.Conn, out chan<- packet, quit <-chan struct{}, start time.Time) {
	pkts := make([]multicast.Packet, 16)
	for i := range pkts {
		pkts[i].Buf = make([]byte, maxRead)
	}
	for {
		n, err := c.ReadBatch(pkts)
		if err != nil {
			return // closed
		}
		at := time.Since(start)
		for _, pk := range pkts[:n] {
			// A truncated datagram (N is len(Buf)+1) is passed whole
			// as read: its length is not one Decode accepts.
			data := append([]byte(nil), pk.Buf[:min(pk.N, len(pk.Buf))]...)
			select {
			case out <- packet{data: data, src: pk.Src, multicast: true, at: at}:
			case <-quit:
				return
			}
		}
	}
}

func readUnicast(c *net.UDPConn, out chan<- packet, quit <-chan struct{}, start time.Time) {
	buf := make([]byte, maxRead)
	for {
		n, src, err := c.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // ICMP errors surface here on some systems; the counts tell
		}
		src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
		select {
		case out <- packet{data: append([]byte(nil), buf[:n]...), src: src, at: time.Since(start)}:
		case <-quit:
			return
		}
	}
}

// subnets returns the IPv4 prefixes of the interface, nil if it cannot.
func subnets(iface string) []netip.Prefix {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			out = append(out, p)
		}
	}
	return out
}
