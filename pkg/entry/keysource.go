package entry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// ErrKeysUnavailable is returned when no key was ever fetched from the
// gateway: no token can be checked, valid or not.
var ErrKeysUnavailable = errors.New("entry: the gateway's keys could not be fetched")

// Defaults of KeySourceConfig.
const (
	// DefaultMinRefresh is the shortest time between two fetches of the
	// JWKS caused by tokens of unknown key ids: short, so that a made-up key
	// id delays a real rotation's first tokens by at most this long.
	DefaultMinRefresh = time.Second
	// DefaultFetchTimeout bounds one fetch of the JWKS.
	DefaultFetchTimeout = 5 * time.Second
)

// KeySourceConfig configures NewKeySource.
type KeySourceConfig struct {
	// URL is the gateway's JWK Set, …/.well-known/jwks.json.
	URL string
	// Client fetches it (nil: a client with DefaultFetchTimeout).
	Client *http.Client
	// MinRefresh is the shortest time between two fetches caused by an
	// unknown key id (0: DefaultMinRefresh), so that tokens with made-up key
	// ids cannot make the source hammer the gateway. Refresh and Run's
	// fetches do not count against it: a periodic fetch never delays the
	// fetch a rotation's first token asks for.
	MinRefresh time.Duration
	// AllowHTTP fetches over plain http:// from a host that is not
	// loopback: only inside a network you trust, where nobody can answer
	// in the gateway's place (the keys decide who gets in). Without it such
	// a URL is refused; https:// and loopback always work.
	AllowHTTP bool
	// Now is the clock of the rate limit (nil: time.Now).
	Now func() time.Time
	// Issuer, when set, is the iss every token must carry: the gateway's
	// public URL, WAITQ_PUBLIC_URL (see Verifier.Issuer).
	Issuer string
}

// KeySource holds the gateway's public keys and keeps them current: it
// fetches the JWK Set once (Refresh), again when a token names a key id it
// does not know (a rotation), at most once per MinRefresh, and on Run's
// ticks. It keeps the last keys it got when a fetch fails. It follows no
// redirect. A KeySource is safe for concurrent use; verifying with known
// keys takes no lock.
type KeySource struct {
	url        string
	issuer     string
	client     *http.Client
	minRefresh time.Duration
	allowHTTP  bool
	now        func() time.Time

	cur atomic.Pointer[Verifier]

	mu sync.Mutex // held during a fetch: one fetch at a time
	// lastOnDemand is the start of the last fetch an unknown key id caused,
	// under mu; Refresh's fetches leave it.
	lastOnDemand time.Time
}

// NewKeySource returns a source of the keys at c.URL. It fetches nothing
// until Refresh, Run or the first Verify.
func NewKeySource(c KeySourceConfig) *KeySource {
	k := &KeySource{url: c.URL, issuer: c.Issuer, minRefresh: c.MinRefresh, allowHTTP: c.AllowHTTP, now: c.Now}
	client := http.Client{Timeout: DefaultFetchTimeout}
	if c.Client != nil {
		client = *c.Client
	}
	// A redirect would let whoever answers at the URL send the source to
	// keys elsewhere.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	k.client = &client
	if k.minRefresh <= 0 {
		k.minRefresh = DefaultMinRefresh
	}
	if k.now == nil {
		k.now = time.Now
	}
	return k
}

// StaticKeys returns a source that always holds v's keys and never fetches:
// for tests, and for services given the keys offline.
func StaticKeys(v *Verifier) *KeySource {
	k := &KeySource{now: time.Now}
	k.cur.Store(v)
	return k
}

// Loaded reports whether the source holds keys.
func (k *KeySource) Loaded() bool { return k.cur.Load() != nil }

// Refresh fetches the keys now, whatever the time since the last fetch, and
// keeps the old keys when it fails. A static source has nothing to fetch.
func (k *KeySource) Refresh(ctx context.Context) error {
	if k.url == "" {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetchLocked(ctx)
}

// Run refreshes the keys every interval until ctx ends, so keys the gateway
// dropped stop verifying; failures keep the old keys and are reported to
// onErr when it is not nil.
func (k *KeySource) Run(ctx context.Context, every time.Duration, onErr func(error)) {
	if k.url == "" || every <= 0 {
		return
	}
	poll(ctx, every, k.Loaded, k.Refresh, onErr)
}

// Verify checks token with the keys held (see Verifier.Verify). When the
// token names an unknown key id, or no key was fetched yet, it fetches the
// keys first, unless the last fetch an unknown key id caused began less
// than MinRefresh ago. It
// returns ErrKeysUnavailable while the source has never held keys.
func (k *KeySource) Verify(ctx context.Context, token, eventID string, now time.Time) (Token, error) {
	v := k.cur.Load()
	if v != nil {
		t, err := v.Verify(token, eventID, now)
		if !errors.Is(err, ErrUnknownKey) || k.url == "" {
			return t, err
		}
	}
	if v = k.refreshIfDue(ctx, v); v == nil {
		return Token{}, ErrKeysUnavailable
	}
	return v.Verify(token, eventID, now)
}

// knows reports whether the keys held include kid, and the skew to apply.
func (k *KeySource) knows(kid string) (time.Duration, bool) {
	v := k.cur.Load()
	if v == nil {
		return 0, false
	}
	_, ok := v.keys[kid]
	return v.Skew, ok
}

// refreshIfDue fetches the keys unless another caller replaced seen while
// this one waited for the lock, or the last fetch is too recent; it returns
// the keys held afterwards.
func (k *KeySource) refreshIfDue(ctx context.Context, seen *Verifier) *Verifier {
	if k.url == "" {
		return k.cur.Load()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if v := k.cur.Load(); v != seen || k.now().Sub(k.lastOnDemand) < k.minRefresh {
		return v
	}
	k.lastOnDemand = k.now()
	// The fetch serves every waiting request, not only this one: it must
	// not end with this request's cancellation.
	_ = k.fetchLocked(context.WithoutCancel(ctx))
	return k.cur.Load()
}

// errRedirect refuses every redirect of a JWKS fetch.
var errRedirect = errors.New("entry: the JWKS answered a redirect: not followed")

// checkURL refuses a JWKS URL that is neither https:// nor http:// to a
// loopback host, unless AllowHTTP.
func (k *KeySource) checkURL() error {
	u, err := url.Parse(k.url)
	if err != nil {
		return fmt.Errorf("entry: JWKS URL: %w", err)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme != "http":
		return fmt.Errorf("entry: JWKS URL %q: want https://", k.url)
	case k.allowHTTP || u.Hostname() == "localhost":
		return nil
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("entry: JWKS URL %q: plain http:// to a host other than loopback (anyone on the way could hand out keys): want https://, or KeySourceConfig.AllowHTTP", k.url)
}

// fetchLocked fetches the keys; k.mu is held.
func (k *KeySource) fetchLocked(ctx context.Context) error {
	if err := k.checkURL(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultFetchTimeout)
	defer cancel()
	v, err := FetchJWKS(ctx, k.client, k.url)
	if err != nil {
		return err
	}
	v.Issuer = k.issuer
	k.cur.Store(v)
	return nil
}
