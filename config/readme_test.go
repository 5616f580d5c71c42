package config

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEDocumentsEverySetting keeps the configuration reference in
// README.md complete: every setting's key must appear there in backquotes.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	c := LAN()
	for _, s := range settings(&c) {
		if !strings.Contains(string(readme), "`"+s.key+"`") {
			t.Errorf("README.md does not document the setting `%s`", s.key)
		}
	}
}
