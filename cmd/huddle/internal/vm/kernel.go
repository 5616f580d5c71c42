package vm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// KernelDirEnv names a directory holding a kernel instead of the machine's
// own: the root of an unpacked linux-image package (`dpkg-deb -x
// linux-image-*.deb DIR`), with boot/vmlinuz-VERSION and
// lib/modules/VERSION (or usr/lib/modules/VERSION) under it.
const KernelDirEnv = "HUDDLE_VM_KERNEL_DIR"

// KernelCache is where .ci/run unpacks Debian's kernel package when none is
// installed; FindKernel looks there after the machine's root.
const KernelCache = "/var/cache/huddle-vm/kernel"

// Kernel is a bootable kernel image and its modules.
type Kernel struct {
	Version string // the release, e.g. 6.1.0-56-amd64
	Image   string // boot/vmlinuz-<Version>
	Modules string // lib/modules/<Version>, holding the modules under kernel/
}

// FindKernel returns the newest kernel with modules under
// $HUDDLE_VM_KERNEL_DIR when it is set, else under / (Debian's
// linux-image package installed) or KernelCache. The error wraps
// ErrUnavailable and names the package to install.
func FindKernel() (*Kernel, error) {
	if dir := os.Getenv(KernelDirEnv); dir != "" {
		k, err := kernelIn(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%s: %v: unpack Debian's linux-image-amd64 there (apt-get download linux-image-VERSION-amd64; dpkg-deb -x linux-image-*.deb %s)",
				ErrUnavailable, KernelDirEnv, dir, err, dir)
		}
		return k, nil
	}
	var whys []string
	for _, root := range []string{"/", KernelCache} {
		k, err := kernelIn(root)
		if err == nil {
			return k, nil
		}
		whys = append(whys, fmt.Sprintf("%s: %v", root, err))
	}
	return nil, fmt.Errorf("%w: no kernel with modules (%s): install Debian's linux-image-amd64, "+
		"or unpack it (apt-get download linux-image-VERSION-amd64; dpkg-deb -x linux-image-*.deb DIR) and set %s=DIR",
		ErrUnavailable, strings.Join(whys, "; "), KernelDirEnv)
}

// kernelIn finds the newest boot/vmlinuz-VERSION under root whose modules
// are there too and whose image can be read.
func kernelIn(root string) (*Kernel, error) {
	images, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(images) == 0 {
		return nil, errors.New("no boot/vmlinuz-*")
	}
	slices.SortFunc(images, func(a, b string) int { return compareVersions(b, a) })
	var why error
	for _, img := range images {
		v := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
		mods := ""
		for _, d := range []string{"lib/modules", "usr/lib/modules"} {
			if _, err := os.Stat(filepath.Join(root, d, v, "kernel")); err == nil {
				mods = filepath.Join(root, d, v)
				break
			}
		}
		if mods == "" {
			why = fmt.Errorf("%s has no modules: no lib/modules/%s/kernel", img, v)
			continue
		}
		f, err := os.Open(img)
		if err != nil {
			why = fmt.Errorf("cannot read the kernel image: %v", err)
			continue
		}
		f.Close()
		return &Kernel{Version: v, Image: img, Modules: mods}, nil
	}
	return nil, why
}

// compareVersions orders kernel releases by their numbers: 6.1.0-56 after
// 6.1.0-9.
func compareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' || r == '+' || r == '_' })
	}
	pa, pb := split(a), split(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			if c := na - nb; c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	return len(pa) - len(pb)
}

// DefaultModules are the modules the guest loads: netem and the devices
// of a virtual LAN (veth, bridge), and ifb with the ingress qdisc, the
// matchall classifier and the mirred action, for netem on the receive
// side (docs/experiments.md).
var DefaultModules = []string{"sch_netem", "veth", "bridge", "ifb", "sch_ingress", "cls_matchall", "act_mirred"}

// moduleOrder returns the module files (relative to k.Modules) to load, in
// an order that loads every dependency before its users. The dependencies
// come from modules.dep where depmod made one (an installed kernel), else
// from each module's own .modinfo (a kernel package unpacked with
// dpkg-deb, which ships no modules.dep). A module built into the kernel
// (modules.builtin) needs no file.
func (k *Kernel) moduleOrder(names []string) ([]string, error) {
	idx, err := k.index()
	if err != nil {
		return nil, err
	}
	var order []string
	seen := map[string]bool{}
	var visit func(name, user string) error
	visit = func(name, user string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		path, ok := idx.path[name]
		if !ok {
			if idx.builtin[name] {
				return nil
			}
			what := "module " + name
			if user != "" {
				what += ", which " + user + " needs,"
			}
			return fmt.Errorf("kernel %s has no %s (neither a file under %s nor in modules.builtin)", k.Version, what, k.Modules)
		}
		deps, err := idx.deps(path)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		order = append(order, path)
		return nil
	}
	for _, n := range names {
		if err := visit(moduleName(n), ""); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// modIndex says where each module of a kernel is and what it needs.
type modIndex struct {
	path    map[string]string // module name → file, relative to the modules directory
	builtin map[string]bool
	deps    func(path string) ([]string, error) // names of the modules a file needs
}

// index reads modules.dep, or walks the modules directory when there is
// none.
func (k *Kernel) index() (*modIndex, error) {
	idx := &modIndex{path: map[string]string{}, builtin: map[string]bool{}}
	if b, err := os.ReadFile(filepath.Join(k.Modules, "modules.builtin")); err == nil {
		for _, line := range strings.Fields(string(b)) {
			idx.builtin[moduleName(line)] = true
		}
	}
	dep, err := readModulesDep(filepath.Join(k.Modules, "modules.dep"))
	switch {
	case err == nil:
		for path := range dep {
			idx.path[moduleName(path)] = path
		}
		idx.deps = func(path string) ([]string, error) {
			var names []string
			for _, d := range dep[path] {
				names = append(names, moduleName(d))
			}
			return names, nil
		}
		return idx, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	err = filepath.WalkDir(k.Modules, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".ko") {
			return err
		}
		rel, err := filepath.Rel(k.Modules, path)
		if err != nil {
			return err
		}
		idx.path[moduleName(rel)] = filepath.ToSlash(rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	idx.deps = func(path string) ([]string, error) { return modinfoDepends(filepath.Join(k.Modules, path)) }
	return idx, nil
}

// modinfoDepends reads the "depends=" entry of a module's .modinfo
// section: the names of the modules it needs, comma-separated.
func modinfoDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("module %s: %v (compressed modules need a modules.dep: run depmod)", path, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("module %s has no .modinfo section", path)
	}
	b, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("module %s: %v", path, err)
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var names []string
			for _, n := range strings.Split(string(v), ",") {
				if n != "" {
					names = append(names, moduleName(n))
				}
			}
			return names, nil
		}
	}
	return nil, nil
}

// readModulesDep parses modules.dep: "path: dep dep ..." per line.
func readModulesDep(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dep := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		mod, deps, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		dep[strings.TrimSpace(mod)] = strings.Fields(deps)
	}
	return dep, sc.Err()
}

// moduleName is the name of a module or its file: kernel/net/sched/sch_netem.ko
// (or .ko.xz) is sch_netem; dashes read as underscores, as the kernel does.
func moduleName(path string) string {
	base := filepath.Base(path)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}
