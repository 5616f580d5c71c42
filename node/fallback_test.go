package node

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/multicast"
)

// fakePath is a transport that records what the fallback sends.
type fakePath struct {
	local netip.AddrPort
	sent  map[netip.AddrPort]int // datagrams, by destination
	next  map[netip.AddrPort]int // path datagrams (WriteToNext), by destination
}

func (f *fakePath) ReadBatch([]multicast.Packet) (int, error) { select {} }
func (f *fakePath) WriteBatch([][]byte) error                 { return nil }
func (f *fakePath) LocalAddr() netip.AddrPort                 { return f.local }
func (f *fakePath) Close() error                              { return nil }
func (f *fakePath) SetDestinations([]netip.AddrPort)          {}
func (f *fakePath) WriteTo(ds [][]byte, to []netip.AddrPort) error {
	for _, a := range to {
		f.sent[a] += len(ds)
	}
	return nil
}
func (f *fakePath) WriteToNext(ds [][]byte, to []netip.AddrPort) error {
	for _, a := range to {
		f.next[a] += len(ds)
	}
	return nil
}

// plainTransport is a multicast transport that sends nothing anywhere.
type plainTransport struct{ local netip.AddrPort }

func (p plainTransport) ReadBatch([]multicast.Packet) (int, error) { select {} }
func (p plainTransport) WriteBatch([][]byte) error                 { return nil }
func (p plainTransport) LocalAddr() netip.AddrPort                 { return p.local }
func (p plainTransport) Close() error                              { return nil }

// TestFallbackTakesOnlyHeardPeersAtTheirWord: a path note from an address
// the Core does not hear changes nothing (a forged note cannot send this
// node's traffic anywhere); one from a node it hears, at the address it
// hears it from, makes the node send it every datagram by unicast too,
// until the requests stop for the hold time; each change is a peer.path
// event.
func TestFallbackTakesOnlyHeardPeersAtTheirWord(t *testing.T) {
	cfg := config.Local()
	cfg.ID = 1
	var logBuf bytes.Buffer
	self := netip.MustParseAddrPort("10.0.0.1:7468")
	fp := &fakePath{local: self, sent: map[netip.AddrPort]int{}, next: map[netip.AddrPort]int{}}
	n := New(Options{Config: cfg, Transport: plainTransport{self}, Path: fp, PathNotes: fp, Log: zerolog.New(&logBuf), Inc: 1})
	if n.fb == nil {
		t.Fatal("no fallback with a path transport")
	}
	now := time.Now()

	// Node 2 speaks: the Core hears it at b.
	b := netip.MustParseAddrPort("10.0.0.2:7468")
	other := NewCore(CoreOptionsFrom(func() config.Config { c := config.Local(); c.ID = 2; return c }(), 2, 2), now)
	other.Tick(now.Add(time.Second))
	rd := other.Ready()
	if len(rd.Data) == 0 {
		t.Fatal("node 2 sent nothing")
	}
	for _, d := range rd.Data {
		n.core.Receive(now, b, d)
	}
	n.afterTurn()
	if _, ok := n.fb.known[b]; !ok {
		t.Fatalf("the fallback does not know %v: %v", b, n.fb.addrs)
	}

	forged := netip.MustParseAddrPort("10.0.0.66:7468")
	n.fb.note(n, PathNote{From: 2, Inc: 2, Addr: forged, Unicast: true}, now)
	if len(n.fb.out) != 0 {
		t.Fatalf("a note from %v, not heard, made the node send to %v", forged, n.fb.out)
	}

	n.fb.note(n, PathNote{From: 2, Inc: 2, Addr: b, Unicast: true}, now)
	if len(n.fb.out) != 1 || n.fb.out[0] != b {
		t.Fatalf("after node 2 asked, unicast to %v, want [%v]", n.fb.out, b)
	}
	n.fb.write(n, [][]byte{[]byte("x"), []byte("y")})
	if fp.sent[b] != 2 || fp.sent[forged] != 0 {
		t.Fatalf("sent %v, want the turn's two datagrams to %v", fp.sent, b)
	}

	// No request for the hold time: back to multicast alone.
	n.fb.probe(n, now.Add(n.fb.hold+time.Millisecond))
	if len(n.fb.out) != 0 {
		t.Fatalf("unicast to %v after the requests stopped", n.fb.out)
	}
	log := logBuf.String()
	if !strings.Contains(log, `"dir":"out","path":"unicast","peer":2`) || !strings.Contains(log, `"dir":"out","path":"multicast","peer":2`) {
		t.Errorf("peer.path events missing from the log:\n%s", log)
	}
}
