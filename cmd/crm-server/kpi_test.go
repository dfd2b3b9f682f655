package main

import (
	"context"
	"strings"
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

	account := mustCommand(t, "account", "create", "-name", "Acme", "-currency", "EUR", "-tz", "Europe/Riga")
	user := mustCommand(t, "user", "create", "-account", account, "-name", "Mia Member", "-login", "mia@acme.example")

	item := mustCommand(t, "kpi", "set", "-user", user, "-month", "2026-11", "-metric", "income", "-plan", "12000.50")
	mustCommand(t, "kpi", "set", "-user", user, "-month", "2026-11", "-metric", "tasks_done", "-plan", "30", "-name", "Calls")
	mustCommand(t, "kpi", "set", "-user", user, "-month", "2026-10", "-metric", "deal_sum", "-plan", "5000")
	if again := mustCommand(t, "kpi", "set", "-user", user, "-month", "2026-11", "-metric", "income", "-plan", "13000"); again != item {
		t.Errorf("setting an item again printed %s, want its id %s", again, item)
	}
	var n int
	if err := pool.Get(&n, `SELECT count(*) FROM kpi_plan_items WHERE id = $1 AND plan_value = 13000 AND name = 'Income'`, item); err != nil || n != 1 {
		t.Fatalf("item not stored (%v)", err)
	}
	want := "2026-11\ttasks_done\tcount\t30.00\tCalls\n2026-11\tincome\tamount\t13000.00\tIncome\n2026-10\tdeal_sum\tamount\t5000.00\tDeal volume"
	if got := mustCommand(t, "kpi", "list", "-user", user); got != want {
		t.Errorf("kpi list printed\n%s\nwant\n%s", got, want)
	}
	mustCommand(t, "kpi", "remove", "-user", user, "-month", "2026-10", "-metric", "deal_sum")
	if err := pool.Get(&n, `SELECT count(*) FROM kpi_plans WHERE user_id = $1`, user); err != nil || n != 1 {
		t.Errorf("%d plans after removing October's only item, want 1 (%v)", n, err)
	}

	for _, args := range [][]string{
		{"kpi", "set", "-user", user, "-month", "2026-13", "-metric", "income", "-plan", "1"},
		{"kpi", "set", "-user", user, "-month", "November", "-metric", "income", "-plan", "1"},
		{"kpi", "set", "-user", user, "-month", "2026-11", "-metric", "visits", "-plan", "1"},
		{"kpi", "set", "-user", user, "-month", "2026-11", "-metric", "income", "-plan", "0"},
		{"kpi", "set", "-user", "987654321", "-month", "2026-11", "-metric", "income", "-plan", "1"},
		{"kpi", "remove", "-user", user, "-month", "2026-10", "-metric", "deal_sum"},
		{"kpi", "list", "-user", "987654321"},
		{"kpi", "frobnicate"},
	} {
		if _, err := command(t, args...); err == nil {
			t.Errorf("crm-server %s succeeded", strings.Join(args, " "))
		}
	}
}
