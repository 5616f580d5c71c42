// Package lab is the engine of `huddle lab` and of `huddle demo`, which is
// one fixed lab run: a small group on a private virtual LAN, with packet
// loss, traffic in every delivery order, the group's lock in use, a crash
// of the coordinator and its restart, shown live on a console and checked
// from the nodes' logs at the end.
//
//	s, err := lab.Run(ctx, lab.Options{Nodes: 5, Loss: 0.02, Bin: huddleBinary, Out: os.Stdout})
//	if err != nil { ... }   // could not run, or ErrInterrupted (s is then set too)
//	if !s.OK { ... }        // a check of the logs failed
//
// Where the machine allows it (root, or unprivileged user namespaces),
// the nodes are `Bin run` processes in the hosts of a virtual LAN (package lan:
// network namespaces on a bridge; loss by netem, else iptables, else nft,
// else the nodes' built-in drop, --drop-rate);
// otherwise, or with Options.InProcess, they run the same code as huddle
// run (huddle.StartOn and the workloads of package workload) in this
// process, over an in-memory network with random loss (multicast/memnet).
// Either way each node writes its JSON log
// (--trace-deliveries, stats every second) to Options.LogDir, and the demo
// follows those files: the console shows what the logs say, nothing else.
//
// The timeline, as fractions of Options.Duration: the nodes start at 0
// and form a view; each multicasts Options.Rate messages per second (node
// 1 fifo, node 2 safe, node 3 causal with 4 nodes or more, the others
// total order) and takes the group's lock
// now and then (think 1-4 s, hold 400 ms); at 40 % the coordinator of
// the current view, which is also the total-order sequencer, is killed
// with SIGKILL; at 65 % it is started again with the same ID; at 100 %
// every node gets SIGTERM and leaves the group. Then the logs are checked
// with package logcheck (membership, liveness, order where logcheck has
// it, and the lock) and by the demo itself (the group formed, excluded the killed
// node, took it back, delivered every order), and a summary is printed.
//
// With Options.Plan (`huddle lab`), the nodes get the plan's flags and
// each host its loss (lan.LossModel), and the demo's
// crash gives way to the plan's Actions (kill, restart, stop, continue,
// partition, heal, loss, elect, lock) at their times; the demo's story is
// itself a plan of two actions (demoPlan). Every action applied is a line
// of lab.json beside the logs (JournalFile), which huddle report draws on
// its timeline; package scenario makes plans from TOML files, flags and
// presets. With Options.Live a progress line stays at the bottom of a
// terminal.
//
// Cleanup is unconditional: Run stops the nodes it started and deletes
// the LAN, also when ctx is cancelled (Ctrl-C); only the logs remain,
// unless Options.RemoveLogs and the checks passed.
package lab
