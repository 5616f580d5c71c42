package lan_test

import (
	"errors"
	"fmt"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/logs"
)

const ms = time.Millisecond

func TestLossModelValidate(t *testing.T) {
	for _, c := range []struct {
		m    lan.LossModel
		want string // "" or the error
	}{
		{lan.LossModel{}, ""},
		{lan.LossModel{Loss: 1}, ""},
		{lan.LossModel{Loss: 0.2, Burst: 4, Delay: 10 * ms, Jitter: 10 * ms}, ""},
		{lan.LossModel{Loss: 0.1, Burst: 1}, ""},
		{lan.LossModel{Delay: 10 * time.Second, Jitter: time.Second}, ""},
		{lan.LossModel{Loss: -0.1}, "lab: loss model: loss -0.1 is out of range (0 to 1)"},
		{lan.LossModel{Loss: 1.5, Burst: 3}, "lab: loss model: loss 1.5 is out of range (0 to 1)"},
		{lan.LossModel{Loss: 0.1, Burst: 0.5}, "lab: loss model: burst 0.5 is out of range (0 or 1 for independent losses, else 1 to 1000)"},
		{lan.LossModel{Loss: 0.1, Burst: 1e4}, "lab: loss model: burst 10000 is out of range (0 or 1 for independent losses, else 1 to 1000)"},
		{lan.LossModel{Loss: 0.8, Burst: 2}, "lab: loss model: burst 2 is too short for a loss of 0.8 (bursts of 2 allow a loss of at most 0.6667, beyond which the gaps between bursts would be shorter than one datagram)"},
		{lan.LossModel{Delay: -ms}, "lab: loss model: delay -1ms is out of range (0 to 10s)"},
		{lan.LossModel{Delay: 11 * time.Second}, "lab: loss model: delay 11s is out of range (0 to 10s)"},
		{lan.LossModel{Delay: ms, Jitter: 2 * ms}, "lab: loss model: jitter 2ms is more than the delay 1ms (at most the delay: a datagram cannot arrive before it was sent)"},
		{lan.LossModel{Loss: 2, Jitter: -ms}, "lab: loss model: loss 2 is out of range (0 to 1)\nlab: loss model: jitter -1ms is out of range (0 to 10s)"},
	} {
		err := c.m.Validate()
		if (err == nil) != (c.want == "") || err != nil && err.Error() != c.want {
			t.Errorf("%+v: Validate() = %v, want %q", c.m, err, c.want)
		}
	}
}

func TestLossModelString(t *testing.T) {
	for _, c := range []struct {
		m    lan.LossModel
		want string
	}{
		{lan.LossModel{}, "no loss"},
		{lan.LossModel{Loss: 0.05}, "5% loss"},
		{lan.LossModel{Loss: 0.05, Burst: 1}, "5% loss"},
		{lan.LossModel{Loss: 1.0 / 3}, "33.33% loss"},
		{lan.LossModel{Loss: 0.05, Burst: 3, Delay: 2 * ms, Jitter: ms}, "5% loss in bursts of 3, delay 2ms ±1ms"},
		{lan.LossModel{Loss: 0.2, Burst: 4}, "20% loss in bursts of 4"},
		{lan.LossModel{Delay: 500 * time.Microsecond}, "delay 500µs"},
	} {
		if got := c.m.String(); got != c.want {
			t.Errorf("%+v: String() = %q, want %q", c.m, got, c.want)
		}
	}
}

// TestNetemArgs: the netem command line of each model. Independent loss
// is the command SetLoss always ran; bursts are the simple Gilbert model
// with p = loss/(burst·(1−loss)) and r = 1/burst in percent, and the
// parameters 1-h and 1-k left to their defaults (100 % and 0 %).
func TestNetemArgs(t *testing.T) {
	for _, c := range []struct {
		m    lan.LossModel
		want string
	}{
		{lan.LossModel{}, ""},
		{lan.LossModel{Loss: 0.05}, "loss 5%"},
		{lan.LossModel{Loss: 0.05, Burst: 1}, "loss 5%"},
		{lan.LossModel{Loss: 1, Burst: 4}, "loss 100%"},
		{lan.LossModel{Loss: 0.2, Burst: 4}, "loss gemodel 6.25% 25%"},
		{lan.LossModel{Loss: 0.5, Burst: 2}, "loss gemodel 50% 50%"},
		{lan.LossModel{Delay: 2 * ms}, "limit 100000 delay 2000us"},
		{lan.LossModel{Loss: 0.2, Burst: 4, Delay: 2 * ms, Jitter: 1500 * time.Microsecond}, "limit 100000 delay 2000us 1500us loss gemodel 6.25% 25%"},
		{lan.LossModel{Delay: 1500 * time.Nanosecond}, "limit 100000 delay 1.5us"},
	} {
		if got := strings.Join(lan.NetemArgs(c.m), " "); got != c.want {
			t.Errorf("%+v: netem %q, want %q", c.m, got, c.want)
		}
	}
}

