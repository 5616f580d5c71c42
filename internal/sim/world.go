package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/internal/netmodel"
)

// Options describe the World's network: the seed of the run and the
// faults. They are the options of the fault model, which the simulator
// shares with multicast/memnet.
type Options = netmodel.Options

// Epoch is the virtual instant every World starts at. A fixed start keeps
// traces and timestamps identical from run to run.
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Factory builds the machine of node id, whose address is
// netmodel.Addr(id). It is called by Add (incarnation 1) and by each
// Restart (incarnation 2, 3, ...) with a fresh seed drawn from the world's
// random source, to seed the machine's own *rand.Rand.
type Factory func(id, incarnation uint64, seed int64, addr netip.AddrPort) Machine

// Errors a run can end with, wrapped in a *RunError.
var (
	// ErrTimeout: RunUntil's condition did not hold within its limit.
	ErrTimeout = errors.New("sim: condition not met in time")
	// ErrLivelock: too many steps without the clock moving, typically a
	// machine whose NextDeadline stays in the past.
	ErrLivelock = errors.New("sim: livelock: clock does not advance")
)

// livelockSteps is how many events may happen at one instant before the
// run is declared a livelock.
const livelockSteps = 1 << 20

// arenaChunk is the allocation unit for datagram copies.
const arenaChunk = 64 << 10

// node is one simulated host. Its ID and address survive restarts; the
// machine and incarnation do not.
type node struct {
	id, inc  uint64
	addr     netip.AddrPort
	factory  Factory
	machine  Machine
	alive    bool
	stalled  time.Duration // receives and ticks wait until then
	gen      uint64        // bumped to cancel the armed timer
	armed    bool
	deadline time.Duration // of the armed timer
}

type check struct {
	name string
	f    func(*World) error
}

// World is a deterministic virtual network and clock driving Machines. It
// is not safe for concurrent use: one test goroutine drives it.
type World struct {
	seed   int64
	rng    *rand.Rand
	model  netmodel.Model[uint64]
	now    time.Duration // since Epoch
	queue  eventQueue
	nodes  map[uint64]*node
	order  []*node // by ID, so that every iteration is deterministic
	checks []check
	err    error // first failure; the world stops at it
	stats  netmodel.Stats
	trace  traceRing
	steps  uint64
	still  int    // consecutive events at the current instant
	arena  []byte // backing store of in-flight datagram copies
	rbuf   []byte // each Receive gets its own copy here
}

// New returns an empty world at Epoch.
func New(opts Options) *World {
	return &World{
		seed:  opts.Seed,
		rng:   netmodel.NewRand(opts.Seed),
		model: netmodel.NewModel[uint64](opts),
		nodes: make(map[uint64]*node),
	}
}

// Seed returns the seed the world was created with.
func (w *World) Seed() int64 { return w.seed }

// Now returns the virtual time.
func (w *World) Now() time.Time { return Epoch.Add(w.now) }

// Elapsed returns the virtual time since Epoch.
func (w *World) Elapsed() time.Duration { return w.now }

// Stats returns the datagram counters so far.
func (w *World) Stats() netmodel.Stats { return w.stats }

// Err returns the failure that stopped the world, or nil.
func (w *World) Err() error { return w.err }

// Add starts node id with incarnation 1. The new machine is ticked once at
// the current time, so that it learns the clock and arms its timers, and
// its outbox is sent. Add panics if id is already taken.
func (w *World) Add(id uint64, f Factory) {
	if _, ok := w.nodes[id]; ok {
		panic(fmt.Sprintf("sim: node %d added twice", id))
	}
	n := &node{id: id, addr: netmodel.Addr(id), factory: f}
	w.nodes[id] = n
	i, _ := slices.BinarySearchFunc(w.order, id, func(n *node, id uint64) int { return cmp.Compare(n.id, id) })
	w.order = slices.Insert(w.order, i, n)
	w.start(n)
}

// Crash stops node id: its timer is cancelled and datagrams on their way
// to it are dropped. Datagrams it already sent still arrive. Its last
// machine stays readable through Machine.
func (w *World) Crash(id uint64) {
	n := w.node(id)
	if !n.alive {
		return
	}
	n.alive, n.armed, n.stalled = false, false, 0
	n.gen++
	w.log(traceEntry{kind: trCrash, node: id})
}

// Restart starts a new incarnation of node id from its factory, crashing
// the running one first if needed.
func (w *World) Restart(id uint64) {
	w.Crash(id)
	w.start(w.node(id))
}

func (w *World) start(n *node) {
	n.inc++
	n.alive = true
	n.machine = n.factory(n.id, n.inc, w.rng.Int64(), n.addr)
	w.log(traceEntry{kind: trStart, node: n.id, n: int(n.inc)})
	n.machine.Tick(w.Now())
	w.after(n)
}

// Machine returns node id's current (or, if crashed, last) machine, or nil
// for an unknown id.
func (w *World) Machine(id uint64) Machine {
	if n, ok := w.nodes[id]; ok {
		return n.machine
	}
	return nil
}

// Alive reports whether node id exists and is not crashed.
func (w *World) Alive(id uint64) bool {
	n, ok := w.nodes[id]
	return ok && n.alive
}

// IDs returns the IDs of all nodes ever added, crashed or not, ascending.
func (w *World) IDs() []uint64 {
	ids := make([]uint64, len(w.order))
	for i, n := range w.order {
		ids[i] = n.id
	}
	return ids
}

// Do runs f on node id's machine as a local request (send, lock, leave)
// at the current time, then sends its outbox, re-arms its timer and runs
// the checks, like a step. It reports false, without calling f, if the
// node is crashed.
func (w *World) Do(id uint64, f func(m Machine)) bool {
	n := w.node(id)
	if !n.alive {
		return false
	}
	w.steps++
	w.log(traceEntry{kind: trDo, node: id})
	f(n.machine)
	w.after(n)
	w.runChecks()
	return true
}

// Check registers an invariant, run after every step. The first one to
// return an error stops the world; RunFor and RunUntil then return a
// *RunError with the seed, the name and the trace.
func (w *World) Check(name string, f func(*World) error) {
	w.checks = append(w.checks, check{name, f})
}

// Trace returns the last steps of the run, one event per line.
func (w *World) Trace() string {
	var first uint64 // entries logged between steps belong to the step before
	if w.steps >= traceSteps {
		first = w.steps - traceSteps + 1
	}
	return w.trace.format(first)
}

func (w *World) node(id uint64) *node {
	n, ok := w.nodes[id]
	if !ok {
		panic(fmt.Sprintf("sim: unknown node %d", id))
	}
	return n
}

func (w *World) log(e traceEntry) {
	e.step, e.at = w.steps, w.now
	w.trace.add(e)
}

func (w *World) note(format string, args ...any) {
	w.log(traceEntry{kind: trNote, text: fmt.Sprintf(format, args...)})
}

// forever is the horizon of an unbounded Step.
const forever = time.Duration(math.MaxInt64)
