package impl

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testRedis returns a client of the Redis at REDIS_URL (redis://127.0.0.1:6379
// when unset) and a key prefix of the test's own, whose keys are deleted when
// the test ends. It skips the test when Redis does not answer.
func testRedis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	rdb, err := OpenRedis(cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379"))
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Skipf("skipped: no Redis answers at %s (%v); start one or set REDIS_URL", rdb.Options().Addr, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "crmtest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		for it := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator(); it.Next(ctx); {
			rdb.Del(ctx, it.Val())
		}
	})
	return rdb, prefix
}

// closedRedis returns a client of a port nobody listens on.
func closedRedis(t testing.TB) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rdb, err := OpenRedis("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testShared(rdb *redis.Client, prefix string, logs *syncBuffer) *sharedStore {
	return &sharedStore{rdb: rdb, prefix: prefix, log: slog.New(slog.NewTextHandler(logs, nil))}
}

func TestLocalGCRA(t *testing.T) {
	g := &localGCRA{tat: map[string]time.Time{}}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const interval = 500 * time.Millisecond // 2 per second
	decide := func(at time.Time, take bool) (time.Duration, bool) { return g.decide("k", at, interval, 2, take) }

	t.Run("OK a burst", func(t *testing.T) {
		if wait, ok := decide(now, false); !ok || wait != 0 {
			t.Fatalf("room before the burst: %v %v", wait, ok)
		}
		for i := range 2 {
			if wait, ok := decide(now, true); !ok || wait != 0 {
				t.Fatalf("event %d of the burst: %v %v", i+1, wait, ok)
			}
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		if wait, ok := decide(now, false); ok || wait != interval {
			t.Fatalf("room after the burst: wait %v ok %v, want %v false", wait, ok, interval)
		}
		if wait, ok := decide(now.Add(100*time.Millisecond), true); ok || wait != 400*time.Millisecond {
			t.Fatalf("third event: wait %v ok %v, want 400ms false", wait, ok)
		}
	})
	t.Run("refilled at the rate", func(t *testing.T) {
		if _, ok := decide(now.Add(interval), true); !ok {
			t.Fatal("not refilled after one interval")
		}
		if _, ok := decide(now.Add(interval), true); ok {
			t.Fatal("refilled by more than one")
		}
	})
	t.Run("idle keys forgotten", func(t *testing.T) {
		later := now.Add(2 * time.Minute)
		if _, ok := g.decide("other", later, interval, 2, true); !ok {
			t.Fatal("a new key limited")
		}
		if _, kept := g.tat["k"]; kept || len(g.tat) != 1 {
			t.Fatalf("the sweep kept %v", g.tat)
		}
	})
}

// TestLimiterStores runs one sequence of decisions on each store. The
// interval is an hour, so that nothing refills while the test runs.
func TestLimiterStores(t *testing.T) {
	ctx := context.Background()
	stores := map[string]func(t *testing.T) *sharedStore{
		"in process": func(*testing.T) *sharedStore { return nil },
		"Redis": func(t *testing.T) *sharedStore {
			rdb, prefix := testRedis(t)
			return testShared(rdb, prefix, &syncBuffer{})
		},
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			shared := store(t)
			l := newLimiter("test", 1, time.Hour, 3, shared)
			if _, ok := l.room(ctx, "a"); !ok {
				t.Fatal("no room for a new key")
			}
			for i := range 3 {
				if _, ok := l.take(ctx, "a"); !ok {
					t.Fatalf("event %d of the burst limited", i+1)
				}
			}
			for _, decide := range []func(context.Context, string) (time.Duration, bool){l.room, l.take} {
				wait, ok := decide(ctx, "a")
				if ok || wait <= time.Hour-time.Minute || wait > time.Hour {
					t.Fatalf("past the burst: wait %v ok %v, want just under an hour", wait, ok)
				}
			}
			if _, ok := l.take(ctx, "b"); !ok {
				t.Fatal("another key limited")
			}
			if shared == nil {
				return
			}
			if shared.downUntil.Load() != 0 {
				t.Fatal("Redis marked unreachable")
			}
			// The decisions were Redis's: the process kept nothing, and the key expires.
			if len(l.local.tat) != 0 {
				t.Fatalf("the process counted too: %v", l.local.tat)
			}
			ttl, err := shared.rdb.PTTL(ctx, shared.prefix+"test:a").Result()
			if err != nil || ttl <= 2*time.Hour || ttl > 3*time.Hour {
				t.Fatalf("key expires in %v (%v), want when its three hours have passed", ttl, err)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		l := newLimiter("test", 0, time.Second, 0, nil)
		for range 100 {
			if _, ok := l.take(ctx, "a"); !ok {
				t.Fatal("a zero rate limits")
			}
		}
	})
	t.Run("burst below one", func(t *testing.T) {
		if l := newLimiter("test", 2.5, time.Second, 0, nil); l.burst != 3 || l.interval != 400*time.Millisecond {
			t.Fatalf("burst %d interval %v, want 3 and 400ms", l.burst, l.interval)
		}
	})
}

func TestRedisGCRARefills(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	l := newLimiter("test", 20, time.Second, 1, testShared(rdb, prefix, &syncBuffer{}))
	if _, ok := l.take(ctx, "a"); !ok {
		t.Fatal("first event limited")
	}
	wait, ok := l.take(ctx, "a")
	if ok || wait <= 0 || wait > 50*time.Millisecond {
		t.Fatalf("second event at once: wait %v ok %v, want limited for at most 50ms", wait, ok)
	}
	time.Sleep(wait + 10*time.Millisecond)
	if wait, ok := l.take(ctx, "a"); !ok {
		t.Fatalf("not refilled after the wait: wait %v", wait)
	}
}

// TestRedisUnreachable: decisions fall back to the process, with one warning.
func TestRedisUnreachable(t *testing.T) {
	ctx := context.Background()
	logs := &syncBuffer{}
	shared := testShared(closedRedis(t), "crmtest:", logs)
	l := newLimiter("test", 1, time.Hour, 2, shared)
	start := time.Now()
	for i := range 2 {
		if _, ok := l.take(ctx, "a"); !ok {
			t.Fatalf("event %d of the burst limited", i+1)
		}
	}
	if wait, ok := l.take(ctx, "a"); ok || wait <= time.Hour-time.Minute {
		t.Fatalf("past the burst: wait %v ok %v", wait, ok)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("three decisions took %v", d)
	}
	if n := strings.Count(logs.String(), "rate limit store unreachable"); n != 1 || !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("want one warning, got %d:\n%s", n, logs)
	}
	if shared.usable() {
		t.Fatal("Redis asked again before sharedRetry")
	}
}

