package demo

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// demoCountQueries count the demo account's rows; $1 is the account id.
func demoCountQueries() map[string]string {
	return map[string]string{
		"departments":       `SELECT count(*) FROM departments WHERE account_id = $1`,
		"users":             `SELECT count(*) FROM users WHERE account_id = $1`,
		"admins":            `SELECT count(*) FROM users WHERE account_id = $1 AND role = 'admin'`,
		"heads":             `SELECT count(*) FROM users WHERE account_id = $1 AND role = 'head'`,
		"members":           `SELECT count(*) FROM users WHERE account_id = $1 AND role = 'member'`,
		"directory codes":   `SELECT count(DISTINCT directory_code) FROM directory_values WHERE account_id = $1`,
		"field_definitions": `SELECT count(*) FROM field_definitions WHERE account_id = $1`,
		"companies":         `SELECT count(*) FROM companies WHERE account_id = $1`,
		"goods":             `SELECT count(*) FROM goods WHERE account_id = $1`,
		"deals":             `SELECT count(*) FROM deals WHERE account_id = $1`,
		"tasks":             `SELECT count(*) FROM tasks WHERE account_id = $1`,
		"documents":         `SELECT count(*) FROM documents WHERE account_id = $1`,
		"money_accounts":    `SELECT count(*) FROM money_accounts WHERE account_id = $1`,
		"money_movements":   `SELECT count(*) FROM money_movements WHERE account_id = $1`,
		"transfers":         `SELECT count(*) FROM money_movements WHERE account_id = $1 AND is_transfer`,
		"mail_accounts":     `SELECT count(*) FROM mail_accounts WHERE account_id = $1`,
		"mail_messages":     `SELECT count(*) FROM mail_messages WHERE account_id = $1`,
		"kpi_plans":         `SELECT count(*) FROM kpi_plans WHERE account_id = $1`,
		"user_filters":      `SELECT count(*) FROM user_filters WHERE account_id = $1`,
		"journal":           `SELECT count(*) FROM journal WHERE account_id = $1`,
		// Counts that depend on the random draws: only their stability is checked.
		"contacts":       `SELECT count(*) FROM contacts WHERE account_id = $1`,
		"emails":         `SELECT count(*) FROM emails WHERE account_id = $1`,
		"phones":         `SELECT count(*) FROM phones WHERE account_id = $1`,
		"requisites":     `SELECT count(*) FROM requisites WHERE account_id = $1`,
		"deal_goods":     `SELECT count(*) FROM deal_goods WHERE account_id = $1`,
		"document_goods": `SELECT count(*) FROM document_goods WHERE account_id = $1`,
		"kpi_plan_items": `SELECT count(*) FROM kpi_plan_items WHERE account_id = $1`,
	}
}

