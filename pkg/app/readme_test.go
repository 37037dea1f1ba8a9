package app

import (
	"os"
	"strings"
	"testing"

	"github.com/waitq/waitq/pkg/config"
)

// TestREADMEDocumentsEverySetting fails when a service gains a setting the
// README's configuration tables do not list, or lists with another default.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []Service{&Producer{}, &Ingest{}, &Gateway{}, &Devstack{}, &Broker{}} {
		// Each program's rows must stand in its own section.
		_, section, ok := strings.Cut(string(readme), "### "+svc.Name()+"\n")
		if !ok {
			t.Errorf("README has no configuration section for %s", svc.Name())
			continue
		}
		section, _, _ = strings.Cut(section, "\n#")
		l := config.NewLoader(svc.Name(), func(string) string { return "" })
		svc.Bind(l)
		for _, v := range l.Vars() {
			def := "`" + v.Default + "`"
			if v.Default == "" {
				def = "(none)"
			}
			row := "| `-" + v.Flag + "` | `" + v.Env + "` | " + def + " |"
			if !strings.Contains(section, row) {
				t.Errorf("README lacks the %s row %q", svc.Name(), row)
			}
		}
	}
}
