package testenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// ErrorCodes returns the error codes internal/queue/errors.go declares (its
// constants of type Code), sorted: the one list the tables of httpkit,
// docs/api.md and the OpenAPI documents must each hold whole.
func ErrorCodes(tb testing.TB) []string {
	tb.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "queue", "errors.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Code" || len(v.Values) != 1 {
				continue
			}
			if lit, ok := v.Values[0].(*ast.BasicLit); ok {
				c, err := strconv.Unquote(lit.Value)
				if err != nil {
					tb.Fatal(err)
				}
				codes = append(codes, c)
			}
		}
	}
	if len(codes) == 0 {
		tb.Fatalf("no error codes found in %s", path)
	}
	slices.Sort(codes)
	return codes
}
