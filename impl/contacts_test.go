package impl_test

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// addContact inserts a contact person through the API and returns its id.
func addContact(t *testing.T, e *env, token string, body map[string]any) int64 {
	t.Helper()
	v := decode[map[string]any](t, expectOK(t, e.post(t, token, "/contact/insert", body)))
	return int64(v["NEW_ID"].(float64))
}

func TestContactInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	company := plainCompany(t, e, w, w.member, "Contoso")

	t.Run("OK with e-mails and phones", func(t *testing.T) {
		mark := e.lastJournalID(t)
		r := e.post(t, w.member.token, "/contact/insert", map[string]any{
			"company_id": company, "first_name": "Janis", "last_name": "Ozols", "middle_name": "K", "position": "Buyer",
			"note": "Decides on prices", "status_id": w.dirs[43][0],
			"Emails": []any{map[string]any{"email": "janis@contoso.example"}, map[string]any{"email": "j.ozols@contoso.example"}},
			"Phones": []any{map[string]any{"phone": "+371 2000 0001", "descr": "mobile"}, map[string]any{"phone": "+371 6700 0000"}},
		})
		got := decode[map[string]any](t, expectOK(t, r))
		id := int64(got["NEW_ID"].(float64))
		var emailIDs, phoneIDs []int64
		if err := e.db.Select(&emailIDs, `SELECT id FROM emails WHERE contact_id = $1 AND company_id = $2 ORDER BY id`, id, company); err != nil {
			t.Fatal(err)
		}
		if err := e.db.Select(&phoneIDs, `SELECT id FROM phones WHERE contact_id = $1 AND company_id = $2 ORDER BY id`, id, company); err != nil {
			t.Fatal(err)
		}
		if len(emailIDs) != 2 || len(phoneIDs) != 2 {
			t.Fatalf("stored e-mails %v, phones %v", emailIDs, phoneIDs)
		}
		want := map[string]any{
			"NEW_ID": float64(id),
			"TELEPHONES": []any{
				map[string]any{"id": float64(phoneIDs[0]), "phone": "+371 2000 0001", "descr": "mobile"},
				map[string]any{"id": float64(phoneIDs[1]), "phone": "+371 6700 0000", "descr": ""},
			},
			"EMAILS": []any{
				map[string]any{"id": float64(emailIDs[0]), "email": "janis@contoso.example"},
				map[string]any{"id": float64(emailIDs[1]), "email": "j.ozols@contoso.example"},
			},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("value %v\nwant  %v", got, want)
		}
		var positionID int64
		if err := e.db.Get(&positionID, `SELECT id FROM directory_values WHERE account_id = $1 AND directory_code = 42 AND name = 'Buyer'`, w.accountID); err != nil {
			t.Fatalf("the new position is not in directory 42: %v", err)
		}
		if n := e.count(t, `SELECT count(*) FROM contacts WHERE id = $1 AND company_id = $2 AND name = 'Ozols Janis K' AND position_id = $3
			AND status_id = $4 AND note = 'Decides on prices' AND created_by = $5`, id, company, positionID, w.dirs[43][0], w.member.id); n != 1 {
			t.Error("contact person not stored as sent")
		}
		contactJournal := map[string]any{"company_id": float64(company), "first_name": "Janis", "middle_name": "K", "last_name": "Ozols",
			"position": "Buyer", "position_id": float64(positionID), "status_id": float64(w.dirs[43][0]), "note": "Decides on prices"}
		item := func(entity string, id int64, changes map[string]any) journalRow {
			changes["company_id"], changes["contact_id"] = float64(company), float64(got["NEW_ID"].(float64))
			return journalRow{UserID: w.member.id, Entity: entity, RecordID: id, Action: "insert", Changes: changes}
		}
		e.expectJournal(t, mark,
			journalRow{UserID: w.member.id, Entity: "contact", RecordID: id, Action: "insert", Changes: contactJournal},
			item("email", emailIDs[0], map[string]any{"email": "janis@contoso.example"}),
			item("email", emailIDs[1], map[string]any{"email": "j.ozols@contoso.example"}),
			item("phone", phoneIDs[0], map[string]any{"phone": "+371 2000 0001", "descr": "mobile"}),
			item("phone", phoneIDs[1], map[string]any{"phone": "+371 6700 0000", "descr": ""}))

		card := e.card(t, w.member.token, company)
		contact := card["contacts"].([]any)[0].(map[string]any)
		if contact["name"] != "Ozols Janis K" || contact["position"] != "Buyer" || contact["status"] != "Works" ||
			len(contact["Emails"].([]any)) != 2 || len(contact["Phones"].([]any)) != 2 {
			t.Errorf("card contact %v", contact)
		}
		if len(card["emails"].([]any)) != 2 || card["emails"].([]any)[0].(map[string]any)["id_contact_man"] != float64(id) {
			t.Errorf("card emails %v", card["emails"])
		}
	})

	t.Run("OK without e-mails and phones: both null", func(t *testing.T) {
		r := e.post(t, w.head.token, "/contact/insert", map[string]any{"company_id": company, "first_name": "Mari", "position": "BUYER"})
		id := int64(decode[map[string]any](t, expectOK(t, r))["NEW_ID"].(float64))
		if want := fmt.Sprintf(`{"NEW_ID":%d,"TELEPHONES":null,"EMAILS":null}`, id); r.Value != want {
			t.Errorf("value %s, want %s", r.Value, want)
		}
		// "BUYER" is the position "Buyer": compared case-insensitively, not added again.
		if n := e.count(t, `SELECT count(*) FROM directory_values WHERE account_id = $1 AND directory_code = 42`, w.accountID); n != 1 {
			t.Errorf("%d positions, want 1", n)
		}
		if n := e.count(t, `SELECT count(*) FROM contacts c JOIN directory_values d ON d.account_id = $1 AND d.id = c.position_id
			WHERE c.account_id = $1 AND c.id = $2 AND d.name = 'Buyer' AND c.name = 'Mari'`, w.accountID, id); n != 1 {
			t.Error("position not matched case-insensitively")
		}
	})

	t.Run("OK empty arrays: both null", func(t *testing.T) {
		r := e.post(t, w.admin.token, "/contact/insert", map[string]any{"company_id": company, "Emails": []any{}, "Phones": []any{}})
		if v := decode[map[string]any](t, expectOK(t, r)); v["TELEPHONES"] != nil || v["EMAILS"] != nil {
			t.Errorf("value %s", r.Value)
		}
	})

	t.Run("OK found by the duplicate check of a later counterparty insert", func(t *testing.T) {
		addContact(t, e, w.member.token, map[string]any{"company_id": company, "Emails": []any{map[string]any{"email": "Buyer@Contoso.example"}}})
		e.expectNoWrites(t, func() {
			r := e.post(t, w.member.token, "/company/insert?check_duplicates=true", map[string]any{"name": "Copy", "type_id": w.dirs[9][0],
				"user_id": w.member.id, "Contacts": []any{map[string]any{"first_name": "X", "Emails": []any{map[string]any{"email": "buyer@contoso.example"}}}}})
			expectError(t, r, "409", fmt.Sprintf(`the e-mail Buyer@Contoso.example already belongs to counterparty %d "Contoso"`, company), fmt.Sprint(company))
		})
	})

	t.Run("OK waits for the e-mail's lock", func(t *testing.T) {
		expectOK(t, e.expectWaitsForEmailLock(t, w.accountID, "locked@contoso.example", func() reply {
			return e.post(t, w.member.token, "/contact/insert", map[string]any{"company_id": company,
				"Emails": []any{map[string]any{"email": "free@contoso.example"}, map[string]any{"email": "LOCKED@contoso.example"}}})
		}))
	})

	beta := e.newWorld(t, "beta")
	notFound := fmt.Sprintf("counterparty %d not found", company)
	for _, tc := range []struct {
		name  string
		token string
		body  any
		code  string
		want  string
	}{
		{"a peer member", w.peer.token, map[string]any{"company_id": company, "first_name": "X"}, "404", notFound},
		{"a member of another department", w.other.token, map[string]any{"company_id": company, "first_name": "X"}, "404", notFound},
		{"another account's admin", beta.admin.token, map[string]any{"company_id": company, "first_name": "X", "position": "Spy"}, "404", notFound},
		{"missing counterparty", w.admin.token, map[string]any{"company_id": 9223372036854775807}, "404", "counterparty 9223372036854775807 not found"},
		{"unknown status", w.member.token, map[string]any{"company_id": company, "position": "New position", "status_id": w.dirs[10][0]},
			"400", "status_id: no such value in directory 43"},
		{"another account's status", w.member.token, map[string]any{"company_id": company, "status_id": beta.dirs[43][0]}, "400", "status_id: no such value in directory 43"},
		{"no company_id", w.member.token, map[string]any{"first_name": "X"}, "400", `property "company_id" is missing`},
		{"company_id as text", w.member.token, map[string]any{"company_id": fmt.Sprint(company)}, "400", `field "company_id"`},
		{"invalid e-mail", w.member.token, map[string]any{"company_id": company, "Emails": []any{map[string]any{"email": "x"}}}, "400", `field "Emails.0.email"`},
		{"invalid phone", w.member.token, map[string]any{"company_id": company, "Phones": []any{map[string]any{"phone": "x"}}}, "400", `field "Phones.0.phone"`},
		{"first_name too long", w.member.token, map[string]any{"company_id": company, "first_name": strings.Repeat("x", 101)}, "400", `field "first_name"`},
		{"position too long", w.member.token, map[string]any{"company_id": company, "position": strings.Repeat("x", 101)}, "400", `field "position"`},
		{"too many e-mails", w.member.token, map[string]any{"company_id": company, "Emails": manyEmails(51)}, "400", `field "Emails"`},
		{"null first_name", w.member.token, map[string]any{"company_id": company, "first_name": nil}, "400", `field "first_name"`},
		{"unknown field", w.member.token, map[string]any{"company_id": company, "name": "Ozols Janis"}, "400", `property "name" is unsupported`},
		{"e-mails in lower case", w.member.token, map[string]any{"company_id": company, "emails": []any{}}, "400", `property "emails" is unsupported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.expectNoWrites(t, func() {
				expectError(t, e.post(t, tc.token, "/contact/insert", tc.body), tc.code, tc.want, "")
			})
		})
	}
	t.Run("admin", func(t *testing.T) {
		addContact(t, e, w.admin.token, map[string]any{"company_id": company, "last_name": "Admin"})
	})
}

func manyEmails(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"email": fmt.Sprintf("e%d@many.example", i)}
	}
	return out
}

// contactPage is a reply of GET /contact/list as a test checks it.
type contactPage struct {
	rows, pages, page int
	ids               []int64
	contacts          []map[string]any
}

func (e *env) contactList(t *testing.T, token string, query url.Values) contactPage {
	t.Helper()
	r := e.get(t, token, "/contact/list?"+query.Encode())
	if r.Status != "success" || r.Code != nil || r.errorText() != "" {
		t.Fatalf("want success, got %s", r.Raw)
	}
	p := contactPage{rows: r.Rows, pages: r.Pages, page: r.Page, contacts: decode[[]map[string]any](t, r.Value)}
	for _, c := range p.contacts {
		p.ids = append(p.ids, int64(c["id"].(float64)))
	}
	return p
}

func TestContactList(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	ofMember := plainCompany(t, e, w, w.member, "Contoso")
	ofPeer := plainCompany(t, e, w, w.peer, "Fabrikam")
	ofOther := plainCompany(t, e, w, w.other, "Northwind")
	empty := plainCompany(t, e, w, w.member, "Nobody works here")
	// Oldest first; every list answers newest first.
	janis := addContact(t, e, w.member.token, map[string]any{"company_id": ofMember, "first_name": "Janis", "last_name": "Ozols", "position": "Buyer",
		"status_id": w.dirs[43][0], "note": "n", "Emails": []any{map[string]any{"email": "janis@contoso.example"}},
		"Phones": []any{map[string]any{"phone": "+371 2000 0001", "descr": "mobile"}}})
	anna := addContact(t, e, w.member.token, map[string]any{"company_id": ofMember, "first_name": "Anna", "last_name": "Berzina"})
	ilze := addContact(t, e, w.peer.token, map[string]any{"company_id": ofPeer, "first_name": "Ilze", "last_name": "OZOLA"})
	peteris := addContact(t, e, w.other.token, map[string]any{"company_id": ofOther, "first_name": "Peteris", "last_name": "Kalnins"})
	odd := addContact(t, e, w.other.token, map[string]any{"company_id": ofOther, "first_name": "100%", "last_name": "Sure_Man"})
	all := []int64{odd, peteris, ilze, anna, janis}
	if _, err := e.db.Exec(`INSERT INTO contact_socials (account_id, contact_id, network, address) VALUES ($1, $2, 'linkedin', 'in/janis-ozols'), ($1, $2, 'telegram', '@janis')`,
		w.accountID, janis); err != nil {
		t.Fatal(err)
	}
	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	expectPage := func(t *testing.T, got contactPage, rows, pages, page int, ids ...int64) {
		t.Helper()
		if got.rows != rows || got.pages != pages || got.page != page || !reflect.DeepEqual(got.ids, ids) {
			t.Errorf("rows %d pages %d page %d ids %v; want %d %d %d %v", got.rows, got.pages, got.page, got.ids, rows, pages, page, ids)
		}
	}

	t.Run("OK newest first, with phones, e-mails and social networks", func(t *testing.T) {
		p := e.contactList(t, w.admin.token, nil)
		expectPage(t, p, 5, 1, 1, all...)
		var created string
		if err := e.db.Get(&created, `SELECT to_char(created_at AT TIME ZONE 'Europe/Riga', 'YYYY-MM-DD HH24:MI:SS') FROM contacts WHERE id = $1`, janis); err != nil {
			t.Fatal(err)
		}
		var email, phone, position int64
		if err := e.db.QueryRow(`SELECT (SELECT id FROM emails WHERE contact_id = $1), (SELECT id FROM phones WHERE contact_id = $1), (SELECT position_id FROM contacts WHERE id = $1)`,
			janis).Scan(&email, &phone, &position); err != nil {
			t.Fatal(err)
		}
		var socials []int64
		if err := e.db.Select(&socials, `SELECT id FROM contact_socials WHERE contact_id = $1 ORDER BY id`, janis); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"id": float64(janis), "company_id": float64(ofMember), "company_name": "Contoso", "name": "Ozols Janis",
			"first_name": "Janis", "middle_name": "", "last_name": "Ozols", "position_id": float64(position), "position": "Buyer",
			"status_id": float64(w.dirs[43][0]), "status": "Works", "note": "n", "created": created,
			"Phones": []any{map[string]any{"id": float64(phone), "company_id": float64(ofMember), "id_contact_man": float64(janis), "phone": "+371 2000 0001", "descr": "mobile"}},
			"Emails": []any{map[string]any{"id": float64(email), "company_id": float64(ofMember), "id_contact_man": float64(janis), "email": "janis@contoso.example"}},
			"SocialNetworks": []any{
				map[string]any{"id": float64(socials[0]), "network": "linkedin", "address": "in/janis-ozols"},
				map[string]any{"id": float64(socials[1]), "network": "telegram", "address": "@janis"},
			},
		}
		if got := p.contacts[4]; !reflect.DeepEqual(got, want) {
			t.Errorf("contact\n%v\nwant\n%v", got, want)
		}
		if got := p.contacts[3]; got["name"] != "Berzina Anna" || len(got["Phones"].([]any)) != 0 || len(got["SocialNetworks"].([]any)) != 0 {
			t.Errorf("contact %v", got)
		}
	})

	t.Run("OK paging", func(t *testing.T) {
		expectPage(t, e.contactList(t, w.admin.token, q("records_onpage", "2")), 5, 3, 1, odd, peteris)
		expectPage(t, e.contactList(t, w.admin.token, q("records_onpage", "2", "page", "2")), 5, 3, 2, ilze, anna)
		expectPage(t, e.contactList(t, w.admin.token, q("records_onpage", "2", "page", "3")), 5, 3, 3, janis)
		expectPage(t, e.contactList(t, w.admin.token, q("records_onpage", "2", "page", "4")), 5, 3, 4)
		expectPage(t, e.contactList(t, w.admin.token, q("records_onpage", "200", "page", "1000000")), 5, 1, 1000000)
		// Past the last page allowed: 400, not an overflow of the offset.
		expectError(t, e.get(t, w.admin.token, "/contact/list?"+q("records_onpage", "200", "page", "9223372036854775807").Encode()), "400",
			`query parameter "page": number must be at most`, "")
	})

	t.Run("OK name contains, case-insensitive", func(t *testing.T) {
		expectPage(t, e.contactList(t, w.admin.token, q("name", "ozol")), 2, 1, 1, ilze, janis)
		expectPage(t, e.contactList(t, w.admin.token, q("name", "S JAN")), 1, 1, 1, janis)
		expectPage(t, e.contactList(t, w.admin.token, q("name", "ozol", "records_onpage", "1", "page", "2")), 2, 2, 2, janis)
		expectPage(t, e.contactList(t, w.admin.token, q("name", "zz")), 0, 0, 1)
		// %, _ and \ match themselves only.
		expectPage(t, e.contactList(t, w.admin.token, q("name", "%")), 1, 1, 1, odd)
		expectPage(t, e.contactList(t, w.admin.token, q("name", "e_m")), 1, 1, 1, odd)
		expectPage(t, e.contactList(t, w.admin.token, q("name", `\`)), 0, 0, 1)
		expectPage(t, e.contactList(t, w.admin.token, q("name", "")), 5, 1, 1, all...)
	})

	t.Run("OK company_id: every contact person of it, the other parameters ignored", func(t *testing.T) {
		expectPage(t, e.contactList(t, w.member.token, q("company_id", fmt.Sprint(ofMember))), 2, 1, 1, anna, janis)
		expectPage(t, e.contactList(t, w.member.token, q("company_id", fmt.Sprint(ofMember), "records_onpage", "1", "page", "7", "name", "zz")), 2, 1, 1, anna, janis)
		expectPage(t, e.contactList(t, w.member.token, q("company_id", fmt.Sprint(empty))), 0, 0, 0)
	})

	t.Run("access levels", func(t *testing.T) {
		for _, who := range byRole(w, all, []int64{ilze, anna, janis}, []int64{anna, janis}, []int64{ilze}, []int64{odd, peteris}) {
			t.Run(who.name, func(t *testing.T) {
				expectPage(t, e.contactList(t, who.u.token, nil), len(who.want), 1, 1, who.want...)
				expectPage(t, e.contactList(t, who.u.token, q("name", "ozol")), 0+countIn(who.want, ilze, janis), pagesOf(countIn(who.want, ilze, janis)), 1,
					filter(who.want, ilze, janis)...)
			})
		}
		for _, tc := range []struct {
			name    string
			u       user
			company int64
		}{{"a peer member", w.peer, ofMember}, {"a member of another department", w.other, ofMember}, {"the head, of another department", w.head, ofOther}} {
			t.Run(tc.name+" with company_id", func(t *testing.T) {
				expectError(t, e.get(t, tc.u.token, fmt.Sprintf("/contact/list?company_id=%d", tc.company)), "404",
					fmt.Sprintf("counterparty %d not found", tc.company), "")
			})
		}
	})

	t.Run("another account", func(t *testing.T) {
		beta := e.newWorld(t, "beta")
		expectPage(t, e.contactList(t, beta.admin.token, nil), 0, 0, 1)
		expectPage(t, e.contactList(t, beta.admin.token, q("name", "ozol")), 0, 0, 1)
		expectError(t, e.get(t, beta.admin.token, fmt.Sprintf("/contact/list?company_id=%d", ofMember)), "404",
			fmt.Sprintf("counterparty %d not found", ofMember), "")
		own := addContact(t, e, beta.admin.token, map[string]any{"company_id": plainCompany(t, e, beta, beta.admin, "Beta"), "last_name": "Ozols"})
		expectPage(t, e.contactList(t, beta.admin.token, nil), 1, 1, 1, own)
		expectPage(t, e.contactList(t, w.admin.token, nil), 5, 1, 1, all...)
	})

	t.Run("deleted counterparty", func(t *testing.T) {
		gone := plainCompany(t, e, w, w.admin, "Gone")
		addContact(t, e, w.admin.token, map[string]any{"company_id": gone, "last_name": "Gone"})
		if _, err := e.db.Exec(`UPDATE companies SET deleted_at = now() WHERE id = $1`, gone); err != nil {
			t.Fatal(err)
		}
		expectPage(t, e.contactList(t, w.admin.token, nil), 5, 1, 1, all...)
		expectError(t, e.get(t, w.admin.token, fmt.Sprintf("/contact/list?company_id=%d", gone)), "404", fmt.Sprintf("counterparty %d not found", gone), "")
	})

	t.Run("OK default page size 50", func(t *testing.T) {
		big := e.newWorld(t, "big")
		company := plainCompany(t, e, big, big.admin, "Big")
		if _, err := e.db.Exec(`INSERT INTO contacts (account_id, company_id, first_name) SELECT $1, $2, 'C' || n FROM generate_series(1, 51) n`,
			big.accountID, company); err != nil {
			t.Fatal(err)
		}
		p := e.contactList(t, big.admin.token, nil)
		if p.rows != 51 || p.pages != 2 || p.page != 1 || len(p.ids) != 50 {
			t.Errorf("rows %d pages %d page %d, %d on the page", p.rows, p.pages, p.page, len(p.ids))
		}
		if p := e.contactList(t, big.admin.token, q("records_onpage", "200")); p.rows != 51 || p.pages != 1 || len(p.ids) != 51 {
			t.Errorf("rows %d pages %d, %d on the page", p.rows, p.pages, len(p.ids))
		}
		if p := e.contactList(t, big.admin.token, q("company_id", fmt.Sprint(company))); p.rows != 51 || p.pages != 1 || len(p.ids) != 51 {
			t.Errorf("company_id: rows %d pages %d, %d on the page", p.rows, p.pages, len(p.ids))
		}
	})

	for _, tc := range []struct{ query, want string }{
		{"records_onpage=201", `query parameter "records_onpage": number must be at most 200`},
		{"records_onpage=0", `query parameter "records_onpage"`},
		{"records_onpage=ten", `query parameter "records_onpage"`},
		{"page=0", `query parameter "page"`},
		{"page=-1", `query parameter "page"`},
		{"company_id=0", `query parameter "company_id"`},
		{"company_id=abc", `query parameter "company_id"`},
		{"company_id=1&records_onpage=201", `query parameter "records_onpage"`},
		{"name=" + strings.Repeat("x", 256), `query parameter "name"`},
	} {
		t.Run(tc.query[:min(len(tc.query), 40)], func(t *testing.T) {
			expectError(t, e.get(t, w.admin.token, "/contact/list?"+tc.query), "400", tc.want, "")
		})
	}
}

func countIn(ids []int64, of ...int64) int { return len(filter(ids, of...)) }

// filter keeps the ids that are among of, in their order.
func filter(ids []int64, of ...int64) []int64 {
	var out []int64
	for _, id := range ids {
		for _, o := range of {
			if id == o {
				out = append(out, id)
			}
		}
	}
	return out
}

func pagesOf(rows int) int {
	if rows == 0 {
		return 0
	}
	return 1
}
