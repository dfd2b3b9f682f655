package impl_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/crmservice/crm/impl"
)

// process returns another server process over the same database and log: a
// second impl.NewHandler, as a deployment runs many behind a load balancer.
func (e *env) process(t *testing.T, opts ...envOption) *env {
	t.Helper()
	cfg := impl.Config{DB: e.db, Log: slog.New(slog.NewTextHandler(lockedWriter{e.logMu, e.logs}, nil)), TokenCacheTTL: -1} // as newEnv
	for _, o := range opts {
		o(&cfg)
	}
	h, err := impl.NewHandler(cfg)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	other := *e
	other.handler = h
	return &other
}

// from returns the server as reached from remote ("host:port"), through
// proxies that wrote X-Forwarded-For xff when it is not empty.
func (e *env) from(remote, xff string) *env {
	return e.wrap(func(r *http.Request) *http.Request {
		r.RemoteAddr = remote
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return r
	})
}

func (e *env) wrap(f func(*http.Request) *http.Request) *env {
	next := e.handler
	other := *e
	other.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, f(r)) })
	return &other
}

// sharedRedis is the envOption of a deployment whose processes share Redis.
func sharedRedis(rdb *redis.Client, prefix string) envOption {
	return func(c *impl.Config) { c.Redis, c.RedisPrefix = rdb, prefix }
}

// expectTooMany asserts a whole 429 reply.
func expectTooMany(t *testing.T, r reply, msg, retryAfter string) {
	t.Helper()
	if r.HTTPStatus != http.StatusTooManyRequests || r.Status != "error" || r.code() != "429" || r.errorText() != msg ||
		r.Value != "" || r.Rows != 0 || r.Pages != 0 || r.Page != 0 {
		t.Fatalf("want HTTP 429 %q, got %d\n%s", msg, r.HTTPStatus, r.Raw)
	}
	if got := r.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After %q, want %q", got, retryAfter)
	}
	if got := r.Header.Get("WWW-Authenticate"); got != "" {
		t.Errorf("a 429 with WWW-Authenticate %q", got)
	}
}

// expectServed asserts the reply of GET /directory/9 to a token that was
// served: the account's two counterparty types.
func expectServed(t *testing.T, r reply) {
	t.Helper()
	if r.HTTPStatus != http.StatusOK || r.Status != "success" || r.Code != nil || r.errorText() != "" ||
		r.Rows != 2 || r.Pages != 1 || r.Page != 1 || !strings.Contains(r.Value, `"NAME": "Supplier"`) {
		t.Fatalf("want the directory, got %d\n%s", r.HTTPStatus, r.Raw)
	}
	if got := r.Header.Get("Retry-After"); got != "" {
		t.Errorf("served with Retry-After %q", got)
	}
}

// expectUnauthorized asserts a whole 401 reply.
func expectUnauthorized(t *testing.T, r reply, msg string) {
	t.Helper()
	if r.HTTPStatus != http.StatusUnauthorized || r.Status != "error" || r.code() != "401" || r.errorText() != msg ||
		r.Value != "" || r.Rows != 0 || r.Pages != 0 || r.Page != 0 {
		t.Fatalf("want HTTP 401 %q, got %d\n%s", msg, r.HTTPStatus, r.Raw)
	}
	if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
		t.Errorf("WWW-Authenticate %q", got)
	}
	if got := r.Header.Get("Retry-After"); got != "" {
		t.Errorf("a 401 with Retry-After %q", got)
	}
}

// unknownToken is a token of the account in the right form, with its
// checksum, that the server never issued: only a lookup tells it is unknown.
func unknownToken(accountID int64) string {
	token, _ := impl.NewToken(accountID)
	return token
}

// serveAll sends n requests of token at once, request i to processes[i %
// len], and returns how many were served and how many refused with 429; every
// reply is checked against the contract.
func serveAll(t *testing.T, processes []*env, token string, n int) (served, limited int) {
	t.Helper()
	replies := make([]*httptest.ResponseRecorder, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := httptest.NewRequest(http.MethodGet, "/directory/9", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			replies[i] = httptest.NewRecorder()
			processes[i%len(processes)].handler.ServeHTTP(replies[i], r)
		})
	}
	wg.Wait()
	for _, w := range replies {
		if err := processes[0].contract.Check(http.MethodGet, "/directory/9", w.Code, w.Header(), w.Body.Bytes()); err != nil {
			t.Errorf("%v\n%s", err, w.Body)
		}
		var env struct{ Status string }
		_ = json.Unmarshal(w.Body.Bytes(), &env)
		switch {
		case w.Code == http.StatusOK && env.Status == "success":
			served++
		case w.Code == http.StatusTooManyRequests:
			limited++
		default:
			t.Errorf("unexpected reply %d %s", w.Code, w.Body)
		}
	}
	return served, limited
}

