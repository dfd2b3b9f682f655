package impl_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/crmservice/crm/impl"
)

func TestInactiveUserRefused(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	company, _ := newCompany(t, e, w, "Alpha", w.member)
	deal := newDeal(t, e, w, company, w.member, nil)
	task := parseID(t, expectOK(t, e.post(t, w.admin.token, "/task/insert", map[string]any{"company_id": company, "note": "Call", "type_id": w.dirs[35][0]})))
	taken := []map[string]any{{"email": "taken@acme.example"}}
	expectOK(t, e.post(t, w.admin.token, "/company/insert", map[string]any{"name": "Gamma", "type_id": w.dirs[9][0], "user_id": w.member.id, "Emails": taken}))
	if err := impl.SetUserActive(context.Background(), e.db, w.peer.id, false); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("user_id: user %d is deactivated", w.peer.id)
	journal := e.count(t, `SELECT count(*) FROM journal WHERE account_id = $1`, w.accountID)
	for _, c := range []struct {
		name, path string
		body       map[string]any
		value      string
	}{
		{"counterparty insert", "/company/insert", map[string]any{"name": "Beta", "type_id": w.dirs[9][0], "user_id": w.peer.id}, ""},
		// The check is part of the insert's one statement: it comes before the duplicate's 409.
		{"counterparty insert with a duplicate e-mail", "/company/insert?check_duplicates=true",
			map[string]any{"name": "Beta", "type_id": w.dirs[9][0], "user_id": w.peer.id, "Emails": taken}, ""},
		// With contact persons the insert takes the general path, which checks apart.
		{"counterparty insert with a contact person", "/company/insert",
			map[string]any{"name": "Beta", "type_id": w.dirs[9][0], "user_id": w.peer.id, "Contacts": []map[string]any{{"first_name": "Ann"}}}, ""},
		{"counterparty update", "/company/update", map[string]any{"id": company, "user_id": w.peer.id}, "0"},
		{"deal insert", "/deal/insert", map[string]any{"name": "D", "company_id": company, "type_id": w.dirs[40][0], "status_id": w.dirs[41][0],
			"user_id": w.peer.id, "date_start": "2026-11-01", "date_finish": "2026-12-15"}, ""},
		{"deal update", "/deal/update", map[string]any{"id": deal, "user_id": w.peer.id}, "0"},
		{"task insert (assignee)", "/task/insert", map[string]any{"company_id": company, "note": "Call", "type_id": w.dirs[35][0], "user_id": w.peer.id}, ""},
		{"task update (assignee)", "/task/update", map[string]any{"id": task, "user_id": w.peer.id}, ""},
		{"document insert", "/document/insert", map[string]any{"company_id": company, "type_id": w.dirs[44][1], "date": "2026-11-21", "user_id": w.peer.id}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, e.post(t, w.admin.token, c.path, c.body), "400", want, c.value)
		})
	}
	if n := e.count(t, `SELECT count(*) FROM journal WHERE account_id = $1`, w.accountID); n != journal {
		t.Errorf("refused writes were journaled: %d rows, want %d", n, journal)
	}
	if n := e.count(t, `SELECT count(*) FROM companies WHERE account_id = $1 AND name = 'Beta'`, w.accountID); n != 0 {
		t.Errorf("%d counterparties of the refused inserts", n)
	}
	for _, table := range []string{"companies", "deals", "tasks", "documents"} {
		if n := e.count(t, `SELECT count(*) FROM `+table+` WHERE account_id = $1 AND user_id = $2`, w.accountID, w.peer.id); n != 0 {
			t.Errorf("%s: %d rows of the deactivated user", table, n)
		}
	}
	t.Run("an active user is accepted", func(t *testing.T) {
		expectOK(t, e.post(t, w.admin.token, "/deal/update", map[string]any{"id": deal, "user_id": w.head.id}))
	})
}
