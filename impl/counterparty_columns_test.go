package impl_test

import (
	"fmt"
	"testing"
)

// TestCounterpartyColumns checks the rule for the counterparty columns of a
// record the caller sees whose counterparty they may not open: company_id
// stays, the other company_* columns are those of no counterparty. Every
// module of the universal list with company_* columns, and the quick lists.
func TestCounterpartyColumns(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	// The peer's counterparty, with records of the member: the member sees the
	// records, not the counterparty.
	company := e.id(t, `INSERT INTO companies (account_id, name, type_id, user_id, tax_id, url, city)
		VALUES ($1, 'Hidden Ltd', $2, $3, '4040', 'https://hidden.example', 'Riga') RETURNING id`, w.accountID, w.dirs[9][0], w.peer.id)
	deal := e.id(t, `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish, sum)
		VALUES ($1, 'Chairs', $2, $3, $4, $5, '2026-03-01', '2026-03-31', 100) RETURNING id`,
		w.accountID, company, w.dirs[40][0], w.dirs[41][0], w.member.id)
	task := e.id(t, `INSERT INTO tasks (account_id, company_id, note, type_id, user_id, assigner_id, date_start)
		VALUES ($1, $2, 'Call', $3, $4, $4, '2026-03-05 10:00') RETURNING id`, w.accountID, company, w.dirs[35][0], w.member.id)
	doc := newDocument(t, e, w, company, 0, w.member, "INV-1", "2026-03-06")
	goods := newGoods(t, e, w, "Chair", "CH-1", "10", "1", "0", true)
	e.exec(t, `INSERT INTO document_goods (account_id, document_id, goods_id, description, qnt, price) VALUES ($1, $2, $3, 'Chair', 1, 10)`,
		w.accountID, doc, goods)
	move := newMovement(t, e, w, newMoneyAccount(t, e, w, "Main", "EUR"), company, 0, w.member, "2026-03-07", "50", 1)
	box := e.id(t, `INSERT INTO mail_accounts (account_id, user_id, address) VALUES ($1, $2, 'member@acme.example') RETURNING id`, w.accountID, w.member.id)
	mail := e.id(t, `INSERT INTO mail_messages (account_id, mail_account_id, folder, from_address, to_address, subject, company_id, date, body)
		VALUES ($1, $2, 1, 'info@hidden.example', 'member@acme.example', 'Hi', $3, now(), '<p>hi</p>') RETURNING id`, w.accountID, box, company)

	for _, c := range []struct {
		module  int
		id      int64
		columns string
		hidden  map[string]any // the company_* columns as the member sees them
		shown   map[string]any // as the peer (who owns the counterparty) or the admin sees them
	}{
		{2, task, "id,company_id,company_name", map[string]any{"company_name": ""}, map[string]any{"company_name": "Hidden Ltd"}},
		{4, doc, "id,company_id,company_name", map[string]any{"company_name": ""}, map[string]any{"company_name": "Hidden Ltd"}},
		{5, move, "id,company_id,company_name", map[string]any{"company_name": ""}, map[string]any{"company_name": "Hidden Ltd"}},
		{6, doc, "document_id,company_id,company_name", map[string]any{"company_name": ""}, map[string]any{"company_name": "Hidden Ltd"}},
		{20, deal, "id,company_id,company_name,company_tax_id,company_url,company_city",
			map[string]any{"company_name": "", "company_tax_id": nil, "company_url": nil, "company_city": nil},
			map[string]any{"company_name": "Hidden Ltd", "company_tax_id": "4040", "company_url": "https://hidden.example", "company_city": "Riga"}},
		{24, mail, "id,company_id,company_name", map[string]any{"company_name": ""}, map[string]any{"company_name": "Hidden Ltd"}},
	} {
		t.Run(fmt.Sprint("module ", c.module), func(t *testing.T) {
			check := func(token string, want map[string]any) {
				t.Helper()
				query := "columns=" + c.columns
				if c.module == 24 && token == w.admin.token {
					query += fmt.Sprintf("&user_ids=%d", w.member.id)
				}
				r, rows := e.list(t, token, c.module, query)
				if r.Status != "success" || len(rows) != 1 {
					t.Fatalf("want one row: %s", r.Raw)
				}
				if rows[0]["company_id"] != float64(company) {
					t.Errorf("company_id %v, want %d (the record's own)", rows[0]["company_id"], company)
				}
				for k, v := range want {
					if rows[0][k] != v {
						t.Errorf("%s: %#v, want %#v", k, rows[0][k], v)
					}
				}
			}
			check(w.member.token, c.hidden)
			check(w.admin.token, c.shown)
		})
	}

	t.Run("quick lists", func(t *testing.T) {
		for _, target := range []string{"/task/list", "/document/list", "/finance/list"} {
			for _, who := range []struct {
				token, name string
			}{{w.member.token, ""}, {w.admin.token, "Hidden Ltd"}} {
				r := e.get(t, who.token, fmt.Sprintf("%s?company_id=%d", target, company))
				if r.Status != "success" {
					t.Fatalf("%s: %s", target, r.Raw)
				}
				rows := decode[[]map[string]any](t, r.Value)
				if len(rows) != 1 || rows[0]["company_name"] != who.name || rows[0]["company_id"] != float64(company) {
					t.Errorf("%s: %v, want company_name %q", target, rows, who.name)
				}
			}
		}
	})
	t.Run("a filter on a hidden column does not reveal it", func(t *testing.T) {
		r, rows := e.list(t, w.member.token, 20, "columns=id&company_id="+fmt.Sprint(company))
		if r.Status != "success" || len(rows) != 1 {
			t.Fatalf("the member's deal by company_id: %s", r.Raw)
		}
	})
}

