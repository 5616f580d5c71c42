package vm_test

// Real netem, in a VM: this machine's kernel may have no netem qdisc (the
// virtual LAN then drops with iptables, nft or the nodes' built-in drop),
// Debian's kernel has it as a module. The test boots that kernel under
// qemu, builds three hosts on a bridge inside, gives every host's port
// netem loss and delay, runs three huddle nodes sending in total order,
// and checks their logs.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/vm"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// needVM skips t under -short (a boot costs tens of seconds of both
// cores) and where no VM can boot, unless testutil.RequireVMEnv
// (HUDDLE_TEST_REQUIRE_VM) is 1: then it fails.
func needVM(t *testing.T) {
	t.Helper()
	testutil.NeedVM(t, vm.Available())
}

// staticHuddle returns a huddle binary for the guest: $LAB_HUDDLE_BIN when
// set (its libraries go along if it is dynamic), else cmd/huddle built
// with CGO_ENABLED=0.
func staticHuddle(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("LAB_HUDDLE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "huddle")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/huddle-lan/huddle/cmd/huddle")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/huddle: %v\n%s", err, out)
	}
	return bin
}

// The nodes' settings in the VM. The guest's CPU is emulated, much
// slower than the host's, while its clocks keep real time: a node that
// waits for the CPU hears its peers late. A suspect timeout of 2 s
// (the lan profile's is 400 ms) rides that out, and a join timeout of 2 s
// lets the three nodes, started one after another, form one group.
var netemNodeFlags = []string{
	"--iface", "eth0", "--addr", "239.192.72.68:7468", "--control-socket", "off",
	"--suspect-timeout", "2s", "--join-timeout", "2s",
	"--send-rate", "50", "--send-order", "total", "--send-size", "200",
	"--trace-deliveries", "--stats-interval", "2s",
}

// netemScript builds hosts h1..h3 on a bridge (as the lan package does:
// veth pairs, eth0 in each host with 10.77.0.i/24 and a multicast route,
// snooping off), gives each host's port netem loss and delay toward the
// host (so each host loses what it receives, independently), runs a node
// per host for run, stops them with SIGTERM, and leaves their logs and
// the qdiscs' counters in /out.
func netemScript(hosts int, netem string, run time.Duration, flags []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `set -e
ip link add br0 type bridge stp_state 0 mcast_snooping 0
ip link set br0 up
for i in $(seq %d); do
	ip netns add h$i
	ip link add port$i type veth peer name eth0 netns h$i
	ip link set port$i master br0 up
	ip -n h$i link set lo multicast on up
	ip -n h$i addr add 10.77.0.$i/24 dev eth0
	ip -n h$i link set eth0 up
	ip -n h$i route add 224.0.0.0/4 dev eth0
	tc qdisc add dev port$i root netem %s
done
set +e
pids=
for i in $(seq %d); do
	/usr/sbin/ip netns exec h$i /bin/huddle run --id $i --log-file /out/node$i.json %s 2> /out/node$i.log &
	pids="$pids $!"
done
echo "nodes started: $pids"
sleep %d
kill -TERM $pids
wait
echo "nodes stopped"
for i in $(seq %d); do
	echo "port$i"
	tc -s qdisc show dev port$i
done > /out/tc.txt
cat /out/tc.txt
`, hosts, netem, hosts, strings.Join(flags, " "), int(run.Seconds()), hosts)
	return b.String()
}

