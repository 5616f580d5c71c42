package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	_ "github.com/huddle-lan/huddle/cmd/huddle/internal/logx" // zerolog's time format and UTC clock, as the nodes log them
	"github.com/huddle-lan/huddle/cmd/huddle/internal/workload"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/multicast/memnet"
)

// procCluster runs the nodes in this process: the Group API with the
// workloads of `huddle run` (the same code) over an in-memory network
// with random loss (memnet.Net), in real time. It is the demo's fallback
// where no virtual LAN can be built.
type procCluster struct {
	data, ctl *memnet.Net // group traffic, and the repair traffic of the second socket
	dir       string
	cfg       func(id uint64) config.Config
	nodes     map[uint64]*procNode
	n         int                // nodes 1..n
	loss      map[uint64]float64 // each host's ingress loss, set again after a heal
}

var _ cluster = (*procCluster)(nil)

// procNode is one running node.
type procNode struct {
	cancel    context.CancelCauseFunc
	g         *huddle.Group
	log       *cutWriter
	data, ctl *crashable
}

// newProcCluster returns a cluster of nodes 1..n whose host h drops
// datagrams it receives with probability loss(h), drawn from seed.
func newProcCluster(n int, loss func(h uint64) float64, seed int64, dir string, cfg func(uint64) config.Config) *procCluster {
	c := &procCluster{
		data:  memnet.New(netmodel.Options{Seed: seed}),
		ctl:   memnet.New(netmodel.Options{Seed: seed + 1}),
		dir:   dir,
		cfg:   cfg,
		nodes: map[uint64]*procNode{},
		n:     n,
		loss:  map[uint64]float64{},
	}
	for h := uint64(1); h <= uint64(n); h++ {
		c.loss[h] = loss(h)
	}
	c.applyLoss()
	return c
}

// applyLoss sets every host's ingress loss on both networks.
func (c *procCluster) applyLoss() {
	for to, p := range c.loss {
		for from := uint64(1); from <= uint64(c.n); from++ {
			if from != to {
				c.data.SetLinkLoss(netmodel.Addr(from), netmodel.Addr(to), p)
				c.ctl.SetLinkLoss(netmodel.Addr(from), netmodel.Addr(to), p)
			}
		}
	}
}

// errNeedsProcesses refuses SIGSTOP and SIGCONT: a node in this process
// has no process of its own to freeze.
var errNeedsProcesses = errors.New("stop and continue need the nodes as processes, on a virtual LAN")

func (c *procCluster) pause(uint64) error  { return errNeedsProcesses }
func (c *procCluster) resume(uint64) error { return errNeedsProcesses }

// setMulticast is refused before the run (Action.Validate): memnet has
// no multicast to take away.
func (c *procCluster) setMulticast(id uint64, on bool) error {
	return errors.New("taking multicast away needs a virtual LAN's bridge")
}

// setCPU is refused before the run (Action.Validate): the nodes share
// this process.
func (c *procCluster) setCPU(uint64, float64) error {
	return errors.New("holding a node's CPU needs the nodes as processes, on a virtual LAN")
}

func (c *procCluster) setLoss(id uint64, m lan.LossModel) error {
	if !randomOnly(m) {
		return errRandomOnly
	}
	c.loss[id] = m.Loss
	c.applyLoss()
	return nil
}

func (c *procCluster) partition(side []uint64) error {
	var addrs []netip.AddrPort
	for _, id := range side {
		addrs = append(addrs, netmodel.Addr(id))
	}
	c.data.Partition(addrs)
	c.ctl.Partition(addrs)
	return nil
}

// heal undoes the partition; memnet forgets the hosts' loss with it.
func (c *procCluster) heal() error {
	c.data.Heal()
	c.ctl.Heal()
	c.applyLoss()
	return nil
}

