package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocListsEveryFile keeps doc.go's map of the package whole: every
// non-test Go file has its line, and every line names a file that exists.
func TestDocListsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(string(doc), "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(l, "//   - "), ":"); ok && strings.HasPrefix(l, "//   - ") {
			listed[name] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f != "doc.go" && !strings.HasSuffix(f, "_test.go") && !listed[f] {
			t.Errorf("doc.go does not list %s", f)
		}
		delete(listed, f)
	}
	for f := range listed {
		t.Errorf("doc.go lists %s, which is not in the package", f)
	}
}
