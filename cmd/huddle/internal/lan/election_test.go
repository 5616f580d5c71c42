package lan_test

// Real-process tests of the leader election (docs/design.md, "Leader election"): five
// nodes on a virtual LAN elect the highest ID; the leader is killed with
// SIGKILL, and the survivors must all end with the next highest, elected
// in a round after the kill, for both algorithms, with and without loss.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/internal/logs"
)

// electQuiet is how long the survivors' leader must then stay put: long
// enough for a stray round (a member that timed out waiting, a late
// straggler) to show up in the logs.
const electQuiet = 700 * time.Millisecond

// leaderEv is one leader.changed event of a node's log.
type leaderEv struct {
	at            time.Time
	leader, round uint64
}

// roundEv is what the logs say of one election round: who started it,
// who won, and the messages each node sent in it (election.done's sent).
type roundEv struct {
	initiators []uint64
	winners    []uint64
	sent       map[int]int // by host
}

// leaderChanges returns the leader.changed events of host's log.
func leaderChanges(l *lan.LAN, host int) []leaderEv {
	evs, _ := logs.ReadFile(nodeLog(l, host)) // a partly written last line is skipped
	var out []leaderEv
	for _, ev := range evs {
		if ev.Name != logs.LeaderChanged {
			continue
		}
		e := leaderEv{at: ev.Time}
		e.leader, _ = ev.Uint(logs.LeaderKey)
		e.round, _ = ev.Uint(logs.RoundKey)
		out = append(out, e)
	}
	return out
}

// electionRounds collects the election events of hosts' logs at or after
// since, by round.
func electionRounds(l *lan.LAN, hosts []int, since time.Time) map[uint64]*roundEv {
	out := map[uint64]*roundEv{}
	get := func(r uint64) *roundEv {
		if out[r] == nil {
			out[r] = &roundEv{sent: map[int]int{}}
		}
		return out[r]
	}
	for _, h := range hosts {
		evs, _ := logs.ReadFile(nodeLog(l, h))
		for _, ev := range evs {
			if ev.Time.Before(since) {
				continue
			}
			r, _ := ev.Uint(logs.RoundKey)
			switch ev.Name {
			case logs.ElectionStarted:
				get(r).initiators = append(get(r).initiators, uint64(h))
			case logs.ElectionWon:
				get(r).winners = append(get(r).winners, uint64(h))
			case logs.ElectionDone:
				n, _ := ev.Uint(logs.SentKey)
				get(r).sent[h] += int(n)
			}
		}
	}
	return out
}

// describeRounds formats rounds in order, for t.Log.
func describeRounds(rs map[uint64]*roundEv) string {
	var parts []string
	for _, r := range slices.Sorted(func(yield func(uint64) bool) {
		for r := range rs {
			if !yield(r) {
				return
			}
		}
	}) {
		e, total := rs[r], 0
		for _, n := range e.sent {
			total += n
		}
		parts = append(parts, fmt.Sprintf("round %d: started by %v, won by %v, %d messages (sent by host: %v)", r, e.initiators, e.winners, total, e.sent))
	}
	return strings.Join(parts, "; ")
}

// leaderAgreed reports whether every host of hosts last logged
// leader.changed naming want, in one and the same round above after; it
// returns that event at each host, or where they stand.
func (g *cluster) leaderAgreed(hosts []int, want, after uint64) (map[int]leaderEv, error) {
	out := map[int]leaderEv{}
	var diff []string
	ok := true
	for _, h := range hosts {
		ls := leaderChanges(g.l, h)
		if len(ls) == 0 {
			diff, ok = append(diff, fmt.Sprintf("node %d: no leader", h)), false
			continue
		}
		e := ls[len(ls)-1]
		out[h] = e
		diff = append(diff, fmt.Sprintf("node %d: leader %d (round %d)", h, e.leader, e.round))
		ok = ok && e.leader == want && e.round > after && e.round == out[hosts[0]].round
	}
	if !ok {
		return nil, fmt.Errorf("want leader %d in one round above %d; %s", want, after, strings.Join(diff, "; "))
	}
	return out, nil
}

