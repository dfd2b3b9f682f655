package impl_test

import (
	"fmt"
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	company, _ := newCompany(t, e, w, "Contoso", w.member)
	deal := newDeal(t, e, w, company, w.member, nil)

	var segment int64
	t.Run("OK define, list, retitle", func(t *testing.T) {
		mark := e.lastJournalID(t)
		segment = parseID(t, expectOK(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 1, "name": "segment", "title": "Segment"})))
		parseID(t, expectOK(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 1, "name": "employees", "type": "number"})))
		parseID(t, expectOK(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 20, "name": "signed", "type": "date"})))
		e.expectJournal(t, mark,
			journalRow{w.admin.id, "field", segment, "insert", map[string]any{"module": 1.0, "name": "segment", "title": "Segment", "type": "text"}},
			e.journalSince(t, mark)[1], e.journalSince(t, mark)[2])
		for _, c := range w.roles() {
			list := decode[[]map[string]any](t, expectQuick(t, e.get(t, c.u.token, "/field/list")))
			if len(list) != 3 || list[0]["name"] != "employees" || list[2]["module"] != 20.0 {
				t.Errorf("%s: %v", c.name, list)
			}
		}
		if r := e.get(t, w.admin.token, "/field/list?module=20"); r.Rows != 1 {
			t.Errorf("module 20: %s", r.Raw)
		}
		expectOK(t, e.post(t, w.admin.token, "/field/update", map[string]any{"id": segment, "title": "Market segment"}))
		if r := e.get(t, beta.admin.token, "/field/list"); r.Value != "[]" {
			t.Errorf("beta sees %s", r.Raw)
		}
	})

	t.Run("OK values: the list and the card show them", func(t *testing.T) {
		expectOK(t, e.post(t, w.member.token, "/field/values/update", map[string]any{"module": 1, "id": company,
			"values": map[string]any{"segment": "Retail", "employees": 40}}))
		expectOK(t, e.post(t, w.member.token, "/field/values/update", map[string]any{"module": 20, "id": deal, "values": map[string]any{"signed": "2026-11-20"}}))
		row := decode[[]map[string]any](t, e.post(t, w.member.token, fmt.Sprintf("/common/list/paging/1?columns=id,ADD_segment,ADD_employees&id=%d", company), nil).Value)
		if len(row) != 1 || row[0]["ADD_segment"] != "Retail" || row[0]["ADD_employees"] != 40.0 {
			t.Errorf("list %v", row)
		}
		card := e.card(t, w.member.token, company)["company"].(map[string]any)
		if card["ADD_segment"] != "Retail" {
			t.Errorf("card %v", card)
		}
		changes := e.journalChanges(t, 1, "company", company)
		if fmt.Sprint(changes["ADD_segment"]) != "[<nil> Retail]" {
			t.Errorf("journal %v", changes)
		}
		expectOK(t, e.post(t, w.member.token, "/field/values/update", map[string]any{"module": 1, "id": company, "remove": []string{"segment"}}))
		if row := decode[[]map[string]any](t, e.post(t, w.member.token, fmt.Sprintf("/common/list/paging/1?columns=ADD_segment&id=%d", company), nil).Value); row[0]["ADD_segment"] != nil {
			t.Errorf("removed value %v", row)
		}
	})

	t.Run("values: access levels", func(t *testing.T) {
		for _, c := range w.roles() {
			r := e.post(t, c.u.token, "/field/values/update", map[string]any{"module": 1, "id": company, "values": map[string]any{"segment": c.name}})
			if c.visible {
				expectOK(t, r)
			} else {
				expectError(t, r, "404", fmt.Sprintf("counterparty %d not found", company), "")
			}
		}
		expectError(t, e.post(t, beta.admin.token, "/field/values/update", map[string]any{"module": 20, "id": deal, "values": map[string]any{"signed": "2026-11-20"}}),
			"404", fmt.Sprintf("deal %d not found", deal), "")
	})

	t.Run("admins only", func(t *testing.T) {
		for _, c := range w.roles()[1:] {
			expectError(t, e.post(t, c.u.token, "/field/insert", map[string]any{"module": 1, "name": "x"}), "403", "only admins", "")
			expectError(t, e.post(t, c.u.token, "/field/update", map[string]any{"id": segment, "title": "x"}), "403", "only admins", "")
			expectError(t, e.post(t, c.u.token, "/field/delete", map[string]any{"id": segment}), "403", "only admins", "")
		}
		expectError(t, e.post(t, beta.admin.token, "/field/update", map[string]any{"id": segment, "title": "x"}), "404", "not found", "")
		expectError(t, e.post(t, beta.admin.token, "/field/delete", map[string]any{"id": segment}), "404", "not found", "")
	})

	t.Run("bad input writes nothing", func(t *testing.T) {
		before := e.rowCounts(t, w.accountID, "field_definitions", "journal")
		expectError(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 1, "name": "segment"}), "409", `module 1 already has the field "segment"`, fmt.Sprint(segment))
		expectError(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 2, "name": "x"}), "400", "module", "")
		expectError(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 1, "name": "bad name"}), "400", "name", "")
		expectError(t, e.post(t, w.member.token, "/field/values/update", map[string]any{"module": 1, "id": company, "values": map[string]any{"employees": "many"}}),
			"400", "values.employees: the field is of type number", "")
		expectError(t, e.post(t, w.member.token, "/field/values/update", map[string]any{"module": 20, "id": deal, "values": map[string]any{"signed": "2026-02-30"}}),
			"400", "values.signed: the field is of type date", "")
		expectError(t, e.post(t, w.member.token, "/field/values/update", map[string]any{"module": 1, "id": company, "values": map[string]any{"nope": 1}}),
			"400", "values.nope: no such additional field", "")
		if after := e.rowCounts(t, w.accountID, "field_definitions", "journal"); after != before {
			t.Error("a refused request wrote rows")
		}
	})

	t.Run("OK delete: the column is unknown, the values come back with the field", func(t *testing.T) {
		expectOK(t, e.post(t, w.admin.token, "/field/delete", map[string]any{"id": segment}))
		expectError(t, e.post(t, w.admin.token, "/common/list/paging/1?columns=id,ADD_segment", nil), "400", "ADD_segment", "")
		parseID(t, expectOK(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 1, "name": "segment"})))
		if card := e.card(t, w.admin.token, company)["company"].(map[string]any); card["ADD_segment"] == nil {
			t.Errorf("card %v", card)
		}
	})
}

