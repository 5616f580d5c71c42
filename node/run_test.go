package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/multicast/memnet"
)

func TestMain(m *testing.M) {
	testutil.Exclusive() // not beside the VM's and the LAN's tests: see there
	goleak.VerifyTestMain(m)
}

func testConfig(id uint64) config.Config {
	c := config.Local()
	c.ID, c.Iface = id, "sim0"
	return c
}

func events(t *testing.T, log *bytes.Buffer) []logs.Event {
	t.Helper()
	evs, skipped, err := logs.Read(bytes.NewReader(log.Bytes()))
	if err != nil || skipped != 0 {
		t.Fatalf("log does not parse (%d lines skipped): %v\n%s", skipped, err, log)
	}
	return evs
}

func num(e logs.Event, key string) uint64 { v, _ := e.Uint(key); return v }

func str(e logs.Event, key string) string { v, _ := e.Str(key); return v }

func find(evs []logs.Event, name string) []logs.Event {
	var out []logs.Event
	for _, e := range evs {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// TestNewIncarnation: an incarnation is the start time in microseconds,
// below 2^53 so that JSON readers with float64 numbers (jq) read it
// exactly, and every call of a process returns a larger one, even within
// one microsecond.
func TestNewIncarnation(t *testing.T) {
	before := uint64(time.Now().UnixMicro())
	last := NewIncarnation()
	if last < before || last >= 1<<53 {
		t.Fatalf("NewIncarnation() = %d, want microseconds since the epoch (%d or later) below 2^53", last, before)
	}
	if f := float64(last); uint64(f) != last {
		t.Fatalf("incarnation %d reads back from a float64 as %d", last, uint64(f))
	}
	for range 1000 {
		inc := NewIncarnation()
		if inc <= last {
			t.Fatalf("NewIncarnation() = %d after %d", inc, last)
		}
		last = inc
	}
	if after := uint64(time.Now().UnixMicro()); last > after+1000 {
		t.Fatalf("1001 incarnations reached %d, far beyond the clock's %d", last, after)
	}
}

// TestRunInVirtualTime runs three real node loops, goroutines, timers and
// all, over the simulated network in virtual time: they hear each other,
// and a cancelled context stops them with final stats and the cause.
func TestRunInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(netmodel.Options{Seed: 1, Loss: 0.05})
		ctx, cancel := context.WithCancelCause(context.Background())
		bufs := make([]*bytes.Buffer, 4)
		errs := make(chan error, 3)
		for id := uint64(1); id <= 3; id++ {
			bufs[id] = &bytes.Buffer{}
			o := Options{Config: testConfig(id), Transport: n.Endpoint(netmodel.Addr(id)),
				Log: zerolog.New(bufs[id]).With().Timestamp().Uint64(logs.NodeKey, id).Logger(), Inc: id}
			go func() { errs <- Run(ctx, o) }()
		}
		time.Sleep(time.Second)
		cancel(errors.New("test over"))
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatalf("Run: %v", err)
			}
		}
		for id := uint64(1); id <= 3; id++ {
			evs := events(t, bufs[id])
			if evs[0].Name != logs.NodeStarted || evs[0].Node != id {
				t.Fatalf("node %d: first event %q, want node.started", id, evs[0].Name)
			}
			seen := map[uint64]bool{}
			for _, e := range find(evs, logs.PeerSeen) {
				seen[num(e, logs.PeerKey)] = true
			}
			if len(seen) != 2 || seen[id] {
				t.Fatalf("node %d saw peers %v, want the other two", id, seen)
			}
			if lost := find(evs, logs.PeerLost); len(lost) != 0 {
				t.Fatalf("node %d lost peers at 5%% loss: %v", id, lost)
			}
			last, stats := evs[len(evs)-1], evs[len(evs)-2]
			if last.Name != logs.NodeStopped || str(last, logs.ReasonKey) != "test over" {
				t.Fatalf("node %d: last event %q reason %q, want node.stopped with the cause", id, last.Name, str(last, logs.ReasonKey))
			}
			if stats.Name != logs.NodeStats || str(stats, logs.WhyKey) != "exit" || num(stats, "sessions_recv") == 0 {
				t.Fatalf("node %d: final stats %+v", id, stats)
			}
		}
	})
}

