package lab

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
//
// With live set (a terminal), a progress line stays at the bottom: every
// other line is printed above it, and status redraws it.
type console struct {
	w     io.Writer
	color bool
	live  bool
	shown string // the progress line on the screen
}

// at prints one timed line.
func (c *console) at(t time.Duration, s style, format string, args ...any) {
	stamp := fmt.Sprintf("%7.2fs", t.Seconds())
	if c.color {
		stamp = ansiDim + stamp + ansiReset
	}
	c.clear()
	lines := strings.Split(fmt.Sprintf(format, args...), "\n")
	fmt.Fprintf(c.w, "%s  %s\n", stamp, c.paint(s, lines[0]))
	for _, l := range lines[1:] { // continuation lines, under the text
		fmt.Fprintf(c.w, "%s  %s\n", strings.Repeat(" ", 8), c.paint(s, l))
	}
	c.redraw()
}

// say prints an untimed line.
func (c *console) say(s style, format string, args ...any) {
	c.clear()
	fmt.Fprintln(c.w, c.paint(s, fmt.Sprintf(format, args...)))
	c.redraw()
}

// status replaces the progress line ("" removes it); without live it
// does nothing.
func (c *console) status(text string) {
	if !c.live {
		return
	}
	c.clear()
	if r := []rune(text); len(r) > maxStatus {
		text = string(r[:maxStatus])
	}
	c.shown = text
	c.redraw()
}

// maxStatus is the longest progress line, in characters: one that wraps
// on the terminal could not be erased.
const maxStatus = 79

// clearLine returns the cursor to the line's start and erases the line.
const clearLine = "\r\x1b[K"

func (c *console) clear() {
	if c.live && c.shown != "" {
		fmt.Fprint(c.w, clearLine)
	}
}

func (c *console) redraw() {
	if c.live && c.shown != "" {
		fmt.Fprint(c.w, c.paint(traffic, c.shown))
	}
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
