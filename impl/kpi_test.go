package impl_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
)

func TestKPIPlans(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	ctx := context.Background()
	november := time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC) // any day of the month

	t.Run("set creates the plan and the item", func(t *testing.T) {
		id, err := impl.SetKPIItem(ctx, e.db, impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "income", Plan: "15000"})
		if err != nil {
			t.Fatal(err)
		}
		if n := e.count(t, `SELECT count(*) FROM kpi_plan_items i JOIN kpi_plans p ON p.account_id = i.account_id AND p.id = i.plan_id
			WHERE i.id = $1 AND p.account_id = $2 AND p.user_id = $3 AND p.month = '2026-11-01' AND i.metric = 'income'
			  AND i.measure = 'amount' AND i.plan_value = 15000 AND i.name = 'Income'`, id, w.accountID, w.member.id); n != 1 {
			t.Error("item not stored as set")
		}
	})

	t.Run("set again changes the value, and the name only when given", func(t *testing.T) {
		first, _ := impl.SetKPIItem(ctx, e.db, impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "tasks_done", Plan: "20", Name: "Calls and meetings"})
		again, err := impl.SetKPIItem(ctx, e.db, impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "tasks_done", Plan: "25.50"})
		if err != nil || again != first {
			t.Fatalf("second set: %d, %v; want item %d", again, err, first)
		}
		if n := e.count(t, `SELECT count(*) FROM kpi_plan_items WHERE id = $1 AND plan_value = 25.50 AND name = 'Calls and meetings' AND measure = 'count'`, first); n != 1 {
			t.Error("item not updated")
		}
		if n := e.count(t, `SELECT count(*) FROM kpi_plans WHERE user_id = $1`, w.member.id); n != 1 {
			t.Errorf("%d plans, want one for November", n)
		}
	})

	t.Run("list", func(t *testing.T) {
		if _, err := impl.SetKPIItem(ctx, e.db, impl.KPIItemInput{UserID: w.member.id, Month: november.AddDate(0, -1, 0), Metric: "companies_added", Plan: "7"}); err != nil {
			t.Fatal(err)
		}
		items, err := impl.ListKPIItems(ctx, e.db, w.member.id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.Month.Format("2006-01")+" "+it.Metric+" "+it.Measure+" "+it.Plan+" "+it.Name)
		}
		want := "2026-11 tasks_done count 25.50 Calls and meetings|2026-11 income amount 15000.00 Income|2026-10 companies_added count 7.00 New counterparties"
		if strings.Join(got, "|") != want {
			t.Errorf("items\n%s\nwant\n%s", strings.Join(got, "|"), want)
		}
	})

	t.Run("remove the item, and the plan with its last item", func(t *testing.T) {
		if err := impl.RemoveKPIItem(ctx, e.db, w.member.id, november, "income"); err != nil {
			t.Fatal(err)
		}
		if n := e.count(t, `SELECT count(*) FROM kpi_plans WHERE user_id = $1 AND month = '2026-11-01'`, w.member.id); n != 1 {
			t.Error("the plan went with an item while another was left")
		}
		if err := impl.RemoveKPIItem(ctx, e.db, w.member.id, november, "tasks_done"); err != nil {
			t.Fatal(err)
		}
		if n := e.count(t, `SELECT count(*) FROM kpi_plans WHERE user_id = $1 AND month = '2026-11-01'`, w.member.id); n != 0 {
			t.Error("an empty plan was left")
		}
		if err := impl.RemoveKPIItem(ctx, e.db, w.member.id, november, "tasks_done"); err == nil || !strings.Contains(err.Error(), "has no tasks_done item in the plan for 2026-11") {
			t.Errorf("removing a missing item: %v", err)
		}
	})

	t.Run("refused", func(t *testing.T) {
		before := e.count(t, `SELECT count(*) FROM kpi_plan_items`)
		for _, tc := range []struct {
			in   impl.KPIItemInput
			want string
		}{
			{impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "calls", Plan: "1"}, `metric "calls" is not one of companies_added, tasks_done, deals_created, deal_sum, invoices_issued, invoice_sum, income`},
			{impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "income", Plan: "0"}, `plan "0" is not a decimal greater than 0 with at most two decimals`},
			{impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "income", Plan: "0.00"}, `plan "0.00" is not a decimal greater than 0`},
			{impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "income", Plan: "-5"}, `plan "-5" is not a decimal greater than 0`},
			{impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "income", Plan: "1.005"}, `plan "1.005" is not a decimal greater than 0 with at most two decimals`},
			{impl.KPIItemInput{UserID: w.member.id, Month: november, Metric: "income", Plan: "1e3"}, `plan "1e3" is not a decimal`},
			{impl.KPIItemInput{UserID: 987654321, Month: november, Metric: "income", Plan: "1"}, `no user 987654321`},
		} {
			if _, err := impl.SetKPIItem(ctx, e.db, tc.in); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%+v: %v, want %q", tc.in, err, tc.want)
			}
		}
		if _, err := impl.ListKPIItems(ctx, e.db, 987654321); err == nil || err.Error() != "no user 987654321" {
			t.Errorf("list of a missing user: %v", err)
		}
		if err := impl.RemoveKPIItem(ctx, e.db, 987654321, november, "income"); err == nil || err.Error() != "no user 987654321" {
			t.Errorf("remove from a missing user: %v", err)
		}
		if after := e.count(t, `SELECT count(*) FROM kpi_plan_items`); after != before {
			t.Errorf("%d items after refused sets, want %d", after, before)
		}
	})
}