func TestLoad(t *testing.T) {
	// Needs a database of its own: the first load must create the demo account.
	dbtest.RequireOwnDatabase(t)
	db := dbtest.New(t)
	ctx := context.Background()
	now := time.Now()

	start := time.Now()
	demo, err := Load(ctx, db, now)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Logf("Load took %v", time.Since(start))
	if !demo.Created || demo.AccountID == 0 || demo.AdminUserID == 0 || demo.Token == "" {
		t.Fatalf("first Load = %+v, want a created account with an admin and a token", demo)
	}

	counts := demoCounts(t, db, demo.AccountID)
	t.Logf("counts: %v", counts)
	want := map[string]int{
		"departments": 2, "users": 7, "admins": 1, "heads": 2, "members": 4,
		"directory codes": 14, "field_definitions": 3, "companies": 300, "goods": 25,
		"deals": 120, "tasks": 600, "documents": 200, "money_accounts": 2,
		"money_movements": 410, "transfers": 10, "mail_accounts": 7, "mail_messages": 150,
		"kpi_plans": 18, "user_filters": 3, "journal": 0,
	}
	for name, n := range want {
		if counts[name] != n {
			t.Errorf("%s: %d rows, want %d", name, counts[name], n)
		}
	}

	// Each check's query answers true when the data are as they should be.
	checks := []struct{ name, query string }{
		{"every directory has 3 to 8 values", `
			SELECT count(*) = 14 AND bool_and(n BETWEEN 3 AND 8)
			  FROM (SELECT count(*) AS n FROM directory_values WHERE account_id = $1 GROUP BY directory_code) d`},
		{"Client and Key client are controlled, nothing else", `
			SELECT array_agg(name ORDER BY name) = '{Client,"Key client"}'
			  FROM directory_values WHERE account_id = $1 AND is_controlled`},
		{"Invoice is the only invoice type", `
			SELECT array_agg(name) = '{Invoice}' FROM directory_values WHERE account_id = $1 AND is_invoice`},
		{"the admin is Anna Berg with both KPI report rights", `
			SELECT bool_and(name = 'Anna Berg' AND login = 'anna@demo.example' AND kpi_users_report AND kpi_departments_report)
			  FROM users WHERE account_id = $1 AND role = 'admin'`},
		{"one user has the Helsinki time zone, the others none", `
			SELECT count(*) FILTER (WHERE time_zone = 'Europe/Helsinki') = 1 AND count(time_zone) = 1
			  FROM users WHERE account_id = $1`},
		{"about a fifth of the counterparties are private persons with names", `
			SELECT count(*) = 60 AND bool_and(name = last_name || ' ' || first_name)
			  FROM companies WHERE account_id = $1 AND person = 2`},
		{"every counterparty has an own e-mail and phone and was created by the demo", `
			SELECT bool_and(EXISTS (SELECT 1 FROM emails e WHERE e.account_id = $1 AND e.company_id = c.id AND e.contact_id IS NULL)
			            AND EXISTS (SELECT 1 FROM phones p WHERE p.account_id = $1 AND p.company_id = c.id AND p.contact_id IS NULL)
			            AND c.created_via = 'demo' AND c.created_by = c.user_id AND c.created_at <= now())
			  FROM companies c WHERE c.account_id = $1`},
		{"the counterparties are spread over all users", `
			SELECT count(DISTINCT user_id) = 7 FROM companies WHERE account_id = $1`},
		{"every contact person has an e-mail and a phone", `
			SELECT bool_and(EXISTS (SELECT 1 FROM emails e WHERE e.account_id = $1 AND e.contact_id = k.id)
			            AND EXISTS (SELECT 1 FROM phones p WHERE p.account_id = $1 AND p.contact_id = k.id))
			  FROM contacts k WHERE k.account_id = $1`},
		{"e-mails are unique case-insensitively and on .example domains", `
			SELECT count(*) = count(DISTINCT lower(email)) AND bool_and(email LIKE '%_@%.example')
			  FROM emails WHERE account_id = $1`},
		{"tax_id follows the default requisites", `
			SELECT count(*) > 100 AND bool_and(c.tax_id = r.inn AND c.tax_id <> '')
			  FROM companies c JOIN requisites r ON r.account_id = $1 AND r.company_id = c.id AND r.is_default
			 WHERE c.account_id = $1`},
		{"no tax_id without default requisites", `
			SELECT count(*) = 0 FROM companies c
			 WHERE c.account_id = $1 AND c.tax_id <> ''
			   AND NOT EXISTS (SELECT 1 FROM requisites r WHERE r.account_id = $1 AND r.company_id = c.id AND r.is_default)`},
		{"some counterparties have second requisites", `
			SELECT count(*) > 0 FROM requisites WHERE account_id = $1 AND NOT is_default`},
		{"additional fields have values", `
			SELECT (SELECT count(*) FROM companies WHERE account_id = $1 AND extra ? 'industry') > 100
			   AND (SELECT count(*) FROM companies WHERE account_id = $1 AND extra ? 'employees') > 100
			   AND (SELECT count(*) FROM deals WHERE account_id = $1 AND extra ? 'source_campaign') > 20`},
		{"deal sums are the sums of their positions", `
			SELECT bool_and(d.sum = (SELECT sum(g.sum) FROM deal_goods g WHERE g.account_id = $1 AND g.deal_id = d.id))
			  FROM deals d WHERE d.account_id = $1`},
		{"document sums are the sums of their positions", `
			SELECT bool_and(d.sum = (SELECT sum(g.sum) FROM document_goods g WHERE g.account_id = $1 AND g.document_id = d.id))
			  FROM documents d WHERE d.account_id = $1`},
		{"about half of the documents are invoices, numbered INV- and due in 14 days", `
			SELECT count(*) = 100 AND bool_and(d.number ~ '^INV-[0-9]{4}-[0-9]{4}$' AND d.date_expire = d.date + 14)
			  FROM documents d JOIN directory_values v ON v.account_id = $1 AND v.id = d.type_id
			 WHERE d.account_id = $1 AND v.is_invoice`},
		{"document numbers are unique", `
			SELECT count(*) = count(DISTINCT number) FROM documents WHERE account_id = $1`},
		{"about half of the tasks are done, each with a result", `
			SELECT count(*) FILTER (WHERE status_id = 2) BETWEEN 250 AND 350
			   AND bool_and(status_id = 1 OR (result <> '' AND done_at <= now()))
			  FROM tasks WHERE account_id = $1`},
		{"several users have overdue tasks", `
			SELECT count(DISTINCT user_id) >= 3 FROM tasks
			 WHERE account_id = $1 AND status_id = 1 AND coalesce(date_finish, date_start) < now()`},
		{"every user has a task today", `
			SELECT count(DISTINCT user_id) = 7 FROM tasks
			 WHERE account_id = $1 AND (date_start AT TIME ZONE 'Europe/Riga')::date = (now() AT TIME ZONE 'Europe/Riga')::date`},
		{"transfers are pairs of an expense and an income", `
			SELECT count(*) FILTER (WHERE direction = 1) = 5 AND count(*) FILTER (WHERE direction = 2) = 5
			  FROM money_movements WHERE account_id = $1 AND is_transfer`},
		{"USD movements are converted at 1.08", `
			SELECT count(*) > 0 AND bool_and(m.sum_currency = round(m.sum * 1.08, 2))
			  FROM money_movements m JOIN money_accounts a ON a.account_id = $1 AND a.id = m.money_account_id
			 WHERE m.account_id = $1 AND a.currency = 'USD'`},
		{"mail addresses are counterparties' e-mails and users' logins", `
			SELECT bool_and(EXISTS (SELECT 1 FROM emails e WHERE e.account_id = $1 AND e.email = CASE m.folder WHEN 1 THEN m.from_address ELSE m.to_address END)
			            AND EXISTS (SELECT 1 FROM users u WHERE u.account_id = $1 AND u.login = CASE m.folder WHEN 1 THEN m.to_address ELSE m.from_address END)
			            AND (m.folder = 2) = (m.delivery_state IS NOT NULL)
			            AND m.small_part_of_body <> '' AND m.body LIKE '<p>%')
			  FROM mail_messages m WHERE m.account_id = $1`},
		{"one member has no KPI plan, the other users plans for 3 months", `
			SELECT count(*) FILTER (WHERE n = 0) = 1 AND count(*) FILTER (WHERE n = 3) = 6
			  FROM (SELECT (SELECT count(*) FROM kpi_plans p WHERE p.account_id = $1 AND p.user_id = u.id) AS n
			          FROM users u WHERE u.account_id = $1) x`},
		{"every KPI plan has 3 to 5 items", `
			SELECT bool_and(n BETWEEN 3 AND 5)
			  FROM (SELECT count(*) AS n FROM kpi_plan_items WHERE account_id = $1 GROUP BY plan_id) x`},
	}
	for _, c := range checks {
		var ok *bool
		if err := db.GetContext(ctx, &ok, c.query, demo.AccountID); err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if ok == nil || !*ok {
			t.Errorf("%s: not so", c.name)
		}
	}
	checkDemoToken(t, db, demo, now)

	again, err := Load(ctx, db, now.Add(time.Hour))
	if err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if again.Created || again.AccountID != demo.AccountID || again.AdminUserID != demo.AdminUserID || again.Token == demo.Token {
		t.Errorf("second Load = %+v, want the account %d not created again and a new token", again, demo.AccountID)
	}
	checkDemoToken(t, db, again, now.Add(time.Hour))
	if again.Samples != demo.Samples {
		t.Errorf("second Load samples %+v, want the same as the first %+v", again.Samples, demo.Samples)
	}
	checkDemoSamples(t, db, demo)
	if after := demoCounts(t, db, demo.AccountID); !maps.Equal(after, counts) {
		t.Errorf("the second Load changed the counts:\n%v\nto\n%v", counts, after)
	}

	// Another hour of the same day gives the same data in a fresh database: only
	// the times clamped to now may differ.
	riga, err := time.LoadLocation("Europe/Riga")
	if err != nil {
		t.Fatal(err)
	}
	local := now.In(riga)
	otherNow := time.Date(local.Year(), local.Month(), local.Day(), 6, 30, 0, 0, riga)
	if local.Hour() < 12 {
		otherNow = otherNow.Add(15 * time.Hour)
	}
	// Two concurrent loads there: the lock lets exactly one create the account.
	other := dbtest.New(t)
	var results [2]*Demo
	var errs [2]error
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i], errs[i] = Load(ctx, other, otherNow) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Load %d: %v", i, err)
		}
	}
	if results[0].Created == results[1].Created || results[0].AccountID != results[1].AccountID {
		t.Errorf("concurrent loads = %+v and %+v, want one created account", results[0], results[1])
	}
	if a, b := demoFingerprint(t, db), demoFingerprint(t, other); a != b {
		t.Errorf("loads at %v and %v differ: %s and %s", now, otherNow, a, b)
	}
}

