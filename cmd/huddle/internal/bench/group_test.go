package bench

// One way to run a group of huddle nodes for a benchmark: on a LAN of the
// machine, through the lab's runner, on a multicast port of its own, and
// its nodes' figures read off their JSON logs, their /proc files and their
// control sockets.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// group is one group of huddle nodes: every node `huddle run
// --loopback=false` (one node per host, as on a LAN: no multicast
// loopback), its ID its host number, with the group's flags, its own and
// BENCH_HUDDLE_ARGS'.
type group struct {
	*lan.Nodes
	sc      *scenario
	lan     *lan.LAN
	name    string
	port    int
	members map[int]*member // by host: the latest node started there
	formed  time.Time       // when the last founding node installed the view of all of them
	view    lan.View        // that view, as the first of them installed it
	err     error           // the group did not form
}

// member is a node of a group and its figures.
type member struct {
	*lan.Node
	sends    bool    // runs the group's workload
	periodic []stats // the periodic node.stats, in order
	final    stats   // the node.stats at exit
	hasFinal bool
	life     *logcheck.Life // its (last) life in the logs, when read

	hwmKB     int64   // VmHWM
	cpuSec    float64 // user+system CPU time when the run ended
	ctxsw     int64   // context switches of all its threads
	sockDrops int64   // kernel drops of its socket (receive buffer full); -1 unknown
}

// runSeq numbers the groups of the process, to name their processes.
var runSeq int

// newGroup makes a group named after the run on the LAN of n hosts, on
// a fresh port; args are the flags of every node. Sockets gives every
// node a control socket.
func (sc *scenario) newGroup(n int, sockets bool, args ...string) *group {
	runSeq++
	l := sc.lan(n)
	g := &group{sc: sc, lan: l, name: fmt.Sprintf("%s%d", sc.name, runSeq), port: nextPort(), members: map[int]*member{}}
	g.Nodes = lan.NewNodes(l, lan.NodesOptions{Bin: sc.huddle(), Addr: groupAddr + ":" + strconv.Itoa(g.port),
		Prefix: g.name + "-", Sockets: sockets, Args: append([]string{"--loopback=false"}, args...)})
	return g
}

// start starts a node on host with extra flags.
func (g *group) start(host int, extra ...string) *member {
	g.sc.Helper()
	n, err := g.Nodes.Start(host, append(slices.Clone(extra), strings.Fields(os.Getenv(extraArgsEnv))...)...)
	if err != nil {
		g.sc.Fatal(err)
	}
	m := &member{Node: n, sockDrops: -1}
	g.members[host] = m
	return m
}

// form starts a node on each of hs with the flags args(h) and waits until
// they share a view; g.err says why not.
func (g *group) form(hs []int, args func(int) []string) {
	g.sc.Helper()
	for _, h := range hs {
		g.start(h, args(h)...)
	}
	t0 := time.Now()
	views, err := g.WaitView(hs, 15*time.Second)
	if err != nil {
		g.err = fmt.Errorf("group %s did not form: %v", g.name, err)
		g.sc.diag("%v; events since the start:\n%s", g.err, g.excerpt(t0.Add(-time.Second), t0))
		return
	}
	for _, v := range views {
		g.formed = later(g.formed, v.At)
	}
	g.view = views[hs[0]]
}

// signal sends sig to host's node, if it runs.
func (g *group) signal(host int, sig os.Signal) {
	if m := g.members[host]; m != nil {
		m.Signal(sig)
	}
}

// stop ends every node (SIGTERM: a graceful leave; SIGKILL after grace).
func (g *group) stop(grace time.Duration) { g.Nodes.Stop(grace) }

// measure reads what the nodes' /proc tells before they exit: memory, CPU,
// context switches, socket drops.
func (g *group) measure(ms []*member) {
	for _, m := range ms {
		pid, err := m.PID()
		if err != nil || m.Exited() {
			continue
		}
		if kb, err := m.PeakRSS(); err == nil {
			m.hwmKB = kb
		}
		if cpu, _, err := procCPU(pid); err == nil { // pid is huddle's, whatever the binary's name
			m.cpuSec = cpu
		}
		m.ctxsw = ctxSwitches(pid)
		m.sockDrops = socketDrops(g.lan, m.Host, g.port)
	}
}

// readLives reads the logs of ms with logcheck and gives each its last life.
func (g *group) readLives(ms []*member) (*logcheck.Run, error) {
	var paths []string
	for _, m := range ms {
		paths = append(paths, m.Log)
	}
	run, err := logcheck.Load(paths...)
	if run != nil {
		for _, m := range ms {
			if ls := run.Nodes(m.ID); len(ls) > 0 {
				m.life = ls[len(ls)-1]
			}
		}
	}
	return run, err
}

// events returns host's events so far, or those named.
func (g *group) events(host int, names ...string) []logs.Event {
	if m := g.members[host]; m != nil {
		return m.Events(names...)
	}
	return nil
}

