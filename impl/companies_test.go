package impl_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fullCompany is an insert with every kind of nested record.
func fullCompany(w *world, email string) map[string]any {
	return map[string]any{
		"name": "Contoso", "type_id": w.dirs[9][0], "user_id": w.member.id, "status_id": w.dirs[10][0],
		"category_id": w.dirs[29][1], "group_id": w.dirs[49][0], "agent_id": w.dirs[48][0],
		"person": 1, "address": "1 Harbour Street", "city": "Tallinn", "country": "Estonia", "region": "Harju",
		"url": "https://contoso.example", "activity_type": "Retail", "property_form": "LLC", "info_source": "fair",
		"note": "Met at the fair", "tags": " vip, baltics ,vip,", "external_code": "C-1",
		"which_site_source": "site", "which_host_source": "host", "which_link_source": "https://site/x",
		"utm_campaign": "c", "utm_source": "s", "utm_medium": "m", "utm_content": "ct", "utm_term": "t",
		"Emails": []any{map[string]any{"email": email}},
		"Phones": []any{map[string]any{"phone": "+372 600-0000", "descr": "reception"}},
		"Contacts": []any{
			map[string]any{
				"first_name": "Janis", "last_name": "Ozols", "middle_name": "K", "position": "Buyer", "note": "n",
				"status_id": w.dirs[43][0],
				"Emails":    []any{map[string]any{"email": "janis." + email}},
				"Phones":    []any{map[string]any{"phone": "+371 2000 0001", "descr": "mobile"}},
			},
			map[string]any{"first_name": "Mari", "position": "buyer"},
		},
		"Paymentdetails": map[string]any{"inn": "7701234567", "kpp": "770101001", "bank_name": "Baltic Bank", "rs": "4070"},
	}
}

func insertCompany(t *testing.T, e *env, token string, body map[string]any) int64 {
	t.Helper()
	v := expectOK(t, e.post(t, token, "/company/insert", body))
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("value %q is not an id", v)
	}
	return id
}

func TestCompanyInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")

	t.Run("OK with everything nested", func(t *testing.T) {
		id := insertCompany(t, e, w.member.token, fullCompany(w, "info@contoso.example"))

		var c struct {
			Name, City, Note, TaxID, CreatedVia string
			Tags                                string
			UserID, TypeID, CreatedBy           int64
			Person                              int
		}
		err := e.db.QueryRow(`SELECT name, city, note, tax_id, created_via, array_to_string(tags, '|'), user_id, type_id, created_by, person
			FROM companies WHERE account_id = $1 AND id = $2`, w.accountID, id).
			Scan(&c.Name, &c.City, &c.Note, &c.TaxID, &c.CreatedVia, &c.Tags, &c.UserID, &c.TypeID, &c.CreatedBy, &c.Person)
		if err != nil {
			t.Fatal(err)
		}
		want := c
		want.Name, want.City, want.Note, want.TaxID, want.CreatedVia = "Contoso", "Tallinn", "Met at the fair", "7701234567", "api"
		want.Tags, want.UserID, want.TypeID, want.CreatedBy, want.Person = "vip|baltics", w.member.id, w.dirs[9][0], w.member.id, 1
		if c != want {
			t.Errorf("stored %+v, want %+v", c, want)
		}
		if n := e.count(t, `SELECT count(*) FROM emails WHERE company_id = $1`, id); n != 2 {
			t.Errorf("%d e-mails, want 2", n)
		}
		if n := e.count(t, `SELECT count(*) FROM phones WHERE company_id = $1 AND phone_digits IN ('3726000000', '37120000001')`, id); n != 2 {
			t.Errorf("%d phones with normalised digits, want 2", n)
		}
		if n := e.count(t, `SELECT count(*) FROM contacts WHERE company_id = $1`, id); n != 2 {
			t.Errorf("%d contacts, want 2", n)
		}
		// "Buyer" and "buyer" are one position, added to directory 42 once.
		if n := e.count(t, `SELECT count(DISTINCT position_id) FROM contacts WHERE company_id = $1`, id); n != 1 {
			t.Errorf("%d distinct positions, want 1", n)
		}
		if n := e.count(t, `SELECT count(*) FROM directory_values WHERE account_id = $1 AND directory_code = 42`, w.accountID); n != 1 {
			t.Errorf("%d positions in the directory, want 1", n)
		}
		if n := e.count(t, `SELECT count(*) FROM requisites WHERE company_id = $1 AND is_default`, id); n != 1 {
			t.Errorf("%d default requisites, want 1", n)
		}
		var entities []string
		if err := e.db.Select(&entities, `SELECT entity || ':' || action FROM journal WHERE account_id = $1 AND user_id = $2 ORDER BY id`,
			w.accountID, w.member.id); err != nil {
			t.Fatal(err)
		}
		wantJournal := []string{"company:insert", "email:insert", "phone:insert", "contact:insert", "email:insert",
			"phone:insert", "contact:insert", "requisites:insert"}
		if !reflect.DeepEqual(entities, wantJournal) {
			t.Errorf("journal %v, want %v", entities, wantJournal)
		}
	})

	t.Run("minimal private person", func(t *testing.T) {
		id := insertCompany(t, e, w.other.token, map[string]any{"name": "Ozols Janis", "type_id": w.dirs[9][1], "user_id": w.other.id,
			"person": 2, "first_name": "Janis", "last_name": "Ozols"})
		if n := e.count(t, `SELECT count(*) FROM companies WHERE id = $1 AND person = 2 AND tax_id = '' AND status_id IS NULL`, id); n != 1 {
			t.Error("private person not stored as sent")
		}
	})

	t.Run("duplicate e-mail", func(t *testing.T) {
		first := insertCompany(t, e, w.member.token, map[string]any{"name": "First", "type_id": w.dirs[9][0], "user_id": w.member.id,
			"Emails": []any{map[string]any{"email": "sales@first.example"}}})
		before := e.count(t, `SELECT count(*) FROM companies`)
		for _, tc := range []struct{ name, email string }{
			{"same", "sales@first.example"},
			{"other case", "SALES@First.Example"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.post(t, w.member.token, "/company/insert?check_duplicates=true", map[string]any{
					"name": "Second", "type_id": w.dirs[9][0], "user_id": w.member.id,
					"Emails": []any{map[string]any{"email": "new@second.example"}, map[string]any{"email": tc.email}}})
				expectError(t, r, "409", fmt.Sprintf(`the e-mail sales@first.example already belongs to counterparty %d "First"`, first),
					strconv.FormatInt(first, 10))
			})
		}
		t.Run("in a contact person's e-mails", func(t *testing.T) {
			body := fullCompany(w, "fresh@second.example")
			body["Contacts"] = []any{map[string]any{"first_name": "X", "Emails": []any{map[string]any{"email": "sales@first.example"}}}}
			expectError(t, e.post(t, w.member.token, "/company/insert?check_duplicates=true", body), "409", "sales@first.example",
				strconv.FormatInt(first, 10))
		})
		t.Run("name hidden from who may not see it", func(t *testing.T) {
			r := e.post(t, w.other.token, "/company/insert?check_duplicates=true", map[string]any{
				"name": "Second", "type_id": w.dirs[9][0], "user_id": w.other.id, "Emails": []any{map[string]any{"email": "sales@first.example"}}})
			expectError(t, r, "409", fmt.Sprintf("belongs to counterparty %d", first), strconv.FormatInt(first, 10))
			if strings.Contains(r.errorText(), "First") {
				t.Errorf("the name of an invisible counterparty leaked: %s", r.errorText())
			}
		})
		if n := e.count(t, `SELECT count(*) FROM companies`); n != before {
			t.Fatalf("%d counterparties after refused duplicates, want %d", n, before)
		}
		t.Run("allowed without check_duplicates", func(t *testing.T) {
			insertCompany(t, e, w.member.token, map[string]any{"name": "Second", "type_id": w.dirs[9][0], "user_id": w.member.id,
				"Emails": []any{map[string]any{"email": "sales@first.example"}}})
		})
		t.Run("another account's e-mails are not duplicates", func(t *testing.T) {
			b := e.newWorld(t, "beta")
			insertCompany(t, e, b.member.token, map[string]any{"name": "B", "type_id": b.dirs[9][0], "user_id": b.member.id,
				"Emails": []any{map[string]any{"email": "sales@first.example"}}})
		})
	})

	bad := func(w *world, change func(map[string]any)) map[string]any {
		body := map[string]any{"name": "Bad", "type_id": w.dirs[9][0], "user_id": w.member.id,
			"Emails": []any{map[string]any{"email": "bad@bad.example"}}}
		change(body)
		return body
	}
	beta := e.newWorld(t, "gamma")
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"missing name", bad(w, func(b map[string]any) { delete(b, "name") }), `property "name" is missing`},
		{"empty name", bad(w, func(b map[string]any) { b["name"] = "" }), `field "name"`},
		{"name too long", bad(w, func(b map[string]any) { b["name"] = strings.Repeat("x", 256) }), `field "name"`},
		{"wrong type", bad(w, func(b map[string]any) { b["type_id"] = "11" }), `field "type_id"`},
		{"unknown field", bad(w, func(b map[string]any) { b["colour"] = "red" }), `property "colour" is unsupported`},
		{"field in another case", bad(w, func(b map[string]any) { b["NAME"] = "x" }), `property "NAME" is unsupported`},
		{"person out of range", bad(w, func(b map[string]any) { b["person"] = 3 }), `field "person"`},
		{"invalid e-mail", bad(w, func(b map[string]any) { b["Emails"] = []any{map[string]any{"email": "not an e-mail"}} }), `field "Emails.0.email"`},
		{"invalid phone", bad(w, func(b map[string]any) { b["Phones"] = []any{map[string]any{"phone": "call me"}} }), `field "Phones.0.phone"`},
		{"null field", bad(w, func(b map[string]any) { b["note"] = nil }), `field "note"`},
		{"unknown type", bad(w, func(b map[string]any) { b["type_id"] = 999999999 }), "type_id: no such value in directory 9"},
		{"status as type", bad(w, func(b map[string]any) { b["type_id"] = w.dirs[10][0] }), "type_id: no such value in directory 9"},
		{"another account's type", bad(w, func(b map[string]any) { b["type_id"] = beta.dirs[9][0] }), "type_id: no such value in directory 9"},
		{"another account's user", bad(w, func(b map[string]any) { b["user_id"] = beta.member.id }), "user_id: no such user"},
		{"unknown category", bad(w, func(b map[string]any) { b["category_id"] = w.dirs[9][0] }), "category_id: no such value in directory 29"},
		{"unknown contact status", bad(w, func(b map[string]any) {
			b["Contacts"] = []any{map[string]any{"first_name": "A", "status_id": w.dirs[9][0]}}
		}), "status_id: no such value in directory 43"},
		{"body not JSON", "{name: 1", "request body"},
		{"body an array", "[]", "request body"},
		{"empty body", "", "request body"},
		{"null body", "null", "request body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.count(t, `SELECT (SELECT count(*) FROM companies WHERE account_id = $1) + (SELECT count(*) FROM emails WHERE account_id = $1) + (SELECT count(*) FROM journal WHERE account_id = $1)`, w.accountID)
			expectError(t, e.post(t, w.member.token, "/company/insert", tc.body), "400", tc.want, "")
			if after := e.count(t, `SELECT (SELECT count(*) FROM companies WHERE account_id = $1) + (SELECT count(*) FROM emails WHERE account_id = $1) + (SELECT count(*) FROM journal WHERE account_id = $1)`, w.accountID); after != before {
				t.Errorf("a refused insert wrote %d rows", after-before)
			}
		})
	}

	t.Run("wrong content type", func(t *testing.T) {
		r := e.do(t, request{method: http.MethodPost, target: "/company/insert", token: w.member.token,
			body: `{"name":"x","type_id":1,"user_id":1}`, contentType: "text/plain"})
		expectError(t, r, "400", "Content-Type", "")
	})
	t.Run("oversize body", func(t *testing.T) {
		body := fmt.Sprintf(`{"name":"x","type_id":1,"user_id":1,"note":"%s"}`, strings.Repeat("x", 1<<20))
		expectError(t, e.post(t, w.member.token, "/company/insert", body), "400", "request body is larger than 1048576 bytes", "")
	})
	t.Run("bad query parameter", func(t *testing.T) {
		expectError(t, e.post(t, w.member.token, "/company/insert?check_duplicates=perhaps", bad(w, func(map[string]any) {})),
			"400", `query parameter "check_duplicates"`, "")
	})
}

