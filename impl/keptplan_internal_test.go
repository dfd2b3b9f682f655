package impl

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/lib/pq"

	crmdb "github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// TestKeptPlanIsGeneric holds keptPlan to its purpose: a call of a function
// of db/functions in that form, prepared in a session that plans for values
// (as stmtCache's), is given a generic plan once PostgreSQL has made its five
// custom ones, on plain PostgreSQL and on Citus alike. On Citus the bare call
// is planned again at every execution (Citus prices the generic plan of a
// call of a distributed function with parameters too high to choose); the
// test logs what the bare call got, so that a Citus that stops doing so shows
// here.
func TestKeptPlanIsGeneric(t *testing.T) {
	ctx := context.Background()
	url := dbtest.NewURL(t)
	pool, err := crmdb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	citus, err := crmdb.IsCitus(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = auto`); err != nil {
		t.Fatal(err)
	}

	bare := `SELECT * FROM crm_list_maps($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
	generic := func(query string) int64 {
		t.Helper()
		stmt, err := conn.PreparexContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		for i := range 8 {
			var out listMaps
			err := stmt.GetContext(ctx, &out, int64(1_000_000+i), nil, pq.Array([]string{"users"}), nil,
				nil, nil, nil, nil, nil, nil, nil, "someone@example.com", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.Users.Valid || out.IDs != nil || out.Total.Valid {
				t.Fatalf("call for an account without rows: %+v", out)
			}
		}
		var n int64
		// cross-account: the session's own prepared statements.
		if err := conn.GetContext(ctx, &n, `SELECT generic_plans FROM pg_prepared_statements WHERE statement = $1`, query); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if listMapsCall.kept != keptPlan(bare) || listMapsCall.bare != bare {
		t.Fatalf("listMapsCall = %q, want %q and its kept-plan form", listMapsCall, bare)
	}
	if n := generic(listMapsCall.kept); n < 3 {
		t.Errorf("the kept-plan call got %d generic plans in 8 executions, want 3 (after 5 custom ones)", n)
	}
	t.Logf("citus=%v: the bare call got %d generic plans in 8 executions", citus, generic(bare))
}

// TestCallsKeepTheirPlans checks that the calls of functions of db/functions
// keep their plans where Citus would plan them at every execution: the
// server's own calls everywhere but on a coordinator that delegates them
// (Server.call), and every call from one function of the files to another
// (budget.sql).
func TestCallsKeepTheirPlans(t *testing.T) {
	c := newCallStmt(`SELECT crm_company_get($1)`)
	if got := (&Server{}).call(c); got != keptPlan(c.bare) {
		t.Errorf("a server that reaches the account's node sends %q", got)
	}
	if got := (&Server{delegateCalls: true}).call(c); got != c.bare {
		t.Errorf("a server that goes through the coordinator sends %q", got)
	}
	files, err := crmdb.FunctionFiles()
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile(`--[^\n]*`)
	call := regexp.MustCompile(`(?s)(PERFORM|FROM)\s+crm_[a-z_]+\(.*?;`)
	for _, f := range files {
		for _, stmt := range call.FindAllString(comment.ReplaceAllString(f.SQL, ""), -1) {
			if f.Name == "kpi_team.sql" && strings.HasPrefix(stmt, "FROM crm_kpi_items") {
				continue // in a CTE of a join, which Citus never delegates
			}
			if !strings.Contains(stmt, "WHERE pg_backend_pid() IS NOT NULL") {
				t.Errorf("%s: a call without its plan kept: %s", f.Name, stmt)
			}
		}
	}
}
