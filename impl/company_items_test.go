package impl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
)

// dbState is a fingerprint of every table that the counterparty and contact
// operations write, in the accounts of the test's worlds (all of them when it
// has none): two equal fingerprints mean nothing was written between them.
func (e *env) dbState(t *testing.T) string {
	t.Helper()
	e.accounts.mu.Lock()
	accounts := pq.Array(slices.Clone(e.accounts.ids))
	e.accounts.mu.Unlock()
	var parts []string
	for _, table := range []string{"companies", "contacts", "emails", "phones", "requisites", "journal", "directory_values"} {
		var s string
		if err := e.db.Get(&s, `SELECT count(*) || ':' || md5(coalesce(string_agg(x::text, '|' ORDER BY x.id), '')) FROM `+table+` x
			WHERE cardinality($1::bigint[]) = 0 OR x.account_id = ANY ($1)`, accounts); err != nil {
			t.Fatalf("state of %s: %v", table, err)
		}
		parts = append(parts, table+"="+s)
	}
	return strings.Join(parts, " ")
}

// expectNoWrites runs fn and fails when it changed any row of dbState's tables.
func (e *env) expectNoWrites(t *testing.T, fn func()) {
	t.Helper()
	before := e.dbState(t)
	fn()
	if after := e.dbState(t); after != before {
		t.Errorf("a refused request wrote rows:\nbefore %s\nafter  %s", before, after)
	}
}

// journalRow is one row of the journal as a test reads it.
type journalRow struct {
	UserID   int64          `json:"user_id"`
	Entity   string         `json:"entity"`
	RecordID int64          `json:"record_id"`
	Action   string         `json:"action"`
	Changes  map[string]any `json:"changes"`
}

// journalMark is where each account's journal stood: its last position.
// Positions, not ids: on Citus a journal row's id comes from the sequence
// range of the node that ran the insert (each worker has its own), so ids do
// not grow across accounts, while positions are dense and in commit order per
// account (migration 0030).
type journalMark map[int64]int64

// lastJournalID marks the journal of every account (0 when there is none).
func (e *env) lastJournalID(t *testing.T) journalMark {
	t.Helper()
	var rows []struct {
		Account  int64 `db:"account_id"`
		Position int64 `db:"position"`
	}
	if err := e.db.Select(&rows, `SELECT account_id, max(position) AS position FROM journal GROUP BY account_id`); err != nil {
		t.Fatal(err)
	}
	mark := journalMark{}
	for _, r := range rows {
		mark[r.Account] = r.Position
	}
	return mark
}

// journalSince returns the journal rows written after the mark, in the
// accounts of the test's worlds (all when it has none), by account and then
// in commit order.
func (e *env) journalSince(t *testing.T, mark journalMark) []journalRow {
	t.Helper()
	e.accounts.mu.Lock()
	accounts := pq.Array(slices.Clone(e.accounts.ids))
	e.accounts.mu.Unlock()
	var found []struct {
		Account  int64  `db:"account_id"`
		Position int64  `db:"position"`
		Row      string `db:"row"`
	}
	if err := e.db.Select(&found, `SELECT account_id, position, jsonb_build_object('user_id', user_id, 'entity', entity,
		'record_id', record_id, 'action', action, 'changes', changes)::text AS row
		  FROM journal WHERE cardinality($1::bigint[]) = 0 OR account_id = ANY ($1)
		 ORDER BY account_id, position`, accounts); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, f := range found {
		if f.Position > mark[f.Account] {
			rows = append(rows, f.Row)
		}
	}
	out := make([]journalRow, len(rows))
	for i, r := range rows {
		out[i] = decode[journalRow](t, r)
	}
	return out
}

// expectJournal asserts the journal rows written after mark.
func (e *env) expectJournal(t *testing.T, mark journalMark, want ...journalRow) {
	t.Helper()
	got := e.journalSince(t, mark)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.MarshalIndent(got, "", " ")
		wantJSON, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("journal\n%s\nwant\n%s", gotJSON, wantJSON)
	}
}

