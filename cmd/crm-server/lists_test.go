package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// TestListCommands lists what the admin commands made, as tables and as JSON,
// and checks every column against the rows: a token's secret never appears,
// its last use appears once it authenticated a request, and revoked and
// expired tokens only with --all.
func TestListCommands(t *testing.T) {
	dbtest.RequireOwnDatabase(t) // account list and token list read every account
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	account := mustCommand(t, "account", "create", "--name", "Acme", "--currency", "EUR", "--tz", "Europe/Riga")
	other := mustCommand(t, "account", "create", "--name", "Other", "--currency", "USD", "--tz", "UTC")
	sales := mustCommand(t, "department", "create", "--account", account, "--name", "Sales")
	admin := mustCommand(t, "department", "create", "--account", account, "--name", "Admin")
	anna := mustCommand(t, "user", "create", "--account", account, "--name", "Anna Berg", "--login", "anna@acme.example", "--role", "admin")
	hanna := mustCommand(t, "user", "create", "--account", account, "--name", "Hanna Head", "--login", "hanna@acme.example",
		"--role", "head", "--department", sales, "--kpi-users", "--tz", "Europe/Helsinki")
	mustCommand(t, "user", "deactivate", "--id", hanna)
	olaf := mustCommand(t, "user", "create", "--account", other, "--name", "Olaf", "--login", "olaf@other.example")

	type created struct{ id, token string }
	issue := func(args ...string) created {
		t.Helper()
		var c struct {
			ID    int64  `json:"id"`
			Token string `json:"token"`
		}
		if err := json.Unmarshal([]byte(mustCommand(t, append([]string{"token", "create", "-o", "json"}, args...)...)), &c); err != nil {
			t.Fatal(err)
		}
		return created{itoa(c.ID), c.Token}
	}
	laptop := issue("--user", anna, "--label", "laptop", "--ttl", "720h")
	forever := issue("--user", anna)
	revoked := issue("--user", anna, "--label", "old")
	mustCommand(t, "token", "revoke", "--id", revoked.id)
	expired := issue("--user", anna, "--label", "expired", "--ttl", "1h")
	if _, err := pool.Exec(`UPDATE tokens SET expires_at = now() - interval '1 minute' WHERE id = $1`, expired.id); err != nil {
		t.Fatal(err)
	}
	olafs := issue("--user", olaf, "--label", "ci")

	// The laptop token authenticates a request: its last use is recorded.
	handler, err := impl.NewHandler(impl.Config{DB: pool})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/company/get?id=1", nil)
	req.Header.Set("Authorization", "Bearer "+laptop.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	var times struct {
		AccountCreated, OtherCreated, SalesCreated, AdminCreated, AnnaCreated, HannaCreated time.Time
		LaptopCreated, LaptopExpires, LaptopUsed, ForeverCreated, RevokedCreated, RevokedAt time.Time
		ExpiredCreated, ExpiredExpires                                                      time.Time
	}
	row := pool.QueryRow(`SELECT
		(SELECT created_at FROM accounts WHERE id = $1), (SELECT created_at FROM accounts WHERE id = $2),
		(SELECT created_at FROM departments WHERE id = $3), (SELECT created_at FROM departments WHERE id = $4),
		(SELECT created_at FROM users WHERE id = $5), (SELECT created_at FROM users WHERE id = $6),
		(SELECT created_at FROM tokens WHERE id = $7), (SELECT expires_at FROM tokens WHERE id = $7),
		(SELECT last_used_at FROM tokens WHERE id = $7), (SELECT created_at FROM tokens WHERE id = $8),
		(SELECT created_at FROM tokens WHERE id = $9), (SELECT revoked_at FROM tokens WHERE id = $9),
		(SELECT created_at FROM tokens WHERE id = $10), (SELECT expires_at FROM tokens WHERE id = $10)`,
		account, other, sales, admin, anna, hanna, laptop.id, forever.id, revoked.id, expired.id)
	if err := row.Scan(&times.AccountCreated, &times.OtherCreated, &times.SalesCreated, &times.AdminCreated, &times.AnnaCreated,
		&times.HannaCreated, &times.LaptopCreated, &times.LaptopExpires, &times.LaptopUsed, &times.ForeverCreated,
		&times.RevokedCreated, &times.RevokedAt, &times.ExpiredCreated, &times.ExpiredExpires); err != nil {
		t.Fatalf("read the times (the laptop token's last use must be set): %v", err)
	}
	lt := listTime
	js := func(t time.Time) string { b, _ := json.Marshal(t.UTC()); return string(b) }

	tables := []struct {
		args []string
		want string
	}{
		{[]string{"account", "list"}, fmt.Sprintf(`
ID  NAME   CURRENCY  TIME ZONE    USERS  TOKENS  CREATED
%-2s  Acme   EUR       Europe/Riga  1      2       %s
%-2s  Other  USD       UTC          1      1       %s
`, account, lt(times.AccountCreated), other, lt(times.OtherCreated))},
		{[]string{"department", "list", "--account", account}, fmt.Sprintf(`
ID  NAME   USERS  CREATED
%-2s  Admin  0      %s
%-2s  Sales  0      %s
`, admin, lt(times.AdminCreated), sales, lt(times.SalesCreated))},
		{[]string{"user", "list", "--account", account}, fmt.Sprintf(`
ID  NAME        LOGIN               ROLE   DEPARTMENT  ACTIVE  CREATED
%-2s  Anna Berg   anna@acme.example   admin  -           true    %s
%-2s  Hanna Head  hanna@acme.example  head   %-10s  false   %s
`, anna, lt(times.AnnaCreated), hanna, sales+" Sales", lt(times.HannaCreated))},
		{[]string{"token", "list", "--account", account}, fmt.Sprintf(`
ID  ACCOUNT  USER         LABEL   CREATED            EXPIRES            LAST USED          STATE
%-2s  %-7s  %-11s  laptop  %s  %s  %s  valid
%-2s  %-7s  %-11s  -       %s  never              never              valid
`, laptop.id, account, anna+" Anna Berg", lt(times.LaptopCreated), lt(times.LaptopExpires), lt(times.LaptopUsed),
			forever.id, account, anna+" Anna Berg", lt(times.ForeverCreated))},
	}
	for _, tc := range tables {
		out, err := command(t, tc.args...)
		if err != nil || out != strings.TrimPrefix(tc.want, "\n") {
			t.Errorf("crm-server %s (%v):\n%s\nwant\n%s", strings.Join(tc.args, " "), err, out, strings.TrimPrefix(tc.want, "\n"))
		}
	}

	jsonLists := []struct {
		args []string
		want string
	}{
		{[]string{"account", "list", "-o", "json"}, fmt.Sprintf(`[{"id":%s,"name":"Acme","base_currency":"EUR","time_zone":"Europe/Riga","users":1,"tokens":2,"created_at":%s},`+
			`{"id":%s,"name":"Other","base_currency":"USD","time_zone":"UTC","users":1,"tokens":1,"created_at":%s}]`,
			account, js(times.AccountCreated), other, js(times.OtherCreated))},
		{[]string{"department", "list", "--account", other, "-o", "json"}, `[]`},
		{[]string{"user", "list", "--account", account, "-o", "json"}, fmt.Sprintf(`[`+
			`{"id":%s,"name":"Anna Berg","login":"anna@acme.example","role":"admin","department_id":null,"department_name":null,"kpi_users_report":false,"kpi_departments_report":false,"time_zone":null,"active":true,"created_at":%s},`+
			`{"id":%s,"name":"Hanna Head","login":"hanna@acme.example","role":"head","department_id":%s,"department_name":"Sales","kpi_users_report":true,"kpi_departments_report":false,"time_zone":"Europe/Helsinki","active":false,"created_at":%s}]`,
			anna, js(times.AnnaCreated), hanna, sales, js(times.HannaCreated))},
		{[]string{"token", "list", "--user", anna, "--all", "-o", "json"}, fmt.Sprintf(`[`+
			`{"id":%s,"account_id":%s,"user_id":%s,"user_name":"Anna Berg","label":"laptop","created_at":%s,"expires_at":%s,"last_used_at":%s,"revoked_at":null,"state":"valid"},`+
			`{"id":%s,"account_id":%s,"user_id":%s,"user_name":"Anna Berg","label":"","created_at":%s,"expires_at":null,"last_used_at":null,"revoked_at":null,"state":"valid"},`+
			`{"id":%s,"account_id":%s,"user_id":%s,"user_name":"Anna Berg","label":"old","created_at":%s,"expires_at":null,"last_used_at":null,"revoked_at":%s,"state":"revoked"},`+
			`{"id":%s,"account_id":%s,"user_id":%s,"user_name":"Anna Berg","label":"expired","created_at":%s,"expires_at":%s,"last_used_at":null,"revoked_at":null,"state":"expired"}]`,
			laptop.id, account, anna, js(times.LaptopCreated), js(times.LaptopExpires), js(times.LaptopUsed),
			forever.id, account, anna, js(times.ForeverCreated),
			revoked.id, account, anna, js(times.RevokedCreated), js(times.RevokedAt),
			expired.id, account, anna, js(times.ExpiredCreated), js(times.ExpiredExpires))},
	}
	for _, tc := range jsonLists {
		out, err := command(t, tc.args...)
		if err != nil || out != tc.want+"\n" {
			t.Errorf("crm-server %s (%v):\n%s\nwant\n%s", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}

	// Every account's valid tokens, and never a secret anywhere.
	all, err := command(t, "token", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var rows []struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(all), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != fmt.Sprintf("[%s %s %s]", laptop.id, forever.id, olafs.id) {
		t.Errorf("token list: ids %v, want the valid tokens %s %s %s", ids, laptop.id, forever.id, olafs.id)
	}
	for _, args := range [][]string{{"token", "list", "--all"}, {"token", "list", "--all", "-o", "json"}} {
		out, _ := command(t, args...)
		for _, c := range []created{laptop, forever, revoked, expired, olafs} {
			if strings.Contains(out, c.token) || strings.Contains(out, c.token[len(c.token)-12:]) {
				t.Errorf("crm-server %s shows a token's secret:\n%s", strings.Join(args, " "), out)
			}
		}
	}

	failing(t, "no account 999999999", "user", "list", "--account", "999999999")
	failing(t, "no account 999999999", "department", "list", "--account", "999999999")
	failing(t, "no account 999999999", "token", "list", "--account", "999999999")
	failing(t, "no user 999999999", "token", "list", "--user", "999999999")
	failing(t, fmt.Sprintf("account %s has no user %s", other, anna), "token", "list", "--account", other, "--user", anna)
	failing(t, "user list: --account is required (see crm-server user list --help)", "user", "list")
}

// TestTokenLastUsed checks that a token's last use is written once a minute
// at most: a second request within the minute writes nothing.
func TestTokenLastUsed(t *testing.T) {
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	account := mustCommand(t, "account", "create", "--name", "Acme", "--tz", "UTC")
	user := mustCommand(t, "user", "create", "--account", account, "--name", "Mia", "--login", "mia@acme.example")
	var tok struct {
		ID    int64  `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(mustCommand(t, "token", "create", "--user", user, "-o", "json")), &tok); err != nil {
		t.Fatal(err)
	}
	handler, err := impl.NewHandler(impl.Config{DB: pool, TokenCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/company/get?id=1", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		handler.ServeHTTP(rec, req)
		if strings.Contains(rec.Body.String(), `"401"`) {
			t.Fatalf("the token was refused: %s", rec.Body.String())
		}
	}
	lastUsed := func() *time.Time {
		t.Helper()
		var at *time.Time
		if err := pool.Get(&at, `SELECT last_used_at FROM tokens WHERE id = $1`, tok.ID); err != nil {
			t.Fatal(err)
		}
		return at
	}
	if at := lastUsed(); at != nil {
		t.Fatalf("a new token was last used at %v", at)
	}
	get()
	first := lastUsed()
	if first == nil {
		t.Fatal("no last use after a request")
	}
	get()
	if again := lastUsed(); !again.Equal(*first) {
		t.Errorf("last use moved from %v to %v within the minute", first, again)
	}
	// A minute later (set back by hand) the next request writes it again.
	// (The earlier time is computed here: Citus refuses now()-like functions
	// over a column in an UPDATE.)
	if _, err := pool.Exec(`UPDATE tokens SET last_used_at = $2 WHERE id = $1`, tok.ID, first.Add(-61*time.Second)); err != nil {
		t.Fatal(err)
	}
	get()
	if later := lastUsed(); !later.After(first.Add(-61*time.Second + time.Millisecond)) {
		t.Errorf("last use %v not written again after a minute (first %v)", later, first)
	}
}

// TestAdminCommandsQuiet checks that an admin command logs nothing unless
// asked (--verbose or LOG_LEVEL), and that the demo it loads twice leaves two
// valid tokens of its label, revoking the pair it printed before.
func TestAdminCommandsQuiet(t *testing.T) {
	dbtest.RequireOwnDatabase(t) // it counts every token
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	t.Setenv("LOG_LEVEL", "")
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	withLog := func(args ...string) (out, log string) {
		t.Helper()
		var o, l bytes.Buffer
		err := run(context.Background(), slog.New(slog.NewTextHandler(&l, nil)), streams{in: strings.NewReader(""), out: &o, err: io.Discard}, args)
		if err != nil {
			t.Fatalf("crm-server %s: %v", strings.Join(args, " "), err)
		}
		return o.String(), l.String()
	}
	tokenOf := func(demo string) string { return regexp.MustCompile(`(?m)^token=(\S+)$`).FindStringSubmatch(demo)[1] }

	first, log := withLog("demo")
	if log != "" {
		t.Errorf("demo logged without being asked:\n%s", log)
	}
	second, log := withLog("demo", "--verbose")
	if !strings.Contains(log, `msg="loading the demo data set"`) {
		t.Errorf("demo --verbose logged:\n%s", log)
	}
	t.Setenv("LOG_LEVEL", "info")
	third, log := withLog("demo")
	if !strings.Contains(log, `msg="loading the demo data set"`) {
		t.Errorf("demo with LOG_LEVEL=info logged:\n%s", log)
	}

	// Three loads: the pair of the third is valid, the others revoked; the
	// tokens people issued to the demo admin are left alone.
	var states []string
	if err := pool.Select(&states, `
		SELECT label || ' ' || CASE WHEN revoked_at IS NULL THEN 'valid' ELSE 'revoked' END FROM tokens ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	want := []string{"demo: crm-server demo revoked", "demo: crm-server demo revoked", "demo: crm-server demo revoked",
		"demo: crm-server demo revoked", "demo: crm-server demo valid", "demo: crm-server demo valid"}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("tokens after three demo loads: %q, want %q", states, want)
	}
	for _, demo := range []string{first, second} {
		var revoked bool
		if err := pool.Get(&revoked, `SELECT revoked_at IS NOT NULL FROM tokens WHERE hash = $1`, impl.HashToken(tokenOf(demo))); err != nil || !revoked {
			t.Errorf("an earlier demo token is not revoked (%v)", err)
		}
	}
	var valid bool
	if err := pool.Get(&valid, `SELECT revoked_at IS NULL FROM tokens WHERE hash = $1`, impl.HashToken(tokenOf(third))); err != nil || !valid {
		t.Errorf("the last demo token is not valid (%v)", err)
	}
}

// TestAdminFailureIsOneLine runs the program with a DATABASE_URL that is no
// PostgreSQL URL: standard error is one line that names the variable and
// shows a valid URL, and nothing repeats the value (it may hold a password).
func TestAdminFailureIsOneLine(t *testing.T) {
	bin := builtServer(t)
	for _, tc := range []struct{ url, want string }{
		{"garbage", "crm-server: DATABASE_URL is not a URL: want postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=verify-full\n"},
		{"mysql://x@y/z", `crm-server: DATABASE_URL is a "mysql" URL, not a PostgreSQL one: want postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=verify-full` + "\n"},
		{"host=db dbname=crm", "crm-server: DATABASE_URL is not a URL: want postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=verify-full\n"},
		{"postgres://u:secret@db:notaport/crm", "crm-server: DATABASE_URL is not a URL: want postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=verify-full\n"},
	} {
		for _, args := range [][]string{{"account", "list"}, {"serve", "--addr", "127.0.0.1:0"}, {"migrate"}} {
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "DATABASE_URL="+tc.url, "LOG_LEVEL=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 1 || stdout.Len() > 0 || stderr.String() != tc.want {
				t.Errorf("DATABASE_URL=%s crm-server %s: status %d (%v), stdout %q, stderr\n%q\nwant\n%q",
					tc.url, strings.Join(args, " "), code, err, stdout.String(), stderr.String(), tc.want)
			}
		}
	}
	// A valid URL passes the check (checkDatabaseURL) and reaches the database.
	for _, url := range []string{"postgres://crm@db.internal:5432/crm?sslmode=verify-full", "postgresql:///crm?host=/run/postgresql", "postgres://db/crm"} {
		if err := checkDatabaseURL(url); err != nil {
			t.Errorf("checkDatabaseURL(%q): %v", url, err)
		}
	}
}
