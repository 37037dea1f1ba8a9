package guard

// Forward authentication: AuthPath answers a proxy's subrequest (nginx's
// auth_request, Caddy's forward_auth, Traefik's ForwardAuth) for the
// request it is about to forward, rebuilt from the forwarded headers, with
// the entry.Guard rules the reverse proxy applies (entry.Guard.Handler):
// the same decision, cookie and done path.

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/pkg/entry"
)

// AuthPath is the forward-auth endpoint, served with Config.ForwardAuth.
const AuthPath = AdminPrefix + "auth"

// The headers a proxy sends with its subrequest: the original request's
// address (X-Forwarded-Uri from Caddy, Traefik and the shipped nginx
// config, X-Original-URI from other nginx configs: Config.ForwardedURIHeader
// names the one the proxy sets), method, host and scheme.
const (
	OriginalURIHeader     = "X-Original-URI"
	ForwardedURIHeader    = "X-Forwarded-Uri"
	ForwardedMethodHeader = "X-Forwarded-Method"
	ForwardedHostHeader   = "X-Forwarded-Host"
	ForwardedProtoHeader  = "X-Forwarded-Proto"
	// WaitingRoomHeader names the waiting room in a 401 answer of
	// AuthPath, for a proxy that answers the visitor itself (nginx).
	WaitingRoomHeader = "X-Waitq-Waiting-Room"
)

// RedirectParam, with the value "401", makes AuthPath answer its redirects
// 401 with their Location: nginx's auth_request takes only 2xx, 401 and
// 403, and its error_page turns the 401 into the redirect.
const RedirectParam = "redirect"

// checkForwardAuth reports the forward-auth settings that cannot work.
func (c Config) checkForwardAuth() []error {
	var errs []error
	for _, t := range c.TrustedProxies {
		if ips, err := httpkit.NewClientIPs([]string{t}); err != nil {
			errs = append(errs, fmt.Errorf("WAITQ_TRUSTED_PROXIES: %q is neither an address nor a CIDR", t))
		} else if ips.TrustsEveryAddress() {
			errs = append(errs, fmt.Errorf("WAITQ_TRUSTED_PROXIES: %q trusts every address: anyone could name the request to decide", t))
		}
	}
	if h := c.ForwardedURIHeader; h != "" && !strings.EqualFold(h, ForwardedURIHeader) && !strings.EqualFold(h, OriginalURIHeader) {
		errs = append(errs, fmt.Errorf("WAITQ_FORWARDED_URI_HEADER=%q must be %s or %s: the header the proxy sets to the request's path and query", c.ForwardedURIHeader, ForwardedURIHeader, OriginalURIHeader))
	}
	if c.ForwardAuth && len(c.TrustedProxies) == 0 {
		errs = append(errs, errors.New("WAITQ_TRUSTED_PROXIES is required with WAITQ_FORWARD_AUTH: the proxies whose X-Forwarded-* headers the auth endpoint believes"))
	}
	if c.ForwardAuth && c.OriginURL == "" && c.Report.URL != "" {
		errs = append(errs, errors.New("WAITQ_HEALTH_URL with WAITQ_FORWARD_AUTH needs WAITQ_ORIGIN_URL: a forward-auth guard sees no answer of the origin, so its reports would hold no figure yet keep producer-api's health signal alive; let the shop report its own figures, or route traffic through the guard's proxy"))
	}
	return errs
}

// serveAuth answers a proxy's subrequest: 204 with the user's headers for a
// request that may go on (empty on a bypassed path), otherwise what the
// guard answers the visitor (the cookie and a redirect, the waiting room,
// 401 or 503), which the proxy passes on. The original request goes through
// the guard's Handler, as in the reverse proxy, with the 204 for the
// origin's answer: on the done path that 204 clears the cookie and
// releases the slot (entry's serveDone).
func (g *Proxy) serveAuth(w http.ResponseWriter, r *http.Request) {
	if !g.proxies.PeerTrusted(r) {
		writeJSON(w, http.StatusForbidden, authError("untrusted_proxy", "this endpoint answers only the proxies in WAITQ_TRUSTED_PROXIES"))
		return
	}
	orig, err := originalRequest(r, g.uriHeader)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, authError("bad_forwarded_request", err.Error()))
		return
	}
	if !g.guardedPath(orig.URL.Path) {
		// The user's headers, empty: a proxy that copies them (Caddy
		// 2.6 copies a missing one as its placeholder's text) names no
		// one.
		g.m.bypassed.Inc()
		h := w.Header()
		h[UserHeader], h[ExpiresHeader] = []string{""}, []string{""}
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	aw := &authWriter{ResponseWriter: w, as401: r.URL.Query().Get(RedirectParam) == "401", room: func() string {
		return g.guard.RoomURL(withoutToken(orig))
	}}
	g.authorized.ServeHTTP(aw, orig)
}

