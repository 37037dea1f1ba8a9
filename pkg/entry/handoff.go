package entry

import (
	"net/url"
	"strings"
)

// AdmittedURL is where an admitted user is sent: returnTo when it lies under
// target's origin (same scheme and host), else target, with token added as
// TokenParam (replacing any there). returnTo may also be a path ("/cart")
// under target's origin. Anything else (another host, "//evil",
// "javascript:", userinfo, backslashes, control characters, a path starting
// "//") is refused and target is used: the waiting room is never an open
// redirect. target must
// be an absolute http(s) URL (queue.CheckTargetURL); AdmittedURL returns ""
// when it is empty.
func AdmittedURL(target, returnTo, token string) string {
	t, err := url.Parse(target)
	if target == "" || err != nil {
		return ""
	}
	dest := t
	if r, ok := underOrigin(t, returnTo); ok {
		dest = r
	}
	_, q, _ := takeParam(dest.RawQuery, TokenParam)
	if q != "" {
		q += "&"
	}
	out := *dest
	out.RawQuery = q + TokenParam + "=" + url.QueryEscape(token)
	return out.String()
}

// underOrigin parses returnTo and reports whether it is a URL under
// target's scheme and host, resolving a path against target.
func underOrigin(target *url.URL, returnTo string) (*url.URL, bool) {
	if returnTo == "" || len(returnTo) > 2048 || strings.ContainsAny(returnTo, "\\ ") ||
		strings.IndexFunc(returnTo, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return nil, false
	}
	r, err := url.Parse(returnTo)
	if err != nil || r.User != nil || r.Opaque != "" {
		return nil, false
	}
	if r.Scheme == "" && r.Host == "" {
		// A path: only an absolute one ("/x"), never "//host".
		if !strings.HasPrefix(returnTo, "/") || strings.HasPrefix(returnTo, "//") {
			return nil, false
		}
		r = target.ResolveReference(r)
	}
	if !strings.EqualFold(r.Scheme, target.Scheme) || !strings.EqualFold(r.Host, target.Host) {
		return nil, false
	}
	// A path beginning "//" ("https://shop//evil.example/x", or its
	// encoded "/%2F" form) is the shop's host here, but a guard or a shop
	// that redirects to the bare path would send the browser to another.
	if strings.HasPrefix(r.Path, "//") {
		return nil, false
	}
	return r, true
}
