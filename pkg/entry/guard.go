package entry

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// TokenParam is the query parameter admitted users arrive with at the
// protected site: https://shop.example.com/product/7?waitq_token=e2.….
const TokenParam = "waitq_token"

// Fixed settings of a Guard.
const (
	// DefaultCacheSize is the number of verified tokens a Guard keeps, so
	// that a cookie seen before costs a hash and a map lookup, not an
	// Ed25519 verification.
	DefaultCacheSize = 10_000
	// ReleaseTimeout bounds one release after the done path.
	ReleaseTimeout = 5 * time.Second
)

// GuardConfig configures NewGuard.
type GuardConfig struct {
	// EventID is the event whose entry tokens admit (required).
	EventID string
	// WaitingRoomURL is the public URL of the waiting-room page (required):
	// visitors without a valid token are sent to
	// <WaitingRoomURL>?event=<EventID>&returnTo=<the URL they asked for>.
	WaitingRoomURL string
	// Keys verifies tokens (required): NewKeySource for the gateway's JWKS,
	// StaticKeys for keys held offline.
	Keys *KeySource
	// CookieName holds the token after arrival (empty:
	// "waitq_entry_<EventID>").
	CookieName string
	// CookiePath is the cookie's Path (empty: "/").
	CookiePath string
	// CookieInsecure drops the cookie's Secure attribute, for plain-HTTP
	// sites on a developer's machine; never set it in production.
	CookieInsecure bool
	// TrustForwardedProto takes the scheme of the returnTo URL from the
	// X-Forwarded-Proto header; set it only behind a proxy that sets that
	// header itself. Otherwise the scheme is https when the request came
	// over TLS, else http.
	TrustForwardedProto bool
	// DonePath, when set, is the path (such as "/order") whose 2xx answer
	// ends the visit: the cookie is cleared and Release is called with the
	// token. Release is required with it.
	DonePath string
	// Release gives the slot back (see the package function Release). Its
	// errors are logged, never shown to the visitor.
	Release func(ctx context.Context, token string) error
	// CacheSize bounds the verified-token cache (0: DefaultCacheSize;
	// negative: no cache, every request verifies, for measurements).
	CacheSize int
	// Observe, when set, is called once per request with what the guard
	// decided, before the protected handler runs: the hook for metrics.
	Observe func(r *http.Request, d Decision)
	// Now is the clock tokens are checked against (nil: time.Now).
	Now func() time.Time
	// Logger receives refusals at debug and failed releases at warn (nil:
	// discard).
	Logger *slog.Logger
}

// Outcome is what a Guard did with one request.
type Outcome int

// The outcomes of a request.
const (
	// Passed: the cookie held a valid token; the request went on.
	Passed Outcome = iota + 1
	// Entered: the waitq_token parameter held a valid token; it was moved
	// into the cookie and a GET or HEAD was redirected to the same URL
	// without the parameter (other methods went on).
	Entered
	// SentToLine: no valid token; a redirect to the waiting room, or 401
	// to a client asking for JSON.
	SentToLine
	// Unavailable: the keys could not be fetched, so no token could be
	// checked; 503.
	Unavailable
)

// String returns the outcome's metric label.
func (o Outcome) String() string {
	switch o {
	case Passed:
		return "passed"
	case Entered:
		return "entered"
	case SentToLine:
		return "to_line"
	case Unavailable:
		return "unavailable"
	}
	return "unknown"
}

// Decision is what a Guard decided for one request, and why.
type Decision struct {
	Outcome Outcome
	// QueryErr and CookieErr are why a token in the waitq_token parameter
	// or in the cookie was refused; nil when there was none or it was
	// valid.
	QueryErr, CookieErr error
}

// Reason returns the metric label of a refused token's error: malformed,
// unknown_key, signature, expired, other_event, keys_unavailable, or ""
// for nil.
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.Is(err, ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, ErrSignature):
		return "signature"
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrOtherEvent):
		return "other_event"
	case errors.Is(err, ErrKeysUnavailable):
		return "keys_unavailable"
	}
	return "other"
}

// Guard admits to a protected site only the requests that carry a valid
// entry token of its event, in its cookie or, on arrival from the waiting
// room, in the waitq_token parameter, and sends the others to the waiting
// room. It is plain net/http middleware (Handler); with echo, use
// echo.WrapMiddleware(g.Handler). A Guard is safe for concurrent use.
type Guard struct {
	eventID      string
	room         string // WaitingRoomURL with "?" or "&" to append to
	keys         *KeySource
	cookieName   string
	cookiePath   string
	secure       bool
	trustProto   bool
	donePath     string
	release      func(context.Context, string) error
	cache        *tokenCache
	observe      func(*http.Request, Decision)
	now          func() time.Time
	log          *slog.Logger
	releases     sync.WaitGroup
	clearCookieV string // the Set-Cookie value that clears the cookie
}