func demoCounts(t *testing.T, db *sqlx.DB, accountID int64) map[string]int {
	t.Helper()
	out := map[string]int{}
	for name, q := range demoCountQueries() {
		var n int
		if err := db.Get(&n, q, accountID); err != nil {
			t.Fatalf("count %s: %v", name, err)
		}
		out[name] = n
	}
	return out
}

// checkDemoToken checks that the token is stored as a demo token of the admin.
func checkDemoToken(t *testing.T, db *sqlx.DB, demo *Demo, now time.Time) {
	t.Helper()
	var tok struct {
		AccountID int64     `db:"account_id"`
		UserID    int64     `db:"user_id"`
		Label     string    `db:"label"`
		ExpiresAt time.Time `db:"expires_at"`
	}
	err := db.Get(&tok, `SELECT account_id, user_id, label, expires_at FROM tokens WHERE hash = $1`, impl.HashToken(demo.Token))
	if err != nil {
		t.Fatalf("token of the demo: %v", err)
	}
	if tok.AccountID != demo.AccountID || tok.UserID != demo.AdminUserID || tok.Label != "demo" ||
		tok.ExpiresAt.Sub(now.Add(30*24*time.Hour)).Abs() > time.Millisecond {
		t.Errorf("token row = %+v, want account %d, user %d, label demo, expiry 30 days after %v",
			tok, demo.AccountID, demo.AdminUserID, now)
	}
	var member struct {
		Login  string `db:"login"`
		Role   string `db:"role"`
		Rights bool   `db:"rights"`
		Plans  int    `db:"plans"`
	}
	err = db.Get(&member, `SELECT u.login, u.role, u.kpi_users_report OR u.kpi_departments_report AS rights,
		(SELECT count(*) FROM kpi_plans p WHERE p.account_id = $2 AND p.user_id = u.id) AS plans
		FROM tokens t JOIN users u ON u.account_id = $2 AND u.id = t.user_id
		WHERE t.hash = $1 AND t.account_id = $2 AND t.label = 'demo'`, impl.HashToken(demo.MemberToken), demo.AccountID)
	if err != nil || member.Role != impl.RoleMember || member.Rights || member.Plans != 0 {
		t.Errorf("member token of %+v (%v), want a member without KPI rights and plans", member, err)
	}
}