// fakeTransport hands out scripted datagrams, then blocks until closed.
type fakeTransport struct {
	in      chan []byte
	closed  chan struct{}
	readErr error
}

func newFake() *fakeTransport {
	return &fakeTransport{in: make(chan []byte, 16), closed: make(chan struct{})}
}

func (f *fakeTransport) ReadBatch(pkts []multicast.Packet) (int, error) {
	if f.readErr != nil {
		return 0, f.readErr
	}
	select {
	case d := <-f.in:
		pkts[0].N = copy(pkts[0].Buf, d)
		if len(d) > len(pkts[0].Buf) {
			pkts[0].N = len(pkts[0].Buf) + 1
		}
		pkts[0].Src = netip.MustParseAddrPort("10.0.0.9:7468")
		return 1, nil
	case <-f.closed:
		return 0, net.ErrClosed
	}
}

func (f *fakeTransport) WriteBatch([][]byte) error    { return nil }
func (f *fakeTransport) LocalAddr() netip.AddrPort    { return netip.MustParseAddrPort("10.0.0.1:7468") }
func (f *fakeTransport) Close() error                 { close(f.closed); return nil }
func (f *fakeTransport) send(d []byte) *fakeTransport { f.in <- d; return f }

func TestRunDropsOversizedDatagrams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The group's socket reads datagrams of up to 65000 bytes (bulk
		// datagrams, whatever this node's own settings): 5000 bytes is
		// junk of a length it reads, 70000 bytes one it does not.
		f := newFake().send(make([]byte, 70000)).send(make([]byte, 5000))
		var log bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- Run(ctx, Options{Config: testConfig(1), Transport: f, Log: zerolog.New(&log), Inc: 1}) }()
		time.Sleep(100 * time.Millisecond)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		evs := events(t, &log)
		stats := find(evs, logs.NodeStats)
		last := stats[len(stats)-1]
		if num(last, "truncated") != 1 || num(last, "malformed") != 1 {
			t.Fatalf("final stats %v, want 1 truncated and 1 malformed datagram", last)
		}
		if w := find(evs, logs.NodeWarning); len(w) != 1 || !strings.Contains(str(w[0], logs.MessageKey), "datagram_size") {
			t.Fatalf("want one warning naming datagram_size, got %v", w)
		}
	})
}

func TestRunReturnsTransportFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.readErr = errors.New("interface vanished")
		var log bytes.Buffer
		err := Run(context.Background(), Options{Config: testConfig(1), Transport: f, Log: zerolog.New(&log), Inc: 1})
		if err == nil || !strings.Contains(err.Error(), "interface vanished") {
			t.Fatalf("Run = %v, want the transport's error", err)
		}
		evs := events(t, &log)
		if last := evs[len(evs)-1]; last.Name != logs.NodeStopped || str(last, logs.ReasonKey) != "transport failed" {
			t.Fatalf("last event %+v", last)
		}
	})
}

// TestRunWorkload runs traffic through the real loop in virtual time: a
// client of node 1 waits for a view of all three, then multicasts 300
// messages at 1000/s over a lossy network,
// and the others log every one of them as delivered, in order, with the
// CRC the sender logged; the node stops by itself after --duration. It
// runs with the repair traffic on the data transport and on its own.
func TestRunWorkload(t *testing.T) {
	t.Run("one socket", func(t *testing.T) { runWorkload(t, false) })
	t.Run("repair socket", func(t *testing.T) { runWorkload(t, true) })
}

