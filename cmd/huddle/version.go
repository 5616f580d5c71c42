package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/huddle-lan/huddle/internal/wire"
)

// buildInfo is what huddle version prints: the binary's build
// information (runtime/debug.ReadBuildInfo) and the wire version it speaks.
type buildInfo struct {
	Module   string `json:"module"`   // the main module's path
	Version  string `json:"version"`  // its version: a tag, a pseudo-version from the VCS, or "(devel)"
	Revision string `json:"revision"` // the VCS commit it was built from; "" when not recorded
	Modified bool   `json:"modified"` // the working tree differed from Revision
	VCSTime  string `json:"vcs_time"` // Revision's commit time (RFC 3339); "" when not recorded
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Wire     int    `json:"wire"` // wire.Version: nodes of different wire versions cannot form one group
}

// readBuildInfo returns this binary's buildInfo.
func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi)
}

// fromBuildInfo reads a buildInfo from bi, which may be nil. `go build`
// records the VCS revision (and, since go1.24, a version derived from it)
// only in a repository's main working tree, not with -buildvcs=false,
// `go run` or in a linked git worktree (golang/go#58218): there the
// version is "(devel)" and no revision is known.
func fromBuildInfo(bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Wire: wire.Version}
	if bi == nil {
		b.Version = "unknown"
		return b
	}
	b.Module, b.Version = bi.Main.Path, cmp.Or(bi.Main.Version, "unknown")
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.VCSTime = s.Value
		}
	}
	return b
}

// String is the one line huddle version prints, e.g.
//
//	huddle v0.0.0-20261123100000-9a5405e1c2ab+dirty (revision 9a5405e1c2, dirty; committed 2026-11-23T10:00:00Z) go1.26.8 linux/amd64, wire version 3
func (b buildInfo) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "huddle %s", b.Version)
	if b.Revision != "" {
		fmt.Fprintf(&s, " (revision %s", b.Revision[:min(len(b.Revision), 10)])
		if b.Modified {
			s.WriteString(", dirty")
		}
		if b.VCSTime != "" {
			fmt.Fprintf(&s, "; committed %s", b.VCSTime)
		}
		s.WriteString(")")
	} else if b.Version == "(devel)" {
		s.WriteString(" (no revision recorded)")
	}
	fmt.Fprintf(&s, " %s %s/%s, wire version %d", b.Go, b.OS, b.Arch, b.Wire)
	return s.String()
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs, parseOut := newFlagSet("huddle version")
	asJSON := fs.Bool("json", false, "print the version as one JSON object")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: huddle version [--json]\n\n"+
			"Prints huddle's module version, the VCS revision it was built from (dirty\n"+
			"when the tree had changes) and that commit's time, when the build recorded\n"+
			"them, the Go version, the system, and the wire version. Flags:\n\n")
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, parseOut, args, stdout, stderr); done {
		return code
	}
	b := readBuildInfo()
	if *asJSON {
		out, _ := json.Marshal(b) // strings, a bool and an int always encode
		fmt.Fprintf(stdout, "%s\n", out)
		return exitOK
	}
	fmt.Fprintln(stdout, b)
	return exitOK
}