func TestFilters(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	company, _ := newCompany(t, e, w, "Contoso", w.admin)
	newDeal(t, e, w, company, w.admin, map[string]any{"type_id": w.dirs[40][1]})
	newDeal(t, e, w, company, w.admin, nil)

	id := parseID(t, expectOK(t, e.post(t, w.admin.token, "/filter/insert", map[string]any{"module": 20, "name": "Upsell", "definition": map[string]any{"type_id": w.dirs[40][1]}})))
	if j := e.journalChanges(t, 20, "filter", id); j["name"] != "Upsell" {
		t.Errorf("journal %v", j)
	}
	list := e.post(t, w.admin.token, fmt.Sprintf("/common/list/paging/20?columns=id,type_id&user_filter_ids=%d", id), nil)
	if list.Rows != 1 {
		t.Errorf("the ready filter does not filter: %s", list.Raw)
	}
	for _, c := range w.roles() {
		if got := decode[[]map[string]any](t, expectQuick(t, e.get(t, c.u.token, "/filter/list?module=20"))); len(got) != 1 || got[0]["name"] != "Upsell" {
			t.Errorf("%s: %v", c.name, got)
		}
	}
	expectOK(t, e.post(t, w.admin.token, "/filter/update", map[string]any{"id": id, "definition": map[string]any{"type_id": w.dirs[40][0]}, "name": "New"}))
	if j := e.journalChanges(t, 20, "filter", id); fmt.Sprint(j["name"]) != "[Upsell New]" || j["definition"] == nil {
		t.Errorf("journal %v", j)
	}

	for _, c := range w.roles()[1:] {
		expectError(t, e.post(t, c.u.token, "/filter/insert", map[string]any{"module": 20, "name": "x", "definition": map[string]any{"type_id": 1}}), "403", "only admins", "")
		expectError(t, e.post(t, c.u.token, "/filter/update", map[string]any{"id": id, "name": "x"}), "403", "only admins", "")
		expectError(t, e.post(t, c.u.token, "/filter/delete", map[string]any{"id": id}), "403", "only admins", "")
	}
	expectError(t, e.post(t, beta.admin.token, "/filter/update", map[string]any{"id": id, "name": "x"}), "404", "not found", "")
	if r := e.get(t, beta.admin.token, "/filter/list"); r.Value != "[]" {
		t.Errorf("beta sees %s", r.Raw)
	}

	before := e.rowCounts(t, w.accountID, "user_filters", "journal")
	for name, c := range map[string]struct {
		body map[string]any
		msg  string
	}{
		"filter of another module": {map[string]any{"module": 20, "name": "x", "definition": map[string]any{"segment": 1}}, "definition: filter segment is not supported by module 20"},
		"bad date":                 {map[string]any{"module": 20, "name": "x", "definition": map[string]any{"date1": "soon"}}, "definition: date1"},
		"nested ready filter":      {map[string]any{"module": 1, "name": "x", "definition": map[string]any{"user_filter_ids": "1"}}, "definition: a ready filter cannot name"},
		"module without filters":   {map[string]any{"module": 2, "name": "x", "definition": map[string]any{"tags": "a"}}, "module"},
		"empty definition":         {map[string]any{"module": 1, "name": "x", "definition": map[string]any{}}, "definition"},
	} {
		t.Run(name, func(t *testing.T) {
			expectError(t, e.post(t, w.admin.token, "/filter/insert", c.body), "400", c.msg, "")
		})
	}
	if after := e.rowCounts(t, w.accountID, "user_filters", "journal"); after != before {
		t.Error("a refused request wrote rows")
	}
	expectOK(t, e.post(t, w.admin.token, "/filter/delete", map[string]any{"id": id}))
	expectError(t, e.post(t, w.admin.token, fmt.Sprintf("/common/list/paging/20?columns=id&user_filter_ids=%d", id), nil), "400", "user_filter_ids", "")
}

