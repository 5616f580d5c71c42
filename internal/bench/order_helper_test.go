package bench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/lab"
	"github.com/huddle-lan/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// The runs of BenchmarkOrder: a group of huddle nodes on the order LAN,
// some of them sending ordered messages, read off their JSON logs.

// ospec describes one run.
type ospec struct {
	scenario string
	members  []int // hosts of the group; a node's ID is its host
	senders  []int // of those, the ones with a workload
	count    int   // messages each sender sends
	rate     int   // per sender; 0: as fast as the send window allows
	order    string
	trace    bool    // --trace-deliveries on every node (costs throughput)
	loss     float64 // the lab's random loss on every member's input
	// viaTemp forms the group around a temporary founder on tempHost,
	// which leaves before any workload starts: then every sender, the
	// founder of the group included, sends only in the view of exactly
	// the members. Without it the senders start last and join the group
	// the others formed, so that none of them is its coordinator.
	viaTemp bool
	timeout time.Duration // for every member to deliver everything
}

// total is the number of messages every member must deliver.
func (s *ospec) total() int { return s.count * len(s.senders) }

// Group formation: the receivers first (local profile: the highest ID
// founds after the 200 ms join timeout), then the senders, which join in
// a few heartbeats. With viaTemp the senders' workload starts tempJoin
// after their start: by then the temporary founder has admitted them and
// left.
const (
	formWait = 5 * time.Second
	tempJoin = 1200 * time.Millisecond
)

// orderStats is one node.stats event: the counters the order benchmark
// reads. The order counters (ordered_delivered and the records') are
// read when the node logs them; has says which it does.
type orderStats struct {
	time time.Time
	why  string
	c    map[string]int64
}

func (s *orderStats) get(k string) uint64 { return uint64(max(s.c[k], 0)) }
func (s *orderStats) has(k string) bool   { _, ok := s.c[k]; return ok }

// onode is one huddle process of an order run.
type onode struct {
	host    int
	sends   bool // runs the workload
	proc    *lab.Proc
	log     string
	profile string // CPU profile file; "" for none
	started time.Time

	periodic []orderStats
	final    orderStats
	hasFinal bool
	life     *logcheck.Life // its (last) life in the logs, read at the end

	cpuSec    float64
	hwmKB     int64
	ctxsw     int64
	sockDrops int64
}

// orun is the outcome of a run.
type orun struct {
	spec     ospec
	port     int
	nodes    []*onode // the members, in host order
	temp     *onode   // the temporary founder, if any
	view     viewEv   // the view of all members the workload ran in, as the first member installed it
	coord    int      // its coordinator, the sequencer
	formed   time.Time
	complete bool
	wall     time.Duration // from the first sender's start to the end of the run
	load     string
	problems []string // the run did not go as planned (views, early workload)

	records uint64 // order records the sequencer sent (msgs it sent beyond its workload)
	logs    *logcheck.Run
	odd     []string // events worth a look: suspicions, view changes, warnings, skips
}

func (o *orun) member(h int) *onode {
	for _, n := range o.nodes {
		if n.host == h {
			return n
		}
	}
	return nil
}

func (o *orun) all() []*onode {
	if o.temp != nil {
		return append(slices.Clone(o.nodes), o.temp)
	}
	return o.nodes
}