// waitLeader waits until hosts agree on leader want, elected in a round
// above after (see leaderAgreed), and returns the event at each host.
func (g *cluster) waitLeader(what string, hosts []int, want, after uint64) map[int]leaderEv {
	g.t.Helper()
	var got map[int]leaderEv
	var last error
	took, err := poll(viewTimeout, func() bool {
		got, last = g.leaderAgreed(hosts, want, after)
		return last == nil
	}, g.live(hosts)...)
	if err != nil {
		g.t.Fatalf("%s: %v: %v\n%s\n%s", what, err, last, g.electionTrail(), g.trail())
	}
	g.t.Logf("%s: leader %d (round %d) at nodes %v (waited %v)", what, want, got[hosts[0]].round, hosts, took.Round(time.Millisecond))
	return got
}

// electionTrail returns the election events of every node, for a failure.
func (g *cluster) electionTrail() string {
	var b strings.Builder
	for h := 1; h <= g.l.Hosts(); h++ {
		evs, _ := logs.ReadFile(nodeLog(g.l, h))
		fmt.Fprintf(&b, "--- node %d election events:\n", h)
		for _, ev := range evs {
			if strings.HasPrefix(ev.Name, "election.") || ev.Name == logs.LeaderChanged {
				r, _ := ev.Uint(logs.RoundKey)
				l, _ := ev.Uint(logs.LeaderKey)
				s, _ := ev.Uint(logs.SentKey)
				v, _ := ev.Str(logs.ViewKey)
				fmt.Fprintf(&b, "%s %-16s round %d view %s leader %d sent %d\n", ev.Time.Format("15:04:05.000"), ev.Name, r, v, l, s)
			}
		}
	}
	return b.String()
}

// TestElectionLeaderKilled: five nodes (IDs 1..5) elect node 5; it is
// killed with SIGKILL, and every survivor must log leader.changed naming
// node 4 in a round after the kill, and keep it — for ring and bully, at
// 0 % and 5 % loss on every host. The logs must pass every check: a round
// that elected another than the highest member of its view (node 4 while
// it lived), or a member that never learned its view's leader, fails the
// election check.
func TestElectionLeaderKilled(t *testing.T) {
	for _, alg := range []string{"ring", "bully"} {
		for _, loss := range []float64{0, 0.05} {
			t.Run(fmt.Sprintf("%s/loss%.0f", alg, loss*100), func(t *testing.T) { runLeaderKill(t, alg, loss) })
		}
	}
}

func runLeaderKill(t *testing.T, alg string, loss float64) {
	extra := append([]string{"--suspect-timeout", orderSuspect, "--election", alg}, memberWorkload...)
	g := startGroup(t, lan.Options{Hosts: 5, Loss: loss}, extra...)
	if loss > 0 {
		t.Logf("loss %.0f %% on every host's ingress, by %s", loss*100, g.l.LossMethod())
	}
	all, rest := []int{1, 2, 3, 4, 5}, []int{1, 2, 3, 4}
	g.waitViews("group formed", all, ids(all...))
	before := g.waitLeader("before the kill", all, 5, 0)
	round := before[1].round

	kill := g.kill(5)
	views := g.waitViews("after SIGKILL of the leader", rest, ids(rest...))
	detect := g.installedAfter("SIGKILL of leader 5", kill, views)
	after := g.waitLeader("after SIGKILL of the leader", rest, 4, round)
	var last time.Time
	var per []string
	for _, h := range rest {
		e := after[h]
		if e.at.Before(kill) {
			t.Errorf("node %d: leader.changed of round %d at %v, before the kill", h, e.round, e.at)
		}
		if e.at.After(last) {
			last = e.at
		}
		per = append(per, fmt.Sprintf("node %d +%v (%.1f ms after its view %s)", h, e.at.Sub(kill).Round(time.Millisecond),
			float64(e.at.Sub(views[h].Time).Microseconds())/1000, views[h].ID))
	}
	t.Logf("%s at %.0f %% loss: from the SIGKILL of leader 5 to the last survivor's leader.changed (leader 4, round %d): %v; the view without it took %v; %s",
		alg, loss*100, after[1].round, last.Sub(kill).Round(time.Millisecond), detect.Round(time.Millisecond), strings.Join(per, ", "))

	time.Sleep(electQuiet)
	if _, err := g.leaderAgreed(rest, 4, round); err != nil {
		t.Errorf("%v after %v more", err, electQuiet)
	}
	t.Logf("rounds after the kill: %s", describeRounds(electionRounds(g.l, rest, kill)))

	end := time.Now()
	g.stop(rest)
	g.checkTogether("before the kill", all, g.start, kill)
	g.checkTogether("after the kill", rest, kill, end)
	g.check(true)
}
