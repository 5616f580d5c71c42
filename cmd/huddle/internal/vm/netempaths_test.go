package vm_test

// Every netem path of issue 29, for real, in one VM boot: the guest runs
// the scenarios one after another, each on a fresh virtual LAN (new
// namespaces, a new bridge), and leaves each one's logs and tc -s
// counters in /out/<scenario>/; TestNetemPathsInVM then checks every
// scenario from them, as a subtest.
//
// Against false suspicions (the guest's CPU is emulated, its clocks keep
// real time): every node runs with --suspect-timeout 2s and --join-timeout
// 2s (3 s each in the groups of 8), the senders are paced at 10 to 150
// messages a second, and the groups are as small as each question allows.
// Every scenario but the delay's, which kills a node on purpose, requires
// that no node suspected another.

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/vm"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/netmodel"
)

// pathsPrelude defines the guest script's helpers. Every scenario runs in
// its own directory /out/NAME with a fresh LAN of hosts h1..hN on br0
// (veth pairs, eth0 in each host with 10.77.0.i/24 and a multicast route,
// as netemScript and the lan package build it). A setup command that
// fails is written to errors.txt, which fails the scenario's subtest.
const pathsPrelude = `
COMMON="--iface eth0 --addr 239.192.72.68:7468 --control-socket off --trace-deliveries"
# now prints the guest's clock in seconds with microseconds (busybox's
# date has no %N).
now() { adjtimex | awk '/tv_sec/ {s = $2} /tv_usec/ {u = $2} END {printf "%d.%06d\n", s, u}'; }
must() { "$@" || echo "failed: $*" >> errors.txt; }
lan() {
	must ip link add br0 type bridge stp_state 0 mcast_snooping 0
	must ip link set br0 up
	for i in $(seq $1); do
		must ip netns add h$i
		must ip link add port$i type veth peer name eth0 address 02:00:00:00:00:$(printf %02x $i) netns h$i
		must ip link set port$i master br0 up
		must ip -n h$i link set lo up
		must ip -n h$i addr add 10.77.0.$i/24 dev eth0
		must ip -n h$i link set eth0 up
		must ip -n h$i route add 224.0.0.0/4 dev eth0
	done
}
unlan() {
	for i in $(seq $1); do ip netns del h$i; done
	ip link del br0
}
# ingress HOST NETEM...: netem on what HOST receives, through an ifb
# device (docs/experiments.md, "netem on the receive side").
ingress() {
	h=$1; shift
	must ip -n h$h link add ifb0 type ifb
	must ip -n h$h link set ifb0 up
	must tc -n h$h qdisc add dev eth0 ingress
	must tc -n h$h filter add dev eth0 parent ffff: matchall action mirred egress redirect dev ifb0
	must tc -n h$h qdisc add dev ifb0 root netem "$@"
}
# egress HOST NETEM...: netem on what HOST sends.
egress() { h=$1; shift; must tc -n h$h qdisc add dev eth0 root netem "$@"; }
# toward HOST NETEM...: netem on the bridge's port toward HOST: what HOST
# receives, without an ifb.
toward() { h=$1; shift; must tc qdisc add dev port$h root netem "$@"; }
# start ID FLAGS...: a node on host ID.
pids=
start() {
	i=$1; shift
	/usr/sbin/ip netns exec h$i /bin/huddle run --id $i --log-file $PWD/node$i.json $COMMON "$@" 2> node$i.log &
	eval pid$i=$!
	pids="$pids $!"
}
# stop N: the nodes' peak memory to mem.txt, then SIGTERM to every node,
# and every host's qdiscs' counters to tcI.txt.
stop() {
	for i in $(seq $1); do
		eval p=\$pid$i
		[ -n "$p" ] && [ -e /proc/$p/status ] && echo "node$i $(grep VmHWM /proc/$p/status)" >> mem.txt
	done
	kill -TERM $pids 2>/dev/null
	wait
	pids=
	for i in $(seq $1); do
		eval pid$i=
		tc -n h$i -s qdisc show > tc$i.txt
		tc -s qdisc show dev port$i > port$i.txt
	done
}
`

// pathScenario is one scenario of TestNetemPathsInVM: a guest script
// fragment, run in /out/name on a fresh LAN of hosts, and its check.
type pathScenario struct {
	name   string
	hosts  int
	script string
	secs   int // about how long it takes in the guest
	check  func(t *testing.T, dir string)
}