// views returns host's views so far.
func (g *group) views(host int) []lan.View {
	if m := g.members[host]; m != nil {
		return m.Views()
	}
	return nil
}

// firstEvent returns the first event name of the nodes of hs at or after
// since that match accepts, and its host.
func (g *group) firstEvent(hs []int, name string, since time.Time, match func(logs.Event) bool) (logs.Event, int, bool) {
	var best logs.Event
	bh, found := 0, false
	for _, h := range hs {
		for _, ev := range g.events(h, name) {
			if !ev.Time.Before(since) && (match == nil || match(ev)) {
				if !found || ev.Time.Before(best.Time) {
					best, bh, found = ev, h, true
				}
				break
			}
		}
	}
	return best, bh, found
}

// viewsBetween counts the views hs installed in [from, to].
func (g *group) viewsBetween(hs []int, from, to time.Time) int {
	n := 0
	for _, h := range hs {
		for _, v := range g.views(h) {
			if !v.At.Before(from) && !v.At.After(to) {
				n++
			}
		}
	}
	return n
}

// settle waits until every host of hs holds the same latest view and none
// of them installed a view for quiet; it returns that view as each host
// installed it. On timeout the error describes the latest views and how
// many views were installed in the last second.
func (g *group) settle(hs []int, quiet, timeout time.Duration) (map[int]lan.View, error) {
	end := time.Now().Add(timeout)
	for {
		latest := map[int]lan.View{}
		ids := map[string]bool{}
		var newest time.Time
		for _, h := range hs {
			if vs := g.views(h); len(vs) > 0 {
				v := vs[len(vs)-1]
				latest[h], ids[v.ID], newest = v, true, later(newest, v.At)
			}
		}
		now := time.Now()
		if len(latest) == len(hs) && len(ids) == 1 && now.Sub(newest) >= quiet {
			return latest, nil
		}
		if now.After(end) {
			var desc []string
			for _, h := range hs {
				desc = append(desc, fmt.Sprintf("h%d %s", h, latest[h]))
			}
			return latest, fmt.Errorf("no stable view within %v: latest views %s; %d views installed in the last second",
				timeout, strings.Join(desc, ", "), g.viewsBetween(hs, now.Add(-time.Second), now))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// excerptEvents are the events excerpts show.
var excerptEvents = []string{logs.NodeStarted, logs.ViewInstalled, logs.ViewFlushStarted, logs.MemberSuspected,
	logs.MemberExcluded, logs.MemberLeft, logs.MemberRefused, logs.NodeStopped, logs.PeerLost, logs.StreamSkipped,
	logs.PeerLagging, logs.NodeWarning, logs.NodeFailed, logs.ElectionStarted, logs.ElectionWon, logs.ElectionDone,
	logs.LeaderChanged}

// excerpt formats the membership and election events of every node at or
// after since, in time order, as offsets from origin.
func (g *group) excerpt(since, origin time.Time) string {
	type line struct {
		at time.Time
		s  string
	}
	var ls []line
	for h := range g.members {
		for _, ev := range g.events(h, excerptEvents...) {
			if ev.Time.Before(since) {
				continue
			}
			var kv []string
			for _, k := range slices.Sorted(ev.Keys()) {
				switch k {
				case logs.TimeKey, logs.LevelKey, logs.EventKey, logs.NodeKey,
					logs.MessageKey, logs.GroupKey, logs.AddrKey, logs.IfaceKey, logs.SrcKey, logs.CoordinatorIncarnationKey,
					logs.ProfileKey, logs.HeartbeatMsKey, logs.SuspectMsKey, logs.DatagramSizeKey, logs.TTLKey, logs.LoopbackKey:
					continue
				}
				v, _ := ev.Text(k)
				kv = append(kv, fmt.Sprintf("%s=%s", k, v))
			}
			ls = append(ls, line{ev.Time, fmt.Sprintf("%+7.1fms h%d %-18s %s", ms(ev.Time.Sub(origin)), h, ev.Name, strings.Join(kv, " "))})
		}
	}
	slices.SortStableFunc(ls, func(a, b line) int { return a.at.Compare(b.at) })
	var b strings.Builder
	for _, l := range ls {
		b.WriteString("    " + l.s + "\n")
	}
	return b.String()
}

// counterSnap is the counters of nodes of a group, read by their control
// sockets (`huddle status`) between from and to.
type counterSnap struct {
	from, to time.Time
	c        map[int]map[string]uint64 // by host, by counter
}

// snapshot reads the counters of the nodes of hs.
func (g *group) snapshot(hs []int) (counterSnap, error) {
	s := counterSnap{from: time.Now(), c: map[int]map[string]uint64{}}
	for _, h := range hs {
		res, err := control.Call(context.Background(), g.members[h].Socket, 2*time.Second, "status", nil)
		if err != nil {
			return s, fmt.Errorf("status of h%d: %w", h, err)
		}
		var st struct {
			Counters map[string]json.Number `json:"counters"`
		}
		if err := json.Unmarshal(res, &st); err != nil {
			return s, fmt.Errorf("status of h%d: %w", h, err)
		}
		s.c[h] = map[string]uint64{}
		for k, v := range st.Counters {
			if n, err := strconv.ParseUint(v.String(), 10, 64); err == nil {
				s.c[h][k] = n
			}
		}
	}
	s.to = time.Now()
	return s, nil
}

// grown is how much counter k grew from a to b, summed over the hosts.
func grown(a, b counterSnap, k string) int64 {
	var d int64
	for h, c := range b.c {
		d += int64(c[k]) - int64(a.c[h][k])
	}
	return d
}

// --- node.stats ---

// stats is one node.stats event: its counters by name.
type stats struct {
	time time.Time
	why  string // periodic, exit
	c    map[string]int64
}

func (s *stats) get(k string) uint64 { return uint64(max(s.c[k], 0)) }
func (s *stats) has(k string) bool   { _, ok := s.c[k]; return ok }

// readStats reads m's node.stats events so far.
func (m *member) readStats() {
	m.periodic, m.hasFinal = m.periodic[:0], false
	for _, ev := range m.Events(logs.NodeStats) {
		s := statsOf(ev)
		if s.why == "exit" {
			m.final, m.hasFinal = s, true
		} else {
			m.periodic = append(m.periodic, s)
		}
	}
}

// statsOf reads the counters of a node.stats event.
func statsOf(ev logs.Event) stats {
	s := stats{time: ev.Time, c: map[string]int64{}}
	s.why, _ = ev.Str(logs.WhyKey)
	for k := range ev.Keys() {
		if i, ok := ev.Int(k); ok && k != logs.NodeKey {
			s.c[k] = i
		}
	}
	return s
}

// latest is m's newest node.stats, read from the end of its log alone:
// for polls, which must not take the CPU the nodes are measured with.
func (m *member) latest() *stats {
	ev, ok := m.LastEvent(logs.NodeStats)
	if !ok {
		return &stats{}
	}
	s := statsOf(ev)
	return &s
}

// last is m's last periodic stats.
func (m *member) last() *stats {
	if len(m.periodic) == 0 {
		return &stats{}
	}
	return &m.periodic[len(m.periodic)-1]
}

// throughput is a receiver's delivery rate from its periodic stats: from
// the first sample with progress to the moment progress reached count,
// interpolated within the sample interval at the rate of the samples
// before; when it never did, up to the last sample. Progress is, say,
// messages delivered or skipped (so a run that skips ends too), the rate
// counts value, say messages delivered.
type throughput struct {
	rate     float64       // value per second
	span     time.Duration // the time measured over
	msgs     uint64        // the value's growth within it
	complete bool
}

func deliveryRate(ss []stats, count uint64, progress, value func(*stats) uint64) throughput {
	i0 := slices.IndexFunc(ss, func(s stats) bool { return progress(&s) > 0 })
	if i0 < 0 {
		return throughput{}
	}
	var tp throughput
	t0, p0, v0 := ss[i0].time, progress(&ss[i0]), value(&ss[i0])
	j := -1
	for i := i0; i < len(ss); i++ {
		if progress(&ss[i]) >= count {
			j = i
			break
		}
	}
	var end time.Time
	switch {
	case j < 0: // incomplete: up to the last sample
		last := &ss[len(ss)-1]
		end, tp.msgs = last.time, value(last)-v0
	case j == i0: // everything within one interval: a lower bound
		prev := t0.Add(-100 * time.Millisecond)
		if i0 > 0 {
			prev = ss[i0-1].time
		}
		tp.complete, tp.msgs = true, value(&ss[j])
		end, t0 = t0, prev
	default:
		tp.complete = true
		p := &ss[j-1]
		pp := progress(p)
		// The rate before the last interval predicts when count was reached.
		var r float64
		if j-1 > i0 {
			r = float64(pp-p0) / p.time.Sub(t0).Seconds()
		} else {
			r = float64(progress(&ss[j])-pp) / ss[j].time.Sub(p.time).Seconds()
		}
		end = ss[j].time
		if r > 0 {
			if e := p.time.Add(time.Duration(float64(count-pp) / r * float64(time.Second))); e.Before(end) {
				end = e
			}
		}
		tp.msgs = value(&ss[j]) - v0
	}
	tp.span = end.Sub(t0)
	if tp.span > 0 {
		tp.rate = float64(tp.msgs) / tp.span.Seconds()
	}
	return tp
}

func delivered(s *stats) uint64 { return s.get("msgs_delivered") }
func processed(s *stats) uint64 { return s.get("msgs_delivered") + s.get("skipped") }
func sent(s *stats) uint64      { return s.get("msgs_sent") }

// appDelivered is what reached the application of other nodes' messages
// (the node counts it): not the members' messages addressed to others,
// nor the election's and the lock's, nor what the membership layer held
// back at a view change (wrong view, past a flush's cut).
func appDelivered(s *stats) uint64 { return s.get("app_delivered") }