// demoFingerprint hashes the demo data that the random draws decide, leaving
// out the times that are clamped to now and the state of today's tasks.
func demoFingerprint(t *testing.T, db *sqlx.DB) string {
	t.Helper()
	var fp string
	err := db.Get(&fp, `
		SELECT md5(concat_ws('|',
			(SELECT string_agg(concat_ws(',', name, city, address, type_id, user_id, tags, extra), ';' ORDER BY id) FROM companies),
			(SELECT string_agg(concat_ws(',', email, company_id, contact_id), ';' ORDER BY id) FROM emails),
			(SELECT string_agg(concat_ws(',', inn, rs), ';' ORDER BY id) FROM requisites),
			(SELECT string_agg(concat_ws(',', name, company_id, contact_id, sum, date_start, date_finish), ';' ORDER BY id) FROM deals),
			(SELECT string_agg(concat_ws(',', note, company_id, deal_id, user_id, date_start), ';' ORDER BY id) FROM tasks),
			(SELECT string_agg(concat_ws(',', number, date, sum, company_id, deal_id), ';' ORDER BY id) FROM documents),
			(SELECT string_agg(concat_ws(',', date, sum, sum_currency, direction, company_id, deal_id), ';' ORDER BY id) FROM money_movements),
			(SELECT string_agg(concat_ws(',', subject, from_address, to_address, company_id), ';' ORDER BY id) FROM mail_messages),
			(SELECT string_agg(concat_ws(',', plan_id, metric, plan_value), ';' ORDER BY id) FROM kpi_plan_items)))`)
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return fp
}

// checkDemoSamples checks that the sample records are what the conformance
// cases take them for.
func checkDemoSamples(t *testing.T, db *sqlx.DB, demo *Demo) {
	t.Helper()
	s := demo.Samples
	var ok bool
	err := db.Get(&ok, `
		SELECT EXISTS (SELECT 1 FROM goods WHERE account_id = $1 AND id = $2 AND active)
		   AND EXISTS (SELECT 1 FROM documents WHERE account_id = $1 AND id = $5 AND company_id = $3 AND deal_id = $4)
		   AND EXISTS (SELECT 1 FROM document_goods WHERE account_id = $1 AND document_id = $5)
		   AND EXISTS (SELECT 1 FROM money_movements WHERE account_id = $1 AND company_id = $3 AND deal_id = $4)`,
		demo.AccountID, s.GoodsID, s.CompanyID, s.DealID, s.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("samples %+v are not an active catalogue item and a document with positions whose deal has money movements", s)
	}
}

