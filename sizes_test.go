package waitq_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Sizes the product keeps to (issue 46): a function a reader takes in at
// once, a script and a page module that do one thing.
const (
	mostFuncLines   = 80  // a product Go function, from func to its closing brace
	mostLuaLines    = 400 // a Redis script of internal/redisstore/lua
	mostStaticLines = 400 // a file the page or the console is served (internal/web/static)
)

// oversized names the files still over their limit, each with the reason;
// a file listed that keeps to its limit fails the test too, so the list
// only shrinks.
var oversized = map[string]string{}

// productKinds are the package kinds whose functions are held to
// mostFuncLines: the product (internal/ but the tools, the test helpers and
// the local stack; pkg/) and the programs' wiring (cmd/).
var productKinds = []string{"product", "program"}

// TestProductFunctionsStayShort fails when a function of the product's
// non-test Go files runs over mostFuncLines lines: split it along its seams
// into named helpers.
func TestProductFunctionsStayShort(t *testing.T) {
	var long []string
	checked := 0
	for _, f := range goFiles(t, func(k string) bool { return slices.Contains(productKinds, k) }) {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > mostFuncLines {
				long = append(long, fmt.Sprintf("%s:%d %s: %d lines", filepath.ToSlash(f), start.Line, funcName(fn), n))
			}
		}
	}
	if checked < 500 {
		t.Errorf("only %d product functions checked: the rule looks at the wrong place", checked)
	}
	report(t, long, fmt.Sprintf("product functions over %d lines (split each along its seams into named helpers)", mostFuncLines))
}

// funcName is fn's name as a reader looks it up: Recv.Name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestScriptsAndPageFilesStayShort fails when a Lua script of the Redis
// store or a file of the page's static tree runs over its limit: move a
// cohesive part into a library (a *_lib.lua that scripts.go prepends) or a
// module of its own.
func TestScriptsAndPageFilesStayShort(t *testing.T) {
	for _, c := range []struct {
		glob string
		most int
		min  int // files the glob must find, lest the rule look at the wrong place
	}{
		{"internal/redisstore/lua/*.lua", mostLuaLines, 10},
		{"internal/web/static/*", mostStaticLines, 8},
	} {
		files, err := filepath.Glob(c.glob)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) < c.min {
			t.Errorf("%s finds only %d files: the rule looks at the wrong place", c.glob, len(files))
		}
		var long []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			f = filepath.ToSlash(f)
			n := strings.Count(string(b), "\n")
			switch reason, excepted := oversized[f]; {
			case n > c.most && !excepted:
				long = append(long, fmt.Sprintf("%s: %d lines", f, n))
			case n <= c.most && excepted:
				t.Errorf("%s has %d lines, yet is listed as oversized (%s): drop it from the list", f, n, reason)
			}
		}
		report(t, long, fmt.Sprintf("files of %s over %d lines (move a cohesive part into a file of its own)", c.glob, c.most))
	}
	for f, reason := range oversized {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s is listed as oversized (%s), yet is gone: drop it from the list", f, reason)
		}
	}
}

// report fails t with one sorted list of what broke a size rule.
func report(t *testing.T, long []string, what string) {
	t.Helper()
	if len(long) == 0 {
		return
	}
	slices.Sort(long)
	t.Errorf("%d %s:\n\t%s", len(long), what, strings.Join(long, "\n\t"))
}