// TestNetemArgsParse gives tc the netem command lines of several models:
// where the kernel has netem, tc shows the qdisc as asked (the bad state
// drops everything: 1-h 100%); where it has not, tc must have parsed the
// line before the kernel refused the qdisc kind, so that the lines are
// right on the machines that have netem.
func TestNetemArgsParse(t *testing.T) {
	if _, err := osexec.LookPath("tc"); err != nil {
		t.Skip("tc not installed: nothing to parse the netem arguments")
	}
	l := newLAN(t, lan.Options{Hosts: 1})
	for _, c := range []struct {
		m    lan.LossModel
		show []string
	}{
		{lan.LossModel{Loss: 0.2, Burst: 4, Delay: 2 * ms, Jitter: ms}, []string{"delay 2ms  1ms", "loss gemodel p 6.25% r 25% 1-h 100% 1-k 0%"}},
		{lan.LossModel{Loss: 0.05}, []string{"loss 5%"}},
		{lan.LossModel{Delay: 1500 * time.Microsecond}, []string{"delay 1.5ms"}},
		{lan.LossModel{}, nil},
	} {
		show, err := l.ApplyNetem(1, c.m)
		switch {
		case err != nil && strings.Contains(err.Error(), "qdisc kind is unknown"):
			t.Logf("%v: tc took the arguments; the kernel has no netem", c.m)
		case err != nil:
			t.Errorf("%v: %v", c.m, err)
		default:
			for _, s := range c.show {
				if !strings.Contains(show, s) {
					t.Errorf("%v: tc shows %q, want %q in it", c.m, show, s)
				}
			}
		}
	}
}

// dropRule reads the built-in drop of the node at sock, with the
// datagrams it dropped so far.
func dropRule(t *testing.T, sock string) control.DropResult {
	t.Helper()
	var r control.DropResult
	controlCall(t, sock, "drop", &r)
	return r
}

// TestLossModelBursts runs huddle nodes on three hosts with the loss
// method this machine has, and gives host 2 LossModel{Loss: 0.2, Burst:
// 4} while they run and host 3 one before its node starts. With netem
// the kernel drops in bursts; with iptables or nft (which cannot) and with
// the built-in drop, the nodes on hosts 2 and 3 get the built-in drop
// with the burst, through the control socket or their command line, and
// log it. Either way host 2's node receives about 20 % fewer datagrams
// than host 1's. A model without bursts on a firewall turns the node's
// drop off again; delay without netem is refused with ErrNoNetem.
func TestLossModelBursts(t *testing.T) {
	for _, method := range []string{"", lan.MethodBuiltin} {
		name := method
		if name == "" {
			name = "best"
		}
		t.Run(name, func(t *testing.T) { checkLossModelBursts(t, method) })
	}
}