// TestKPIFunctionsAnswerAsStatements holds the KPI dashboards' functions
// (crm_kpi_my and crm_kpi_team, db/functions) to their joined statements
// (impl/dashboards.go): on random records (kpiWriter) and plans, two servers
// over the same database, one with each, must give the same bytes to every
// caller (admins with and without a department, a head, members, a member
// without a department) for periods of a day, of a month, over two months
// and a quarter, with a default day (today) and refused ones, with and
// without department_id, in the account's time zone (read from kpi_daily),
// the same zone spelled otherwise and Tokyo's (counted from the records),
// under each combination of the report rights.
func TestKPIFunctionsAnswerAsStatements(t *testing.T) {
	e := newEnv(t)
	w, _ := randomDashWorld(t, e, "acme", 600)
	globex := newDashWorld(t, e, "globex")
	chief := newUser(t, e, w.world, "chief", impl.RoleAdmin, w.sales)
	loner := newUser(t, e, w.world, "loner", impl.RoleMember, 0)
	idle := newUser(t, e, w.world, "idle", impl.RoleMember, w.sales) // no plan at all
	gone := newUser(t, e, w.world, "gone", impl.RoleMember, w.sales) // a plan, but inactive
	users := []user{w.admin, w.head, w.member, w.peer, w.world.other, chief, loner, idle, gone}
	metrics := impl.KPIMetrics()
	for i, u := range users {
		if u == idle {
			continue
		}
		for m, month := range []string{"2026-10", "2026-11", "2026-12"} {
			for j, metric := range metrics {
				if (i+j+m)%3 != 0 {
					w.kpi(t, u, month, metric, fmt.Sprintf("%s %s", metric, month), fmt.Sprint(3+(i*j+m)%11))
				}
			}
		}
	}
	w.exec(t, `UPDATE users SET active = false WHERE id = $1`, gone.id)

	servers := statementsAndFunctions(t, e)
	periods := []string{"date_from=2026-11-01&date_to=2026-11-30", "date_from=2026-10-17&date_to=2026-11-15",
		"date_from=2026-11-20&date_to=2026-11-20", "date_from=2026-10-31&date_to=2026-11-01",
		"date_from=2026-10-01&date_to=2026-12-31", "date_from=2026-11-30&date_to=2026-12-01",
		"date_from=2026-09-01&date_to=2026-09-30", "date_from=2025-12-01&date_to=2026-12-01",
		"date_to=2026-11-15", "date_from=2026-11-10", "",
		// Refused: the end before the start, more than 366 days, and so with
		// date_to today by default.
		"date_from=2026-11-02&date_to=2026-11-01", "date_from=2025-11-01&date_to=2026-11-02",
		"date_from=2020-01-01", "date_from=2999-01-01"}
	departments := []string{"", fmt.Sprint(w.sales), fmt.Sprint(w.support), fmt.Sprint(globex.sales), "987654321"}
	same := func(t *testing.T, u user, target string) {
		t.Helper()
		sameReplies(t, servers, u, target)
	}
	for _, zone := range []any{nil, "europe/riga", "Asia/Tokyo"} {
		t.Run(fmt.Sprint("time zone ", zone), func(t *testing.T) {
			for _, u := range users[:len(users)-1] {
				w.exec(t, `UPDATE users SET time_zone = $2 WHERE id = $1`, u.id, zone)
				for _, rights := range [][2]bool{{true, true}, {true, false}, {false, true}} {
					w.rights(t, u, rights[0], rights[1])
					for _, p := range periods {
						if rights == [2]bool{true, true} {
							same(t, u, "/dashboard/kpi/my?"+p)
						}
						for _, d := range departments {
							if d != "" && rights != [2]bool{true, true} && p != "" {
								continue
							}
							target := "/dashboard/kpi/team?" + p
							if d != "" {
								target += "&department_id=" + d
							}
							same(t, u, target)
						}
					}
				}
			}
		})
	}
	// The other account's admin sees none of acme's.
	globex.rights(t, globex.admin, true, true)
	for _, p := range periods[:3] {
		same(t, globex.admin, "/dashboard/kpi/my?"+p)
		same(t, globex.admin, "/dashboard/kpi/team?"+p)
	}
}