// lossScenario: host 1 sends fifo, 1000-byte messages, 50 a second;
// 5 % random loss at every receiver's ingress (through ifb: independent
// losses) or at the sender's egress (every receiver loses the same
// datagrams). At 100 a second the emulated CPU could not carry 8 members
// with ifb: the sender's window held it to 57 a second, the nodes paused
// 200 times a minute each, recovery's p99 reached 2 s.
func lossScenario(path string, hosts int, fig *lossFigures) pathScenario {
	const rate = lossRate
	run := lossRun()
	flags := nodeFlags(hosts)
	var b strings.Builder
	if path == "ingress" {
		fmt.Fprintf(&b, "for i in $(seq 2 %d); do ingress $i loss 5%%; done\n", hosts)
	} else {
		b.WriteString("egress 1 loss 5%\n")
	}
	fmt.Fprintf(&b, "start 1 %s --send-rate %d --send-size 1000\n", flags, rate)
	fmt.Fprintf(&b, "for i in $(seq 2 %d); do start $i %s; done\n", hosts, flags)
	fmt.Fprintf(&b, "sleep %d\nstop %d\n", run, hosts)
	return pathScenario{
		name: fmt.Sprintf("%s%d", path, hosts), hosts: hosts, script: b.String(), secs: run + 8,
		check: func(t *testing.T, dir string) {
			r := checkLogs(t, dir, hosts, nil)
			requireNoSuspicion(t, dir, hosts)
			var drops int64
			if path == "ingress" {
				for i := 2; i <= hosts; i++ {
					d := netemDropsOn(t, dir, i, "ifb0")
					if d == 0 {
						t.Errorf("host %d: netem on ifb0 dropped nothing", i)
					}
					drops += d
				}
			} else {
				drops = netemDropsOn(t, dir, 1, "eth0")
				if drops == 0 {
					t.Errorf("host 1: netem on eth0 dropped nothing")
				}
			}
			var nacks, repairs, gaps, delivered, pauses, views, p99, sent int64
			var span time.Duration
			for _, l := range r.Lives {
				s := lastStats(t, l)
				nacks += s.Get("nacks_sent")
				repairs += s.Get("repairs_sent")
				pauses += s.Get("pauses")
				views = max(views, int64(len(l.Views)))
				if l.Node == 1 {
					sent, span = s.Get("msgs_sent"), l.LastTime.Sub(l.Started)
					continue
				}
				p99 = max(p99, s.Get("recovery_p99_us"))
				g := s.Get("gaps_detected")
				if g == 0 || s.Get("repairs_recv") == 0 {
					t.Errorf("%s: gaps_detected %d, repairs_recv %d: the loss left no trace", l, g, s.Get("repairs_recv"))
				}
				if s.Get("skipped") != 0 {
					t.Errorf("%s: %d messages skipped", l, s.Get("skipped"))
				}
				gaps += g
				delivered += int64(len(l.Delivers))
			}
			// A loss: a datagram netem dropped (of any kind: data,
			// session, NACK, repair), as BenchmarkLAN's loss5paced and
			// sharedpaced count them; and a lost data message: the
			// receivers' gaps (their mean for the shared loss, where
			// each receiver detects each loss, as sharedscale counts).
			lostMsgs := float64(gaps)
			if path == "egress" {
				lostMsgs /= float64(hosts - 1)
			}
			f := lossFigure{path: path, members: hosts, drops: drops, lostMsgs: lostMsgs, nacks: nacks, repairs: repairs,
				delivered: delivered, pauses: pauses, views: views, p99: time.Duration(p99) * time.Microsecond,
				sendRate: float64(sent) / span.Seconds()}
			t.Logf("%s", f)
			fig.add(f)
			if drops < 10 {
				t.Errorf("netem dropped %d datagrams: too few for a figure", drops)
			}
		},
	}
}

// nodeFlags are the flags of every node in a group of n: a suspect
// timeout and join timeout of 2 s (3 s for more than 4 members), which
// keep the emulated CPU's delays from causing suspicions.
func nodeFlags(n int) string {
	if n > 4 {
		return "--suspect-timeout 3s --join-timeout 3s --stats-interval 2s"
	}
	return "--suspect-timeout 2s --join-timeout 2s --stats-interval 2s"
}

// lossRate is the loss scenarios' sender's rate, messages a second.
const lossRate = 50

type lossFigure struct {
	path                     string
	members                  int
	drops                    int64
	lostMsgs                 float64
	nacks, repairs           int64
	delivered, pauses, views int64
	p99                      time.Duration
	sendRate                 float64 // the sender's messages a second, over its life
}

func (f lossFigure) String() string {
	return fmt.Sprintf("%s loss 5%%, %d members: %d datagrams dropped by netem, %.1f data messages lost; %d NACKs, %d repairs: "+
		"per lost message %.2f / %.2f, per lost datagram %.2f / %.2f; recovery p99 %v (the receivers' highest); the sender sent %.1f msg/s; %d deliveries at the receivers; at most %d views a node; %d pauses",
		f.path, f.members, f.drops, f.lostMsgs, f.nacks, f.repairs,
		ratio(f.nacks, f.lostMsgs), ratio(f.repairs, f.lostMsgs), ratio(f.nacks, float64(f.drops)), ratio(f.repairs, float64(f.drops)),
		f.p99.Round(100*time.Microsecond), f.sendRate, f.delivered, f.views, f.pauses)
}