func runWorkload(t *testing.T, repairSocket bool) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(netmodel.Options{Seed: 2, Loss: 0.1})
		ctl := memnet.New(netmodel.Options{Seed: 3, Loss: 0.1})
		bufs := make([]*bytes.Buffer, 4)
		errs := make(chan error, 3)
		for id := uint64(1); id <= 3; id++ {
			c := testConfig(id)
			c.TraceDeliveries, c.Duration = true, config.Duration(2*time.Second)
			bufs[id] = &bytes.Buffer{}
			o := Options{Config: c, Transport: n.Endpoint(netmodel.Addr(id)),
				Log: zerolog.New(bufs[id]).With().Uint64(logs.NodeKey, id).Logger(), Inc: id}
			if repairSocket {
				o.Control = ctl.Endpoint(netmodel.Addr(id))
			}
			nd := New(o)
			go func() { errs <- nd.Run(context.Background()) }()
			if id == 1 {
				go func() {
					// The others join first: a message sent in a view
					// without them is not theirs to deliver.
					for {
						if st, err := nd.Status(context.Background()); err != nil {
							return
						} else if len(st.Members) == 3 {
							break
						}
						time.Sleep(time.Millisecond)
					}
					for i := range 300 {
						p := binary.BigEndian.AppendUint64(make([]byte, 0, 100), uint64(i+1))
						if _, err := nd.Multicast(context.Background(), nil, p[:100], wire.FIFO); err != nil {
							return
						}
						time.Sleep(time.Millisecond)
					}
				}()
			}
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		sent := map[uint64]uint64{}
		for _, e := range find(events(t, bufs[1]), logs.Send) {
			sent[num(e, logs.SeqKey)] = num(e, logs.CRCKey)
		}
		if len(sent) != 300 {
			t.Fatalf("node 1 logged %d sends, want 300", len(sent))
		}
		for id := uint64(2); id <= 3; id++ {
			evs := events(t, bufs[id])
			var last uint64
			got := 0
			for _, e := range find(evs, logs.Deliver) {
				seq := num(e, logs.SeqKey)
				if num(e, logs.FromKey) != 1 || num(e, logs.FromIncarnationKey) != 1 || seq <= last || sent[seq] != num(e, logs.CRCKey) {
					t.Fatalf("node %d: delivery %v out of order, foreign or corrupt", id, e)
				}
				last = seq
				got++
			}
			if got != 300 {
				t.Fatalf("node %d delivered %d of 300", id, got)
			}
			// Each node's incarnation is its ID here.
			for _, v := range find(evs, logs.ViewInstalled) {
				view := str(v, logs.ViewKey)
				if coord := view[strings.IndexByte(view, '.')+1:]; fmt.Sprint(num(v, logs.CoordinatorIncarnationKey)) != coord {
					t.Fatalf("node %d: view.installed %v: coordinator_incarnation is not the coordinator's", id, v)
				}
			}
			if stop := evs[len(evs)-1]; str(stop, logs.ReasonKey) != "duration elapsed" {
				t.Fatalf("node %d stopped with %q, want the duration", id, str(stop, logs.ReasonKey))
			}
			if stats := evs[len(evs)-2]; num(stats, "repairs_recv") == 0 {
				t.Fatalf("node %d received no repairs at 10%% loss", id)
			}
		}
	})
}

// TestMulticastBlocksOnAFullWindow: once the two nodes are in a view,
// node 2 stops hearing node 1, so it never reports node 1's messages and
// none of them becomes stable. Node 1's Multicast takes a window's worth,
// then blocks until its context ends, without sending; once node 2 hears
// again (before it suspects node 1), the window drains and sending resumes.
func TestMulticastBlocksOnAFullWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(netmodel.Options{Seed: 3})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		nodes := make([]*Node, 3)
		done := make(chan error, 2)
		for id := uint64(1); id <= 2; id++ {
			c := testConfig(id)
			c.SendWindow = 16
			nodes[id] = New(Options{Config: c, Transport: n.Endpoint(netmodel.Addr(id)), Log: zerolog.Nop(), Inc: id})
			go func() { done <- nodes[id].Run(ctx) }()
		}
		time.Sleep(time.Second) // the two form a view
		synctest.Wait()
		if v := nodes[1].core.View(); len(v.Members) != 2 {
			t.Fatalf("node 1 is in %v, want a view of both", v)
		}
		n.SetLinkLoss(netmodel.Addr(1), netmodel.Addr(2), 1)
		const window = 16 - 16/8 // an eighth is kept for order records
		var last uint64          // the election's messages took seqs too
		for i := range window {
			seq, err := nodes[1].Multicast(ctx, nil, []byte{byte(i)}, wire.FIFO)
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			last = seq
		}
		short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
		defer stop()
		if _, err := nodes[1].Multicast(short, nil, []byte("15"), wire.FIFO); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("message %d on a full window: %v, want the context's deadline", window+1, err)
		}
		synctest.Wait() // every node loop idle: its core may be read
		if _, ms := nodes[1].core.Stats(); ms.Unstable != window {
			t.Fatalf("%d unstable messages, want the window's %d: the withdrawn one must not be sent", ms.Unstable, window)
		}
		n.Heal()
		seq, err := nodes[1].Multicast(ctx, nil, []byte("15 again"), wire.FIFO)
		if err != nil || seq != last+1 {
			t.Fatalf("after healing: seq %d, %v; want %d", seq, err, last+1)
		}
		synctest.Wait()
		if v := nodes[1].core.View(); len(v.Members) != 2 {
			t.Fatalf("node 1 is in %v, want the view of both still", v)
		}
		cancel()
		for range 2 {
			<-done
		}
		if _, err := nodes[1].Multicast(context.Background(), nil, []byte("late"), wire.FIFO); !errors.Is(err, ErrStopped) {
			t.Fatalf("Multicast after stop: %v, want ErrStopped", err)
		}
	})
}

