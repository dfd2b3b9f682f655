package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	crmdb "github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/gen"
)

// nestedPlan is the plan of one statement that a function of db/functions ran,
// as auto_explain reports it (EXPLAIN ANALYZE, FORMAT JSON).
type nestedPlan struct {
	Query string         `json:"Query Text"`
	Plan  map[string]any `json:"Plan"`
}

// explainNested calls a function of db/functions (query, a SELECT of one
// call) on the database at url and returns the plans of the statements it
// ran, caught with auto_explain as notices of the session.
func explainNested(t *testing.T, url, query string, args ...any) []nestedPlan {
	t.Helper()
	plans := explainSession(t, url, func(ctx context.Context, conn *sqlx.Conn) error {
		rows, err := conn.QueryxContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := rows.MapScan(map[string]any{}); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	// The call's own plan is not one of its statements.
	var nested []nestedPlan
	for _, p := range plans {
		if strings.TrimSpace(p.Query) != strings.TrimSpace(query) {
			nested = append(nested, p)
		}
	}
	return nested
}

// explainRun runs the statements of run on the database at url and returns
// their plans.
func explainRun(t *testing.T, url string, run func(context.Context, fastRunner) error) []nestedPlan {
	t.Helper()
	return explainSession(t, url, func(ctx context.Context, conn *sqlx.Conn) error {
		return run(ctx, connRunner{conn})
	})
}

// connRunner runs a fast list's statements on one session.
type connRunner struct{ conn *sqlx.Conn }

func (r connRunner) get(ctx context.Context, dest any, query string, args ...any) error {
	return r.conn.GetContext(ctx, dest, query, args...)
}

func (r connRunner) sel(ctx context.Context, dest any, query string, args ...any) error {
	return r.conn.SelectContext(ctx, dest, query, args...)
}

// explainSession runs do on a session of the database at url and returns the
// plans of every statement it ran, nested ones included, caught with
// auto_explain as notices of the session. Scans of whole tables are switched
// off, as in explainCost: the test's tables are small.
func explainSession(t *testing.T, url string, do func(context.Context, *sqlx.Conn) error) []nestedPlan {
	t.Helper()
	connector, err := pq.NewConnector(url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var plans []nestedPlan
	db := sqlx.NewDb(sql.OpenDB(pq.ConnectorWithNoticeHandler(connector, func(n *pq.Error) {
		_, text, ok := strings.Cut(n.Message, "plan:\n")
		if !ok {
			return
		}
		var p nestedPlan
		if err := json.Unmarshal([]byte(text), &p); err != nil {
			t.Errorf("auto_explain notice: %v\n%s", err, n.Message)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, p)
	})), "postgres")
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range []string{
		`LOAD 'auto_explain'`,
		`SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_analyze = on`,
		`SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_format = json`,
		`SET auto_explain.log_level = notice`,
		`SET enable_seqscan = off`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := do(ctx, conn); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(plans)
}

// planTables returns the tables a plan reads.
func planTables(n map[string]any) []string {
	var tables []string
	if rel, ok := n["Relation Name"].(string); ok {
		tables = append(tables, rel)
	}
	if kids, ok := n["Plans"].([]any); ok {
		for _, k := range kids {
			tables = append(tables, planTables(k.(map[string]any))...)
		}
	}
	return tables
}

// functionCall is one call of a function of db/functions for
// TestFunctionStatementsReadOneTable.
type functionCall struct {
	name  string
	query string
	args  []any
}

// requestRun is a request whose statements the server sends one by one
// (the fast list), for TestFunctionStatementsReadOneTable.
type requestRun struct {
	name string
	run  func(context.Context, fastRunner) error
}

// TestFunctionStatementsReadOneTable holds every statement that the functions
// of db/functions run to the shape Citus plans once and runs on the
// account's node alone (docs/scale-out.md): it reads one table, and names the
// account in an index condition or filter of that table. Each function is
// called for an admin, a head and a member, over a small account with a
// counterparty that has contact persons, e-mails, phones, requisites and an
// additional field. The plans come from auto_explain on plain PostgreSQL;
// make test-citus proves the rest (no statement of a request leaves its node).
func TestFunctionStatementsReadOneTable(t *testing.T) {
	ctx := context.Background()
	url := dbtest.NewURL(t)
	pool, err := crmdb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if citus, err := crmdb.IsCitus(ctx, pool); err != nil {
		t.Fatal(err)
	} else if citus {
		// The coordinator's auto_explain sees only the call it delegates to
		// the account's worker. The statements are the same text on both
		// engines; where they run on Citus is what every other test checks.
		t.Skip("on Citus auto_explain sees only the delegated call: the statements' shape is checked on plain PostgreSQL")
	}
	acc, err := CreateAccount(ctx, pool, AccountInput{Name: "functions", BaseCurrency: "EUR", TimeZone: "Europe/Riga"})
	if err != nil {
		t.Fatal(err)
	}
	dept, err := CreateDepartment(ctx, pool, acc, "Sales")
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]*Principal{}
	for _, role := range []string{RoleAdmin, RoleHead, RoleMember} {
		in := UserInput{AccountID: acc, Name: role, Login: role + "@functions.example", Role: role}
		if role != RoleAdmin {
			in.DepartmentID = &dept
		}
		id, err := CreateUser(ctx, pool, in)
		if err != nil {
			t.Fatal(err)
		}
		users[role] = &Principal{AccountID: acc, UserID: id, Role: role, TimeZone: "Europe/Riga",
			DepartmentID: sql.NullInt64{Int64: dept, Valid: role != RoleAdmin}}
	}
	// The tables whose id is an identity column: an INSERT that leaves the id
	// to it draws it inside the statement, a volatile function for which
	// Citus plans the statement afresh at every execution.
	var identity []string
	// cross-account: the catalogue's identity columns.
	if err := pool.SelectContext(ctx, &identity, `SELECT attrelid::regclass::text FROM pg_attribute
		WHERE attname = 'id' AND attidentity <> '' AND attrelid::regclass::text !~ '_[0-9]+$'`); err != nil {
		t.Fatal(err)
	}
	typeID := addType(t, pool, acc)
	taskType, err := AddDirectoryValue(ctx, pool, DirectoryValueInput{AccountID: acc, Code: DirTaskKinds, Name: "Call"})
	if err != nil {
		t.Fatal(err)
	}
	dealType, err := AddDirectoryValue(ctx, pool, DirectoryValueInput{AccountID: acc, Code: DirDealTypes, Name: "Sale"})
	if err != nil {
		t.Fatal(err)
	}
	dealStage, err := AddDirectoryValue(ctx, pool, DirectoryValueInput{AccountID: acc, Code: DirDealStages, Name: "New"})
	if err != nil {
		t.Fatal(err)
	}
	var goodsID int64
	if err := pool.GetContext(ctx, &goodsID, `INSERT INTO goods (account_id, name, code, price) VALUES ($1, 'Chair', 'CH', 12.5) RETURNING id`, acc); err != nil {
		t.Fatal(err)
	}
	var company int64
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO field_definitions (account_id, module, name) VALUES ($1, 1, 'colour')`, []any{acc}},
		{`INSERT INTO companies (account_id, name, user_id, type_id, extra) VALUES ($1, 'Co', $2, $3, '{"colour": "red"}') RETURNING id`,
			[]any{acc, users[RoleMember].UserID, typeID}},
	} {
		if strings.Contains(stmt.sql, "RETURNING") {
			err = pool.GetContext(ctx, &company, stmt.sql, stmt.args...)
		} else {
			_, err = pool.ExecContext(ctx, stmt.sql, stmt.args...)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		`INSERT INTO contacts (account_id, company_id, last_name) SELECT $1, $2, 'Person ' || i FROM generate_series(1, 3) i`,
		`INSERT INTO emails (account_id, company_id, email) VALUES ($1, $2, 'co@x.example')`,
		`INSERT INTO phones (account_id, company_id, phone) VALUES ($1, $2, '+371 20000000')`,
		`INSERT INTO emails (account_id, company_id, contact_id, email) SELECT $1, $2, id, 'p' || id || '@x.example' FROM contacts WHERE account_id = $1`,
		`INSERT INTO phones (account_id, company_id, contact_id, phone) SELECT $1, $2, id, '+371 2' || id FROM contacts WHERE account_id = $1`,
		`INSERT INTO contact_socials (account_id, contact_id, network, address) SELECT $1, id, 'x', 'p' || id FROM contacts WHERE account_id = $1 AND $2 > 0`,
		`INSERT INTO requisites (account_id, company_id, is_default, inn) VALUES ($1, $2, true, '123')`,
	} {
		if _, err := pool.ExecContext(ctx, stmt, acc, company); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	var deal int64
	if err := pool.GetContext(ctx, &deal, `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish)
		VALUES ($1, 'Deal', $2, $3, $4, $5, '2026-12-01', '2026-12-31') RETURNING id`, acc, company, dealType, dealStage, users[RoleMember].UserID); err != nil {
		t.Fatal(err)
	}
	// A KPI plan of every metric for each user, so that the KPI functions read
	// every source of the actual.
	for _, p := range users {
		for _, metric := range kpiMetrics {
			if _, err := SetKPIItem(ctx, pool, KPIItemInput{UserID: p.UserID, Month: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
				Metric: metric, Plan: "10"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	server := &Server{nodes: nodes{home: newDBNode(pool, nil)}, fastPath: true}
	str := func(s string) *string { return &s }
	lists := []struct {
		name   string
		module int
		params gen.CommonListPagingParams
	}{
		{"companies", ModuleCompanies, gen.CommonListPagingParams{Columns: str("id,name,city,user_name,created,type,status,ADD_colour")}},
		{"companies by e-mail", ModuleCompanies, gen.CommonListPagingParams{Columns: str("id,name"), Email: str("co@x.example")}},
		{"companies by phone", ModuleCompanies, gen.CommonListPagingParams{Columns: str("id,name"), Phone: str("20000000")}},
		{"companies by name", ModuleCompanies, gen.CommonListPagingParams{Columns: str("id,name"), Name: str("co")}},
		{"companies by name, sorted by owner", ModuleCompanies, gen.CommonListPagingParams{Columns: str("id,name"), Name: str("co"), SortingColumn: str("user_name")}},
		{"companies by tax id", ModuleCompanies, gen.CommonListPagingParams{Columns: str("id,name"), TaxId: str("123")}},
		{"tasks", ModuleTasks, gen.CommonListPagingParams{Columns: str("id,note,status,user_name,company_name,type")}},
		{"deals", ModuleDeals, gen.CommonListPagingParams{Columns: str("id,name,sum,company_name,company_type,user_name")}},
		{"documents", ModuleDocuments, gen.CommonListPagingParams{Columns: str("id,number,company_name,deal,type")}},
		{"money", ModuleFinance, gen.CommonListPagingParams{Columns: str("id,sum,account,currency,category,company_name")}},
		{"goods", ModuleGoods, gen.CommonListPagingParams{Columns: str("id,name,price")}},
	}
	for role, p := range users {
		var runs []requestRun
		calls := []functionCall{
			{"crm_company_get", `SELECT crm_company_get($1, $2, $3, $4, $5, $6)`, p.callerArgs(company)},
		}
		calls = append(calls, functionCall{"crm_contact_insert",
			`SELECT * FROM crm_contact_insert($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
			budgetless(p.callerArgs(nil, company, "Ann", "", "Person", "Buyer", nil, "", emailLockSpace,
				pq.Array(emailLockKeys(acc, []string{"ann@x.example"})), pq.Array([]string{"ann@x.example"}),
				pq.Array([]string{"+371 28888888"}), pq.Array([]string{"work"})))})
		calls = append(calls, functionCall{"crm_task_insert",
			`SELECT * FROM crm_task_insert($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
			budgetless(p.callerArgs(nil, true, users[RoleMember].UserID, company, nil, nil, "call", taskType, 1, "2026-12-01 10:00", nil,
				false, nil, pq.Array([]string{"a"}), `{}`))})
		null := sql.NullString{}
		calls = append(calls, functionCall{"crm_deal_insert",
			`SELECT * FROM crm_deal_insert($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)`,
			budgetless(p.callerArgs(nil, "Deal", company, nil, dealType, dealStage, users[RoleMember].UserID, "2026-12-01", "2026-12-31", "100",
				"", pq.StringArray{}, pq.Array([]sql.NullInt64{{Int64: goodsID, Valid: true}, {}}),
				pq.Array([]sql.NullString{null, {String: "Service", Valid: true}}), pq.Array([]sql.NullString{null, null}),
				pq.Array([]sql.NullString{null, {String: "2", Valid: true}}), pq.Array([]sql.NullString{null, {String: "10.5", Valid: true}}),
				pq.Array([]sql.NullString{null, null}), pq.Array([]sql.NullString{null, null}), pq.Array([]sql.NullString{null, null})))})
		calls = append(calls,
			functionCall{"crm_company_update", `SELECT * FROM crm_company_update($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				budgetless(p.callerArgs(nil, true, company, `{"name": "Co `+role+`", "city": "Riga", "tags": ["a"], "status_id": null, "user_id": `+
					strconv.FormatInt(users[RoleMember].UserID, 10)+`}`))},
			functionCall{"crm_deal_update", `SELECT * FROM crm_deal_update($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				budgetless(p.callerArgs(nil, false, deal, `{"name": "Deal `+role+`", "company_id": `+strconv.FormatInt(company, 10)+`, "sum": "12.50", "tags": ["x"]}`))})
		calls = append(calls,
			functionCall{"crm_event_list", `SELECT * FROM crm_event_list($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				p.callerArgs(0, 5000, 100, nil, nil)},
			functionCall{"crm_event_list, filtered", `SELECT * FROM crm_event_list($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				p.callerArgs(0, 5000, 100, pq.Array([]int64{1, 20}), pq.Array([]string{"insert"}))})
		// The KPI dashboards over two months, counted from the records and read
		// from kpi_daily, and with today's month by default; the team's with
		// the caller's department named.
		for _, rollup := range []bool{false, true} {
			calls = append(calls,
				functionCall{fmt.Sprintf("crm_kpi_my, rollup %t", rollup), `SELECT * FROM crm_kpi_my($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
					p.callerArgs("2026-11-20", "2026-12-10", maxPeriodDays, rollup, pq.Array(kpiMetrics))},
				functionCall{fmt.Sprintf("crm_kpi_team, rollup %t", rollup), `SELECT * FROM crm_kpi_team($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
					p.callerArgs("2026-11-20", "2026-12-10", maxPeriodDays, rollup, nil, accessOK, accessOK)},
				functionCall{fmt.Sprintf("crm_kpi_team of a department, rollup %t", rollup), `SELECT * FROM crm_kpi_team($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
					p.callerArgs("2026-11-20", "2026-12-10", maxPeriodDays, rollup, dept, accessOK, accessDepartmentGiven)})
		}
		// The day dashboards: the day of the task inserted above, the day
		// after (the task overdue), a period over both months and today.
		for _, rollup := range []bool{false, true} {
			calls = append(calls, functionCall{fmt.Sprintf("crm_dash_day, rollup %t", rollup),
				`SELECT * FROM crm_dash_day($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				p.callerArgs(role, "2026-11-20", "2026-12-10", maxPeriodDays, rollup, pq.Array(kpiMetrics))})
		}
		calls = append(calls,
			functionCall{"crm_dash_day, today", `SELECT * FROM crm_dash_day($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				p.callerArgs(role, nil, nil, maxPeriodDays, false, pq.Array(kpiMetrics))},
			functionCall{"crm_dash_tasks", `SELECT * FROM crm_dash_tasks($1, $2, $3, $4, $5, $6, $7)`, p.callerArgs("2026-12-01", 30)},
			functionCall{"crm_dash_tasks, overdue", `SELECT * FROM crm_dash_tasks($1, $2, $3, $4, $5, $6, $7)`, p.callerArgs("2026-12-02", 30)},
			functionCall{"crm_dash_tasks, today", `SELECT * FROM crm_dash_tasks($1, $2, $3, $4, $5, $6, $7)`, p.callerArgs(nil, 30)})
		calls = append(calls,
			functionCall{"crm_kpi_my, today", `SELECT * FROM crm_kpi_my($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				p.callerArgs(nil, nil, maxPeriodDays, false, pq.Array(kpiMetrics))},
			functionCall{"crm_kpi_team, today", `SELECT * FROM crm_kpi_team($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
				p.callerArgs(nil, nil, maxPeriodDays, false, nil, accessOK, accessOK)})
		// The insert twice: the second call finds the first's e-mail.
		for _, name := range []string{"crm_company_insert", "crm_company_insert, a duplicate"} {
			row := companyRow{AccountID: acc, Name: "New " + role, Person: 1, TypeID: typeID, UserID: p.UserID, CreatedVia: "api"}
			emails := []string{role + "@new.example"}
			columns, _ := json.Marshal(dbColumns(row))
			calls = append(calls, functionCall{name,
				`SELECT * FROM crm_company_insert($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
				budgetless(p.callerArgs(nil, emailLockSpace, pq.Array(emailLockKeys(acc, emails)), string(columns), pq.Array(emails),
					pq.Array(emails), pq.Array([]string{"+371 29999999"}), pq.Array([]string{""}), true, `{}`))})
		}
		for _, l := range lists {
			r, err := server.newListQuery(ctx, p, listModules[l.module], l.params)
			if err != nil {
				t.Fatalf("%s: %v", l.name, err)
			}
			if r.q.fast == nil {
				t.Fatalf("%s: not served by the fast list", l.name)
			}
			plan, err := r.fastCall()
			if err != nil {
				t.Fatalf("%s: %v", l.name, err)
			}
			runs = append(runs, requestRun{"fast list " + l.name, func(ctx context.Context, run fastRunner) error {
				_, err := runFastList(ctx, run, p, plan, listMapsCall.kept)
				return err
			}})
		}
		for _, c := range calls {
			t.Run(c.name+"/"+role, func(t *testing.T) {
				checkFastPathPlans(t, explainNested(t, url, c.query, c.args...), identity)
			})
		}
		for _, r := range runs {
			t.Run(r.name+"/"+role, func(t *testing.T) {
				checkFastPathPlans(t, explainRun(t, url, r.run), identity)
			})
		}
	}
}

// checkFastPathPlans fails on a statement that Citus would not keep the plan
// of or run on the account's node alone; identity are the tables whose id is
// an identity column.
func checkFastPathPlans(t *testing.T, plans []nestedPlan, identity []string) {
	t.Helper()
	if len(plans) == 0 {
		t.Fatal("no statement ran")
	}
	for _, pl := range plans {
		// PostgreSQL's own foreign-key checks: on Citus they run
		// inside the shard, beside the row they check.
		if strings.HasPrefix(strings.TrimSpace(pl.Query), "SELECT 1 FROM ONLY ") {
			continue
		}
		// INSERT ... VALUES that names the account first: Citus
		// routes it by that value and keeps its plan.
		if m := insertValues.FindStringSubmatch(pl.Query); m != nil && !notFastPath.MatchString(pl.Query) {
			if slices.Contains(identity, m[1]) && !strings.Contains(m[3], ", id,") {
				t.Errorf("leaves the id of %s to its identity default (Citus plans it at every execution); draw it first with nextval:\n%s", m[1], pl.Query)
			}
			continue
		}
		if strings.Contains(pl.Query, "nextval(") {
			t.Errorf("draws an id inside the statement (Citus plans it at every execution); draw it first:\n%s", pl.Query)
		}
		tables := planTables(pl.Plan)
		if len(slices.Compact(slices.Sorted(slices.Values(tables)))) > 1 {
			t.Errorf("reads %v, more than one table:\n%s", tables, pl.Query)
		}
		// accounts is distributed by its id, every other table by account_id.
		if len(tables) > 0 && !strings.Contains(planConditions(pl.Plan), "account_id") &&
			!(tables[0] == "accounts" && strings.Contains(planConditions(pl.Plan), "id = ")) {
			t.Errorf("reads %v without a condition on account_id:\n%s", tables, pl.Query)
		}
		// Citus looks at the statement before PostgreSQL flattens it:
		// a subquery, a CTE or a set operation is never fast-path.
		if len(tables) > 0 && notFastPath.MatchString(pl.Query) {
			t.Errorf("a subquery, CTE or set operation:\n%s", pl.Query)
		}
	}
}

// insertValues finds an INSERT by VALUES whose first column is the account:
// the table, its alias and the column list; with notFastPath it takes no
// SELECT anywhere (ON CONFLICT ... DO UPDATE and RETURNING allowed).
var insertValues = regexp.MustCompile(`(?is)^\s*INSERT INTO (\w+)( AS \w+)? (\(account_id,[^)]*\))\s*(?:OVERRIDING SYSTEM VALUE\s*)?VALUES\s*\(`)

// notFastPath finds what keeps a statement from Citus's fast path in its text.
var notFastPath = regexp.MustCompile(`(?is)\(\s*SELECT\b|^\s*WITH\b|\bUNION\b|\bINTERSECT\b|\bEXCEPT\b`)

// planConditions joins the conditions of a plan's scans.
func planConditions(n map[string]any) string {
	var b strings.Builder
	for _, k := range []string{"Index Cond", "Recheck Cond", "Filter"} {
		if s, ok := n[k].(string); ok {
			b.WriteString(s)
			b.WriteString("\n")
		}
	}
	if kids, ok := n["Plans"].([]any); ok {
		for _, k := range kids {
			b.WriteString(planConditions(k.(map[string]any)))
		}
	}
	return b.String()
}

// TestCompanyInsertFunctionColumns holds crm_company_insert's column list to
// companyRow's: a column added to one and not the other would be dropped from
// every counterparty inserted by the function.
func TestCompanyInsertFunctionColumns(t *testing.T) {
	files, err := crmdb.FunctionFiles()
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, f := range files {
		if f.Name == "company_insert.sql" {
			text = f.SQL
		}
	}
	m := regexp.MustCompile(`(?s)INSERT INTO companies \(([^)]*)\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no INSERT INTO companies in company_insert.sql")
	}
	var got []string
	for _, c := range strings.Split(m[1], ",") {
		// The id is drawn before the row (nextval), not a field of companyRow.
		if c = strings.TrimSpace(c); c != "id" {
			got = append(got, c)
		}
	}
	var want []string
	for name := range dbColumns(companyRow{}) {
		want = append(want, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("crm_company_insert writes %v,\ncompanyRow has %v", got, want)
	}
}

// budgetless appends a NULL budget (p_budget_ms) to the arguments of a call of
// a writing function: the test sets no deadline.
func budgetless(args []any) []any { return append(args, nil) }