// NewGuard checks c and returns its Guard.
func NewGuard(c GuardConfig) (*Guard, error) {
	var errs []error
	if c.EventID == "" {
		errs = append(errs, errors.New("EventID is required"))
	}
	room, err := url.Parse(c.WaitingRoomURL)
	if err != nil || (room.Host == "" && !strings.HasPrefix(c.WaitingRoomURL, "/")) || (room.Scheme != "" && room.Scheme != "http" && room.Scheme != "https") {
		errs = append(errs, fmt.Errorf("WaitingRoomURL %q must be an http(s) URL or a path", c.WaitingRoomURL))
	}
	if c.Keys == nil {
		errs = append(errs, errors.New("Keys is required"))
	}
	g := &Guard{
		eventID: c.EventID, keys: c.Keys, cookieName: c.CookieName, cookiePath: c.CookiePath,
		secure: !c.CookieInsecure, trustProto: c.TrustForwardedProto, donePath: c.DonePath,
		release: c.Release, observe: c.Observe, now: c.Now, log: c.Logger,
	}
	if g.cookieName == "" {
		g.cookieName = "waitq_entry_" + c.EventID
	}
	if g.cookiePath == "" {
		g.cookiePath = "/"
	}
	if err := g.clearCookie().Valid(); err != nil {
		errs = append(errs, fmt.Errorf("cookie: %w", err))
	}
	if c.DonePath != "" && (!strings.HasPrefix(c.DonePath, "/") || c.Release == nil) {
		errs = append(errs, fmt.Errorf("DonePath %q must be a path starting with / and needs Release", c.DonePath))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("entry: guard: %w", err)
	}
	g.room = c.WaitingRoomURL
	switch {
	case room.RawQuery != "":
		g.room += "&"
	case !strings.HasSuffix(g.room, "?"):
		g.room += "?"
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.CacheSize > 0 {
		g.cache = &tokenCache{m: make(map[[sha256.Size]byte]Token), max: c.CacheSize}
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.clearCookieV = g.clearCookie().String()
	return g, nil
}

// CookieName returns the name of the cookie the token is kept in.
func (g *Guard) CookieName() string { return g.cookieName }

// Wait waits for the releases of finished visits still in flight; call it
// at shutdown, after the server stopped serving.
func (g *Guard) Wait() { g.releases.Wait() }

// Handler returns next behind the guard. The token of a passed request is
// in its context (TokenFromContext).
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.serve(w, r, next) })
}

// admission is the context value of a passed request.
type admission struct {
	t   Token
	raw string
}

type admissionKey struct{}

// TokenFromContext returns the verified token of a request a Guard passed,
// its claims and its text (to release it or ask the gateway about it).
func TokenFromContext(ctx context.Context) (t Token, raw string, ok bool) {
	a, ok := ctx.Value(admissionKey{}).(admission)
	return a.t, a.raw, ok
}

// serve decides one request: the query token first (arrival from the
// waiting room), then the cookie.
func (g *Guard) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	now := g.now()
	var (
		d   Decision
		a   admission
		ok  bool
		had bool // a cookie of the guard's name came with the request
	)
	if q, rest, found := takeParam(r.URL.RawQuery, TokenParam); found {
		r = withRawQuery(r, rest) // neither returnTo nor the origin sees the token
		t, err := g.check(r.Context(), q, now)
		switch {
		case err != nil:
			d.QueryErr = err
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			http.SetCookie(w, g.cookie(q, t))
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Location", r.URL.RequestURI())
			w.WriteHeader(http.StatusFound)
			g.decided(r, Decision{Outcome: Entered})
			return
		default:
			http.SetCookie(w, g.cookie(q, t))
			d.Outcome, a, ok = Entered, admission{t, q}, true
		}
	}
	if !ok {
		for _, c := range r.CookiesNamed(g.cookieName) {
			had = true
			t, err := g.check(r.Context(), c.Value, now)
			if err == nil {
				d.Outcome, d.CookieErr, a, ok = Passed, nil, admission{t, c.Value}, true
				break
			}
			if d.CookieErr == nil {
				d.CookieErr = err
			}
		}
	}
	if !ok {
		if errors.Is(d.QueryErr, ErrKeysUnavailable) || errors.Is(d.CookieErr, ErrKeysUnavailable) {
			d.Outcome = Unavailable
			g.decided(r, d)
			g.unavailable(w, r)
			return
		}
		d.Outcome = SentToLine
		g.decided(r, d)
		g.toLine(w, r, had)
		return
	}
	g.decided(r, d)
	r = r.WithContext(context.WithValue(r.Context(), admissionKey{}, a))
	if g.donePath != "" && r.URL.Path == g.donePath {
		g.serveDone(w, r, next, a.raw)
		return
	}
	next.ServeHTTP(w, r)
}

// decided reports d to the observer and refusals to the log.
func (g *Guard) decided(r *http.Request, d Decision) {
	if d.QueryErr != nil || d.CookieErr != nil || d.Outcome == SentToLine {
		g.log.Debug("entry token refused", "event", g.eventID, "path", r.URL.Path, "outcome", d.Outcome.String(),
			"query", Reason(d.QueryErr), "cookie", Reason(d.CookieErr))
	}
	if g.observe != nil {
		g.observe(r, d)
	}
}

