package impl_test

import (
	"context"
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