// runNodes runs nodes 1..n over one simulated network (in the caller's
// synctest bubble), node id with the options opts gives (nil: testConfig
// and no log); the transport and the incarnation (the ID) are set here.
// stop cancels ctx and waits for every node to return.
func runNodes(n int, opts func(id uint64) Options) (nodes []*Node, ctx context.Context, stop func()) {
	net := memnet.New(netmodel.Options{Seed: 1})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, n)
	for id := uint64(1); id <= uint64(n); id++ {
		o := Options{Config: testConfig(id), Log: zerolog.Nop()}
		if opts != nil {
			o = opts(id)
		}
		o.Transport, o.Inc = net.Endpoint(netmodel.Addr(id)), id
		node := New(o)
		nodes = append(nodes, node)
		go func() { errs <- node.Run(ctx) }()
	}
	return nodes, ctx, func() {
		cancel()
		for range n {
			<-errs
		}
	}
}

// TestHistograms: two nodes on the simulated network; the one that is not
// the sequencer multicasts total-order messages and takes the lock, and
// its status then counts each in its histograms (delivery, lock wait, the
// view change that admitted the other), which the metrics endpoint serves.
func TestHistograms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, ctx, stop := runNodes(2, nil)
		time.Sleep(time.Second) // one view of both
		n := nodes[0]           // the younger ID: not the coordinator, not the sequencer
		if st, err := n.Status(ctx); err != nil || len(st.Members) != 2 || st.Coordinator == 1 {
			t.Fatalf("status %+v, %v: want a view of 2 coordinated by node 2", st, err)
		}
		const sent = 5
		for i := range sent {
			if _, err := n.Multicast(ctx, nil, []byte{byte(i)}, wire.Total); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := n.Multicast(ctx, nil, []byte("fifo"), wire.FIFO); err != nil {
			t.Fatal(err)
		}
		if err := n.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		st, err := n.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h := st.Histograms
		if got := h.Delivery.Count(); got != sent || h.Delivery.Max() <= 0 {
			t.Errorf("delivery histogram: %d messages, max %v; want the %d total-order ones (FIFO is delivered at once), each taking time", got, h.Delivery.Max(), sent)
		}
		if got := h.LockWait.Count(); got != 1 {
			t.Errorf("lock wait histogram: %d, want 1", got)
		}
		if got := h.Flush.Count(); got == 0 {
			t.Errorf("flush histogram: empty, want the view change that formed the group")
		}
		stop()
	})
}

// nextVersion returns a session datagram of group from node id in the next
// wire version: the current encoding with the version byte raised.
func nextVersion(t *testing.T, group string, id uint64) []byte {
	t.Helper()
	env := &wire.Envelope{Header: wire.Header{Group: wire.GroupHash(group), From: id, Inc: 5, Kind: wire.KindSession}}
	b, err := wire.NewEncoder().Append(nil, env)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte{0xcd, wire.MagicVersion >> 8, wire.Version})
	if i < 0 {
		t.Fatalf("no MagicVersion in %x", b)
	}
	b[i+2] = wire.Version + 1
	return b
}

