// Package docs_test keeps the documentation true to the repository: the
// README stays a short front door, nothing points outside the repository,
// relative links and anchors resolve, and every log event, counter and
// control command the code has is documented. It has no code of its own.
package docs_test

import (
	"bufio"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/internal/testutil"
	"github.com/huddle-lan/huddle/multicast/memnet"
	"github.com/huddle-lan/huddle/node"
)

// root is the repository, from this package's directory.
const root = ".."

// maxREADMELines is the most lines README.md may have: a front door, with
// the details in docs/.
const maxREADMELines = 320

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markdownFiles are the pages whose links are checked: README.md and
// docs/*.md, relative to root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func TestREADMEIsShort(t *testing.T) {
	lines := strings.Count(read(t, "README.md"), "\n")
	if lines > maxREADMELines {
		t.Errorf("README.md has %d lines; at most %d: move details to docs/", lines, maxREADMELines)
	}
}

// TestNothingPointsOutside fails when a file refers to the steering
// repository's shared folder or to a design document outside the
// repository. The strings are assembled so that this file does not
// mention them itself.
func TestNothingPointsOutside(t *testing.T) {
	forbidden := []string{".." + "/shared", "DESIGN" + ".md"}
	for _, rel := range repoFiles(t) {
		checked := rel == "README.md" || rel == "justfile" ||
			strings.HasPrefix(rel, "docs/") && strings.HasSuffix(rel, ".md") ||
			strings.HasPrefix(rel, ".ci/") ||
			strings.HasSuffix(rel, ".go")
		if !checked {
			continue
		}
		for i, line := range strings.Split(read(t, rel), "\n") {
			for _, f := range forbidden {
				if strings.Contains(line, f) {
					t.Errorf("%s:%d mentions %s, which is outside the repository: %s", rel, i+1, f, strings.TrimSpace(line))
				}
			}
		}
	}
}

// repoFiles lists the repository's files, relative to root with '/',
// leaving out .git and testdata directories.
func repoFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && (rel == ".git" || d.Name() == "testdata"):
			return filepath.SkipDir
		case !d.IsDir() && rel != ".git":
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// prose returns a page's lines outside fenced code blocks, each with its
// line number, and with inline code spans blanked out.
func prose(text string) (lines []string, numbers []int) {
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			lines = append(lines, codeSpan.ReplaceAllString(l, ""))
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// anchors returns the anchors a page's headings get, as GitHub makes them:
// lower case, punctuation other than '-' and '_' dropped, spaces as '-',
// and -1, -2 … after repeats; plus explicit <a name> or id anchors.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	in := false
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if in {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[2]) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func TestRelativeLinksResolve(t *testing.T) {
	for _, page := range markdownFiles(t) {
		text := read(t, page)
		lines, numbers := prose(text)
		for i, l := range lines {
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
				targets = append(targets, m[1])
			}
			if m := refLink.FindStringSubmatch(l); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if scheme.MatchString(target) {
					continue // http:, https:, mailto:
				}
				checkLink(t, page, numbers[i], target, text)
			}
		}
	}
}

// checkLink checks one relative link of page (at line) to a file and,
// after '#', a heading of it.
func checkLink(t *testing.T, page string, line int, target, pageText string) {
	t.Helper()
	path, anchor, _ := strings.Cut(target, "#")
	text, dest := pageText, page
	if path != "" {
		dest = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
		b, err := os.ReadFile(filepath.Join(root, dest))
		if err != nil {
			if _, serr := os.Stat(filepath.Join(root, dest)); serr == nil && anchor == "" {
				return // a directory
			}
			t.Errorf("%s:%d links to %s, which does not exist", page, line, target)
			return
		}
		text = string(b)
	}
	if anchor == "" {
		return
	}
	if !strings.HasSuffix(dest, ".md") {
		t.Errorf("%s:%d links to %s: an anchor in a file that is not Markdown", page, line, target)
		return
	}
	if !anchors(text)[anchor] {
		t.Errorf("%s:%d links to %s, but %s has no heading with anchor #%s", page, line, target, dest, anchor)
	}
}

