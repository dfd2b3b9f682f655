package main

import (
	"context"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

func TestKPICommands(t *testing.T) {
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	account := mustCommand(t, "account", "create", "--name", "Acme", "--currency", "EUR", "--tz", "Europe/Riga")
	user := mustCommand(t, "user", "create", "--account", account, "--name", "Mia Member", "--login", "mia@acme.example")

	item := mustCommand(t, "kpi", "set", "--user", user, "--month", "2026-11", "--metric", "income", "--plan", "12000.50")
	calls := mustCommand(t, "kpi", "set", "--user", user, "--month", "2026-11", "--metric", "tasks_done", "--plan", "30", "--name", "Calls")
	october := mustCommand(t, "kpi", "set", "--user", user, "--month", "2026-10", "--metric", "deal_sum", "--plan", "5000")
	if again := mustCommand(t, "kpi", "set", "--user", user, "--month", "2026-11", "--metric", "income", "--plan", "13000"); again != item {
		t.Errorf("setting an item again printed %s, want its id %s", again, item)
	}
	var n int
	if err := pool.Get(&n, `SELECT count(*) FROM kpi_plan_items i JOIN kpi_plans p ON p.account_id = i.account_id AND p.id = i.plan_id
		WHERE i.id = $1 AND i.account_id = $2 AND p.user_id = $3 AND p.month = '2026-11-01' AND i.plan_value = 13000 AND i.name = 'Income'`,
		item, account, user); err != nil || n != 1 {
		t.Fatalf("item not stored (%v)", err)
	}
	want := "2026-11\ttasks_done\tcount\t30.00\tCalls\n2026-11\tincome\tamount\t13000.00\tIncome\n2026-10\tdeal_sum\tamount\t5000.00\tDeal volume"
	if got := mustCommand(t, "kpi", "list", "--user", user); got != want {
		t.Errorf("kpi list printed\n%s\nwant\n%s", got, want)
	}
	wantJSON := `[{"id":` + calls + `,"month":"2026-11","metric":"tasks_done","measure":"count","plan":30.00,"name":"Calls"},` +
		`{"id":` + item + `,"month":"2026-11","metric":"income","measure":"amount","plan":13000.00,"name":"Income"},` +
		`{"id":` + october + `,"month":"2026-10","metric":"deal_sum","measure":"amount","plan":5000.00,"name":"Deal volume"}]`
	if got := mustCommand(t, "kpi", "list", "--user", user, "-o", "json"); got != wantJSON {
		t.Errorf("kpi list -o json printed\n%s\nwant\n%s", got, wantJSON)
	}
	if got := mustCommand(t, "kpi", "set", "--user", user, "--month", "2026-12", "--metric", "income", "--plan", "1", "-o", "json"); got == "" || got[0] != '{' {
		t.Errorf("kpi set -o json printed %q", got)
	}
	mustCommand(t, "kpi", "remove", "--user", user, "--month", "2026-10", "--metric", "deal_sum")
	if err := pool.Get(&n, `SELECT count(*) FROM kpi_plans WHERE account_id = $1 AND user_id = $2 AND month = '2026-10-01'`, account, user); err != nil || n != 0 {
		t.Errorf("%d October plans after removing its only item, want 0 (%v)", n, err)
	}
	other := mustCommand(t, "user", "create", "--account", account, "--name", "Noah", "--login", "noah@acme.example")
	if got := mustCommand(t, "kpi", "list", "--user", other, "-o", "json"); got != "[]" {
		t.Errorf("kpi list -o json of a user without plans printed %q, want []", got)
	}

	before := countAccountRows(t, pool, "kpi_plan_items", account)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kpi", "set", "--user", user, "--month", "2026-13", "--metric", "income", "--plan", "1"},
			`kpi set: invalid argument "2026-13" for "--month" flag: want a month as YYYY-MM, such as 2026-11 (see crm-server kpi set --help)`},
		{[]string{"kpi", "set", "--user", user, "--month", "November", "--metric", "income", "--plan", "1"},
			`kpi set: invalid argument "November" for "--month" flag: want a month as YYYY-MM, such as 2026-11 (see crm-server kpi set --help)`},
		{[]string{"kpi", "set", "--user", user, "--month", "2026-11", "--metric", "visits", "--plan", "1"},
			`metric "visits" is not one of companies_added, tasks_done, deals_created, deal_sum, invoices_issued, invoice_sum, income`},
		{[]string{"kpi", "set", "--user", user, "--month", "2026-11", "--metric", "income", "--plan", "0"},
			`plan "0" is not a decimal greater than 0 with at most two decimals`},
		{[]string{"kpi", "set", "--user", "987654321", "--month", "2026-11", "--metric", "income", "--plan", "1"}, "no user 987654321"},
		{[]string{"kpi", "remove", "--user", user, "--month", "2026-10", "--metric", "deal_sum"}, "user " + user + " has no deal_sum item in the plan for 2026-10"},
		{[]string{"kpi", "list", "--user", "987654321"}, "no user 987654321"},
		{[]string{"kpi", "list", "--user", user, "--month", "2026-11"}, "kpi list: unknown flag: --month (see crm-server kpi list --help)"},
		{[]string{"kpi", "frobnicate"}, `unknown command "frobnicate" for "crm-server kpi"`},
	} {
		failing(t, tc.want, tc.args...)
	}
	if n := countAccountRows(t, pool, "kpi_plan_items", account); n != before {
		t.Errorf("%d KPI items after refused commands, want %d", n, before)
	}
}
