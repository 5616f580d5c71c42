package lan_test

// Real-process tests of the membership layer: nodes on a virtual LAN form
// a group, and crashes (SIGKILL), hangs (SIGSTOP), restarts and partitions
// change its views. Each test waits for the views it expects from the
// nodes' logs, then checks the guarantees of docs/design.md over
// all the logs with logcheck.

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// viewTimeout bounds every wait for an expected view: generous, as a
// view change on the local profile takes well under a second.
const viewTimeout = 10 * time.Second

// memberWorkload is the light traffic of the tests that are not about
// load: enough deliveries for the virtual synchrony check to bite.
var memberWorkload = []string{"--send-rate", "100", "--send-size", "200", "--trace-deliveries"}

// cluster is the nodes of one LAN, by host.
type cluster struct {
	t      *testing.T
	l      *lan.LAN
	bin    string
	extra  []string
	procs  map[int]*lan.Proc // the current process of each host
	lives  map[int]int       // processes started on each host so far
	start  time.Time         // when the first node was started
	deaths []logcheck.Death  // the nodes killed, for the checks
}

// startGroup starts a node on each of hosts 1..n with extra flags.
func startGroup(t *testing.T, opts lan.Options, extra ...string) *cluster {
	t.Helper()
	g := newCluster(t, opts, extra...)
	for h := 1; h <= g.l.Hosts(); h++ {
		g.startNode(h)
	}
	return g
}

// newCluster builds the LAN of a cluster whose nodes run with extra
// flags, and starts none of them.
func newCluster(t *testing.T, opts lan.Options, extra ...string) *cluster {
	t.Helper()
	l := newLAN(t, keepLogs(t, opts))
	return &cluster{t: t, l: l, bin: buildHuddle(t), extra: extra, procs: map[int]*lan.Proc{}, lives: map[int]int{}, start: time.Now()}
}

func (g *cluster) startNode(h int) {
	g.t.Helper()
	g.procs[h] = startNode(g.t, g.l, g.bin, h, g.extra...)
	g.lives[h]++
}

// live returns the processes that should be running: those of hosts.
func (g *cluster) live(hosts []int) []*lan.Proc {
	var ps []*lan.Proc
	for _, h := range hosts {
		ps = append(ps, g.procs[h])
	}
	return ps
}

// signal sends sig to the huddle process of host h (not to a wrapper).
func (g *cluster) signal(h int, sig syscall.Signal) time.Time {
	g.t.Helper()
	pid := huddlePID(g.t, g.procs[h], g.bin)
	at := time.Now()
	if err := syscall.Kill(pid, sig); err != nil {
		g.t.Fatalf("%v to node %d (pid %d): %v", sig, h, pid, err)
	}
	return at
}

// kill SIGKILLs node h and waits for it to be gone.
func (g *cluster) kill(h int) time.Time {
	g.t.Helper()
	at := g.signal(h, syscall.SIGKILL)
	if err := g.procs[h].WaitTimeout(5 * time.Second); err == nil || !g.procs[h].Exited() {
		g.t.Fatalf("node %d after SIGKILL: %v (exited %v)", h, err, g.procs[h].Exited())
	}
	g.deaths = append(g.deaths, logcheck.Death{Node: uint64(h), At: at})
	return at
}

// views returns the views of the current process of node h, from its
// log: none until that process logged node.started.
func (g *cluster) views(h int) []logcheck.View {
	r, err := logcheck.Load(nodeLog(g.l, h))
	if err != nil {
		return nil
	}
	ls := r.Nodes(uint64(h))
	if len(ls) < g.lives[h] {
		return nil
	}
	return ls[len(ls)-1].Views
}