// TestContactPersonColumns checks the rule for the contact person of a record
// the caller sees: the contact person shows with its counterparty, so the mail
// list's contact is "" where the caller may not open the counterparty, as
// company_name is, and contact_id stays, as company_id does. Per role: the
// admin sees every counterparty; the head of the member's department those of
// the department; the member their own.
func TestContactPersonColumns(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	// A counterparty of the other department's member, and one of the member.
	hidden := e.id(t, `INSERT INTO companies (account_id, name, type_id, user_id) VALUES ($1, 'Hidden Ltd', $2, $3) RETURNING id`,
		w.accountID, w.dirs[9][0], w.other.id)
	own := e.id(t, `INSERT INTO companies (account_id, name, type_id, user_id) VALUES ($1, 'Own Ltd', $2, $3) RETURNING id`,
		w.accountID, w.dirs[9][0], w.member.id)
	ozols := e.id(t, `INSERT INTO contacts (account_id, company_id, first_name, last_name) VALUES ($1, $2, 'Janis', 'Ozols') RETURNING id`,
		w.accountID, hidden)
	berzins := e.id(t, `INSERT INTO contacts (account_id, company_id, first_name, last_name) VALUES ($1, $2, 'Peteris', 'Berzins') RETURNING id`,
		w.accountID, own)
	// Received mail is linked by address to any counterparty of the account,
	// seen or not: the member's mailbox holds a message of each.
	box := e.id(t, `INSERT INTO mail_accounts (account_id, user_id, address) VALUES ($1, $2, 'member@acme.example') RETURNING id`, w.accountID, w.member.id)
	mail := func(company, contact int64, subject string) int64 {
		return e.id(t, `INSERT INTO mail_messages (account_id, mail_account_id, folder, from_address, to_address, subject, company_id, contact_id, date)
			VALUES ($1, $2, 1, 'x@example.com', 'member@acme.example', $3, $4, $5, now()) RETURNING id`, w.accountID, box, subject, company, contact)
	}
	hiddenMail, ownMail := mail(hidden, ozols, "From Hidden"), mail(own, berzins, "From Own")
	// A task of the member with the hidden counterparty's contact person: its
	// contact_id is the task's own field.
	task := e.id(t, `INSERT INTO tasks (account_id, company_id, contact_id, note, type_id, user_id, assigner_id, date_start)
		VALUES ($1, $2, $3, 'Call', $4, $5, $5, '2026-03-05 10:00') RETURNING id`, w.accountID, hidden, ozols, w.dirs[35][0], w.member.id)

	type row struct{ companyName, contact string }
	for _, c := range byRole(w,
		map[int64]row{hiddenMail: {"Hidden Ltd", "Ozols Janis"}, ownMail: {"Own Ltd", "Berzins Peteris"}},
		map[int64]row{hiddenMail: {"", ""}, ownMail: {"Own Ltd", "Berzins Peteris"}},
		map[int64]row{hiddenMail: {"", ""}, ownMail: {"Own Ltd", "Berzins Peteris"}},
		nil, nil)[:3] {
		t.Run(c.name, func(t *testing.T) {
			query := "columns=id,company_id,company_name,contact_id,contact&user_ids=" + fmt.Sprint(w.member.id)
			r, rows := e.list(t, c.u.token, 24, query)
			if r.Status != "success" || len(rows) != 2 {
				t.Fatalf("want the member's two messages: %s", r.Raw)
			}
			for _, got := range rows {
				id := int64(got["id"].(float64))
				want, ok := c.want[id]
				company, contact := own, berzins
				if id == hiddenMail {
					company, contact = hidden, ozols
				}
				if !ok || got["company_name"] != want.companyName || got["contact"] != want.contact ||
					got["company_id"] != float64(company) || got["contact_id"] != float64(contact) {
					t.Errorf("message %d: %v, want company_name %q, contact %q, company_id %d, contact_id %d",
						id, got, want.companyName, want.contact, company, contact)
				}
			}
			// The task keeps its contact_id for every role that sees it.
			r, rows = e.list(t, c.u.token, 2, "columns=id,contact_id&user_ids="+fmt.Sprint(w.member.id))
			if r.Status != "success" || len(rows) != 1 || rows[0]["id"] != float64(task) || rows[0]["contact_id"] != float64(ozols) {
				t.Errorf("the task's contact_id: %s", r.Raw)
			}
		})
	}
}
