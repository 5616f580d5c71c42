package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/control"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logx"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/metrics"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/workload"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/suggest"
)

// Exit codes. 2 means that retrying will not help until the command line
// or the configuration changes: a service manager should not restart the
// node. 1 means the node could not start or run in the machine's present
// state (an interface that is missing or down may come up): a restart may
// succeed.
const (
	exitOK      = 0
	exitFailure = 1 // the node could not start (no usable interface, socket errors) or failed; a command failed
	exitUsage   = 2 // bad command line or configuration
	exitRefused = 3 // the group refused the node: its ID is taken, or its settings differ
)

const usage = `huddle: a group-communication node for LANs (reliable, view-synchronous IP multicast)

Usage:
  huddle demo [flags]    watch a small group on a private virtual LAN: loss, a crash, ordered delivery
  huddle lab [flags]     run an experiment: 2-32 nodes, loss, faults, elections, locks, checked
  huddle run [flags]     run a node on this machine (huddle run --help lists the flags)
  huddle status          print a running node's view, members and counters (--json)
  huddle status --group  ask every member over the group and print one row each (like JGroups' probe)
  huddle watch           stream the node's views, suspicions, leaders, lock events (and deliveries: --service)
  huddle send TEXT       multicast TEXT through the running node (--order fifo|total|safe|causal)
  huddle elect           start a leader election from the running node and print the leader
  huddle lock [--hold D] acquire the group's lock on the running node, hold it, release it
  huddle drop --rate P   make the running node drop received datagrams at random (an experiment)
  huddle key [reload]    print the running node's key fingerprints, or reload its key file
  huddle keygen FILE     write a new group key to FILE (mode 0600)
  huddle check LOG...    check a group's guarantees from its nodes' JSON logs (or a directory of them)
  huddle report DIR      write an HTML report, with plots and CSV, of a run's or a sweep's directory
  huddle ping [flags]    tell whether multicast and unicast get through to the other machines, and why not
  huddle version         print the version, the revision, the Go and wire versions (--json)
  huddle completion SH   print a completion script for bash, zsh or fish
  huddle man             print huddle's manual page (roff): man <(huddle man)
  huddle help [COMMAND]  print this help, or a command's (the same as huddle COMMAND --help)

Run one node per machine of a LAN: with no flags, a node joins 239.192.72.68:7468
on the interface of the default route and takes its ID from that interface's
IPv4 address. Configuration comes from a TOML file (--config), HUDDLE_*
environment variables and flags; flags win over the environment, the
environment over the file.
`

// nodeRuns says whether the node runs on this system (supported); tests
// clear it to see what other systems print.
var nodeRuns = supported()

// notSupported says in one line that command, which runs the node, does
// not run on this system, and returns its exit code.
func notSupported(command string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "huddle: %s needs Linux (this is %s/%s); the library packages build here, but the node does not run here yet\n",
		command, runtime.GOOS, runtime.GOARCH)
	return exitFailure
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "status":
		return cmdStatus(args[1:], stdout, stderr)
	case "send":
		return cmdSend(args[1:], stdout, stderr)
	case "watch":
		return cmdWatch(args[1:], stdout, stderr)
	case "elect":
		return cmdElect(args[1:], stdout, stderr)
	case "lock":
		return cmdLock(args[1:], stdout, stderr)
	case "drop":
		return cmdDrop(args[1:], stdout, stderr)
	case "keygen":
		return cmdKeygen(args[1:], stdout, stderr)
	case "key":
		return cmdKey(args[1:], stdout, stderr)
	case "demo":
		return cmdDemo(args[1:], stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "lab":
		return cmdLab(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "ping":
		return cmdPing(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		return cmdVersion(args[1:], stdout, stderr)
	case "completion":
		return cmdCompletion(args[1:], stdout, stderr)
	case "man":
		return cmdMan(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" && !slices.Contains([]string{"help", "-h", "-help", "--help"}, args[1]) {
			return run([]string{args[1], "--help"}, stdout, stderr) // huddle help run
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	hint := ""
	if name, ok := suggest.Closest(args[0], commandNames(), func(k string) string { return k }); ok {
		hint = "; did you mean " + name + "?"
	}
	fmt.Fprintf(stderr, "huddle: unknown command %q%s (huddle help lists the commands)\n", args[0], hint)
	return exitUsage
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs, parseOut := newFlagSet("huddle run")
	flags := config.AddFlags(fs)
	printConfig := fs.Bool("print-config", false, "print the effective configuration as TOML and exit")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the run to `file` (go tool pprof reads it)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: huddle run [flags]\n\nRuns one huddle node until SIGINT or SIGTERM. Flags (defaults are the lan profile's):\n\n")
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, parseOut, args, stdout, stderr); done {
		return code
	}
	if !*printConfig && !nodeRuns {
		return notSupported("huddle run", stderr)
	}
	cfg, warnings, err := config.Load(fs, flags, os.Environ())
	warn(stderr, warnings)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	// --print-config checks what the node would check before it starts,
	// so that a configuration it prints starts.
	resolved, code, err := prepare(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return code
	}
	if *printConfig {
		// What Resolve derives (the ID, the interface) is printed as
		// comments: a copied file must not give another machine this ID.
		doc, err := cfg.ResolvedTOML()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitFailure
		}
		stdout.Write(doc)
		return exitOK
	}
	cfg = resolved
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "huddle run: --cpu-profile:", err)
			return exitUsage
		}
		defer stop()
	}
	return startNode(cfg, stderr)
}

