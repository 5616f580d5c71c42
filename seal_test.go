package huddle_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/internal/seal"
	"github.com/huddle-lan/huddle/multicast"
	"github.com/huddle-lan/huddle/multicast/memnet"
)

// spy records every datagram a node writes.
type spy struct {
	multicast.Transport
	mu   sync.Mutex
	sent [][]byte
}

func (s *spy) WriteBatch(ds [][]byte) error {
	s.mu.Lock()
	for _, d := range ds {
		s.sent = append(s.sent, append([]byte(nil), d...))
	}
	s.mu.Unlock()
	return s.Transport.WriteBatch(ds)
}

// TestGroupAPISeals: through the Group API with a key file, every
// datagram a node writes, on both of its transports, is sealed, none in
// the clear; and messages of every order still reach every member.
func TestGroupAPISeals(t *testing.T) {
	_, text, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "group.key")
	if err := os.WriteFile(keyFile, []byte(text+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	data, repair := memnet.New(netmodel.Options{Seed: 1, Loss: 0.05}), memnet.New(netmodel.Options{Seed: 2, Loss: 0.05})
	var spies []*spy
	var apps []*huddle.Service
	for id := uint64(1); id <= 3; id++ {
		cfg := config.Local()
		cfg.ID, cfg.Security.KeyFile = id, keyFile
		d, r := &spy{Transport: data.Endpoint(netmodel.Addr(id))}, &spy{Transport: repair.Endpoint(netmodel.Addr(id))}
		g, err := huddle.StartOn(ctx, cfg, zerolog.Nop(), d, r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Leave(context.Background()) })
		spies = append(spies, d, r)
		apps = append(apps, g.Service("app"))
	}
	for _, s := range apps {
		waitForMembers(s, 3)
	}
	for i, order := range []huddle.Order{huddle.FIFO, huddle.Total, huddle.Safe} {
		if _, err := apps[i].Multicast(ctx, []byte("sealed"), order); err != nil {
			t.Fatal(err)
		}
	}
	for n, s := range apps {
		for got := 0; got < 3; {
			select {
			case ev := <-s.Events():
				if ev.Kind == huddle.Delivered {
					got++
				}
			case <-ctx.Done():
				t.Fatalf("node %d delivered %d of 3 messages", n+1, got)
			}
		}
	}
	total := 0
	for _, s := range spies {
		s.mu.Lock()
		for _, d := range s.sent {
			if len(d) == 0 || d[0] != seal.Marker {
				t.Fatalf("a datagram in the clear: % x", d[:min(len(d), 16)])
			}
			total++
		}
		s.mu.Unlock()
	}
	if total == 0 {
		t.Fatal("no datagram written")
	}
}
