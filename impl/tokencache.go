package impl

import (
	"sync"
	"time"
)

// maxTokenCacheTTL bounds how long a verified token is trusted without a
// lookup: a revocation, an expiry or a user's deactivation, made by any
// process, takes effect within this time.
const maxTokenCacheTTL = time.Second

// tokenCacheSize bounds the entries of a process; past it, entries that are
// out of date are dropped, and if none are, all of them.
const tokenCacheSize = 10_000

// tokenCache remembers the owners of tokens that authenticated lately, by the
// token's SHA-256, so that a client sending many requests pays one token lookup
// per ttl instead of one per request. An entry is used only while it is younger
// than ttl (counted from before the lookup that made it began, so that a change
// committed while the lookup ran is seen within ttl too), and only while the
// token's own expiry is ahead: a token expiring within the second is refused at
// its expiry, not up to ttl later.
type tokenCache struct {
	ttl     time.Duration
	mu      sync.RWMutex
	entries map[[32]byte]tokenEntry
}

type tokenEntry struct {
	p       Principal
	until   time.Time // checked at, plus ttl
	expires time.Time // the token's expires_at; zero: never
}

// newTokenCache returns a cache whose entries live ttl, at most
// maxTokenCacheTTL; nil (no caching) when ttl is not positive.
func newTokenCache(ttl time.Duration) *tokenCache {
	if ttl <= 0 {
		return nil
	}
	return &tokenCache{ttl: min(ttl, maxTokenCacheTTL), entries: map[[32]byte]tokenEntry{}}
}

// get returns a copy of the principal of a token verified less than ttl ago
// and not expired at now.
func (c *tokenCache) get(hash []byte, now time.Time) (*Principal, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.RLock()
	e, ok := c.entries[[32]byte(hash)]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) || !e.expires.IsZero() && !now.Before(e.expires) {
		return nil, false
	}
	p := e.p
	return &p, true
}

// put records the principal of a token whose lookup began at checked.
func (c *tokenCache) put(hash []byte, p *Principal, expires time.Time, checked time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= tokenCacheSize {
		for h, e := range c.entries {
			if !checked.Before(e.until) {
				delete(c.entries, h)
			}
		}
		if len(c.entries) >= tokenCacheSize {
			clear(c.entries)
		}
	}
	c.entries[[32]byte(hash)] = tokenEntry{p: *p, until: checked.Add(c.ttl), expires: expires}
}
