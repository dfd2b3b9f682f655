package impl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// Sizes of the benchmark account: the scale at which every dashboard must answer
// in under 50 ms median (issue 7).
const (
	benchUsers     = 24
	benchCompanies = 20_000
	benchTasks     = 100_000
	benchDeals     = 50_000
	benchDocuments = 50_000
	benchMovements = 100_000
	benchDays      = 730 // records spread over the last two years (tasks also 30 days ahead)
)

// BenchmarkDashboards measures each dashboard through impl.NewHandler on an
// account of the size above, built once with generate_series. Each sub-benchmark
// reports ns/op and the median in ms (ms/median). go test -bench 'Dashboards/kpi'
// runs the KPI dashboards alone.
func BenchmarkDashboards(b *testing.B) {
	pool := dbtest.New(b)
	start := time.Now()
	tokens := buildBenchAccount(b, pool)
	b.Logf("built the benchmark account in %s", time.Since(start).Round(time.Millisecond))
	// CRM_FAST_PATH=on (or off) measures the dashboards through the functions
	// of db/functions (or their single statements) whatever the database is,
	// as the tests' newEnv does. CRM_BENCH_BOTH_PATHS=1 measures each dashboard
	// both ways in turn (sub-benchmarks .../statements and .../functions), so
	// that the two see the same load of a busy machine. (CRM_FAST_PATH=both is
	// TestMain's: two passes over the tests.)
	handler := func(fast *bool) http.Handler {
		h, err := impl.NewHandler(impl.Config{DB: pool, FastPath: fast})
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	on, off := true, false
	type way struct {
		name    string // the sub-benchmark's last element
		handler http.Handler
	}
	ways := []way{{"", handler(nil)}}
	switch {
	case os.Getenv("CRM_BENCH_BOTH_PATHS") == "1":
		ways = []way{{"/statements", handler(&off)}, {"/functions", handler(&on)}}
	case os.Getenv("CRM_FAST_PATH") == "on":
		ways = []way{{"", handler(&on)}}
	case os.Getenv("CRM_FAST_PATH") == "off":
		ways = []way{{"", handler(&off)}}
	}
	for _, bc := range []struct{ name, token, target string }{
		{"day/admin", tokens["admin"], "/dashboard/my/day"},
		{"day/head", tokens["head"], "/dashboard/my/day"},
		{"day/member", tokens["member"], "/dashboard/my/day"},
		{"day/admin/month", tokens["admin"], "/dashboard/my/day?date=" + monthStart(0) + "&date_to=" + monthEnd(0)},
		{"tasks/admin", tokens["admin"], "/dashboard/my/tasks?overdue_limit=100"},
		{"tasks/member", tokens["member"], "/dashboard/my/tasks"},
		{"kpi_my/member", tokens["member"], "/dashboard/kpi/my"},
		{"kpi_my/member/two_months", tokens["member"], "/dashboard/kpi/my?date_from=" + monthStart(-1)},
		{"kpi_team/admin", tokens["admin"], "/dashboard/kpi/team"},
		{"kpi_team/admin/quarter", tokens["admin"], "/dashboard/kpi/team?date_from=" + monthStart(-2) + "&date_to=" + monthEnd(0)},
		{"kpi_team/head", tokens["head"], "/dashboard/kpi/team"},
	} {
		for _, w := range ways {
			b.Run(bc.name+w.name, func(b *testing.B) {
				call := func() {
					r := httptest.NewRequest(http.MethodGet, bc.target, nil)
					r.Header.Set("Authorization", "Bearer "+bc.token)
					rec := httptest.NewRecorder()
					w.handler.ServeHTTP(rec, r)
					var env struct{ Status string }
					if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != http.StatusOK || env.Status != "success" {
						b.Fatalf("%s: %d %s", bc.target, rec.Code, rec.Body.String())
					}
				}
				call() // warm the connection and the plan cache
				times := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					call()
					times = append(times, time.Since(t0))
				}
				b.StopTimer()
				slices.Sort(times)
				b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms/median")
			})
		}
	}
}

