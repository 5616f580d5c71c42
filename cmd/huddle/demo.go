package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
)

const demoUsage = `Usage: huddle demo [flags]

Starts a small group on a private virtual LAN (network namespaces: as root,
or unprivileged in a user namespace; where neither works, in this process
over a simulated network), drops some of the datagrams, multicasts in every
order (fifo, total, safe), kills the coordinator and restarts it, and shows
what happens: views, suspicions, repairs, deliveries. It ends with a summary
and a check of the nodes' logs; the exit code is 0 when the check passes.

Flags:
`

// cmdDemo runs `huddle demo`: exit 0 when the run's check passed, 1 when
// it failed, could not run (or not on this system) or was interrupted, 2
// for a bad command line.
func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fs, parseOut := newFlagSet("huddle demo")
	o := lab.Options{}
	fs.IntVar(&o.Nodes, "nodes", lab.DefaultNodes, fmt.Sprintf("`number` of nodes, %d to %d", lab.MinNodes, lab.MaxNodes))
	fs.Float64Var(&o.Loss, "loss", lab.DefaultLoss, fmt.Sprintf("`probability` that a node's host drops a datagram it receives, 0 to %v", lab.MaxLoss))
	fs.DurationVar(&o.Duration, "duration", lab.DefaultDuration, fmt.Sprintf("`time` from the start of the nodes to their stop, %v to %v", lab.MinDuration, lab.MaxDuration))
	fs.StringVar(&o.Transport, "transport", "multicast", "`transport` of the nodes: multicast, or unicast (one datagram per member, as where a network carries no multicast; needs the virtual LAN)")
	fs.BoolVar(&o.InProcess, "in-process", false, "run the nodes in this process over a simulated network, even where a virtual LAN can be built")
	fs.Int64Var(&o.Seed, "seed", 0, "`seed` of the simulated network's loss when the nodes run in this process; 0 draws one (the console prints it)")
	fs.StringVar(&o.LogDir, "log-dir", "", "`directory` for the nodes' logs; default: a new temporary directory")
	keep := fs.Bool("keep-logs", true, "keep the nodes' logs after a run that passed (they are always kept after a failure)")
	color := fs.String("color", "auto", "`when` to colour the output: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), demoUsage)
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, parseOut, args, stdout, stderr); done {
		return code
	}
	if !nodeRuns {
		return notSupported("huddle demo", stderr)
	}
	var err error
	if o.Color, err = colorMode(*color, stdout); err != nil {
		fmt.Fprintln(stderr, "huddle demo:", err)
		return exitUsage
	}
	o.Live = o.Color
	if err := o.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	o.RemoveLogs = !*keep
	o.Out = stdout
	if !o.InProcess {
		// The nodes are this very binary: `huddle run` in each host.
		bin, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, "huddle demo: cannot find this program to run the nodes:", err)
		}
		o.Bin = bin
	}
	ctx, stop := signalContext()
	defer stop()
	s, err := lab.Run(ctx, o)
	switch {
	case errors.Is(err, lab.ErrInterrupted):
		return exitFailure
	case err != nil:
		fmt.Fprintln(stderr, "huddle demo:", err)
		return exitFailure
	case !s.OK:
		return exitFailure
	}
	return exitOK
}

// colorMode reads --color: whether to colour stdout (and keep a live
// progress line on it).
func colorMode(flag string, stdout io.Writer) (bool, error) {
	switch flag {
	case "auto":
		return isTerminal(stdout) && os.Getenv("NO_COLOR") == "", nil
	case "always":
		return true, nil
	case "never":
		return false, nil
	}
	return false, fmt.Errorf("--color %q: want auto, always or never", flag)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
