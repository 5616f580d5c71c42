package node

import (
	"context"
	"math/rand/v2"
	"slices"

	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/netmodel"
)

// Drop is the node's built-in fault injection (the drop.* settings), the
// analogue of JGroups' DISCARD: each datagram that arrives is dropped with
// probability Rate before the protocol sees it, as if the network had lost
// it, when From is empty or names its sender. It is for experiments on
// machines where kernel loss (netem, iptables, nft) cannot be had.
//
// With Burst above 1 the drops come in bursts of consecutive datagrams of
// that mean length, the long-run fraction dropped staying Rate: the
// simple Gilbert model netem's "loss gemodel" applies (a good state that
// drops nothing, a bad state that drops everything, moving once per
// datagram the rule applies to; see netmodel.Gilbert).
type Drop struct {
	Rate float64  `json:"rate"`           // 0 to 1; 0 is off
	From []uint64 `json:"from,omitempty"` // only datagrams from these senders; empty: every sender
	// Burst is the mean length of a burst of drops; 0 or 1: independent
	// drops, else up to netmodel.MaxBurst and Rate at most Burst/(Burst+1)
	// (netmodel.BurstProblem).
	Burst float64 `json:"burst,omitempty"`
	// Seed seeds the random choices; 0 keeps the current source (at
	// start: one derived from the node's protocol seed).
	Seed uint64 `json:"seed,omitempty"`
}

// Active reports whether the rule drops anything.
func (d Drop) Active() bool { return d.Rate > 0 }

// dropper applies a Drop rule with a seeded random source of its own, so
// that the protocol's randomness (timer jitter) does not depend on it.
type dropper struct {
	rule    Drop
	from    map[uint64]bool  // nil: every sender
	gilbert netmodel.Gilbert // of Rate and Burst; R 0: independent drops
	bad     bool             // the Gilbert chain is in its bad state
	rng     *rand.Rand
}

// dropSalt keeps the drop's random stream apart from the protocol's when
// both are derived from one seed.
const dropSalt = 0x64726f70 // "drop"

func newDropper(d Drop, seed uint64) *dropper {
	x := &dropper{rng: rand.New(rand.NewPCG(seed, dropSalt))}
	x.set(d)
	return x
}

// set replaces the rule; a non-zero Seed restarts the random source. A
// burst in progress ends: the Gilbert chain starts in its good state.
func (x *dropper) set(d Drop) {
	d.From = slices.Clone(d.From)
	x.rule, x.from, x.bad = d, nil, false
	x.gilbert, _ = netmodel.NewGilbert(d.Rate, d.Burst)
	if len(d.From) > 0 {
		x.from = make(map[uint64]bool, len(d.From))
		for _, id := range d.From {
			x.from[id] = true
		}
	}
	if d.Seed != 0 {
		x.rng = rand.New(rand.NewPCG(d.Seed, dropSalt))
	}
}

// hit reports whether a datagram from sender is to be dropped.
func (x *dropper) hit(sender uint64) bool {
	switch {
	case x.rule.Rate <= 0:
		return false
	case x.from != nil && !x.from[sender]:
		return false
	case x.rule.Rate >= 1:
		return true
	case x.gilbert.R > 0:
		return x.gilbert.Step(x.rng, &x.bad)
	}
	// Independent drops draw one number each, as they always have, so
	// that a seed gives the same drops as before bursts existed.
	return x.rng.Float64() < x.rule.Rate
}

// SetDrop replaces the running node's fault injection rule and returns the
// one it replaced; the change is logged as node.drop.
func (n *Node) SetDrop(ctx context.Context, d Drop) (Drop, error) {
	var old Drop
	err := n.Do(ctx, func(c *Core) {
		old = c.Drop()
		c.SetDrop(d)
		n.logDrop(c.Drop())
	})
	return old, err
}

// logDrop logs the fault injection rule in force.
func (n *Node) logDrop(d Drop) {
	e := n.log.Info().Str(logs.EventKey, logs.NodeDrop).Float64(logs.RateKey, d.Rate).Uints64(logs.FromKey, orEmpty(d.From))
	if d.Seed != 0 {
		e = e.Uint64(logs.SeedKey, d.Seed)
	}
	if d.Burst > 1 {
		e = e.Float64(logs.BurstKey, d.Burst)
	}
	if !d.Active() {
		e.Msg("built-in drop off")
		return
	}
	e.Msg("built-in drop: received datagrams are dropped at random (an experiment)")
}
