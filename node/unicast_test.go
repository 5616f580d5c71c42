package node

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/config"
)

// TestUnicastPeersOnlyAndProbes: with peers_only, a datagram from an
// address neither listed nor heard as a member is dropped and counted;
// the listed ones pass. A probe round sends the latest beacon to every
// listed node outside the destinations (the node's own address skipped),
// once per beacon: a second round with the same beacon sends nothing.
func TestUnicastPeersOnlyAndProbes(t *testing.T) {
	cfg := config.Local()
	cfg.Transport, cfg.PeersOnly = "unicast", true
	cfg.Peers = config.AddrList{"10.0.0.1:7468", "10.0.0.2:7468", "10.0.0.3"}
	self := netip.MustParseAddrPort("10.0.0.1:7468")
	fp := &fakePath{local: self, sent: map[netip.AddrPort]int{}, next: map[netip.AddrPort]int{}}
	u := newUnicast(fp, self, cfg)
	want := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.2:7468"), netip.MustParseAddrPort("10.0.0.3:7468")}
	if !slices.Equal(u.listed, want) {
		t.Fatalf("listed %v, want %v (own address skipped, addr's port for a bare host)", u.listed, want)
	}
	stranger := netip.MustParseAddrPort("10.0.0.9:7468")
	if !u.accept(want[0]) || u.accept(stranger) || u.unlisted != 1 {
		t.Fatalf("accept: listed %v, stranger %v, unlisted %d", u.accept(want[0]), u.accept(stranger), u.unlisted)
	}

	now := time.Now()
	u.beacon, u.fresh = []byte("beacon"), true
	u.probe(now)
	for _, a := range want {
		if fp.sent[a] != 1 {
			t.Errorf("probe round: %d datagrams to %v, want 1", fp.sent[a], a)
		}
	}
	if fp.sent[self] != 0 || u.probes != 2 {
		t.Errorf("probe round: %d to itself, %d probes counted", fp.sent[self], u.probes)
	}
	u.probe(now.Add(u.every))
	if u.probes != 2 {
		t.Errorf("the same beacon was probed with again: %d probes", u.probes)
	}
}
