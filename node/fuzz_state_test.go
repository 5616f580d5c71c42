package node

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
	"github.com/huddle-lan/huddle/membership"
	"github.com/huddle-lan/huddle/multicast"
)

// FuzzStatePiece feeds a node waiting for a snapshot the fuzzer's state
// messages, as if its provider (or a forger in its name) sent them in its
// view: nothing panics, a snapshot is never held past MaxSize, and one is
// installed only whole and matching its hash.
func FuzzStatePiece(f *testing.F) {
	good := func(data []byte, off int) []byte {
		h := sha256.Sum256(data)
		b := []byte{stateVersion, pieceData}
		b = appendString(b, kvService)
		b = binary.AppendUvarint(b, uint64(len(data)))
		b = append(b, h[:]...)
		b = binary.AppendUvarint(b, uint64(off))
		return append(b, data[off:]...)
	}
	f.Add(good([]byte("the whole state"), 0))
	f.Add(good([]byte("the whole state"), 4))
	f.Add(append([]byte{stateVersion, pieceAbort}, appendString(appendString(nil, kvService), "no")...))
	f.Add([]byte{stateVersion, pieceData, 2, 'k', 'v', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, msg []byte) {
		now := time.Unix(1_800_000_000, 0)
		c := NewCore(CoreOptions{Group: "huddle", Seed: 1, State: StateOptions{Services: []string{kvService}, MaxSize: 64},
			Membership: membership.Options{Engine: multicast.Options{Self: 2, Inc: 1, DatagramSize: 1400, Heartbeat: 20 * time.Millisecond, SuspectTimeout: 150 * time.Millisecond}}}, now)
		v := membership.View{ID: wire.ViewID{Epoch: 3, Coord: 1}, Members: []wire.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 1}}, Primary: true, Behind: []uint64{2}}
		c.stateView(now, v)
		for range 2 { // the same message twice: a piece repeated is out of place
			c.statePieceIn(now, &membership.Delivery{Delivery: multicast.Delivery{Source: 1, Inc: 1, View: v.ID, Service: stateService, Payload: msg}})
			r := c.state.replicas[0]
			if int64(len(r.got)) > c.state.opt.MaxSize {
				t.Fatalf("holds %d bytes of a snapshot, over MaxSize %d", len(r.got), c.state.opt.MaxSize)
			}
			for _, ev := range c.events {
				if ev.Kind == StateTransferEvent && ev.State.Kind == StateInstalled && sha256.Sum256(ev.State.Data) != ev.State.Hash {
					t.Fatalf("installed a snapshot that does not match its hash")
				}
			}
		}
	})
}