// allow answers a subrequest the guard passed: 204 with the user's headers.
func (g *Proxy) allow(w http.ResponseWriter, r *http.Request) {
	t, raw, _ := entry.TokenFromContext(r.Context())
	h := w.Header()
	h.Set(UserHeader, t.UserID)
	h.Set(ExpiresHeader, strconv.FormatInt(t.Expires, 10))
	if g.forwardToken {
		h.Set(TokenHeader, raw)
	}
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// authError is the body of AuthPath's refusals of the proxy itself, in
// the other programs' error shape: {"error":{"code":…,"message":…}}.
func authError(code, message string) any {
	return map[string]map[string]string{"error": {"code": code, "message": message}}
}

// originalRequest rebuilds the request the proxy asks about from r's
// forwarded headers: its method, address (a path with its query: never
// another host) read from uriHeader alone, host and scheme, with r's
// cookies and Accept.
func originalRequest(r *http.Request, uriHeader string) (*http.Request, error) {
	// The proxy sets one URI header and may pass on what the visitor sent
	// under the other name (Caddy and Traefik pass X-Original-URI, an nginx
	// config of the old form X-Forwarded-Uri): a second address, or a
	// second method, that disagrees is the visitor's.
	uri := r.Header.Get(uriHeader)
	if v, ok := agreed(r.Header, uri, OriginalURIHeader, ForwardedURIHeader); !ok {
		return nil, fmt.Errorf("%s %q disagrees with %q: the proxy must set %s (WAITQ_FORWARDED_URI_HEADER) and drop the other", uriHeader, uri, v, uriHeader)
	}
	if !strings.HasPrefix(uri, "/") || strings.ContainsAny(uri, "#") || strings.IndexFunc(uri, func(c rune) bool { return c <= 0x20 || c == 0x7f }) >= 0 {
		return nil, fmt.Errorf("%s (WAITQ_FORWARDED_URI_HEADER) must hold the original request's path and query, got %q", uriHeader, uri)
	}
	// Parsed after a fixed host, "//evil.example/x" stays a path.
	u, err := url.Parse("http://original" + uri)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", uriHeader, uri, err)
	}
	u.Scheme, u.Host = "", ""
	method := cmp.Or(r.Header.Get(ForwardedMethodHeader), http.MethodGet)
	if v, ok := agreed(r.Header, r.Header.Get(ForwardedMethodHeader), ForwardedMethodHeader); !ok {
		return nil, fmt.Errorf("%s %q disagrees with %q", ForwardedMethodHeader, method, v)
	}
	if strings.IndexFunc(method, func(c rune) bool { return c < 'A' || c > 'Z' }) >= 0 {
		return nil, fmt.Errorf("%s %q is not a method", ForwardedMethodHeader, method)
	}
	host, _, _ := strings.Cut(r.Header.Get(ForwardedHostHeader), ",")
	host = cmp.Or(strings.TrimSpace(host), r.Host)
	if hu, err := url.Parse("http://" + host + "/"); err != nil || hu.Host != host || hu.User != nil || host == "" {
		return nil, fmt.Errorf("%s %q is not a host", ForwardedHostHeader, host)
	}
	o := r.Clone(r.Context())
	o.Method, o.URL, o.RequestURI, o.Host, o.TLS = method, u, u.RequestURI(), host, nil
	switch p, _, _ := strings.Cut(r.Header.Get(ForwardedProtoHeader), ","); strings.ToLower(strings.TrimSpace(p)) {
	case "https":
		o.TLS = &tls.ConnectionState{} // the visitor's connection was TLS: returnTo is https
	case "http", "":
	default:
		return nil, fmt.Errorf("%s %q is neither http nor https", ForwardedProtoHeader, p)
	}
	return o, nil
}

// agreed reports whether every value of the headers names in h is want,
// returning the first that is not.
func agreed(h http.Header, want string, names ...string) (string, bool) {
	for _, n := range names {
		for _, v := range h.Values(n) {
			if v != want {
				return v, false
			}
		}
	}
	return "", true
}

// withoutToken returns r without its waitq_token parameters (the returnTo
// of a 401 never holds a token).
func withoutToken(r *http.Request) *http.Request {
	q := r.URL.Query()
	if !q.Has(entry.TokenParam) {
		return r
	}
	q.Del(entry.TokenParam)
	o := r.Clone(r.Context())
	o.URL.RawQuery = q.Encode()
	return o
}

// authWriter turns the guard's answers into AuthPath's: with as401, a
// redirect is answered 401 with its Location, and every 401 names the
// waiting room in WaitingRoomHeader.
type authWriter struct {
	http.ResponseWriter
	as401 bool
	room  func() string
}

// WriteHeader implements http.ResponseWriter.
func (a *authWriter) WriteHeader(code int) {
	if a.as401 && code == http.StatusFound {
		a.Header().Set(WaitingRoomHeader, a.room())
		a.Header().Set("Content-Type", "application/json")
		a.ResponseWriter.WriteHeader(http.StatusUnauthorized)
		_, _ = a.ResponseWriter.Write([]byte(`{"code":"redirect","message":"go to Location"}` + "\n"))
		return
	}
	if code == http.StatusUnauthorized {
		a.Header().Set(WaitingRoomHeader, a.room())
	}
	a.ResponseWriter.WriteHeader(code)
}