// prepare checks, before a node starts with cfg, what config.Load cannot
// see: the key file (readable, and private), the log file (can be
// appended to) and the control socket's path (not too long), every
// problem of them, exit code 2; and it resolves the ID and interface. An
// interface that is missing, down, not multicast-capable or without an
// IPv4 address to derive the ID from may be there later: that is the
// machine's state, not the configuration's fault, exit code 1.
func prepare(cfg config.Config) (config.Config, int, error) {
	var problems []error
	if _, err := cfg.Security.Keys(); err != nil {
		problems = append(problems, err)
	}
	if cfg.Log.File != "" {
		if err := logx.CheckFile(cfg.Log.File); err != nil {
			problems = append(problems, fmt.Errorf("config: log.file: cannot append the log to %s: %w", cfg.Log.File, err))
		}
	}
	resolved := cfg
	resolveErr := resolved.Resolve()
	// The default socket's path holds the ID, which Resolve may derive.
	if cfg.ControlSocket != "" || cfg.ID != 0 || resolveErr == nil {
		if err := control.CheckPath(control.Path(resolved)); err != nil {
			problems = append(problems, fmt.Errorf("config: control_socket: the control %w", err))
		}
	}
	switch {
	case len(problems) > 0:
		return cfg, exitUsage, errors.Join(problems...)
	case resolveErr != nil:
		return cfg, exitFailure, resolveErr
	}
	return resolved, exitOK, nil
}

// warn prints config.Load's warnings, one line each.
func warn(stderr io.Writer, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintln(stderr, "huddle: warning:", w)
	}
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func startNode(cfg config.Config, stderr io.Writer) int {
	// One loop runs the protocol; the readers only hand it batches. On
	// one P those hand-offs are goroutine switches instead of futex
	// wake-ups across threads, which measured on a virtual LAN halves
	// the CPU a node spends per message. GOMAXPROCS in the environment
	// still decides.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	log, closer, err := logx.New(logx.Options{Level: cfg.Log.Level, Format: cfg.Log.Format, File: cfg.Log.File}, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "huddle:", err)
		return exitUsage
	}
	defer closer.Close()
	nodeLog := log.With().Uint64(logs.NodeKey, cfg.ID).Logger()
	failed := func(what string, err error) int {
		nodeLog.Error().Str(logs.EventKey, logs.NodeFailed).Err(err).Msg(what)
		fmt.Fprintln(stderr, "huddle:", err)
		return exitFailure
	}
	ctx, stop := signalContext()
	defer stop()

	// The control socket first: a node of this group and ID that answers
	// there already stops this one before it says a word to the group.
	path := control.Path(cfg)
	cfg.ControlSocket = cmp.Or(path, control.Off) // node.started logs where it is
	cmds := map[string]control.Handler{}
	var srv *control.Server
	if path != "" {
		if srv, err = control.Listen(path, cmds, nodeLog); err != nil {
			return failed("cannot open the control socket", err)
		}
		defer srv.Close()
	}
	// The metrics endpoint's port next, so that node.started logs the
	// address it took (a port of 0 picks one).
	var metricsLn net.Listener
	if cfg.Metrics.Addr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.Metrics.Addr); err != nil {
			return failed("cannot open the metrics endpoint", fmt.Errorf("metrics.addr %s: %w", cfg.Metrics.Addr, err))
		}
		defer metricsLn.Close()
		cfg.Metrics.Addr = metricsLn.Addr().String()
	}
	start := time.Now()
	g, err := huddle.Start(ctx, cfg, log, workload.NewKV(cfg, nodeLog).Options()...)
	if err != nil {
		return failed("cannot open the group socket", err)
	}
	if metricsLn != nil {
		h := metrics.Handler(metrics.New(g, cfg.SendWindow), cfg.Metrics.Pprof)
		go func() {
			if err := metrics.Serve(ctx, metricsLn, h); err != nil {
				nodeLog.Warn().Str(logs.EventKey, logs.NodeWarning).Str(logs.WhatKey, "metrics").Err(err).Msg("the metrics endpoint stopped answering")
			}
		}()
	}
	if srv != nil {
		maps.Copy(cmds, control.Commands(control.ForGroup(g)))
		go func() {
			if err := srv.Serve(); err != nil {
				nodeLog.Warn().Str(logs.EventKey, logs.ControlError).Err(err).Msg("the control socket stopped answering")
			}
		}()
	}
	go workload.Run(ctx, g, cfg, start) // traffic, lock use, elections: clients, like any program
	notified := make(chan struct{})
	go func() { notifyService(ctx, g, nodeLog); close(notified) }()
	defer func() {
		select { // STOPPING=1 reaches the service manager before the process ends
		case <-notified:
		case <-time.After(time.Second):
		}
	}()
	go reloadOnHangup(ctx, g, nodeLog)
	<-g.Done()
	switch err := g.Err(); {
	case errors.Is(err, huddle.ErrClosed):
		return exitOK
	case errors.Is(err, huddle.ErrRefused):
		fmt.Fprintln(stderr, "huddle:", err)
		return exitRefused
	default:
		fmt.Fprintln(stderr, "huddle:", err)
		return exitFailure
	}
}

// reloadOnHangup reloads the group keys on every SIGHUP, as huddle key
// reload does, until ctx ends.
func reloadOnHangup(ctx context.Context, g *huddle.Group, log zerolog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			if err := g.ReloadKeys(ctx); err != nil {
				log.Warn().Str(logs.EventKey, logs.NodeWarning).Str(logs.WhatKey, "key reload").Err(err).Msg("SIGHUP: the keys were not reloaded; the keys in use stay")
			}
		case <-ctx.Done():
			return
		case <-g.Done():
			return
		}
	}
}

// signalContext is cancelled by the first SIGINT or SIGTERM, with the signal
// as its cause; a second signal kills the process the default way.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(fmt.Errorf("signal %v", s))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}
