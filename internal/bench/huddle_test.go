package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/lab"
	"github.com/huddle-lan/huddle/internal/logs"
)

// extraArgsEnv names an environment variable whose words are added to
// every huddle command line, for tuning experiments:
// BENCH_HUDDLE_ARGS="--send-window 16384 --loopback=false".
const extraArgsEnv = "BENCH_HUDDLE_ARGS"

// stat is one node.stats event (the fields the benchmark reads).
type stat struct {
	Time              time.Time `json:"time"`
	Event             string    `json:"event"`
	Why               string    `json:"why"`
	DatagramsIn       uint64    `json:"datagrams_in"`
	DatagramsOut      uint64    `json:"datagrams_out"`
	SendErrors        uint64    `json:"send_errors"`
	Truncated         uint64    `json:"truncated"`
	Peers             int       `json:"peers"`
	MsgsSent          uint64    `json:"msgs_sent"`
	DataDatagrams     uint64    `json:"data_datagrams"`
	MsgsDelivered     uint64    `json:"msgs_delivered"`
	ForOthers         uint64    `json:"for_others"`    // addressed to another member, of msgs_delivered
	ProtocolMsgs      uint64    `json:"protocol_msgs"` // the election's and the lock's, of msgs_delivered
	Duplicates        uint64    `json:"duplicates"`
	GapsDetected      uint64    `json:"gaps_detected"`
	GapsRecovered     uint64    `json:"gaps_recovered"`
	NacksSent         uint64    `json:"nacks_sent"`
	NackedSeqs        uint64    `json:"nacked_seqs"`
	NacksSuppressed   uint64    `json:"nacks_suppressed"`
	NacksRecv         uint64    `json:"nacks_recv"`
	NacksUnanswerable uint64    `json:"nacks_unanswerable"`
	RepairsSent       uint64    `json:"repairs_sent"`
	RepairsSuppressed uint64    `json:"repairs_suppressed"`
	RepairsRecv       uint64    `json:"repairs_recv"`
	Skipped           uint64    `json:"skipped"`
	Overrun           uint64    `json:"overrun"`
	Unstable          int       `json:"unstable"`
	WindowFull        uint64    `json:"window_full"`
	RecoveryP50       int64     `json:"recovery_p50_us"`
	RecoveryP99       int64     `json:"recovery_p99_us"`
	RecoveryMax       int64     `json:"recovery_max_us"`
}

// event is any log line, for the events the benchmark watches besides stats.
type event struct {
	Event string `json:"event"`
	Level string `json:"level"`
}

// node is one huddle process of a run.
type node struct {
	host     int
	proc     *lab.Proc
	logPath  string
	periodic []stat // the periodic node.stats, in order
	final    stat   // the node.stats at exit
	hasFinal bool
	warnings []string // events of level warn or error
	lost     int      // peer.lost events it logged

	hwmKB     int64   // VmHWM
	cpuSec    float64 // user+system CPU time when the run ended
	sockDrops int64   // kernel drops of its socket (receive buffer full)
	inDrops   int64   // datagrams the lab's loss dropped on the way in; -1 unknown
	inDropsTx int64   // of those, datagrams from the sender
	ruleDrops int64   // the lab's own iptables loss rule counter; -1 unknown
	ctxsw     int64   // context switches of all its threads
}

// groupSpec describes one huddle run: a sender multicasting count
// 1000-byte messages as fast as it can to the receivers.
type groupSpec struct {
	sender       int
	receivers    []int
	count        int
	datagramSize int           // 0: the default
	rate         int           // messages/s; 0: as fast as the window allows
	timeout      time.Duration // for the receivers to deliver everything
	countDrops   bool          // install the input drop counters
}

