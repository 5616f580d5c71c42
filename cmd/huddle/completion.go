package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The completion scripts and the manual page are made from the commands'
// own flag sets: each command is run with its flags defined and nothing
// else (inspect), so that a flag added to a command is completed and
// documented without a second list to keep.

// inspecting, while set, receives the flag set of the command being
// inspected instead of letting it parse its arguments.
var inspecting func(*flag.FlagSet)

// inspected hands fs to inspecting and reports whether the command must
// stop there.
func inspected(fs *flag.FlagSet) bool {
	if inspecting == nil {
		return false
	}
	inspecting(fs)
	return true
}

// commands are huddle's commands as completion and the manual list them,
// with their synopsis and what they do (the lines of usage).
var commands = []struct{ name, synopsis, about string }{
	{"run", "huddle run [flags]", "run a node on this machine"},
	{"status", "huddle status [--group] [flags]", "print a running node's view, members and counters; with --group, every member's"},
	{"watch", "huddle watch [--service NAME]... [flags]", "stream what the running node sees: views, suspicions, leaders, the lock, deliveries"},
	{"send", "huddle send [flags] TEXT | -", "multicast TEXT, or standard input, through the running node"},
	{"elect", "huddle elect [flags]", "start a leader election from the running node and print the leader"},
	{"lock", "huddle lock [flags]", "acquire the group's lock on the running node, hold it, release it"},
	{"drop", "huddle drop [flags]", "make the running node drop received datagrams at random (an experiment)"},
	{"key", "huddle key [reload] [flags]", "print the running node's key fingerprints, or reload its key file"},
	{"keygen", "huddle keygen [--force] FILE", "write a new group key to FILE (mode 0600)"},
	{"demo", "huddle demo [flags]", "watch a small group on a private virtual LAN"},
	{"lab", "huddle lab [flags] [SCENARIO.toml]", "run an experiment on a virtual LAN, checked"},
	{"check", "huddle check [--skew D] [--crashed NODE[:INC]] LOG|DIR...", "check a group's guarantees from its nodes' JSON logs"},
	{"report", "huddle report [--out FILE] DIR", "write an HTML report, with plots and CSV, of a run's directory"},
	{"ping", "huddle ping [flags]", "tell whether multicast and unicast get through to the other machines"},
	{"version", "huddle version [--json]", "print the version, the revision, the Go and wire versions"},
	{"completion", "huddle completion bash|zsh|fish", "print a shell completion script"},
	{"man", "huddle man", "print this manual page"},
	{"help", "huddle help [COMMAND]", "print the commands, or a command's help"},
}

// synopsisOf returns the synopsis of the command named name.
func synopsisOf(name string) string {
	for _, c := range commands {
		if c.name == name {
			return c.synopsis
		}
	}
	return "huddle " + name + " [flags]"
}

// aFlag is one flag of a command, as completion and the manual show it.
type aFlag struct {
	name, arg, usage, def string
	isBool                bool
}

// flagsOf returns the flags of command name, sorted; none for commands
// without flags.
func flagsOf(name string) []aFlag {
	switch name {
	case "completion", "man", "help":
		return nil // no flag set: and running man here would inspect itself
	}
	var got *flag.FlagSet
	inspecting = func(fs *flag.FlagSet) { got = fs }
	defer func() { inspecting = nil }()
	run([]string{name}, io.Discard, io.Discard)
	if got == nil {
		return nil
	}
	var out []aFlag
	got.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		b, isBool := f.Value.(interface{ IsBoolFlag() bool })
		out = append(out, aFlag{name: f.Name, arg: arg, usage: usage, def: f.DefValue, isBool: isBool && b.IsBoolFlag()})
	})
	slices.SortFunc(out, func(a, b aFlag) int { return strings.Compare(a.name, b.name) })
	return out
}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh" && args[0] != "fish") {
		help := len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")
		w, code := stderr, exitUsage
		if help {
			w, code = stdout, exitOK // asked for: on stdout, as every command's
		}
		fmt.Fprintln(w, "Usage: huddle completion bash|zsh|fish\n\n"+
			"Prints a completion script for the shell, made from the commands' own flags:\n"+
			"  bash: source <(huddle completion bash)      (or save it in /etc/bash_completion.d/huddle)\n"+
			"  zsh:  huddle completion zsh > \"${fpath[1]}/_huddle\"\n"+
			"  fish: huddle completion fish > ~/.config/fish/completions/huddle.fish")
		return code
	}
	var b strings.Builder
	switch args[0] {
	case "bash":
		bashCompletion(&b)
	case "zsh":
		zshCompletion(&b)
	case "fish":
		fishCompletion(&b)
	}
	io.WriteString(stdout, b.String())
	return exitOK
}

func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

