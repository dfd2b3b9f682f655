package impl

import (
	"testing"
	"time"
)

func TestTokenCacheEntries(t *testing.T) {
	hash := HashToken("crm_1_x")
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	p := &Principal{TokenID: 7, AccountID: 1, UserID: 2, Role: RoleAdmin}

	t.Run("an entry lives at most one second", func(t *testing.T) {
		c := newTokenCache(time.Hour)
		if c.ttl != time.Second {
			t.Fatalf("ttl %s, want it capped at 1s", c.ttl)
		}
		c.put(hash, p, time.Time{}, at)
		if got, ok := c.get(hash, at.Add(999*time.Millisecond)); !ok || *got != *p {
			t.Fatalf("within the second: %v, %t", got, ok)
		}
		if _, ok := c.get(hash, at.Add(time.Second)); ok {
			t.Fatal("served after a second")
		}
	})
	t.Run("the token's expiry is checked on every use", func(t *testing.T) {
		c := newTokenCache(time.Second)
		c.put(hash, p, at.Add(200*time.Millisecond), at)
		if _, ok := c.get(hash, at.Add(199*time.Millisecond)); !ok {
			t.Fatal("refused before its expiry")
		}
		if _, ok := c.get(hash, at.Add(200*time.Millisecond)); ok {
			t.Fatal("served at its expiry")
		}
	})
	t.Run("callers get a copy", func(t *testing.T) {
		c := newTokenCache(time.Second)
		c.put(hash, p, time.Time{}, at)
		got, _ := c.get(hash, at)
		got.Role = RoleMember
		if again, _ := c.get(hash, at); again.Role != RoleAdmin {
			t.Fatal("a caller changed the cached principal")
		}
	})
	t.Run("off", func(t *testing.T) {
		c := newTokenCache(-1)
		c.put(hash, p, time.Time{}, at)
		if _, ok := c.get(hash, at); ok || c != nil {
			t.Fatal("a switched-off cache served")
		}
	})
	t.Run("bounded", func(t *testing.T) {
		c := newTokenCache(time.Second)
		for i := range tokenCacheSize + 10 {
			c.put(HashToken(string(rune(i))), p, time.Time{}, at)
		}
		if n := len(c.entries); n > tokenCacheSize {
			t.Fatalf("%d entries", n)
		}
	})
}