// TestLoadTwice loads into a fresh database, where the demo account must then
// be the only account of every table, and loads again, which must find that
// account and write nothing but its two new tokens.
func TestLoadTwice(t *testing.T) {
	// Needs a database of its own: the first load must create the demo account.
	dbtest.RequireOwnDatabase(t)
	db := dbtest.New(t)
	ctx := context.Background()
	now := time.Now()

	first, err := Load(ctx, db, now)
	if err != nil {
		t.Fatalf("first Load: %v", err)
	}
	if !first.Created {
		t.Fatalf("first Load = %+v, want Created", first)
	}
	var accounts []int64
	if err := db.Select(&accounts, `SELECT id FROM accounts ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if len(accounts) != 1 || accounts[0] != first.AccountID {
		t.Errorf("accounts %v, want only the demo account %d", accounts, first.AccountID)
	}
	before := rowsByAccount(t, db)
	var filled []string
	for table, byAccount := range before {
		for acc, n := range byAccount {
			if acc != first.AccountID {
				t.Errorf("%s has %d rows of account %d, not the demo's %d", table, n, acc, first.AccountID)
			}
		}
		if byAccount[first.AccountID] > 0 {
			filled = append(filled, table)
		}
	}
	// Every table the demo fills, so that the check above is not vacuous;
	// the journal stays empty (nothing was done through the API).
	slices.Sort(filled)
	wantFilled := []string{"companies", "company_names", "contact_socials", "contacts", "deal_goods", "deals", "departments",
		"directory_values", "document_goods", "documents", "emails", "field_definitions", "goods", "kpi_daily", "kpi_plan_items",
		"kpi_plans", "list_counts", "mail_accounts", "mail_messages", "money_accounts", "money_movements", "phones",
		"requisites", "tasks", "tokens", "user_filters", "users"}
	if !slices.Equal(filled, wantFilled) {
		t.Errorf("tables with rows %v, want %v", filled, wantFilled)
	}

	second, err := Load(ctx, db, now.Add(time.Minute))
	if err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if second.Created || second.AccountID != first.AccountID || second.AdminUserID != first.AdminUserID ||
		second.MailAccountID != first.MailAccountID || second.Samples != first.Samples ||
		second.Token == first.Token || second.MemberToken == first.MemberToken {
		t.Errorf("second Load = %+v, want the first %+v found, with new tokens", second, first)
	}
	if err := db.Select(&accounts, `SELECT id FROM accounts ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if len(accounts) != 1 {
		t.Errorf("accounts after the second load %v, want one", accounts)
	}
	after := rowsByAccount(t, db)
	before["tokens"][first.AccountID] += 2
	if !maps.EqualFunc(before, after, maps.Equal) {
		t.Errorf("rows by table and account after the second load:\n%v\nwant\n%v", after, before)
	}
	var labels []string
	if err := db.Select(&labels, `SELECT label FROM tokens WHERE account_id = $1 ORDER BY id`, first.AccountID); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(labels, []string{"demo", "demo", "demo", "demo"}) {
		t.Errorf("token labels %v, want four demo tokens", labels)
	}
}

// accountTables lists the tables of the schema that have an account_id column.
func accountTables(t *testing.T, db *sqlx.DB) []string {
	t.Helper()
	var tables []string
	err := db.Select(&tables, `
		SELECT c.relname::text FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
		 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		   AND a.attname = 'account_id' AND NOT a.attisdropped
		 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 20 {
		t.Fatalf("only %d tables with account_id: %v", len(tables), tables)
	}
	return tables
}

// rowsByAccount counts the rows of every table with account_id by account.
func rowsByAccount(t *testing.T, db *sqlx.DB) map[string]map[int64]int {
	t.Helper()
	out := map[string]map[int64]int{}
	for _, table := range accountTables(t, db) {
		var rows []struct {
			AccountID int64 `db:"account_id"`
			N         int   `db:"n"`
		}
		// Every account on purpose: the test looks for rows of others.
		if err := db.Select(&rows, `SELECT account_id, count(*) AS n FROM `+pq.QuoteIdentifier(table)+` GROUP BY account_id`); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = map[int64]int{}
		for _, r := range rows {
			out[table][r.AccountID] = r.N
		}
	}
	return out
}
