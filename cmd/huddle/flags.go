package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/suggest"
)

// newFlagSet returns the flag set of a command. The flag package prints
// the help (and parse errors) to fs.Output(): the buffer holds them until
// parseOperands says whether the help was asked for, which goes to stdout
// (huddle run --help | less), or an error, which flagError words itself.
func newFlagSet(name string) (*flag.FlagSet, *bytes.Buffer) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	out := new(bytes.Buffer)
	fs.SetOutput(out)
	return fs, out
}

// parseOperands parses a command's flags with its operands (logs,
// directories, a file, the text to send) before, between or after them;
// "--" ends the flags. It reports the operands and whether the command
// ends here, with its exit code: help asked for (printed once, on
// stdout), or a bad flag (said on stderr, with no help). Each flag is
// parsed once, so that flags given more than once add up.
func parseOperands(fs *flag.FlagSet, out *bytes.Buffer, args []string, stdout, stderr io.Writer) (operands []string, code int, done bool) {
	if inspected(fs) {
		return nil, exitOK, true
	}
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			stdout.Write(out.Bytes())
			return nil, exitOK, true
		case err != nil:
			fmt.Fprintln(stderr, flagError(fs, err))
			return nil, exitUsage, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			operands = append(operands, rest...)
			break
		}
		operands, args = append(operands, rest[0]), rest[1:]
	}
	fs.SetOutput(stderr)
	return operands, exitOK, false
}

// parseArgs is parseOperands for a command that takes no operands.
func parseArgs(fs *flag.FlagSet, out *bytes.Buffer, args []string, stdout, stderr io.Writer) (code int, done bool) {
	operands, code, done := parseOperands(fs, out, args, stdout, stderr)
	if !done && len(operands) > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (%s --help)\n", fs.Name(), operands[0], fs.Name())
		return exitUsage, true
	}
	return code, done
}

// The flag package's words for a bad flag (flag.FlagSet.Parse).
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	badValue      = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]*): (.*)$`)
	noValue       = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError words a bad flag of fs's command for people: the flag, the
// value and what it takes; for a flag that does not exist, the one meant.
// The flag package's own message ("parse error", then every flag's help)
// names neither.
func flagError(fs *flag.FlagSet, err error) string {
	msg, name := err.Error(), fs.Name()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		hint := ""
		if k, ok := suggest.Closest(m[1], names, func(k string) string { return k }); ok {
			hint = "; did you mean --" + k + "?"
		}
		return fmt.Sprintf("%s: unknown flag --%s%s (%s --help lists the flags)", name, m[1], hint, name)
	}
	if m := noValue.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s: --%s needs a value (%s --help)", name, m[1], name)
	}
	m := badValue.FindStringSubmatch(msg)
	if m == nil {
		return name + ": " + msg
	}
	value, flagName, problem := m[1], m[2], m[3]
	f := fs.Lookup(flagName)
	if f == nil {
		return name + ": " + msg
	}
	if g, ok := f.Value.(flag.Getter); ok && problem == "parse error" {
		problem = valueProblem(g.Get(), value, flagName, f.DefValue)
	}
	head, usage := flag.UnquoteUsage(f)
	head = strings.TrimSpace("--" + flagName + " " + head)
	return fmt.Sprintf("%s: --%s %s: %s\n  %s: %s", name, flagName, value, problem, head, usage)
}

// valueProblem says why value is no value of a flag of the type of v (a
// Getter's value), for --name with default def.
func valueProblem(v any, value, name, def string) string {
	switch v.(type) {
	case time.Duration:
		// A number: the unit of the default is the likeliest (--hold 5
		// is 5s, --skew 2 is 2ms).
		unit := "s"
		if d, err := time.ParseDuration(def); err == nil && d > 0 && d < time.Second {
			unit = "ms"
		}
		if _, err := time.ParseDuration(value + unit); err == nil {
			return fmt.Sprintf("%s has no unit; write --%s %s%s (units: ns, us, ms, s, m, h)", value, name, value, unit)
		}
		var d config.Duration
		if err := d.UnmarshalText([]byte(value)); err != nil {
			return err.Error()
		}
	case bool:
		return fmt.Sprintf("%q is not a boolean (true or false)", value)
	case int, int64, uint, uint64:
		if _, err := strconv.ParseFloat(value, 64); err == nil {
			return fmt.Sprintf("%q is not a whole number", value)
		}
	}
	return fmt.Sprintf("%q is not a number", value)
}
