package contract_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/testkit/contract"
)

// TestDocumentsAreValid loads every published OpenAPI document with
// kin-openapi, validates it as OpenAPI 3 and lints it; it fails on the first
// document that does not pass.
func TestDocumentsAreValid(t *testing.T) {
	names := make([]string, 0, len(contract.Documents))
	for n := range contract.Documents {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if _, err := contract.Load(n, contract.Documents[n]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEveryDocumentIsChecked fails when an openapi.yaml of the tree is not
// one of contract.Documents, so a document added later is validated too.
func TestEveryDocumentIsChecked(t *testing.T) {
	files, err := filepath.Glob("../../*/openapi.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no openapi.yaml found: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, doc := range contract.Documents {
			found = found || bytes.Equal(doc, b)
		}
		if !found {
			t.Errorf("%s is not in contract.Documents", strings.TrimPrefix(f, "../../"))
		}
	}
}

// TestLintFindsCutText: a description written plain inside a flow mapping
// is found, though YAML parses it.
func TestLintFindsCutText(t *testing.T) {
	doc := []byte(`openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /x:
    get:
      responses:
        "200": {description: fine}
components:
  schemas:
    S:
      type: object
      properties:
        total: {type: integer, description: users waiting (in a pre-queue, the users gathered)}
`)
	_, err := contract.Load("t", doc)
	if err == nil {
		t.Fatal("a cut description passed")
	}
	for _, want := range []string{"operationId", "written plain", "the users gathered)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: no %q", err, want)
		}
	}
}
