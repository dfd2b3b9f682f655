package impl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
)

// The day of the dashboard tests is 2026-11-20. The account's time zone is
// Europe/Riga (UTC+2 in November); "other" lives in Asia/Tokyo (UTC+9).
var (
	rigaStart  = time.Date(2026, 11, 19, 22, 0, 0, 0, time.UTC) // 2026-11-20 00:00 in Riga
	rigaEnd    = rigaStart.Add(24 * time.Hour)                  // 2026-11-21 00:00 in Riga
	tokyoStart = time.Date(2026, 11, 19, 15, 0, 0, 0, time.UTC) // 2026-11-20 00:00 in Tokyo
)

const day = 24 * time.Hour

// dashWorld is a world with records on both sides of the period's boundaries
// and of midnight in each user's time zone.
type dashWorld struct {
	*world
	e             *env
	moneyAccount  int64
	companies     map[string]int64
	tasks         map[string]int64
	deals         map[string]int64
	call, meeting int64 // kinds of tasks
	client, other int64 // counterparty types: controlled, not controlled
	invoice       int64 // document types: invoice, contract
	contract      int64
}

func newDashWorld(t *testing.T, e *env, name string) *dashWorld {
	t.Helper()
	w := &dashWorld{world: e.newWorld(t, name), e: e, companies: map[string]int64{}, tasks: map[string]int64{}, deals: map[string]int64{}}
	w.call, w.meeting = w.dirs[35][0], w.dirs[35][1]
	w.client, w.other = w.dirs[9][0], w.dirs[9][1]
	w.invoice, w.contract = w.dirs[44][0], w.dirs[44][1]
	w.exec(t, `UPDATE users SET time_zone = 'Asia/Tokyo' WHERE id = $1`, w.world.other.id)
	if err := e.db.Get(&w.moneyAccount, `INSERT INTO money_accounts (account_id, name, currency) VALUES ($1, 'Main', 'EUR') RETURNING id`,
		w.accountID); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *dashWorld) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := w.e.db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func (w *dashWorld) company(t *testing.T, key string, owner user, typeID int64, created time.Time, deleted bool) {
	t.Helper()
	var deletedAt *time.Time
	if deleted {
		deletedAt = &created
	}
	var id int64
	if err := w.e.db.Get(&id, `INSERT INTO companies (account_id, name, type_id, user_id, created_at, deleted_at)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, w.accountID, "Company "+key, typeID, owner.id, created, deletedAt); err != nil {
		t.Fatal(err)
	}
	w.companies[key] = id
}

// task stores a task; finish zero means none, done zero not done.
func (w *dashWorld) task(t *testing.T, key, company string, assignee, assigner user, kind int64, start, finish, done time.Time, deal string) {
	t.Helper()
	var finishAt, doneAt *time.Time
	if !finish.IsZero() {
		finishAt = &finish
	}
	status, result := 1, ""
	if !done.IsZero() {
		doneAt, status, result = &done, 2, "Done"
	}
	var dealID *int64
	if deal != "" {
		id := w.deals[deal]
		dealID = &id
	}
	var id int64
	if err := w.e.db.Get(&id, `INSERT INTO tasks (account_id, company_id, deal_id, note, type_id, status_id, user_id, assigner_id,
			date_start, date_finish, done_at, result)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
		w.accountID, w.companies[company], dealID, "Task "+key, kind, status, assignee.id, assigner.id, start, finishAt, doneAt, result); err != nil {
		t.Fatal(err)
	}
	w.tasks[key] = id
}

func (w *dashWorld) deal(t *testing.T, key, company string, owner user, created time.Time, sum string) {
	t.Helper()
	var id int64
	if err := w.e.db.Get(&id, `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish, sum, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8::numeric, $9) RETURNING id`,
		w.accountID, "Deal "+key, w.companies[company], w.dirs[40][0], w.dirs[41][0], owner.id, created.Format(time.DateOnly), sum,
		created); err != nil {
		t.Fatal(err)
	}
	w.deals[key] = id
}

func (w *dashWorld) document(t *testing.T, company string, owner user, date string, typeID int64, sum string) {
	t.Helper()
	w.exec(t, `INSERT INTO documents (account_id, date, sum, type_id, user_id, company_id) VALUES ($1, $2, $3::numeric, $4, $5, $6)`,
		w.accountID, date, sum, typeID, owner.id, w.companies[company])
}

// money stores a movement: direction 1 income, 2 expense.
func (w *dashWorld) money(t *testing.T, owner user, date string, direction int, sum string, transfer bool) {
	t.Helper()
	w.exec(t, `INSERT INTO money_movements (account_id, date, sum, sum_currency, direction, money_account_id, is_transfer, user_id)
		VALUES ($1, $2, $3::numeric, $3::numeric, $4, $5, $6, $7)`, w.accountID, date, sum, direction, w.moneyAccount, transfer, owner.id)
}

// kpi sets an item of a user's plan for the month (YYYY-MM).
func (w *dashWorld) kpi(t *testing.T, u user, month, metric, name, plan string) {
	t.Helper()
	w.exec(t, `
		WITH p AS (
			INSERT INTO kpi_plans (account_id, user_id, month) VALUES ($1, $2, ($3 || '-01')::date)
			ON CONFLICT (account_id, user_id, month) DO UPDATE SET month = EXCLUDED.month RETURNING account_id, id)
		INSERT INTO kpi_plan_items (account_id, plan_id, name, metric, plan_value) SELECT account_id, id, $4, $5, $6::numeric FROM p`,
		w.accountID, u.id, month, name, metric, plan)
}

// rights sets the KPI report rights of a user.
func (w *dashWorld) rights(t *testing.T, u user, users, departments bool) {
	t.Helper()
	w.exec(t, `UPDATE users SET kpi_users_report = $2, kpi_departments_report = $3 WHERE id = $1`, u.id, users, departments)
}

// expectJSON compares a reply's value with the JSON expected, numbers by their
// exact text (so 1500.00 is not 1500).
func expectJSON(t *testing.T, got, want string) {
	t.Helper()
	decodeExact := func(s string) any {
		t.Helper()
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode %s: %v", s, err)
		}
		return v
	}
	if g, w := decodeExact(got), decodeExact(want); !reflect.DeepEqual(g, w) {
		var gi, wi bytes.Buffer
		_ = json.Indent(&gi, []byte(got), "", "  ")
		_ = json.Indent(&wi, []byte(want), "", "  ")
		t.Errorf("value\n%s\nwant\n%s", gi.String(), wi.String())
	}
}

