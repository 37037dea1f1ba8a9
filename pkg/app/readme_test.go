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
	for _, svc := range []Service{&Producer{}, &Ingest{}, &Devstack{}} {
		l := config.NewLoader(svc.Name(), func(string) string { return "" })
		svc.Bind(l)
		for _, v := range l.Vars() {
			def := "`" + v.Default + "`"
			if v.Default == "" {
				def = "(none)"
			}
			row := "| `-" + v.Flag + "` | `" + v.Env + "` | " + def + " |"
			if !strings.Contains(string(readme), row) {
				t.Errorf("README lacks the %s row %q", svc.Name(), row)
			}
		}
	}
}
