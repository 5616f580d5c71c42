package node

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/multicast/memnet"
)

// fleet runs node loops over one simulated network in a synctest bubble,
// and stops them all (waiting for them) when the test body returns.
type fleet struct {
	n      *memnet.Net
	ctx    context.Context
	cancel context.CancelFunc
	runs   int
	done   chan error
}

func newFleet(seed int64) *fleet {
	ctx, cancel := context.WithCancel(context.Background())
	return &fleet{n: memnet.New(netmodel.Options{Seed: seed}), ctx: ctx, cancel: cancel, done: make(chan error, 16)}
}

// run starts a node at address addrID with config c and returns its log
// and the channel its own Run result arrives on.
func (f *fleet) run(addrID uint64, c config.Config, inc uint64) (*bytes.Buffer, chan error) {
	log := &bytes.Buffer{}
	own := make(chan error, 1)
	o := Options{Config: c, Transport: f.n.Endpoint(netmodel.Addr(addrID)),
		Log: zerolog.New(log).With().Timestamp().Uint64(logs.NodeKey, c.ID).Logger(), Inc: inc}
	f.runs++
	go func() {
		err := Run(f.ctx, o)
		own <- err
		f.done <- err
	}()
	return log, own
}

// stop cancels every node and waits until all have returned.
func (f *fleet) stop() {
	f.cancel()
	for range f.runs {
		<-f.done
	}
}

// TestSecondNodeWithTheSameIDIsRefused starts a node with the ID of a
// running one: the later one stops with ErrRefused, naming the other's
// address, and the first one runs on.
func TestSecondNodeWithTheSameIDIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(5)
		defer f.stop()
		_, first := f.run(1, testConfig(3), 1)
		_, other := f.run(2, testConfig(2), 1)
		time.Sleep(time.Second)
		log, second := f.run(9, testConfig(3), 2) // same ID 3, another address
		var err error
		select {
		case err = <-second:
		case <-time.After(5 * time.Second):
			t.Fatal("the second node with ID 3 was not refused")
		}
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), netmodel.Addr(1).Addr().String()) {
			t.Fatalf("second node: %v; want ErrRefused naming %v", err, netmodel.Addr(1).Addr())
		}
		evs := events(t, log)
		if r := find(evs, logs.MemberRefused); len(r) != 1 || str(r[0], logs.SettingKey) != "id" {
			t.Fatalf("refusal events %v, want one member.refused of the id\n%s", r, log)
		}
		if last := evs[len(evs)-1]; last.Name != logs.NodeStopped || str(last, logs.ReasonKey) != "refused by the group" {
			t.Fatalf("last event %v, want node.stopped, refused", last)
		}
		select {
		case err := <-first:
			t.Fatalf("the first node stopped: %v", err)
		case err := <-other:
			t.Fatalf("the other node stopped: %v", err)
		default:
		}
	})
}

// TestJoinerWithOtherSettingsIsRefused starts a node whose heartbeat
// differs from the group's: the coordinator refuses it, naming the setting.
func TestJoinerWithOtherSettingsIsRefused(t *testing.T) {
	for _, tc := range []struct {
		setting string
		change  func(c *config.Config)
		group   func(c *config.Config) // the group's change, if any
		want    string                 // in the error, besides the setting
	}{
		{"heartbeat", func(c *config.Config) { c.Heartbeat *= 2 }, nil, ""},
		{"election.algorithm", func(c *config.Config) { c.Election.Algorithm = "bully" }, nil, ""},
		{"election.ring_order", func(c *config.Config) { c.Election.RingOrder = "join" }, nil, ""},
		{"mutex.algorithm", func(c *config.Config) { c.Mutex.Algorithm = "token" }, nil, ""},
		// Two transports seldom hear each other; where they do (a
		// unicast node's probe reaching a multicast node's fallback
		// socket), the joiner is refused all the same.
		{"transport", func(c *config.Config) { c.Transport = "unicast" }, nil,
			`transport is "unicast" but the group's (coordinator at 10.0.0.2) is "multicast", or the group runs a release before the setting`},
		// A node that keeps the coordinator ordering sends no sequencer
		// setting, as a release before the moving sequencer does.
		{"sequencer", func(c *config.Config) { c.Sequencer = "coordinator" }, nil, `sequencer is "coordinator" but the group's`},
		// A group that keeps the coordinator ordering, or of an older
		// release, refuses a joiner of the default alike.
		{"sequencer", func(c *config.Config) { c.Sequencer = "moving" }, func(c *config.Config) { c.Sequencer = "coordinator" },
			`sequencer is "moving" but the group's (coordinator at 10.0.0.2) is "coordinator", or the group runs a release before the setting`},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(6)
				defer f.stop()
				for _, id := range []uint64{1, 2} {
					c := testConfig(id)
					if tc.group != nil {
						tc.group(&c)
					}
					f.run(id, c, 1)
				}
				time.Sleep(time.Second)
				c := testConfig(5)
				tc.change(&c)
				_, odd := f.run(5, c, 1)
				var err error
				select {
				case err = <-odd:
				case <-time.After(5 * time.Second):
					t.Fatalf("the node with another %s was not refused", tc.setting)
				}
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.setting) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("odd node: %v; want ErrRefused naming %s (and %q)", err, tc.setting, tc.want)
				}
			})
		})
	}
}