// loadDayWorld stores the records of TestDashboardMyDay and TestDashboardMyTasks.
func loadDayWorld(t *testing.T, w *dashWorld) {
	a, h, m, p, o := w.admin, w.head, w.member, w.peer, w.world.other
	var zero time.Time

	w.company(t, "c1", m, w.client, rigaStart.Add(-time.Second), false) // Riga: the day before; Tokyo: the day
	w.company(t, "c2", m, w.client, rigaStart, false)
	w.company(t, "c3", p, w.other, rigaStart.Add(12*time.Hour), false)
	w.company(t, "c4", o, w.client, rigaEnd.Add(-time.Second), false) // Riga: the day; Tokyo: the day after
	w.company(t, "c5", a, w.other, rigaEnd, false)
	w.company(t, "c6", h, w.client, rigaStart.Add(time.Hour), false)
	w.company(t, "c7", m, w.client, rigaStart.Add(2*time.Hour), true) // deleted
	w.company(t, "c8", o, w.client, tokyoStart, false)                // Tokyo: the day; Riga: the day before
	w.company(t, "c9", o, w.other, tokyoStart.Add(-time.Second), false)

	w.deal(t, "d1", "c2", m, rigaStart.Add(time.Hour), "1000.50")
	w.deal(t, "d2", "c3", p, rigaEnd.Add(-time.Second), "2000.00")
	w.deal(t, "d3", "c5", a, rigaStart.Add(-time.Second), "500.00")
	w.deal(t, "d4", "c4", o, rigaStart.Add(2*time.Hour), "300.25") // 00:00 UTC: the day in both zones
	w.deal(t, "d5", "c6", h, rigaEnd, "700.00")

	// Deadlines (finish, or start without a finish) and completion times.
	w.task(t, "t1", "c1", m, h, w.call, rigaStart.Add(8*time.Hour), rigaStart.Add(9*time.Hour), zero, "")
	w.task(t, "t2", "c2", m, m, w.meeting, rigaStart.Add(-2*time.Hour), rigaStart, rigaStart.Add(10*time.Hour), "")
	w.task(t, "t3", "c3", p, h, w.call, rigaEnd.Add(-time.Hour), zero, zero, "")
	w.task(t, "t4", "c2", m, m, w.call, rigaEnd, rigaEnd.Add(time.Hour), zero, "") // keeps c2 from being forgotten
	w.task(t, "t5", "c4", o, a, w.meeting, rigaStart.Add(-24*time.Hour), rigaStart.Add(-23*time.Hour), zero, "")
	w.task(t, "t6", "c2", m, p, w.call, rigaStart.Add(-3*day), rigaStart.Add(-time.Second), zero, "")
	w.task(t, "t7", "c3", p, p, w.call, rigaStart.Add(-2*day-time.Hour), rigaStart.Add(-2*day), rigaStart.Add(time.Hour), "")
	w.task(t, "t8", "c6", h, a, w.meeting, rigaStart.Add(2*time.Hour), rigaStart.Add(3*time.Hour), rigaStart.Add(-time.Hour), "")
	w.task(t, "t9", "c5", a, a, w.call, rigaStart.Add(-5*day), zero, rigaEnd, "")
	w.task(t, "t10", "c8", o, o, w.call, tokyoStart, tokyoStart.Add(time.Hour), zero, "")
	w.task(t, "t11", "c8", o, o, w.meeting, rigaStart.Add(12*time.Hour), rigaStart.Add(13*time.Hour), zero, "")
	w.task(t, "t12", "c3", p, m, w.call, rigaStart.Add(4*time.Hour), rigaStart.Add(5*time.Hour), rigaStart.Add(6*time.Hour), "d2")
	w.task(t, "t13", "c6", a, a, w.call, rigaEnd, zero, zero, "") // deadline exactly at the end: keeps c6
	w.task(t, "t14", "c1", m, m, w.call, rigaEnd.Add(2*day), zero, rigaStart.Add(-2*day), "")
	w.task(t, "t15", "c8", o, o, w.meeting, rigaEnd.Add(-2*time.Hour), rigaEnd.Add(-time.Second), zero, "") // keeps c8 for Tokyo only
	w.task(t, "t16", "c1", m, m, w.call, rigaStart.Add(-10*day), zero, zero, "")
	w.task(t, "t17", "c1", h, m, w.meeting, rigaStart.Add(-day-time.Hour), rigaStart.Add(-day), zero, "")
	w.task(t, "t18", "c1", m, m, w.call, rigaStart.Add(-day-time.Hour), rigaStart.Add(-day), zero, "")

	w.document(t, "c2", m, "2026-11-20", w.invoice, "1500.00")
	w.document(t, "c2", m, "2026-11-20", w.contract, "9999.00")
	w.document(t, "c3", p, "2026-11-19", w.invoice, "800.00")
	w.document(t, "c4", o, "2026-11-20", w.invoice, "250.50")
	w.document(t, "c6", h, "2026-11-21", w.invoice, "100.00")
	w.document(t, "c6", h, "2026-11-20", w.invoice, "40.00")

	w.money(t, m, "2026-11-20", 1, "1000.00", false)
	w.money(t, p, "2026-11-20", 1, "200.00", false)
	w.money(t, a, "2026-11-20", 2, "300.00", false)
	w.money(t, a, "2026-11-20", 2, "5000.00", true) // a transfer between own accounts
	w.money(t, a, "2026-11-20", 1, "5000.00", true)
	w.money(t, m, "2026-11-19", 1, "70.00", false)
	w.money(t, o, "2026-11-20", 1, "10.10", false)
	w.money(t, h, "2026-11-20", 2, "20.00", false)
}