func (c *procCluster) call(ctx context.Context, id uint64, cmd string, args any) (json.RawMessage, error) {
	n := c.nodes[id]
	if n == nil || n.exited() {
		return nil, fmt.Errorf("node %d is not running", id)
	}
	h := control.Commands(control.ForGroup(n.g))[cmd]
	if h == nil {
		return nil, fmt.Errorf("no control command %q", cmd)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := h(ctx, raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (c *procCluster) logPath(id uint64) string {
	return filepath.Join(c.dir, fmt.Sprintf("node%d.json", id))
}

func (c *procCluster) start(id uint64) error {
	if n := c.nodes[id]; n != nil && !n.exited() {
		return fmt.Errorf("node %d is running", id)
	}
	f, err := os.OpenFile(c.logPath(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cfg := c.cfg(id)
	n := &procNode{log: &cutWriter{w: f},
		data: newCrashable(c.data.Endpoint(netmodel.Addr(id))), ctl: newCrashable(c.ctl.Endpoint(netmodel.Addr(id)))}
	log := zerolog.New(n.log).Level(zerolog.InfoLevel).With().Timestamp().Logger()
	ctx, cancel := context.WithCancelCause(context.Background())
	n.cancel = cancel
	start := time.Now()
	nodeLog := log.With().Uint64(logs.NodeKey, id).Logger()
	if n.g, err = huddle.StartOn(ctx, cfg, log, n.data, n.ctl, workload.NewKV(cfg, nodeLog).Options()...); err != nil {
		cancel(err)
		f.Close()
		return err
	}
	go workload.Run(ctx, n.g, cfg, start)
	go func() {
		<-n.g.Done()
		if err := n.g.Err(); !errors.Is(err, huddle.ErrClosed) {
			log.Error().Uint64(logs.NodeKey, id).Str(logs.EventKey, logs.NodeFailed).Err(err).Msg("node failed")
		}
		n.log.Close()
	}()
	c.nodes[id] = n
	return nil
}

// kill crashes node id as SIGKILL would: from now on it sends nothing,
// hears nothing and logs nothing (its log ends mid-run, with no final
// stats), and its address is free for a restart. Its loop then winds
// down unseen.
func (c *procCluster) kill(id uint64) error {
	n := c.nodes[id]
	if n == nil || n.exited() {
		return fmt.Errorf("node %d is not running", id)
	}
	n.log.cut()
	n.data.crash()
	n.ctl.crash()
	n.cancel(errors.New("killed"))
	return nil
}

// stopCause is what a stopped node logs as the reason in node.stopped.
var stopCause = errors.New("demo over")

func (c *procCluster) stop(grace time.Duration, _ bool) error {
	for _, n := range c.nodes {
		n.cancel(stopCause)
	}
	deadline := time.After(grace)
	var errs []error
	for id, n := range c.nodes {
		select {
		case <-n.g.Done():
		case <-deadline:
			errs = append(errs, fmt.Errorf("node %d did not stop within %v", id, grace))
		}
	}
	return errors.Join(errs...)
}

// exits reports nothing: a node that fails logs node.failed.
func (c *procCluster) exits() []string { return nil }

// close waits a little for the loops of killed nodes to wind down.
func (c *procCluster) close() error {
	for _, n := range c.nodes {
		n.cancel(stopCause)
		select {
		case <-n.g.Done():
		case <-time.After(5 * time.Second):
		}
	}
	return nil
}

func (n *procNode) exited() bool {
	select {
	case <-n.g.Done():
		return true
	default:
		return n.log.isCut()
	}
}

// crashable is a transport that can die at once, like the sockets of a
// killed process: after crash, writes vanish, reads block until Close,
// and the address is released.
type crashable struct {
	huddle.Transport
	mu      sync.Mutex
	crashed bool
	closed  chan struct{}
	once    sync.Once
}

func newCrashable(t huddle.Transport) *crashable {
	return &crashable{Transport: t, closed: make(chan struct{})}
}

func (c *crashable) isCrashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

func (c *crashable) crash() {
	c.mu.Lock()
	c.crashed = true
	c.mu.Unlock()
	c.Transport.Close()
}

// ReadBatch implements huddle.Transport.
func (c *crashable) ReadBatch(pkts []huddle.Packet) (int, error) {
	n, err := c.Transport.ReadBatch(pkts)
	if c.isCrashed() {
		<-c.closed
		return 0, net.ErrClosed
	}
	return n, err
}

// WriteBatch implements huddle.Transport.
func (c *crashable) WriteBatch(datagrams [][]byte) error {
	if c.isCrashed() {
		return nil
	}
	return c.Transport.WriteBatch(datagrams)
}

// Close implements huddle.Transport.
func (c *crashable) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Transport.Close()
}

// cutWriter is a log file that can be cut off, as a killed process's is.
type cutWriter struct {
	mu   sync.Mutex
	w    io.WriteCloser
	gone bool
}

func (c *cutWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *cutWriter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone = true
}

func (c *cutWriter) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

func (c *cutWriter) Close() error { return c.w.Close() }