// TestRedisAnswersAgain: after sharedRetry one decision asks Redis again, and
// when it answers the limits are shared again.
func TestRedisAnswersAgain(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	logs := &syncBuffer{}
	shared := testShared(rdb, prefix, logs)
	shared.downUntil.Store(time.Now().Add(-time.Millisecond).UnixNano())
	l := newLimiter("test", 1, time.Hour, 2, shared)
	if _, ok := l.take(ctx, "a"); !ok {
		t.Fatal("limited")
	}
	if shared.downUntil.Load() != 0 || !strings.Contains(logs.String(), "rate limit store answers again") {
		t.Fatalf("not back to Redis; log:\n%s", logs)
	}
	if n, err := rdb.Exists(ctx, prefix+"test:a").Result(); err != nil || n != 1 {
		t.Fatalf("the decision is not in Redis: %d %v", n, err)
	}
}

func TestKnownTokens(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	hash := HashToken("crm_1_token")
	t.Run("in process", func(t *testing.T) {
		k := &knownTokens{seen: map[[16]byte]time.Time{}}
		if k.knownHere(hash, now) || k.knownShared(ctx, hash) {
			t.Fatal("known before it authenticated")
		}
		k.add(ctx, hash, now)
		if !k.knownHere(hash, now.Add(knownTokenMemory-time.Second)) {
			t.Fatal("forgotten within knownTokenMemory")
		}
		if k.knownHere(hash, now.Add(knownTokenMemory)) || k.knownHere(HashToken("crm_1_other"), now) {
			t.Fatal("known after knownTokenMemory, or another token known")
		}
	})
	t.Run("Redis", func(t *testing.T) {
		rdb, prefix := testRedis(t)
		shared := testShared(rdb, prefix, &syncBuffer{})
		a := &knownTokens{seen: map[[16]byte]time.Time{}, shared: shared}
		b := &knownTokens{seen: map[[16]byte]time.Time{}, shared: shared} // another process
		a.add(ctx, hash, now)
		if b.knownHere(hash, now) {
			t.Fatal("the other process knows it without asking")
		}
		if !b.knownShared(ctx, hash) || !b.knownHere(hash, time.Now()) {
			t.Fatal("the other process did not learn it from Redis")
		}
		ttl, err := rdb.TTL(ctx, prefix+"known:"+hex.EncodeToString(hash[:16])).Result()
		if err != nil || ttl <= knownTokenMemory-time.Minute || ttl > knownTokenMemory {
			t.Fatalf("record expires in %v (%v)", ttl, err)
		}
		if b.knownShared(ctx, HashToken("crm_1_other")) {
			t.Fatal("another token known")
		}
	})
}

