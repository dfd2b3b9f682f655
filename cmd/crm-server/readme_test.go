package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
)

// readmeExamples returns the shell blocks of the README's section "Using the
// API", in order, as one script.
func readmeExamples(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(readme), "\n## Using the API\n")
	if !found {
		t.Fatal("README.md has no section \"Using the API\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var script strings.Builder
	for _, m := range regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n").FindAllStringSubmatch(section, -1) {
		script.WriteString(m[1] + "\n")
	}
	if script.Len() == 0 {
		t.Fatal("the section \"Using the API\" of README.md has no sh block")
	}
	return script.String()
}

// demoState is what the README's examples must leave as it is in the demo account.
type demoState struct {
	Revoked, Inactive, Values, Items, MailAccounts, Users int
}

func readDemoState(t *testing.T, pool *sqlx.DB, account string) demoState {
	t.Helper()
	var s demoState
	for _, q := range []struct {
		n   *int
		sql string
	}{
		{&s.Revoked, `SELECT count(*) FROM tokens WHERE account_id = $1 AND revoked_at IS NOT NULL`},
		{&s.Inactive, `SELECT count(*) FROM users WHERE account_id = $1 AND NOT active`},
		{&s.Users, `SELECT count(*) FROM users WHERE account_id = $1`},
		{&s.Values, `SELECT count(*) FROM directory_values WHERE account_id = $1`},
		{&s.Items, `SELECT count(*) FROM kpi_plan_items WHERE account_id = $1`},
		{&s.MailAccounts, `SELECT count(*) FROM mail_accounts WHERE account_id = $1 AND active`},
	} {
		if err := pool.Get(q.n, q.sql, account); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestReadmeExamples runs the admin examples of README.md as written, in
// order, with the built binary as bin/crm-server, on a database where the
// demo is loaded, twice; the demo and its token must come out as they were.
func TestReadmeExamples(t *testing.T) {
	// Needs a database of its own: the examples run beside the one demo account and check it unchanged.
	dbtest.RequireOwnDatabase(t)
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed; the README's examples use it (apt-get install jq)")
	}
	script := readmeExamples(t)
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	demo := map[string]string{}
	for _, line := range strings.Split(mustCommand(t, "demo"), "\n") {
		k, v, _ := strings.Cut(line, "=")
		demo[k] = v
	}
	before := readDemoState(t, pool, demo["account_id"])

	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(builtServer(t), filepath.Join(dir, "bin", "crm-server")); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != mailer.SecretKeyEnv && !strings.HasPrefix(name, "LOG_") && name != "CI_TOKEN" {
			env = append(env, kv)
		}
	}

	for run := 1; run <= 2; run++ {
		sh := exec.Command("bash", "-e", "-u", "-o", "pipefail", "-c", script)
		sh.Dir = dir
		sh.Env = env
		sh.Stdin = strings.NewReader("smtp-secret\nimap-secret\n")
		var stdout, stderr bytes.Buffer
		sh.Stdout, sh.Stderr = &stdout, &stderr
		if err := sh.Run(); err != nil {
			t.Fatalf("run %d of the README's examples: %v\nstdout:\n%s\nstderr:\n%s", run, err, stdout.String(), stderr.String())
		}
		if stderr.Len() > 0 {
			t.Errorf("run %d printed on standard error:\n%s", run, stderr.String())
		}

		// The rows the examples made, in the newest account called Acme.
		var got struct {
			Account   string `db:"account"`
			Currency  string `db:"currency"`
			TZ        string `db:"tz"`
			Sales     string `db:"sales"`
			Anna      string `db:"anna"`
			AnnaRole  string `db:"anna_role"`
			Hugo      string `db:"hugo"`
			HugoHead  bool   `db:"hugo_head"`
			HugoOff   bool   `db:"hugo_off"`
			Client    string `db:"client"`
			Item      string `db:"item"`
			Laptop    string `db:"laptop"`
			CIRevoked bool   `db:"ci_revoked"`
			Mailbox   string `db:"mailbox"`
		}
		err := pool.Get(&got, `
			WITH a AS (SELECT id, base_currency, time_zone FROM accounts WHERE name = 'Acme' ORDER BY id DESC LIMIT 1)
			SELECT a.id AS account, a.base_currency AS currency, a.time_zone AS tz,
			       (SELECT d.id FROM departments d WHERE d.account_id = a.id AND d.name = 'Sales') AS sales,
			       (SELECT u.id FROM users u WHERE u.account_id = a.id AND u.login = 'anna@acme.example' AND u.name = 'Anna Berg') AS anna,
			       (SELECT u.role FROM users u WHERE u.account_id = a.id AND u.login = 'anna@acme.example') AS anna_role,
			       (SELECT u.id FROM users u WHERE u.account_id = a.id AND u.login = 'hugo@acme.example') AS hugo,
			       (SELECT u.role = 'head' AND u.kpi_users_report AND u.department_id IS NOT NULL FROM users u
			         WHERE u.account_id = a.id AND u.login = 'hugo@acme.example') AS hugo_head,
			       (SELECT NOT u.active FROM users u WHERE u.account_id = a.id AND u.login = 'hugo@acme.example') AS hugo_off,
			       (SELECT v.id FROM directory_values v WHERE v.account_id = a.id AND v.directory_code = 9 AND v.name = 'Client' AND v.is_controlled) AS client,
			       (SELECT i.id FROM kpi_plan_items i JOIN kpi_plans p ON p.account_id = i.account_id AND p.id = i.plan_id
			         WHERE i.account_id = a.id AND p.month = '2026-11-01' AND i.metric = 'income' AND i.plan_value = 15000) AS item,
			       (SELECT t.id FROM tokens t WHERE t.account_id = a.id AND t.label = 'laptop' AND t.revoked_at IS NULL
			           AND t.expires_at > now() + interval '719 hours') AS laptop,
			       (SELECT t.revoked_at IS NOT NULL FROM tokens t WHERE t.account_id = a.id AND t.label = 'ci') AS ci_revoked,
			       (SELECT m.id FROM mail_accounts m WHERE m.account_id = a.id AND m.address = 'anna@acme.example' AND NOT m.active
			           AND m.smtp_secret IS NOT NULL AND m.imap_secret IS NOT NULL) AS mailbox
			  FROM a`)
		if err != nil {
			t.Fatalf("run %d: the rows of the examples are not all there: %v\nstdout:\n%s", run, err, stdout.String())
		}
		if got.Account == demo["account_id"] || got.Currency != "EUR" || got.TZ != "Europe/Riga" || got.AnnaRole != "admin" || !got.HugoHead ||
			!got.HugoOff || !got.CIRevoked {
			t.Errorf("run %d stored %+v", run, got)
		}

		want := regexp.QuoteMeta("token "+got.Laptop+" (shown only now): ") + `crm_` + got.Account + `_\w+\n` +
			regexp.QuoteMeta(got.Client+"\n"+
				got.Item+"\n"+
				`[{"id":`+got.Item+`,"month":"2026-11","metric":"income","measure":"amount","plan":15000.00,"name":"Income"}]`+"\n") +
			`ID +USER +ADDRESS +SMTP +IMAP +ACTIVE +QUEUED +FAILED +LAST POLL ERROR *\n` +
			regexp.QuoteMeta(got.Mailbox) + ` +` + regexp.QuoteMeta(got.Anna+" Anna Berg") + ` +anna@acme\.example +` +
			regexp.QuoteMeta("starttls://anna@acme.example@smtp.acme.example:587 (password set)") + ` +` +
			regexp.QuoteMeta("tls://anna@acme.example@imap.acme.example:993 (password set)") + ` +true +0 +0 *\n`
		if !regexp.MustCompile(`\A` + want + `\z`).MatchString(stdout.String()) {
			t.Errorf("run %d printed\n%s\nwant (as a pattern)\n%s", run, stdout.String(), want)
		}
	}

	if after := readDemoState(t, pool, demo["account_id"]); after != before {
		t.Errorf("the examples changed the demo account: %+v, was %+v", after, before)
	}
	// The token make run printed still works.
	handler, err := impl.NewHandler(impl.Config{DB: pool, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/directory/9", nil)
	req.Header.Set("Authorization", "Bearer "+demo["token"])
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"status":"success"`) {
		t.Errorf("the demo token after the examples: %d %s", rec.Code, rec.Body.String())
	}
}
