package node

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/seal"
	"github.com/huddle-lan/huddle/internal/sim"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// testKey is a fixed test key, drawn from a seed.
func testKey(t testing.TB, seed uint64) seal.Key {
	t.Helper()
	var b [seal.KeySize]byte
	rand.NewChaCha8([32]byte{byte(seed)}).Read(b[:])
	k, err := seal.ParseKey("huddle-key-v1:" + base64(b[:]))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func base64(b []byte) string {
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var out strings.Builder
	for i := 0; i < len(b); i += 3 {
		var v uint32
		n := min(3, len(b)-i)
		for j := range 3 {
			v <<= 8
			if j < n {
				v |= uint32(b[i+j])
			}
		}
		for j := range 4 {
			if j <= n {
				out.WriteByte(abc[(v>>(18-6*j))&63])
			} else {
				out.WriteByte('=')
			}
		}
	}
	return out.String()
}

// addSealed adds nodes that seal with keys (none: in the clear).
func addSealed(w *sim.World, keys []seal.Key, ids ...uint64) { addSealedBulk(w, keys, 0, ids...) }

// addSealedBulk is addSealed with multicast.Options.BulkSize bulk.
func addSealedBulk(w *sim.World, keys []seal.Key, bulk int, ids ...uint64) {
	for _, id := range ids {
		w.Add(id, func(id, inc uint64, seed int64, _ netip.AddrPort) sim.Machine {
			return newSimCore(NewCore(CoreOptions{Group: "huddle", Seed: uint64(seed), Keys: keys, Salt: rand.NewChaCha8([32]byte{byte(seed), byte(id), byte(inc)}), Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: id, Inc: inc, DatagramSize: 1400, BulkSize: bulk, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect, Window: 256}}}, w.Now()))
		})
	}
}