func checkLossModelBursts(t *testing.T, method string) {
	l := newLAN(t, lan.Options{Hosts: 3, LossMethod: method})
	meth := l.LossMethod()
	t.Logf("loss method: %s", l.LossDescription())
	if got, want := l.SupportsDelay(), meth == lan.MethodNetem; got != want {
		t.Errorf("SupportsDelay() = %v with loss method %s", got, meth)
	}
	bin := buildHuddle(t)
	dir := t.TempDir()
	sock := func(host int) string { return filepath.Join(dir, fmt.Sprintf("h%d.sock", host)) }
	bursts := lan.LossModel{Loss: 0.2, Burst: 4}
	var procs []*lan.Proc
	for host := 1; host <= 2; host++ {
		procs = append(procs, startNode(t, l, bin, host, "--control-socket", sock(host), "--send-rate", "200"))
	}
	for host := 1; host <= 2; host++ {
		waitPeers(t, l, host, procs[host-1], 10*time.Second, 2)
	}
	if err := l.SetLossModel(2, bursts); err != nil {
		t.Fatal(err)
	}
	if err := l.SetLossModel(3, bursts); err != nil { // no node there yet
		t.Fatal(err)
	}
	procs = append(procs, startNode(t, l, bin, 3, "--control-socket", sock(3), "--send-rate", "200"))
	waitPeers(t, l, 3, procs[2], 10*time.Second, 3)

	builtin := meth != lan.MethodNetem
	for _, host := range []int{2, 3} {
		d := dropRule(t, sock(host)).Drop
		if builtin && (d.Rate != 0.2 || d.Burst != 4) || !builtin && d.Active() {
			t.Errorf("node %d's built-in drop is %+v under %s", host, d, meth)
		}
		if ev, ok := lastDropEvent(t, l, host); builtin {
			rate, _ := ev.Float(logs.RateKey)
			burst, _ := ev.Float(logs.BurstKey)
			if !ok || rate != 0.2 || burst != 4 {
				t.Errorf("node %d logged the drop %v, want rate 0.2 and burst 4", host, ev)
			}
		}
	}
	if d := dropRule(t, sock(1)).Drop; d.Active() {
		t.Errorf("node 1, without loss, has the built-in drop %+v", d)
	}

	// What the nodes on hosts 1 and 2 keep of what they receive in 3 s:
	// host 2 loses a fifth of it.
	kept := func(c map[string]uint64) float64 { return float64(c["datagrams_in"] - c["injected_drops"]) }
	before1, before2 := counters(t, sock(1)), counters(t, sock(2))
	time.Sleep(3 * time.Second)
	after1, after2 := counters(t, sock(1)), counters(t, sock(2))
	got1, got2 := kept(after1)-kept(before1), kept(after2)-kept(before2)
	t.Logf("in 3 s node 1 kept %.0f datagrams, node 2 %.0f (%.3f); node 2 dropped %d itself",
		got1, got2, got2/got1, after2["injected_drops"]-before2["injected_drops"])
	if got1 < 500 || got2/got1 < 0.65 || got2/got1 > 0.92 {
		t.Errorf("node 2 kept %.0f datagrams to node 1's %.0f, want about 80 %%", got2, got1)
	}

	if err := l.SetLossModel(2, lan.LossModel{Loss: 0.1}); err != nil {
		t.Fatal(err)
	}
	want := 0.0 // the kernel drops independently
	if meth == lan.MethodBuiltin {
		want = 0.1
	}
	if d := dropRule(t, sock(2)).Drop; d.Rate != want || d.Burst > 1 {
		t.Errorf("after independent loss, node 2's built-in drop is %+v under %s, want rate %v", d, meth, want)
	}
	err := l.SetLossModel(2, lan.LossModel{Loss: 0.1, Delay: 2 * ms, Jitter: ms})
	switch {
	case meth == lan.MethodNetem && err != nil:
		t.Errorf("delay with netem: %v", err)
	case meth != lan.MethodNetem && !errors.Is(err, lan.ErrNoNetem):
		t.Errorf("delay with %s: %v, want ErrNoNetem", meth, err)
	case err != nil:
		t.Logf("delay with %s: %v", meth, err)
		if d := dropRule(t, sock(2)).Drop; meth == lan.MethodBuiltin && d.Rate != 0.1 {
			t.Errorf("a refused model changed node 2's drop to %+v", d)
		}
	}
	stopNodes(t, procs...)
}

// lastDropEvent returns the last node.drop event of host's node.
func lastDropEvent(t *testing.T, l *lan.LAN, host int) (logs.Event, bool) {
	t.Helper()
	evs, err := logs.ReadFile(nodeLog(l, host))
	if err != nil {
		t.Fatal(err)
	}
	var last logs.Event
	found := false
	for _, ev := range evs {
		if ev.Name == logs.NodeDrop {
			last, found = ev, true
		}
	}
	return last, found
}
