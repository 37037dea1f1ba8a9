package waitq_test

import (
	"os"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/stack"
)

// TestConfigurationDocsListEverySetting fails when a program gains a
// setting the configuration tables of docs/configuration.md do not list, or
// lists with another default.
func TestConfigurationDocsListEverySetting(t *testing.T) {
	doc, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	programs := []app.Service{&app.Producer{}, &app.Ingest{}, &app.Gateway{}, &app.Guard{}, &app.DemoShop{}, &app.Rebuild{},
		&stack.Devstack{}, &stack.Broker{}}
	for _, svc := range programs {
		// Each program's rows must stand in its own section.
		_, section, ok := strings.Cut(string(doc), "### "+svc.Name()+"\n")
		if !ok {
			t.Errorf("docs/configuration.md has no configuration section for %s", svc.Name())
			continue
		}
		section, _, _ = strings.Cut(section, "\n#")
		l := config.NewLoader(svc.Name(), func(string) string { return "" })
		svc.Bind(l)
		if len(l.Vars()) == 0 {
			t.Errorf("%s binds no setting", svc.Name())
		}
		for _, v := range l.Vars() {
			def := "`" + v.Default + "`"
			if v.Default == "" {
				def = "(none)"
			}
			row := "| `-" + v.Flag + "` | `" + v.Env + "` | " + def + " |"
			if !strings.Contains(section, row) {
				t.Errorf("docs/configuration.md lacks the %s row %q", svc.Name(), row)
			}
		}
	}
}