// groupRun is the outcome of a run.
type groupRun struct {
	spec       groupSpec
	port       int
	sender     *node
	receivers  []*node
	complete   bool          // every receiver's periodic stats reached count (delivered or skipped)
	wall       time.Duration // sender start to the end of the run
	load       string        // the machine's CPU use meanwhile
	background string        // the machine's CPU use just before (other work)

	sharedDrops  int64  // shared loss: datagrams dropped at the sender's egress
	sharedMethod string // and how
}

func (g *groupRun) nodes() []*node { return append([]*node{g.sender}, g.receivers...) }

// runGroup runs huddle on the LAN as spec says and collects the nodes'
// stats, memory and drop counters. The LAN is left as it was found.
func (e *env) runGroup(b *testing.B, l *lab.LAN, spec groupSpec) *groupRun {
	b.Helper()
	bin := e.huddle(b)
	g := &groupRun{spec: spec, port: e.nextPort()}
	addr := "239.192.72.68:" + strconv.Itoa(g.port)
	run := e.nextRun()
	start := func(host int, extra ...string) *node {
		name := fmt.Sprintf("run%d-huddle%d", run, host)
		n := &node{host: host, logPath: filepath.Join(l.LogDir(), name+".json"), inDrops: -1, inDropsTx: -1, ruleDrops: -1}
		// One node per host, as on a LAN: no multicast loopback, which
		// would hand the sender a copy of everything it sends.
		argv := []string{bin, "run", "--control-socket", "off", "--profile", "local", "--id", strconv.Itoa(host), "--iface", lab.Iface,
			"--addr", addr, "--stats-interval", "100ms", "--log-format", "json", "--log-file", n.logPath,
			"--loopback=false"}
		if spec.datagramSize > 0 {
			argv = append(argv, "--datagram-size", strconv.Itoa(spec.datagramSize))
		}
		argv = append(argv, extra...)
		argv = append(argv, strings.Fields(os.Getenv(extraArgsEnv))...)
		p, err := l.StartNode(host, name, argv)
		if err != nil {
			b.Fatal(err)
		}
		n.proc = p
		return n
	}
	stopAll := func() {
		for _, n := range g.nodes() {
			if n != nil {
				n.proc.Signal(syscall.SIGTERM)
			}
		}
		for _, n := range g.nodes() {
			if n != nil {
				n.proc.WaitTimeout(10 * time.Second)
			}
		}
	}
	if spec.countDrops {
		for _, h := range spec.receivers {
			if err := inputCounters(l, h, l.Host(spec.sender).Addr); err != nil {
				b.Logf("no input drop counters on host %d (drops unknown): %v", h, err)
			}
		}
	}
	for _, h := range spec.receivers {
		g.receivers = append(g.receivers, start(h))
	}
	for _, n := range g.receivers {
		if err := waitEvent(n, logs.NodeStarted, 5*time.Second); err != nil {
			stopAll()
			b.Fatal(err)
		}
	}
	b0 := readCPU()
	time.Sleep(300 * time.Millisecond)
	t0, c0 := time.Now(), readCPU()
	g.background = machineLoad(b0, c0)
	sendRate := 10_000_000
	if spec.rate > 0 {
		sendRate = spec.rate
	}
	g.sender = start(spec.sender, "--send-rate", strconv.Itoa(sendRate), "--send-size", "1000",
		"--send-count", strconv.Itoa(spec.count))

	// Wait until every receiver reports all messages delivered.
	deadline := t0.Add(spec.timeout)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		done, exited := true, false
		for _, n := range g.nodes() {
			exited = exited || n.proc.Exited()
		}
		for _, n := range g.receivers {
			n.read()
			if len(n.periodic) == 0 || processed(&n.periodic[len(n.periodic)-1]) < uint64(spec.count) {
				done = false
			}
		}
		if done || exited {
			g.complete = done
			break
		}
	}
	g.wall = time.Since(t0)
	g.load = machineLoad(c0, readCPU())

	// Measure before the processes exit: memory, CPU, socket drops.
	for _, n := range g.nodes() {
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
		n.sockDrops = socketDrops(l, n.host, g.port)
	}
	if spec.countDrops {
		for _, n := range g.receivers {
			if all, tx, err := inputDrops(l, n.host); err == nil {
				n.inDrops, n.inDropsTx = all, tx
			}
			n.ruleDrops = lossRuleDrops(l, n.host)
			l.Exec(n.host, "nft", "delete", "table", "inet", counterTable)
		}
	}
	stopAll()
	for _, n := range g.nodes() {
		n.read()
		if !n.hasFinal {
			b.Errorf("host %d: no node.stats at exit in %s:\n%s", n.host, n.logPath, tail(n.proc.LogPath()))
		}
	}
	return g
}