// agreed reports whether every host of hosts has last installed one and
// the same view whose members are exactly want (in any order); it returns
// that view at each host, or a description of where they stand.
func (g *cluster) agreed(hosts []int, want []uint64) (map[int]logcheck.View, error) {
	want = sorted(want)
	out := map[int]logcheck.View{}
	var diff []string
	id := ""
	for _, h := range hosts {
		vs := g.views(h)
		if len(vs) == 0 {
			diff = append(diff, fmt.Sprintf("node %d: no view", h))
			continue
		}
		v := vs[len(vs)-1]
		out[h] = v
		diff = append(diff, fmt.Sprintf("node %d: %s %v", h, v.ID, v.Members))
		if !slices.Equal(sorted(v.Members), want) {
			id = "-"
		} else if id == "" {
			id = v.ID
		} else if id != v.ID {
			id = "-"
		}
	}
	if id == "" || id == "-" || len(out) < len(hosts) {
		return nil, fmt.Errorf("want one view of %v; %s", want, strings.Join(diff, "; "))
	}
	return out, nil
}

// waitViews waits until hosts agree on a view of want (see agreed), and
// returns it at each host; it fails the test, with the nodes' membership
// events, if not within viewTimeout or if a process of hosts exits.
func (g *cluster) waitViews(what string, hosts []int, want []uint64) map[int]logcheck.View {
	g.t.Helper()
	var views map[int]logcheck.View
	var last error
	took, err := poll(viewTimeout, func() bool {
		views, last = g.agreed(hosts, want)
		return last == nil
	}, g.live(hosts)...)
	if err != nil {
		g.t.Fatalf("%s: %v: %v\n%s", what, err, last, g.trail())
	}
	v := views[hosts[0]]
	g.t.Logf("%s: view %s %v at nodes %v (waited %v)", what, v.ID, v.Members, hosts, took.Round(time.Millisecond))
	return views
}

// installedAfter returns, of the views at hosts, the latest install time,
// and logs the time from at to each.
func (g *cluster) installedAfter(what string, at time.Time, views map[int]logcheck.View) time.Duration {
	g.t.Helper()
	var worst time.Duration
	var parts []string
	for h := 1; h <= g.l.Hosts(); h++ {
		v, ok := views[h]
		if !ok {
			continue
		}
		d := v.Time.Sub(at)
		worst = max(worst, d)
		parts = append(parts, fmt.Sprintf("node %d %v (flush %.0fms)", h, d.Round(time.Millisecond), v.FlushMs))
	}
	g.t.Logf("%s: view installed %v after it at the last node; %s", what, worst.Round(time.Millisecond), strings.Join(parts, ", "))
	return worst
}

// stop SIGTERMs the nodes of hosts and wants them to exit cleanly.
func (g *cluster) stop(hosts []int) {
	g.t.Helper()
	stopNodes(g.t, g.live(hosts)...)
}

// check runs every check of the logs (logcheck.CheckAll, with the kills
// of this cluster) over every node's log, logs each node's views, and
// fails on any violation; liveness's only when liveness.
func (g *cluster) check(liveness bool) *logcheck.Run {
	g.t.Helper()
	var hosts []int
	for h := 1; h <= g.l.Hosts(); h++ {
		hosts = append(hosts, h)
	}
	r := loadLogs(g.t, g.l, hosts...)
	for _, life := range r.Lives {
		var vs []string
		for _, v := range life.Views {
			vs = append(vs, fmt.Sprintf("%s%v", v.ID, v.Members))
		}
		g.t.Logf("%s (inc %d): %d sends, %d delivers, stopped %q; views %s",
			life, life.Inc, len(life.Sends), len(life.Delivers), life.StopReason, strings.Join(vs, " "))
	}
	for _, v := range r.CheckAll(logcheck.AllOptions{Skew: 5 * time.Millisecond, Deaths: g.deaths}) {
		g.t.Logf("%s: %s", v.Name, v.Text)
		switch {
		case v.OK():
		case v.Name == "liveness" && !liveness:
			g.t.Logf("(liveness not required of this run)")
		default:
			g.t.Errorf("%s check: %s\n%s", v.Name, v.Text, g.trail())
		}
	}
	return r
}

