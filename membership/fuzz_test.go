package membership

import (
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// FuzzMachine feeds arbitrary datagrams, as the decoder accepts them, to a
// member of a running three-node group, from a member's address, then
// lets time run. Whatever the datagrams claim (forged flushes, commits,
// refusals, leaves), the machine must not panic or loop, must keep itself
// in every view it installs, and must never deliver a message twice.
// `go test` runs the seeds; `go test -run '^$' -fuzz FuzzMachine
// ./membership` searches further.
func FuzzMachine(f *testing.F) {
	enc := wire.NewEncoder()
	add := func(envs ...wire.Envelope) {
		var bs [][]byte
		for i := range envs {
			envs[i].Header.Group, envs[i].Header.From, envs[i].Header.Inc = 7, 3, 1
			b, err := enc.Append(nil, &envs[i])
			if err != nil {
				f.Fatal(err)
			}
			bs = append(bs, b)
		}
		for len(bs) < 2 {
			bs = append(bs, nil)
		}
		f.Add(bs[0], bs[1])
	}
	v := wire.ViewID{Epoch: 2, Coord: 3}
	members := []wire.Member{{ID: 3, Inc: 1}, {ID: 1, Inc: 1}, {ID: 2, Inc: 1}}
	add(wire.Envelope{Header: wire.Header{Kind: wire.KindFlush, View: v}, Flush: wire.Flush{Epoch: 3, Attempt: 1, Members: members}},
		wire.Envelope{Header: wire.Header{Kind: wire.KindView, View: v}, Commit: wire.ViewCommit{Epoch: 3, Attempt: 1,
			Members: []wire.ViewMember{{ID: 3, Inc: 1, Next: 9}, {ID: 1, Inc: 1, Next: 1}}}})
	add(wire.Envelope{Header: wire.Header{Kind: wire.KindFlush, View: v}, Flush: wire.Flush{Epoch: 9, Attempt: 4, Phase: wire.FlushCut,
		Members: members, Cuts: []wire.ViewCut{{View: v, Cuts: []wire.Cut{{ID: 2, Seq: wire.MaxSeq - 1}, {ID: 3, Seq: 5}}}}}})
	add(wire.Envelope{Header: wire.Header{Kind: wire.KindLeave, View: v}, Leave: wire.Leave{Member: 1, MemberInc: 1, Reason: wire.LeaveSuspect}},
		wire.Envelope{Header: wire.Header{Kind: wire.KindRefuse, View: v}, Refuse: wire.Refuse{Target: 1, TargetInc: 1, Setting: []byte("id")}})
	add(wire.Envelope{Header: wire.Header{Kind: wire.KindFlushOK, View: v}, FlushOK: wire.FlushOK{Epoch: 3, Attempt: 1, Initiator: 1,
		Prior: v, Has: []wire.Cut{{ID: 1, Seq: 1 << 40}}}},
		wire.Envelope{Header: wire.Header{Kind: wire.KindJoin, View: wire.ViewID{}}, Join: wire.Join{Settings: []wire.Setting{{Name: []byte("heartbeat"), Value: []byte("1h")}}}})

	f.Fuzz(func(t *testing.T, a, b []byte) {
		l := newLAN(t, 1, 2, 3)
		l.run(100 * time.Millisecond)
		m := l.ms[1]
		m.Multicast(nil, []byte("x"), wire.FIFO, 0)
		dec, env := wire.NewDecoder(), wire.NewEnvelope(1400)
		seen := map[[2]uint64]bool{}
		for round := range 6 {
			for _, d := range [][]byte{a, b} {
				if dec.Decode(d, env) == nil && env.From != 1 {
					m.Step(l.now, fuzzAddr, env)
				}
			}
			l.run(time.Duration(round+1) * 20 * time.Millisecond)
			if m.state == member && !m.view.HasInc(1, 1) {
				t.Fatalf("installed %v without itself", m.view)
			}
			for _, d := range l.deliveries(1) {
				k := [2]uint64{d.Source, d.Seq}
				if seen[k] {
					t.Fatalf("delivered %d/%d twice", d.Source, d.Seq)
				}
				seen[k] = true
			}
		}
	})
}
