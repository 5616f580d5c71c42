package huddle_test

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/huddle-lan/huddle"

// layers ranks the module's packages, bottom up. A package may import
// only packages of a lower layer: every arrow points down (docs/design.md,
// "The layers"). Layer 0, the ground floor, holds the foundations: leaves
// that any package may use, and the only packages internal/ holds.
var layers = map[string]int{
	// The ground floor.
	"internal/wire": 0, "internal/logs": 0, "internal/seal": 0, "internal/netmodel": 0,
	"internal/sim": 0, "internal/systool": 0, "internal/testutil": 0, "internal/testutil/msgnet": 0,
	"internal/testutil/script": 0, "internal/idset": 0, "internal/suggest": 0,
	// The product: the protocols, the node and the front door.
	"multicast":        1,
	"membership":       2,
	"multicast/memnet": 2, // the in-memory twin of multicast.Transport
	"election":         3, "mutex": 3,
	"config": 4, // the node's settings, with the protocols' defaults
	"node":   5,
	"":       6, // the Group API, package huddle: the front door
	// The workshop: the command and the packages only it uses.
	"cmd/huddle/internal/logx": 7, "cmd/huddle/internal/sdnotify": 7, "cmd/huddle/internal/logcheck": 7,
	"cmd/huddle/internal/lan": 7, "cmd/huddle/internal/workload": 7, "cmd/huddle/internal/control": 7,
	"cmd/huddle/internal/metrics": 7, "cmd/huddle/internal/ping": 7, "cmd/huddle/internal/vm": 7,
	"cmd/huddle/internal/lab": 8, "cmd/huddle/internal/report": 8, "cmd/huddle/internal/bench": 8,
	"cmd/huddle/internal/scenario": 9,
	"cmd/huddle":                   10,
}

// behindTheDoor are the product's packages that the workshop reaches only
// through the Group API (the root package), which re-exports what a tool
// needs of them.
var behindTheDoor = []string{"node", "membership", "election", "mutex", "multicast"}

// rawSockets are the workshop's packages allowed multicast's sockets
// (multicast.Open) besides the front door: huddle ping and the
// benchmarks' raw baseline measure the network the group's sockets use,
// with the same socket options, and are no group members.
var rawSockets = map[string]bool{"cmd/huddle/internal/ping": true, "cmd/huddle/internal/bench": true}

// TestLayers fails for a package that imports one of its own layer or
// above, for a package missing from the table, for a package of
// internal/ above the ground floor, and for a workshop package (under
// cmd/) that imports the product behind the front door.
func TestLayers(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files but tests, or none at all
		}
		rel := filepath.ToSlash(path)
		if rel == "." {
			rel = ""
		}
		checkWorkshop(t, rel, pkg)
		if len(pkg.GoFiles) == 0 {
			return nil // only tests (docs)
		}
		own, ok := layers[rel]
		switch {
		case !ok:
			t.Errorf("package %q has no layer in layers_test.go: place it", rel)
			return nil
		case own > 0 && strings.HasPrefix(rel, "internal/"):
			t.Errorf("package %q is in internal/, the ground floor, at layer %d: internal/ holds only foundations (layer 0)", rel, own)
		}
		for _, dep := range ownImports(pkg.Imports) {
			if l, ok := layers[dep]; ok && l > 0 && l >= own {
				t.Errorf("package %q (layer %d) imports %q (layer %d): an arrow pointing up or sideways", rel, own, dep, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkWorkshop fails for a package under cmd/ whose code or tests import
// a package behind the front door.
func checkWorkshop(t *testing.T, rel string, pkg *build.Package) {
	t.Helper()
	if !strings.HasPrefix(rel, "cmd/") {
		return
	}
	imports := slices.Concat(pkg.Imports, pkg.TestImports, pkg.XTestImports)
	for _, dep := range ownImports(imports) {
		if slices.Contains(behindTheDoor, dep) && !(dep == "multicast" && rawSockets[rel]) {
			t.Errorf("workshop package %q imports %q: a tool sees only the front door (package huddle); re-export what it needs there", rel, dep)
		}
	}
}

// ownImports returns the module's packages among imports, relative to
// the module ("" for the root).
func ownImports(imports []string) []string {
	var own []string
	for _, imp := range imports {
		if dep, ok := strings.CutPrefix(imp, module); ok {
			own = append(own, strings.TrimPrefix(dep, "/"))
		}
	}
	return own
}
