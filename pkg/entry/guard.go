package entry

import (
	"context"
	"crypto/sha256"
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
// protected site: https://shop.example.com/product/7?waitq_token=eyJ….
const TokenParam = "waitq_token"

// Fixed settings of a Guard.
const (
	// DefaultCacheSize is the number of verified tokens a Guard keeps, so
	// that a cookie seen before costs a hash and a map lookup, not an
	// Ed25519 verification.
	DefaultCacheSize = 10_000
	// ReleaseTimeout bounds one release after the done path, and one
	// arrival report (GuardConfig.Arrive).
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
	// Released, when set, lists the admissions given back before their
	// stay ended (NewReleasedSource; run its Run): their tokens are
	// refused (ErrReleased) though they verify, the cookie cleared.
	Released *ReleasedSource
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
	// token. It is any path of the same PathKey ("/ORDER/", "/order;x=1",
	// "/cart/../order"), which an origin may serve as the same order.
	// Release is required with it.
	DonePath string
	// Release gives the slot back (see the package function Release). Its
	// errors are logged, never shown to the visitor.
	Release func(ctx context.Context, token string) error
	// Arrive, when set, reports the arrival of a token's admission (see
	// the package function Arrive): called in the background, bounded by
	// ReleaseTimeout, each time a valid token comes from the waiting room
	// in the waitq_token parameter (Entered), so that an event with an
	// arrival window does not free the slot of someone in the shop. Its
	// errors are logged, never shown to the visitor.
	Arrive func(ctx context.Context, token string) error
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

// Guard admits to a protected site only the requests that carry a valid
// entry token of its event, in its cookie or, on arrival from the waiting
// room, in the waitq_token parameter, and sends the others to the waiting
// room. It is plain net/http middleware (Handler); with echo, use
// echo.WrapMiddleware(g.Handler). A Guard is safe for concurrent use.
type Guard struct {
	eventID      string
	room         string // WaitingRoomURL with "?" or "&" to append to
	keys         *KeySource
	released     *ReleasedSource
	cookieName   string
	cookiePath   string
	secure       bool
	trustProto   bool
	doneKey      string // PathKey(DonePath); "" without one
	release      func(context.Context, string) error
	arrive       func(context.Context, string) error
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
		eventID: c.EventID, keys: c.Keys, released: c.Released, cookieName: c.CookieName, cookiePath: c.CookiePath,
		secure: !c.CookieInsecure, trustProto: c.TrustForwardedProto,
		release: c.Release, arrive: c.Arrive, observe: c.Observe, now: c.Now, log: c.Logger,
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
	if c.DonePath != "" {
		g.doneKey = PathKey(c.DonePath)
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

// Wait waits for the releases of finished visits and the arrival reports
// still in flight; call it at shutdown, after the server stopped serving.
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

// serve decides one request (Check) and runs next for a passed one, the
// done path through serveDone.
func (g *Guard) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	r, ok := g.Check(w, r)
	if !ok {
		return
	}
	if g.doneKey != "" && PathKey(r.URL.Path) == g.doneKey {
		_, raw, _ := TokenFromContext(r.Context())
		g.serveDone(w, r, next, raw)
		return
	}
	next.ServeHTTP(w, r)
}

// Check decides r as Handler does, the query token first (arrival from the
// waiting room), then the cookie, and reports the decision to the Observe
// hook. When r may go on, it returns r without the waitq_token parameter,
// its token in the context (TokenFromContext), and true; w may then hold
// a Set-Cookie header (a non-GET arrival). Otherwise it has answered w
// (Entered: the cookie and a redirect to r's address without the
// parameter; SentToLine: the waiting room or 401; Unavailable: 503) and
// returns false. The done path is the caller's: Check never releases.
// A forward-auth endpoint rather serves the original request, rebuilt from
// its proxy's headers, with Handler and its "go on" answer as next: then
// the done path clears the cookie and releases the slot in that answer.
func (g *Guard) Check(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
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
			w.Header().Set("Location", sameHostURI(r.URL))
			w.WriteHeader(http.StatusFound)
			g.decided(r, Decision{Outcome: Entered, Legacy: t.Legacy})
			g.arrived(r, q)
			return r, false
		default:
			http.SetCookie(w, g.cookie(q, t))
			d.Outcome, d.Legacy, a, ok = Entered, t.Legacy, admission{t, q}, true
			g.arrived(r, q)
		}
	}
	if !ok {
		for _, c := range r.CookiesNamed(g.cookieName) {
			had = true
			t, err := g.check(r.Context(), c.Value, now)
			if err == nil {
				d.Outcome, d.CookieErr, d.Legacy, a, ok = Passed, nil, t.Legacy, admission{t, c.Value}, true
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
			return r, false
		}
		d.Outcome = SentToLine
		g.decided(r, d)
		g.toLine(w, r, had)
		return r, false
	}
	g.decided(r, d)
	return r.WithContext(context.WithValue(r.Context(), admissionKey{}, a)), true
}

// ArriveTries is how many times an arrival report that fails is sent:
// a second, then two, then four apart, so that a gateway out for a few
// seconds does not make a buyer in the shop a no-show (the event's
// arrivalSeconds is at least 10).
const ArriveTries = 4

// arrived reports the arrival of token, which came from the waiting room
// with r, in the background (GuardConfig.Arrive), each try bounded by
// ReleaseTimeout.
func (g *Guard) arrived(r *http.Request, token string) {
	if g.arrive == nil {
		return
	}
	ctx := context.WithoutCancel(r.Context())
	g.releases.Go(func() {
		var err error
		for try := range ArriveTries {
			if try > 0 {
				time.Sleep(time.Second << (try - 1))
			}
			tctx, cancel := context.WithTimeout(ctx, ReleaseTimeout)
			err = g.arrive(tctx, token)
			cancel()
			if err == nil {
				return
			}
		}
		g.log.Warn("reporting an arrival failed", "event", g.eventID, "tries", ArriveTries, "err", err)
	})
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

// check verifies token for the guard's event (verify) and refuses it when
// its admission was released: a map lookup on every request, cached or not.
func (g *Guard) check(ctx context.Context, token string, now time.Time) (Token, error) {
	t, err := g.verify(ctx, token, now)
	if err == nil && g.released != nil && g.released.Released(t.ID) {
		return t, ErrReleased
	}
	return t, err
}

// verify verifies token for the guard's event, from the cache when it was
// verified before: then only its expiry and its key (still served by the
// gateway) are checked again.
func (g *Guard) verify(ctx context.Context, token string, now time.Time) (Token, error) {
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