// check verifies token for the guard's event, from the cache when it was
// verified before: then only its expiry and its key (still served by the
// gateway) are checked again.
func (g *Guard) check(ctx context.Context, token string, now time.Time) (Token, error) {
	if g.cache == nil || len(token) > maxLen {
		return g.keys.Verify(ctx, token, g.eventID, now)
	}
	key := sha256.Sum256([]byte(token))
	if t, ok := g.cache.get(key); ok {
		if skew, known := g.keys.knows(t.KeyID); known {
			if now.UnixMilli() >= t.Expires+skew.Milliseconds() {
				return t, ErrExpired
			}
			return t, nil
		}
	}
	t, err := g.keys.Verify(ctx, token, g.eventID, now)
	if err == nil {
		g.cache.put(key, t, now.UnixMilli())
	}
	return t, err
}

// cookie returns the cookie holding token until the end of its hold.
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

// RoomURL returns where r is sent to wait: the waiting room with the event
// and r's absolute URL as returnTo.
func (g *Guard) RoomURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if g.trustProto {
		p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
		if p = strings.ToLower(strings.TrimSpace(p)); p == "http" || p == "https" {
			scheme = p
		}
	}
	back := scheme + "://" + r.Host + r.URL.RequestURI()
	return g.room + "event=" + url.QueryEscape(g.eventID) + "&returnTo=" + url.QueryEscape(back)
}

// entryRequired is the 401 body for clients that asked for JSON.
type entryRequired struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	WaitingRoom string `json:"waitingRoom"`
}

// toLine sends r to the waiting room, clearing the cookie when it held an
// invalid token: a redirect, or 401 JSON to a client that asked for JSON.
func (g *Guard) toLine(w http.ResponseWriter, r *http.Request, clear bool) {
	room := g.RoomURL(r)
	h := w.Header()
	if clear {
		h.Add("Set-Cookie", g.clearCookieV)
	}
	h.Set("Cache-Control", "no-store")
	if wantsJSON(r) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(entryRequired{
			Code: "entry_required", Message: "this page needs a turn in the waiting room", WaitingRoom: room,
		})
		return
	}
	h.Set("Location", room)
	w.WriteHeader(http.StatusFound)
}

// unavailable answers 503 while no token can be checked: sending visitors
// to the waiting room would bring them straight back.
func (g *Guard) unavailable(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "5")
	msg := "entry cannot be checked right now; try again in a moment"
	if wantsJSON(r) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]string{"code": "entry_unavailable", "message": msg})
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = fmt.Fprintln(w, msg)
}

// wantsJSON reports whether r's Accept header asks for JSON and not for a
// page: API calls get 401 instead of a redirect they could not follow.
func wantsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

// serveDone runs next on the done path and, when it answered 2xx, clears
// the cookie (in that answer) and releases the slot in the background.
func (g *Guard) serveDone(w http.ResponseWriter, r *http.Request, next http.Handler, token string) {
	dw := &doneWriter{ResponseWriter: w, clear: g.clearCookieV}
	next.ServeHTTP(dw, r)
	if dw.status == 0 {
		dw.WriteHeader(http.StatusOK) // what the server sends for a handler that wrote nothing
	}
	if dw.status < 200 || dw.status > 299 {
		return
	}
	ctx := context.WithoutCancel(r.Context())
	g.releases.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, ReleaseTimeout)
		defer cancel()
		if err := g.release(ctx, token); err != nil {
			g.log.Warn("releasing a slot after the done path failed", "event", g.eventID, "err", err)
		}
	})
}

// doneWriter adds the cookie-clearing header to a 2xx answer.
type doneWriter struct {
	http.ResponseWriter
	clear  string
	status int // the final status written, 0 before
}

// WriteHeader implements http.ResponseWriter.
func (d *doneWriter) WriteHeader(code int) {
	if code >= 200 && d.status == 0 {
		d.status = code
		if code <= 299 {
			d.Header().Add("Set-Cookie", d.clear)
		}
	}
	d.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (d *doneWriter) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.WriteHeader(http.StatusOK)
	}
	return d.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (d *doneWriter) Flush() {
	if d.status == 0 {
		d.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(d.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (d *doneWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

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

// withRawQuery returns a shallow copy of r whose query is raw.
func withRawQuery(r *http.Request, raw string) *http.Request {
	r2 := r.WithContext(r.Context())
	u := *r.URL
	u.RawQuery = raw
	r2.URL = &u
	r2.RequestURI = u.RequestURI()
	return r2
}

// tokenCache maps the SHA-256 of tokens verified for the guard's event to
// their claims. When full it drops the expired entries, then arbitrary ones
// down to seven eighths.
type tokenCache struct {
	mu  sync.RWMutex
	m   map[[sha256.Size]byte]Token
	max int
}

func (c *tokenCache) get(k [sha256.Size]byte) (Token, bool) {
	c.mu.RLock()
	t, ok := c.m[k]
	c.mu.RUnlock()
	return t, ok
}

func (c *tokenCache) put(k [sha256.Size]byte, t Token, nowMs int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, t := range c.m {
			if t.Expires <= nowMs {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max-c.max/8 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[k] = t
}