// lossRun is how long the loss scenarios run, in seconds: 12, or
// $HUDDLE_VM_LOSS_RUN for steadier figures.
func lossRun() int {
	if n, err := strconv.Atoi(os.Getenv("HUDDLE_VM_LOSS_RUN")); err == nil && n > 0 {
		return n
	}
	return 12
}

func ratio(n int64, d float64) float64 {
	if d == 0 {
		return math.NaN()
	}
	return float64(n) / d
}

type lossFigures struct{ rows []lossFigure }

func (fs *lossFigures) add(f lossFigure) { fs.rows = append(fs.rows, f) }

// The bursty losses: each receiver's ingress with its own burst length
// at geLoss. Burst 1 is netem's random loss, the others the simple
// Gilbert model (loss gemodel p r: the bad state drops everything, the
// good one nothing). 10 % rather than 5 % for enough bursts to measure
// in a short run.
var geBursts = []float64{1, 2, 4, 8}

const (
	geLoss  = 0.10
	gePings = 3000
)

// geParams returns netem's gemodel parameters p and r, in percent rounded
// as tc is given them, for loss in bursts of burst.
func geParams(loss, burst float64) (p, r float64) {
	g, _ := netmodel.NewGilbert(loss, burst)
	return math.Round(g.P*1e6) / 1e4, math.Round(g.R*1e6) / 1e4
}

// geExpect returns the long-run loss and the mean length of a run of
// consecutive drops of netem's Gilbert–Elliott model with transition
// probabilities p (good → bad) and r (bad → good) and loss probabilities
// lossBad (1-h) in the bad state and lossGood (1-k) in the good one, all
// fractions; and the asymptotic variance per packet of the loss's sample
// mean (its standard error is the root of that over the packets' count),
// from the chain's second eigenvalue 1-p-r (exact for the simple model).
func geExpect(p, r, lossBad, lossGood float64) (loss, burst, variance float64) {
	piB := p / (p + r)
	piG := 1 - piB
	loss = piG*lossGood + piB*lossBad
	// P(this packet and the next dropped): the state moves first, then
	// the packet is dropped as its new state says (netem's order).
	both := piG*lossGood*((1-p)*lossGood+p*lossBad) + piB*lossBad*(r*lossGood+(1-r)*lossBad)
	burst = loss / (loss - both)
	lambda := 1 - p - r
	variance = loss * (1 - loss) * (1 + lambda) / (1 - lambda)
	return loss, burst, variance
}

func geNetem(burst float64) string {
	if burst <= 1 {
		return fmt.Sprintf("loss %g%%", geLoss*100)
	}
	p, r := geParams(geLoss, burst)
	return fmt.Sprintf("loss gemodel %g%% %g%%", p, r)
}

