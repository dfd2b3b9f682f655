package impl_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	ctx := context.Background()

	unauthorised := func(t *testing.T, header, want string) {
		t.Helper()
		r := httpRequest(t, e, http.MethodGet, "/directory/9", header)
		if r.HTTPStatus != http.StatusUnauthorized || r.Status != "error" || r.code() != "401" || r.errorText() != want || r.Value != "" {
			t.Fatalf("want HTTP 401 %q, got %d\n%s", want, r.HTTPStatus, r.Raw)
		}
		if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
			t.Errorf("WWW-Authenticate %q", got)
		}
	}
	t.Run("no token", func(t *testing.T) { unauthorised(t, "", "missing bearer token") })
	t.Run("other scheme", func(t *testing.T) { unauthorised(t, "Basic YWRtaW46YWRtaW4=", "missing bearer token") })
	t.Run("unknown token", func(t *testing.T) { unauthorised(t, "Bearer crm_nope", "unknown, expired or revoked token") })
	t.Run("expired token", func(t *testing.T) {
		id, token, err := impl.CreateToken(ctx, e.db, w.member.id, "short", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Exec(`UPDATE tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		unauthorised(t, "Bearer "+token, "unknown, expired or revoked token")
	})
	t.Run("revoked token", func(t *testing.T) {
		id, token, err := impl.CreateToken(ctx, e.db, w.member.id, "revoked", 0)
		if err != nil {
			t.Fatal(err)
		}
		if r := httpRequest(t, e, http.MethodGet, "/directory/9", "Bearer "+token); r.Status != "success" {
			t.Fatalf("fresh token refused: %s", r.Raw)
		}
		if err := impl.RevokeToken(ctx, e.db, id); err != nil {
			t.Fatal(err)
		}
		unauthorised(t, "Bearer "+token, "unknown, expired or revoked token")
		if err := impl.RevokeToken(ctx, e.db, id); err == nil {
			t.Error("revoking twice succeeded")
		}
	})
	t.Run("inactive user", func(t *testing.T) {
		if _, err := e.db.Exec(`UPDATE users SET active = false WHERE id = $1`, w.other.id); err != nil {
			t.Fatal(err)
		}
		unauthorised(t, "Bearer "+w.other.token, "unknown, expired or revoked token")
	})
	t.Run("the token names its account", func(t *testing.T) {
		accountID, legacy, ok := impl.TokenAccount(w.member.token)
		if !ok || legacy || accountID != w.accountID {
			t.Fatalf("TokenAccount(%s) = %d, %t, %t; want %d, false, true", w.member.token, accountID, legacy, ok, w.accountID)
		}
		if !regexp.MustCompile(`^crm_[1-9][0-9]*_[0-9A-Za-z]{49}$`).MatchString(w.member.token) {
			t.Errorf("token %s is not of the documented form", w.member.token)
		}
	})
	t.Run("a wrong checksum, or another account named", func(t *testing.T) {
		tok := w.member.token
		last := tok[len(tok)-1]
		flipped := tok[:len(tok)-1] + string("01"[boolIndex(last == '0')])
		unauthorised(t, "Bearer "+flipped, "unknown, expired or revoked token")
		// The same secret under another account's number fails its checksum.
		beta := e.newWorld(t, "beta")
		other := strings.Replace(tok, fmt.Sprintf("crm_%d_", w.accountID), fmt.Sprintf("crm_%d_", beta.accountID), 1)
		unauthorised(t, "Bearer "+other, "unknown, expired or revoked token")
		// A well-formed token of an account where it is not stored.
		fresh, _ := impl.NewToken(beta.accountID)
		unauthorised(t, "Bearer "+fresh, "unknown, expired or revoked token")
	})
	t.Run("a legacy token (no account in it) is routed by legacy_tokens", func(t *testing.T) {
		legacy := "crm_" + strings.Repeat("Ab3-_", 8) + "xyz"
		if _, isLegacy, ok := impl.TokenAccount(legacy); !ok || !isLegacy {
			t.Fatalf("TokenAccount of an old-form token: legacy %t, ok %t", isLegacy, ok)
		}
		unauthorised(t, "Bearer "+legacy, "unknown, expired or revoked token")
		if _, err := e.db.Exec(`INSERT INTO tokens (account_id, user_id, hash, label) VALUES ($1, $2, $3, 'legacy')`,
			w.accountID, w.member.id, impl.HashToken(legacy)); err != nil {
			t.Fatal(err)
		}
		unauthorised(t, "Bearer "+legacy, "unknown, expired or revoked token") // not routed yet
		if _, err := e.db.Exec(`INSERT INTO legacy_tokens (hash, account) VALUES ($1, $2)`, impl.HashToken(legacy), w.accountID); err != nil {
			t.Fatal(err)
		}
		if r := httpRequest(t, e, http.MethodGet, "/directory/9", "Bearer "+legacy); r.Status != "success" {
			t.Fatalf("a routed legacy token was refused: %s", r.Raw)
		}
	})
	t.Run("401 before validation", func(t *testing.T) {
		r := e.do(t, request{method: http.MethodPost, target: "/company/insert", body: "not json"})
		if r.HTTPStatus != http.StatusUnauthorized || r.code() != "401" {
			t.Fatalf("want 401, got %s", r.Raw)
		}
	})
	t.Run("only the hash is stored", func(t *testing.T) {
		if n := e.count(t, `SELECT count(*) FROM tokens WHERE hash = $1`, impl.HashToken(w.admin.token)); n != 1 {
			t.Fatalf("the token's hash is stored %d times", n)
		}
		if n := e.count(t, `SELECT count(*) FROM tokens WHERE encode(hash, 'escape') LIKE '%crm_%'`); n != 0 {
			t.Fatal("a token is stored in clear")
		}
	})
}

// httpRequest sends a request with an exact Authorization header (or none).
func httpRequest(t *testing.T, e *env, method, target, authorization string) reply {
	t.Helper()
	return e.do(t, request{method: method, target: target, authorization: authorization})
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, func(c *impl.Config) { c.RateLimit, c.RateBurst = 1, 3 })
	w := e.newWorld(t, "acme")
	for i := range 3 {
		if r := e.get(t, w.member.token, "/directory/9"); r.Status != "success" {
			t.Fatalf("request %d within the burst refused: %s", i+1, r.Raw)
		}
	}
	r := e.get(t, w.member.token, "/directory/9")
	if r.HTTPStatus != http.StatusTooManyRequests || r.code() != "429" || r.Status != "error" ||
		!strings.Contains(r.errorText(), "rate limit exceeded") {
		t.Fatalf("want 429, got %d %s", r.HTTPStatus, r.Raw)
	}
	if got := r.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	// Another token has its own bucket.
	if r := e.get(t, w.peer.token, "/directory/9"); r.Status != "success" {
		t.Fatalf("another token was limited: %s", r.Raw)
	}
}

// TestUnknownOperations: a path outside the contract is HTTP 404 and a
// method its path does not have HTTP 405 (with Allow), both with the
// envelope, whose text repeats nothing of the request; the operations keep
// answering HTTP 200, their own "404" included.
func TestUnknownOperations(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	const noOperation = "no such operation: the path is not in the contract"
	for _, target := range []string{"/company/list", "/company/get%0A%0A%7B%22time%22:1%7D", "/no/such/" + strings.Repeat("p", 4000)} {
		r := e.do(t, request{method: http.MethodGet, target: target, token: w.admin.token, noOperation: true})
		expectErrorStatus(t, r, http.StatusNotFound, "404", noOperation, "")
		if r.errorText() != noOperation {
			t.Errorf("%.40s: error %q", target, r.errorText())
		}
		if r.Header.Get("X-Request-Id") == "" {
			t.Errorf("%.40s: no X-Request-Id", target)
		}
	}
	for _, tc := range []struct{ method, target, allow string }{
		{http.MethodGet, "/company/insert", "POST"},
		{http.MethodDelete, "/company/get?id=1", "GET"},
		{"PATCH", "/common/list/paging/1", "POST"},
	} {
		r := e.do(t, request{method: tc.method, target: tc.target, token: w.admin.token, noOperation: true})
		want := "method not allowed: the path takes only " + tc.allow
		expectErrorStatus(t, r, http.StatusMethodNotAllowed, "405", want, "")
		if r.errorText() != want || r.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: error %q, Allow %q", tc.method, tc.target, r.errorText(), r.Header.Get("Allow"))
		}
	}
	// An operation's own "404" stays HTTP 200, as the interface says.
	r := e.get(t, w.admin.token, "/company/get?id=9223372036854775807")
	if r.HTTPStatus != http.StatusOK || r.code() != "404" {
		t.Errorf("a missing counterparty: HTTP %d %s", r.HTTPStatus, r.Raw)
	}
}

func TestHealth(t *testing.T) {
	e := newEnv(t)
	if v := expectOK(t, e.get(t, "", "/healthz")); v != `{"status":"ok"}` {
		t.Errorf("healthz value %s", v)
	}
	if v := expectOK(t, e.get(t, "", "/readyz")); v != `{"status":"ok"}` {
		t.Errorf("readyz value %s", v)
	}
	t.Run("stale schema", func(t *testing.T) {
		dbtest.RequireOwnDatabase(t)
		if _, err := e.db.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
			t.Fatal(err)
		}
		r := e.get(t, "", "/readyz")
		if r.HTTPStatus != http.StatusServiceUnavailable || r.code() != "503" || r.Status != "error" {
			t.Fatalf("want HTTP 503, got %d %s", r.HTTPStatus, r.Raw)
		}
	})
}

func TestDirectoryGet(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	b := e.newWorld(t, "beta")
	ctx := context.Background()
	// A later sort order, an inactive value and an empty directory.
	if _, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: w.accountID, Code: 9, Name: "Agent", Sort: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(`UPDATE directory_values SET active = false WHERE id = $1`, w.dirs[10][1]); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		token string
		code  int
		want  string
		rows  int
	}{
		{"sorted by sort order", w.member.token, 9, "", 3},
		{"inactive values hidden", w.member.token, 10, fmt.Sprintf(`[{"ID":%d,"NAME":"Active"}]`, w.dirs[10][0]), 1},
		{"empty directory", w.member.token, 42, `[]`, 0},
		{"own account only", b.admin.token, 10,
			fmt.Sprintf(`[{"ID":%d,"NAME":"Active"},{"ID":%d,"NAME":"Lost"}]`, b.dirs[10][0], b.dirs[10][1]), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.get(t, tc.token, fmt.Sprintf("/directory/%d", tc.code))
			if r.Status != "success" || r.Rows != tc.rows || r.Pages != min(tc.rows, 1) || r.Page != min(tc.rows, 1) {
				t.Fatalf("reply %s", r.Raw)
			}
			if tc.code == 9 { // the id of "Agent" is not known in advance
				got := decode[[]map[string]any](t, r.Value)
				if len(got) != 3 || got[2]["NAME"] != "Agent" || got[0]["NAME"] != "Client" {
					t.Fatalf("value %s", r.Value)
				}
				return
			}
			if got, want := decode[any](t, r.Value), decode[any](t, tc.want); !reflect.DeepEqual(got, want) {
				t.Fatalf("value %s, want %s", r.Value, tc.want)
			}
		})
	}
	t.Run("unknown code", func(t *testing.T) {
		expectError(t, e.get(t, w.member.token, "/directory/7"), "400", `path parameter "code": value is not one of the allowed values`, "")
		expectError(t, e.get(t, w.member.token, "/directory/abc"), "400", `path parameter "code"`, "")
	})
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