func TestDashboardMyDay(t *testing.T) {
	e := newEnv(t)
	w := newDashWorld(t, e, "acme")
	loadDayWorld(t, w)
	globex := newDashWorld(t, e, "globex")

	noKPI := `{"has_kpi": false}`
	for _, tc := range []struct {
		name string
		u    user
		want string
	}{
		{"admin sees every record", w.admin, `{
			"period": {"date_from": "2026-11-20", "date_to": "2026-11-20"},
			"user": {"id": ` + fmt.Sprint(w.admin.id) + `, "name": "admin of acme"},
			"companies_added": {"total": 4, "mine": 0},
			"tasks": {"scheduled_total": 7, "done_total": 3, "mine_scheduled": 1, "mine_done": 0, "overdue_total": 6, "mine_overdue": 1,
				"by_type": [{"type": "Call", "total": 3, "done": 2, "mine": 0, "mine_done": 0},
				            {"type": "Meeting", "total": 4, "done": 1, "mine": 1, "mine_done": 0}]},
			"deals_created": {"total": 3, "total_sum": 3300.75, "mine": 0, "mine_sum": 0},
			"invoices_issued": {"total": 3, "total_sum": 1790.50, "mine": 0, "mine_sum": 0},
			"money": {"income": 1210.10, "income_count": 3, "mine_income": 0, "expense": 320.00, "expense_count": 2},
			"forgotten_companies": {"total": 3, "mine": 0},
			"my_kpi": ` + noKPI + `}`},
		{"head sees the department", w.head, `{
			"period": {"date_from": "2026-11-20", "date_to": "2026-11-20"},
			"user": {"id": ` + fmt.Sprint(w.head.id) + `, "name": "head of acme"},
			"companies_added": {"total": 3, "mine": 1},
			"tasks": {"scheduled_total": 5, "done_total": 3, "mine_scheduled": 3, "mine_done": 0, "overdue_total": 4, "mine_overdue": 1,
				"by_type": [{"type": "Call", "total": 3, "done": 2, "mine": 2, "mine_done": 0},
				            {"type": "Meeting", "total": 2, "done": 1, "mine": 1, "mine_done": 0}]},
			"deals_created": {"total": 2, "total_sum": 3000.50, "mine": 0, "mine_sum": 0},
			"invoices_issued": {"total": 2, "total_sum": 1540.00, "mine": 1, "mine_sum": 40.00},
			"money": {"income": 1200.00, "income_count": 2, "mine_income": 0, "expense": 20.00, "expense_count": 1},
			"forgotten_companies": {"total": 1, "mine": 0},
			"my_kpi": ` + noKPI + `}`},
		{"member sees their own", w.member, `{
			"period": {"date_from": "2026-11-20", "date_to": "2026-11-20"},
			"user": {"id": ` + fmt.Sprint(w.member.id) + `, "name": "member of acme"},
			"companies_added": {"total": 1, "mine": 1},
			"tasks": {"scheduled_total": 3, "done_total": 2, "mine_scheduled": 3, "mine_done": 2, "overdue_total": 4, "mine_overdue": 4,
				"by_type": [{"type": "Call", "total": 2, "done": 1, "mine": 2, "mine_done": 1},
				            {"type": "Meeting", "total": 1, "done": 1, "mine": 1, "mine_done": 1}]},
			"deals_created": {"total": 1, "total_sum": 1000.50, "mine": 1, "mine_sum": 1000.50},
			"invoices_issued": {"total": 1, "total_sum": 1500.00, "mine": 1, "mine_sum": 1500.00},
			"money": {"income": 1000.00, "income_count": 1, "mine_income": 1000.00, "expense": 0, "expense_count": 0},
			"forgotten_companies": {"total": 1, "mine": 1},
			"my_kpi": ` + noKPI + `}`},
		{"peer", w.peer, `{
			"period": {"date_from": "2026-11-20", "date_to": "2026-11-20"},
			"user": {"id": ` + fmt.Sprint(w.peer.id) + `, "name": "peer of acme"},
			"companies_added": {"total": 1, "mine": 1},
			"tasks": {"scheduled_total": 2, "done_total": 2, "mine_scheduled": 2, "mine_done": 2, "overdue_total": 1, "mine_overdue": 1,
				"by_type": [{"type": "Call", "total": 2, "done": 2, "mine": 2, "mine_done": 2}]},
			"deals_created": {"total": 1, "total_sum": 2000.00, "mine": 1, "mine_sum": 2000.00},
			"invoices_issued": {"total": 0, "total_sum": 0, "mine": 0, "mine_sum": 0},
			"money": {"income": 200.00, "income_count": 1, "mine_income": 200.00, "expense": 0, "expense_count": 0},
			"forgotten_companies": {"total": 0, "mine": 0},
			"my_kpi": ` + noKPI + `}`},
		{"member in Tokyo counts Tokyo's day", w.world.other, `{
			"period": {"date_from": "2026-11-20", "date_to": "2026-11-20"},
			"user": {"id": ` + fmt.Sprint(w.world.other.id) + `, "name": "other of acme"},
			"companies_added": {"total": 1, "mine": 1},
			"tasks": {"scheduled_total": 2, "done_total": 0, "mine_scheduled": 2, "mine_done": 0, "overdue_total": 1, "mine_overdue": 1,
				"by_type": [{"type": "Call", "total": 1, "done": 0, "mine": 1, "mine_done": 0},
				            {"type": "Meeting", "total": 1, "done": 0, "mine": 1, "mine_done": 0}]},
			"deals_created": {"total": 1, "total_sum": 300.25, "mine": 1, "mine_sum": 300.25},
			"invoices_issued": {"total": 1, "total_sum": 250.50, "mine": 1, "mine_sum": 250.50},
			"money": {"income": 10.10, "income_count": 1, "mine_income": 10.10, "expense": 0, "expense_count": 0},
			"forgotten_companies": {"total": 1, "mine": 1},
			"my_kpi": ` + noKPI + `}`},
		{"another account sees nothing of acme", globex.admin, `{
			"period": {"date_from": "2026-11-20", "date_to": "2026-11-20"},
			"user": {"id": ` + fmt.Sprint(globex.admin.id) + `, "name": "admin of globex"},
			"companies_added": {"total": 0, "mine": 0},
			"tasks": {"scheduled_total": 0, "done_total": 0, "mine_scheduled": 0, "mine_done": 0, "overdue_total": 0, "mine_overdue": 0, "by_type": []},
			"deals_created": {"total": 0, "total_sum": 0, "mine": 0, "mine_sum": 0},
			"invoices_issued": {"total": 0, "total_sum": 0, "mine": 0, "mine_sum": 0},
			"money": {"income": 0, "income_count": 0, "mine_income": 0, "expense": 0, "expense_count": 0},
			"forgotten_companies": {"total": 0, "mine": 0},
			"my_kpi": ` + noKPI + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectJSON(t, expectOK(t, e.get(t, tc.u.token, "/dashboard/my/day?date=2026-11-20")), tc.want)
		})
	}

	t.Run("a period of several days", func(t *testing.T) {
		// 19 to 21 November in Riga: every counterparty but the deleted c7 is added; t4, t5, t6, t10,
		// t13, t17 and t18 are scheduled too, t8 and t9 done too; only t16 is overdue before the 19th.
		// No open task is due after the 21st, so every controlled counterparty is forgotten.
		v := decode[map[string]any](t, expectOK(t, e.get(t, w.admin.token, "/dashboard/my/day?date=2026-11-19&date_to=2026-11-21")))
		got := fmt.Sprint(v["period"], v["companies_added"], v["deals_created"], v["invoices_issued"], v["money"], v["forgotten_companies"])
		want := fmt.Sprint(map[string]any{"date_from": "2026-11-19", "date_to": "2026-11-21"},
			map[string]any{"total": 8.0, "mine": 1.0},
			map[string]any{"total": 5.0, "total_sum": 4500.75, "mine": 1.0, "mine_sum": 500.0},
			map[string]any{"total": 5.0, "total_sum": 2690.5, "mine": 0.0, "mine_sum": 0.0},
			map[string]any{"income": 1280.1, "income_count": 4.0, "mine_income": 0.0, "expense": 320.0, "expense_count": 2.0},
			map[string]any{"total": 5.0, "mine": 0.0})
		if got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
		tasks := v["tasks"].(map[string]any)
		for k, n := range map[string]float64{"scheduled_total": 14, "done_total": 5, "overdue_total": 1, "mine_scheduled": 3, "mine_done": 2, "mine_overdue": 0} {
			if tasks[k] != n {
				t.Errorf("tasks.%s = %v, want %v", k, tasks[k], n)
			}
		}
	})

	t.Run("today by default, in the owner's time zone", func(t *testing.T) {
		for _, u := range []user{w.admin, w.world.other} {
			var today string
			if err := e.db.Get(&today, `SELECT to_char(now() AT TIME ZONE coalesce(u.time_zone, a.time_zone), 'YYYY-MM-DD')
				FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.id = $1`, u.id); err != nil {
				t.Fatal(err)
			}
			v := decode[map[string]any](t, expectOK(t, e.get(t, u.token, "/dashboard/my/day")))
			if p := v["period"].(map[string]any); p["date_from"] != today || p["date_to"] != today {
				t.Errorf("period %v, want %s", p, today)
			}
			v = decode[map[string]any](t, expectOK(t, e.get(t, u.token, "/dashboard/my/day?date=2026-11-01")))
			if p := v["period"].(map[string]any); p["date_from"] != "2026-11-01" || p["date_to"] != "2026-11-01" {
				t.Errorf("date_to does not default to date: %v", p)
			}
		}
	})

	t.Run("my_kpi is the own KPI of the period", func(t *testing.T) {
		w.kpi(t, w.peer, "2026-11", "income", "Income", "3000")
		day := decode[map[string]json.RawMessage](t, expectOK(t, e.get(t, w.peer.token, "/dashboard/my/day?date=2026-11-20")))
		kpi := expectOK(t, e.get(t, w.peer.token, "/dashboard/kpi/my?date_from=2026-11-20&date_to=2026-11-20"))
		expectJSON(t, string(day["my_kpi"]), kpi)
		// A day is 1/30 of November's plan: 100; the 200.00 of income make 100 %; the month to date
		// (1 to 20 November) plans 2000.00, of which the 200.00 are 10 %.
		expectJSON(t, kpi, `{"has_kpi": true, "period": {"date_from": "2026-11-20", "date_to": "2026-11-20"},
			"period_progress_percent": 100.00, "month_to_date_progress_percent": 10.00,
			"month_to_date": {"date_from": "2026-11-01", "date_to": "2026-11-20"},
			"month_items": [{"name": "Income", "measure": "amount", "plan": 100.00, "actual": 200.00, "progress_percent": 100.00}]}`)
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct{ target, want string }{
			{"/dashboard/my/day?date=2026-13-01", `query parameter "date"`},
			{"/dashboard/my/day?date=20.11.2026", `query parameter "date"`},
			{"/dashboard/my/day?date=2026-11-20&date_to=2026-11-19", `query parameter "date_to": 2026-11-19 is before "date" 2026-11-20`},
			{"/dashboard/my/day?date=2025-11-20&date_to=2026-11-21", `the period 2025-11-20..2026-11-21 has 367 days; at most 366 are allowed`},
			{"/dashboard/my/day?date_to=2020-01-01", `query parameter "date_to": 2020-01-01 is before "date"`}, // date is today
		} {
			expectError(t, e.get(t, w.member.token, tc.target), "400", tc.want, "")
		}
		// A whole leap year is allowed.
		expectOK(t, e.get(t, w.member.token, "/dashboard/my/day?date=2028-01-01&date_to=2028-12-31"))
	})
}