func bashCompletion(b *strings.Builder) {
	b.WriteString("# bash completion for huddle, made by `huddle completion bash`\n_huddle() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}\n")
	fmt.Fprintf(b, "  if [ \"$COMP_CWORD\" -eq 1 ]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(commandNames(), " "))
	b.WriteString("  local flags=\n  case $cmd in\n")
	for _, c := range commands {
		fs := flagsOf(c.name)
		if len(fs) == 0 {
			continue
		}
		var words []string
		for _, f := range fs {
			words = append(words, "--"+f.name)
		}
		fmt.Fprintf(b, "    %s) flags=%q ;;\n", c.name, strings.Join(words, " "))
	}
	b.WriteString("  esac\n")
	b.WriteString("  case $cur in\n    -*) COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\")) ;;\n    *) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n  esac\n}\ncomplete -F _huddle huddle\n")
}

// zshQuote escapes a help text for a zsh _arguments spec.
func zshQuote(s string) string {
	return strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
}

func zshCompletion(b *strings.Builder) {
	b.WriteString("#compdef huddle\n# zsh completion for huddle, made by `huddle completion zsh`\n_huddle() {\n  local -a cmds\n  cmds=(\n")
	for _, c := range commands {
		fmt.Fprintf(b, "    '%s:%s'\n", c.name, zshQuote(c.about))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )); then _describe command cmds; return; fi\n  case $words[2] in\n")
	for _, c := range commands {
		fs := flagsOf(c.name)
		if len(fs) == 0 {
			continue
		}
		fmt.Fprintf(b, "    %s) _arguments -s \\\n", c.name)
		for _, f := range fs {
			spec := fmt.Sprintf("--%s[%s]", f.name, zshQuote(f.usage))
			if !f.isBool {
				spec = fmt.Sprintf("--%s=[%s]:%s:", f.name, zshQuote(f.usage), zshQuote(cmp.Or(f.arg, "value")))
			}
			fmt.Fprintf(b, "      '%s' \\\n", spec)
		}
		b.WriteString("      '*:file:_files' ;;\n")
	}
	b.WriteString("  esac\n}\n_huddle \"$@\"\n")
}

func fishCompletion(b *strings.Builder) {
	b.WriteString("# fish completion for huddle, made by `huddle completion fish`\ncomplete -c huddle -f\n")
	for _, c := range commands {
		fmt.Fprintf(b, "complete -c huddle -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.about))
	}
	for _, c := range commands {
		for _, f := range flagsOf(c.name) {
			line := fmt.Sprintf("complete -c huddle -n '__fish_seen_subcommand_from %s' -l %s -d %s", c.name, f.name, fishQuote(f.usage))
			if !f.isBool {
				line += " -r"
			}
			b.WriteString(line + "\n")
		}
	}
}

func fishQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

func cmdMan(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, "Usage: huddle man\n\nPrints huddle's manual page (roff), made from the commands' own flags:\n  man <(huddle man)\n  huddle man > /usr/local/share/man/man1/huddle.1")
			return exitOK
		}
		fmt.Fprintf(stderr, "huddle man: unexpected argument %q\n", args[0])
		return exitUsage
	}
	var b strings.Builder
	bi := readBuildInfo()
	date, _, _ := strings.Cut(bi.VCSTime, "T") // the revision's date: the same page for the same build
	fmt.Fprintf(&b, ".TH HUDDLE 1 %q \"huddle %s\" \"User Commands\"\n", date, bi.Version)
	b.WriteString(".SH NAME\nhuddle \\- a group-communication node for LANs (reliable, view-synchronous IP multicast)\n")
	b.WriteString(".SH SYNOPSIS\n")
	for _, c := range commands {
		fmt.Fprintf(&b, ".B %s\n.br\n", roff(c.synopsis))
	}
	b.WriteString(".SH DESCRIPTION\n" + roff("Run one node per machine of a LAN: with no flags, a node joins 239.192.72.68:7468 on the interface of the default route and takes its ID from that interface's IPv4 address. Configuration comes from a TOML file (--config), HUDDLE_* environment variables and flags; flags win over the environment, the environment over the file. Every flag of huddle run is also accepted by status, send, elect, lock, drop and key, to find the node.") + "\n")
	b.WriteString(".SH COMMANDS\n")
	for _, c := range commands {
		fmt.Fprintf(&b, ".SS %s\n%s\n", roff(c.synopsis), roff(strings.ToUpper(c.about[:1])+c.about[1:]+"."))
		for _, f := range flagsOf(c.name) {
			head := "\\-\\-" + roff(f.name)
			if f.arg != "" {
				head += " \\fI" + roff(f.arg) + "\\fR"
			}
			usage := f.usage
			if f.def != "" && f.def != "false" && f.def != "0" && f.def != "0s" {
				usage += " (default " + f.def + ")"
			}
			fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", head, roff(usage))
		}
	}
	b.WriteString(".SH EXIT STATUS\n0: success. 1: the node cannot start or failed in the machine's present state (a restart may cure it). 2: a bad command line or configuration. 3: the group refused the node.\n")
	b.WriteString(".SH SEE ALSO\nThe repository's README.md and docs/: design.md, configuration.md, logs.md, control.md, security.md, operations.md, experiments.md, benchmarks.md.\n")
	io.WriteString(stdout, b.String())
	return exitOK
}

// roff escapes text for a roff line: backslashes, and a leading dot or
// quote that would make it a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var b strings.Builder
	for _, r := range s {
		if r > 127 {
			fmt.Fprintf(&b, `\[u%04X]`, r) // groff's escape: the page stays ASCII
			continue
		}
		b.WriteRune(r)
	}
	s = b.String()
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
