package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
	"github.com/crmservice/crm/impl/mailer"
)

// live is the service over one database with the demo account, served twice:
// with a CRM_SECRET_KEY (keyed) and without one (bare: the webhook operations
// that keep a secret answer 503).
type live struct {
	keyed, bare string
	d           *demo.Demo
	pool        *sqlx.DB
}

func newLive(t *testing.T) *live {
	t.Helper()
	pool := dbtest.New(t)
	d, err := demo.Load(context.Background(), pool, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	l := &live{d: d, pool: pool}
	for _, withKey := range []bool{true, false} {
		cfg := impl.Config{DB: pool}
		if withKey {
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			if cfg.Secrets, err = mailer.NewSecretBox(base64.StdEncoding.EncodeToString(key)); err != nil {
				t.Fatal(err)
			}
		}
		handler, err := impl.NewHandler(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(handler)
		t.Cleanup(srv.Close)
		if withKey {
			l.keyed = srv.URL
		} else {
			l.bare = srv.URL
		}
	}
	return l
}

// TestLive runs the command against the service; the subtests share one
// database (and run in order: the read-only run counts its rows).
func TestLive(t *testing.T) {
	l := newLive(t)
	t.Run("read-only", func(t *testing.T) { testReadOnly(t, l) })
	t.Run("discovery", func(t *testing.T) { testDiscovery(t, l) })
	t.Run("feature off", func(t *testing.T) { testFeatureOff(t, l) })
	t.Run("reports", func(t *testing.T) { testReports(t, l) })
	t.Run("exit status", func(t *testing.T) { testExitStatus(t, l) })
	t.Run("installed binary", func(t *testing.T) { testInstalledBinary(t, l) })
	t.Run("samples created", func(t *testing.T) { testSamplesCreated(t, l) }) // last: it deletes rows
}

// testSamplesCreated: in an account where no document has a deal with a money
// movement, the command makes the samples itself, lists them with its writes,
// keeps them, and the next run finds them.
func testSamplesCreated(t *testing.T, l *live) {
	// It deletes the demo account's money movements, which a demo load of
	// another package (crm-server's TestServeDemo) in a shared database needs.
	dbtest.RequireOwnDatabase(t)
	if _, err := l.pool.Exec(`DELETE FROM money_movements WHERE account_id = $1`, l.d.AccountID); err != nil {
		t.Fatal(err)
	}
	args := []string{"-base-url", l.keyed, "-token", l.d.Token, "-member-token", l.d.MemberToken, "-run", "^(documents|finance)/"}
	code, out := runTool(t, args...)
	if code != exitPass {
		t.Fatalf("exit status %d:\n%s", code, tail(out))
	}
	m := regexp.MustCompile(`(?m)^  sample_document_id=(\d+) \(created by this run\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no sample document created:\n%s", tail(out))
	}
	wantLines(t, out, "  POST /document/insert: 2 (ids ", "; samples made before the cases and kept for later runs: "+m[1]+")")

	code, out = runTool(t, args...)
	if code != exitPass || !strings.Contains(out, "  sample_document_id="+m[1]+" (POST /common/list/paging/5") {
		t.Errorf("the next run did not find the sample document %s: exit status %d\n%s", m[1], code, tail(out))
	}
}

// runTool runs the command with args and returns its exit status and output.
func runTool(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(args, &out, &out)
	return code, out.String()
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l) {
			t.Errorf("output lacks %q:\n%s", l, tail(out))
		}
	}
}

// tail shortens a long output for an error message: its head (up to the
// first case), the failed cases and the end.
func tail(s string) string {
	if len(s) <= 6000 {
		return s
	}
	head, _, _ := strings.Cut(s, "\n\n")
	var failed []string
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "FAIL ") {
			failed = append(failed, lines[i:min(i+6, len(lines))]...)
		}
	}
	return head + "\n…\n" + strings.Join(failed, "\n") + "\n…" + s[len(s)-1500:]
}

var summaryLine = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed, (\d+) skipped, (\d+) cases in`)

// counts reads passed, failed, skipped and total from the last line.
func counts(t *testing.T, out string) [4]int {
	t.Helper()
	m := summaryLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line:\n%s", tail(out))
	}
	var c [4]int
	for i := range c {
		c[i], _ = strconv.Atoi(m[i+1])
	}
	return c
}

// testDiscovery gives the command only a base URL and the tokens: it finds the
// rest through the API, says what it found up front, and every case passes.
// Without the member token, that is said once, up front, with the flag to set,
// and the cases that need it are skipped, each saying why.
func testDiscovery(t *testing.T, l *live) {
	url, d := l.keyed, l.d

	t.Run("everything found", func(t *testing.T) {
		code, out := runTool(t, "-base-url", url, "-token", d.Token, "-member-token", d.MemberToken)
		if code != exitPass {
			t.Fatalf("exit status %d:\n%s", code, tail(out))
		}
		// Again: what the first run wrote (and deleted) must not mislead the discovery.
		code, out = runTool(t, "-base-url", url, "-token", d.Token, "-member-token", d.MemberToken)
		if code != exitPass {
			t.Fatalf("second run: exit status %d:\n%s", code, tail(out))
		}
		found := out[:strings.Index(out, "\n\n")]
		wantLines(t, found, "found through the API:",
			"  user_id="+strconv.FormatInt(d.AdminUserID, 10)+" (GET ",
			"  sample_goods_id=", "  sample_document_id=", "  sample_company_id=", "  sample_deal_id=")
		c := counts(t, out)
		if c[1] != 0 || c[0] < 200 {
			t.Errorf("passed, failed, skipped, total = %v", c)
		}
		if strings.Contains(out, "not found, so") || strings.Contains(out, "FAIL ") || strings.Contains(out, "warning:") {
			t.Errorf("something was not found or failed:\n%s", tail(out))
		}
		wantLines(t, out, "written into the account by this run:", "  POST /company/insert: ", ", all removed again)")
	})

	t.Run("no member token", func(t *testing.T) {
		code, out := runTool(t, "-base-url", url, "-token", d.Token, "-run", "^(dashboards|settings)/")
		if code != exitPass {
			t.Fatalf("exit status %d:\n%s", code, tail(out))
		}
		head := out[:strings.Index(out, "\n\n")]
		wantLines(t, head, "not found, so the cases that need them are skipped:\n  member_token: set -member-token TOKEN: no operation gives a token")
		if n := strings.Count(out, "no operation gives a token"); n != 1 {
			t.Errorf("the explanation is given %d times, want once, up front:\n%s", n, out)
		}
		wantLines(t, out, "skip dashboards/kpi team without rights: variable member_token is not available: set -member-token TOKEN\n")
		if c := counts(t, out); c[1] != 0 || c[2] == 0 {
			t.Errorf("passed, failed, skipped, total = %v", c)
		}
	})

	t.Run("tokens that do not fit the cases", func(t *testing.T) {
		code, out := runTool(t, "-base-url", url, "-token", d.MemberToken, "-member-token", d.Token, "-run", "^system/")
		if code != exitPass {
			t.Fatalf("exit status %d:\n%s", code, out)
		}
		head := out[:strings.Index(out, "\n\n")]
		wantLines(t, head, "warning: the token owner is a member, not an admin: the cases of the operations for admins",
			"warning: the token owner lacks a KPI report right",
			"warning: the -member-token user should be another user who is not an admin")
		code, out = runTool(t, "-base-url", url, "-token", d.Token, "-member-token", "crm_nobody", "-run", "^system/")
		if code != exitSetup || !strings.Contains(out, "crm-conformance: cannot start: -member-token: GET /user/me: HTTP 401") {
			t.Errorf("a refused member token: exit status %d:\n%s", code, out)
		}
	})

	t.Run("given variables are not looked for", func(t *testing.T) {
		code, out := runTool(t, "-base-url", url, "-token", d.Token, "-run", "^dashboards/day today$", "-var", "user_id="+strconv.FormatInt(d.AdminUserID, 10))
		if code != exitPass || strings.Contains(out, "found through the API") {
			t.Errorf("exit status %d:\n%s", code, out)
		}
	})
}

// testFeatureOff runs the cases against a server without CRM_SECRET_KEY: the
// webhook cases that need the key are skipped with the reason, not failed.
func testFeatureOff(t *testing.T, l *live) {
	url, d := l.bare, l.d
	code, out := runTool(t, "-base-url", url, "-token", d.Token, "-member-token", d.MemberToken, "-run", "^webhooks/")
	if code != exitPass {
		t.Fatalf("exit status %d:\n%s", code, out)
	}
	wantLines(t, out, "switched off on this server, so their cases are skipped:\n  webhooks: POST /webhook/test answers HTTP 503",
		"skip webhooks/insert: feature webhooks is switched off on this server: POST /webhook/test answers HTTP 503 \"webhooks are not available: the server has no CRM_SECRET_KEY",
		"skip webhooks/list: variable webhook_id is not set: case webhooks/insert, which saves it, was skipped",
		"ok   webhooks/list of another role (",
		"ok   webhooks/update of a missing subscription (")
	if c := counts(t, out); c[1] != 0 || c[2] < 5 {
		t.Errorf("passed, failed, skipped, total = %v", c)
	}
	if head := out[:strings.Index(out, "\n\n")]; strings.Contains(head, "POST /webhook/insert") {
		t.Errorf("the run announces webhooks it will not create:\n%s", head)
	}

	code, out = runTool(t, "-base-url", url, "-token", d.Token, "-member-token", d.MemberToken, "-run", "^webhooks/", "-strict")
	if code != exitFail {
		t.Errorf("-strict with skipped cases: exit status %d, want %d:\n%s", code, exitFail, out)
	}
}

// testReports checks the JUnit XML and the JSON summary against the run.
func testReports(t *testing.T, l *live) {
	url, d := l.bare, l.d
	dir := t.TempDir()
	junitPath, jsonPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.json")
	code, out := runTool(t, "-base-url", url, "-token", d.Token, "-run", "^(webhooks|system)/", "-junit", junitPath, "-json", jsonPath)
	if code != exitPass {
		t.Fatalf("exit status %d:\n%s", code, out)
	}
	c := counts(t, out)

	data, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Skipped  int    `xml:"skipped,attr"`
			Cases    []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Time      string `xml:"time,attr"`
				Skipped   *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JUnit XML: %v\n%s", err, data)
	}
	if doc.Tests != c[3] || doc.Failures != 0 || doc.Skipped != c[2] || len(doc.Suites) != 2 {
		t.Errorf("JUnit totals %d tests, %d failures, %d skipped in %d suites; the run said %v", doc.Tests, doc.Failures, doc.Skipped, len(doc.Suites), c)
	}
	cases, skips := 0, 0
	for _, s := range doc.Suites {
		cases += len(s.Cases)
		for _, tc := range s.Cases {
			if _, err := strconv.ParseFloat(tc.Time, 64); err != nil || tc.Classname != "conformance."+s.Name {
				t.Errorf("testcase %s: time %q, classname %q", tc.Name, tc.Time, tc.Classname)
			}
			if tc.Skipped != nil {
				skips++
				if tc.Skipped.Message == "" {
					t.Errorf("testcase %s skipped without a message", tc.Name)
				}
			}
		}
	}
	if cases != c[3] || skips != c[2] {
		t.Errorf("JUnit holds %d testcases, %d skipped; the run said %v", cases, skips, c)
	}

	data, err = os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var sum summary
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sum); err != nil {
		t.Fatalf("JSON summary: %v\n%s", err, data)
	}
	if sum.ExitCode != 0 || sum.Passed != c[0] || sum.Failed != 0 || sum.Skipped != c[2] || sum.Total != c[3] ||
		len(sum.Cases) != c[3] || sum.FeaturesOff["webhooks"] == "" || sum.RunID == "" || len(sum.BaseURLs) != 1 {
		t.Errorf("summary %+v; the run said %v", sum, c)
	}
	for _, cs := range sum.Cases {
		if cs.Status == "skipped" && cs.Reason == "" || cs.Status != "skipped" && cs.Status != "passed" {
			t.Errorf("case %+v", cs)
		}
	}
}