func TestContactSocialSet(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	company, contact := newCompany(t, e, w, "Contoso", w.member)

	mark := e.lastJournalID(t)
	stored := decode[[]map[string]any](t, expectOK(t, e.post(t, w.member.token, "/contact/social/set", map[string]any{"contact_id": contact,
		"SocialNetworks": []any{map[string]any{"network": "LinkedIn", "address": "https://linkedin.example/in/anna"},
			map[string]any{"network": "linkedin", "address": "https://linkedin.example/in/anna"}, map[string]any{"network": "telegram", "address": "@anna"}}})))
	if len(stored) != 2 || stored[0]["network"] != "linkedin" || stored[1]["address"] != "@anna" {
		t.Errorf("stored %v", stored)
	}
	j := e.journalSince(t, mark)
	if len(j) != 1 || j[0].Entity != "contact" || j[0].RecordID != contact || !strings.Contains(fmt.Sprint(j[0].Changes["SocialNetworks"]), "telegram") {
		t.Errorf("journal %+v", j)
	}
	contacts := decode[[]map[string]any](t, e.get(t, w.member.token, fmt.Sprintf("/contact/list?company_id=%d", company)).Value)
	if nets := contacts[0]["SocialNetworks"].([]any); len(nets) != 2 {
		t.Errorf("contact list %v", contacts)
	}
	mark = e.lastJournalID(t)
	expectOK(t, e.post(t, w.member.token, "/contact/social/set", map[string]any{"contact_id": contact, "SocialNetworks": []any{
		map[string]any{"network": "linkedin", "address": "https://linkedin.example/in/anna"}, map[string]any{"network": "telegram", "address": "@anna"}}}))
	e.expectJournal(t, mark) // the same networks: nothing written

	for _, c := range w.roles() {
		r := e.post(t, c.u.token, "/contact/social/set", map[string]any{"contact_id": contact, "SocialNetworks": []any{}})
		if c.visible {
			if r.Value != "[]" {
				t.Errorf("%s: %s", c.name, r.Raw)
			}
		} else {
			expectError(t, r, "404", fmt.Sprintf("contact person %d not found", contact), "")
		}
	}
	expectError(t, e.post(t, beta.admin.token, "/contact/social/set", map[string]any{"contact_id": contact, "SocialNetworks": []any{}}), "404", "not found", "")
	expectError(t, e.post(t, w.admin.token, "/contact/social/set", map[string]any{"contact_id": contact, "SocialNetworks": []any{map[string]any{"network": "a b", "address": "x"}}}),
		"400", "network", "")
}
