package guard

import (
	"fmt"
	"path"
	"strings"
)

// Paths is a set of path patterns. A pattern ending in "/" matches every
// path under it ("/static/"); a pattern with *, ? or [ is a path.Match glob
// ("/*.css", "/product/*"); any other pattern matches that one path
// ("/favicon.ico").
type Paths struct {
	prefixes, globs, exact []string
}

// ParsePaths reads patterns, refusing those that do not start with "/" or
// are malformed globs.
func ParsePaths(patterns []string) (Paths, error) {
	var p Paths
	for _, s := range patterns {
		switch {
		case !strings.HasPrefix(s, "/"):
			return Paths{}, fmt.Errorf("path pattern %q must start with /", s)
		case strings.ContainsAny(s, "*?["):
			if _, err := path.Match(s, ""); err != nil {
				return Paths{}, fmt.Errorf("path pattern %q: %w", s, err)
			}
			p.globs = append(p.globs, s)
		case strings.HasSuffix(s, "/"):
			p.prefixes = append(p.prefixes, s)
		default:
			p.exact = append(p.exact, s)
		}
	}
	return p, nil
}

// Match reports whether urlPath matches one of the patterns, letter case
// included.
func (p Paths) Match(urlPath string) bool { return p.match(urlPath, false) }

// MatchFold reports whether urlPath matches one of the patterns when letter
// case is ignored ("/ADMIN/x" matches "/admin/"), as origins that ignore
// case resolve it.
func (p Paths) MatchFold(urlPath string) bool { return p.match(urlPath, true) }

func (p Paths) match(urlPath string, fold bool) bool {
	eq := func(a, b string) bool { return a == b }
	if fold {
		eq = strings.EqualFold
	}
	for _, s := range p.prefixes {
		if len(urlPath) >= len(s) && eq(urlPath[:len(s)], s) {
			return true
		}
	}
	for _, s := range p.exact {
		if eq(urlPath, s) {
			return true
		}
	}
	for _, s := range p.globs {
		pattern, name := s, urlPath
		if fold {
			pattern, name = strings.ToLower(s), strings.ToLower(urlPath)
		}
		if ok, _ := path.Match(pattern, name); ok {
			return true
		}
	}
	return false
}