// TestOtherWireVersion: a node that hears its group only in another wire
// version refuses itself after the join timeout, naming both versions
// (exit 3 in huddle run); a member of a view of its own version reports
// the other node once and goes on.
func TestOtherWireVersion(t *testing.T) {
	ours, theirs := strconv.Itoa(wire.Version), strconv.Itoa(wire.Version+1)
	t.Run("alone", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cfg := testConfig(1)
			f := newFake()
			for range 5 {
				f.send(nextVersion(t, cfg.Group, 2))
			}
			var log bytes.Buffer
			err := Run(context.Background(), Options{Config: cfg, Transport: f, Log: zerolog.New(&log), Inc: 1})
			want := "speaks wire version " + theirs + ", this node wire version " + ours
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Run = %v, want ErrRefused naming both versions (%q)", err, want)
			}
			evs := events(t, &log)
			r := find(evs, logs.MemberRefused)
			if len(r) != 1 || str(r[0], logs.SettingKey) != "wire_version" || str(r[0], logs.OursKey) != ours || str(r[0], logs.TheirsKey) != theirs {
				t.Fatalf("member.refused events %v, want one for wire_version %s/%s", r, ours, theirs)
			}
			stats := find(evs, logs.NodeStats)
			if last := stats[len(stats)-1]; num(last, "other_version") != 5 || num(last, "not_huddle") != 5 {
				t.Fatalf("final stats %v, want 5 other_version (and not_huddle)", last)
			}
		})
	})
	t.Run("member", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			net := memnet.New(netmodel.Options{Seed: 1})
			ctx, cancel := context.WithCancel(context.Background())
			logBufs := []*bytes.Buffer{{}, {}}
			errs := make(chan error, 2)
			for i, id := range []uint64{1, 2} {
				o := Options{Config: testConfig(id), Transport: net.Endpoint(netmodel.Addr(id)), Log: zerolog.New(logBufs[i]), Inc: id}
				go func() { errs <- Run(ctx, o) }()
			}
			time.Sleep(time.Second) // one view of both
			stranger := net.Endpoint(netmodel.Addr(3))
			for range 5 {
				if err := stranger.WriteBatch([][]byte{nextVersion(t, testConfig(3).Group, 3)}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second)
			cancel()
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatalf("a member stopped: %v", err)
				}
			}
			evs := events(t, logBufs[0])
			pv := find(evs, logs.PeerVersion)
			if len(pv) != 1 || num(pv[0], logs.PeerKey) != 3 || num(pv[0], logs.VersionKey) != uint64(wire.Version+1) {
				t.Fatalf("peer.version events %v, want one for node 3 in version %d", pv, wire.Version+1)
			}
			if r := find(evs, logs.MemberRefused); len(r) != 0 {
				t.Fatalf("a member refused itself: %v", r)
			}
		})
	})
}

// TestDeliveryLinesFollowTheDatagram: with trace_deliveries, a sender's
// "send" line is written before its datagram leaves (a receiver's log
// never holds a message its sender's log lacks), and the deliveries that
// end a turn are logged after its datagrams: the FIFO sender's own copy
// does not hold its datagram back by a log write.
func TestDeliveryLinesFollowTheDatagram(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
		f := &recordingTransport{fakeTransport: newFake(), wrote: func() { note("datagram") }}
		log := writerFunc(func(p []byte) {
			for _, name := range []string{logs.Send, logs.Deliver} {
				if bytes.Contains(p, []byte(fmt.Sprintf("%q:%q", logs.EventKey, name))) {
					note(name)
				}
			}
		})
		c := testConfig(1)
		c.TraceDeliveries = true
		n := New(Options{Config: c, Transport: f, Log: zerolog.New(log), Inc: 1})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- n.Run(ctx) }()
		time.Sleep(time.Second) // alone in a view of its own
		note("now")
		if _, err := n.Multicast(ctx, nil, []byte("one"), wire.FIFO); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		i := slices.Index(seen, "now")
		if got, want := seen[i+1:min(len(seen), i+4)], []string{logs.Send, "datagram", logs.Deliver}; !slices.Equal(got, want) {
			t.Fatalf("after the Multicast: %v, want %v", got, want)
		}
	})
}

// recordingTransport is a fakeTransport that tells of every write.
type recordingTransport struct {
	*fakeTransport
	wrote func()
}

func (r *recordingTransport) WriteBatch([][]byte) error { r.wrote(); return nil }

// writerFunc is an io.Writer that hands each write to a function.
type writerFunc func(p []byte)

func (w writerFunc) Write(p []byte) (int, error) { w(p); return len(p), nil }
