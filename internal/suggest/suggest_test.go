package suggest

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	keys := []string{"heartbeat", "id", "ttl", "srm.c1", "srm.c2", "log.level", "mutex.hold"}
	same := func(k string) string { return k }
	for _, tt := range []struct{ name, want string }{
		{"hearbeat", "heartbeat"},
		{"heartbaet", "heartbeat"}, // a swap is one edit
		{"hartbeet", "heartbeat"},
		{"heartbeatt", "heartbeat"},
		{"hbeat", ""},
		{"tll", "ttl"},
		{"ip", ""}, // too short to tell
		{"c1", "srm.c1"},
		{"c3", ""}, // c1 or c2
		{"srm.c", ""},
		{"x.level", "log.level"},
		{"hold", "mutex.hold"},
		{"home", ""},
		{strings.Repeat("heartbeat", 1000), ""},
	} {
		got, ok := Closest(tt.name, keys, same)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Closest(%.20q) = %q, %v; want %q", tt.name, got, ok, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"abcd", "acbd", 1}, {"ca", "abc", 3}} {
		if d := Distance(tt.a, tt.b); d != tt.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
	}
}