// jsonValue turns v into what decoding its JSON gives (float64 numbers, []any,
// map[string]any), for comparisons with decoded replies and journal rows.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return decode[any](t, string(raw))
}

// card reads the counterparty card through the API.
func (e *env) card(t *testing.T, token string, id int64) map[string]any {
	t.Helper()
	return decode[map[string]any](t, expectOK(t, e.get(t, token, fmt.Sprintf("/company/get?id=%d", id))))
}

// newID parses a value that holds a new record's id.
func newID(t *testing.T, value string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(value, 10, 64)
	if err != nil || id < 1 {
		t.Fatalf("value %q is not an id", value)
	}
	return id
}

// plainCompany inserts a counterparty with nothing attached, responsible u.
func plainCompany(t *testing.T, e *env, w *world, u user, name string) int64 {
	t.Helper()
	return insertCompany(t, e, u.token, map[string]any{"name": name, "type_id": w.dirs[9][0], "user_id": u.id})
}

// expectWaitsForEmailLock holds the advisory lock that every writer of the
// e-mail takes (impl.lockEmails) and checks that send does not finish before it
// is released, and finishes afterwards.
func (e *env) expectWaitsForEmailLock(t *testing.T, accountID int64, email string, send func() reply) reply {
	t.Helper()
	ctx := context.Background()
	tx, err := e.db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const emailLockSpace = 0x43524d65
	// Taken as the server takes it: through the account's row, on the node that holds it.
	if _, err := tx.Exec(`SELECT pg_advisory_xact_lock($1, hashtext($2)) FROM accounts WHERE id = $3`, emailLockSpace,
		strconv.FormatInt(accountID, 10)+":"+strings.ToLower(email), accountID); err != nil {
		t.Fatal(err)
	}
	done := make(chan reply, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		done <- send()
	}()
	select {
	case r := <-done:
		t.Fatalf("the request finished while the e-mail's lock was held: %s", r.Raw)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return <-done
}

// storedRequisites lists a counterparty's requisites as id:inn:is_default, by id.
func (e *env) storedRequisites(t *testing.T, companyID int64) []string {
	t.Helper()
	var rows []string
	if err := e.db.Select(&rows, `SELECT id || ':' || inn || ':' || is_default FROM requisites WHERE company_id = $1 ORDER BY id`, companyID); err != nil {
		t.Fatal(err)
	}
	return rows
}

func (e *env) taxID(t *testing.T, companyID int64) string {
	t.Helper()
	var taxID string
	if err := e.db.Get(&taxID, `SELECT tax_id FROM companies WHERE id = $1`, companyID); err != nil {
		t.Fatal(err)
	}
	return taxID
}

func TestCompanyRequisitesInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	id := plainCompany(t, e, w, w.member, "Contoso")
	insert := func(t *testing.T, token string, body map[string]any) int64 {
		t.Helper()
		return newID(t, expectOK(t, e.post(t, token, "/company/requisites/insert", body)))
	}
	row := func(id int64, inn string, isDefault bool) string { return fmt.Sprintf("%d:%s:%t", id, inn, isDefault) }

	var first, second int64
	t.Run("OK the first requisites become the default ones", func(t *testing.T) {
		mark := e.lastJournalID(t)
		first = insert(t, w.member.token, map[string]any{"id_company": id, "inn": "7701234567", "kpp": "770101001",
			"full_name": "Contoso Limited Liability Company", "bank_name": "Baltic Bank", "bik": "044525225", "rs": "40702810900000000001"})
		if got, want := e.storedRequisites(t, id), []string{row(first, "7701234567", true)}; !reflect.DeepEqual(got, want) {
			t.Errorf("requisites %v, want %v", got, want)
		}
		if got := e.taxID(t, id); got != "7701234567" {
			t.Errorf("tax_id %q follows the default requisites' inn", got)
		}
		e.expectJournal(t, mark,
			journalRow{UserID: w.member.id, Entity: "requisites", RecordID: first, Action: "insert", Changes: map[string]any{
				"company_id": float64(id), "is_default": true, "inn": "7701234567", "kpp": "770101001",
				"full_name": "Contoso Limited Liability Company", "bank_name": "Baltic Bank", "bik": "044525225", "rs": "40702810900000000001"}},
			journalRow{UserID: w.member.id, Entity: "company", RecordID: id, Action: "update", Changes: map[string]any{"tax_id": []any{"", "7701234567"}}})
		reqs := e.card(t, w.member.token, id)["requisites"].([]any)
		want := map[string]any{"id": float64(first), "id_company": float64(id), "use_default": "True", "inn": "7701234567", "kpp": "770101001",
			"ogrn_client": "", "okpo": "", "okved": "", "oktmo": "", "okato": "", "kr_name": "", "full_name": "Contoso Limited Liability Company",
			"adres_yur": "", "adres_fact": "", "pocht_adr": "", "dir_name": "", "dir_status": "", "gl_buh": "", "bank_name": "Baltic Bank",
			"bik": "044525225", "ks": "", "rs": "40702810900000000001", "requis_prim": ""}
		if len(reqs) != 1 || !reflect.DeepEqual(reqs[0], want) {
			t.Errorf("card requisites %v", reqs)
		}
	})

	t.Run("OK later ones are not the default when use_default is omitted", func(t *testing.T) {
		mark := e.lastJournalID(t)
		second = insert(t, w.member.token, map[string]any{"id_company": id, "inn": "7702222222"})
		if got, want := e.storedRequisites(t, id), []string{row(first, "7701234567", true), row(second, "7702222222", false)}; !reflect.DeepEqual(got, want) {
			t.Errorf("requisites %v, want %v", got, want)
		}
		if got := e.taxID(t, id); got != "7701234567" {
			t.Errorf("tax_id %q", got)
		}
		if j := e.journalSince(t, mark); len(j) != 1 || j[0].Entity != "requisites" || j[0].Action != "insert" || j[0].Changes["is_default"] != false {
			t.Errorf("journal %v", j)
		}
	})

	t.Run("OK use_default True takes the mark from the previous default", func(t *testing.T) {
		mark := e.lastJournalID(t)
		third := insert(t, w.head.token, map[string]any{"id_company": id, "inn": "7703333333", "use_default": "True"})
		want := []string{row(first, "7701234567", false), row(second, "7702222222", false), row(third, "7703333333", true)}
		if got := e.storedRequisites(t, id); !reflect.DeepEqual(got, want) {
			t.Errorf("requisites %v, want %v", got, want)
		}
		if got := e.taxID(t, id); got != "7703333333" {
			t.Errorf("tax_id %q", got)
		}
		e.expectJournal(t, mark,
			journalRow{UserID: w.head.id, Entity: "requisites", RecordID: first, Action: "update", Changes: map[string]any{"is_default": []any{true, false}}},
			journalRow{UserID: w.head.id, Entity: "requisites", RecordID: third, Action: "insert", Changes: map[string]any{
				"company_id": float64(id), "is_default": true, "inn": "7703333333"}},
			journalRow{UserID: w.head.id, Entity: "company", RecordID: id, Action: "update", Changes: map[string]any{"tax_id": []any{"7701234567", "7703333333"}}})
		reqs := e.card(t, w.member.token, id)["requisites"].([]any)
		if len(reqs) != 3 || reqs[0].(map[string]any)["id"] != float64(third) || reqs[0].(map[string]any)["use_default"] != "True" ||
			reqs[1].(map[string]any)["use_default"] != "False" || reqs[2].(map[string]any)["use_default"] != "False" {
			t.Errorf("card requisites: the default first, then the others by id: %v", reqs)
		}
	})

	t.Run("OK use_default True over the requisites of the insert", func(t *testing.T) {
		withDetails := insertCompany(t, e, w.admin.token, fullCompany(w, "details@acme.example"))
		next := insert(t, w.admin.token, map[string]any{"id_company": withDetails, "inn": "7704444444", "use_default": "True"})
		if n := e.count(t, `SELECT count(*) FROM requisites WHERE company_id = $1 AND is_default`, withDetails); n != 1 {
			t.Errorf("%d default requisites", n)
		}
		if e.taxID(t, withDetails) != "7704444444" || e.count(t, `SELECT count(*) FROM requisites WHERE id = $1 AND is_default`, next) != 1 {
			t.Error("the new requisites are not the default ones")
		}
	})

	t.Run("OK use_default False on the first requisites", func(t *testing.T) {
		bare := plainCompany(t, e, w, w.member, "No default")
		a := insert(t, w.member.token, map[string]any{"id_company": bare, "inn": "7705555555", "use_default": "False"})
		b := insert(t, w.member.token, map[string]any{"id_company": bare, "inn": "7706666666"})
		if got, want := e.storedRequisites(t, bare), []string{row(a, "7705555555", false), row(b, "7706666666", false)}; !reflect.DeepEqual(got, want) {
			t.Errorf("requisites %v, want %v", got, want)
		}
		if got := e.taxID(t, bare); got != "" {
			t.Errorf("tax_id %q without default requisites", got)
		}
	})

	t.Run("OK concurrent first requisites: exactly one default", func(t *testing.T) {
		fresh := plainCompany(t, e, w, w.member, "Race")
		const n = 10
		var wg sync.WaitGroup
		replies := make([]reply, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replies[i] = e.post(t, w.member.token, "/company/requisites/insert", map[string]any{"id_company": fresh, "inn": fmt.Sprintf("77%08d", i)})
			}()
		}
		wg.Wait()
		for _, r := range replies {
			expectOK(t, r)
		}
		var defaults []string
		if err := e.db.Select(&defaults, `SELECT inn FROM requisites WHERE company_id = $1 AND is_default`, fresh); err != nil {
			t.Fatal(err)
		}
		if len(defaults) != 1 || e.taxID(t, fresh) != defaults[0] {
			t.Errorf("defaults %v, tax_id %q", defaults, e.taxID(t, fresh))
		}
	})

	t.Run("access levels", func(t *testing.T) {
		for _, who := range w.roles() {
			t.Run(who.name, func(t *testing.T) {
				body := map[string]any{"id_company": id, "inn": "1"}
				if who.visible {
					insert(t, who.u.token, body)
					return
				}
				e.expectNoWrites(t, func() {
					expectError(t, e.post(t, who.u.token, "/company/requisites/insert", body), "404", fmt.Sprintf("counterparty %d not found", id), "0")
				})
			})
		}
		t.Run("another account's admin", func(t *testing.T) {
			beta := e.newWorld(t, "beta")
			e.expectNoWrites(t, func() {
				expectError(t, e.post(t, beta.admin.token, "/company/requisites/insert",
					map[string]any{"id_company": id, "inn": "1", "use_default": "True"}), "404", fmt.Sprintf("counterparty %d not found", id), "0")
			})
		})
	})

	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"missing counterparty", map[string]any{"id_company": 9223372036854775807, "inn": "1"}, "counterparty 9223372036854775807 not found"},
		{"no id_company", map[string]any{"inn": "1"}, `property "id_company" is missing`},
		{"id_company 0", map[string]any{"id_company": 0}, `field "id_company"`},
		{"use_default in lower case", map[string]any{"id_company": id, "use_default": "true"}, `field "use_default"`},
		{"use_default a boolean", map[string]any{"id_company": id, "use_default": true}, `field "use_default"`},
		{"inn too long", map[string]any{"id_company": id, "inn": strings.Repeat("1", 65)}, `field "inn"`},
		{"inn a number", map[string]any{"id_company": id, "inn": 7701234567}, `field "inn"`},
		{"null field", map[string]any{"id_company": id, "kpp": nil}, `field "kpp"`},
		{"unknown field", map[string]any{"id_company": id, "iban": "x"}, `property "iban" is unsupported`},
		{"empty body", "", "request body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := "400"
			if strings.Contains(tc.want, "not found") {
				code = "404"
			}
			e.expectNoWrites(t, func() {
				expectError(t, e.post(t, w.admin.token, "/company/requisites/insert", tc.body), code, tc.want, "0")
			})
		})
	}
}