// statementsAndFunctions returns two servers over e's database, as newEnv
// makes them: one that answers the dashboards with their joined statements
// (false) and one with their functions of db/functions (true).
func statementsAndFunctions(t *testing.T, e *env) map[bool]*env {
	t.Helper()
	servers := map[bool]*env{}
	for _, fast := range []bool{false, true} {
		other := *e
		var err error
		other.handler, err = impl.NewHandler(impl.Config{DB: e.server, TokenCacheTTL: -1, FastPath: &fast})
		if err != nil {
			t.Fatal(err)
		}
		servers[fast] = &other
	}
	return servers
}

// sameReplies fails unless both servers of statementsAndFunctions give u the
// same bytes for target, and neither a failure.
func sameReplies(t *testing.T, servers map[bool]*env, u user, target string) {
	t.Helper()
	replies := map[bool]reply{}
	for fast, s := range servers {
		replies[fast] = s.get(t, u.token, target)
		if r := replies[fast]; r.HTTPStatus != http.StatusOK || r.code() == "500" {
			t.Fatalf("%s (functions: %t): %d %s", target, fast, r.HTTPStatus, r.Raw)
		}
	}
	if !bytes.Equal(replies[false].Raw, replies[true].Raw) {
		t.Errorf("user %d, %s:\nstatements %s\nfunctions  %s", u.id, target, replies[false].Raw, replies[true].Raw)
	}
}