// section returns the part of a page from the heading whose text is
// title to the next heading of the same or a higher level.
func section(t *testing.T, page, text, title string) string {
	t.Helper()
	sec, ok := testutil.Section(text, title)
	if !ok {
		t.Fatalf("%s has no heading %q", page, title)
	}
	return sec
}

// goFiles parses the repository's Go sources, tests and this package
// left out.
func goFiles(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, rel := range repoFiles(t) {
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "docs/") {
			continue
		}
		f, err := parser.ParseFile(fset, root+"/"+rel, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// eventsFile declares the event names, and nothing else (internal/logs).
const eventsFile = "internal/logs/events.go"

// logsPath is the import path of internal/logs.
const logsPath = "github.com/huddle-lan/huddle/internal/logs"

// eventConstants returns the event names of internal/logs: the string
// constants of eventsFile, by value, with their names.
func eventConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, eventsFile), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			t.Fatalf("%s declares more than constants", eventsFile)
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: %s is not a string literal", eventsFile, name.Name)
				}
				v, _ := strconv.Unquote(lit.Value)
				consts[v] = name.Name
			}
		}
	}
	return consts
}

// loggedEvents finds the events the code logs: every Str(k, v) call whose
// key k is logs.EventKey (or the literal "event") in the Go sources,
// tests and internal/logs left out. v must be one of the event constants
// (names, by name): the result maps each constant logged to a place that
// logs it. Any other v is an error.
func loggedEvents(t *testing.T, names map[string]bool) map[string]string {
	t.Helper()
	fset, files := goFiles(t)
	logged := map[string]string{}
	for _, f := range files {
		if strings.HasPrefix(fset.Position(f.Pos()).Filename, root+"/internal/logs/") {
			continue
		}
		pkg := "" // the name internal/logs is imported as, if it is
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == logsPath {
				pkg = "logs"
				if imp.Name != nil {
					pkg = imp.Name.Name
				}
			}
		}
		constant := func(e ast.Expr) (string, bool) {
			sel, ok := e.(*ast.SelectorExpr)
			if !ok {
				return "", false
			}
			x, ok := sel.X.(*ast.Ident)
			return sel.Sel.Name, ok && pkg != "" && x.Name == pkg
		}
		where := func(n ast.Node) string { return strings.TrimPrefix(fset.Position(n.Pos()).String(), root+"/") }
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Str" {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Value == `"event"` {
				t.Errorf("%s: logs an event with the key \"event\": use logs.EventKey and a constant of %s", where(call), eventsFile)
				return true
			}
			if key, ok := constant(call.Args[0]); !ok || key != "EventKey" {
				return true
			}
			if name, ok := constant(call.Args[1]); ok && names[name] {
				logged[name] = where(call)
			} else {
				t.Errorf("%s: logs an event that is not a constant of %s", where(call), eventsFile)
			}
			return true
		})
	}
	return logged
}

// TestEveryEventIsDocumented: every event constant has a row in the
// Events tables of docs/logs.md, every row names one, and the code logs
// each of them, and no other.
func TestEveryEventIsDocumented(t *testing.T) {
	const page = "docs/logs.md"
	consts := eventConstants(t)
	names := map[string]bool{}
	for _, name := range consts {
		names[name] = true
	}
	if consts[logs.ViewInstalled] != "ViewInstalled" || len(consts) < 30 {
		t.Fatalf("%s: read %d event constants: %v", eventsFile, len(consts), consts)
	}
	logged := loggedEvents(t, names)
	// The search must find what it is known to find: events of the node,
	// of its drop, of the control socket and of the multicast socket.
	for _, known := range []string{"ViewInstalled", "NodeDrop", "ControlRequest", "SocketRcvbufCapped"} {
		if _, ok := logged[known]; !ok {
			t.Fatalf("the search of the Go sources for logged events missed logs.%s; found %d", known, len(logged))
		}
	}
	doc := section(t, page, read(t, page), "Events")
	rows := map[string]bool{}
	for _, l := range strings.Split(doc, "\n") {
		if m := regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|").FindStringSubmatch(l); m != nil {
			rows[m[1]] = true
			if _, ok := consts[m[1]]; !ok {
				t.Errorf("%s: the row of `%s` names no event of %s", page, m[1], eventsFile)
			}
		}
	}
	for _, v := range slices.Sorted(maps.Keys(consts)) {
		if !rows[v] {
			t.Errorf("%s: the event `%s` (logs.%s) has no row in its Events tables", page, v, consts[v])
		}
		if _, ok := logged[consts[v]]; !ok {
			t.Errorf("%s: logs.%s (%s) is logged nowhere", eventsFile, consts[v], v)
		}
	}
}

