package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestCompletionAndMan: the completion scripts and the manual page carry
// every flag of every command, from the commands' own flag sets, and are
// valid for their shell and for groff where those are installed.
func TestCompletionAndMan(t *testing.T) {
	out := map[string]string{}
	for _, which := range []string{"bash", "zsh", "fish", "man"} {
		var stdout, stderr bytes.Buffer
		args := []string{"completion", which}
		if which == "man" {
			args = []string{"man"}
		}
		if code := run(args, &stdout, &stderr); code != exitOK || stdout.Len() == 0 {
			t.Fatalf("huddle %s: exit %d, stderr %q", strings.Join(args, " "), code, &stderr)
		}
		out[which] = stdout.String()
	}
	total := 0
	for _, c := range commands {
		fs := flagsOf(c.name)
		total += len(fs)
		for _, f := range fs {
			for which, text := range out {
				want := "--" + f.name
				switch which {
				case "fish":
					want = "from " + c.name + "' -l " + f.name + " "
				case "man":
					want = "\\-\\-" + strings.ReplaceAll(f.name, "-", "\\-")
				}
				if !strings.Contains(text, want) {
					t.Errorf("%s: no %q for huddle %s --%s", which, want, c.name, f.name)
				}
			}
		}
	}
	// run's flags alone are over 50: a command that lost its flags here
	// (inspection stopped working) shows.
	if len(flagsOf("run")) < 50 || len(flagsOf("send")) <= len(flagsOf("status")) || total < 300 {
		t.Fatalf("%d flags of run, %d of send, %d of status, %d in all: the commands were not inspected", len(flagsOf("run")), len(flagsOf("send")), len(flagsOf("status")), total)
	}
	for shell, check := range map[string][]string{"bash": {"bash", "-n"}, "zsh": {"zsh", "-n"}, "fish": {"fish", "--no-execute"}} {
		if _, err := exec.LookPath(check[0]); err != nil {
			continue
		}
		cmd := exec.Command(check[0], check[1:]...)
		cmd.Stdin = strings.NewReader(out[shell])
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s does not parse its completion script: %v\n%s", shell, err, b)
		}
	}
	if _, err := exec.LookPath("groff"); err == nil {
		cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
		cmd.Stdin = strings.NewReader(out["man"])
		if b, err := cmd.CombinedOutput(); err != nil || len(b) > 0 {
			t.Errorf("groff warns about the manual page: %v\n%s", err, b)
		}
	}
}
