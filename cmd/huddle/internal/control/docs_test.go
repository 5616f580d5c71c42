package control

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// TestEveryCommandIsDocumented keeps docs/control.md complete: every
// command the socket serves has a row in its table and a section.
func TestEveryCommandIsDocumented(t *testing.T) {
	const page = "../../../../docs/control.md"
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc, ok := testutil.Section(string(b), "The commands")
	if !ok {
		t.Fatalf("%s has no heading \"The commands\"", page)
	}
	cmds := Commands(nil)
	if len(cmds) == 0 {
		t.Fatal("Commands lists no command")
	}
	for name := range cmds {
		if !regexp.MustCompile("(?m)^\\|\\s*`" + regexp.QuoteMeta(name) + "`\\s*\\|").MatchString(doc) {
			t.Errorf("docs/control.md: the control command `%s` has no row in the table of \"The commands\"", name)
		}
		if !strings.Contains(doc, "### huddle "+name) {
			t.Errorf("docs/control.md: the control command `%s` has no section \"### huddle %s\"", name, name)
		}
	}
}

// TestEveryJSONFieldIsDocumented keeps the JSON of docs/control.md true
// to the code: every field of a status (and of its drop rule) has its
// name in the table of "huddle status --json", and every field of a
// watched event in the section "huddle watch".
func TestEveryJSONFieldIsDocumented(t *testing.T) {
	const page = "../../../../docs/control.md"
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		section string
		row     string // the table row that lists them; "" for the whole section
		v       any
	}{
		{"huddle status --json", "", huddle.Status{}},
		{"huddle status --json", "| `drop` |", huddle.Drop{}},
		{"huddle watch", "", huddle.WatchEvent{}},
	} {
		doc, ok := testutil.Section(string(b), c.section)
		if !ok {
			t.Fatalf("%s has no heading %q", page, c.section)
		}
		if c.row != "" {
			i := strings.Index(doc, c.row)
			if i < 0 {
				t.Fatalf("%s: %q has no row %s", page, c.section, c.row)
			}
			doc, _, _ = strings.Cut(doc[i:], "\n")
		}
		typ := reflect.TypeOf(c.v)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name != "-" && name != "" && !strings.Contains(doc, `"`+name+`"`) && !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("%s: %q does not name the field %s of %s", page, strings.TrimSpace(c.section+" "+c.row), name, typ)
			}
		}
	}
}
