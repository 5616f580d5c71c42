package multicast

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// openLoopbackUnicast opens a unicast transport on a free pair of ports
// of 127.0.0.1.
func openLoopbackUnicast(t *testing.T) *Unicast {
	t.Helper()
	for range 20 {
		l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Skipf("no loopback UDP here: %v", err)
		}
		port := l.LocalAddr().(*net.UDPAddr).Port
		l.Close()
		if port >= 65534 {
			continue
		}
		u, err := OpenUnicast(UnicastOptions{Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), RecvBuffer: 1 << 20}, zerolog.Nop())
		if err == nil {
			t.Cleanup(func() { u.Repair().Close(); u.Close() })
			return u
		}
	}
	t.Fatal("no free pair of loopback ports in 20 tries")
	return nil
}

// TestWriteToKeepsEachDestinationsOrder: WriteTo hands every datagram to
// every destination, in order for each, however the sendmmsg headers are
// shared out among the destinations; WriteToNext goes to the port after
// theirs, the repair socket.
func TestWriteToKeepsEachDestinationsOrder(t *testing.T) {
	from := openLoopbackUnicast(t)
	to := []*Unicast{openLoopbackUnicast(t), openLoopbackUnicast(t), openLoopbackUnicast(t)}
	var dests []netip.AddrPort
	for _, u := range to {
		dests = append(dests, u.LocalAddr())
	}
	const n = 150 // more than one sendmmsg's headers, not a multiple of the runs
	var dgs [][]byte
	for i := range n {
		dgs = append(dgs, binary.BigEndian.AppendUint32(make([]byte, 0, 100), uint32(i)))
	}
	// read reads from u (whose socket is c) until want datagrams came,
	// or for 5 s.
	read := func(u Transport, c *net.UDPConn, want int) []uint32 {
		t.Helper()
		var got []uint32
		pkts := make([]Packet, 64)
		for i := range pkts {
			pkts[i].Buf = make([]byte, 200)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for len(got) < want {
			k, err := u.ReadBatch(pkts)
			if err != nil {
				break
			}
			for _, p := range pkts[:k] {
				got = append(got, binary.BigEndian.Uint32(p.Buf[:p.N]))
			}
		}
		return got
	}
	check := func(what string, got []uint32) {
		t.Helper()
		if len(got) != n {
			t.Fatalf("%s: got %d datagrams, want %d", what, len(got), n)
		}
		for i, v := range got {
			if v != uint32(i) {
				t.Fatalf("%s: datagram %d is %d: out of order", what, i, v)
			}
		}
	}
	if err := from.WriteTo(dgs, dests); err != nil {
		t.Fatal(err)
	}
	for i, u := range to {
		check("WriteTo, destination "+dests[i].String(), read(u, u.data, n))
	}
	if err := from.WriteToNext(dgs, dests[:2]); err != nil {
		t.Fatal(err)
	}
	for i, u := range to[:2] {
		check("WriteToNext, destination "+dests[i].String()+"'s repair socket", read(u.Repair(), u.repair, n))
	}
}