// TestRateLimitSharedByProcesses: two processes sharing Redis together allow
// one token exactly its burst; without Redis each allows it the whole burst.
func TestRateLimitSharedByProcesses(t *testing.T) {
	rdb, prefix := impl.OpenTestRedis(t)
	// One request per 1000 s: nothing refills while the test runs.
	limit := func(c *impl.Config) { c.RateLimit, c.RateBurst = 0.001, 10 }
	a := newEnv(t, limit, sharedRedis(rdb, prefix))
	b := a.process(t, limit, sharedRedis(rdb, prefix))
	w := a.newWorld(t, "acme")

	t.Run("OK one request after another", func(t *testing.T) {
		for i := range 10 {
			e := []*env{a, b}[i%2]
			expectServed(t, e.get(t, w.member.token, "/directory/9"))
		}
		for _, e := range []*env{a, b} {
			expectTooMany(t, e.get(t, w.member.token, "/directory/9"), "rate limit exceeded: 0.001 requests per second per token", "1000")
		}
		// Another token has its own allowance.
		expectServed(t, b.get(t, w.peer.token, "/directory/9"))
	})
	t.Run("OK at once", func(t *testing.T) {
		served, limited := serveAll(t, []*env{a, b}, w.head.token, 40)
		if served != 10 || limited != 30 {
			t.Fatalf("served %d and limited %d of 40, want 10 and 30", served, limited)
		}
	})
	t.Run("processes without Redis", func(t *testing.T) {
		// What the shared store is for: each process alone allows the burst.
		c := a.process(t, limit)
		d := a.process(t, limit)
		served, limited := serveAll(t, []*env{c, d}, w.admin.token, 40)
		if served != 20 || limited != 20 {
			t.Fatalf("served %d and limited %d of 40, want 20 and 20", served, limited)
		}
	})
}

// TestRateLimitRedisUnreachable: with REDIS_URL on a closed port every request
// is still answered, the limit holds in the process, and the log says so once.
func TestRateLimitRedisUnreachable(t *testing.T) {
	rdb := impl.OpenClosedRedis(t)
	e := newEnv(t, func(c *impl.Config) {
		c.RateLimit, c.RateBurst = 1, 3
		c.AuthFailureLimit, c.AuthFailureBurst = 6, 2
	}, sharedRedis(rdb, "crmtest:"))
	w := e.newWorld(t, "acme")
	for range 3 {
		expectServed(t, e.get(t, w.member.token, "/directory/9"))
	}
	expectTooMany(t, e.get(t, w.member.token, "/directory/9"), "rate limit exceeded: 1 requests per second per token", "1")
	for range 2 {
		expectUnauthorized(t, e.get(t, unknownToken(w.accountID), "/directory/9"), "unknown, expired or revoked token")
	}
	expectTooMany(t, e.get(t, unknownToken(w.accountID), "/directory/9"), "too many failed authentications: 6 per minute per client address", "10")
	if n := strings.Count(e.logText(), "rate limit store unreachable"); n != 1 {
		t.Fatalf("want the warning once, got %d times:\n%s", n, e.logText())
	}
}

