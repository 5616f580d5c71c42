package testutil

import (
	"regexp"
	"strings"
)

// heading is a Markdown ATX heading: its level (the #s) and its text.
var heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// Section returns the part of a Markdown page from the heading whose text
// is title to the next heading of the same or a higher level, and false
// when the page has no such heading. The docs' tests check pages by their
// sections.
func Section(text, title string) (string, bool) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		m := heading.FindStringSubmatch(l)
		if m == nil || m[2] != title {
			continue
		}
		var b strings.Builder
		for _, l := range lines[i+1:] {
			if n := heading.FindStringSubmatch(l); n != nil && len(n[1]) <= len(m[1]) {
				break
			}
			b.WriteString(l + "\n")
		}
		return b.String(), true
	}
	return "", false
}