// TestSealedBulk: bulk datagrams, sealed, stay within bulk_datagram_size
// with the seal (none oversized), open at every member, and deliver
// every message of bursts in every order, with virtual synchrony, in a
// group that loses nothing and in one that loses 2 % (where the senders
// fall back to datagram_size and repair).
func TestSealedBulk(t *testing.T) {
	testutil.ForSeeds(t, 4, func(t *testing.T, seed int64) {
		w := sim.New(sim.Options{Seed: seed, Loss: float64(seed%2) * 0.02, Jitter: 50 * time.Microsecond})
		l := newVSLedger()
		w.Check("view synchrony", l.check)
		addSealedBulk(w, []seal.Key{testKey(t, 1)}, 65000, ids(3)...)
		settleViews(t, w, 5*time.Second, ids(3))
		var sent []msgKey
		for burst := range 12 {
			id := uint64(1 + burst%3)
			w.Do(id, func(m sim.Machine) {
				c := coreOf(m)
				for i := range 80 {
					p := binary.BigEndian.AppendUint64(make([]byte, 0, 1000), uint64(burst*100+i))
					if k, err := l.multicast(c, id, c.inc, append(p, make([]byte, 992)...), orders[burst%3]); err == nil {
						sent = append(sent, k)
					}
				}
			})
			if err := w.RunFor(20 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		if u := l.undelivered(w, ids(3), nil, sent); u != "" || len(sent) < 800 {
			t.Fatalf("%d messages sent: %s", len(sent), u)
		}
		var bulk uint64
		for _, id := range ids(3) {
			s := core(w, id).SealStats()
			cs, ms := core(w, id).Stats()
			if s.Failed != 0 || cs.OversizedSent != 0 || cs.Malformed != 0 {
				t.Fatalf("node %d: seal %+v, oversized %d, malformed %d", id, s, cs.OversizedSent, cs.Malformed)
			}
			bulk += ms.BulkDatagrams
		}
		if bulk == 0 {
			t.Fatal("no bulk datagram was sent")
		}
	})
}

// TestSealedGroup: a group whose every datagram is sealed delivers every
// message of every order, with virtual synchrony, at 10 % loss and through
// a crash and a restart; every datagram it sent opened, none failed.
func TestSealedGroup(t *testing.T) {
	testutil.ForSeeds(t, 6, func(t *testing.T, seed int64) {
		k := testKey(t, 1)
		w := sim.New(sim.Options{Seed: seed, Loss: 0.1, Jitter: 100 * time.Microsecond})
		l := newVSLedger()
		w.Check("view synchrony", l.check)
		addSealed(w, []seal.Key{k}, ids(4)...)
		settleViews(t, w, 5*time.Second, ids(4))
		var keys []msgKey
		for step := range 300 {
			id := uint64(1 + step%4)
			w.Do(id, func(m sim.Machine) {
				c := coreOf(m)
				if k, err := l.multicast(c, id, c.inc, binary.BigEndian.AppendUint64(nil, uint64(step)), orders[step%3]); err == nil {
					keys = append(keys, k)
				}
			})
			if step == 150 {
				w.Crash(2)
			}
			if step == 200 {
				w.Restart(2)
			}
			if err := w.RunFor(2 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		settleViews(t, w, 5*time.Second, ids(4))
		for _, id := range ids(4) {
			s := core(w, id).SealStats()
			cs, _ := core(w, id).Stats()
			if s.Opened == 0 || s.Failed != 0 || s.UnknownKey != 0 || s.NotSealed != 0 || cs.SealMismatch != 0 || cs.Malformed != 0 {
				t.Fatalf("node %d: seal %+v, mismatches %d, malformed %d", id, s, cs.SealMismatch, cs.Malformed)
			}
		}
	})
}

// TestKeyMismatchIsRefused: a node with another key, and one without a
// key, cannot join a sealed group: each hears datagrams it cannot open,
// refuses itself once its join timeout passed, naming both fingerprints,
// and stops; the group counts their datagrams and goes on.
func TestKeyMismatchIsRefused(t *testing.T) {
	group, other := testKey(t, 1), testKey(t, 2)
	for _, tc := range []struct {
		name string
		keys []seal.Key
		ours string
	}{{"another key", []seal.Key{other}, other.Fingerprint()}, {"no key", nil, "none"}} {
		t.Run(tc.name, func(t *testing.T) {
			w := sim.New(sim.Options{Seed: 1})
			addSealed(w, []seal.Key{group}, 1, 2)
			settleViews(t, w, 2*time.Second, ids(2))
			addSealed(w, tc.keys, 3)
			if err := w.RunUntil(func() bool { return core(w, 3).Left() }, 2*time.Second); err != nil {
				t.Fatalf("node 3 did not refuse itself: %v", err)
			}
			var refusal *membership.Event
			for _, ev := range core(w, 3).TakeEvents() {
				if ev.Kind == membership.Refused {
					refusal = &ev
				}
			}
			if refusal == nil || refusal.Setting != "key" || refusal.Theirs != group.Fingerprint() || refusal.Ours != tc.ours {
				t.Fatalf("node 3's refusal: %+v; want the group's key %s and its own %s", refusal, group.Fingerprint(), tc.ours)
			}
			if err := agreed(w, ids(2)); err != nil {
				t.Fatal(err)
			}
			s := core(w, 1).SealStats()
			cs, _ := core(w, 1).Stats()
			if tc.keys != nil && s.UnknownKey == 0 || tc.keys == nil && s.NotSealed == 0 || cs.DatagramsIn == 0 {
				t.Fatalf("node 1 did not count node 3's datagrams: %+v", s)
			}
		})
	}
}

// TestKeyRollover rolls a running group over to a new key without a view
// change: every member takes both keys, sealing with the old, then seals
// with the new, then drops the old; messages flow all along.
func TestKeyRollover(t *testing.T) {
	old, next := testKey(t, 1), testKey(t, 2)
	w := sim.New(sim.Options{Seed: 3, Loss: 0.05})
	l := newVSLedger()
	w.Check("view synchrony", l.check)
	addSealed(w, []seal.Key{old}, ids(3)...)
	settleViews(t, w, 2*time.Second, ids(3))
	first := viewOf(w, 1).ID
	var sent []msgKey
	phase := func(keys []seal.Key) {
		for _, id := range ids(3) {
			w.Do(id, func(m sim.Machine) {
				if err := coreOf(m).SetKeys(keys); err != nil {
					t.Fatal(err)
				}
			})
			for i := range 5 {
				w.Do(id, func(m sim.Machine) {
					c := coreOf(m)
					if k, err := l.multicast(c, id, c.inc, []byte{byte(i)}, wire.Total); err == nil {
						sent = append(sent, k)
					}
				})
				if err := w.RunFor(time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.RunFor(200 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	phase([]seal.Key{old, next})
	phase([]seal.Key{next, old})
	phase([]seal.Key{next})
	if v := viewOf(w, 1).ID; v != first {
		t.Fatalf("the rollover changed the view from %v to %v", first, v)
	}
	for _, id := range ids(3) {
		lf := l.life(id, core(w, id).inc)
		for _, k := range sent {
			if !lf.seen[k] {
				t.Fatalf("node %d never delivered %v", id, k)
			}
		}
		if s := core(w, id).SealStats(); s.UnknownKey != 0 || s.Failed != 0 {
			t.Fatalf("node %d: %+v", id, s)
		}
	}
}

// TestReplaysAndForgeriesAreDropped: an outsider without the key replays
// a member's datagrams and sends datagrams of its own; nothing it sends is
// used, and each is counted.
func TestReplaysAndForgeriesAreDropped(t *testing.T) {
	k := testKey(t, 1)
	w := sim.New(sim.Options{Seed: 4})
	addSealed(w, []seal.Key{k}, ids(3)...)
	settleViews(t, w, 2*time.Second, ids(3))
	// Capture what node 1 sends, as a listener on the LAN would.
	var captured [][]byte
	w.Do(1, func(m sim.Machine) {
		coreOf(m).Multicast(nil, []byte("hello"), wire.FIFO, 0)
		for _, d := range m.TakeOutbox() {
			captured = append(captured, append([]byte(nil), d...))
		}
	})
	for _, id := range []uint64{2, 3} { // the network carries them once
		w.Do(id, func(m sim.Machine) {
			for _, d := range captured {
				coreOf(m).Receive(w.Now(), netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, 1}), 7468), d)
			}
		})
	}
	if err := w.RunFor(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	before := core(w, 2).SealStats()
	core(w, 2).TakeDeliveries() // what came before
	attacker := netip.MustParseAddrPort("10.9.9.9:7468")
	forged := NewCore(CoreOptions{Group: "huddle", Keys: []seal.Key{testKey(t, 9)}, Membership: membership.Options{JoinTimeout: testJoin, Engine: multicast.Options{Self: 1, Inc: 1, DatagramSize: 1400, Heartbeat: testHeartbeat, SuspectTimeout: testSuspect}}}, w.Now())
	forged.Multicast(nil, []byte("forged"), wire.FIFO, 0) // no view: the forger just seals junk
	for i := 0; i < 3; i++ {
		w.Do(2, func(m sim.Machine) {
			for _, d := range captured {
				coreOf(m).Receive(w.Now(), attacker, d) // replays
			}
			junk := append([]byte{seal.Marker, seal.Version}, make([]byte, 80)...)
			binary.BigEndian.PutUint32(junk[2:], k.ID()) // the group's key ID, a forged body
			coreOf(m).Receive(w.Now(), attacker, junk)
		})
	}
	after := core(w, 2).SealStats()
	if after.Replays-before.Replays != uint64(3*len(captured)) || after.Failed-before.Failed != 3 {
		t.Fatalf("replays %d, failures %d; want %d and 3", after.Replays-before.Replays, after.Failed-before.Failed, 3*len(captured))
	}
	if n := len(core(w, 2).TakeDeliveries()); n != 0 {
		t.Fatalf("node 2 delivered %d messages from replays and forgeries", n)
	}
	if err := agreed(w, ids(3)); err != nil {
		t.Fatal(err)
	}
}