// geScenario: host 1 sends; hosts 2.. each lose geLoss of what they
// receive, in bursts of geBursts. First each receiver pings host 1
// gePings times through its ifb (the replies cross the netem, the
// requests leave clean), which measures the bursts by the replies'
// sequence numbers; then the nodes run over the same qdiscs.
func geScenario() pathScenario {
	hosts := 1 + len(geBursts)
	flags := nodeFlags(4)
	var b strings.Builder
	b.WriteString("# permanent neighbours: no ARP through the lossy ingress\n")
	for i := 2; i <= hosts; i++ {
		fmt.Fprintf(&b, "must ip -n h%d neigh replace 10.77.0.1 lladdr 02:00:00:00:00:01 dev eth0 nud permanent\n", i)
		fmt.Fprintf(&b, "must ip -n h1 neigh replace 10.77.0.%d lladdr 02:00:00:00:00:%02x dev eth0 nud permanent\n", i, i)
		fmt.Fprintf(&b, "ingress %d %s\n", i, geNetem(geBursts[i-2]))
	}
	for i := 2; i <= hosts; i++ {
		fmt.Fprintf(&b, "/usr/sbin/ip netns exec h%d ping -c %d -i 0.002 -w 30 10.77.0.1 > ping%d.txt 2>&1 &\n", i, gePings, i)
	}
	b.WriteString("wait\n")
	for i := 2; i <= hosts; i++ {
		fmt.Fprintf(&b, "tc -n h%d -s qdisc show dev ifb0 > tcping%d.txt\n", i, i)
	}
	fmt.Fprintf(&b, "start 1 %s --send-rate %d --send-size 1000\n", flags, lossRate)
	fmt.Fprintf(&b, "for i in $(seq 2 %d); do start $i %s; done\n", hosts, flags)
	fmt.Fprintf(&b, "sleep 12\nstop %d\n", hosts)
	return pathScenario{
		name: "gemodel", hosts: hosts, script: b.String(), secs: 30,
		check: func(t *testing.T, dir string) {
			r := checkLogs(t, dir, hosts, nil)
			requireNoSuspicion(t, dir, hosts)
			lives := livesByNode(r)
			for i := 2; i <= hosts; i++ {
				burst := geBursts[i-2]
				var p, rr float64
				if burst <= 1 {
					p, rr = geLoss*100, 100-geLoss*100 // independent: a chain that forgets
				} else {
					p, rr = geParams(geLoss, burst)
				}
				wantLoss, wantBurst, variance := geExpect(p/100, rr/100, 1, 0)
				// From ping: the replies missing, and their runs.
				seqs := pingSeqs(t, filepath.Join(dir, fmt.Sprintf("ping%d.txt", i)))
				lost, runs := missingRuns(seqs, gePings)
				pingLoss := float64(lost) / gePings
				meanBurst := math.NaN()
				if runs > 0 {
					meanBurst = float64(lost) / float64(runs)
				}
				// From netem's counters, over the pings and the nodes' run.
				sent, dropped := qdiscCounts(t, filepath.Join(dir, fmt.Sprintf("tc%d.txt", i)), "netem", "ifb0")
				netemLoss := float64(dropped) / float64(sent+dropped)
				// Tolerances: 4 standard errors. The loss's, of a Markov
				// chain's sample mean; the burst length's, of the mean of
				// runs geometric with mean B (variance B(B-1)).
				lossTol := 4 * math.Sqrt(variance/float64(sent+dropped))
				pingLossTol := 4 * math.Sqrt(variance/gePings)
				burstTol := 4*math.Sqrt(wantBurst*(wantBurst-1)/float64(max(runs, 1))) + 0.05
				s := lastStats(t, lives[uint64(i)])
				t.Logf("host %d, netem %q: model loss %.2f%%, mean burst %.2f; netem's counters: %d of %d dropped, %.2f%% (±%.2f%%); ping: %d of %d lost, %.2f%% (±%.2f%%), in %d runs, mean %.2f (±%.2f); the node: gaps %d, NACKs %d, recovery p50 %.1f ms, p99 %.1f ms, max %.1f ms",
					i, geNetem(burst), 100*wantLoss, wantBurst, dropped, sent+dropped, 100*netemLoss, 100*lossTol,
					lost, gePings, 100*pingLoss, 100*pingLossTol, runs, meanBurst, burstTol,
					s.Get("gaps_detected"), s.Get("nacks_sent"),
					float64(s.Get("recovery_p50_us"))/1000, float64(s.Get("recovery_p99_us"))/1000, float64(s.Get("recovery_max_us"))/1000)
				if math.Abs(netemLoss-wantLoss) > lossTol {
					t.Errorf("host %d: netem's loss %.2f%%, the model's %.2f%% ± %.2f%%", i, 100*netemLoss, 100*wantLoss, 100*lossTol)
				}
				if math.Abs(pingLoss-wantLoss) > pingLossTol {
					t.Errorf("host %d: ping's loss %.2f%%, the model's %.2f%% ± %.2f%%", i, 100*pingLoss, 100*wantLoss, 100*pingLossTol)
				}
				if !(math.Abs(meanBurst-wantBurst) <= burstTol) {
					t.Errorf("host %d: mean burst %.2f in %d runs, the model's %.2f ± %.2f", i, meanBurst, runs, wantBurst, burstTol)
				}
				if s.Get("gaps_detected") == 0 || s.Get("repairs_recv") == 0 || s.Get("skipped") != 0 {
					t.Errorf("host %d: gaps_detected %d, repairs_recv %d, skipped %d", i, s.Get("gaps_detected"), s.Get("repairs_recv"), s.Get("skipped"))
				}
			}
		},
	}
}

// pingSeqs returns the sequence numbers of the replies busybox's ping
// printed ("64 bytes from 10.77.0.1: seq=12 ttl=64 time=0.5 ms").
func pingSeqs(t *testing.T, path string) map[int]bool {
	t.Helper()
	re := regexp.MustCompile(`seq=(\d+)`)
	seqs := map[int]bool{}
	for _, m := range re.FindAllStringSubmatch(readFile(t, path), -1) {
		n, _ := strconv.Atoi(m[1])
		seqs[n] = true
	}
	return seqs
}

// missingRuns counts the sequence numbers 0..count-1 missing from seqs,
// and the runs of consecutive missing ones.
func missingRuns(seqs map[int]bool, count int) (lost, runs int) {
	in := false
	for i := 0; i < count; i++ {
		if seqs[i] {
			in = false
			continue
		}
		lost++
		if !in {
			runs++
		}
		in = true
	}
	return lost, runs
}

// Delay and jitter: every host receives through netem delay D ± J (on the
// bridge's port toward it), against a baseline without netem. Each of
// three nodes sends 10 messages a second (100 ms apart, more than 2J: the
// jitter reorders none of a sender's messages), fifo; node 3 is killed
// with SIGKILL after 6 s, and the survivors run 5 s more.
const (
	pathDelay  = 100 * time.Millisecond
	pathJitter = 20 * time.Millisecond
)

