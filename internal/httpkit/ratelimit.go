package httpkit

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/waitq/waitq/internal/queue"
)

// RateLimit is a token bucket per client IP (an IPv6 client's whole /64
// shares one): PerSecond requests a second on average, Burst at once. A zero PerSecond disables the limit.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// Validate reports a limit that cannot work: a negative PerSecond, or a
// Burst below 1 (the zero RateLimit, no limit, is valid). rate and burst
// name the two settings in the error, as operators set them.
func (l RateLimit) Validate(rate, burst string) error {
	if l != (RateLimit{}) && (l.PerSecond < 0 || l.Burst < 1) {
		return fmt.Errorf("%s must not be negative and %s must be at least 1", rate, burst)
	}
	return nil
}

// ValidateProxies reports the trusted proxies (as NewClientIPs takes them)
// that do not parse, naming the setting by name.
func ValidateProxies(name string, trusted []string) error {
	if _, err := NewClientIPs(trusted); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// ValidateTrustUserHeader refuses trust mode (WAITQ_TRUST_USER_HEADER)
// without trusted proxies: X-User-Id is believed only from them, so it
// would name nobody, and believing it from anyone lets any client be anyone.
func ValidateTrustUserHeader(trust bool, trusted []string) error {
	if trust && len(trusted) == 0 {
		return fmt.Errorf("WAITQ_TRUST_USER_HEADER=true needs WAITQ_TRUSTED_PROXIES: the authenticating proxies whose %s is believed", UserHeader)
	}
	return nil
}

// ClientIPs finds a request's client address: the direct peer, or, when that
// peer is a trusted proxy, the rightmost X-Forwarded-For address that is not
// itself a trusted proxy (what a client cannot forge).
type ClientIPs struct {
	trusted []*net.IPNet
}

// NewClientIPs parses trusted proxies given as CIDRs or single addresses.
func NewClientIPs(trusted []string) (*ClientIPs, error) {
	c := &ClientIPs{}
	for _, t := range trusted {
		if !strings.Contains(t, "/") {
			if ip := net.ParseIP(t); ip != nil && ip.To4() != nil {
				t += "/32"
			} else {
				t += "/128"
			}
		}
		_, n, err := net.ParseCIDR(t)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", t, err)
		}
		c.trusted = append(c.trusted, n)
	}
	return c, nil
}

// TrustsEveryAddress reports whether a trusted range holds every address
// (0.0.0.0/0, ::/0): with it anyone could name the client.
func (c *ClientIPs) TrustsEveryAddress() bool {
	for _, n := range c.trusted {
		if ones, _ := n.Mask.Size(); ones == 0 {
			return true
		}
	}
	return false
}

// PeerTrusted reports whether r came straight from a trusted proxy.
func (c *ClientIPs) PeerTrusted(r *http.Request) bool {
	_, ip := peer(r)
	return ip != nil && c.isTrusted(ip)
}

// peer returns r's direct peer: its host as given, and parsed (nil when it
// is not an address).
func peer(r *http.Request) (string, net.IP) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return host, net.ParseIP(host)
}

func (c *ClientIPs) isTrusted(ip net.IP) bool {
	for _, n := range c.trusted {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// Of returns the client address of r.
func (c *ClientIPs) Of(r *http.Request) string {
	host, ip := peer(r)
	if ip == nil || !c.isTrusted(ip) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		ip := net.ParseIP(strings.TrimSpace(hops[i]))
		if ip == nil {
			break // a malformed hop: stop at the last address we can vouch for
		}
		if !c.isTrusted(ip) {
			return ip.String()
		}
		host = ip.String()
	}
	return host
}

// bucketKey names the bucket a client address draws from: an IPv4 address
// its own, an IPv6 address its /64. A /64 is the smallest prefix an ISP or
// host hands out, and its holder picks any of its 2^64 addresses at will
// (privacy addresses rotate on their own): a bucket per IPv6 address would
// give one client a fresh burst per address, and the map a bucket per
// request. An IPv4-mapped IPv6 address is its IPv4 address.
func bucketKey(client string) string {
	host, _, _ := strings.Cut(client, "%") // a link-local zone names no client
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		if ip != nil {
			return ip.To4().String()
		}
		return client
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// limiter keeps a token bucket per client (per /64 for IPv6, bucketKey),
// forgetting idle ones.
type limiter struct {
	limit RateLimit
	ips   *ClientIPs
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	*rate.Limiter
	seen time.Time
}

// maxIdle is how long an unused bucket is kept; by then it is full again.
const maxIdle = 10 * time.Minute

// Limit returns echo middleware answering 429 rate_limited, with
// Retry-After, to clients over limit.
func Limit(l RateLimit, ips *ClientIPs, now func() time.Time) echo.MiddlewareFunc {
	lim := &limiter{limit: l, ips: ips, now: now, buckets: map[string]*bucket{}}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if l.PerSecond <= 0 {
			return next
		}
		return func(c echo.Context) error {
			if wait, ok := lim.allow(ips.Of(c.Request())); !ok {
				secs := int(math.Ceil(wait.Seconds()))
				c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
				return queue.Errorf(queue.CodeRateLimited, "too many requests from your address; retry in %d s", max(secs, 1))
			}
			return next(c)
		}
	}
}

// allow takes a token for client, or says how long until one is free.
func (l *limiter) allow(client string) (time.Duration, bool) {
	client = bucketKey(client)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute {
		for k, b := range l.buckets {
			if now.Sub(b.seen) > maxIdle {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[client]
	if !ok {
		b = &bucket{Limiter: rate.NewLimiter(rate.Limit(l.limit.PerSecond), max(l.limit.Burst, 1))}
		l.buckets[client] = b
	}
	b.seen = now
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}
