package waitq_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/testkit/testenv"
)

// TestErrorCodesAreOneList: the error table of docs/api.md and the
// ErrorCode enum of each OpenAPI document that has one hold exactly the
// codes internal/queue/errors.go declares.
func TestErrorCodesAreOneList(t *testing.T) {
	declared := testenv.ErrorCodes(t)
	api, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(api), "## Error codes")
	table, _, _ = strings.Cut(table, "\n## ")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
	}
	slices.Sort(documented)
	if !slices.Equal(documented, declared) {
		t.Errorf("docs/api.md's error table %v, want %v", documented, declared)
	}
	for _, doc := range []string{"internal/producer/openapi.yaml", "internal/gateway/openapi.yaml"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?s)ErrorCode:.*?enum: \[([^\]]*)\]`).FindSubmatch(b)
		if m == nil {
			t.Errorf("%s has no ErrorCode enum", doc)
			continue
		}
		var enum []string
		for _, c := range strings.Split(string(m[1]), ",") {
			enum = append(enum, strings.TrimSpace(c))
		}
		slices.Sort(enum)
		if !slices.Equal(enum, declared) {
			t.Errorf("%s's ErrorCode enum %v, want %v", doc, enum, declared)
		}
	}
}