func delayScript(netem string) string {
	var b strings.Builder
	if netem != "" {
		fmt.Fprintf(&b, "for i in 1 2 3; do toward $i %s; done\n", netem)
	}
	flags := nodeFlags(3) + " --send-rate 10 --send-size 200"
	fmt.Fprintf(&b, "for i in 1 2 3; do start $i %s; done\n", flags)
	b.WriteString("sleep 6\nnow > kill.txt\nkill -KILL $pid3\npid3=\nsleep 5\nstop 3\n")
	return b.String()
}

// delayRun is what a delay scenario measured.
type delayRun struct {
	lat            []time.Duration // send → deliver at another node, before the kill
	detect, failov time.Duration   // kill → first suspicion of node 3; kill → first view without it
	ok             bool
}

func measureDelay(t *testing.T, dir string) delayRun {
	t.Helper()
	killAt := readKill(t, filepath.Join(dir, "kill.txt"))
	r := checkLogs(t, dir, 3, []logcheck.Death{{Node: 3, At: killAt}})
	lives := livesByNode(r)
	// From the first view of all three.
	var all time.Time
	for _, l := range r.Lives {
		for _, v := range l.Views {
			if len(v.Members) == 3 {
				if v.Time.After(all) {
					all = v.Time
				}
				break
			}
		}
	}
	if all.IsZero() {
		t.Errorf("no view of three members")
		return delayRun{}
	}
	type key struct{ from, seq uint64 }
	sent := map[key]time.Time{}
	for _, l := range r.Lives {
		for _, s := range l.Sends {
			sent[key{l.Node, s.Seq}] = s.Time
		}
	}
	var d delayRun
	for _, l := range r.Lives {
		for _, dv := range l.Delivers {
			st, ok := sent[key{dv.From, dv.Seq}]
			if !ok || dv.From == l.Node || st.Before(all) || !st.Before(killAt.Add(-time.Second)) {
				continue
			}
			d.lat = append(d.lat, dv.Time.Sub(st))
		}
	}
	slices.Sort(d.lat)
	// Suspicions: only of node 3, after its kill.
	var detect time.Time
	for i := 1; i <= 2; i++ {
		for _, e := range readEvents(t, filepath.Join(dir, fmt.Sprintf("node%d.json", i))) {
			if e.Name != logs.MemberSuspected {
				continue
			}
			m, _ := e.Uint("member")
			if m != 3 || e.Time.Before(killAt) {
				t.Errorf("node %d suspected node %d at %v (node 3 killed at %v): a false suspicion", i, m, e.Time.Format(time.StampMicro), killAt.Format(time.StampMicro))
				continue
			}
			if detect.IsZero() || e.Time.Before(detect) {
				detect = e.Time
			}
		}
	}
	var view time.Time
	for i := uint64(1); i <= 2; i++ {
		for _, v := range lives[i].Views {
			if v.Time.After(killAt) && !slices.Contains(v.Members, 3) {
				if view.IsZero() || v.Time.Before(view) {
					view = v.Time
				}
				break
			}
		}
	}
	if detect.IsZero() || view.IsZero() {
		t.Errorf("after node 3's kill: suspected at %v, a view without it at %v; what the survivors logged since:\n%s", detect, view, survivorsSince(t, dir, killAt))
		return d
	}
	d.detect, d.failov, d.ok = detect.Sub(killAt), view.Sub(killAt), len(d.lat) > 50
	if !d.ok {
		t.Errorf("%d latencies measured: too few", len(d.lat))
	}
	t.Logf("%d latencies: p50 %v, p90 %v, p99 %v; node 3 killed, suspected %v later, a view without it %v later",
		len(d.lat), quantile(d.lat, 0.5), quantile(d.lat, 0.9), quantile(d.lat, 0.99), d.detect.Round(time.Millisecond), d.failov.Round(time.Millisecond))
	return d
}

// survivorsSince returns what nodes 1 and 2 logged from a second before
// at on, but the data messages and the stats: what a failed failover's
// report shows.
func survivorsSince(t *testing.T, dir string, at time.Time) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= 2; i++ {
		n := 0
		for _, e := range readEvents(t, filepath.Join(dir, fmt.Sprintf("node%d.json", i))) {
			if e.Time.Before(at.Add(-time.Second)) || e.Name == logs.Send || e.Name == logs.Deliver || e.Name == logs.NodeStats {
				continue
			}
			if n++; n > 60 {
				b.WriteString("  …\n")
				break
			}
			fmt.Fprintf(&b, "  %+.3fs %s\n", e.Time.Sub(at).Seconds(), e)
		}
	}
	return b.String()
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(q*float64(len(ds))))].Round(100 * time.Microsecond)
}

