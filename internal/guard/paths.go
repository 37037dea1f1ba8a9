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

// guardedPath reports whether a request for p needs a token. A path the
// origin might resolve to another one is always guarded: "/static/../order"
// must not bypass. Protection ignores case and bypass does not, for origins
// that ignore it.
func (g *Proxy) guardedPath(p string) bool {
	return !clean(p) || (g.protect.MatchFold(p) && !g.bypass.Match(p))
}

// clean reports whether p is already in path.Clean's form (a trailing slash
// allowed) and holds nothing the strictest common origins read otherwise:
// no ";" (servlet containers take "/static/..;/admin" for "/admin"), no
// backslash (a slash to IIS and browsers, also when it came as %5C), no
// "%" (decoded again by some), no control character. Only such a path
// may bypass the guard.
func clean(p string) bool {
	if strings.ContainsAny(p, ";\\%") || strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}