// TestDayDashboardsFunctionsAnswerAsStatements holds the day dashboards'
// functions (crm_dash_day and crm_dash_tasks, db/functions) to their joined
// statements (daySQL, myTasksSQL): on random records (kpiWriter) and random
// tasks with and without a finish, of two kinds sorted against their names,
// on live, deleted and uncontrolled counterparties, two servers over the same
// database, one with each, must give the same bytes to every caller (admins
// with and without a department, a head, members, a member without a
// department, the other account's admin) for days and periods around the
// records, with the default day (today) and refused periods, and for several
// overdue limits, in the account's time zone, the same zone spelled otherwise
// and Tokyo's.
func TestDayDashboardsFunctionsAnswerAsStatements(t *testing.T) {
	e := newEnv(t)
	w, k := randomDashWorld(t, e, "acme", 400)
	globex := newDashWorld(t, e, "globex")
	chief := newUser(t, e, w.world, "chief", impl.RoleAdmin, w.sales)
	loner := newUser(t, e, w.world, "loner", impl.RoleMember, 0)
	users := []user{w.admin, w.head, w.member, w.peer, w.world.other, chief, loner}
	// The meeting kind sorts before the call kind, whose name comes first.
	w.exec(t, `UPDATE directory_values SET sort = -1 WHERE account_id = $1 AND id = $2`, w.accountID, w.meeting)
	// Counterparties of the type that is not controlled, and deleted ones
	// with tasks, whose names the tasks dashboard still shows.
	companies := slices.Clone(k.anchors)
	for i := range 6 {
		typeID := w.other
		if i%2 == 0 {
			typeID = w.client
		}
		id := k.insertID(t, `INSERT INTO companies (account_id, name, type_id, user_id, created_at, deleted_at)
			VALUES ($1, $2, $3, $4, $5, CASE WHEN $6 THEN now() END) RETURNING id`,
			w.accountID, fmt.Sprint("Extra ", i), typeID, k.pick(append(slices.Clone(k.users), chief.id, loner.id)), k.moment(), i >= 4)
		companies = append(companies, id)
	}
	everyone := append(slices.Clone(k.users), chief.id, loner.id)
	for i := range 200 {
		start := k.moment()
		if i%8 == 0 { // on a boundary of the days in Riga
			start = k.midnights[k.rng.IntN(len(k.midnights))]
		}
		var finish, done *time.Time
		if k.rng.IntN(2) == 0 {
			at := start.Add(time.Duration(k.rng.IntN(72)) * time.Hour)
			finish = &at
		}
		status := 1
		if k.rng.IntN(3) == 0 {
			at := k.moment()
			done, status = &at, 2
		}
		kind := w.call
		if k.rng.IntN(2) == 0 {
			kind = w.meeting
		}
		k.insertID(t, `INSERT INTO tasks (account_id, company_id, note, type_id, status_id, user_id, assigner_id, date_start, date_finish, done_at, result)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`, w.accountID, k.pick(companies),
			fmt.Sprint("Task ", k.rng.IntN(1000)), kind, status, k.pick(everyone), k.pick(everyone), start, finish, done,
			[]string{"", "Called"}[k.rng.IntN(2)])
	}

	// A controlled counterparty whose one unfinished task is due at the end
	// of 20 November in Riga: not forgotten on that day, forgotten on the next.
	boundary := k.insertID(t, `INSERT INTO companies (account_id, name, type_id, user_id) VALUES ($1, 'Boundary', $2, $3) RETURNING id`,
		w.accountID, w.client, w.member.id)
	k.insertID(t, `INSERT INTO tasks (account_id, company_id, note, type_id, user_id, assigner_id, date_start)
		VALUES ($1, $2, 'Due at midnight', $3, $4, $4, '2026-11-21 00:00 Europe/Riga') RETURNING id`, w.accountID, boundary, w.call, w.member.id)
	// KPI plans of some metrics for some users, for my_kpi.
	for i, u := range []user{w.head, w.member, chief} {
		for m, month := range []string{"2026-10", "2026-11"} {
			for j, metric := range impl.KPIMetrics() {
				if (i+j+m)%2 == 0 {
					w.kpi(t, u, month, metric, metric, fmt.Sprint(2+i+j))
				}
			}
		}
	}

	servers := statementsAndFunctions(t, e)
	periods := []string{"date=2026-11-20", "date=2026-11-01", "date=2026-10-31&date_to=2026-11-02",
		"date=2026-11-19&date_to=2026-11-21", "date=2026-10-01&date_to=2026-12-31", "date=2026-09-01",
		"date_to=2026-12-31", "",
		// Refused: the end before the start, more than 366 days, and so with
		// date today by default.
		"date=2026-11-02&date_to=2026-11-01", "date=2025-11-01&date_to=2026-11-02", "date_to=2020-01-01", "date_to=2999-01-01"}
	tasks := []string{"date=2026-11-20", "date=2026-11-01&overdue_limit=1", "date=2026-11-30&overdue_limit=3",
		"date=2026-12-01&overdue_limit=100", "date=2026-10-30", "overdue_limit=5", ""}
	for _, zone := range []any{nil, "europe/riga", "Asia/Tokyo"} {
		t.Run(fmt.Sprint("time zone ", zone), func(t *testing.T) {
			for _, u := range users {
				w.exec(t, `UPDATE users SET time_zone = $2 WHERE id = $1`, u.id, zone)
				for _, p := range periods {
					sameReplies(t, servers, u, "/dashboard/my/day?"+p)
				}
				for _, p := range tasks {
					sameReplies(t, servers, u, "/dashboard/my/tasks?"+p)
				}
			}
		})
	}
	// The other account's admin sees none of acme's.
	for _, p := range periods[:3] {
		sameReplies(t, servers, globex.admin, "/dashboard/my/day?"+p)
		sameReplies(t, servers, globex.admin, "/dashboard/my/tasks?"+p)
	}
}