func readKill(t *testing.T, path string) time.Time {
	t.Helper()
	f, err := strconv.ParseFloat(strings.TrimSpace(readFile(t, path)), 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// Reordering and duplication: every host receives through netem that
// delays 3 datagrams of 4 by 40 ms and lets the fourth overtake them, and
// duplicates 5 %; three nodes send in total order.
const reorderNetem = "delay 40ms reorder 25% 50% duplicate 5%"

func reorderScenario() pathScenario {
	flags := nodeFlags(3) + " --send-rate 30 --send-size 200 --send-order total"
	script := fmt.Sprintf("for i in 1 2 3; do toward $i %s; done\nfor i in 1 2 3; do start $i %s; done\nsleep 10\nstop 3\n", reorderNetem, flags)
	return pathScenario{
		name: "reorder", hosts: 3, script: script, secs: 15,
		check: func(t *testing.T, dir string) {
			r := checkLogs(t, dir, 3, nil)
			requireNoSuspicion(t, dir, 3)
			var dups, gaps, ahead int64
			for _, l := range r.Lives {
				s := lastStats(t, l)
				t.Logf("%s: %d delivered (%d in total order); duplicates %d, gaps_detected %d, gaps_recovered %d, nacks_sent %d, nacks_ahead %d, repairs_recv %d, skipped %d",
					l, len(l.Delivers), s.Get("ordered_delivered"), s.Get("duplicates"), s.Get("gaps_detected"), s.Get("gaps_recovered"),
					s.Get("nacks_sent"), s.Get("nacks_ahead"), s.Get("repairs_recv"), s.Get("skipped"))
				dups, gaps, ahead = dups+s.Get("duplicates"), gaps+s.Get("gaps_detected"), ahead+s.Get("nacks_ahead")
				if s.Get("skipped") != 0 {
					t.Errorf("%s: %d messages skipped", l, s.Get("skipped"))
				}
				if len(l.Delivers) < 500 {
					t.Errorf("%s delivered %d messages: want at least 500", l, len(l.Delivers))
				}
			}
			// netem counts no reorders: a reordered message is one that
			// arrived after a later one of its sender, a gap found and
			// then filled (by the late original or a repair, whose other
			// copy is a duplicate).
			if dups == 0 || gaps == 0 {
				t.Errorf("duplicates %d, gaps (reorders) %d: netem's duplication and reordering left no trace", dups, gaps)
			}
		},
	}
}

// A rate limit: host 1's egress carries 400 kbit/s (about 48 messages of
// 1000 bytes a second); it tries to send 150 a second with a send window
// of 32. Flow control must hold it to the link's rate, with at most 32
// unstable messages, nothing lost and nothing dropped at the qdisc.
const (
	rateWindow = 32
	rateSend   = 150
	rateRun    = 12
)

func rateScenario() pathScenario {
	script := fmt.Sprintf("egress 1 rate 400kbit\nstart 1 %[1]s --send-rate %[2]d --send-size 1000 --send-window %[3]d\n"+
		"for i in 2 3; do start $i %[1]s; done\nsleep %[4]d\nstop 3\n", nodeFlags(3)+" --stats-interval 1s", rateSend, rateWindow, rateRun)
	return pathScenario{
		name: "rate", hosts: 3, script: script, secs: 17,
		check: func(t *testing.T, dir string) {
			r := checkLogs(t, dir, 3, nil)
			requireNoSuspicion(t, dir, 3)
			lives := livesByNode(r)
			sender := lives[1]
			var maxUnstable, maxBuffered int64
			for _, s := range sender.Stats {
				maxUnstable, maxBuffered = max(maxUnstable, s.Get("unstable")), max(maxBuffered, s.Get("buffered"))
			}
			s := lastStats(t, sender)
			sent, dropped := qdiscCounts(t, filepath.Join(dir, "tc1.txt"), "netem", "eth0")
			mem := peakMemory(t, filepath.Join(dir, "mem.txt"))
			span := sender.LastTime.Sub(sender.Started).Seconds()
			perSec := float64(s.Get("msgs_sent")) / span
			t.Logf("sender: %d messages sent in %.1f s (%.0f/s of the %d/s asked), window_full %d, unstable at most %d (window %d), buffered at most %d; netem sent %d datagrams, dropped %d; peak RSS %v kB",
				s.Get("msgs_sent"), span, perSec, rateSend, s.Get("window_full"), maxUnstable, rateWindow, maxBuffered, sent, dropped, mem)
			if s.Get("window_full") == 0 || perSec > 0.6*rateSend {
				t.Errorf("the rate limit did not hold the sender back: window_full %d, %.0f messages a second", s.Get("window_full"), perSec)
			}
			if maxUnstable > rateWindow {
				t.Errorf("unstable reached %d, over the window of %d", maxUnstable, rateWindow)
			}
			if dropped != 0 {
				t.Errorf("netem dropped %d datagrams: its queue overflowed", dropped)
			}
			for i := uint64(1); i <= 3; i++ {
				if g := lastStats(t, lives[i]).Get("skipped"); g != 0 {
					t.Errorf("node %d skipped %d messages", i, g)
				}
			}
			for node, kb := range mem {
				if kb > 100<<10 {
					t.Errorf("%s: peak RSS %d kB, over 100 MB", node, kb)
				}
			}
			if len(mem) != 3 {
				t.Errorf("peak RSS of %d nodes, want 3", len(mem))
			}
		},
	}
}

// TestNetemPathsInVM runs every netem path of issue 29 in one VM boot,
// and checks each from the logs and netem's counters:
//
//   - ingress4, ingress8, egress4, egress8: 5 % random loss at each
//     receiver's ingress (ifb), or at the sender's egress (shared), in
//     groups of 4 and 8: every logcheck check, gaps and repairs at every
//     receiver, netem's drops; NACKs and repairs per loss are logged;
//   - gemodel: 10 % loss in bursts of 1, 2, 4 and 8 at four receivers:
//     the loss (netem's counters, ping) and the mean burst (ping's
//     sequence numbers) within 4 standard errors of the model's, and
//     the recovery p99 against the burst length;
//   - delay0, delay: latency shifts by the configured delay (and no
//     more than delay + jitter), the failover by the detection's shift
//     and the flush's hops, each delayed,
//     and no node suspects another but the one killed;
//   - reorder: every message once and in order, duplicates and gaps
//     counted;
//   - rate: a 400 kbit/s egress: the window holds the sender back,
//     nothing is lost, memory stays bounded.
func TestNetemPathsInVM(t *testing.T) {
	needVM(t)
	bin := staticHuddle(t)
	figs := &lossFigures{}
	var base, delayed delayRun
	scenarios := []pathScenario{
		lossScenario("ingress", 4, figs),
		lossScenario("egress", 4, figs),
		lossScenario("ingress", 8, figs),
		lossScenario("egress", 8, figs),
		geScenario(),
		{name: "delay0", hosts: 3, script: delayScript(""), secs: 15, check: func(t *testing.T, dir string) { base = measureDelay(t, dir) }},
		{name: "delay", hosts: 3, script: delayScript(fmt.Sprintf("delay %v %v", pathDelay, pathJitter)), secs: 15, check: func(t *testing.T, dir string) {
			delayed = measureDelay(t, dir)
			checkDelayShift(t, base, delayed)
		}},
		reorderScenario(),
		rateScenario(),
	}
	if only := os.Getenv("HUDDLE_VM_PATHS"); only != "" {
		keep := strings.Split(only, ",")
		scenarios = slices.DeleteFunc(scenarios, func(s pathScenario) bool { return !slices.Contains(keep, s.name) })
	}
	var script strings.Builder
	script.WriteString(pathsPrelude)
	secs := 30 // the boot, the initramfs, the files' way back
	for _, s := range scenarios {
		secs += s.secs
		fmt.Fprintf(&script, "\n# --- %[1]s\necho \"scenario %[1]s: $(now)\"\nmkdir -p /out/%[1]s\ncd /out/%[1]s\nlan %[2]d\n%[3]s\ncd /out\nunlan %[2]d\n", s.name, s.hosts, s.script)
	}
	script.WriteString("echo \"done: $(now)\"\n")
	out := os.Getenv("HUDDLE_VM_OUT")
	if out == "" {
		out = t.TempDir()
	}
	start := time.Now()
	res, err := vm.Run(context.Background(), vm.Options{
		Script:  script.String(),
		Files:   map[string]string{"/bin/huddle": bin},
		OutDir:  out,
		Timeout: time.Duration(secs) * 3 / 2 * time.Second,
		Logf:    t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM: booted in %v, ran %v in all (%v with the initramfs)",
		res.Boot.Round(time.Millisecond), res.Elapsed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if res.Status != 0 {
		t.Fatalf("the script exited %d:\n%s", res.Status, res.Output)
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			dir := filepath.Join(out, s.name)
			if b, err := os.ReadFile(filepath.Join(dir, "errors.txt")); err == nil {
				t.Fatalf("the scenario's setup failed:\n%s", b)
			}
			s.check(t, dir)
		})
	}
	t.Logf("NACKs / repairs per loss (emulated CPU; 5 %% random loss, %d msg/s of 1000 bytes from one sender):", lossRate)
	for _, f := range figs.rows {
		t.Logf("  %s", f)
	}
}

// checkDelayShift: the delay shifts the latency's median by the delay
// (the jitter is symmetric), within 20 ms, and its p90 by at most the
// delay and the jitter and 30 ms (not the p99: of the run's 150-odd
// latencies that is the second highest, which one stall of the emulated
// CPU decides: 178 ms once in CI with a p90 of 132); the detection (kill → the first
// suspicion) by the delay, the last datagram's lateness, within 150 ms
// (the heartbeat and the suspicion's tick make each run's detection
// vary); the failover (kill → the first view without the victim) by the
// detection's shift and the flush's four one-way hops, each delayed
// (proposal, reports, cut, confirmations: the coordinator installs once
// the last comes back), and at most one hop more (a suspicion reported to
// the coordinator), within the jitter on each hop and 50 ms: what the
// delay explains and no more (measured: 410, 500 and 505 ms for 100 ms).
func checkDelayShift(t *testing.T, base, delayed delayRun) {
	t.Helper()
	if !base.ok || !delayed.ok {
		t.Fatalf("the baseline or the delayed run measured nothing")
	}
	p50 := quantile(delayed.lat, 0.5) - quantile(base.lat, 0.5)
	p90 := quantile(delayed.lat, 0.9) - quantile(base.lat, 0.9)
	fo := delayed.failov - base.failov
	det := delayed.detect - base.detect
	t.Logf("netem delay %v ± %v: latency p50 shifted %v, p90 %v; detection %v, failover %v",
		pathDelay, pathJitter, p50, p90, det.Round(time.Millisecond), fo.Round(time.Millisecond))
	if p50 < pathDelay-20*time.Millisecond || p50 > pathDelay+20*time.Millisecond {
		t.Errorf("latency p50 shifted %v, want %v ± 20ms", p50, pathDelay)
	}
	if det < pathDelay-150*time.Millisecond || det > pathDelay+150*time.Millisecond {
		t.Errorf("detection shifted %v, want %v ± 150ms", det, pathDelay)
	}
	if p90 > pathDelay+pathJitter+30*time.Millisecond {
		t.Errorf("latency p90 shifted %v, more than the delay and jitter (%v) and 30ms", p90, pathDelay+pathJitter)
	}
	lo, hi := det+4*(pathDelay-pathJitter)-50*time.Millisecond, det+5*(pathDelay+pathJitter)+50*time.Millisecond
	if fo < lo || fo > hi {
		t.Errorf("failover shifted %v, want %v to %v: the detection's shift (%v) and 4 to 5 one-way hops of %v ± %v, and 50ms",
			fo.Round(time.Millisecond), lo.Round(time.Millisecond), hi.Round(time.Millisecond), det.Round(time.Millisecond), pathDelay, pathJitter)
	}
}

// checkLogs loads node1..nodeN.json of dir and requires every logcheck
// check to pass.
func checkLogs(t *testing.T, dir string, n int, deaths []logcheck.Death) *logcheck.Run {
	t.Helper()
	var paths []string
	for i := 1; i <= n; i++ {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("node%d.json", i)))
	}
	r, err := logcheck.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.CheckAll(logcheck.AllOptions{Skew: 20 * time.Millisecond, Deaths: deaths}) {
		if !v.OK() {
			t.Errorf("%s check failed: %s", v.Name, v.Text)
		}
	}
	if len(r.Lives) != n {
		t.Errorf("%d lives in the logs, want %d", len(r.Lives), n)
	}
	return r
}