// wantDeliveries fails unless the run had traffic for the checks to judge.
func (g *cluster) wantDeliveries(r *logcheck.Run) {
	g.t.Helper()
	var sent, delivered int
	for _, life := range r.Lives {
		sent += len(life.Sends)
		delivered += len(life.Delivers)
	}
	if sent == 0 || delivered < sent {
		g.t.Errorf("%d messages sent, %d delivered: want traffic, each message delivered at least by its sender", sent, delivered)
	}
}

// trailEvents are the events that tell how views changed.
var trailEvents = []string{logs.NodeStarted, logs.NodeStopped, logs.ViewInstalled, logs.ViewFlushStarted,
	logs.MemberSuspected, logs.MemberExcluded, logs.MemberLeft, logs.MemberRefused, logs.PeerLost, logs.PeerSeen, logs.StreamSkipped}

// trail returns the last membership events of each node, for a failure.
func (g *cluster) trail() string {
	var b strings.Builder
	for h := 1; h <= g.l.Hosts(); h++ {
		raw, _ := os.ReadFile(nodeLog(g.l, h))
		var lines []string
		for _, line := range bytes.Split(raw, []byte("\n")) {
			for _, ev := range trailEvents {
				if bytes.Contains(line, logs.Tag(ev)) {
					lines = append(lines, string(line))
					break
				}
			}
		}
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(&b, "--- node %d (last %d membership events):\n%s\n", h, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

// checkTogether fails for each node of hosts that, between from and to,
// installed a view lacking some of hosts after one with all of them: the
// nodes ran and heard each other throughout, so once together nothing
// should part them (a spurious exclusion or secession).
func (g *cluster) checkTogether(what string, hosts []int, from, to time.Time) {
	g.t.Helper()
	r := loadLogs(g.t, g.l, hosts...)
	for _, h := range hosts {
		together, parted := false, false
		var seq []string
		for _, life := range r.Nodes(uint64(h)) {
			for _, v := range life.Views {
				if v.Time.Before(from) || !v.Time.Before(to) {
					continue
				}
				all := true
				for _, x := range hosts {
					all = all && slices.Contains(v.Members, uint64(x))
				}
				mark := ""
				if all {
					together = true
				} else if together {
					parted, mark = true, "!"
				}
				seq = append(seq, fmt.Sprintf("%s%s%v(crashed %v)", mark, v.ID, v.Members, v.Crashed))
			}
		}
		if parted {
			g.t.Errorf("%s: node %d installed views without some of %v after one with all of them, though all ran and were connected (!: parted): %s",
				what, h, hosts, strings.Join(seq, " "))
		}
	}
}

// crashedIn reports whether some view of views lists id as crashed.
func crashedIn(views []logcheck.View, id uint64, after time.Time) bool {
	for _, v := range views {
		if v.Time.After(after) && slices.Contains(v.Crashed, id) {
			return true
		}
	}
	return false
}

func sorted(ids []uint64) []uint64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

func ids(hosts ...int) []uint64 {
	var out []uint64
	for _, h := range hosts {
		out = append(out, uint64(h))
	}
	return out
}

// TestMembershipSurvivesKill crashes a member, then the coordinator of the
// next view, under traffic: the survivors agree on a view without each,
// and the logs satisfy the membership guarantees.
func TestMembershipSurvivesKill(t *testing.T) {
	g := startGroup(t, lan.Options{Hosts: 4}, "--send-rate", "300", "--trace-deliveries")
	all := []int{1, 2, 3, 4}
	g.waitViews("group formed", all, ids(all...))
	time.Sleep(500 * time.Millisecond) // traffic in the view of 4

	kill1 := g.kill(2)
	views := g.waitViews("after SIGKILL of node 2", []int{1, 3, 4}, ids(1, 3, 4))
	g.installedAfter("SIGKILL of node 2", kill1, views)
	for _, h := range []int{1, 3, 4} {
		if !crashedIn(g.views(h), 2, kill1) {
			t.Errorf("node %d: no view after the SIGKILL lists node 2 as crashed", h)
		}
	}
	time.Sleep(500 * time.Millisecond) // traffic in the view of 3

	coord := int(views[1].Members[0])
	rest := slices.DeleteFunc([]int{1, 3, 4}, func(h int) bool { return h == coord })
	kill2 := g.kill(coord)
	views = g.waitViews(fmt.Sprintf("after SIGKILL of the coordinator, node %d", coord), rest, ids(rest...))
	g.installedAfter(fmt.Sprintf("SIGKILL of coordinator %d", coord), kill2, views)
	for _, h := range rest {
		if !crashedIn(g.views(h), uint64(coord), kill2) {
			t.Errorf("node %d: no view after the SIGKILL lists node %d as crashed", h, coord)
		}
	}
	time.Sleep(300 * time.Millisecond)

	end := time.Now()
	g.stop(rest)
	g.checkTogether("before the first kill", all, g.start, kill1)
	g.checkTogether("between the kills", []int{1, 3, 4}, kill1, kill2)
	g.checkTogether("after the second kill", rest, kill2, end)
	r := g.check(true)
	g.wantDeliveries(r)
}

// TestMembershipExcludesAHungMember freezes node 3 with SIGSTOP: the
// others go on without it; after SIGCONT it learns it was excluded and is
// merged back in.
func TestMembershipExcludesAHungMember(t *testing.T) {
	g := startGroup(t, lan.Options{Hosts: 4}, memberWorkload...)
	all := []int{1, 2, 3, 4}
	g.waitViews("group formed", all, ids(all...))
	time.Sleep(300 * time.Millisecond)

	stop := g.signal(3, syscall.SIGSTOP)
	views := g.waitViews("node 3 frozen", []int{1, 2, 4}, ids(1, 2, 4))
	g.installedAfter("SIGSTOP of node 3", stop, views)
	time.Sleep(300 * time.Millisecond)

	cont := g.signal(3, syscall.SIGCONT)
	views = g.waitViews("node 3 thawed", all, ids(all...))
	g.installedAfter("SIGCONT of node 3", cont, views)
	if countEvents(nodeLog(g.l, 3), logs.MemberExcluded) == 0 {
		t.Errorf("node 3 logged no member.excluded after the thaw")
	}
	time.Sleep(300 * time.Millisecond)

	end := time.Now()
	g.stop(all)
	g.checkTogether("before the SIGSTOP", all, g.start, stop)
	g.checkTogether("node 3 frozen", []int{1, 2, 4}, stop, cont)
	g.checkTogether("after the SIGCONT", all, cont, end)
	r := g.check(true)
	g.wantDeliveries(r)
}

// TestMembershipRestartedNodeRejoins kills node 2 and restarts it with
// the same ID, once at once (before the others suspect it) and once after
// they excluded it: each time all three agree on one view again.
func TestMembershipRestartedNodeRejoins(t *testing.T) {
	g := startGroup(t, lan.Options{Hosts: 3}, memberWorkload...)
	all := []int{1, 2, 3}
	g.waitViews("group formed", all, ids(all...))
	time.Sleep(300 * time.Millisecond)

	// At once: the new incarnation joins while the old one is still in the view.
	kill1 := g.kill(2)
	g.startNode(2)
	views := g.waitViews("node 2 restarted at once", all, ids(all...))
	g.installedAfter("SIGKILL and restart of node 2", kill1, views)
	time.Sleep(300 * time.Millisecond)

	// After the others went on without it.
	kill2 := g.kill(2)
	views = g.waitViews("node 2 killed again", []int{1, 3}, ids(1, 3))
	g.installedAfter("second SIGKILL of node 2", kill2, views)
	restart := time.Now()
	g.startNode(2)
	views = g.waitViews("node 2 restarted after its exclusion", all, ids(all...))
	g.installedAfter("second restart of node 2", restart, views)
	time.Sleep(300 * time.Millisecond)

	end := time.Now()
	g.stop(all)
	g.checkTogether("before the first kill", all, g.start, kill1)
	g.checkTogether("after the first restart", all, kill1, kill2)
	g.checkTogether("node 2 down", []int{1, 3}, kill2, restart)
	g.checkTogether("after the second restart", all, restart, end)
	r := g.check(true)
	if n := len(r.Nodes(2)); n != 3 {
		t.Errorf("node 2: %d lives in its log, want 3", n)
	}
	g.wantDeliveries(r)
}

// TestMembershipPartitionAndMerge cuts the LAN in two halves, which go on
// as two groups, then heals it: the two merge into one.
func TestMembershipPartitionAndMerge(t *testing.T) {
	g := startGroup(t, lan.Options{Hosts: 4}, memberWorkload...)
	all := []int{1, 2, 3, 4}
	g.waitViews("group formed", all, ids(all...))
	time.Sleep(300 * time.Millisecond)

	cut := time.Now()
	if err := g.l.Cut([]int{1, 2}, []int{3, 4}); err != nil {
		t.Fatal(err)
	}
	va := g.waitViews("partition side {1,2}", []int{1, 2}, ids(1, 2))
	vb := g.waitViews("partition side {3,4}", []int{3, 4}, ids(3, 4))
	g.installedAfter("cut {1,2}|{3,4}, side {1,2}", cut, va)
	g.installedAfter("cut {1,2}|{3,4}, side {3,4}", cut, vb)
	time.Sleep(500 * time.Millisecond) // each side sends in its own view

	heal := time.Now()
	if err := g.l.Heal(); err != nil {
		t.Fatal(err)
	}
	views := g.waitViews("healed", all, ids(all...))
	g.installedAfter("heal", heal, views)
	merged, _ := logcheck.ParseViewID(views[1].ID)
	for _, v := range []logcheck.View{va[1], vb[3]} {
		if id, _ := logcheck.ParseViewID(v.ID); merged.Compare(id) <= 0 {
			t.Errorf("merged view %s is not above the partition's view %s", views[1].ID, v.ID)
		}
	}
	time.Sleep(300 * time.Millisecond)

	end := time.Now()
	g.stop(all)
	g.checkTogether("before the cut", all, g.start, cut)
	g.checkTogether("cut, side {1,2}", []int{1, 2}, cut, heal)
	g.checkTogether("cut, side {3,4}", []int{3, 4}, cut, heal)
	g.checkTogether("after the heal", all, heal, end)
	r := g.check(true)
	g.wantDeliveries(r)
}

// TestMembershipUnderLoss runs four senders at 5 % loss on every host and
// crashes one mid-run: the survivors agree, and the logs satisfy the
// membership and liveness guarantees.
func TestMembershipUnderLoss(t *testing.T) {
	const loss = 0.05
	g := startGroup(t, lan.Options{Hosts: 4, Loss: loss}, "--send-rate", "200", "--trace-deliveries")
	t.Logf("loss %.0f %% on every host's ingress, by %s", loss*100, g.l.LossMethod())
	all, rest := []int{1, 2, 3, 4}, []int{1, 2, 4}
	g.waitViews("group formed", all, ids(all...))
	time.Sleep(2500 * time.Millisecond)

	kill := g.kill(3)
	views := g.waitViews("after SIGKILL of node 3", rest, ids(rest...))
	g.installedAfter("SIGKILL of node 3 at 5 % loss", kill, views)
	time.Sleep(2500 * time.Millisecond)
	later := g.waitViews("survivors, 2.5s later", rest, ids(rest...))
	if later[1].ID != views[1].ID {
		t.Errorf("the survivors changed views without a failure: %s after the kill, %s 2.5s later", views[1].ID, later[1].ID)
	}

	end := time.Now()
	g.stop(rest)
	g.checkTogether("before the kill", all, g.start, kill)
	g.checkTogether("after the kill", rest, kill, end)
	r := g.check(true)
	g.wantDeliveries(r)
	for _, h := range []uint64{1, 2, 4} {
		life := r.Nodes(h)[0]
		st, _ := life.LastStats()
		t.Logf("node %d: %d views; %s", h, len(life.Views),
			statsLine(st, "msgs_sent", "msgs_delivered", "gaps_detected", "gaps_recovered", "nacks_sent", "repairs_sent", "skipped"))
	}
}