// read parses the node's log: its stats and warnings.
func (n *node) read() {
	data, err := os.ReadFile(n.logPath)
	if err != nil {
		return
	}
	n.periodic, n.warnings, n.hasFinal, n.lost = n.periodic[:0], n.warnings[:0], false, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasSuffix(line, []byte("}")) {
			continue // a line being written
		}
		var ev event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if ev.Level == "warn" || ev.Level == "error" {
			n.warnings = append(n.warnings, ev.Event)
		}
		if ev.Event == logs.PeerLost {
			n.lost++
		}
		if ev.Event != logs.NodeStats {
			continue
		}
		var s stat
		if json.Unmarshal(line, &s) != nil {
			continue
		}
		if s.Why == "exit" {
			n.final, n.hasFinal = s, true
		} else {
			n.periodic = append(n.periodic, s)
		}
	}
}

// waitEvent polls n's log until it has the event.
func waitEvent(n *node, name string, timeout time.Duration) error {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(n.logPath)
		if bytes.Contains(data, logs.Tag(name)) {
			return nil
		}
		if n.proc.Exited() {
			break
		}
	}
	return fmt.Errorf("host %d: no %s within %v:\n%s", n.host, name, timeout, tail(n.proc.LogPath()))
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// throughput is a receiver's delivery rate from its periodic stats: from
// the first sample with progress to the moment progress reached count,
// interpolated within the 100 ms sample interval at the rate of the
// samples before; when it never did, up to the last sample. Progress is
// messages delivered or skipped (so a run that skips ends too), the rate
// counts delivered messages only.
type throughput struct {
	rate     float64       // delivered messages per second
	span     time.Duration // the time measured over
	msgs     uint64        // the messages delivered within it
	complete bool
}

func deliveryRate(ss []stat, count uint64, progress, value func(*stat) uint64) throughput {
	i0 := -1
	for i := range ss {
		if progress(&ss[i]) > 0 {
			i0 = i
			break
		}
	}
	if i0 < 0 {
		return throughput{}
	}
	var tp throughput
	t0, p0, v0 := ss[i0].Time, progress(&ss[i0]), value(&ss[i0])
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
		end, tp.msgs = last.Time, value(last)-v0
	case j == i0: // everything within one interval: a lower bound
		prev := t0.Add(-100 * time.Millisecond)
		if i0 > 0 {
			prev = ss[i0-1].Time
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
			r = float64(pp-p0) / p.Time.Sub(t0).Seconds()
		} else {
			r = float64(progress(&ss[j])-pp) / ss[j].Time.Sub(p.Time).Seconds()
		}
		end = ss[j].Time
		if r > 0 {
			if e := p.Time.Add(time.Duration(float64(count-pp) / r * float64(time.Second))); e.Before(end) {
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

func delivered(s *stat) uint64 { return s.MsgsDelivered }

// appDelivered is what of msgs_delivered reached the application: not
// the members' messages addressed to others, nor the election's and the
// lock's, which the node handles itself.
func appDelivered(s *stat) uint64 {
	return s.MsgsDelivered - min(s.ForOthers+s.ProtocolMsgs, s.MsgsDelivered)
}
func processed(s *stat) uint64 { return s.MsgsDelivered + s.Skipped }
func sent(s *stat) uint64      { return s.MsgsSent }
