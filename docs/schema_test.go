package docs_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/huddle-lan/huddle/internal/logs"
)

// The log schema is an interface: scripts, dashboards and checkers read
// the logs by their events' and fields' names. TestLogSchema reads from
// the Go sources which fields each event is logged with and their JSON
// types, and holds them against the record of the schema's version
// (docs/testdata/log-schema-v<N>.txt, N = logs.SchemaVersion): a field
// recorded there that is gone, or logged with another type, fails the
// test until logs.SchemaVersion rises and docs/logs.md's changelog says
// what changed. A field added is recorded with -update-schema; an
// addition keeps the version.

var updateSchema = flag.Bool("update-schema", false, "write the log fields the code logs as the record of the current schema version")

// schemaFile is the record of schema version v.
func schemaFile(v int) string {
	return filepath.Join(root, "docs", "testdata", fmt.Sprintf("log-schema-v%d.txt", v))
}

// jsonTypes maps zerolog's field methods to the JSON type they write.
var jsonTypes = map[string]string{
	"Str": "string", "Stringer": "string", "Err": "string", "Time": "string",
	"Strs": "[string]",
	"Int":  "number", "Int8": "number", "Int16": "number", "Int32": "number", "Int64": "number",
	"Uint": "number", "Uint8": "number", "Uint16": "number", "Uint32": "number", "Uint64": "number",
	"Float32": "number", "Float64": "number", "Dur": "number",
	"Ints": "[number]", "Ints64": "[number]", "Uints": "[number]", "Uints64": "[number]", "Floats64": "[number]",
	"Bool": "bool", "Bools": "[bool]",
	"Dict": "object", "Interface": "any", "RawJSON": "any", "Any": "any",
}

// fieldConstants returns the field names of internal/logs by constant
// name: the string constants of fields.go and schema.go.
func fieldConstants(t *testing.T) map[string]string {
	t.Helper()
	consts := map[string]string{}
	for _, f := range []string{"internal/logs/fields.go", "internal/logs/schema.go"} {
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							consts[name.Name] = v
						}
					}
				}
			}
		}
	}
	return consts
}

// loggedFields finds, in the Go sources, the fields each event is logged
// with: a field call (Str(logs.ViewKey, ...)) belongs to the events named
// in its block or in a block that holds it or that it holds (the event's
// chain, or a variable that carries the chain into an if or a case); not
// to those of a sibling branch. It returns event → field → JSON type; the
// fields every line has (time, level, node, event, message) are left out.
func loggedFields(t *testing.T) map[string]map[string]string {
	t.Helper()
	events := eventConstants(t)
	byName := map[string]string{}
	for v, name := range events {
		byName[name] = v
	}
	fields := fieldConstants(t)
	fset, files := goFiles(t)
	out := map[string]map[string]string{}
	for _, f := range files {
		if strings.HasPrefix(fset.Position(f.Pos()).Filename, root+"/internal/logs/") {
			continue
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				s := &funcScan{byName: byName, fields: fields}
				s.walk(fd.Body, nil)
				s.attribute(out)
			}
		}
	}
	return out
}

// A logCall is an event or a field call, with the blocks it is in,
// outermost first.
type logCall struct {
	blocks []ast.Node
	event  string // the event's name, for an event call
	field  string // the field's name and JSON type, for a field call
	typ    string
}

// funcScan collects one function's event and field calls.
type funcScan struct {
	byName map[string]string // event constant name → value
	fields map[string]string // field constant name → value
	calls  []logCall
}

// walk notes the calls under n, which is in blocks.
func (s *funcScan) walk(n ast.Node, blocks []ast.Node) {
	ast.Inspect(n, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause, *ast.FuncLit:
			if x != n {
				s.walk(x, append(slices.Clip(blocks), x))
				return false
			}
		case *ast.CallExpr:
			s.call(x, blocks)
		}
		return true
	})
}

// call notes a field or event call.
func (s *funcScan) call(call *ast.CallExpr, blocks []ast.Node) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	typ, isField := jsonTypes[sel.Sel.Name]
	switch {
	case !isField:
	case sel.Sel.Name == "Err" && len(call.Args) == 1:
		s.calls = append(s.calls, logCall{blocks: blocks, field: logs.ErrorKey, typ: typ})
	case len(call.Args) < 2:
	default:
		key, ok := logsConst(call.Args[0])
		if !ok {
			return
		}
		if key == "EventKey" {
			if ev, ok := logsConst(call.Args[1]); ok && s.byName[ev] != "" {
				s.calls = append(s.calls, logCall{blocks: blocks, event: s.byName[ev]})
			}
			return
		}
		if name, ok := s.fields[key]; ok && !lineField[name] {
			s.calls = append(s.calls, logCall{blocks: blocks, field: name, typ: typ})
		}
	}
}

// lineField are the fields of every line (docs/logs.md, "The line format").
var lineField = map[string]bool{logs.TimeKey: true, logs.LevelKey: true, logs.NodeKey: true, logs.EventKey: true, logs.MessageKey: true}