// tableRows counts the rows of every table of the database, in the tables
// of accounts only those of the account (make test-citus runs every package's
// tests in one shared database at once).
func tableRows(t *testing.T, pool *sqlx.DB, account int64) map[string]int {
	t.Helper()
	var tables []struct {
		Name    string `db:"name"`
		Account bool   `db:"account"`
	}
	if err := pool.Select(&tables, `SELECT quote_ident(t.schemaname) || '.' || quote_ident(t.tablename) AS name,
		       EXISTS (SELECT FROM information_schema.columns c
		                WHERE c.table_schema = t.schemaname AND c.table_name = t.tablename AND c.column_name = 'account_id') AS account
		  FROM pg_tables t
		 WHERE t.schemaname NOT IN ('pg_catalog', 'information_schema')`); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, tb := range tables {
		query, args := `SELECT count(*) FROM `+tb.Name, []any{}
		switch {
		case tb.Account:
			query, args = query+` WHERE account_id = $1`, []any{account}
		case tb.Name == "public.accounts":
			query, args = query+` WHERE id = $1`, []any{account}
		}
		var n int
		if err := pool.Get(&n, query, args...); err != nil {
			t.Fatal(err)
		}
		rows[tb.Name] = n
	}
	if len(rows) < 10 {
		t.Fatalf("only %d tables", len(rows))
	}
	return rows
}

