// Package bench benchmarks huddle on virtual LANs of network namespaces
// (internal/lab): its reliable multicast against raw UDP multicast, its
// membership, ordered delivery, elections, lock and state transfer. It has
// no code of its own outside its tests. There are seven benchmarks:
//
//	BenchmarkLAN         reliable multicast against a raw UDP blaster (the scenarios below)
//	BenchmarkMembership  crash, coordinator crash, hang, join, leave, merge, no false suspicions
//	BenchmarkOrder       total and safe order against FIFO and the raw ceiling, latency, loss
//	BenchmarkElection    ring and bully: failover after the leader's SIGKILL, messages per election
//	BenchmarkLock        Ricart–Agrawala under contention, at loss, messages per entry
//	BenchmarkState       state transfer: 1, 16, 100 MiB to a restarted node against the raw ceiling, the group's load meanwhile, merge
//	BenchmarkUnicast     the unicast transport: FIFO at 3 and 8 members against a raw unicast fan-out, NACKs and repairs at 5 % loss, crash and join beside multicast
//
// Run one of them with
//
//	go test -run '^$' -bench LAN -benchtime 3x ./internal/bench
//
// as root (or where unprivileged user namespaces work); elsewhere they
// skip. Plain `go test ./...` does not run them (benchmarks run only with
// -bench). One scenario alone: -bench 'LAN/loss5' (it measures the raw
// ceiling first when it needs it). -benchtime 3x runs each scenario three
// times and reports the run with the median main figure (the testing
// package's warm-up call with b.N = 1 is skipped). With -benchtime 3x on a
// 2-core machine, LAN takes about 4 minutes, Membership about 2 (plus
// Membership/nofalse's BENCH_NOFALSE_DURATION, 60 s by default, per run),
// Order about 3, Election and Lock about 70 s each, State about 2 (50 s
// with -benchtime 1x), Unicast about 2¾ (1 with -benchtime 1x);
// docs/benchmarks.md has
// the figures and how they are made. Each benchmark prints one table with
// every figure, its target, PASS/FAIL and the raw numbers behind it; the
// main ratios are also reported as benchmark metrics.
//
// The raw numbers include each process's CPU time per message and context
// switches per message, the machine's CPU use during the run and just
// before it (other work on the machine makes every figure noisy), kernel
// socket drops, window_full, and the peer.lost events each node logged.
//
// One harness runs them all (bench_test.go, group_test.go): the LANs, one
// per number of hosts, and the huddle binary are made once per process and
// closed when the benchmarks are over; each benchmark is a suite whose
// scenarios (sub-benchmarks, skipping the testing package's warm-up call)
// add rows to its one table and report their metrics; and every group of
// nodes runs through the lab's runner (lab.Nodes: one `huddle run` per
// host, node ID = host number, on a multicast port of its own), its
// figures read off the nodes' JSON logs (internal/logs), /proc and their
// control sockets. The lock's safety is logcheck.CheckMutex's. The raw
// baselines are the test binary re-executed in the hosts
// (HUDDLE_BENCH_HELPER=1): the multicast blaster and sinks (or, for
// BenchmarkUnicast, the blaster sending each datagram to a list of unicast
// addresses and sinks bound to their host's address, through
// multicast.OpenUnicast), and the token ring.
//
// Environment:
//
//	BENCH_HUDDLE_ARGS="--send-window 16384"  words added to every huddle command line (the tables' headers say so)
//	BENCH_LOGDIR=/tmp/benchlogs              keep every process's log there (in lan5, lan9, ...: one directory per LAN)
//	LAB_HUDDLE_BIN=/path/to/huddle           a prebuilt huddle instead of building cmd/huddle
//	BENCH_NOFALSE_DURATION=10m               how long Membership/nofalse runs (default 60s)
//	BENCH_ORDER_PROFILE=/tmp/prof            every node of Order writes a CPU profile there
//
// The scenarios (sub-benchmarks of BenchmarkLAN):
//
//   - raw: the ceiling. The test binary, re-executed in the host
//     namespaces, blasts 1000-byte datagrams from
//     host 1 for 2.5 s with sendmmsg batches of 64 through huddle's own
//     socket layer (multicast.Open and its WriteBatch, the raw sendmmsg
//     huddle makes), and 4 sinks count what arrives (multicast.Open,
//     recvmmsg batches of 64, 8 MiB receive buffer, as huddle). The
//     ceiling is the loss-free rate, as the usual multicast benchmarks
//     define it: the highest paced rate at which every sink gets the
//     datagrams with under 0.1 % loss, found by a search (an unpaced
//     blast of 2.5 s bounds it; paced runs of 1.5 s step down by 30 %
//     until one is loss-free, then bisect 5 times). An unpaced blast
//     measures what overloaded sinks keep up with, about half of it on
//     two cores; the detail shows both. A sendmmsg header per datagram,
//     as mcastbench sends: the targets are set against this ceiling.
//   - rawruns: raw with the blaster sending runs of datagrams in one
//     header each (UDP segmentation offload), as huddle sends, for
//     information. The lab gives every host gso_max_segs 1, so that the
//     sender's kernel cuts a run before the wire, as a card without UDP
//     segmentation does, and the LAN carries one datagram per frame.
//   - lossless: `huddle run --profile local --loopback=false` (one node
//     per host, as on a LAN) on the same 5 hosts, host 1
//     sending N 1000-byte messages at --send-rate 10000000 (as fast as the
//     window allows), N about 2.5 s at the ceiling's rate. Throughput is
//     each receiver's msgs_delivered from its node.stats every 100 ms,
//     from the first sample with a delivery to reaching N (interpolated
//     within the last interval); the slowest receiver counts, as a ratio to
//     a raw run of its own, measured on the same LAN just before it; the
//     figure is the median of those ratios (target ≥ 70 %), for the
//     machine's load drifts over a benchmark.
//   - loss5: the same with the lab's 5 % random loss on each receiver's
//     input (lab.SetLoss: netem on the bridge's port toward the host where
//     the kernel has netem, else iptables statistic or nft numgen in the
//     host, else the nodes' built-in drop; the table's header names it).
//     Targets: ≥ 50 % of the 0 %-loss ceiling, every message delivered and
//     none skipped, NACK datagrams per lost datagram ≤ 1.2, repair
//     datagrams per lost datagram ≤ 1.3, p99 recovery latency (max over
//     receivers of recovery_p99_us) ≤ 5 ms. Lost datagrams are counted
//     exactly by an nft table of the benchmark in each receiver that counts
//     datagrams entering INPUT from eth0 before and after the lab's rule,
//     plus the kernel's socket drops (/proc/net/udp), which need repair too.
//     Those counters see only a firewall rule's drops (iptables or nft), not
//     netem's on the bridge nor the built-in drop's.
//   - loss1: the same at 1 % loss, against JGroups' 9 700 msg/s there.
//   - loss5paced, sharedpaced: loss5 and shared at 5000 msg/s, below what
//     this machine sustains, so that NACKs and repairs per loss and the
//     recovery latency are the protocol's rather than queueing's.
//   - shared: 9 hosts, 5 % loss on the sender's egress (an nft netdev
//     egress rule in its namespace, which drops silently as a wire does),
//     so all 8 receivers lose the same datagrams. Targets: NACKs per loss
//     ≤ 2 and repairs per loss ≤ 1.5 (suppression across receivers).
//   - sharedscale: the shared loss against group size, as the SRM paper's
//     figures of requests and repairs: 2, 4, 8 and 12 members, the sender
//     paced at 3000 msg/s (12 processes on a small machine stay below
//     saturation). Per lost data message (the receivers' mean of
//     gaps_detected, as the simulator's TestSuppressionScales counts), NACK
//     and repair datagrams; the figures per lost datagram of any kind (the
//     egress also drops session messages, tail probes and repairs) are in
//     the detail. Targets: ≤ 1.2 NACKs and ≤ 1.1 repairs at every size.
//   - large: the raw blaster with 65000-byte datagrams (IP fragments on the
//     1500-byte veth MTU), and huddle with --datagram-size 65000 packing
//     1000-byte messages; msgs/s against JGroups' 93 000 msg/s with 64 KB
//     bundles, and the ratio to the raw payload rate.
//
// Every huddle scenario also reports the largest VmHWM (peak RSS) of its
// huddle processes (target < 100 MB), read from /proc before they stop,
// and the CPU time of each, which tells a CPU-bound node from one waiting
// on its send window (window_full).
//
// Packets exist only inside the namespaces the benchmark creates; the LANs
// are torn down at the end, also after a failure. LAB_HUDDLE_BIN names a
// prebuilt huddle binary instead of building cmd/huddle.
package bench
