package impl_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Fixtures of tasks, deals, goods, documents and money movements. Records the
// API cannot write (goods catalogue, documents, money) are inserted in SQL.

// newCompany inserts a counterparty with one contact person, responsible user
// owner, and returns both ids.
func newCompany(t *testing.T, e *env, w *world, name string, owner user) (companyID, contactID int64) {
	t.Helper()
	companyID = insertCompany(t, e, w.admin.token, map[string]any{"name": name, "type_id": w.dirs[9][0], "user_id": owner.id,
		"Contacts": []any{map[string]any{"first_name": "Contact of " + name}}})
	if err := e.db.Get(&contactID, `SELECT id FROM contacts WHERE company_id = $1`, companyID); err != nil {
		t.Fatal(err)
	}
	return companyID, contactID
}

// newGoods adds an item to the catalogue of the world's account.
func newGoods(t *testing.T, e *env, w *world, name, code, price, qnt, vat string, active bool) int64 {
	t.Helper()
	var id int64
	err := e.db.Get(&id, `INSERT INTO goods (account_id, name, code, price, qnt, vat, active)
		VALUES ($1, $2, $3, $4::numeric, $5::numeric, $6::numeric, $7) RETURNING id`, w.accountID, name, code, price, qnt, vat, active)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// newDeal inserts a deal of the counterparty through the API (as the admin) and
// returns its id.
func newDeal(t *testing.T, e *env, w *world, companyID int64, owner user, extra map[string]any) int64 {
	t.Helper()
	body := map[string]any{"name": "Deal", "company_id": companyID, "type_id": w.dirs[40][0], "status_id": w.dirs[41][0],
		"user_id": owner.id, "date_start": "2026-11-01", "date_finish": "2026-12-15"}
	for k, v := range extra {
		body[k] = v
	}
	return parseID(t, expectOK(t, e.post(t, w.admin.token, "/deal/insert", body)))
}

func parseID(t *testing.T, v string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		t.Fatalf("value %q is not an id", v)
	}
	return id
}

// newDocument inserts a document in SQL; dealID 0 means none.
func newDocument(t *testing.T, e *env, w *world, companyID, dealID int64, owner user, number, date string) int64 {
	t.Helper()
	var deal *int64
	if dealID != 0 {
		deal = &dealID
	}
	var id int64
	err := e.db.Get(&id, `INSERT INTO documents (account_id, number, date, sum, type_id, status_id, user_id, company_id, deal_id,
		date_expire, external_code, tags, note)
		VALUES ($1, $2, $3::date, 2500.50, $4, $5, $6, $7, $8, $3::date + 14, 'ERP-1', '{prepayment,urgent}', 'Pay soon')
		RETURNING id`, w.accountID, number, date, w.dirs[44][0], w.dirs[45][1], owner.id, companyID, deal)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// newMoneyAccount adds a money account in the currency.
func newMoneyAccount(t *testing.T, e *env, w *world, name, currency string) int64 {
	t.Helper()
	var id int64
	if err := e.db.Get(&id, `INSERT INTO money_accounts (account_id, name, currency) VALUES ($1, $2, $3) RETURNING id`,
		w.accountID, name, currency); err != nil {
		t.Fatal(err)
	}
	return id
}

// newMovement inserts a money movement in SQL; companyID or dealID 0 means none.
func newMovement(t *testing.T, e *env, w *world, moneyAccount, companyID, dealID int64, owner user, date, sum string, direction int) int64 {
	t.Helper()
	null := func(id int64) *int64 {
		if id == 0 {
			return nil
		}
		return &id
	}
	var id int64
	err := e.db.Get(&id, `INSERT INTO money_movements (account_id, date, sum, sum_currency, direction, type_id, category_id,
		money_account_id, note, user_id, company_id, deal_id, tags)
		VALUES ($1, $2::date, $3::numeric, $3::numeric * 2, $4, $5, $6, $7, 'Payment', $8, $9, $10, '{one-off}')
		RETURNING id`, w.accountID, date, sum, direction, w.dirs[46][0], w.dirs[47][0], moneyAccount, owner.id,
		null(companyID), null(dealID))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// decodeExact unmarshals a reply's value keeping numbers as their text, so that
// tests see the exact decimals the server wrote.
func decodeExact[T any](t *testing.T, value string) T {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(value))
	dec.UseNumber()
	var v T
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode value: %v\n%s", err, value)
	}
	return v
}

// rowCounts sums the rows of the account in the tables, to show that a refused
// request wrote nothing (only the account's: other packages' tests write the
// same tables of the shared database of make test-citus at the same time).
func (e *env) rowCounts(t *testing.T, account int64, tables ...string) int {
	t.Helper()
	parts := make([]string, len(tables))
	for i, tb := range tables {
		parts[i] = fmt.Sprintf("(SELECT count(*) FROM %s WHERE account_id = $1)", tb)
	}
	return e.count(t, "SELECT "+strings.Join(parts, " + "), account)
}

// journalRows returns the actions of the journal rows of a record.
func (e *env) journalRows(t *testing.T, module int, entity string, recordID int64) []string {
	t.Helper()
	var rows []string
	if err := e.db.Select(&rows, `SELECT action FROM journal WHERE module = $1 AND entity = $2 AND record_id = $3 ORDER BY id`,
		module, entity, recordID); err != nil {
		t.Fatal(err)
	}
	return rows
}

// journalChanges returns the changes of the last journal row of a record.
func (e *env) journalChanges(t *testing.T, module int, entity string, recordID int64) map[string]any {
	t.Helper()
	var raw string
	if err := e.db.Get(&raw, `SELECT changes::text FROM journal WHERE module = $1 AND entity = $2 AND record_id = $3
		ORDER BY id DESC LIMIT 1`, module, entity, recordID); err != nil {
		t.Fatal(err)
	}
	return decodeExact[map[string]any](t, raw)
}