// attribute adds what the function logs to out: each field to the events
// on its path of blocks.
func (s *funcScan) attribute(out map[string]map[string]string) {
	for _, e := range s.calls {
		if e.event == "" {
			continue
		}
		if out[e.event] == nil {
			out[e.event] = map[string]string{}
		}
		for _, f := range s.calls {
			if f.field != "" && (isPrefix(f.blocks, e.blocks) || isPrefix(e.blocks, f.blocks)) {
				out[e.event][f.field] = f.typ
			}
		}
	}
}

func isPrefix(a, b []ast.Node) bool { return len(a) <= len(b) && slices.Equal(a, b[:len(a)]) }

// logsConst returns the constant name of an expression logs.X.
func logsConst(e ast.Expr) (string, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	x, ok := sel.X.(*ast.Ident)
	return sel.Sel.Name, ok && x.Name == "logs"
}

// schemaText formats event → field → type, a line each, sorted.
func schemaText(m map[string]map[string]string) string {
	var lines []string
	for ev, fs := range m {
		for f, typ := range fs {
			lines = append(lines, fmt.Sprintf("%s %s %s", ev, f, typ))
		}
	}
	slices.Sort(lines)
	return "# event field JSON-type: the log schema's fields as the code logs them (docs/schema_test.go)\n" + strings.Join(lines, "\n") + "\n"
}

func parseSchema(text string) map[string]map[string]string {
	m := map[string]map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || strings.HasPrefix(l, "#") {
			continue
		}
		if m[f[0]] == nil {
			m[f[0]] = map[string]string{}
		}
		m[f[0]][f[1]] = f[2]
	}
	return m
}

func TestLogSchema(t *testing.T) {
	got := loggedFields(t)
	if got[logs.ViewInstalled][logs.CoordinatorIncarnationKey] != "number" || got[logs.Deliver][logs.GSeqKey] != "number" ||
		got[logs.NodeStarted][logs.SchemaKey] != "number" || len(got) < 30 {
		t.Fatalf("the search of the sources found %d events, view.installed %v: a search that misses these misses others", len(got), got[logs.ViewInstalled])
	}
	path := schemaFile(logs.SchemaVersion)
	if *updateSchema {
		if err := os.WriteFile(path, []byte(schemaText(got)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("schema version %d has no record (%v): if you raised logs.SchemaVersion, write the change in docs/logs.md's changelog and record the new version with go test ./docs -run TestLogSchema -update-schema", logs.SchemaVersion, err)
	}
	want := parseSchema(string(b))
	for _, ev := range slices.Sorted(mapKeys(want)) {
		for _, f := range slices.Sorted(mapKeys(want[ev])) {
			switch typ, ok := got[ev][f]; {
			case !ok:
				t.Errorf("%s: the field %s of %s is no longer logged: the logs' readers rely on it. Keep it, or raise logs.SchemaVersion, write the change in docs/logs.md's changelog and record the version (-update-schema)", path, f, ev)
			case typ != want[ev][f]:
				t.Errorf("%s: the field %s of %s is now logged as %s, not %s: keep its type, or raise logs.SchemaVersion, write the change in docs/logs.md's changelog and record the version (-update-schema)", path, f, ev, typ, want[ev][f])
			}
		}
	}
	for _, ev := range slices.Sorted(mapKeys(got)) {
		for _, f := range slices.Sorted(mapKeys(got[ev])) {
			if _, ok := want[ev][f]; !ok {
				t.Errorf("%s logs a field %s that schema version %d does not record: document it in docs/logs.md, then record it with go test ./docs -run TestLogSchema -update-schema (an addition keeps the version)", ev, f, logs.SchemaVersion)
			}
		}
	}
}

// TestLogFieldsAreDocumented: every field the code logs an event with is
// named in the event's row of docs/logs.md.
func TestLogFieldsAreDocumented(t *testing.T) {
	const page = "docs/logs.md"
	doc := section(t, page, read(t, page), "Events")
	rows := map[string]string{}
	for _, l := range strings.Split(doc, "\n") {
		if m := regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|").FindStringSubmatch(l); m != nil {
			rows[m[1]] = l
		}
	}
	for ev, fs := range loggedFields(t) {
		for f := range fs {
			if !strings.Contains(rows[ev], "`"+f+"`") {
				t.Errorf("%s: the row of `%s` does not name its field `%s`", page, ev, f)
			}
		}
	}
}

// TestLogSchemaChangelog: docs/logs.md's changelog has an entry for every
// schema version up to the current one.
func TestLogSchemaChangelog(t *testing.T) {
	const page = "docs/logs.md"
	log := section(t, page, read(t, page), "The schema and its changes")
	for v := 1; v <= logs.SchemaVersion; v++ {
		if !strings.Contains(log, fmt.Sprintf("### Version %d", v)) {
			t.Errorf("%s: the changelog has no entry \"### Version %d\"", page, v)
		}
	}
	if _, err := os.Stat(schemaFile(logs.SchemaVersion)); err != nil {
		t.Errorf("schema version %d has no record: %v", logs.SchemaVersion, err)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
