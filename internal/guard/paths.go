package guard

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/waitq/waitq/pkg/entry"
)

// Paths is a set of path patterns. A pattern ending in "/" matches every
// path under it ("/static/"); a pattern with *, ? or [ is a path.Match glob
// ("/*.css", "/product/*"); any other pattern matches that one path
// ("/favicon.ico").
type Paths struct {
	prefixes, globs, exact []string // as written: Match
	// In entry.PathKey's form (globs lower-cased): Covers.
	keyPrefixes, keyGlobs, keyExact []string
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
			p.globs, p.keyGlobs = append(p.globs, s), append(p.keyGlobs, strings.ToLower(s))
		case strings.HasSuffix(s, "/"):
			p.prefixes, p.keyPrefixes = append(p.prefixes, s), append(p.keyPrefixes, entry.PathKey(s))
		default:
			p.exact, p.keyExact = append(p.exact, s), append(p.keyExact, entry.PathKey(s))
		}
	}
	return p, nil
}

// Match reports whether urlPath, as it is, matches one of the patterns,
// letter case included.
func (p Paths) Match(urlPath string) bool {
	for _, s := range p.prefixes {
		if strings.HasPrefix(urlPath, s) {
			return true
		}
	}
	return slices.Contains(p.exact, urlPath) || globMatch(p.globs, urlPath)
}

// Covers reports whether urlPath, read as some common origin may read it
// (entry.PathKey: "/CHECKOUT/", "/checkout;x=1" and "/a/../checkout" are
// "/checkout"), matches one of the patterns so read: "/admin" is under
// "/admin/", "/cart/" matches "/cart/*".
func (p Paths) Covers(urlPath string) bool {
	k := entry.PathKey(urlPath)
	for _, s := range p.keyPrefixes {
		if s == "/" || k == s || strings.HasPrefix(k, s+"/") {
			return true
		}
	}
	return slices.Contains(p.keyExact, k) || globMatch(p.keyGlobs, k) || globMatch(p.keyGlobs, k+"/")
}

// globMatch reports whether name matches one of globs.
func globMatch(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// guardedPath reports whether a request for p needs a token. A path the
// origin might resolve to another one is always guarded: "/static/../order"
// must not bypass. Protection covers every path an origin may read as a
// protected one (Covers: "/CHECKOUT/" is "/checkout"); bypass takes the
// path as it is.
func (g *Proxy) guardedPath(p string) bool {
	return !clean(p) || (g.protect.Covers(p) && !g.bypass.Match(p))
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
