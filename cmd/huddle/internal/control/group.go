package control

import (
	"context"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/internal/wire"
)

// ForGroup returns the Node the commands serve from a group's node, through
// the Group API: the control socket uses the same front door as every
// program.
func ForGroup(g *huddle.Group) Node { return groupNode{g} }

type groupNode struct{ g *huddle.Group }

func (n groupNode) Status(ctx context.Context) (huddle.Status, error) { return n.g.Status(ctx) }

func (n groupNode) Multicast(ctx context.Context, service, payload []byte, order wire.Order) (uint64, error) {
	return n.g.Service(string(service)).Multicast(ctx, payload, order)
}

func (n groupNode) Elect(ctx context.Context) (huddle.ElectResult, error) { return n.g.Elect(ctx) }

func (n groupNode) Lock(ctx context.Context) error { return n.g.Lock(ctx) }

func (n groupNode) Unlock(context.Context) error { return n.g.Unlock() }

func (n groupNode) SetDrop(ctx context.Context, d huddle.Drop) (huddle.Drop, error) {
	return n.g.SetDrop(ctx, d)
}

func (n groupNode) Probe(ctx context.Context) (huddle.ProbeResult, error) { return n.g.Probe(ctx) }

func (n groupNode) Watch(services ...string) Watch { return n.g.Watch(services...) }

func (n groupNode) ReloadKeys(ctx context.Context) error { return n.g.ReloadKeys(ctx) }
