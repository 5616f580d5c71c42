// Package bench benchmarks huddle's reliable multicast layer against raw
// UDP multicast on a virtual LAN of network namespaces (internal/lab). It
// has no code of its own outside its tests: run it with
//
//	go test -run '^$' -bench . -benchtime 1x ./internal/bench
//
// as root (or where unprivileged user namespaces work); elsewhere it skips.
// Plain `go test ./...` does not run it (benchmarks run only with -bench).
// One scenario alone: -bench 'LAN/loss5' (it measures the raw ceiling
// first when it needs it). -benchtime 3x runs each scenario three times
// and reports the run with the median main figure (the testing package's
// warm-up call with b.N = 1 is skipped). A full run takes about 40 s
// (2 min with 3x) and prints one table with every figure, its target,
// PASS/FAIL and the raw numbers behind it; the main ratios are also
// reported as benchmark metrics.
//
// The raw numbers include each process's CPU time per message and context
// switches per message, the machine's CPU use during the run and just
// before it (other work on the machine makes every figure noisy), kernel
// socket drops, window_full, and the peer.lost events each node logged.
//
// Environment:
//
//	BENCH_HUDDLE_ARGS="--send-window 16384"  words added to every huddle command line
//	BENCH_LOGDIR=/tmp/benchlogs              keep every process's log there
//	LAB_HUDDLE_BIN=/path/to/huddle           a prebuilt huddle instead of building cmd/huddle
//
// The scenarios (sub-benchmarks of BenchmarkLAN):
//
//   - raw: the ceiling. The test binary, re-executed in the host
//     namespaces (HUDDLE_BENCH_HELPER=1), blasts 1000-byte datagrams from
//     host 1 for 2.5 s with sendmmsg batches of 64 (x/net/ipv4 WriteBatch),
//     and 4 sinks count what arrives (recvmmsg, 8 MiB receive buffer, as
//     huddle). The ceiling is delivered datagrams/s at the slowest sink,
//     first to last arrival.
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
//     input (lab.SetLoss; iptables statistic or nft numgen in the host).
//     Targets: ≥ 50 % of the 0 %-loss ceiling, every message delivered and
//     none skipped, NACK datagrams per lost datagram ≤ 1.2, repair
//     datagrams per lost datagram ≤ 1.3, p99 recovery latency (max over
//     receivers of recovery_p99_us) ≤ 5 ms. Lost datagrams are counted
//     exactly by an nft table of the benchmark in each receiver that counts
//     datagrams entering INPUT from eth0 before and after the lab's rule,
//     plus the kernel's socket drops (/proc/net/udp), which need repair too.
//   - loss1: the same at 1 % loss, against JGroups' 9 700 msg/s there.
//   - loss5paced, sharedpaced: loss5 and shared at 5000 msg/s, below what
//     this machine sustains, so that NACKs and repairs per loss and the
//     recovery latency are the protocol's rather than queueing's.
//   - shared: 9 hosts, 5 % loss on the sender's egress (an nft netdev
//     egress rule in its namespace, which drops silently as a wire does),
//     so all 8 receivers lose the same datagrams. Targets: NACKs per loss
//     ≤ 2 and repairs per loss ≤ 1.5 (suppression across receivers).
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