func TestClientKey(t *testing.T) {
	proxies, err := ParseTrustedProxies("10.0.0.0/8, 2001:db8:ffff::/48 192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"the connection's address", "198.51.100.7:4000", nil, "198.51.100.7"},
		{"X-Forwarded-For of an untrusted connection ignored", "198.51.100.7:4000", []string{"203.0.113.9"}, "198.51.100.7"},
		{"behind a trusted proxy", "10.1.2.3:4000", []string{"203.0.113.9"}, "203.0.113.9"},
		{"what the client wrote left of the proxies ignored", "10.1.2.3:4000", []string{"6.6.6.6, 203.0.113.9, 10.9.9.9"}, "203.0.113.9"},
		{"several header lines", "192.0.2.1:4000", []string{"6.6.6.6", "203.0.113.9", "10.9.9.9"}, "203.0.113.9"},
		{"a proxy that writes ports", "10.1.2.3:4000", []string{"203.0.113.9:5555, [2001:db8:ffff::1]:443"}, "203.0.113.9"},
		{"trusted proxy without X-Forwarded-For", "10.1.2.3:4000", nil, "10.1.2.3"},
		{"only proxies", "10.1.2.3:4000", []string{"10.7.7.7, 10.8.8.8"}, "10.7.7.7"},
		{"garbage stops the walk", "10.1.2.3:4000", []string{"203.0.113.9, unknown, 10.8.8.8"}, "10.8.8.8"},
		{"IPv6 by its /64", "[2001:db8:1:2:3:4:5:6]:4000", nil, "2001:db8:1:2::/64"},
		{"IPv6 behind a proxy", "[2001:db8:ffff::9]:4000", []string{"2001:db8:7:8::1"}, "2001:db8:7:8::/64"},
		{"IPv4 mapped into IPv6", "[::ffff:198.51.100.7]:4000", nil, "198.51.100.7"},
		{"not an IP connection", "@", nil, "@"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &limits{proxies: proxies}
			r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := l.clientKey(r); got != tc.want {
				t.Fatalf("clientKey %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.1.2.3/8,\t::1 ")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	if got, err := ParseTrustedProxies(""); err != nil || got != nil {
		t.Fatalf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.0/8;"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestOpenRedis(t *testing.T) {
	rdb, err := OpenRedis("redis://:s3cret@127.0.0.1:6390/2")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	o := rdb.Options()
	if o.Addr != "127.0.0.1:6390" || o.DB != 2 || o.Password != "s3cret" || o.DialTimeout != 250*time.Millisecond ||
		o.ReadTimeout != 250*time.Millisecond || o.MaxRetries != 1 {
		t.Fatalf("options %+v", o)
	}
	rdb2, err := OpenRedis("redis://127.0.0.1:6390?dial_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb2.Close()
	if d := rdb2.Options().DialTimeout; d != 2*time.Second {
		t.Fatalf("the URL's dial_timeout lost: %v", d)
	}
	_, err = OpenRedis("redis://:s3cret@127.0.0.1:port")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("bad URL: %v", err)
	}
}
