// Package waitq_test checks the repository's layout: the README's layout
// table against the tree, and the import rules between the product, the
// local stack, the tools and the test helpers.
package waitq_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/waitq/waitq"

// packages maps each Go package directory of the tree (slash-separated,
// relative to the root) to the module packages its non-test files import.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "artifacts" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if _, ok := pkgs[dir]; !ok {
			pkgs[dir] = nil
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if rel, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(pkgs[dir], rel) {
				pkgs[dir] = append(pkgs[dir], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	delete(pkgs, ".")
	return pkgs
}

// kind tells what a package directory is: a tool, a test helper, the local
// stack, a program's main, a test suite, or the product.
func kind(dir string) string {
	switch {
	case under(dir, "internal/tools"):
		return "tool"
	case under(dir, "internal/testkit"):
		return "test helper"
	case under(dir, "internal/stack"):
		return "stack"
	case under(dir, "test"):
		return "test suite"
	case under(dir, "cmd"):
		return "program"
	}
	return "product"
}

func under(dir, root string) bool { return dir == root || strings.HasPrefix(dir, root+"/") }

// TestImportRules fails when a package imports what its kind may not: the
// product (internal/… and pkg/…) never imports a tool, a test helper or the
// local stack; the stack never imports a tool or a test helper; test helpers
// never import a tool; pkg/ (what other Go programs import) never imports a
// program's wiring or a service; internal/recording takes the store and the
// log as ports, importing neither adapter.
func TestImportRules(t *testing.T) {
	forbidden := map[string][]string{
		"product":     {"tool", "test helper", "stack"},
		"stack":       {"tool", "test helper"},
		"test helper": {"tool"},
	}
	pkgs := packages(t)
	for dir, imports := range pkgs {
		for _, imp := range imports {
			if slices.Contains(forbidden[kind(dir)], kind(imp)) {
				t.Errorf("%s (%s) imports %s (%s)", dir, kind(dir), imp, kind(imp))
			}
			if under(dir, "pkg") && !under(imp, "pkg") && imp != "internal/b64" {
				t.Errorf("%s is imported by other programs, yet imports %s: only pkg/… and internal/b64 are allowed", dir, imp)
			}
			if under(dir, "internal/recording") && (under(imp, "internal/redisstore") || under(imp, "internal/kafkajoin")) {
				t.Errorf("%s records through the ports of internal/queue, yet imports %s", dir, imp)
			}
		}
	}
	// The rule must see the packages it rules on.
	for _, dir := range []string{"internal/app", "internal/tools/loadgen", "internal/testkit/testenv", "pkg/entry"} {
		if _, ok := pkgs[dir]; !ok {
			t.Errorf("no package %s in the tree: the import rules look at the wrong place", dir)
		}
	}
}

// TestREADMELayout fails when the README's layout table names a path the
// tree lacks, or the tree holds a Go package the table does not name.
func TestREADMELayout(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	cell := regexp.MustCompile("`([^`]+)`")
	listed := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			path := strings.TrimSuffix(m[1], "/")
			listed[path] = true
			if _, err := os.Stat(path); err != nil {
				t.Errorf("README.md's layout table names %s, which the tree lacks", path)
			}
		}
	}
	if len(listed) == 0 {
		t.Fatal("README.md's layout table lists no path")
	}
	for dir := range packages(t) {
		if !listed[dir] {
			t.Errorf("the Go package %s is not in README.md's layout table", dir)
		}
	}
}

// TestProductFilesStayShort fails when a source file of the product or its
// tools (pkg/, internal/ with the tools, cmd/; not the test helpers and
// suites) grows past 400 lines: split it by concern.
func TestProductFilesStayShort(t *testing.T) {
	const most = 400
	checked := 0
	for _, f := range goFiles(t, func(k string) bool { return k != "test helper" && k != "test suite" }) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if n := strings.Count(string(b), "\n"); n > most {
			t.Errorf("%s has %d lines, more than %d: split it by concern", f, n, most)
		}
	}
	if checked < 50 {
		t.Errorf("only %d product files checked: the rule looks at the wrong place", checked)
	}
}

// goFiles returns the non-test Go files of the tree's packages whose kind
// keep takes.
func goFiles(t *testing.T, keep func(kind string) bool) []string {
	t.Helper()
	var out []string
	for dir := range packages(t) {
		if !keep(kind(dir)) {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				out = append(out, f)
			}
		}
	}
	return out
}
