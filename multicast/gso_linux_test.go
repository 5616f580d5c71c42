package multicast

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/internal/systool"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// TestRunsArriveAsTheirDatagrams: datagrams sent in runs (UDP_SEGMENT)
// arrive one by one, each as it was sent, in order: runs of one length,
// lengths that end or break a run, lone ones. On a path whose MTU is
// below a run's datagrams, the kernel refuses the run; those datagrams
// go anyway (as IP fragments, as without runs), and runs go on for the
// shorter datagrams the path takes.
func TestRunsArriveAsTheirDatagrams(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	o := SocketOptions{Group: netip.MustParseAddrPort("239.192.72.68:7468"), Iface: "lo", TTL: 1, Loopback: true, RecvBuffer: 4 << 20}
	a, err := Open(o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	next := 0
	batch := func(lengths ...int) [][]byte {
		var ds [][]byte
		for _, l := range lengths {
			d := make([]byte, l)
			for i := range d {
				d[i] = byte(next + i)
			}
			binary.BigEndian.PutUint32(d, uint32(next))
			ds = append(ds, d)
			next++
		}
		return ds
	}
	sendAndCheck := func(what string, ds [][]byte) {
		t.Helper()
		if err := a.WriteBatch(ds); err != nil {
			t.Fatalf("%s: WriteBatch: %v", what, err)
		}
		pkts := make([]Packet, 64)
		for i := range pkts {
			pkts[i].Buf = make([]byte, 65536)
		}
		for got := 0; got < len(ds); {
			n, err := b.ReadBatch(pkts)
			if err != nil {
				t.Fatalf("%s: %d of %d read: %v", what, got, len(ds), err)
			}
			for _, p := range pkts[:n] {
				if got == len(ds) || !bytes.Equal(p.Buf[:p.N], ds[got]) {
					t.Fatalf("%s: datagram %d arrived as %d bytes %x…, sent as %d bytes %x…", what, got, p.N, p.Buf[:min(p.N, 8)], len(ds[min(got, len(ds)-1)]), ds[min(got, len(ds)-1)][:8])
				}
				got++
			}
		}
	}
	same := make([]int, 150)
	for i := range same {
		same[i] = 1000
	}
	sendAndCheck("runs of 1000 bytes", batch(same...))
	sendAndCheck("mixed lengths", batch(1000, 999, 1000, 1000, 80, 80, 80, 1300, 8, 1300, 1300, 64000, 1300))
	if a.batch.gso.runs == 0 {
		t.Fatal("no run was sent")
	}
	if out, err := systool.Command("ip", "link", "set", "lo", "mtu", "1500").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo mtu 1500: %v: %s", err, out)
	}
	sendAndCheck("2000 bytes on a path of MTU 1500", batch(2000, 2000, 2000, 2000))
	if got := a.batch.gso.maxSeg; got != 1999 {
		t.Fatalf("after a refused run of 2000-byte datagrams, runs are for datagrams up to %d bytes, want 1999", got)
	}
	runs := a.batch.gso.runs
	sendAndCheck("1000 bytes on that path", batch(same...))
	if a.batch.gso.runs == runs {
		t.Fatal("no run of 1000-byte datagrams on a path of MTU 1500")
	}
}