// TestAuthFailureLimit: failed authentications per client address, in the
// process (the limit of 6 a minute, burst 5, makes Retry-After 10 s).
func TestAuthFailureLimit(t *testing.T) {
	e := newEnv(t, func(c *impl.Config) { c.AuthFailureLimit, c.AuthFailureBurst = 6, 5 })
	w := e.newWorld(t, "acme")
	abuser := e.from("198.51.100.7:40000", "")
	other := e.from("203.0.113.9:40000", "")
	const tooMany = "too many failed authentications: 6 per minute per client address"

	// The admin's token authenticates before the address is limited.
	expectServed(t, abuser.get(t, w.admin.token, "/directory/9"))
	t.Run("failures within the burst", func(t *testing.T) {
		for range 5 {
			expectUnauthorized(t, abuser.get(t, unknownToken(w.accountID), "/directory/9"), "unknown, expired or revoked token")
		}
	})
	t.Run("ErrTooMany past the burst", func(t *testing.T) {
		expectTooMany(t, abuser.get(t, unknownToken(w.accountID), "/directory/9"), tooMany, "10")
		expectTooMany(t, abuser.get(t, "", "/directory/9"), tooMany, "10")
		expectTooMany(t, abuser.do(t, request{method: http.MethodGet, target: "/directory/9", authorization: "Bearer crm_nope"}), tooMany, "10")
		expectTooMany(t, abuser.post(t, unknownToken(w.accountID), "/company/insert", "not json"), tooMany, "10")
	})
	t.Run("OK another address", func(t *testing.T) {
		expectUnauthorized(t, other.get(t, unknownToken(w.accountID), "/directory/9"), "unknown, expired or revoked token")
		expectUnauthorized(t, other.get(t, "", "/directory/9"), "missing bearer token")
	})
	t.Run("OK a valid token from the limited address", func(t *testing.T) {
		for range 3 {
			expectServed(t, abuser.get(t, w.admin.token, "/directory/9"))
		}
		// Serving it did not forgive the address its failures.
		expectTooMany(t, abuser.get(t, unknownToken(w.accountID), "/directory/9"), tooMany, "10")
	})
	t.Run("ErrTooMany a valid token not seen lately", func(t *testing.T) {
		// Telling it from a guess would take the lookup the limit saves.
		expectTooMany(t, abuser.get(t, w.peer.token, "/directory/9"), tooMany, "10")
		expectServed(t, other.get(t, w.peer.token, "/directory/9"))
		expectServed(t, abuser.get(t, w.peer.token, "/directory/9"))
	})
	t.Run("no lookup past the limit", func(t *testing.T) {
		// With the tokens table locked a lookup would wait out the deadline and
		// answer 500; a 429 shows that none was made.
		tx, err := e.db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`LOCK TABLE tokens IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		hurried := abuser.wrap(func(r *http.Request) *http.Request {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			t.Cleanup(cancel)
			return r.WithContext(ctx)
		})
		start := time.Now()
		expectTooMany(t, hurried.get(t, unknownToken(w.accountID), "/directory/9"), tooMany, "10")
		if d := time.Since(start); d > time.Second {
			t.Fatalf("the refusal took %v", d)
		}
	})
}

// TestAuthFailureLimitBehindProxies: the client address comes from
// X-Forwarded-For only on connections of TRUSTED_PROXIES.
func TestAuthFailureLimitBehindProxies(t *testing.T) {
	proxies, err := impl.ParseTrustedProxies("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *impl.Config) {
		c.AuthFailureLimit, c.AuthFailureBurst = 6, 2
		c.TrustedProxies = proxies
	})
	w := e.newWorld(t, "acme")
	const tooMany = "too many failed authentications: 6 per minute per client address"
	abuser := e.from("10.0.0.5:40000", "198.51.100.7")
	for range 2 {
		expectUnauthorized(t, abuser.get(t, unknownToken(w.accountID), "/directory/9"), "unknown, expired or revoked token")
	}
	expectTooMany(t, abuser.get(t, unknownToken(w.accountID), "/directory/9"), tooMany, "10")
	// The same client through another proxy of the deployment.
	expectTooMany(t, e.from("10.0.0.6:40000", "198.51.100.7").get(t, unknownToken(w.accountID), "/directory/9"), tooMany, "10")
	// Another client behind the same proxy.
	expectUnauthorized(t, e.from("10.0.0.5:40000", "198.51.100.8").get(t, unknownToken(w.accountID), "/directory/9"), "unknown, expired or revoked token")
	// A connection that is no trusted proxy cannot pick its address.
	spoofer := e.from("203.0.113.9:40000", "198.51.100.99")
	for range 2 {
		expectUnauthorized(t, spoofer.get(t, unknownToken(w.accountID), "/directory/9"), "unknown, expired or revoked token")
	}
	expectTooMany(t, e.from("203.0.113.9:40000", "198.51.100.100").get(t, unknownToken(w.accountID), "/directory/9"), tooMany, "10")
}

// TestAuthFailureLimitSharedByProcesses: two processes sharing Redis count one
// address's failures together, and know each other's valid tokens.
func TestAuthFailureLimitSharedByProcesses(t *testing.T) {
	rdb, prefix := impl.OpenTestRedis(t)
	limit := func(c *impl.Config) { c.AuthFailureLimit, c.AuthFailureBurst = 6, 4 }
	a := newEnv(t, limit, sharedRedis(rdb, prefix))
	b := a.process(t, limit, sharedRedis(rdb, prefix))
	w := a.newWorld(t, "acme")
	const tooMany = "too many failed authentications: 6 per minute per client address"
	fromA, fromB := a.from("198.51.100.7:40000", ""), b.from("198.51.100.7:40001", "")

	expectServed(t, fromA.get(t, w.admin.token, "/directory/9"))
	for i := range 4 {
		e := []*env{fromA, fromB}[i%2]
		expectUnauthorized(t, e.get(t, unknownToken(w.accountID), "/directory/9"), "unknown, expired or revoked token")
	}
	expectTooMany(t, fromA.get(t, unknownToken(w.accountID), "/directory/9"), tooMany, "10")
	expectTooMany(t, fromB.get(t, unknownToken(w.accountID), "/directory/9"), tooMany, "10")
	// Process b never saw the admin's token; process a told Redis.
	expectServed(t, fromB.get(t, w.admin.token, "/directory/9"))
	expectTooMany(t, fromB.get(t, w.member.token, "/directory/9"), tooMany, "10")
	expectUnauthorized(t, b.from("203.0.113.9:40000", "").get(t, unknownToken(w.accountID), "/directory/9"), "unknown, expired or revoked token")
}
