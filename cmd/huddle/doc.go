// Command huddle runs a group-communication node, one per machine of a LAN,
// and talks to a running node through its control socket.
//
//	huddle demo [flags]    a small group on a private virtual LAN: loss, a crash, ordered delivery
//	huddle lab [flags]     an experiment: 2-32 nodes, each host's loss, a schedule of faults, checked
//	huddle run [flags]     run a node until SIGINT or SIGTERM (or --duration)
//	huddle status          print a running node's view, members and counters (--json)
//	huddle send TEXT       multicast TEXT through the running node (--order fifo|total|safe|causal)
//	huddle elect           start a leader election from the running node and print the leader
//	huddle lock [--hold D] acquire the group's lock on the running node, hold it, release it
//	huddle drop --rate P   make the running node drop received datagrams at random (an experiment)
//	huddle key [reload]    print the running node's key fingerprints, or reload its key file
//	huddle keygen FILE     write a new group key to FILE (mode 0600)
//	huddle check LOG...    check a group's guarantees from its nodes' JSON logs (or a directory of them)
//	huddle report DIR      write an HTML report, with plots and CSV, of a run's or a sweep's directory
//	huddle ping [flags]    tell whether multicast and unicast get through to the other machines, and why not
//	huddle version         print the version, the VCS revision, the Go and wire versions (--json)
//	huddle help [COMMAND]  print the list of commands, or a command's help
//
// huddle run is huddle.Start (the Group API of the root package) with
// clients of the group it starts: the control socket (cmd/huddle/internal/control)
// and the experiment workloads (cmd/huddle/internal/workload).
//
// Every command takes --help. A node's settings come from the profile's
// defaults, a TOML file (--config), HUDDLE_* environment variables and
// flags, each overriding the one before; status, send, elect, lock and
// drop read them the same way to find the node's socket. The settings are
// in docs/configuration.md, the log events in docs/logs.md, the control
// commands in docs/control.md.
//
// The node (run, demo) runs on Linux only; elsewhere they exit 1 saying
// so. The library packages build on macOS, Windows and FreeBSD too.
//
// Exit codes. 2 means the command line or the configuration must change
// first (a service manager should not restart); 1 means it failed in the
// machine's present state, which may change (a restart may succeed).
//
//   - huddle run: 0 after a clean stop. 1 when the node cannot start or
//     fails: not Linux; the interface is missing, down, not
//     multicast-capable, or has no IPv4 address to derive the ID from;
//     the group socket fails (no route for the group, address in use,
//     permission denied); the control socket cannot be made (another node
//     answers there, say); the metrics endpoint cannot be opened (its port
//     is in use). 2 for a bad command line or configuration: an
//     unknown flag or key, a value out of range, a key file others may
//     read or that cannot be read, a log file or --cpu-profile file
//     that cannot be created, or a control socket path over 107 bytes
//     (--print-config checks all of these too). 3 when the group refused
//     the node: another
//     live node uses its ID, the group seals with another key, one of its
//     protocol settings differs from the group's, or the group is full.
//   - huddle demo: 0 when the check of the nodes' logs passed; 1 when it
//     failed, the demo could not run (or not on this system), or it was
//     interrupted; 2 for a bad flag or value.
//   - huddle status, send, elect, lock, drop, key: 0 on success; 1 when no
//     node runs at the socket, when the node refuses or fails the command
//     (not in a view yet, stopping, busy, timed out), when elect finds an
//     election already running or no leader within --timeout; 2 for a bad
//     command line or configuration (including control_socket off).
//   - huddle keygen: 0 when the key is written; 1 when FILE exists
//     (without --force) or cannot be written; 2 for no FILE or a bad flag.
//   - huddle check: 0 when every check of the logs holds; 1 when one does
//     not, or a log cannot be read; 2 for no LOG or a bad flag.
//   - huddle lab: 0 when every run's checks passed; 1 when one failed,
//     could not run, or was interrupted (and not on Linux); 2 for a bad
//     flag or scenario, refused before anything starts.
//   - huddle report: 0 when the report is written; 1 when DIR holds no
//     node logs (nor a sweep.json) or cannot be read; 2 for no DIR or a
//     bad flag.
//   - huddle ping: 0 when peers were heard and every one got multicast
//     and unicast through both ways; 1 when one did not, when no peer was
//     heard, when the interface or the sockets cannot be used, or not on
//     Linux; 2 for a bad command line or configuration.
//   - huddle version, help: 0; 2 for an unexpected argument or flag.
//   - huddle with no command or an unknown one: 2.
package main
