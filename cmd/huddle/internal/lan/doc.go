// Package lan builds virtual LANs for tests and experiments that need a real
// network: a hub network namespace holding a Linux bridge, and one network
// namespace per host, linked to the bridge by a veth pair. Nothing of a LAN
// lives in the root network namespace, and everything is deleted by Close.
//
// Hosts are numbered 1..N. Host i has the interface eth0 with the i-th
// address of the subnet (10.77.0.i/24 by default), lo and eth0 up, lo
// multicast on and a route 224.0.0.0/4 dev eth0. The bridge has multicast
// snooping off, so multicast floods to every host without an IGMP querier,
// and the hub's bridge netfilter hooks off (where br_netfilter is loaded,
// they ran the hub's iptables on every frame flooded, as no switch does);
// IPv6 is off in every namespace.
//
// As root the namespaces are made with `ip netns`; otherwise (or with
// Options.Rootless) a helper process started with `unshare -Urnm` holds a
// private user, network and mount namespace with its own /run/netns, and
// every command runs through `nsenter` into it. Available says whether either
// works here. Namespace names are "hud<pid>-<n>-hub" and "hud<pid>-<n>-h<i>";
// New deletes those left behind by processes that no longer exist.
//
// Loss (SetLoss, Options.Loss) drops datagrams a host receives, independently
// per host: netem on the hub side of the host's veth when the kernel has it,
// else an iptables statistic rule, else an nft numgen rule in the host
// namespace (LossMethod). SetLossModel gives a host a LossModel: loss in
// bursts of a mean length, delay and jitter. netem does all of it; with
// iptables or nft, a host's bursts go to its node's built-in drop
// (--drop-burst), and delay and jitter are refused (ErrNoNetem,
// SupportsDelay). Cut and Heal partition hosts with rules dropping by
// source address.
//
// Nodes is the one way to run huddle nodes on a LAN, for the benchmarks,
// the demo and the tests: BuildHuddle gives the binary ($LAB_HUDDLE_BIN or
// cmd/huddle built), and NewNodes a runner that starts `huddle run` on a
// host with the flags common to its nodes plus the node's own (through
// StartNode, so that the built-in drop reaches it), node ID = host number,
// a JSON log beside its output and, if asked, a control socket. A Node
// knows its huddle process (PID: not a wrapper's), dies of Kill (SIGKILL),
// reads its events and views (internal/logs) and its peak RSS; Start on
// its host again restarts it with the same ID, appending to the same
// logs. Nodes.Stop stops them all (SIGTERM, SIGKILL after a grace
// period), WaitView waits until nodes share a view, WaitViews until each
// installed a view a test accepts.
//
//	nodes := lab.NewNodes(l, lab.NodesOptions{Bin: bin, Addr: "239.192.72.68:7500",
//		Args: []string{"--profile", "local", "--loopback=false"}})
//	for h := 1; h <= 3; h++ {
//		nodes.Start(h, "--send-rate", "100")
//	}
//	views, err := nodes.WaitView([]int{1, 2, 3}, 10*time.Second)
//	nodes.Node(2).Kill()
//	evs := nodes.Node(1).Events(logs.ViewInstalled)
//	err = nodes.Stop(3 * time.Second)
//
// Usage in a test:
//
//	func TestSomething(t *testing.T) {
//		if err := lab.Available(); err != nil {
//			t.Skip(err)
//		}
//		l, err := lab.New(lab.Options{Hosts: 3, Logf: t.Logf})
//		if err != nil {
//			t.Fatal(err)
//		}
//		t.Cleanup(func() { l.Close() }) // also runs after t.Fatal or a panic
//		p, err := l.Start(1, "node1", []string{bin, "run", "--iface", lab.Iface})
//		...
//		l.SetLoss(2, 0.2)
//		l.Cut([]int{1}, []int{2, 3})
//		l.Heal()
//		p.Signal(syscall.SIGTERM)
//		err = p.Wait()
//		events, err := logs.ReadFile(p.LogPath()) // internal/logs
//	}
//
// Close stops the started processes (SIGTERM, SIGKILL after Options.Grace),
// kills whatever else runs in the namespaces, deletes them and removes the
// log directory if New created it (set Options.LogDir to keep logs).
package lan
