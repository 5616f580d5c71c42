package lan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// unicastWorkload is memberWorkload on the unicast transport, in total
// order: the runner gives each node the LAN's hosts as its peers.
var unicastWorkload = append([]string{"--transport", "unicast", "--send-order", "total"}, memberWorkload...)

// TestUnicastPartitionAndMerge runs a group on the unicast transport
// over a lossy LAN: it forms from the peer list, survives a member's
// SIGKILL, splits in two at a partition and merges again within a second
// of the heal (the peers outside the view are probed every 100 ms on the
// local profile), with every check of the logs passing.
func TestUnicastPartitionAndMerge(t *testing.T) {
	g := startGroup(t, lan.Options{Hosts: 4, Loss: 0.03}, unicastWorkload...)
	all := []int{1, 2, 3, 4}
	g.waitViews("group formed by unicast", all, ids(all...))
	time.Sleep(500 * time.Millisecond)

	g.kill(4)
	g.waitViews("node 4 killed", []int{1, 2, 3}, ids(1, 2, 3))
	g.startNode(4)
	g.waitViews("node 4 back", all, ids(all...))
	time.Sleep(300 * time.Millisecond)

	cut := time.Now()
	if err := g.l.Cut([]int{1, 2}, []int{3, 4}); err != nil {
		t.Fatal(err)
	}
	g.waitViews("partition side {1,2}", []int{1, 2}, ids(1, 2))
	g.waitViews("partition side {3,4}", []int{3, 4}, ids(3, 4))
	time.Sleep(500 * time.Millisecond)

	heal := time.Now()
	if err := g.l.Heal(); err != nil {
		t.Fatal(err)
	}
	views := g.waitViews("healed", all, ids(all...))
	if d := g.installedAfter("heal", heal, views); d > time.Second {
		t.Errorf("the merge took %v after the heal, want at most 1s", d)
	}
	time.Sleep(300 * time.Millisecond)
	end := time.Now()
	g.stop(all)
	g.checkTogether("before the cut", all, g.start.Add(2*time.Second), cut)
	g.checkTogether("after the heal", all, heal, end)
	r := g.check(true)
	g.wantDeliveries(r)
	for _, h := range all {
		if n := countEvents(nodeLog(g.l, h), logs.PeerPath); n != 0 {
			t.Errorf("node %d logged %d peer.path events on the unicast transport, which has no fallback", h, n)
		}
	}
}

