package multicast

import (
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// FuzzEngine feeds arbitrary datagrams, as the decoder accepts them, to an
// engine that already has peers, streams and messages of its own, then lets
// time run. Whatever the datagrams claim, the engine must not panic, loop,
// or keep more state than its bounds allow. `go test` runs the seeds; run
// `go test -run '^$' -fuzz FuzzEngine ./multicast` to search further.
func FuzzEngine(f *testing.F) {
	enc := wire.NewEncoder()
	add := func(e *wire.Envelope) {
		b, err := enc.Append(nil, e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, b)
	}
	add(data(2, 5, 7))
	add(session(2, 5, t0, wire.PeerState{ID: 1, Inc: 100, Seq: 3}, wire.PeerState{ID: 3, Inc: 1, Seq: 1 << 40}))
	nack := &wire.Envelope{Header: wire.Header{Group: 7, From: 2, Inc: 5, Kind: wire.KindNack}}
	nack.Nack = wire.Nack{Source: 1, SourceInc: 100, Attempt: 9, Ranges: []wire.SeqRange{{First: 1, Last: wire.MaxSeq - 1}}}
	add(nack)
	rep := &wire.Envelope{Header: wire.Header{Group: 7, From: 3, Inc: 1, Kind: wire.KindRepair}}
	rep.Repair = wire.Repair{Source: 2, SourceInc: 5, Data: wire.Data{Seq: 4, FragIndex: 1, FragCount: 3}}
	add(rep)
	batch := &wire.Envelope{Header: wire.Header{Group: 7, From: 2, Inc: 5, Kind: wire.KindBatch}}
	batch.Batch = []wire.Data{{Seq: wire.MaxSeq - 1}, {Seq: 2, FragCount: 2}, {Seq: 3, FragIndex: 1, FragCount: 2}}
	add(batch)

	f.Fuzz(func(t *testing.T, a, b []byte) {
		e := New(Options{Self: 1, Inc: 100, Group: 7, Heartbeat: hb, SuspectTimeout: suspect, Window: 64}, t0)
		e.Step(t0, addr2, data(2, 5, 1))
		e.Step(t0, addr2, data(2, 5, 3))
		for i := range 10 {
			e.Multicast(nil, []byte{byte(i)}, wire.FIFO, 0)
		}
		dec, env := wire.NewDecoder(), wire.NewEnvelope(1400)
		now := t0
		for round := range 3 {
			for _, d := range [][]byte{a, b} {
				if dec.Decode(d, env) == nil {
					e.Step(now, addr2, env)
				}
			}
			now = now.Add(time.Duration(round+1) * suspect / 3)
			e.Tick(now)
			e.TakeOutput()
			e.TakeEvents()
			e.TakeDeliveries()
		}
		checkBounds(t, e)
	})
}

// checkBounds asserts the limits the engine promises whatever it is fed.
func checkBounds(t *testing.T, e *Engine) {
	t.Helper()
	if len(e.peers) > 3 || len(e.streams) > 3 {
		t.Fatalf("%d peers and %d streams from two datagrams", len(e.peers), len(e.streams))
	}
	for _, st := range append(e.streamList(), e.own) {
		limit := int(st.ring.max)
		if len(st.gaps) > limit || len(st.repairs) > limit || len(st.ring.slots) > limit {
			t.Fatalf("stream %d holds %d gaps, %d repair records, %d slots: over its ring's %d",
				st.src, len(st.gaps), len(st.repairs), len(st.ring.slots), limit)
		}
	}
	for _, p := range e.peers {
		if len(p.reports) > len(e.streams)+1 {
			t.Fatalf("peer %d keeps %d reports", p.id, len(p.reports))
		}
	}
	if e.Unstable() > e.opt.Window {
		t.Fatalf("%d unstable messages over a window of %d", e.Unstable(), e.opt.Window)
	}
}

func (e *Engine) streamList() []*stream {
	var out []*stream
	for _, id := range e.streamIDs() {
		out = append(out, e.streams[id])
	}
	return out
}
