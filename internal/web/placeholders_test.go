package web_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

// TestPagePlaceholdersAgree: the placeholders the page fills in a template
// (brand.js) are the ones producer-api lets a template use
// (queue.PagePlaceholders), so no saved template shows one unfilled.
func TestPagePlaceholdersAgree(t *testing.T) {
	b, err := os.ReadFile("static/brand.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`values: \{([^}]*)\}`).FindSubmatch(b)
	if m == nil {
		t.Fatal("brand.js has no values object")
	}
	var names []string
	for _, k := range regexp.MustCompile(`(\w+):`).FindAllSubmatch(m[1], -1) {
		names = append(names, string(k[1]))
	}
	want := slices.Clone(queue.PagePlaceholders)
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("brand.js fills %v, the API allows %v", names, want)
	}
}