func TestDashboardMyTasks(t *testing.T) {
	e := newEnv(t)
	w := newDashWorld(t, e, "acme")
	loadDayWorld(t, w)
	globex := newDashWorld(t, e, "globex")

	viewer := "member"
	task := func(key, kind, start, finish string, done bool, company string, deal string) string {
		status, result, finishJSON, dealJSON := "in work", "", "null", "null"
		if done {
			status, result = "done", "Done"
		}
		if finish != "" {
			finishJSON = `"` + finish + `"`
		}
		if deal != "" {
			dealJSON = fmt.Sprint(w.deals[deal])
		}
		// c3 is the peer's, c1 and c2 the member's: neither may open the
		// other's, so the name is not shown on their tasks (the counterparty
		// columns' rule, seesCounterparty).
		name := "Company " + company
		if viewer == "member" && company == "c3" || viewer == "peer" && (company == "c1" || company == "c2") {
			name = ""
		}
		return fmt.Sprintf(`{"id": %d, "type": %q, "status": %q, "done": %t, "date_start": %q, "date_finish": %s,
			"company_id": %d, "company_name": %q, "deal_id": %s, "note": "Task %s", "result": %q}`,
			w.tasks[key], kind, status, done, start, finishJSON, w.companies[company], name, dealJSON, key, result)
	}
	t6 := task("t6", "Call", "2026-11-17 00:00:00", "2026-11-19 23:59:59", false, "c2", "")
	t18 := task("t18", "Call", "2026-11-18 23:00:00", "2026-11-19 00:00:00", false, "c1", "")
	t17 := task("t17", "Meeting", "2026-11-18 23:00:00", "2026-11-19 00:00:00", false, "c1", "")
	t16 := task("t16", "Call", "2026-11-10 00:00:00", "", false, "c1", "")

	t.Run("member: today and overdue, as assignee or assigner", func(t *testing.T) {
		expectJSON(t, expectOK(t, e.get(t, w.member.token, "/dashboard/my/tasks?date=2026-11-20")), `{
			"date": "2026-11-20",
			"today": {"total": 3, "done": 2, "tasks": [`+
			task("t2", "Meeting", "2026-11-19 22:00:00", "2026-11-20 00:00:00", true, "c2", "")+`, `+
			task("t12", "Call", "2026-11-20 04:00:00", "2026-11-20 05:00:00", true, "c3", "d2")+`, `+
			task("t1", "Call", "2026-11-20 08:00:00", "2026-11-20 09:00:00", false, "c1", "")+`]},
			"overdue": {"total": 4, "shown": 4, "tasks": [`+t6+`, `+t18+`, `+t17+`, `+t16+`]}}`)
	})

	t.Run("overdue_limit shows the most recent", func(t *testing.T) {
		v := decode[map[string]json.RawMessage](t, expectOK(t, e.get(t, w.member.token, "/dashboard/my/tasks?date=2026-11-20&overdue_limit=2")))
		expectJSON(t, string(v["overdue"]), `{"total": 4, "shown": 2, "tasks": [`+t6+`, `+t18+`]}`)
	})

	t.Run("a task without a finish is due at its start", func(t *testing.T) {
		viewer = "peer"
		defer func() { viewer = "member" }()
		expectJSON(t, expectOK(t, e.get(t, w.peer.token, "/dashboard/my/tasks?date=2026-11-20")), `{
			"date": "2026-11-20",
			"today": {"total": 2, "done": 1, "tasks": [`+
			task("t12", "Call", "2026-11-20 04:00:00", "2026-11-20 05:00:00", true, "c3", "d2")+`, `+
			task("t3", "Call", "2026-11-20 23:00:00", "", false, "c3", "")+`]},
			"overdue": {"total": 1, "shown": 1, "tasks": [`+task("t6", "Call", "2026-11-17 00:00:00", "2026-11-19 23:59:59", false, "c2", "")+`]}}`)
	})

	t.Run("Tokyo's day and times", func(t *testing.T) {
		expectJSON(t, expectOK(t, e.get(t, w.world.other.token, "/dashboard/my/tasks?date=2026-11-20")), `{
			"date": "2026-11-20",
			"today": {"total": 2, "done": 0, "tasks": [`+
			task("t10", "Call", "2026-11-20 00:00:00", "2026-11-20 01:00:00", false, "c8", "")+`, `+
			task("t11", "Meeting", "2026-11-20 19:00:00", "2026-11-20 20:00:00", false, "c8", "")+`]},
			"overdue": {"total": 1, "shown": 1, "tasks": [`+
			task("t5", "Meeting", "2026-11-19 07:00:00", "2026-11-19 08:00:00", false, "c4", "")+`]}}`)
	})

	t.Run("only the owner's tasks, whatever the role", func(t *testing.T) {
		// The admin is assigner of t5 and t8 and assignee of t9 and t13; t8 and t9 are done.
		v := decode[map[string]any](t, expectOK(t, e.get(t, w.admin.token, "/dashboard/my/tasks?date=2026-11-20")))
		today, overdue := v["today"].(map[string]any), v["overdue"].(map[string]any)
		if today["total"] != 1.0 || today["done"] != 1.0 || overdue["total"] != 1.0 || overdue["shown"] != 1.0 {
			t.Errorf("today %v, overdue %v", today, overdue)
		}
	})

	t.Run("another account", func(t *testing.T) {
		expectJSON(t, expectOK(t, e.get(t, globex.admin.token, "/dashboard/my/tasks?date=2026-11-20")),
			`{"date": "2026-11-20", "today": {"total": 0, "done": 0, "tasks": []}, "overdue": {"total": 0, "shown": 0, "tasks": []}}`)
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct{ target, want string }{
			{"/dashboard/my/tasks?overdue_limit=0", `query parameter "overdue_limit": number must be at least 1`},
			{"/dashboard/my/tasks?overdue_limit=101", `query parameter "overdue_limit": number must be at most 100`},
			{"/dashboard/my/tasks?overdue_limit=ten", `query parameter "overdue_limit"`},
			{"/dashboard/my/tasks?date=2026-02-30", `date_to`},
		} {
			r := e.get(t, w.member.token, tc.target)
			if tc.want == "date_to" {
				expectError(t, r, "400", "2026-02-30", "")
				continue
			}
			expectError(t, r, "400", tc.want, "")
		}
	})
}