// TestCompanyInsertConcurrentDuplicates sends 20 inserts with the same e-mail at
// once: exactly one may create a counterparty.
func TestCompanyInsertConcurrentDuplicates(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "race")
	const n = 20
	var wg sync.WaitGroup
	replies := make([]reply, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = e.post(t, w.member.token, "/company/insert?check_duplicates=true", map[string]any{
				"name": fmt.Sprintf("Racer %d", i), "type_id": w.dirs[9][0], "user_id": w.member.id,
				"Contacts": []any{map[string]any{"first_name": "R", "Emails": []any{map[string]any{"email": "Race@Same.example"}}}}})
		}()
	}
	wg.Wait()
	var created []string
	for _, r := range replies {
		if r.Status == "success" {
			created = append(created, r.Value)
		}
	}
	if len(created) != 1 {
		t.Fatalf("%d inserts succeeded, want 1", len(created))
	}
	for _, r := range replies {
		if r.Status != "success" {
			expectError(t, r, "409", "the e-mail Race@Same.example already belongs to counterparty "+created[0], created[0])
		}
	}
	if got := e.count(t, `SELECT count(*) FROM companies WHERE account_id = $1`, w.accountID); got != 1 {
		t.Fatalf("%d counterparties stored, want 1", got)
	}
}

