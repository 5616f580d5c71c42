package config

import (
	"os"
	"strings"
	"testing"
)

// TestConfigurationDocDocumentsEverySetting keeps the settings reference,
// docs/configuration.md, complete: every setting's key must appear there
// in backquotes.
func TestConfigurationDocDocumentsEverySetting(t *testing.T) {
	const page = "../docs/configuration.md"
	doc, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	c := LAN()
	for _, s := range settings(&c) {
		if !strings.Contains(string(doc), "`"+s.key+"`") {
			t.Errorf("%s does not document the setting `%s`", page, s.key)
		}
	}
}