// loadKPIWorld stores the plans and records of the KPI tests: plans of
// October (31 days) and November (30 days) 2026.
func loadKPIWorld(t *testing.T, w *dashWorld) {
	a, h, m, p, o := w.admin, w.head, w.member, w.peer, w.world.other
	riga := func(s string) time.Time {
		loc, err := time.LoadLocation("Europe/Riga")
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.ParseInLocation(time.DateTime, s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	var zero time.Time

	w.kpi(t, m, "2026-10", "companies_added", "New clients (October)", "31")
	w.kpi(t, m, "2026-10", "income", "Income", "3100")
	w.kpi(t, m, "2026-11", "companies_added", "New clients", "30")
	w.kpi(t, m, "2026-11", "tasks_done", "Tasks done", "15")
	w.kpi(t, m, "2026-11", "invoice_sum", "Invoiced", "3000")
	w.kpi(t, h, "2026-11", "deals_created", "New deals", "10")
	w.kpi(t, h, "2026-11", "deal_sum", "Deal volume", "10000")
	w.kpi(t, a, "2026-11", "income", "Income", "30000")
	w.kpi(t, p, "2026-10", "companies_added", "New clients", "31")
	w.kpi(t, p, "2026-11", "income", "Income", "2000")
	w.kpi(t, o, "2026-11", "companies_added", "New clients", "30")

	// The member's counterparties: three in October's part of 17 October to 15 November,
	// three in November's; the others are outside, deleted, or someone else's.
	for i, at := range []string{"2026-10-16 23:59:59", "2026-10-17 00:00:00", "2026-10-20 12:00:00", "2026-10-31 23:59:59",
		"2026-11-01 00:00:00", "2026-11-10 12:00:00", "2026-11-15 23:59:59", "2026-11-16 00:00:00"} {
		w.company(t, fmt.Sprint("m", i), m, w.client, riga(at), false)
	}
	w.company(t, "deleted", m, w.client, riga("2026-11-05 12:00:00"), true)
	w.company(t, "peer's", p, w.client, riga("2026-11-05 12:00:00"), false)
	// Other's: 1 November 00:30 in Tokyo is still 31 October in Riga.
	w.company(t, "o1", o, w.client, time.Date(2026, 10, 31, 15, 30, 0, 0, time.UTC), false)
	w.company(t, "o2", o, w.client, riga("2026-11-10 12:00:00"), false)

	// The member's tasks done (as assignee): two in November's part; October has no such item.
	for i, at := range []string{"2026-10-31 23:59:59", "2026-11-01 00:00:00", "2026-11-15 23:59:59", "2026-11-16 00:00:00"} {
		w.task(t, fmt.Sprint("done", i), "m1", m, m, w.call, riga(at).Add(-time.Hour), zero, riga(at), "")
	}
	w.task(t, "assigned", "m1", p, m, w.call, riga("2026-11-05 09:00:00"), zero, riga("2026-11-05 10:00:00"), "")
	w.task(t, "open", "m1", m, m, w.call, riga("2026-11-05 09:00:00"), zero, zero, "")

	// Invoices of the member: 1800.00 in November's part (plan 1500.00: capped at 100 %).
	w.document(t, "m1", m, "2026-11-01", w.invoice, "1000.00")
	w.document(t, "m1", m, "2026-11-15", w.invoice, "800.00")
	w.document(t, "m1", m, "2026-11-10", w.contract, "5000.00")
	w.document(t, "m1", m, "2026-11-16", w.invoice, "100.00")
	w.document(t, "m1", m, "2026-10-31", w.invoice, "300.00")

	// Income of the member: 1200.00 in October's part; November has no income item.
	w.money(t, m, "2026-10-16", 1, "500.00", false)
	w.money(t, m, "2026-10-17", 1, "1000.00", false)
	w.money(t, m, "2026-10-31", 1, "200.00", false)
	w.money(t, m, "2026-10-20", 1, "999.00", true)
	w.money(t, m, "2026-10-20", 2, "50.00", false)
	w.money(t, m, "2026-11-05", 1, "700.00", false)

	// The head's deals in 1 to 15 November: 5 deals, 2500.00 (plan 5 and 5000.00).
	for i := range 5 {
		w.deal(t, fmt.Sprint("h", i), "m1", h, riga("2026-11-02 10:00:00").Add(time.Duration(i)*day), "500.00")
	}
	w.deal(t, "h-late", "m1", h, riga("2026-11-16 00:00:00"), "9000.00")
	// The admin's income: 7500.00 (plan 15000.00); the peer's: 500.00 (plan 1000.00).
	w.money(t, a, "2026-11-03", 1, "7500.00", false)
	w.money(t, p, "2026-11-05", 1, "500.00", false)
}

func TestDashboardKpiMy(t *testing.T) {
	e := newEnv(t)
	w := newDashWorld(t, e, "acme")
	loadKPIWorld(t, w)
	globex := newDashWorld(t, e, "globex")

	t.Run("a period over two months", func(t *testing.T) {
		// companies_added: 31×15/31 + 30×15/30 = 30 planned, 6 done: 20 %.
		// tasks_done: November only: 15×15/30 = 7.5 planned, 2 done: 26.67 %.
		// invoice_sum: November only: 1500.00 planned, 1800.00 issued: 100 %.
		// income: October only: 3100×15/31 = 1500.00 planned, 1200.00 received: 80 %.
		// The month to date (1 to 15 November) has November's three items: 20, 26.67 and 100.
		expectJSON(t, expectOK(t, e.get(t, w.member.token, "/dashboard/kpi/my?date_from=2026-10-17&date_to=2026-11-15")), `{
			"has_kpi": true,
			"period": {"date_from": "2026-10-17", "date_to": "2026-11-15"},
			"period_progress_percent": 56.67,
			"month_to_date_progress_percent": 48.89,
			"month_to_date": {"date_from": "2026-11-01", "date_to": "2026-11-15"},
			"month_items": [
				{"name": "New clients", "measure": "count", "plan": 30.00, "actual": 6, "progress_percent": 20.00},
				{"name": "Tasks done", "measure": "count", "plan": 7.50, "actual": 2, "progress_percent": 26.67},
				{"name": "Invoiced", "measure": "amount", "plan": 1500.00, "actual": 1800.00, "progress_percent": 100.00},
				{"name": "Income", "measure": "amount", "plan": 1500.00, "actual": 1200.00, "progress_percent": 80.00}]}`)
	})

	t.Run("date_from defaults to the first of date_to's month", func(t *testing.T) {
		expectJSON(t, expectOK(t, e.get(t, w.member.token, "/dashboard/kpi/my?date_to=2026-11-15")), `{
			"has_kpi": true,
			"period": {"date_from": "2026-11-01", "date_to": "2026-11-15"},
			"period_progress_percent": 48.89,
			"month_to_date_progress_percent": 48.89,
			"month_to_date": {"date_from": "2026-11-01", "date_to": "2026-11-15"},
			"month_items": [
				{"name": "New clients", "measure": "count", "plan": 15.00, "actual": 3, "progress_percent": 20.00},
				{"name": "Tasks done", "measure": "count", "plan": 7.50, "actual": 2, "progress_percent": 26.67},
				{"name": "Invoiced", "measure": "amount", "plan": 1500.00, "actual": 1800.00, "progress_percent": 100.00}]}`)
	})

	t.Run("a whole month and one day", func(t *testing.T) {
		// October: 4 counterparties of 31 (12.90 %), 1700.00 of 3100.00 income (54.84 %).
		expectJSON(t, expectOK(t, e.get(t, w.member.token, "/dashboard/kpi/my?date_from=2026-10-01&date_to=2026-10-31")), `{
			"has_kpi": true,
			"period": {"date_from": "2026-10-01", "date_to": "2026-10-31"},
			"period_progress_percent": 33.87,
			"month_to_date_progress_percent": 33.87,
			"month_to_date": {"date_from": "2026-10-01", "date_to": "2026-10-31"},
			"month_items": [
				{"name": "New clients (October)", "measure": "count", "plan": 31.00, "actual": 4, "progress_percent": 12.90},
				{"name": "Income", "measure": "amount", "plan": 3100.00, "actual": 1700.00, "progress_percent": 54.84}]}`)
		// 15 November alone: one counterparty of 1, one task of 0.5, 800.00 of 100.00 invoiced.
		v := decode[map[string]any](t, expectOK(t, e.get(t, w.member.token, "/dashboard/kpi/my?date_from=2026-11-15&date_to=2026-11-15")))
		if v["period_progress_percent"] != 100.0 || v["month_to_date_progress_percent"] != 48.89 {
			t.Errorf("15 November: %v", v)
		}
	})

	t.Run("the month of date_to without a plan", func(t *testing.T) {
		// The peer plans income in November only: 2000×11/30 = 733.33 for 20 to 30 November.
		expectJSON(t, expectOK(t, e.get(t, w.peer.token, "/dashboard/kpi/my?date_from=2026-11-20&date_to=2026-12-05")), `{
			"has_kpi": true,
			"period": {"date_from": "2026-11-20", "date_to": "2026-12-05"},
			"period_progress_percent": 0.00,
			"month_to_date_progress_percent": null,
			"month_to_date": {"date_from": "2026-12-01", "date_to": "2026-12-05"},
			"month_items": [{"name": "Income", "measure": "amount", "plan": 733.33, "actual": 0, "progress_percent": 0.00}]}`)
	})

	t.Run("no plan is not an error", func(t *testing.T) {
		for _, tc := range []struct {
			u      user
			target string
		}{
			{w.member, "/dashboard/kpi/my?date_from=2026-12-01&date_to=2026-12-31"},
			{w.member, "/dashboard/kpi/my?date_from=2026-09-01&date_to=2026-09-30"},
			{w.head, "/dashboard/kpi/my?date_from=2026-10-01&date_to=2026-10-31"},
			{globex.member, "/dashboard/kpi/my?date_from=2026-10-17&date_to=2026-11-15"},
		} {
			if v := expectOK(t, e.get(t, tc.u.token, tc.target)); v != `{"has_kpi": false}` {
				t.Errorf("%s: %s", tc.target, v)
			}
		}
	})

	t.Run("days of the owner's time zone", func(t *testing.T) {
		// Both of other's counterparties are November's in Tokyo: 2 of 15.
		expectJSON(t, expectOK(t, e.get(t, w.world.other.token, "/dashboard/kpi/my?date_to=2026-11-15")), `{
			"has_kpi": true,
			"period": {"date_from": "2026-11-01", "date_to": "2026-11-15"},
			"period_progress_percent": 13.33,
			"month_to_date_progress_percent": 13.33,
			"month_to_date": {"date_from": "2026-11-01", "date_to": "2026-11-15"},
			"month_items": [{"name": "New clients", "measure": "count", "plan": 15.00, "actual": 2, "progress_percent": 13.33}]}`)
	})

	t.Run("today by default", func(t *testing.T) {
		var today string
		if err := e.db.Get(&today, `SELECT to_char(now() AT TIME ZONE 'Europe/Riga', 'YYYY-MM-DD')`); err != nil {
			t.Fatal(err)
		}
		w.kpi(t, w.peer, today[:7], "tasks_done", "Tasks", "10")
		v := decode[map[string]any](t, expectOK(t, e.get(t, w.peer.token, "/dashboard/kpi/my")))
		want := map[string]any{"date_from": today[:8] + "01", "date_to": today}
		if !reflect.DeepEqual(v["period"], want) || !reflect.DeepEqual(v["month_to_date"], want) {
			t.Errorf("period %v, month to date %v, want %v", v["period"], v["month_to_date"], want)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		expectError(t, e.get(t, w.member.token, "/dashboard/kpi/my?date_from=2026-11-02&date_to=2026-11-01"), "400",
			`query parameter "date_to": 2026-11-01 is before "date_from" 2026-11-02`, "")
		expectError(t, e.get(t, w.member.token, "/dashboard/kpi/my?date_from=2025-01-01&date_to=2026-11-01"), "400",
			`at most 366 are allowed`, "")
		expectError(t, e.get(t, w.member.token, "/dashboard/kpi/my?date_to=2026-11"), "400", `query parameter "date_to"`, "")
		expectError(t, e.get(t, w.member.token, "/dashboard/kpi/my?date_from=yesterday"), "400", `query parameter "date_from"`, "")
	})
}

func TestDashboardKpiTeam(t *testing.T) {
	e := newEnv(t)
	w := newDashWorld(t, e, "acme")
	loadKPIWorld(t, w)
	globex := newDashWorld(t, e, "globex")
	globex.rights(t, globex.admin, true, true)

	period := `"period": {"date_from": "2026-11-01", "date_to": "2026-11-15"}`
	entry := func(u user, name string, dept int64, deptName, progress string) string {
		deptJSON := "null"
		if dept != 0 {
			deptJSON = fmt.Sprint(dept)
		}
		return fmt.Sprintf(`{"user_id": %d, "name": %q, "department_id": %s, "department": %q, "progress_percent": %s}`,
			u.id, name, deptJSON, deptName, progress)
	}
	// In Riga's days of 1 to 15 November: head 75 (deals 5 of 5, 2500.00 of 5000.00), admin 50,
	// peer 50 (500.00 of 1000.00), member 48.89 (as in the own KPI), other 6.67 (1 of 15).
	head := entry(w.head, "head of acme", w.sales, "Sales", "75.00")
	admin := entry(w.admin, "admin of acme", 0, "", "50.00")
	peer := entry(w.peer, "peer of acme", w.sales, "Sales", "50.00")
	member := entry(w.member, "member of acme", w.sales, "Sales", "48.89")
	other := entry(w.world.other, "other of acme", w.support, "Support", "6.67")
	sales := fmt.Sprintf(`{"department_id": %d, "name": "Sales", "progress_percent": 57.96}`, w.sales)
	support := fmt.Sprintf(`{"department_id": %d, "name": "Support", "progress_percent": 6.67}`, w.support)
	const noUsers, noDepts, deptGiven = `"no right to the users KPI report"`, `"no right to the departments KPI report"`, `"not returned when department_id is given"`

	for _, tc := range []struct {
		name              string
		u                 user
		usersRight, depts bool
		query             string
		want              string
	}{
		{"admin with both rights", w.admin, true, true, "",
			`{` + period + `, "users": [` + head + `, ` + admin + `, ` + peer + `, ` + member + `, ` + other + `], "users_access": "ok",
			"departments": [` + sales + `, ` + support + `], "departments_access": "ok"}`},
		{"admin with the users right", w.admin, true, false, "",
			`{` + period + `, "users": [` + head + `, ` + admin + `, ` + peer + `, ` + member + `, ` + other + `], "users_access": "ok",
			"departments": null, "departments_access": ` + noDepts + `}`},
		{"admin with the departments right", w.admin, false, true, "",
			`{` + period + `, "users": null, "users_access": ` + noUsers + `,
			"departments": [` + sales + `, ` + support + `], "departments_access": "ok"}`},
		{"admin, one department", w.admin, true, true, fmt.Sprintf("&department_id=%d", w.sales),
			`{` + period + `, "users": [` + head + `, ` + peer + `, ` + member + `], "users_access": "ok",
			"departments": null, "departments_access": ` + deptGiven + `}`},
		{"admin, one department, departments right only", w.admin, false, true, fmt.Sprintf("&department_id=%d", w.support),
			`{` + period + `, "users": null, "users_access": ` + noUsers + `, "departments": null, "departments_access": ` + deptGiven + `}`},
		{"head sees the department", w.head, true, true, "",
			`{` + period + `, "users": [` + head + `, ` + peer + `, ` + member + `], "users_access": "ok",
			"departments": [` + sales + `], "departments_access": "ok"}`},
		{"head names the own department", w.head, true, false, fmt.Sprintf("&department_id=%d", w.sales),
			`{` + period + `, "users": [` + head + `, ` + peer + `, ` + member + `], "users_access": "ok",
			"departments": null, "departments_access": ` + deptGiven + `}`},
		{"member with a right sees the department", w.member, true, false, "",
			`{` + period + `, "users": [` + head + `, ` + peer + `, ` + member + `], "users_access": "ok",
			"departments": null, "departments_access": ` + noDepts + `}`},
		{"member in Tokyo counts Tokyo's days", w.world.other, true, true, "",
			`{` + period + `, "users": [` + entry(w.world.other, "other of acme", w.support, "Support", "13.33") + `], "users_access": "ok",
			"departments": [` + fmt.Sprintf(`{"department_id": %d, "name": "Support", "progress_percent": 13.33}`, w.support) + `],
			"departments_access": "ok"}`},
		{"another account", globex.admin, true, true, "",
			`{` + period + `, "users": [], "users_access": "ok", "departments": [], "departments_access": "ok"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.u != globex.admin {
				w.rights(t, tc.u, tc.usersRight, tc.depts)
			}
			expectJSON(t, expectOK(t, e.get(t, tc.u.token, "/dashboard/kpi/team?date_from=2026-11-01&date_to=2026-11-15"+tc.query)), tc.want)
		})
	}

	t.Run("a period over two months", func(t *testing.T) {
		// 17 October to 15 November: the member's 56.67 of the own KPI; the peer's October plan of
		// 31×15/31 = 15 counterparties, none added in October, and November's income: (0 + 50) / 2.
		w.rights(t, w.head, true, false)
		v := decode[map[string]any](t, expectOK(t, e.get(t, w.head.token, "/dashboard/kpi/team?date_from=2026-10-17&date_to=2026-11-15")))
		got := fmt.Sprint(v["users"])
		want := fmt.Sprint([]any{
			map[string]any{"user_id": float64(w.head.id), "name": "head of acme", "department_id": float64(w.sales), "department": "Sales", "progress_percent": 75.0},
			map[string]any{"user_id": float64(w.member.id), "name": "member of acme", "department_id": float64(w.sales), "department": "Sales", "progress_percent": 56.67},
			map[string]any{"user_id": float64(w.peer.id), "name": "peer of acme", "department_id": float64(w.sales), "department": "Sales", "progress_percent": 25.0},
		})
		if got != want {
			t.Errorf("users %s\nwant %s", got, want)
		}
	})

	t.Run("a member without a department sees only themselves", func(t *testing.T) {
		loner := newUser(t, e, w.world, "loner", "member", 0)
		w.rights(t, loner, true, true)
		w.kpi(t, loner, "2026-11", "tasks_done", "Tasks", "30")
		expectJSON(t, expectOK(t, e.get(t, loner.token, "/dashboard/kpi/team?date_from=2026-11-01&date_to=2026-11-15")),
			`{`+period+`, "users": [`+entry(loner, "loner of acme", 0, "", "0.00")+`], "users_access": "ok",
			"departments": [], "departments_access": "ok"}`)
	})

	t.Run("inactive users are not staff", func(t *testing.T) {
		w.rights(t, w.admin, true, true)
		w.exec(t, `UPDATE users SET active = false WHERE id = $1`, w.world.other.id)
		defer w.exec(t, `UPDATE users SET active = true WHERE id = $1`, w.world.other.id)
		v := decode[map[string]any](t, expectOK(t, e.get(t, w.admin.token, "/dashboard/kpi/team?date_from=2026-11-01&date_to=2026-11-15")))
		var names []string
		for _, u := range v["users"].([]any) {
			names = append(names, u.(map[string]any)["name"].(string))
		}
		if want := []string{"head of acme", "admin of acme", "peer of acme", "member of acme", "loner of acme"}; !reflect.DeepEqual(names, want) {
			t.Errorf("users %v, want %v", names, want)
		}
		if want := []any{decode[any](t, sales)}; !reflect.DeepEqual(v["departments"], want) {
			t.Errorf("departments %v, want %v", v["departments"], want)
		}
	})

	t.Run("neither right", func(t *testing.T) {
		for _, u := range []user{w.admin, w.head, w.member} {
			w.rights(t, u, false, false)
			expectError(t, e.get(t, u.token, "/dashboard/kpi/team"), "403", "no rights to the KPI reports of users and departments", "")
			expectError(t, e.get(t, u.token, fmt.Sprintf("/dashboard/kpi/team?department_id=%d", w.sales)), "403", "no rights", "")
		}
	})

	t.Run("departments out of scope are missing", func(t *testing.T) {
		w.rights(t, w.admin, true, true)
		w.rights(t, w.head, true, true)
		for _, tc := range []struct {
			u    user
			dept int64
		}{
			{w.head, w.support},     // another department of the account
			{w.admin, globex.sales}, // a department of another account
			{w.admin, 987654321},
			{globex.admin, w.sales},
		} {
			expectError(t, e.get(t, tc.u.token, fmt.Sprintf("/dashboard/kpi/team?department_id=%d", tc.dept)), "404",
				fmt.Sprintf(`query parameter "department_id": department %d not found`, tc.dept), "")
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, target := range []string{
			"/dashboard/kpi/team?department_id=0",
			"/dashboard/kpi/team?department_id=sales",
			"/dashboard/kpi/team?date_from=2026-11-16&date_to=2026-11-15",
			"/dashboard/kpi/team?date_to=15.11.2026",
		} {
			r := e.get(t, w.admin.token, target)
			if r.code() != "400" || r.Status != "error" {
				t.Errorf("%s: %s", target, r.Raw)
			}
		}
	})
}

// newUser adds a user with a token to a world; dept 0 means none.
func newUser(t *testing.T, e *env, w *world, login, role string, dept int64) user {
	t.Helper()
	ctx := context.Background()
	in := impl.UserInput{AccountID: w.accountID, Name: login + " of acme", Login: login + "@acme.example", Role: role}
	if dept != 0 {
		in.DepartmentID = &dept
	}
	id, err := impl.CreateUser(ctx, e.db, in)
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := impl.CreateToken(ctx, e.db, id, "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return user{id: id, token: token}
}
