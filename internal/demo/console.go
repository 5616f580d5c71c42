package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// style is how a console line is coloured on a terminal.
type style int

const (
	plain   style = iota
	action        // what the demo does: start, kill, restart, stop
	viewed        // a view installed
	notice        // suspicions, view changes starting
	traffic       // the periodic throughput line
	bad           // warnings from the nodes, a failed check
	good          // a passed check
)

var ansi = map[style]string{
	action:  "\x1b[1;35m",
	viewed:  "\x1b[1;32m",
	notice:  "\x1b[33m",
	traffic: "\x1b[36m",
	bad:     "\x1b[1;31m",
	good:    "\x1b[1;32m",
}

const (
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

// console writes the demo's human-readable lines: a time since the nodes
// were started, then what happened.
type console struct {
	w     io.Writer
	color bool
}

// at prints one timed line.
func (c *console) at(t time.Duration, s style, format string, args ...any) {
	stamp := fmt.Sprintf("%7.2fs", t.Seconds())
	if c.color {
		stamp = ansiDim + stamp + ansiReset
	}
	lines := strings.Split(fmt.Sprintf(format, args...), "\n")
	fmt.Fprintf(c.w, "%s  %s\n", stamp, c.paint(s, lines[0]))
	for _, l := range lines[1:] { // continuation lines, under the text
		fmt.Fprintf(c.w, "%s  %s\n", strings.Repeat(" ", 8), c.paint(s, l))
	}
}

// say prints an untimed line.
func (c *console) say(s style, format string, args ...any) {
	fmt.Fprintln(c.w, c.paint(s, fmt.Sprintf(format, args...)))
}

func (c *console) paint(s style, text string) string {
	if !c.color || ansi[s] == "" {
		return text
	}
	return ansi[s] + text + ansiReset
}

// ids formats node IDs as "[4 1 2 3]".
func ids(v []uint64) string { return fmt.Sprint(v) }

// nodeList formats IDs as "node 5" or "nodes 1, 2 and 3".
func nodeList(v []uint64) string {
	switch len(v) {
	case 0:
		return "no node"
	case 1:
		return fmt.Sprintf("node %d", v[0])
	}
	parts := make([]string, len(v))
	for i, id := range v {
		parts[i] = fmt.Sprint(id)
	}
	return "nodes " + strings.Join(parts[:len(v)-1], ", ") + " and " + parts[len(v)-1]
}

// ms formats a duration in whole milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Milliseconds())
}
