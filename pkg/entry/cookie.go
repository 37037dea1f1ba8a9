package entry

// The token's way from the waitq_token parameter into the guard's cookie.

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// cookie returns the cookie holding token until the end of its stay.
func (g *Guard) cookie(token string, t Token) *http.Cookie {
	return &http.Cookie{
		Name: g.cookieName, Value: token, Path: g.cookiePath, Expires: time.UnixMilli(t.Expires),
		HttpOnly: true, Secure: g.secure, SameSite: http.SameSiteLaxMode,
	}
}

// clearCookie returns the cookie that deletes the guard's cookie.
func (g *Guard) clearCookie() *http.Cookie {
	return &http.Cookie{
		Name: g.cookieName, Value: "", Path: g.cookiePath, MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, Secure: g.secure, SameSite: http.SameSiteLaxMode,
	}
}

// takeParam removes every name parameter from the raw query, keeping the
// others in order, and returns the first one's value.
func takeParam(raw, name string) (value, rest string, found bool) {
	if !strings.Contains(raw, name) && !strings.Contains(raw, "%") {
		return "", raw, false // the fast way: not there, not even encoded
	}
	kept := make([]string, 0, strings.Count(raw, "&")+1)
	for part := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); err == nil && uk == name {
			if !found {
				value, _ = url.QueryUnescape(v)
				found = true
			}
			continue
		}
		kept = append(kept, part)
	}
	return value, strings.Join(kept, "&"), found
}

// sameHostURI returns u's path and query as a Location a browser resolves
// on the host it is on: a path a browser would read as another host's
// ("//evil.example/x", "/\\evil.example/x": browsers take a backslash for a
// slash) starts with a single slash instead. EscapedPath has escaped what
// browsers strip (tabs, newlines), so no such character can join slashes
// back.
func sameHostURI(u *url.URL) string {
	uri := "/" + strings.TrimLeft(u.EscapedPath(), "/\\")
	if u.RawQuery != "" {
		uri += "?" + u.RawQuery
	}
	return uri
}

// withRawQuery returns a shallow copy of r whose query is raw.
func withRawQuery(r *http.Request, raw string) *http.Request {
	r2 := r.WithContext(r.Context())
	u := *r.URL
	u.RawQuery = raw
	r2.URL = &u
	r2.RequestURI = u.RequestURI()
	return r2
}