// counters returns the names of a real node's counters, in order, from
// its status: a node run on the simulator's network, in a bubble of
// virtual time.
func counters(t *testing.T) []string {
	t.Helper()
	var names []string
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := config.Local()
		cfg.ID, cfg.Iface = 1, "sim0"
		n := node.New(node.Options{Config: cfg, Transport: memnet.New(netmodel.Options{Seed: 1}).Endpoint(netmodel.Addr(1)),
			Log: zerolog.Nop(), Inc: 1})
		done := make(chan error, 1)
		go func() { done <- n.Run(ctx) }()
		st, err := n.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range st.Counters {
			names = append(names, c.Name)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("the node did not stop")
		}
	})
	return names
}

func TestEveryCounterIsDocumented(t *testing.T) {
	const page = "docs/logs.md"
	names := counters(t)
	if !slices.Contains(names, "injected_drops") || len(names) < 50 {
		t.Fatalf("a node's status lists %d counters: %v", len(names), names)
	}
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			t.Errorf("counter %s is listed twice (node.stats and the status JSON would carry it twice)", name)
		}
		seen[name] = true
	}
	doc := section(t, page, read(t, page), "The counters of node.stats")
	for _, name := range names {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("%s: the counter `%s` of node.stats is missing from its section \"The counters of node.stats\"", page, name)
		}
	}
}

// TestREADMEShowsEveryCommand keeps the front door's list of commands
// complete: every command of huddle's usage appears in README.md.
func TestREADMEShowsEveryCommand(t *testing.T) {
	readme := read(t, "README.md")
	usage := read(t, "cmd/huddle/main.go")
	start := strings.Index(usage, "Usage:\n")
	if start < 0 {
		t.Fatal("cmd/huddle/main.go: no usage text")
	}
	sc := bufio.NewScanner(strings.NewReader(usage[start:]))
	found := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "huddle" || f[1] == "help" {
			continue
		}
		found++
		if !strings.Contains(readme, "huddle "+f[1]) {
			t.Errorf("README.md does not mention `huddle %s`", f[1])
		}
	}
	if found < 5 {
		t.Fatalf("read %d commands from huddle's usage; the format changed?", found)
	}
}

// TestRefusalSettingsAreListed: the settings a group refuses a joiner
// over (config.Config.GroupSettings, those sent only when not the default
// included) are the ones README.md's exit code 3, logs.md's member.refused,
// configuration.md's "Settings every member must share" and design.md's
// "Refusal" list.
func TestRefusalSettingsAreListed(t *testing.T) {
	cfg := config.LAN()
	cfg.Election.RingOrder, cfg.Mutex.Algorithm = "join", "central" // not the defaults: every setting is sent
	var names []string
	for _, s := range cfg.GroupSettings() {
		names = append(names, s.Name)
	}
	if len(names) < 8 {
		t.Fatalf("GroupSettings lists %d settings: %v", len(names), names)
	}
	readme := read(t, "README.md")
	logsPage := read(t, "docs/logs.md")
	for _, place := range []struct{ page, text string }{
		{"README.md (exit code 3)", tableRow(t, readme, "| 3 |")},
		{"docs/logs.md (member.refused)", tableRow(t, logsPage, "| `member.refused` |")},
		{"docs/configuration.md", section(t, "docs/configuration.md", read(t, "docs/configuration.md"), "Settings every member must share")},
		{"docs/design.md (Refusal)", section(t, "docs/design.md", read(t, "docs/design.md"), "Refusal")},
	} {
		for _, name := range names {
			if !strings.Contains(place.text, "`"+name+"`") {
				t.Errorf("%s does not list `%s`, a setting the group refuses a joiner over", place.page, name)
			}
		}
	}
}