// testReadOnly runs every case with -read-only: the writing cases are skipped,
// saying so, the others pass, and no table of the database gains or loses a row.
func testReadOnly(t *testing.T, l *live) {
	url, d, pool := l.keyed, l.d, l.pool
	before := tableRows(t, pool, l.d.AccountID)
	code, out := runTool(t, "-base-url", url, "-token", d.Token, "-member-token", d.MemberToken, "-read-only")
	if code != exitPass {
		t.Fatalf("exit status %d:\n%s", code, tail(out))
	}
	wantLines(t, out, "read-only: the cases whose operation writes are skipped; nothing is written",
		"skip companies/insert: read-only run: POST /company/insert writes",
		"ok   list/counterparties first page (")
	if strings.Contains(out, "written into the account") {
		t.Errorf("a read-only run reports writes:\n%s", tail(out))
	}
	if c := counts(t, out); c[1] != 0 || c[0] < 30 || c[2] < 100 {
		t.Errorf("passed, failed, skipped, total = %v", c)
	}
	after := tableRows(t, pool, l.d.AccountID)
	for tb, n := range before {
		if after[tb] != n {
			t.Errorf("table %s: %d rows before, %d after", tb, n, after[tb])
		}
	}
}

// TestExitStatus: 0 when every case sent passed, 1 when one failed, 2 for a
// usage or setup error.
func testExitStatus(t *testing.T, l *live) {
	url, d := l.bare, l.d
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"pass", []string{"-base-url", url, "-token", d.Token, "-run", "^system/"}, exitPass, " 0 failed, 0 skipped"},
		{"failure", []string{"-base-url", url, "-token", d.Token, "-run", "^dashboards/day today$", "-var", "user_id=999999999"}, exitFail, "FAIL dashboards/day today ("},
		{"token refused", []string{"-base-url", url, "-token", "crm_nobody", "-run", "^system/"}, exitSetup, "crm-conformance: cannot start: GET /"},
		{"no server", []string{"-base-url", "http://127.0.0.1:1", "-token", d.Token}, exitSetup, "http://127.0.0.1:1 does not answer as the service"},
		{"no token", []string{"-base-url", url}, exitSetup, "-base-url and -token (or $CRM_TOKEN) are required"},
		{"bad flag", []string{"-base-url", url, "-token", d.Token, "-nonsense"}, exitSetup, "flag provided but not defined"},
		{"unwritable report", []string{"-base-url", url, "-token", d.Token, "-junit", filepath.Join(t.TempDir(), "no", "such", "dir")}, exitSetup, "crm-conformance: open "},
		{"nothing sent", []string{"-base-url", url, "-token", d.Token, "-run", "^webhooks/delete$", "-read-only"}, exitFail, "no case was sent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runTool(t, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Errorf("exit status %d (want %d), output lacks %q:\n%s", code, tt.code, tt.want, tail(out))
			}
		})
	}
}

// testInstalledBinary builds the command as `go install` would and runs it from
// an empty directory: the cases and the contract are built in.
func testInstalledBinary(t *testing.T, l *live) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	url, d := l.bare, l.d
	gobin := t.TempDir()
	install := exec.Command("go", "install", ".")
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	bin := filepath.Join(gobin, "crm-conformance")
	cmd := exec.Command(bin, "-base-url", url, "-token", d.Token, "-run", "^(system|directories)/")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantLines(t, string(out), "ok   system/", "ok   directories/", " 0 failed, 0 skipped")
}