// TestNetemInVM: three huddle nodes multicast in total order, each host
// losing 5 % of what it receives and delaying it 1 ms by netem, in a VM
// booted with Debian's kernel. The logs pass every check, the nodes found
// gaps and repaired them, and netem counted its drops.
func TestNetemInVM(t *testing.T) {
	needVM(t)
	bin := staticHuddle(t)
	const hosts = 3
	const netem = "loss 5% delay 1ms"
	out := t.TempDir()
	start := time.Now()
	res, err := vm.Run(context.Background(), vm.Options{
		Script:  netemScript(hosts, netem, 12*time.Second, netemNodeFlags),
		Files:   map[string]string{"/bin/huddle": bin},
		OutDir:  out,
		Timeout: 3 * time.Minute,
		Logf:    t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM: booted in %v, ran %v in all (%v with the initramfs); files %v",
		res.Boot.Round(time.Millisecond), res.Elapsed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), res.Files)
	if res.Status != 0 {
		t.Fatalf("the script exited %d:\n%s", res.Status, res.Output)
	}

	var paths []string
	for i := 1; i <= hosts; i++ {
		paths = append(paths, filepath.Join(out, fmt.Sprintf("node%d.json", i)))
	}
	r, err := logcheck.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.CheckAll(logcheck.AllOptions{Skew: 20 * time.Millisecond}) {
		t.Logf("%s: %s", v.Name, v.Text)
		if !v.OK() {
			t.Errorf("%s check failed: %s", v.Name, v.Text)
		}
	}

	// netem's loss was real: every node found messages missing and got
	// them repaired, and every port's netem dropped datagrams.
	var total struct{ gaps, recovered, nacks, repairs, delivered int64 }
	for _, life := range r.Lives {
		s, ok := life.LastStats()
		if !ok {
			t.Errorf("%s: no node.stats event", life)
			continue
		}
		gaps, recovered, nacks, repairs := s.Get("gaps_detected"), s.Get("gaps_recovered"), s.Get("nacks_sent"), s.Get("repairs_recv")
		t.Logf("%s: %d views, %d sent, %d delivered; gaps_detected %d, gaps_recovered %d, nacks_sent %d, repairs_recv %d, suspicions %d",
			life, len(life.Views), len(life.Sends), len(life.Delivers), gaps, recovered, nacks, repairs, suspicions(t, filepath.Join(out, filepath.Base(life.File))))
		if gaps == 0 || repairs == 0 {
			t.Errorf("%s: gaps_detected %d, repairs_recv %d: netem's loss left no trace", life, gaps, repairs)
		}
		if len(life.Delivers) < 500 {
			t.Errorf("%s delivered %d messages: want at least 500 in the run", life, len(life.Delivers))
		}
		total.gaps, total.recovered, total.nacks, total.repairs = total.gaps+gaps, total.recovered+recovered, total.nacks+nacks, total.repairs+repairs
		total.delivered += int64(len(life.Delivers))
	}
	drops := netemDrops(t, filepath.Join(out, "tc.txt"))
	t.Logf("netem %q on %d ports: dropped %v datagrams; the nodes: %d delivered, %d gaps detected, %d recovered, %d NACKs sent, %d repairs received",
		netem, hosts, drops, total.delivered, total.gaps, total.recovered, total.nacks, total.repairs)
	if len(drops) != hosts {
		t.Fatalf("tc -s qdisc: %d netem qdiscs, want %d:\n%s", len(drops), hosts, readFile(t, filepath.Join(out, "tc.txt")))
	}
	for i, d := range drops {
		if d == 0 {
			t.Errorf("port%d: netem dropped nothing", i+1)
		}
	}
}

// netemDrops reads the dropped counter of each netem qdisc in tc -s's
// output: "qdisc netem 8001: root ... \n Sent 123 bytes 45 pkt (dropped 6, ...".
func netemDrops(t *testing.T, path string) []int {
	t.Helper()
	re := regexp.MustCompile(`(?s)qdisc netem .*?\(dropped (\d+)`)
	var drops []int
	for _, m := range re.FindAllStringSubmatch(readFile(t, path), -1) {
		n, _ := strconv.Atoi(m[1])
		drops = append(drops, n)
	}
	return drops
}

// suspicions counts a log's member.suspected events.
func suspicions(t *testing.T, path string) int {
	t.Helper()
	n := 0
	for _, e := range readEvents(t, path) {
		if e.Name == logs.MemberSuspected {
			n++
		}
	}
	return n
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
