package control

import (
	"os"
	"regexp"
	"strings"
	"testing"

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
