package impl_test

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// storedCompany is the counterparty's row as JSON, without updated_at.
func (e *env) storedCompany(t *testing.T, id int64) map[string]any {
	t.Helper()
	var raw string
	if err := e.db.Get(&raw, `SELECT (to_jsonb(c) - 'updated_at')::text FROM companies c WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return decode[map[string]any](t, raw)
}

func (e *env) updatedAt(t *testing.T, id int64) time.Time {
	t.Helper()
	var at time.Time
	if err := e.db.Get(&at, `SELECT updated_at FROM companies WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return at
}

// expectStored compares the stored row of a counterparty with want, naming
// every column that differs.
func expectStored(t *testing.T, got, want map[string]any) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected column %s", k)
		}
	}
}

func TestCompanyUpdate(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	id := insertCompany(t, e, w.member.token, fullCompany(w, "info@update.example"))
	f := func(v int64) float64 { return float64(v) } // decoded JSON numbers

	update := func(t *testing.T, token string, body map[string]any) {
		t.Helper()
		if v := expectOK(t, e.post(t, token, "/company/update", body)); v != "1" {
			t.Fatalf("value %q, want 1", v)
		}
	}

	t.Run("OK only the passed fields change", func(t *testing.T) {
		before, beforeAt := e.storedCompany(t, id), e.updatedAt(t, id)
		attached := e.count(t, `SELECT (SELECT count(*) FROM emails WHERE account_id = $1) + (SELECT count(*) FROM phones WHERE account_id = $1) + (SELECT count(*) FROM contacts WHERE account_id = $1) + (SELECT count(*) FROM requisites WHERE account_id = $1)`, w.accountID)
		mark := e.lastJournalID(t)

		update(t, w.member.token, map[string]any{"id": id, "note": "Prefers e-mail", "tags": "b2b, vip,b2b", "status_id": w.dirs[10][1], "city": ""})

		want := maps.Clone(before)
		want["note"], want["tags"], want["status_id"], want["city"] = "Prefers e-mail", []any{"b2b", "vip"}, f(w.dirs[10][1]), ""
		expectStored(t, e.storedCompany(t, id), want)
		if at := e.updatedAt(t, id); !at.After(beforeAt) {
			t.Errorf("updated_at %v not after %v", at, beforeAt)
		}
		if n := e.count(t, `SELECT (SELECT count(*) FROM emails WHERE account_id = $1) + (SELECT count(*) FROM phones WHERE account_id = $1) + (SELECT count(*) FROM contacts WHERE account_id = $1) + (SELECT count(*) FROM requisites WHERE account_id = $1)`, w.accountID); n != attached {
			t.Errorf("phones, e-mails, contacts or requisites changed: %d rows, want %d", n, attached)
		}
		e.expectJournal(t, mark, journalRow{UserID: w.member.id, Entity: "company", RecordID: id, Action: "update", Changes: map[string]any{
			"note":      []any{"Met at the fair", "Prefers e-mail"},
			"tags":      []any{[]any{"vip", "baltics"}, []any{"b2b", "vip"}},
			"status_id": []any{f(w.dirs[10][0]), f(w.dirs[10][1])},
			"city":      []any{"Tallinn", ""},
		}})
		company := e.card(t, w.member.token, id)["company"].(map[string]any)
		if company["note"] != "Prefers e-mail" || company["tags"] != "b2b,vip" || company["status"] != "Lost" || company["city"] != "" {
			t.Errorf("card %v", company)
		}
	})

	t.Run("OK every updatable field", func(t *testing.T) {
		before := e.storedCompany(t, id)
		body := map[string]any{
			"id": id, "name": "Contoso Baltic", "note": "n2", "address": "2 Dock Road", "city": "Riga", "country": "Latvia",
			"region": "Vidzeme", "url": "https://contoso.example/lv", "activity_type": "Wholesale", "property_form": "SIA",
			"info_source": "web", "type_id": w.dirs[9][1], "status_id": w.dirs[10][0], "category_id": w.dirs[29][0],
			"group_id": w.dirs[49][0], "agent_id": w.dirs[48][0], "user_id": w.member.id, "person": 2,
			"first_name": "Janis", "last_name": "Ozols", "middle_name": "K", "tags": "", "external_code": "C-2",
		}
		update(t, w.admin.token, body)
		want := maps.Clone(before)
		for k, v := range body {
			if k != "tags" {
				want[k] = jsonValue(t, v)
			}
		}
		want["tags"] = []any{}
		expectStored(t, e.storedCompany(t, id), want)
	})

	t.Run("OK null clears a directory reference", func(t *testing.T) {
		update(t, w.admin.token, map[string]any{"id": id, "status_id": w.dirs[10][1], "category_id": w.dirs[29][1]})
		before := e.storedCompany(t, id)
		mark := e.lastJournalID(t)
		update(t, w.admin.token, map[string]any{"id": id, "status_id": nil, "category_id": nil, "group_id": nil, "agent_id": nil})
		want := maps.Clone(before)
		want["status_id"], want["category_id"], want["group_id"], want["agent_id"] = nil, nil, nil, nil
		expectStored(t, e.storedCompany(t, id), want)
		e.expectJournal(t, mark, journalRow{UserID: w.admin.id, Entity: "company", RecordID: id, Action: "update", Changes: map[string]any{
			"status_id":   []any{f(w.dirs[10][1]), nil},
			"category_id": []any{f(w.dirs[29][1]), nil},
			"group_id":    []any{f(w.dirs[49][0]), nil},
			"agent_id":    []any{f(w.dirs[48][0]), nil},
		}})
		company := e.card(t, w.admin.token, id)["company"].(map[string]any)
		if company["status_id"] != nil || company["status"] != "" || company["category_id"] != nil || company["group"] != "" || company["agent"] != "" {
			t.Errorf("card %v", company)
		}
		// Clearing what is already empty changes nothing.
		e.expectNoWrites(t, func() { update(t, w.admin.token, map[string]any{"id": id, "status_id": nil}) })
	})

	t.Run("OK the stored values again: 1 and nothing written", func(t *testing.T) {
		now := e.storedCompany(t, id)
		e.expectNoWrites(t, func() {
			update(t, w.member.token, map[string]any{"id": id, "name": now["name"], "note": now["note"], "tags": "", "type_id": now["type_id"]})
		})
	})

	t.Run("OK the responsible user handed over", func(t *testing.T) {
		update(t, w.member.token, map[string]any{"id": id, "user_id": w.peer.id})
		// The member no longer sees it: it behaves as missing to them now.
		expectError(t, e.post(t, w.member.token, "/company/update", map[string]any{"id": id, "note": "x"}), "404",
			fmt.Sprintf("counterparty %d not found", id), "0")
		update(t, w.peer.token, map[string]any{"id": id, "user_id": w.member.id})
	})

	t.Run("access levels", func(t *testing.T) {
		for _, who := range w.roles() {
			t.Run(who.name, func(t *testing.T) {
				body := map[string]any{"id": id, "note": "by " + who.name}
				if who.visible {
					mark := e.lastJournalID(t)
					update(t, who.u.token, body)
					if j := e.journalSince(t, mark); len(j) != 1 || j[0].UserID != who.u.id {
						t.Errorf("journal %v", j)
					}
					return
				}
				e.expectNoWrites(t, func() {
					expectError(t, e.post(t, who.u.token, "/company/update", body), "404", fmt.Sprintf("counterparty %d not found", id), "0")
				})
			})
		}
	})

	beta := e.newWorld(t, "beta")
	t.Run("another account", func(t *testing.T) {
		e.expectNoWrites(t, func() {
			expectError(t, e.post(t, beta.admin.token, "/company/update", map[string]any{"id": id, "note": "x", "status_id": beta.dirs[10][0]}),
				"404", fmt.Sprintf("counterparty %d not found", id), "0")
		})
		own := plainCompany(t, e, beta, beta.admin, "Beta Ltd")
		for field, value := range map[string]int64{"status_id": w.dirs[10][0], "type_id": w.dirs[9][0], "user_id": w.admin.id} {
			t.Run("its counterparty with our "+field, func(t *testing.T) {
				e.expectNoWrites(t, func() {
					expectError(t, e.post(t, beta.admin.token, "/company/update", map[string]any{"id": own, field: value}), "400", field+": no such", "0")
				})
			})
		}
	})

	t.Run("missing", func(t *testing.T) {
		expectError(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": 9223372036854775807, "note": "x"}),
			"404", "counterparty 9223372036854775807 not found", "0")
	})
	t.Run("deleted", func(t *testing.T) {
		gone := plainCompany(t, e, w, w.admin, "Gone")
		if _, err := e.db.Exec(`UPDATE companies SET deleted_at = now() WHERE id = $1`, gone); err != nil {
			t.Fatal(err)
		}
		e.expectNoWrites(t, func() {
			expectError(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": gone, "note": "x"}),
				"404", fmt.Sprintf("counterparty %d not found", gone), "0")
		})
	})

	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"only id", map[string]any{"id": id}, "there must be at least 2 properties"},
		{"no id", map[string]any{"note": "x", "city": "y"}, `property "id" is missing`},
		{"id 0", map[string]any{"id": 0, "note": "x"}, `field "id"`},
		{"id as text", map[string]any{"id": fmt.Sprint(id), "note": "x"}, `field "id"`},
		{"unknown field", map[string]any{"id": id, "colour": "red"}, `property "colour" is unsupported`},
		{"field of the insert only", map[string]any{"id": id, "utm_source": "x"}, `property "utm_source" is unsupported`},
		{"empty name", map[string]any{"id": id, "name": ""}, `field "name"`},
		{"name too long", map[string]any{"id": id, "name": strings.Repeat("x", 256)}, `field "name"`},
		{"note too long", map[string]any{"id": id, "note": strings.Repeat("x", 10001)}, `field "note"`},
		{"tags too long", map[string]any{"id": id, "tags": strings.Repeat("x", 1001)}, `field "tags"`},
		{"null note", map[string]any{"id": id, "note": nil}, `field "note": Value is not nullable`},
		{"null name", map[string]any{"id": id, "name": nil}, `field "name": Value is not nullable`},
		{"null type", map[string]any{"id": id, "type_id": nil}, `field "type_id": Value is not nullable`},
		{"null user", map[string]any{"id": id, "user_id": nil}, `field "user_id": Value is not nullable`},
		{"null person", map[string]any{"id": id, "person": nil}, `field "person"`},
		{"person out of range", map[string]any{"id": id, "person": 3}, `field "person"`},
		{"status 0", map[string]any{"id": id, "status_id": 0}, `field "status_id": number must be at least 1`},
		{"status as text", map[string]any{"id": id, "status_id": "12"}, `field "status_id"`},
		{"unknown type", map[string]any{"id": id, "type_id": 999999999}, "type_id: no such value in directory 9"},
		{"a status as type", map[string]any{"id": id, "type_id": w.dirs[10][0]}, "type_id: no such value in directory 9"},
		{"a category as status", map[string]any{"id": id, "note": "not kept", "status_id": w.dirs[29][0]}, "status_id: no such value in directory 10"},
		{"unknown category", map[string]any{"id": id, "category_id": w.dirs[9][0]}, "category_id: no such value in directory 29"},
		{"unknown group", map[string]any{"id": id, "group_id": w.dirs[48][0]}, "group_id: no such value in directory 49"},
		{"unknown agent", map[string]any{"id": id, "agent_id": w.dirs[49][0]}, "agent_id: no such value in directory 48"},
		{"another account's status", map[string]any{"id": id, "status_id": beta.dirs[10][0]}, "status_id: no such value in directory 10"},
		{"another account's user", map[string]any{"id": id, "user_id": beta.member.id}, "user_id: no such user in the account"},
		{"body not JSON", "{id: 1", "request body"},
		{"body an array", "[]", "request body"},
		{"empty body", "", "request body"},
		{"null body", "null", "request body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.expectNoWrites(t, func() {
				expectError(t, e.post(t, w.admin.token, "/company/update", tc.body), "400", tc.want, "0")
			})
		})
	}
}