func monthStart(offset int) string {
	now := time.Now().UTC()
	return time.Date(now.Year(), now.Month()+time.Month(offset), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}

func monthEnd(offset int) string {
	now := time.Now().UTC()
	return time.Date(now.Year(), now.Month()+time.Month(offset)+1, 0, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}

// buildBenchAccount creates the benchmark account and returns tokens of its
// admin, of a head and of a member (who has a KPI plan).
func buildBenchAccount(b testing.TB, pool *sqlx.DB) map[string]string {
	b.Helper()
	ctx := context.Background()
	must := func(id int64, err error) int64 {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		return id
	}
	acc := must(impl.CreateAccount(ctx, pool, impl.AccountInput{Name: "Bench", BaseCurrency: "EUR", TimeZone: "Europe/Riga"}))
	var depts []int64
	for i := range 4 {
		depts = append(depts, must(impl.CreateDepartment(ctx, pool, acc, fmt.Sprintf("Department %d", i+1))))
	}
	tokens := map[string]string{}
	var users []int64
	for i := range benchUsers {
		in := impl.UserInput{AccountID: acc, Name: fmt.Sprintf("User %02d", i), Login: fmt.Sprintf("u%d@bench.example", i),
			Role: impl.RoleMember, KPIUsersReport: true, KPIDepartmentsReport: true}
		dept := depts[i%len(depts)]
		in.DepartmentID = &dept
		switch {
		case i == 0:
			in.Role, in.DepartmentID = impl.RoleAdmin, nil
		case i <= len(depts):
			in.Role = impl.RoleHead
		}
		id := must(impl.CreateUser(ctx, pool, in))
		users = append(users, id)
		var role string
		switch i {
		case 0:
			role = "admin"
		case 1:
			role = "head"
		case 5:
			role = "member"
		default:
			continue
		}
		_, token, err := impl.CreateToken(ctx, pool, id, "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		tokens[role] = token
	}
	dir := func(code int, names ...string) []int64 {
		var ids []int64
		for i, n := range names {
			ids = append(ids, must(impl.AddDirectoryValue(ctx, pool, impl.DirectoryValueInput{AccountID: acc, Code: code, Name: n, Sort: i,
				Controlled: code == impl.DirCompanyTypes && n == "Client", Invoice: code == impl.DirDocumentTypes && n == "Invoice"})))
		}
		return ids
	}
	companyTypes := dir(impl.DirCompanyTypes, "Client", "Supplier", "Partner")
	taskKinds := dir(impl.DirTaskKinds, "Call", "Meeting", "E-mail", "Follow-up")
	dealTypes := dir(impl.DirDealTypes, "New business", "Upsell")
	dealStages := dir(impl.DirDealStages, "Lead", "Offer", "Won", "Lost")
	docTypes := dir(impl.DirDocumentTypes, "Invoice", "Contract", "Act")

	exec := func(what, query string, args ...any) {
		b.Helper()
		t0 := time.Now()
		if _, err := pool.ExecContext(ctx, query, args...); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		b.Logf("%s: %s", what, time.Since(t0).Round(time.Millisecond))
	}
	// Arrays are indexed with g % length, so every row draws a user, a type, ...
	// deterministically from its number.
	exec("companies", `
		INSERT INTO companies (account_id, name, type_id, user_id, created_via, created_at)
		SELECT $1, 'Company ' || g, ($2::bigint[])[1 + g % 3], ($3::bigint[])[1 + (g * 7) % $4],  'demo',
		       now() - make_interval(secs => (g::float8 / $5) * $6 * 86400)
		  FROM generate_series(1, $5) AS g`,
		acc, pq.Array(companyTypes), pq.Array(users), len(users), benchCompanies, benchDays)
	companyIDs := `(SELECT array_agg(id ORDER BY id) FROM companies WHERE account_id = $1)`
	exec("deals", `
		WITH c AS (SELECT `+companyIDs+` AS ids)
		INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish, sum, created_at)
		SELECT $1, 'Deal ' || g, c.ids[1 + g % $2], ($3::bigint[])[1 + g % 2], ($4::bigint[])[1 + g % 4],
		       ($5::bigint[])[1 + (g * 11) % $6], s::date, s::date + 30, (g % 997) * 10.25, s
		  FROM c, generate_series(1, $7) AS g,
		       LATERAL (SELECT now() - make_interval(secs => (g::float8 / $7) * $8 * 86400) AS s) AS d`,
		acc, benchCompanies, pq.Array(dealTypes), pq.Array(dealStages), pq.Array(users), len(users), benchDeals, benchDays)
	// Tasks run from benchDays ago to 30 days ahead; nine in ten past ones are done.
	exec("tasks", `
		WITH c AS (SELECT `+companyIDs+` AS ids)
		INSERT INTO tasks (account_id, company_id, note, type_id, status_id, user_id, assigner_id, date_start, date_finish, done_at, created_at)
		SELECT $1, c.ids[1 + g % $2], 'Task ' || g, ($3::bigint[])[1 + (g / 5) % 4], CASE WHEN done THEN 2 ELSE 1 END,
		       ($4::bigint[])[1 + (g * 13) % $5], ($4::bigint[])[1 + (g * 13 + g % 3) % $5],
		       s, CASE WHEN g % 7 = 0 THEN NULL ELSE s + interval '1 hour' END,
		       CASE WHEN done THEN s + interval '2 hours' END, s - interval '2 days'
		  FROM c, generate_series(1, $6) AS g,
		       LATERAL (SELECT now() + interval '30 days' - make_interval(secs => (g::float8 / $6) * ($7 + 30) * 86400) AS s) AS d,
		       LATERAL (SELECT s + interval '2 hours' < now() AND g % 10 <> 0 AS done) AS x`,
		acc, benchCompanies, pq.Array(taskKinds), pq.Array(users), len(users), benchTasks, benchDays)
	exec("documents", `
		WITH c AS (SELECT `+companyIDs+` AS ids)
		INSERT INTO documents (account_id, number, date, sum, type_id, user_id, company_id, created_at)
		SELECT $1, 'D-' || g, s::date, (g % 991) * 12.5, ($3::bigint[])[1 + (g / 7) % 3], ($4::bigint[])[1 + (g * 17) % $5],
		       c.ids[1 + g % $2], s
		  FROM c, generate_series(1, $6) AS g,
		       LATERAL (SELECT now() - make_interval(secs => (g::float8 / $6) * $7 * 86400) AS s) AS d`,
		acc, benchCompanies, pq.Array(docTypes), pq.Array(users), len(users), benchDocuments, benchDays)
	exec("money accounts", `INSERT INTO money_accounts (account_id, name, currency) VALUES ($1, 'Main', 'EUR'), ($1, 'Cash', 'EUR')`, acc)
	// One movement in twenty is half of a transfer; two in five are expenses.
	exec("money movements", `
		WITH ma AS (SELECT array_agg(id ORDER BY id) AS ids FROM money_accounts WHERE account_id = $1)
		INSERT INTO money_movements (account_id, date, sum, sum_currency, direction, money_account_id, is_transfer, user_id)
		SELECT $1, (now() - make_interval(secs => (g::float8 / $2) * $3 * 86400))::date, (g % 983) * 7.75, (g % 983) * 7.75,
		       CASE WHEN g % 5 < 2 THEN 2 ELSE 1 END, ma.ids[1 + g % 2], g % 20 = 0, ($4::bigint[])[1 + (g * 19) % $5]
		  FROM ma, generate_series(1, $2) AS g`,
		acc, benchMovements, benchDays, pq.Array(users), len(users))
	// Every user but one has a plan with five items for each month of the last year and the next.
	exec("kpi plans", `
		INSERT INTO kpi_plans (account_id, user_id, month)
		SELECT $1, u, (date_trunc('month', now() AT TIME ZONE 'Europe/Riga') + make_interval(months => k))::date
		  FROM unnest($2::bigint[]) AS u, generate_series(-12, 1) AS k`,
		acc, pq.Array(users[:len(users)-1]))
	exec("kpi plan items", `
		INSERT INTO kpi_plan_items (account_id, plan_id, name, metric, plan_value)
		SELECT $1, p.id, m.name, m.metric, m.plan
		  FROM kpi_plans p,
		       (VALUES ('New counterparties', 'companies_added', 40), ('Tasks done', 'tasks_done', 150),
		               ('Deal volume', 'deal_sum', 200000), ('Invoices issued', 'invoices_issued', 25),
		               ('Income', 'income', 150000)) AS m (name, metric, plan)
		 WHERE p.account_id = $1`, acc)
	exec("vacuum analyze", `VACUUM ANALYZE`)
	return tokens
}
