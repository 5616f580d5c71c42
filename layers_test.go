package huddle_test

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/huddle-lan/huddle"

// layers ranks the module's packages, bottom up. A package may import
// only packages of a lower layer: every arrow points down (docs/design.md,
// "The layers"). Foundations (layer 0) are leaves anything may use.
var layers = map[string]int{
	"internal/wire": 0, "internal/systool": 0, "internal/logx": 0, "internal/testutil/msgnet": 0, "internal/testutil/script": 0, "internal/logs": 0,
	"internal/seal": 0, "internal/netmodel": 0, "internal/sdnotify": 0, "internal/idset": 0,
	"multicast":  1,
	"membership": 2, "internal/sim": 2, "internal/memnet": 2,
	"election": 3, "mutex": 3,
	"config":           4, // the node's settings, with the protocols' defaults
	"node":             5,
	"":                 6, // the Group API, package huddle
	"internal/control": 7, "internal/workload": 7, "internal/lab": 7, "internal/logcheck": 7, "internal/testutil": 7,
	"internal/ping": 7, "internal/metrics": 7,
	"internal/demo": 8, "internal/bench": 8, "internal/report": 8,
	"internal/scenario": 9,
	"cmd/huddle":        10,
}

// TestLayers fails for a package that imports one of its own layer or
// above, and for a package missing from the table.
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
		if len(pkg.GoFiles) == 0 {
			return nil // only tests (docs)
		}
		own, ok := layers[rel]
		if !ok {
			t.Errorf("package %q has no layer in layers_test.go: place it", rel)
			return nil
		}
		for _, imp := range pkg.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			dep = strings.TrimPrefix(dep, "/")
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
