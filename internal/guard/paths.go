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

// Match reports whether urlPath matches one of the patterns.
func (p Paths) Match(urlPath string) bool {
	for _, s := range p.prefixes {
		if strings.HasPrefix(urlPath, s) {
			return true
		}
	}
	for _, s := range p.exact {
		if urlPath == s {
			return true
		}
	}
	for _, s := range p.globs {
		if ok, _ := path.Match(s, urlPath); ok {
			return true
		}
	}
	return false
}