func TestCompanyGet(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	if _, err := e.db.Exec(`INSERT INTO field_definitions (account_id, module, name, type) VALUES ($1, 1, 'industry', 'text'), ($1, 1, 'size', 'number')`, w.accountID); err != nil {
		t.Fatal(err)
	}
	id := insertCompany(t, e, w.member.token, fullCompany(w, "info@card.example"))
	if _, err := e.db.Exec(`UPDATE companies SET extra = '{"industry": "retail"}' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var created string
	if err := e.db.Get(&created, `SELECT to_char(created_at AT TIME ZONE 'Europe/Riga', 'YYYY-MM-DD HH24:MI:SS') FROM companies WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		card := decode[map[string]any](t, expectOK(t, e.get(t, w.member.token, fmt.Sprintf("/company/get?id=%d", id))))
		company := card["company"].(map[string]any)
		want := map[string]any{
			"id": float64(id), "name": "Contoso", "address": "1 Harbour Street", "created": created, "city": "Tallinn",
			"region": "Harju", "country": "Estonia", "activity_type": "Retail", "property_form": "LLC",
			"type_id": float64(w.dirs[9][0]), "type": "Client", "created_by": "member of acme", "info_source": "fair",
			"first_name": "", "middle_name": "", "last_name": "", "url": "https://contoso.example",
			"user_id": float64(w.member.id), "user_name": "member of acme", "person": float64(1), "note": "Met at the fair",
			"external_code": "C-1", "category_id": float64(w.dirs[29][1]), "category": "B", "status_id": float64(w.dirs[10][0]),
			"status": "Active", "agent_id": float64(w.dirs[48][0]), "agent": "Agent Smith", "group_id": float64(w.dirs[49][0]),
			"group": "Retail", "tax_id": "7701234567", "tags": "vip,baltics", "which_site_source": "site",
			"which_host_source": "host", "which_link_source": "https://site/x", "utm_campaign": "c", "utm_source": "s",
			"utm_medium": "m", "utm_content": "ct", "utm_term": "t", "ADD_industry": "retail", "ADD_size": nil,
		}
		if !reflect.DeepEqual(company, want) {
			for k, v := range want {
				if !reflect.DeepEqual(company[k], v) {
					t.Errorf("company.%s = %#v, want %#v", k, company[k], v)
				}
			}
			for k := range company {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected company.%s", k)
				}
			}
		}
		emails := card["emails"].([]any)
		if len(emails) != 2 || emails[0].(map[string]any)["id_contact_man"] != nil || emails[1].(map[string]any)["id_contact_man"] == nil {
			t.Errorf("emails: the counterparty's own first, then the contact's with id_contact_man: %v", emails)
		}
		if got := emails[1].(map[string]any)["email"]; got != "janis.info@card.example" {
			t.Errorf("contact e-mail %v", got)
		}
		if phones := card["phones"].([]any); len(phones) != 2 {
			t.Errorf("phones %v", phones)
		}
		reqs := card["requisites"].([]any)
		if len(reqs) != 1 || reqs[0].(map[string]any)["use_default"] != "True" || reqs[0].(map[string]any)["inn"] != "7701234567" {
			t.Errorf("requisites %v", reqs)
		}
		contacts := card["contacts"].([]any)
		if len(contacts) != 2 {
			t.Fatalf("contacts %v", contacts)
		}
		janis := contacts[0].(map[string]any)
		if janis["name"] != "Ozols Janis K" || janis["position"] != "Buyer" || janis["status"] != "Works" ||
			janis["company_name"] != "Contoso" || len(janis["Emails"].([]any)) != 1 || len(janis["Phones"].([]any)) != 1 {
			t.Errorf("contact %v", janis)
		}
		if mari := contacts[1].(map[string]any); mari["name"] != "Mari" || mari["position"] != "Buyer" || len(mari["Emails"].([]any)) != 0 {
			t.Errorf("contact %v", mari)
		}
	})

	missing := func(t *testing.T, token string, id int64) {
		t.Helper()
		r := e.get(t, token, fmt.Sprintf("/company/get?id=%d", id))
		// "For a missing or deleted counterparty the reply has status Error."
		if r.Status != "Error" || r.code() != "404" || r.errorText() != fmt.Sprintf("counterparty %d not found", id) || r.Value != "" {
			t.Fatalf("want status Error 404, got %s", r.Raw)
		}
	}
	t.Run("access levels", func(t *testing.T) {
		for _, who := range w.roles() {
			t.Run(who.name, func(t *testing.T) {
				if who.visible {
					expectOK(t, e.get(t, who.u.token, fmt.Sprintf("/company/get?id=%d", id)))
				} else {
					missing(t, who.u.token, id)
				}
			})
		}
		t.Run("another account's admin", func(t *testing.T) {
			missing(t, e.newWorld(t, "beta").admin.token, id)
		})
	})
	t.Run("missing", func(t *testing.T) { missing(t, w.admin.token, 9223372036854775807) })
	t.Run("deleted", func(t *testing.T) {
		gone := insertCompany(t, e, w.admin.token, map[string]any{"name": "Gone", "type_id": w.dirs[9][0], "user_id": w.admin.id})
		if _, err := e.db.Exec(`UPDATE companies SET deleted_at = now() WHERE id = $1`, gone); err != nil {
			t.Fatal(err)
		}
		missing(t, w.admin.token, gone)
	})
	t.Run("bad id", func(t *testing.T) {
		expectError(t, e.get(t, w.admin.token, "/company/get?id=abc"), "400", `query parameter "id"`, "")
		expectError(t, e.get(t, w.admin.token, "/company/get?id=0"), "400", `query parameter "id"`, "")
		expectError(t, e.get(t, w.admin.token, "/company/get"), "400", `query parameter "id"`, "")
	})
}