// TestFallbackKeepsOneView takes multicast away from one host mid-run, as
// an IGMP-snooping switch whose querier is gone does, then from every
// host: the per-peer fallback keeps one view throughout (no view is
// installed after the first), logs peer.path both ways at the nodes
// concerned, and goes back to multicast when it returns.
func TestFallbackKeepsOneView(t *testing.T) {
	g := startGroup(t, lan.Options{Hosts: 4, Loss: 0.02}, append([]string{"--send-order", "total"}, memberWorkload...)...)
	all := []int{1, 2, 3, 4}
	first := g.waitViews("group formed", all, ids(all...))
	time.Sleep(300 * time.Millisecond)

	off := time.Now()
	if err := g.l.SetMulticast(4, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := g.l.SetMulticast(4, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	for h := 1; h <= 4; h++ {
		if err := g.l.SetMulticast(h, false); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	for h := 1; h <= 4; h++ {
		if err := g.l.SetMulticast(h, true); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	end := time.Now()
	g.stop(all)

	for _, h := range all {
		// Up to the stop: the nodes leave one after the other, and the
		// views without those gone first are not the fallback's doing.
		vs := slices.DeleteFunc(g.views(h), func(v logcheck.View) bool { return !v.Time.Before(end) })
		if len(vs) == 0 || vs[len(vs)-1].ID != first[h].ID {
			t.Errorf("node %d: views %v, want the first view %s to the end\n%s", h, vs, first[h].ID, g.trail())
		}
	}
	g.checkTogether("multicast taken away and given back", all, off, end)
	paths := func(h int) string {
		evs, err := logs.ReadFile(nodeLog(g.l, h))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range evs {
			if e.Name == logs.PeerPath {
				dir, _ := e.Str(logs.DirKey)
				path, _ := e.Str(logs.PathKey)
				b.WriteString(dir + ":" + path + " ")
			}
		}
		return b.String()
	}
	if p := paths(4); !strings.Contains(p, "in:unicast") || !strings.Contains(p, "in:multicast") {
		t.Errorf("node 4's peer.path events %q: want it to hear by unicast only, then by multicast again", p)
	}
	for _, h := range []int{1, 2, 3} {
		if p := paths(h); !strings.Contains(p, "out:unicast") || !strings.Contains(p, "out:multicast") {
			t.Errorf("node %d's peer.path events %q: want it to send by unicast too, then by multicast alone", h, p)
		}
	}
	r := g.check(true)
	g.wantDeliveries(r)
}

// TestUnicastPeersByName runs a unicast group whose peers list names
// hosts, as a container runtime's DNS or a headless service does: each
// host resolves the names through a hosts file of its own (ip netns exec
// mounts /etc/netns/NAME/hosts over /etc/hosts, as a container has its
// own), and the group forms. A name that resolves nowhere is warned of
// (node.warning peer_unresolved) and does not stop the others. Root mode
// only: the hosts files live under /etc/netns.
func TestUnicastPeersByName(t *testing.T) {
	l := newLAN(t, keepLogs(t, lan.Options{Hosts: 3}))
	if l.Mode() != "root" {
		t.Skip("per-namespace hosts files need ip netns exec as root (/etc/netns); this LAN is " + l.Mode())
	}
	var hosts strings.Builder
	for h := 1; h <= 3; h++ {
		fmt.Fprintf(&hosts, "%s node%d\n", l.Host(h).Addr, h)
	}
	for h := 1; h <= 3; h++ {
		dir := filepath.Join("/etc/netns", l.Host(h).Netns)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte("127.0.0.1 localhost\n"+hosts.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildHuddle(t)
	var procs []*lan.Proc
	for h := 1; h <= 3; h++ {
		procs = append(procs, startNode(t, l, bin, h, "--transport", "unicast",
			"--peers", "node1:7468,node2:7468,node3,nowhere.invalid:7468"))
	}
	waitUntil(t, "one view of the three, found by name", viewTimeout, func() bool {
		for h := 1; h <= 3; h++ {
			if !sawView(l, h, 3) {
				return false
			}
		}
		return true
	}, procs...)
	stopNodes(t, procs...)
	evs, err := logs.ReadFile(nodeLog(l, 1))
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, e := range evs {
		if what, _ := e.Str(logs.WhatKey); e.Name == logs.NodeWarning && what == "peer_unresolved" {
			warned = true
		}
	}
	if !warned {
		t.Error("node 1 did not warn that nowhere.invalid does not resolve")
	}
}

// sawView reports whether host's node installed a view of n members.
func sawView(l *lan.LAN, host, n int) bool {
	evs, _ := logs.ReadFile(nodeLog(l, host))
	for _, e := range evs {
		if e.Name != logs.ViewInstalled {
			continue
		}
		if ms, ok := e.Uints(logs.MembersKey); ok && len(ms) == n {
			return true
		}
	}
	return false
}

// TestFallbackTakesInAJoinerWithoutMulticast: a node whose host gets no
// multicast from the moment it starts (the switch forwards the group to
// the other hosts only) still joins the group and gets its traffic: it
// hears the members' path probes by unicast, asks them to send to it by
// unicast too, and the flush that admits it, and every message after,
// reach it that way.
func TestFallbackTakesInAJoinerWithoutMulticast(t *testing.T) {
	g := newCluster(t, lan.Options{Hosts: 4}, append([]string{"--send-order", "total"}, memberWorkload...)...)
	l := g.l
	for h := 1; h <= 3; h++ {
		g.startNode(h)
	}
	g.waitViews("group of three formed", []int{1, 2, 3}, ids(1, 2, 3))
	if err := l.SetMulticast(4, false); err != nil {
		t.Fatal(err)
	}
	g.startNode(4)
	all := []int{1, 2, 3, 4}
	g.waitViews("the joiner without multicast taken in", all, ids(all...))
	time.Sleep(time.Second) // traffic in the view of four
	g.stop(all)
	evs, err := logs.ReadFile(nodeLog(l, 4))
	if err != nil {
		t.Fatal(err)
	}
	unicast := 0
	for _, e := range evs {
		if dir, _ := e.Str(logs.DirKey); e.Name == logs.PeerPath && dir == "in" {
			if path, _ := e.Str(logs.PathKey); path == "unicast" {
				unicast++
			}
		}
	}
	if unicast < 3 {
		t.Errorf("node 4 logged %d peer.path events hearing a member by unicast only, want one for each of the 3", unicast)
	}
	r := g.check(true)
	g.wantDeliveries(r)
}