// runOrder runs spec on l.
func (e *oenv) runOrder(b *testing.B, l *lab.LAN, spec ospec) *orun {
	b.Helper()
	o := &orun{spec: spec, port: e.nextPort()}
	e.nextPort() // the node uses the next port too
	run := e.nextRun()
	bin := e.huddle(b)
	addr := "239.192.72.70:" + strconv.Itoa(o.port)
	start := func(host int, extra ...string) *onode {
		name := fmt.Sprintf("order%d-%s-h%d", run, spec.scenario, host)
		n := &onode{host: host, log: filepath.Join(l.LogDir(), name+".json")}
		argv := []string{bin, "run", "--control-socket", "off", "--profile", "local", "--id", strconv.Itoa(host), "--iface", lab.Iface,
			"--addr", addr, "--stats-interval", "100ms", "--log-format", "json", "--log-file", n.log,
			"--loopback=false", "--control-socket", "off"}
		if dir := os.Getenv(profileEnv); dir != "" && host != tempHost {
			n.profile = filepath.Join(dir, name+".pprof")
			argv = append(argv, "--cpu-profile", n.profile)
		}
		if spec.trace {
			argv = append(argv, "--trace-deliveries")
		}
		argv = append(argv, extra...)
		argv = append(argv, strings.Fields(os.Getenv(extraArgsEnv))...)
		n.started = time.Now()
		p, err := l.StartNode(host, name, argv)
		if err != nil {
			b.Fatal(err)
		}
		n.proc = p
		return n
	}
	defer o.stop()
	workload := func(join time.Duration) []string {
		rate := 10_000_000
		if spec.rate > 0 {
			rate = spec.rate
		}
		return []string{"--send-rate", strconv.Itoa(rate), "--send-size", strconv.Itoa(msgSize),
			"--send-count", strconv.Itoa(spec.count), "--send-order", spec.order, "--join-timeout", join.String()}
	}
	quiet := slices.DeleteFunc(slices.Clone(spec.members), func(h int) bool { return slices.Contains(spec.senders, h) })
	setLoss := func() {
		if spec.loss > 0 {
			for _, h := range spec.members {
				if err := l.SetLoss(h, spec.loss); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	defer func() {
		if spec.loss > 0 {
			for _, h := range spec.members {
				l.SetLoss(h, 0)
			}
		}
	}()
	var t0 time.Time // the first sender's start
	if spec.viaTemp {
		o.temp = start(tempHost)
		if _, err := o.waitViews([]*onode{o.temp}, formWait, func(v viewEv) bool { return len(v.members) > 0 }); err != nil {
			b.Fatalf("temporary founder: %v", err)
		}
		for _, h := range spec.members {
			var n *onode
			if slices.Contains(spec.senders, h) {
				n = start(h, workload(tempJoin)...)
				n.sends = true
			} else {
				n = start(h)
			}
			if t0.IsZero() {
				t0 = n.started
			}
			o.nodes = append(o.nodes, n)
		}
		withTemp := append(slices.Clone(spec.members), tempHost)
		if _, err := o.waitViews(o.all(), formWait, func(v viewEv) bool { return sameIDs(v.members, withTemp) }); err != nil {
			b.Fatalf("group with the temporary founder: %v", err)
		}
		o.temp.proc.Signal(syscall.SIGTERM)
		got, err := o.waitViews(o.nodes, formWait, func(v viewEv) bool { return sameIDs(v.members, spec.members) })
		if err != nil {
			b.Fatalf("group without the temporary founder: %v", err)
		}
		o.setFormed(got)
		if late := o.formed.Sub(t0); late > tempJoin-100*time.Millisecond {
			o.problems = append(o.problems, fmt.Sprintf("the group formed %v after the first sender's start, too close to its workload's (%v)", late, tempJoin))
		}
		setLoss()
	} else {
		for _, h := range quiet {
			o.nodes = append(o.nodes, start(h))
		}
		if _, err := o.waitViews(o.nodes, formWait, func(v viewEv) bool { return sameIDs(v.members, quiet) }); err != nil {
			b.Fatalf("receivers' group: %v", err)
		}
		setLoss()
		for _, h := range spec.senders {
			n := start(h, workload(200*time.Millisecond)...)
			n.sends = true
			if t0.IsZero() {
				t0 = n.started
			}
			o.nodes = append(o.nodes, n)
		}
		slices.SortFunc(o.nodes, func(a, c *onode) int { return a.host - c.host })
		got, err := o.waitViews(o.nodes, formWait, func(v viewEv) bool { return sameIDs(v.members, spec.members) })
		if err != nil {
			b.Fatalf("group with the senders: %v", err)
		}
		o.setFormed(got)
	}
	c0 := readCPU()
	o.complete = o.waitDelivered(t0.Add(spec.timeout))
	o.wall = time.Since(t0)
	o.load = machineLoad(c0, readCPU())
	for _, n := range o.nodes {
		if n.proc.Exited() {
			continue
		}
		if kb, err := lab.ProcStatus(n.proc.PID(), "VmHWM"); err == nil {
			n.hwmKB = kb
		}
		if cpu, comm, err := procCPU(n.proc.PID()); err == nil && comm == "huddle" {
			n.cpuSec = cpu
		}
		n.ctxsw = ctxSwitches(n.proc.PID())
		n.sockDrops = socketDrops(l, n.host, o.port)
	}
	o.stop()
	o.readAll(b)
	return o
}

// setFormed notes the view the workload runs in.
func (o *orun) setFormed(got map[int]viewEv) {
	for _, v := range got {
		o.formed = later(o.formed, v.at)
	}
	o.view = got[o.nodes[0].host]
	if len(o.view.members) > 0 {
		o.coord = int(o.view.members[0])
	}
	ids := map[string]bool{}
	for _, v := range got {
		ids[v.id] = true
	}
	if len(ids) != 1 {
		o.problems = append(o.problems, fmt.Sprintf("the members installed different views of all of them: %v", got))
	}
}

// stop ends every node (SIGTERM: a graceful leave), once.
func (o *orun) stop() {
	for _, n := range o.all() {
		if !n.proc.Exited() {
			n.proc.Signal(syscall.SIGTERM)
		}
	}
	for _, n := range o.all() {
		if n.proc.WaitTimeout(10*time.Second) != nil && !n.proc.Exited() {
			n.proc.Kill()
			n.proc.WaitTimeout(3 * time.Second)
		}
	}
}

// waitViews waits until every node of ns installed a view ok accepts, and
// returns the first such view of each.
func (o *orun) waitViews(ns []*onode, timeout time.Duration, ok func(viewEv) bool) (map[int]viewEv, error) {
	end := time.Now().Add(timeout)
	for {
		found := map[int]viewEv{}
		for _, n := range ns {
			for _, v := range n.views() {
				if ok(v) {
					found[n.host] = v
					break
				}
			}
			if n.proc.Exited() {
				return found, fmt.Errorf("h%d exited (code %d):\n%s", n.host, n.proc.ExitCode(), tail(n.proc.LogPath()))
			}
		}
		if len(found) == len(ns) {
			return found, nil
		}
		if time.Now().After(end) {
			var desc []string
			for _, n := range ns {
				vs := n.views()
				last := "none"
				if len(vs) > 0 {
					last = vs[len(vs)-1].String()
				}
				desc = append(desc, fmt.Sprintf("h%d latest view %s", n.host, last))
			}
			return found, fmt.Errorf("not within %v: %s", timeout, strings.Join(desc, ", "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// views reads n's view.installed events so far.
func (n *onode) views() []viewEv {
	var vs []viewEv
	for _, ev := range n.events(logs.ViewInstalled) {
		vs = append(vs, toView(n.host, ev))
	}
	return vs
}

// events reads n's events of the given names so far, without decoding
// the lines of other events (a traced log is long).
func (n *onode) events(names ...string) []logs.Event {
	data, err := os.ReadFile(n.log)
	if err != nil {
		return nil
	}
	var evs []logs.Event
	for line := range bytes.Lines(data) {
		for _, name := range names {
			if !bytes.Contains(line, logs.Tag(name)) {
				continue
			}
			if ev, ok := logs.Parse(line); ok && ev.Name == name {
				evs = append(evs, ev) // line is data's: no need to clone
			}
			break
		}
	}
	return evs
}

// readStats reads n's node.stats events so far.
func (n *onode) readStats() {
	n.periodic, n.hasFinal = n.periodic[:0], false
	for _, ev := range n.events(logs.NodeStats) {
		s := orderStats{time: ev.Time, c: map[string]int64{}}
		s.why, _ = ev.Str(logs.WhyKey)
		for k := range ev.Keys() {
			if i, ok := ev.Int(k); ok && k != logs.NodeKey {
				s.c[k] = i
			}
		}
		if s.why == "exit" {
			n.final, n.hasFinal = s, true
		} else {
			n.periodic = append(n.periodic, s)
		}
	}
}

func (n *onode) last() *orderStats {
	if len(n.periodic) == 0 {
		return &orderStats{}
	}
	return &n.periodic[len(n.periodic)-1]
}

// hasOrdered reports whether the nodes log ordered_delivered.
func (o *orun) hasOrdered() bool {
	if o.spec.order == "fifo" {
		return false
	}
	for _, n := range o.nodes {
		if len(n.periodic) > 0 {
			return n.last().has("ordered_delivered")
		}
	}
	return false
}

// waitDelivered polls the nodes' stats until every member delivered every
// message, a node exits, nothing moves for stallFor (a group that lost
// messages for good), or the deadline. Without ordered_delivered in the
// stats, a member is done when its engine delivered every message the
// others multicast (see engineDone) and the senders other than the
// sequencer sent their workload, the same two polls in a row.
func (o *orun) waitDelivered(deadline time.Time) bool {
	var prev []uint64
	moved := time.Now()
	for now := time.Now(); now.Before(deadline) && now.Sub(moved) < stallFor; now = time.Now() {
		time.Sleep(100 * time.Millisecond)
		done := true
		var cur []uint64
		for _, n := range o.nodes {
			if n.proc.Exited() {
				return false
			}
			n.readStats()
			s := n.last()
			if o.hasOrdered() {
				done = done && s.get("ordered_delivered") >= uint64(o.spec.total())
			} else {
				got, want := o.engineDone(n, func(m *onode) *orderStats { return m.last() })
				done = done && got >= want && (!n.sends || n.host == o.coord || s.get("msgs_sent") >= uint64(o.spec.count))
			}
			cur = append(cur, s.get("msgs_delivered"), s.get("msgs_sent"))
		}
		if !slices.Equal(cur, prev) {
			moved = time.Now()
		} else if done {
			return true
		}
		prev = cur
	}
	return false
}

// stallFor ends a run in which no member delivered or sent anything for
// that long.
const stallFor = 3 * time.Second

// engineDone is what n's multicast engine delivered (msgs_delivered: the
// other members' messages, the sequencer's order records included; a
// node's own messages are not counted) and what the others multicast
// (their msgs_sent), as stats picks each node's counters.
//
// The election's messages are left out of both sides: they are addressed
// (a member delivers only its own), and one sent before a member joined
// never reaches it.
func (o *orun) engineDone(n *onode, stats func(*onode) *orderStats) (got, want uint64) {
	for _, m := range o.nodes {
		if m != n {
			s := stats(m)
			want += s.get("msgs_sent") - min(s.get("election_msgs_sent"), s.get("msgs_sent"))
		}
	}
	s := stats(n)
	return s.get("msgs_delivered") - min(s.get("for_others")+s.get("protocol_msgs"), s.get("msgs_delivered")), want
}

// readAll reads the final stats and the logs.
func (o *orun) readAll(b *testing.B) {
	var paths []string
	for _, n := range o.all() {
		n.readStats()
		if !n.hasFinal && n != o.temp {
			b.Errorf("host %d: no node.stats at exit in %s:\n%s", n.host, n.log, tail(n.proc.LogPath()))
		}
		paths = append(paths, n.log)
	}
	if c := o.member(o.coord); c != nil {
		work := uint64(0)
		if c.sends {
			work = uint64(o.spec.count)
		}
		sent := c.final.get("msgs_sent") - min(c.final.get("election_msgs_sent"), c.final.get("msgs_sent"))
		o.records = sent - min(work, sent)
	}
	logs, err := logcheck.Load(paths...)
	if err != nil {
		b.Errorf("logcheck: %v", err)
	}
	o.logs = logs
	if logs != nil {
		for _, n := range o.nodes {
			if ls := logs.Nodes(uint64(n.host)); len(ls) > 0 {
				n.life = ls[len(ls)-1]
			}
		}
	}
	o.odd = o.oddities()
}

// data is the number of ordered workload messages that s says n
// delivered: ordered_delivered when logged, else an estimate from the
// engine's counters: of msgs_delivered (the others' messages and, but at
// the sequencer, its order records) the others' workload share, plus, at
// a sender, its own messages sent (less the sequencer's records), since
// the records arrive in proportion with the messages they order.
func (o *orun) data(n *onode, s *orderStats) uint64 {
	if o.hasOrdered() {
		return s.get("ordered_delivered")
	}
	others := uint64(o.spec.total())
	var ownRecs, theirRecs uint64
	if n.host == o.coord {
		ownRecs = o.records
	} else {
		theirRecs = o.records
	}
	est := 0.0
	if n.sends {
		others -= uint64(o.spec.count)
		c := float64(o.spec.count)
		est = float64(s.get("msgs_sent")) * c / (c + float64(ownRecs))
	}
	if others > 0 {
		est += float64(s.get("msgs_delivered")) * float64(others) / float64(others+theirRecs)
	}
	return uint64(est + 0.5)
}

// rateAt is a member's delivery rate of ordered workload messages (see
// deliveryRate).
func (o *orun) rateAt(n *onode) throughput {
	ss := make([]stat, len(n.periodic))
	for i := range n.periodic {
		ss[i] = stat{Time: n.periodic[i].time, MsgsDelivered: o.data(n, &n.periodic[i])}
	}
	return deliveryRate(ss, uint64(o.spec.total()), delivered, delivered)
}

// slowest is the lowest delivery rate over the members that receive
// (every member but the senders, or every member when all send).
func (o *orun) slowest() (float64, *onode) {
	r, at := math.Inf(1), (*onode)(nil)
	for _, n := range o.receivers() {
		if tp := o.rateAt(n); tp.rate < r {
			r, at = tp.rate, n
		}
	}
	if at == nil {
		return 0, nil
	}
	return r, at
}

func (o *orun) receivers() []*onode {
	var rs []*onode
	for _, n := range o.nodes {
		if !n.sends || len(o.spec.senders) == len(o.spec.members) {
			rs = append(rs, n)
		}
	}
	return rs
}

// deliveredAll checks that every member delivered every message, from
// the exit stats: ordered_delivered when logged; else the engine's
// deliveries against the others' sends (engineDone), which shows that
// every message and order record reached every member, not that each was
// delivered in order (the traced runs check that). It returns the
// per-node text.
func (o *orun) deliveredAll() (bool, string) {
	ok := o.complete
	var parts []string
	total := uint64(o.spec.total())
	final := func(m *onode) *orderStats { return &m.final }
	for _, n := range o.nodes {
		f := &n.final
		skipped := f.get("skipped")
		got, want := o.engineDone(n, final)
		if o.hasOrdered() {
			got, want = f.get("ordered_delivered"), total
		}
		ok = ok && n.hasFinal && got == want && skipped == 0
		parts = append(parts, fmt.Sprintf("h%d %d/%d skipped %d", n.host, got, want, skipped))
	}
	how := "ordered_delivered/messages sent"
	if !o.hasOrdered() {
		how = fmt.Sprintf("node.stats has no ordered_delivered: msgs_delivered/the others' msgs_sent (workload + %d order records)", o.records)
	}
	return ok, how + ": " + strings.Join(parts, ", ")
}

// orderCounters are the counters of node.stats worth reporting when they
// are not zero; the order counters appear once the node logs them.
var orderCounters = []string{"suspicions", "flush_restarts", "wrong_view", "beyond_cut", "future_dropped",
	"bad_records", "unrecorded", "unheld", "skipped", "overrun", "bad_fragments", "send_errors", "truncated",
	"pauses", "stale_membership"}

// oddities lists what a run should not show: views other than the one
// the workload ran in, suspicions, warnings, skips, and counters above.
func (o *orun) oddities() []string {
	var odd []string
	for _, n := range o.nodes {
		var vs []string
		for _, v := range n.views() {
			if v.at.After(o.formed) {
				vs = append(vs, v.String())
			}
		}
		if len(vs) > 0 {
			odd = append(odd, fmt.Sprintf("h%d installed %d views during the run: %s", n.host, len(vs), strings.Join(vs, " ")))
		}
		var evs []string
		for _, ev := range n.events(logs.MemberSuspected, logs.PeerLost, logs.StreamSkipped, logs.MemberExcluded, logs.PeerLagging, logs.NodeWarning, logs.NodeFailed) {
			if peer, _ := ev.Uint(logs.PeerKey); ev.Name == logs.PeerLost && o.temp != nil && peer == tempHost {
				continue // the temporary founder, gone
			}
			if ev.Time.After(o.formed) {
				s := ev.Name
				for _, k := range []string{"member", "peer", "what", "silent_ms", "count"} {
					if v, ok := ev.Text(k); ok {
						s += fmt.Sprintf(" %s=%s", k, v)
					}
				}
				evs = append(evs, s)
			}
		}
		if len(evs) > 0 {
			odd = append(odd, fmt.Sprintf("h%d: %s", n.host, strings.Join(slices.Compact(evs), ", ")))
		}
		var cs []string
		for _, k := range orderCounters {
			if v := n.final.get(k); v > 0 {
				cs = append(cs, fmt.Sprintf("%s %d", k, v))
			}
		}
		if len(cs) > 0 {
			odd = append(odd, fmt.Sprintf("h%d counters: %s", n.host, strings.Join(cs, ", ")))
		}
	}
	return odd
}

// --- traces: latency and the total order ---

// latencies are the times from each send of a life to its own delivery
// of the same seq, in send order, the sends never delivered, and the
// own deliveries at a view's end (final) rather than by an order record.
func latencies(l *logcheck.Life) (ls []time.Duration, missing, final int) {
	type del struct {
		at    time.Time
		final bool
	}
	at := map[uint64]del{}
	for _, d := range l.Delivers {
		if d.From == l.Node {
			at[d.Seq] = del{d.Time, d.Final}
		}
	}
	for _, s := range l.Sends {
		d, ok := at[s.Seq]
		switch {
		case !ok:
			missing++
			continue
		case d.final:
			final++
		}
		ls = append(ls, d.at.Sub(s.Time))
	}
	return ls, missing, final
}

// quantile is the q-quantile of ds (nearest rank); 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// traceCheck runs the checks a traced run allows: logcheck's membership,
// liveness and order checks (senders deliver their own messages), and
// that every member delivered every message of the senders, in the run's
// view, in the order they were sent as.
func (o *orun) traceCheck() (bool, string) {
	if o.logs == nil {
		return false, "no logs"
	}
	var parts []string
	ok := true
	mo := logcheck.MembershipOptions{SelfDelivery: true}
	for _, res := range []*logcheck.Result{o.logs.CheckMembership(mo), o.logs.CheckLiveness(mo), o.logs.CheckOrder(mo)} {
		ok = ok && res.OK()
		parts = append(parts, firstLines(res.String(), 4))
	}
	var per []string
	for _, n := range o.nodes {
		got, wrong, final := 0, 0, 0
		if n.life != nil {
			for _, d := range n.life.Delivers {
				if !slices.Contains(o.spec.senders, int(d.From)) || d.View != o.view.id {
					continue
				}
				got++
				if d.Order != o.spec.order {
					wrong++
				}
				if d.Final {
					final++
				}
			}
		}
		ok = ok && got == o.spec.total() && wrong == 0
		per = append(per, fmt.Sprintf("h%d %d/%d (%d not %s, %d final)", n.host, got, o.spec.total(), wrong, o.spec.order, final))
	}
	parts = append(parts, "deliver events in the run's view: "+strings.Join(per, ", "))
	return ok, strings.Join(parts, "; ")
}

func firstLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = append(ls[:n], fmt.Sprintf("... %d more", len(ls)-n))
	}
	return strings.Join(ls, " | ")
}

// orderDetail is the raw numbers behind a run's throughput.
func orderDetail(o *orun, runs int) string {
	var per []string
	for _, n := range o.nodes {
		tp := o.rateAt(n)
		role := ""
		if n.host == o.coord {
			role += " seq"
		}
		if n.sends {
			role += " sender"
		}
		per = append(per, fmt.Sprintf("h%d%s %s over %.2fs", n.host, role, rate(tp.rate, "/s"), tp.span.Seconds()))
	}
	cpu := func(n *onode) string {
		return fmt.Sprintf("h%d %.0f%% (%.1f µs/msg, %.2f ctxsw/msg)", n.host, 100*n.cpuSec/o.wall.Seconds(),
			usPer(n.cpuSec, int64(o.spec.total())), float64(n.ctxsw)/float64(o.spec.total()))
	}
	var cpus, wf, unst, sock, nacks, rep []string
	for _, n := range o.nodes {
		cpus = append(cpus, cpu(n))
		wf = append(wf, fmt.Sprint(n.final.get("window_full")))
		unst = append(unst, fmt.Sprint(n.final.get("unstable")))
		sock = append(sock, fmt.Sprint(max(n.sockDrops, 0)))
		nacks = append(nacks, fmt.Sprint(n.final.get("nacks_sent")))
		rep = append(rep, fmt.Sprint(n.final.get("repairs_sent")))
	}
	var mb []string
	for _, n := range o.nodes {
		mb = append(mb, fmt.Sprintf("%.0f", float64(n.hwmKB)/1024))
	}
	return fmt.Sprintf("median of %d; view %s (coordinator, sequencer h%d); %d sender(s) × %d msgs of %d B, order %s, complete=%v; delivered/s %s; "+
		"%d order records (%.1f msgs each); CPU over %.1fs: %s; %s; window_full %s; unstable at end %s; socket drops %s; NACKs %s; repairs %s; VmHWM MB %s",
		runs, o.view, o.coord, len(o.spec.senders), o.spec.count, msgSize, o.spec.order, o.complete, strings.Join(per, ", "),
		o.records, float64(o.spec.total())/float64(max(o.records, 1)), o.wall.Seconds(), strings.Join(cpus, ", "), o.load,
		strings.Join(wf, "/"), strings.Join(unst, "/"), strings.Join(sock, "/"), strings.Join(nacks, "/"), strings.Join(rep, "/"),
		strings.Join(mb, "/"))
}

// cpuLine is each member's CPU use over the run.
func cpuLine(o *orun) string {
	var cs []string
	for _, n := range o.nodes {
		cs = append(cs, fmt.Sprintf("h%d %.0f%%", n.host, 100*n.cpuSec/o.wall.Seconds()))
	}
	return strings.Join(cs, ", ")
}

// TestOrderFigures checks the latency and delivery arithmetic of the
// order benchmark on made-up logs and stats (no network: it runs with
// plain go test).
func TestOrderFigures(t *testing.T) {
	const log = `{"level":"info","node":1,"incarnation":7,"event":"node.started","time":"2026-11-22T12:00:00.000000000Z"}
{"level":"info","node":1,"event":"send","view":"3.3","seq":1,"order":"total","len":1000,"crc":5,"time":"2026-11-22T12:00:01.000000000Z"}
{"level":"info","node":1,"event":"send","view":"3.3","seq":2,"order":"total","len":1000,"crc":6,"time":"2026-11-22T12:00:01.001000000Z"}
{"level":"info","node":1,"event":"send","view":"3.3","seq":3,"order":"total","len":1000,"crc":7,"time":"2026-11-22T12:00:01.002000000Z"}
{"level":"info","node":1,"event":"deliver","view":"3.3","from":3,"from_incarnation":9,"seq":1,"order":"fifo","len":20,"crc":1,"time":"2026-11-22T12:00:01.000100000Z"}
{"level":"info","node":1,"event":"deliver","view":"3.3","from":1,"from_incarnation":7,"seq":1,"order":"total","gseq":1,"len":1000,"crc":5,"time":"2026-11-22T12:00:01.000200000Z"}
{"level":"info","node":1,"event":"deliver","view":"3.3","from":1,"from_incarnation":7,"seq":2,"order":"total","gseq":2,"final":true,"len":1000,"crc":6,"time":"2026-11-22T12:00:01.003000000Z"}
`
	var r logcheck.Run
	if err := r.Read("h1.json", strings.NewReader(log)); err != nil || len(r.Lives) != 1 {
		t.Fatalf("Read: %v, %d lives", err, len(r.Lives))
	}
	ls, missing, final := latencies(r.Lives[0])
	if want := []time.Duration{200 * time.Microsecond, 2 * time.Millisecond}; !slices.Equal(ls, want) || missing != 1 || final != 1 {
		t.Errorf("latencies %v missing %d final %d, want %v 1 1", ls, missing, final, want)
	}
	if q := quantile(ls, 0.5); q != 200*time.Microsecond {
		t.Errorf("p50 %v", q)
	}
	if q := quantile(ls, 0.99); q != 2*time.Millisecond {
		t.Errorf("p99 %v", q)
	}

	// Two senders of 100 messages each (h1, and h3, the sequencer, which
	// sent 50 records), and h2, which only receives; node.stats without
	// ordered_delivered.
	st := func(kv ...int64) orderStats {
		s := orderStats{c: map[string]int64{}}
		for i := 0; i < len(kv); i += 2 {
			s.c[[]string{"msgs_sent", "msgs_delivered"}[kv[i]]] = kv[i+1]
		}
		return s
	}
	h1, h2, h3 := &onode{host: 1, sends: true}, &onode{host: 2}, &onode{host: 3, sends: true}
	h1.final, h2.final, h3.final = st(0, 100, 1, 150), st(1, 250), st(0, 150, 1, 100)
	o := &orun{spec: ospec{senders: []int{1, 3}, count: 100, order: "total"}, coord: 3, records: 50, nodes: []*onode{h1, h2, h3}}
	for _, n := range o.nodes {
		if got := o.data(n, &n.final); got != 200 {
			t.Errorf("h%d: data %d, want 200", n.host, got)
		}
		got, want := o.engineDone(n, func(m *onode) *orderStats { return &m.final })
		if got != want {
			t.Errorf("h%d: engine delivered %d of %d", n.host, got, want)
		}
	}
	half := st(0, 50, 1, 75) // h1 halfway: sent 50, got 50 of h3's and 25 records
	if got := o.data(h1, &half); got != 100 {
		t.Errorf("h1 halfway: data %d, want 100", got)
	}
}