// TestREADMEIsAFrontDoor: README.md serves someone without a clone: how
// to get the source, a list of contents that names every section, a
// quick start on three machines, what to do when multicast does not get
// through, the settings of JGroups and Corosync in huddle's words, the
// time of the tests and what -short leaves out, and the journal's logs
// checked.
func TestREADMEIsAFrontDoor(t *testing.T) {
	readme := read(t, "README.md")
	contents := section(t, "README.md", readme, "Contents")
	for _, l := range strings.Split(readme, "\n") {
		if title, ok := strings.CutPrefix(l, "## "); ok && title != "Contents" {
			if !strings.Contains(contents, "["+title+"](#") {
				t.Errorf("README.md: the contents do not list the section %q", title)
			}
		}
	}
	for _, c := range []struct{ section, want string }{
		{"Getting it", "git clone https://github.com/huddle-lan/huddle.git"},
		{"On three machines", "huddle ping"},
		{"On three machines", "docs/experiments.md#on-real-machines"},
		{"When multicast does not get through", "huddle ping"},
		{"When multicast does not get through", "IGMP snooping"},
		{"When multicast does not get through", "firewall-cmd"},
		{"When multicast does not get through", "ufw allow"},
		{"When multicast does not get through", "nft insert rule"},
		{"When multicast does not get through", "Container overlays"},
		{"When multicast does not get through", "Cloud networks"},
		{"When multicast does not get through", "--transport unicast"},
		{"Running a node", "journalctl -u huddle -o cat"},
		{"Running a node", "huddle check node-*.json"},
		{"Tests", "-short"},
		{"Tests", "minutes"},
	} {
		if !strings.Contains(section(t, "README.md", readme, c.section), c.want) {
			t.Errorf("README.md: section %q does not say %q", c.section, c.want)
		}
	}
	// The map from the peers' settings, one row per setting the issue
	// asked for, each naming huddle's.
	peers := section(t, "README.md", readme, "Coming from JGroups or Corosync")
	for peer, ours := range map[string]string{"FD_ALL": "`suspect_timeout`", "totem.token": "`suspect_timeout`", "NAKACK2": "SRM repair",
		"SEQUENCER": "`--order total`", "MERGE3": "merge"} {
		if !strings.Contains(tableRow(t, peers, peer), ours) {
			t.Errorf("README.md: the row of %s does not name %s", peer, ours)
		}
	}
}

// tableRow returns the first table row of text that mentions what.
func tableRow(t *testing.T, text, what string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "| ") && strings.Contains(l, what) {
			return l
		}
	}
	t.Fatalf("no table row mentions %s", what)
	return ""
}

// TestREADMELibraryCompiles: the library's example in README.md is
// example_readme_test.go's, which the tests compile, as printed.
func TestREADMELibraryCompiles(t *testing.T) {
	lib := section(t, "README.md", read(t, "README.md"), "The library")
	_, code, ok := strings.Cut(lib, "```go\n")
	code, _, ok2 := strings.Cut(code, "```")
	if !ok || !ok2 || len(code) < 100 {
		t.Fatal("README.md: \"The library\" has no Go code")
	}
	if file := read(t, "example_readme_test.go"); !strings.Contains(file, code) {
		t.Errorf("README.md's Go code is not example_readme_test.go's, which the tests compile:\n%s", code)
	}
}
