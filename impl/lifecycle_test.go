package impl_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/crmservice/crm/impl"
)

func TestTaskUpdate(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	company, _ := newCompany(t, e, w, "Contoso", w.member)
	task := parseID(t, expectOK(t, e.post(t, w.member.token, "/task/insert", map[string]any{
		"company_id": company, "note": "Call", "type_id": w.dirs[35][0], "date_start": "2026-11-20 10:00", "date_finish": "2026-11-20 11:00"})))
	state := func() string {
		var s string
		if err := e.db.Get(&s, `SELECT status_id || '|' || (done_at IS NOT NULL) || '|' || result || '|' || user_id || '|' ||
			to_char(date_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || '|' || coalesce(to_char(date_finish AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), '-')
			FROM tasks WHERE id = $1`, task); err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("OK finish with a result: done now, what the dashboard counts", func(t *testing.T) {
		mark := e.lastJournalID(t)
		expectOK(t, e.post(t, w.member.token, "/task/update", map[string]any{"id": task, "status_id": 2, "result": "Agreed"}))
		if got := state(); got != fmt.Sprintf("2|true|Agreed|%d|2026-11-20 08:00|2026-11-20 09:00", w.member.id) {
			t.Errorf("stored %s", got)
		}
		j := e.journalSince(t, mark)
		if len(j) != 1 || j[0].Action != "update" || fmt.Sprint(j[0].Changes["status_id"]) != "[1 2]" ||
			fmt.Sprint(j[0].Changes["result"]) != "[ Agreed]" || j[0].Changes["done_at"] == nil {
			t.Errorf("journal %+v", j)
		}
		day := decode[map[string]any](t, expectOK(t, e.get(t, w.member.token, "/dashboard/my/day")))
		if tasks := day["tasks"].(map[string]any); tasks["mine_done"] != 1.0 {
			t.Errorf("the day dashboard does not count it done: %v", tasks)
		}
		// Finishing again keeps the completion time and writes nothing.
		mark = e.lastJournalID(t)
		expectOK(t, e.post(t, w.member.token, "/task/update", map[string]any{"id": task, "status_id": 2, "result": "Agreed"}))
		e.expectJournal(t, mark)
	})

	t.Run("OK reopen, reschedule, reassign", func(t *testing.T) {
		expectOK(t, e.post(t, w.member.token, "/task/update", map[string]any{"id": task, "status_id": 1, "date_start": "2026-12-01 09:00",
			"date_finish": "", "user_id": w.peer.id}))
		if got := state(); got != fmt.Sprintf("1|false|Agreed|%d|2026-12-01 07:00|-", w.peer.id) {
			t.Errorf("stored %s", got)
		}
	})

	t.Run("OK date-times with seconds, as the task list returns them", func(t *testing.T) {
		expectOK(t, e.post(t, w.member.token, "/task/update", map[string]any{"id": task, "date_start": "2026-12-01 09:00:00",
			"date_finish": "2026-12-01 10:15:30"}))
		var finish string
		if err := e.db.Get(&finish, `SELECT to_char(date_finish AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') FROM tasks WHERE id = $1`, task); err != nil {
			t.Fatal(err)
		}
		if got := state(); got != fmt.Sprintf("1|false|Agreed|%d|2026-12-01 07:00|2026-12-01 08:15", w.peer.id) || finish != "2026-12-01 08:15:30" {
			t.Errorf("stored %s, finish %s", got, finish)
		}
		expectOK(t, e.post(t, w.member.token, "/task/update", map[string]any{"id": task, "date_finish": ""}))
	})

	t.Run("access levels", func(t *testing.T) {
		// The task's assignee is now the peer, its assigner the member: both see it, and so does the head.
		for _, c := range byRole(w, true, true, true, true, false) {
			t.Run(c.name, func(t *testing.T) {
				r := e.post(t, c.u.token, "/task/update", map[string]any{"id": task, "note": "By " + c.name})
				if c.want {
					expectOK(t, r)
					return
				}
				expectError(t, r, "404", fmt.Sprintf("task %d not found", task), "")
			})
		}
		expectError(t, e.post(t, beta.admin.token, "/task/update", map[string]any{"id": task, "note": "x"}), "404", "not found", "")
	})

	t.Run("bad input writes nothing", func(t *testing.T) {
		before := state() + fmt.Sprint(e.lastJournalID(t))
		for name, c := range map[string]struct {
			body map[string]any
			msg  string
		}{
			"finish before start": {map[string]any{"id": task, "date_finish": "2026-11-30 10:00"}, "date_finish: must not be before date_start"},
			"no such date":        {map[string]any{"id": task, "date_start": "2026-02-30 10:00"}, "date_start"},
			"another date form": {map[string]any{"id": task, "date_finish": "2026-12-01T10:00:00"},
				`request body: field "date_finish": not a date and time: YYYY-MM-DD HH:MM, YYYY-MM-DD HH:MM:SS or "" (no deadline)`},
			"unknown kind": {map[string]any{"id": task, "type_id": 999999999}, "type_id"},
			"unknown user": {map[string]any{"id": task, "user_id": beta.admin.id}, "user_id"},
			"status 3":     {map[string]any{"id": task, "status_id": 3}, "status_id"},
			"only id":      {map[string]any{"id": task}, "request body"},
		} {
			t.Run(name, func(t *testing.T) {
				expectError(t, e.post(t, w.admin.token, "/task/update", c.body), "400", c.msg, "")
			})
		}
		if after := state() + fmt.Sprint(e.lastJournalID(t)); after != before {
			t.Errorf("changed: %s → %s", before, after)
		}
	})
}

func TestCompanyDelete(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	company := insertCompany(t, e, w.member.token, map[string]any{"name": "Contoso", "type_id": w.dirs[9][0], "user_id": w.member.id,
		"Emails": []any{map[string]any{"email": "info@contoso.example"}}})
	deal := newDeal(t, e, w, company, w.member, nil)
	task := parseID(t, expectOK(t, e.post(t, w.member.token, "/task/insert", map[string]any{"company_id": company, "note": "x", "type_id": w.dirs[35][0]})))

	t.Run("access levels", func(t *testing.T) {
		for _, who := range []role{w.roles()[3], w.roles()[4]} {
			expectError(t, e.post(t, who.u.token, "/company/delete", map[string]any{"id": company}), "404", fmt.Sprintf("counterparty %d not found", company), "")
		}
		expectError(t, e.post(t, beta.admin.token, "/company/delete", map[string]any{"id": company}), "404", "not found", "")
		for _, who := range w.roles()[:3] { // admin, head, member may: each deletes one of its own
			c := plainCompany(t, e, w, w.member, "Deletable by "+who.name)
			expectOK(t, e.post(t, who.u.token, "/company/delete", map[string]any{"id": c}))
		}
	})

	t.Run("OK soft delete: card Error, lists and the duplicate check skip it, its records stay", func(t *testing.T) {
		mark := e.lastJournalID(t)
		expectOK(t, e.post(t, w.member.token, "/company/delete", map[string]any{"id": company}))
		e.expectJournal(t, mark, journalRow{UserID: w.member.id, Entity: "company", RecordID: company, Action: "delete",
			Changes: map[string]any{"name": "Contoso"}})
		r := e.get(t, w.member.token, fmt.Sprintf("/company/get?id=%d", company))
		if r.Status != "Error" || r.code() != "404" {
			t.Errorf("card %s", r.Raw)
		}
		list := e.post(t, w.admin.token, fmt.Sprintf("/common/list/paging/1?columns=id&id=%d", company), nil)
		if list.Value != "[]" {
			t.Errorf("list %s", list.Raw)
		}
		dup := e.post(t, w.admin.token, "/company/insert?check_duplicates=true", map[string]any{"name": "Contoso again", "type_id": w.dirs[9][0],
			"user_id": w.admin.id, "Emails": []any{map[string]any{"email": "INFO@contoso.example"}}})
		parseID(t, expectOK(t, dup))
		if n := e.count(t, `SELECT count(*) FROM deals WHERE id = $1`, deal) + e.count(t, `SELECT count(*) FROM tasks WHERE id = $1`, task); n != 2 {
			t.Error("its deal or task is gone")
		}
		expectOK(t, e.post(t, w.member.token, "/task/update", map[string]any{"id": task, "status_id": 2}))
		expectError(t, e.post(t, w.member.token, "/company/delete", map[string]any{"id": company}), "404", "not found", "")
		expectError(t, e.post(t, w.member.token, "/task/insert", map[string]any{"company_id": company, "note": "x", "type_id": w.dirs[35][0]}), "404", "not found", "")
	})
}

func TestDocumentInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	company, contact := newCompany(t, e, w, "Contoso", w.member)
	deal := newDeal(t, e, w, company, w.member, nil)
	other, _ := newCompany(t, e, w, "Fabrikam", w.member)

	t.Run("OK every field; an invoice counts on the dashboard", func(t *testing.T) {
		mark := e.lastJournalID(t)
		id := parseID(t, expectOK(t, e.post(t, w.member.token, "/document/insert", map[string]any{
			"company_id": company, "type_id": w.dirs[44][0], "status_id": w.dirs[45][1], "date": "2026-11-20", "number": "INV-1",
			"sum": 1234.565, "note": "n", "deal_id": deal, "contact_id": contact, "date_expire": "2026-12-20", "external_code": "E1", "tags": "a, b"})))
		docs := decode[[]map[string]any](t, e.get(t, w.member.token, fmt.Sprintf("/document/list?company_id=%d", company)).Value)
		if len(docs) != 1 || docs[0]["id"] != float64(id) || docs[0]["sum"] != 1234.57 || docs[0]["number"] != "INV-1" ||
			docs[0]["deal_id"] != float64(deal) || docs[0]["date_expire"] != "2026-12-20" || docs[0]["tags"] != "a,b" || docs[0]["user_id"] != float64(w.member.id) {
			t.Errorf("list %v", docs)
		}
		j := e.journalSince(t, mark)
		if len(j) != 1 || j[0].Entity != "document" || j[0].Changes["sum"] != "1234.57" {
			t.Errorf("journal %+v", j)
		}
		day := decode[map[string]any](t, expectOK(t, e.get(t, w.member.token, "/dashboard/my/day?date=2026-11-20")))
		if inv := day["invoices_issued"].(map[string]any); inv["mine"] != 1.0 {
			t.Errorf("invoices %v", inv)
		}
	})

	t.Run("access levels", func(t *testing.T) {
		for _, c := range w.roles() {
			r := e.post(t, c.u.token, "/document/insert", map[string]any{"company_id": company, "type_id": w.dirs[44][1], "date": "2026-11-21"})
			if c.visible {
				parseID(t, expectOK(t, r))
			} else {
				expectError(t, r, "404", fmt.Sprintf("counterparty %d not found", company), "")
			}
		}
		expectError(t, e.post(t, beta.admin.token, "/document/insert", map[string]any{"company_id": company, "type_id": beta.dirs[44][0], "date": "2026-11-21"}),
			"404", "not found", "")
	})

	t.Run("bad input writes nothing", func(t *testing.T) {
		before := e.rowCounts(t, w.accountID, "documents", "journal")
		for name, c := range map[string]struct {
			body map[string]any
			msg  string
		}{
			"type of another account": {map[string]any{"company_id": company, "type_id": beta.dirs[44][0], "date": "2026-11-21"}, "type_id: no such value in directory 44"},
			"deal of another":         {map[string]any{"company_id": other, "type_id": w.dirs[44][0], "date": "2026-11-21", "deal_id": deal}, "deal_id"},
			"contact of another":      {map[string]any{"company_id": other, "type_id": w.dirs[44][0], "date": "2026-11-21", "contact_id": contact}, "contact_id"},
			"expires before":          {map[string]any{"company_id": company, "type_id": w.dirs[44][0], "date": "2026-11-21", "date_expire": "2026-11-01"}, "date_expire"},
			"unknown user":            {map[string]any{"company_id": company, "type_id": w.dirs[44][0], "date": "2026-11-21", "user_id": beta.admin.id}, "user_id"},
			"no date":                 {map[string]any{"company_id": company, "type_id": w.dirs[44][0]}, "date"},
		} {
			t.Run(name, func(t *testing.T) {
				expectError(t, e.post(t, w.admin.token, "/document/insert", c.body), "400", c.msg, "")
			})
		}
		if after := e.rowCounts(t, w.accountID, "documents", "journal"); after != before {
			t.Error("a refused request wrote rows")
		}
	})
}

func TestFinanceInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	company, _ := newCompany(t, e, w, "Contoso", w.member)
	deal := newDeal(t, e, w, company, w.member, nil)
	account := func(wd *world, name, currency string) int64 {
		id, err := impl.CreateMoneyAccount(context.Background(), e.db, wd.accountID, name, currency)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	eur, usd := account(w, "Bank EUR", "EUR"), account(w, "Bank USD", "USD")
	betaEUR := account(beta, "Beta EUR", "EUR")

	t.Run("OK accounts list", func(t *testing.T) {
		for _, c := range w.roles() {
			list := decode[[]map[string]any](t, expectQuick(t, e.get(t, c.u.token, "/finance/accounts")))
			if len(list) != 2 || list[0]["name"] != "Bank EUR" || list[1]["currency"] != "USD" {
				t.Errorf("%s: %v", c.name, list)
			}
		}
	})

	t.Run("OK income of a counterparty; a transfer the dashboard does not count", func(t *testing.T) {
		mark := e.lastJournalID(t)
		ids := decode[[]int64](t, expectOK(t, e.post(t, w.member.token, "/finance/insert", map[string]any{
			"date": "2026-11-20", "direction_id": 1, "account_id": eur, "sum": 100.005, "company_id": company, "deal_id": deal,
			"category_id": w.dirs[47][0], "type_id": w.dirs[46][0], "tags": "x"})))
		if len(ids) != 1 {
			t.Fatalf("ids %v", ids)
		}
		moves := decode[[]map[string]any](t, e.get(t, w.member.token, fmt.Sprintf("/finance/list?company_id=%d", company)).Value)
		if len(moves) != 1 || moves[0]["sum"] != 100.01 || moves[0]["sum_currency"] != 100.01 || moves[0]["direction_id"] != 1.0 || moves[0]["currency"] != "EUR" {
			t.Errorf("list %v", moves)
		}
		tr := decode[[]int64](t, expectOK(t, e.post(t, w.member.token, "/finance/insert", map[string]any{
			"date": "2026-11-20", "account_id": eur, "to_account_id": usd, "sum": 50, "to_sum_currency": 54.2})))
		if len(tr) != 2 {
			t.Fatalf("transfer ids %v", tr)
		}
		var rows []string
		if err := e.db.Select(&rows, `SELECT direction || '|' || money_account_id || '|' || sum || '|' || sum_currency || '|' || is_transfer
			FROM money_movements WHERE id = ANY ($1) ORDER BY id`, "{"+fmt.Sprint(tr[0])+","+fmt.Sprint(tr[1])+"}"); err != nil {
			t.Fatal(err)
		}
		if want := []string{fmt.Sprintf("2|%d|50.00|50.00|true", eur), fmt.Sprintf("1|%d|50.00|54.20|true", usd)}; !slices.Equal(rows, want) {
			t.Errorf("transfer %v, want %v", rows, want)
		}
		if j := e.journalSince(t, mark); len(j) != 3 || j[2].Entity != "money_movement" {
			t.Errorf("journal %+v", j)
		}
		day := decode[map[string]any](t, expectOK(t, e.get(t, w.member.token, "/dashboard/my/day?date=2026-11-20")))
		if m := day["money"].(map[string]any); m["income_count"] != 1.0 || m["expense_count"] != 0.0 {
			t.Errorf("money %v", m)
		}
	})

	t.Run("access levels", func(t *testing.T) {
		for _, c := range w.roles() {
			r := e.post(t, c.u.token, "/finance/insert", map[string]any{"date": "2026-11-21", "direction_id": 2, "account_id": eur, "sum": 1, "company_id": company})
			if c.visible {
				expectOK(t, r)
			} else {
				expectError(t, r, "404", fmt.Sprintf("counterparty %d not found", company), "")
			}
		}
		expectError(t, e.post(t, beta.admin.token, "/finance/insert", map[string]any{"date": "2026-11-21", "direction_id": 2, "account_id": eur, "sum": 1}),
			"400", "account_id: no such active money account", "")
	})

	t.Run("bad input writes nothing", func(t *testing.T) {
		before := e.rowCounts(t, w.accountID, "money_movements", "journal")
		for name, c := range map[string]struct {
			body map[string]any
			msg  string
		}{
			"no direction":          {map[string]any{"date": "2026-11-21", "account_id": eur, "sum": 1}, "direction_id: required"},
			"foreign currency":      {map[string]any{"date": "2026-11-21", "direction_id": 1, "account_id": usd, "sum": 1}, "sum_currency: required, money account"},
			"unequal base currency": {map[string]any{"date": "2026-11-21", "direction_id": 1, "account_id": eur, "sum": 1, "sum_currency": 2}, "sum_currency: must equal sum"},
			"another account's":     {map[string]any{"date": "2026-11-21", "direction_id": 1, "account_id": betaEUR, "sum": 1}, "account_id: no such active"},
			"transfer to itself":    {map[string]any{"date": "2026-11-21", "account_id": eur, "to_account_id": eur, "sum": 1}, "to_account_id"},
			"transfer with company": {map[string]any{"date": "2026-11-21", "account_id": eur, "to_account_id": usd, "sum": 1, "to_sum_currency": 1, "company_id": company}, "not allowed with to_account_id"},
			"direction of transfer": {map[string]any{"date": "2026-11-21", "account_id": eur, "to_account_id": usd, "sum": 1, "direction_id": 1}, "direction_id: not allowed"},
			"zero sum":              {map[string]any{"date": "2026-11-21", "direction_id": 1, "account_id": eur, "sum": 0}, "sum"},
			"unknown category":      {map[string]any{"date": "2026-11-21", "direction_id": 1, "account_id": eur, "sum": 1, "category_id": beta.dirs[47][0]}, "category_id"},
		} {
			t.Run(name, func(t *testing.T) {
				expectError(t, e.post(t, w.admin.token, "/finance/insert", c.body), "400", c.msg, "")
			})
		}
		if after := e.rowCounts(t, w.accountID, "money_movements", "journal"); after != before {
			t.Error("a refused request wrote rows")
		}
	})
}