func requireNoSuspicion(t *testing.T, dir string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if k := suspicions(t, filepath.Join(dir, fmt.Sprintf("node%d.json", i))); k != 0 {
			t.Errorf("node %d suspected a member %d times: emulation or netem caused a false suspicion", i, k)
		}
	}
}

func livesByNode(r *logcheck.Run) map[uint64]*logcheck.Life {
	m := map[uint64]*logcheck.Life{}
	for _, l := range r.Lives {
		m[l.Node] = l
	}
	return m
}

func lastStats(t *testing.T, l *logcheck.Life) logcheck.Stats {
	t.Helper()
	if l == nil {
		t.Fatalf("a node left no log")
	}
	s, ok := l.LastStats()
	if !ok {
		t.Errorf("%s: no node.stats event", l)
	}
	return s
}

func readEvents(t *testing.T, path string) []logs.Event {
	t.Helper()
	evs, err := logs.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// qdiscCounts reads the packets sent and dropped of the qdisc of kind on
// dev from a tc -s qdisc show: "qdisc netem 8001: dev ifb0 root ...\n
// Sent 123 bytes 45 pkt (dropped 6, overlimits 0 requeues 0)".
func qdiscCounts(t *testing.T, path, kind, dev string) (sent, dropped int64) {
	t.Helper()
	re := regexp.MustCompile(`(?s)qdisc ` + kind + ` [0-9a-f]+: dev ` + regexp.QuoteMeta(dev) + ` .*?Sent \d+ bytes (\d+) pkt \(dropped (\d+)`)
	m := re.FindStringSubmatch(readFile(t, path))
	if m == nil {
		t.Fatalf("%s: no %s qdisc on %s:\n%s", path, kind, dev, readFile(t, path))
	}
	sent, _ = strconv.ParseInt(m[1], 10, 64)
	dropped, _ = strconv.ParseInt(m[2], 10, 64)
	return sent, dropped
}

// netemDropsOn returns what the netem qdisc on host's dev dropped.
func netemDropsOn(t *testing.T, dir string, host int, dev string) int64 {
	t.Helper()
	_, d := qdiscCounts(t, filepath.Join(dir, fmt.Sprintf("tc%d.txt", host)), "netem", dev)
	return d
}

// peakMemory reads mem.txt's lines "node1 VmHWM:    12345 kB".
func peakMemory(t *testing.T, path string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(readFile(t, path)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[1] == "VmHWM:" {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			m[f[0]] = n
		}
	}
	return m
}
