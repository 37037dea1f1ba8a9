package entry

import (
	"crypto/sha256"
	"sync"
)

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