// itemWorld is a counterparty with a contact person, and another counterparty
// with one, for the phone and e-mail inserts.
type itemWorld struct {
	company, contact           int64 // of w.member
	otherCompany, otherContact int64 // of w.member too
}

func newItemWorld(t *testing.T, e *env, w *world) itemWorld {
	t.Helper()
	var iw itemWorld
	iw.company = plainCompany(t, e, w, w.member, "Contoso")
	iw.otherCompany = plainCompany(t, e, w, w.member, "Fabrikam")
	contact := func(companyID int64) int64 {
		v := decode[map[string]any](t, expectOK(t, e.post(t, w.member.token, "/contact/insert", map[string]any{"company_id": companyID, "first_name": "C"})))
		return int64(v["NEW_ID"].(float64))
	}
	iw.contact, iw.otherContact = contact(iw.company), contact(iw.otherCompany)
	return iw
}

func TestCompanyPhoneInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	iw := newItemWorld(t, e, w)

	t.Run("OK the counterparty's own", func(t *testing.T) {
		mark := e.lastJournalID(t)
		id := newID(t, expectOK(t, e.post(t, w.member.token, "/company/phone/insert",
			map[string]any{"company_id": iw.company, "phone": "+372 (600) 00-01", "descr": "orders"})))
		if n := e.count(t, `SELECT count(*) FROM phones WHERE id = $1 AND company_id = $2 AND contact_id IS NULL
			AND phone = '+372 (600) 00-01' AND phone_digits = '3726000001' AND descr = 'orders'`, id, iw.company); n != 1 {
			t.Error("phone not stored as sent")
		}
		e.expectJournal(t, mark, journalRow{UserID: w.member.id, Entity: "phone", RecordID: id, Action: "insert", Changes: map[string]any{
			"company_id": float64(iw.company), "contact_id": nil, "phone": "+372 (600) 00-01", "descr": "orders"}})
		phones := e.card(t, w.member.token, iw.company)["phones"].([]any)
		want := map[string]any{"id": float64(id), "company_id": float64(iw.company), "id_contact_man": nil, "phone": "+372 (600) 00-01", "descr": "orders"}
		if len(phones) != 1 || !reflect.DeepEqual(phones[0], want) {
			t.Errorf("card phones %v", phones)
		}
	})

	t.Run("OK a contact person's, without descr", func(t *testing.T) {
		id := newID(t, expectOK(t, e.post(t, w.head.token, "/company/phone/insert",
			map[string]any{"company_id": iw.company, "contact_id": iw.contact, "phone": "+371 2000 0001"})))
		card := e.card(t, w.member.token, iw.company)
		want := map[string]any{"id": float64(id), "company_id": float64(iw.company), "id_contact_man": float64(iw.contact), "phone": "+371 2000 0001", "descr": ""}
		phones := card["phones"].([]any)
		if len(phones) != 2 || !reflect.DeepEqual(phones[1], want) {
			t.Errorf("card phones %v", phones)
		}
		contactPhones := card["contacts"].([]any)[0].(map[string]any)["Phones"].([]any)
		if len(contactPhones) != 1 || !reflect.DeepEqual(contactPhones[0], want) {
			t.Errorf("the contact person's Phones %v", contactPhones)
		}
	})

	beta := e.newWorld(t, "beta")
	betaCompany := plainCompany(t, e, beta, beta.admin, "Beta")
	for _, tc := range []struct {
		name  string
		token string
		body  any
		code  string
		want  string
	}{
		{"a contact person of another counterparty", w.member.token, map[string]any{"company_id": iw.company, "contact_id": iw.otherContact, "phone": "123"},
			"400", "contact_id: no such contact person of this counterparty"},
		{"a contact person that does not exist", w.member.token, map[string]any{"company_id": iw.company, "contact_id": 9223372036854775807, "phone": "123"},
			"400", "contact_id: no such contact person of this counterparty"},
		{"a contact person of another account", beta.admin.token, map[string]any{"company_id": betaCompany, "contact_id": iw.contact, "phone": "123"},
			"400", "contact_id: no such contact person of this counterparty"},
		{"another account's admin", beta.admin.token, map[string]any{"company_id": iw.company, "phone": "123"},
			"404", fmt.Sprintf("counterparty %d not found", iw.company)},
		{"another account's admin with our contact person", beta.admin.token, map[string]any{"company_id": iw.company, "contact_id": iw.contact, "phone": "123"},
			"404", fmt.Sprintf("counterparty %d not found", iw.company)},
		{"a peer member", w.peer.token, map[string]any{"company_id": iw.company, "phone": "123"}, "404", fmt.Sprintf("counterparty %d not found", iw.company)},
		{"a member of another department", w.other.token, map[string]any{"company_id": iw.company, "contact_id": iw.contact, "phone": "123"},
			"404", fmt.Sprintf("counterparty %d not found", iw.company)},
		{"missing counterparty", w.admin.token, map[string]any{"company_id": 9223372036854775807, "phone": "123"}, "404", "counterparty 9223372036854775807 not found"},
		{"no phone", w.member.token, map[string]any{"company_id": iw.company}, "400", `property "phone" is missing`},
		{"no company_id", w.member.token, map[string]any{"phone": "123"}, "400", `property "company_id" is missing`},
		{"not a phone number", w.member.token, map[string]any{"company_id": iw.company, "phone": "call me"}, "400", `field "phone"`},
		{"empty phone", w.member.token, map[string]any{"company_id": iw.company, "phone": ""}, "400", `field "phone"`},
		{"phone too long", w.member.token, map[string]any{"company_id": iw.company, "phone": strings.Repeat("1", 41)}, "400", `field "phone"`},
		{"descr too long", w.member.token, map[string]any{"company_id": iw.company, "phone": "123", "descr": strings.Repeat("x", 101)}, "400", `field "descr"`},
		{"contact_id 0", w.member.token, map[string]any{"company_id": iw.company, "phone": "123", "contact_id": 0}, "400", `field "contact_id"`},
		{"null contact_id", w.member.token, map[string]any{"company_id": iw.company, "phone": "123", "contact_id": nil}, "400", `field "contact_id"`},
		{"unknown field", w.member.token, map[string]any{"company_id": iw.company, "phone": "123", "type": "mobile"}, "400", `property "type" is unsupported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.expectNoWrites(t, func() {
				expectError(t, e.post(t, tc.token, "/company/phone/insert", tc.body), tc.code, tc.want, "")
			})
		})
	}
	t.Run("admin", func(t *testing.T) {
		expectOK(t, e.post(t, w.admin.token, "/company/phone/insert", map[string]any{"company_id": iw.company, "phone": "123"}))
	})
}

func TestCompanyEmailInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	iw := newItemWorld(t, e, w)

	t.Run("OK the counterparty's own", func(t *testing.T) {
		mark := e.lastJournalID(t)
		id := newID(t, expectOK(t, e.post(t, w.member.token, "/company/email/insert",
			map[string]any{"company_id": iw.company, "email": "Orders@Contoso.example"})))
		e.expectJournal(t, mark, journalRow{UserID: w.member.id, Entity: "email", RecordID: id, Action: "insert", Changes: map[string]any{
			"company_id": float64(iw.company), "contact_id": nil, "email": "Orders@Contoso.example"}})
		emails := e.card(t, w.member.token, iw.company)["emails"].([]any)
		want := map[string]any{"id": float64(id), "company_id": float64(iw.company), "id_contact_man": nil, "email": "Orders@Contoso.example"}
		if len(emails) != 1 || !reflect.DeepEqual(emails[0], want) {
			t.Errorf("card emails %v", emails)
		}
	})

	t.Run("OK a contact person's", func(t *testing.T) {
		id := newID(t, expectOK(t, e.post(t, w.admin.token, "/company/email/insert",
			map[string]any{"company_id": iw.company, "contact_id": iw.contact, "email": "c@contoso.example"})))
		card := e.card(t, w.member.token, iw.company)
		want := map[string]any{"id": float64(id), "company_id": float64(iw.company), "id_contact_man": float64(iw.contact), "email": "c@contoso.example"}
		if emails := card["emails"].([]any); len(emails) != 2 || !reflect.DeepEqual(emails[1], want) {
			t.Errorf("card emails %v", emails)
		}
		if got := card["contacts"].([]any)[0].(map[string]any)["Emails"].([]any); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("the contact person's Emails %v", got)
		}
	})

	t.Run("OK found by the duplicate check of a later counterparty insert", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			contactID any
			email     string
		}{{"the counterparty's", nil, "later@contoso.example"}, {"a contact person's", iw.contact, "later.contact@contoso.example"}} {
			t.Run(tc.name, func(t *testing.T) {
				body := map[string]any{"company_id": iw.company, "email": tc.email}
				if tc.contactID != nil {
					body["contact_id"] = tc.contactID
				}
				expectOK(t, e.post(t, w.member.token, "/company/email/insert", body))
				e.expectNoWrites(t, func() {
					r := e.post(t, w.other.token, "/company/insert?check_duplicates=true", map[string]any{"name": "Copy", "type_id": w.dirs[9][0],
						"user_id": w.other.id, "Emails": []any{map[string]any{"email": strings.ToUpper(tc.email)}}})
					expectError(t, r, "409", fmt.Sprintf("the e-mail %s already belongs to counterparty %d", tc.email, iw.company), fmt.Sprint(iw.company))
				})
			})
		}
	})

	t.Run("OK waits for the e-mail's lock", func(t *testing.T) {
		r := e.expectWaitsForEmailLock(t, w.accountID, "Locked@Contoso.example", func() reply {
			return e.post(t, w.member.token, "/company/email/insert", map[string]any{"company_id": iw.company, "email": "Locked@Contoso.example"})
		})
		expectOK(t, r)
	})

	beta := e.newWorld(t, "beta")
	betaCompany := plainCompany(t, e, beta, beta.admin, "Beta")
	for _, tc := range []struct {
		name  string
		token string
		body  any
		code  string
		want  string
	}{
		{"a contact person of another counterparty", w.member.token, map[string]any{"company_id": iw.company, "contact_id": iw.otherContact, "email": "x@y.example"},
			"400", "contact_id: no such contact person of this counterparty"},
		{"a contact person of another account", beta.admin.token, map[string]any{"company_id": betaCompany, "contact_id": iw.contact, "email": "x@y.example"},
			"400", "contact_id: no such contact person of this counterparty"},
		{"another account's admin", beta.admin.token, map[string]any{"company_id": iw.company, "email": "x@y.example"},
			"404", fmt.Sprintf("counterparty %d not found", iw.company)},
		{"a peer member", w.peer.token, map[string]any{"company_id": iw.company, "email": "x@y.example"}, "404", fmt.Sprintf("counterparty %d not found", iw.company)},
		{"a member of another department", w.other.token, map[string]any{"company_id": iw.company, "email": "x@y.example"}, "404", fmt.Sprintf("counterparty %d not found", iw.company)},
		{"missing counterparty", w.admin.token, map[string]any{"company_id": 9223372036854775807, "email": "x@y.example"}, "404", "counterparty 9223372036854775807 not found"},
		{"no email", w.member.token, map[string]any{"company_id": iw.company}, "400", `property "email" is missing`},
		{"not an e-mail", w.member.token, map[string]any{"company_id": iw.company, "email": "contoso.example"}, "400", `field "email"`},
		{"spaces inside", w.member.token, map[string]any{"company_id": iw.company, "email": "a b@contoso.example"}, "400", `field "email"`},
		{"surrounding spaces are not trimmed", w.member.token, map[string]any{"company_id": iw.company, "email": " a@contoso.example "}, "400", `field "email"`},
		{"too long", w.member.token, map[string]any{"company_id": iw.company, "email": strings.Repeat("a", 243) + "@contoso.example"}, "400", `field "email"`},
		{"email a number", w.member.token, map[string]any{"company_id": iw.company, "email": 1}, "400", `field "email"`},
		{"unknown field", w.member.token, map[string]any{"company_id": iw.company, "email": "x@y.example", "Emails": []any{}}, "400", `property "Emails" is unsupported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.expectNoWrites(t, func() {
				expectError(t, e.post(t, tc.token, "/company/email/insert", tc.body), tc.code, tc.want, "")
			})
		})
	}
}
