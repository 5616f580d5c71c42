// Package lab builds virtual LANs for tests and experiments that need a real
// network: a hub network namespace holding a Linux bridge, and one network
// namespace per host, linked to the bridge by a veth pair. Nothing of a LAN
// lives in the root network namespace, and everything is deleted by Close.
//
// Hosts are numbered 1..N. Host i has the interface eth0 with the i-th
// address of the subnet (10.77.0.i/24 by default), lo and eth0 up, lo
// multicast on and a route 224.0.0.0/4 dev eth0. The bridge has multicast
// snooping off, so multicast floods to every host without an IGMP querier.
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
// namespace (LossMethod). Cut and Heal partition hosts with rules dropping
// by source address.
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
package lab
