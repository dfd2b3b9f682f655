package impl_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// dealState is what a test reads back of a stored deal.
type dealState struct {
	Name, DateStart, DateFinish, Sum, Note, Tags   string
	CompanyID, TypeID, StatusID, UserID, CreatedBy int64
	ContactID                                      *int64
}

func readDeal(t *testing.T, e *env, id int64) dealState {
	t.Helper()
	var d dealState
	err := e.db.QueryRow(`SELECT name, date_start::text, date_finish::text, sum::text, note, array_to_string(tags, '|'),
			company_id, type_id, status_id, user_id, created_by, contact_id
		FROM deals WHERE id = $1`, id).
		Scan(&d.Name, &d.DateStart, &d.DateFinish, &d.Sum, &d.Note, &d.Tags, &d.CompanyID, &d.TypeID, &d.StatusID, &d.UserID,
			&d.CreatedBy, &d.ContactID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// positionsOf returns the stored positions of a deal or document as
// "goods_id|description|code|qnt|price|discount|vat|sum|note", in id order.
func positionsOf(t *testing.T, e *env, table, owner string, id int64) []string {
	t.Helper()
	var rows []string
	err := e.db.Select(&rows, fmt.Sprintf(`SELECT concat_ws('|', coalesce(goods_id::text, '-'), description, code, qnt, price, discount, vat, sum, note)
		FROM %s WHERE %s = $1 ORDER BY id`, table, owner), id)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestDealInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	company, contact := newCompany(t, e, w, "Contoso", w.member)
	_, otherContact := newCompany(t, e, w, "Fabrikam", w.member)
	chair := newGoods(t, e, w, "Chair Ergo", "CH-1", "125.00", "2", "21", true)
	desk := newGoods(t, e, w, "Desk", "DE-1", "300.00", "1", "21", true)
	withdrawn := newGoods(t, e, w, "Old lamp", "LA-0", "10.00", "1", "21", false)

	t.Run("OK with goods in one transaction", func(t *testing.T) {
		r := e.post(t, w.member.token, "/deal/insert", map[string]any{
			"name": "Office chairs", "company_id": company, "contact_id": contact, "type_id": w.dirs[40][1],
			"status_id": w.dirs[41][1], "user_id": w.member.id, "date_start": "2026-11-01", "date_finish": "2026-12-15",
			"sum": json.Number("2500.10"), "note": "Board decides", "tags": "tender, vip",
			"Goods": []any{
				map[string]any{"goods_id": chair},
				map[string]any{"goods_id": chair, "discription": "Chair Ergo, black", "code": "CH-1B",
					"price": json.Number("0.1"), "qnt": json.Number("3"), "discount": json.Number("10"), "vat": json.Number("0"), "note": "black"},
				map[string]any{"discription": "Delivery", "price": json.Number("49.99")},
			},
		})
		id := parseID(t, expectOK(t, r))
		want := dealState{Name: "Office chairs", DateStart: "2026-11-01", DateFinish: "2026-12-15", Sum: "2500.10",
			Note: "Board decides", Tags: "tender|vip", CompanyID: company, TypeID: w.dirs[40][1], StatusID: w.dirs[41][1],
			UserID: w.member.id, CreatedBy: w.member.id, ContactID: &contact}
		if got := readDeal(t, e, id); !reflect.DeepEqual(got, want) {
			t.Errorf("stored %+v, want %+v", got, want)
		}
		wantPositions := []string{
			fmt.Sprintf("%d|Chair Ergo|CH-1|2.000|125.00|0.00|21.00|250.00|", chair),
			// 0.1 × 3 less 10 % is exactly 0.27
			fmt.Sprintf("%d|Chair Ergo, black|CH-1B|3.000|0.10|10.00|0.00|0.27|black", chair),
			"-|Delivery||1.000|49.99|0.00|0.00|49.99|",
		}
		if got := positionsOf(t, e, "deal_goods", "deal_id", id); !reflect.DeepEqual(got, wantPositions) {
			t.Errorf("positions\n got %q\nwant %q", got, wantPositions)
		}
		if j := e.journalRows(t, 20, "deal", id); !reflect.DeepEqual(j, []string{"insert"}) {
			t.Errorf("journal of the deal %v", j)
		}
		if n := e.count(t, `SELECT count(*) FROM journal WHERE module = 20 AND entity = 'deal_goods' AND action = 'insert'
			AND (changes->>'deal_id')::bigint = $1`, id); n != 3 {
			t.Errorf("%d journal rows of positions, want 3", n)
		}
		if c := e.journalChanges(t, 20, "deal", id); c["sum"] != json.Number("2500.10") || c["name"] != "Office chairs" {
			t.Errorf("journal changes %v", c)
		}
	})

	t.Run("OK minimal: sum 0, no goods", func(t *testing.T) {
		id := newDeal(t, e, w, company, w.peer, nil)
		if got := readDeal(t, e, id); got.Sum != "0.00" || got.Note != "" || got.Tags != "" || got.ContactID != nil || got.CreatedBy != w.admin.id {
			t.Errorf("stored %+v", got)
		}
		if n := e.count(t, `SELECT count(*) FROM deal_goods WHERE deal_id = $1`, id); n != 0 {
			t.Errorf("%d positions", n)
		}
	})

	t.Run("access levels", func(t *testing.T) {
		for _, who := range w.roles() {
			t.Run(who.name, func(t *testing.T) {
				before := e.rowCounts(t, w.accountID, "deals", "deal_goods", "journal")
				r := e.post(t, who.u.token, "/deal/insert", map[string]any{"name": "D", "company_id": company,
					"type_id": w.dirs[40][0], "status_id": w.dirs[41][0], "user_id": who.u.id, "date_start": "2026-11-01",
					"date_finish": "2026-11-01", "Goods": []any{map[string]any{"goods_id": desk}}})
				if who.visible {
					parseID(t, expectOK(t, r))
					return
				}
				expectError(t, r, "404", fmt.Sprintf("counterparty %d not found", company), "")
				if after := e.rowCounts(t, w.accountID, "deals", "deal_goods", "journal"); after != before {
					t.Errorf("a refused insert wrote %d rows", after-before)
				}
			})
		}
	})

	beta := e.newWorld(t, "beta")
	betaCompany, _ := newCompany(t, e, beta, "Beta Co", beta.member)
	betaGoods := newGoods(t, e, beta, "Beta chair", "B-1", "1.00", "1", "0", true)
	body := func(change func(map[string]any)) map[string]any {
		b := map[string]any{"name": "Bad", "company_id": company, "type_id": w.dirs[40][0], "status_id": w.dirs[41][0],
			"user_id": w.member.id, "date_start": "2026-11-01", "date_finish": "2026-12-01",
			"Goods": []any{map[string]any{"goods_id": desk}}}
		change(b)
		return b
	}
	goods := func(item map[string]any) func(map[string]any) {
		return func(b map[string]any) { b["Goods"] = []any{map[string]any{"goods_id": desk}, item} }
	}
	for _, tc := range []struct {
		name string
		body any
		code string
		want string
	}{
		{"missing status_id", body(func(b map[string]any) { delete(b, "status_id") }), "400", `property "status_id" is missing`},
		{"missing date_finish", body(func(b map[string]any) { delete(b, "date_finish") }), "400", `property "date_finish" is missing`},
		{"empty name", body(func(b map[string]any) { b["name"] = "" }), "400", `field "name"`},
		{"name too long", body(func(b map[string]any) { b["name"] = strings.Repeat("n", 256) }), "400", `field "name"`},
		{"unknown counterparty", body(func(b map[string]any) { b["company_id"] = 9223372036854775807 }), "404", "counterparty 9223372036854775807 not found"},
		{"another account's counterparty", body(func(b map[string]any) { b["company_id"] = betaCompany }), "404", "not found"},
		{"unknown type", body(func(b map[string]any) { b["type_id"] = 999999999 }), "400", "type_id: no such value in directory 40"},
		{"stage as type", body(func(b map[string]any) { b["type_id"] = w.dirs[41][0] }), "400", "type_id: no such value in directory 40"},
		{"type as stage", body(func(b map[string]any) { b["status_id"] = w.dirs[40][0] }), "400", "status_id: no such value in directory 41"},
		{"another account's stage", body(func(b map[string]any) { b["status_id"] = beta.dirs[41][0] }), "400", "status_id: no such value in directory 41"},
		{"another account's user", body(func(b map[string]any) { b["user_id"] = beta.member.id }), "400", "user_id: no such user"},
		{"contact of another counterparty", body(func(b map[string]any) { b["contact_id"] = otherContact }), "400", "contact_id: no such contact person of this counterparty"},
		{"finish before start", body(func(b map[string]any) { b["date_finish"] = "2026-10-31" }), "400", "date_finish: must not be before date_start"},
		{"date that does not exist", body(func(b map[string]any) { b["date_start"] = "2026-02-30" }), "400", `request body: date "2026-02-30" does not exist`},
		{"date-time for a date", body(func(b map[string]any) { b["date_start"] = "2026-11-01 10:00" }), "400", `field "date_start"`},
		{"year 0", body(func(b map[string]any) { b["date_start"] = "0000-01-01" }), "400", "a date is out of range"},
		{"negative sum", body(func(b map[string]any) { b["sum"] = -1 }), "400", `field "sum"`},
		{"sum a string", body(func(b map[string]any) { b["sum"] = "100" }), "400", `field "sum"`},
		{"sum too large", body(func(b map[string]any) { b["sum"] = json.Number("99999999999999999") }), "400", `field "sum"`},
		{"unknown goods", body(goods(map[string]any{"goods_id": 999999999})), "400", "Goods.1.goods_id: goods 999999999 not found in the catalogue"},
		{"another account's goods", body(goods(map[string]any{"goods_id": betaGoods})), "400", "Goods.1.goods_id: goods"},
		{"withdrawn goods", body(goods(map[string]any{"goods_id": withdrawn})), "400", "Goods.1.goods_id: goods"},
		{"position without goods_id or discription", body(goods(map[string]any{"price": 5})), "400", "Goods.1.discription: required"},
		{"position with empty discription", body(goods(map[string]any{"discription": ""})), "400", "Goods.1.discription: required"},
		{"negative quantity", body(goods(map[string]any{"goods_id": desk, "qnt": -1})), "400", `field "Goods.1.qnt"`},
		{"discount above 100", body(goods(map[string]any{"goods_id": desk, "discount": 100.5})), "400", `field "Goods.1.discount"`},
		{"position sum too large", body(goods(map[string]any{"discription": "x", "qnt": json.Number("999999999999"), "price": json.Number("99999999")})), "400", "a number is out of range"},
		{"unknown position field", body(goods(map[string]any{"goods_id": desk, "description": "x"})), "400", `property "description" is unsupported`},
		{"goods not an array", body(func(b map[string]any) { b["Goods"] = map[string]any{} }), "400", `field "Goods"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.rowCounts(t, w.accountID, "deals", "deal_goods", "journal")
			expectError(t, e.post(t, w.member.token, "/deal/insert", tc.body), tc.code, tc.want, "")
			if after := e.rowCounts(t, w.accountID, "deals", "deal_goods", "journal"); after != before {
				t.Errorf("a refused insert wrote %d rows", after-before)
			}
		})
	}
}

func TestDealUpdate(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	company, contact := newCompany(t, e, w, "Contoso", w.member)
	other, otherContact := newCompany(t, e, w, "Fabrikam", w.member)
	hidden, _ := newCompany(t, e, w, "Hidden", w.other)
	chair := newGoods(t, e, w, "Chair", "CH-1", "125.00", "2", "21", true)
	fresh := func(t *testing.T) int64 {
		t.Helper()
		return newDeal(t, e, w, company, w.member, map[string]any{"contact_id": contact, "sum": 1000, "note": "old note",
			"tags": "a,b", "Goods": []any{map[string]any{"goods_id": chair}}})
	}
	update := func(t *testing.T, token string, body map[string]any) reply {
		t.Helper()
		return e.post(t, token, "/deal/update", body)
	}

	t.Run("OK: only passed fields change; note and tags replace", func(t *testing.T) {
		id := fresh(t)
		before := readDeal(t, e, id)
		r := update(t, w.member.token, map[string]any{"id": id, "status_id": w.dirs[41][2], "note": "new note", "tags": "c",
			"sum": json.Number("0.30"), "date_finish": "2027-01-31"})
		if v := expectOK(t, r); v != "1" {
			t.Fatalf("value %q, want 1", v)
		}
		want := before
		want.StatusID, want.Note, want.Tags, want.Sum, want.DateFinish = w.dirs[41][2], "new note", "c", "0.30", "2027-01-31"
		if got := readDeal(t, e, id); !reflect.DeepEqual(got, want) {
			t.Errorf("stored %+v, want %+v", got, want)
		}
		wantChanges := map[string]any{
			"status_id":   []any{json.Number(fmt.Sprint(w.dirs[41][0])), json.Number(fmt.Sprint(w.dirs[41][2]))},
			"note":        []any{"old note", "new note"},
			"tags":        []any{[]any{"a", "b"}, []any{"c"}},
			"sum":         []any{json.Number("1000.00"), json.Number("0.30")},
			"date_finish": []any{"2026-12-15", "2027-01-31"},
		}
		if got := e.journalChanges(t, 20, "deal", id); !reflect.DeepEqual(got, wantChanges) {
			t.Errorf("journal changes\n got %v\nwant %v", got, wantChanges)
		}
		if j := e.journalRows(t, 20, "deal", id); !reflect.DeepEqual(j, []string{"insert", "update"}) {
			t.Errorf("journal %v", j)
		}
	})

	t.Run("a numeric field equal to 0 counts as not passed", func(t *testing.T) {
		id := fresh(t)
		before := readDeal(t, e, id)
		r := update(t, w.member.token, map[string]any{"id": id, "sum": 0, "type_id": 0, "status_id": 0, "user_id": 0,
			"company_id": 0, "contact_id": 0, "name": "Renamed"})
		expectOK(t, r)
		want := before
		want.Name = "Renamed"
		if got := readDeal(t, e, id); !reflect.DeepEqual(got, want) {
			t.Errorf("stored %+v, want %+v", got, want)
		}
		if got := e.journalChanges(t, 20, "deal", id); !reflect.DeepEqual(got, map[string]any{"name": []any{"Deal", "Renamed"}}) {
			t.Errorf("journal changes %v", got)
		}
	})

	t.Run("only zeros: nothing to change", func(t *testing.T) {
		id := fresh(t)
		for _, b := range []map[string]any{
			{"id": id, "sum": 0},
			{"id": id, "sum": json.Number("0.00"), "type_id": 0},
			{"id": id, "sum": json.Number("0.004")}, // rounds to 0.00
			{"id": id, "company_id": 0, "contact_id": 0, "user_id": 0, "status_id": 0},
		} {
			before := e.rowCounts(t, w.accountID, "journal")
			expectError(t, update(t, w.member.token, b), "400", `at least one field besides "id" is required (a numeric field equal to 0 counts as not passed)`, "0")
			if e.rowCounts(t, w.accountID, "journal") != before {
				t.Error("journal written")
			}
		}
		expectError(t, update(t, w.member.token, map[string]any{"id": id}), "400", "request body", "0")
		if got := readDeal(t, e, id); got.Sum != "1000.00" {
			t.Errorf("sum %s changed", got.Sum)
		}
	})

	t.Run("note and tags cleared with empty strings", func(t *testing.T) {
		id := fresh(t)
		expectOK(t, update(t, w.member.token, map[string]any{"id": id, "note": "", "tags": ""}))
		if got := readDeal(t, e, id); got.Note != "" || got.Tags != "" {
			t.Errorf("stored %+v", got)
		}
	})

	t.Run("the deal sum is not recalculated from goods", func(t *testing.T) {
		id := fresh(t)
		expectOK(t, update(t, w.member.token, map[string]any{"id": id, "name": "Chairs"}))
		expectOK(t, e.post(t, w.member.token, fmt.Sprintf("/deal/goods/insert?deal_id=%d&goods_ids=%d", id, chair), nil))
		if got := readDeal(t, e, id); got.Sum != "1000.00" {
			t.Errorf("sum %s, want 1000.00 as given", got.Sum)
		}
	})

	t.Run("same values: success, journal without changes", func(t *testing.T) {
		id := fresh(t)
		expectOK(t, update(t, w.member.token, map[string]any{"id": id, "note": "old note", "sum": json.Number("1000.000")}))
		if got := e.journalChanges(t, 20, "deal", id); len(got) != 0 {
			t.Errorf("journal changes %v, want none", got)
		}
	})

	t.Run("another counterparty: the contact person is taken off", func(t *testing.T) {
		id := fresh(t)
		expectOK(t, update(t, w.member.token, map[string]any{"id": id, "company_id": other}))
		if got := readDeal(t, e, id); got.CompanyID != other || got.ContactID != nil {
			t.Errorf("stored %+v", got)
		}
		if got := e.journalChanges(t, 20, "deal", id); !reflect.DeepEqual(got, map[string]any{
			"company_id": []any{json.Number(fmt.Sprint(company)), json.Number(fmt.Sprint(other))},
			"contact_id": []any{json.Number(fmt.Sprint(contact)), nil}}) {
			t.Errorf("journal changes %v", got)
		}
		expectOK(t, update(t, w.member.token, map[string]any{"id": id, "company_id": company, "contact_id": contact}))
		if got := readDeal(t, e, id); got.CompanyID != company || got.ContactID == nil || *got.ContactID != contact {
			t.Errorf("stored %+v", got)
		}
	})

	t.Run("another counterparty refused when records point at the deal", func(t *testing.T) {
		id := fresh(t)
		expectOK(t, e.post(t, w.member.token, "/task/insert", map[string]any{"company_id": company, "note": "x",
			"type_id": w.dirs[35][0], "deal_id": id}))
		before := readDeal(t, e, id)
		expectError(t, update(t, w.member.token, map[string]any{"id": id, "company_id": other}), "400",
			"company_id: the deal has tasks, documents, money movements or mail of its counterparty", "0")
		if got := readDeal(t, e, id); !reflect.DeepEqual(got, before) {
			t.Errorf("changed to %+v", got)
		}
	})

	t.Run("stage and responsible user change", func(t *testing.T) {
		id := fresh(t)
		expectOK(t, update(t, w.member.token, map[string]any{"id": id, "status_id": w.dirs[41][1], "user_id": w.peer.id}))
		if got := readDeal(t, e, id); got.StatusID != w.dirs[41][1] || got.UserID != w.peer.id {
			t.Errorf("stored %+v", got)
		}
		// now the peer's deal: the member no longer sees it
		expectError(t, update(t, w.member.token, map[string]any{"id": id, "name": "x"}), "404", fmt.Sprintf("deal %d not found", id), "0")
	})

	t.Run("access levels", func(t *testing.T) {
		id := fresh(t)
		for _, who := range w.roles() {
			t.Run(who.name, func(t *testing.T) {
				r := update(t, who.u.token, map[string]any{"id": id, "note": "by " + who.name})
				if who.visible {
					expectOK(t, r)
					if got := readDeal(t, e, id).Note; got != "by "+who.name {
						t.Errorf("note %q", got)
					}
					return
				}
				before := readDeal(t, e, id)
				expectError(t, r, "404", fmt.Sprintf("deal %d not found", id), "0")
				if got := readDeal(t, e, id); !reflect.DeepEqual(got, before) {
					t.Errorf("changed to %+v", got)
				}
			})
		}
		t.Run("another account's admin", func(t *testing.T) {
			b := e.newWorld(t, "beta")
			before := readDeal(t, e, id)
			expectError(t, update(t, b.admin.token, map[string]any{"id": id, "note": "x", "status_id": b.dirs[41][0]}), "404",
				fmt.Sprintf("deal %d not found", id), "0")
			if got := readDeal(t, e, id); !reflect.DeepEqual(got, before) {
				t.Errorf("changed to %+v", got)
			}
		})
	})

	id := fresh(t)
	beta := e.newWorld(t, "gamma")
	for _, tc := range []struct {
		name string
		body map[string]any
		code string
		want string
	}{
		{"missing deal", map[string]any{"id": 9223372036854775807, "note": "x"}, "404", "deal 9223372036854775807 not found"},
		{"missing id", map[string]any{"note": "x", "name": "y"}, "400", `property "id" is missing`},
		{"unknown stage", map[string]any{"id": id, "status_id": 999999999}, "400", "status_id: no such value in directory 41"},
		{"another account's stage", map[string]any{"id": id, "status_id": beta.dirs[41][0]}, "400", "status_id: no such value in directory 41"},
		{"type as stage", map[string]any{"id": id, "status_id": w.dirs[40][0]}, "400", "status_id: no such value in directory 41"},
		{"unknown type", map[string]any{"id": id, "type_id": w.dirs[41][0]}, "400", "type_id: no such value in directory 40"},
		{"another account's user", map[string]any{"id": id, "user_id": beta.admin.id}, "400", "user_id: no such user"},
		{"contact of another counterparty", map[string]any{"id": id, "contact_id": otherContact}, "400", "contact_id: no such contact person of this counterparty"},
		{"unknown counterparty", map[string]any{"id": id, "company_id": 9223372036854775807}, "404", "counterparty 9223372036854775807 not found"},
		{"invisible counterparty", map[string]any{"id": id, "company_id": hidden}, "404", fmt.Sprintf("counterparty %d not found", hidden)},
		{"finish before start", map[string]any{"id": id, "date_finish": "2026-10-01"}, "400", "date_finish: must not be before date_start"},
		{"start after finish", map[string]any{"id": id, "date_start": "2027-10-01"}, "400", "date_finish: must not be before date_start"},
		{"date that does not exist", map[string]any{"id": id, "date_start": "2026-13-01"}, "400", `field "date_start"`},
		{"negative sum", map[string]any{"id": id, "sum": -5}, "400", `field "sum"`},
		{"negative type", map[string]any{"id": id, "type_id": -1}, "400", `field "type_id"`},
		{"empty name", map[string]any{"id": id, "name": ""}, "400", `field "name"`},
		{"null note", map[string]any{"id": id, "note": nil}, "400", `field "note"`},
		{"unknown field", map[string]any{"id": id, "Goods": []any{}}, "400", `property "Goods" is unsupported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readDeal(t, e, id)
			journal := e.rowCounts(t, w.accountID, "journal")
			expectError(t, update(t, w.member.token, tc.body), tc.code, tc.want, "0")
			if got := readDeal(t, e, id); !reflect.DeepEqual(got, before) {
				t.Errorf("changed to %+v", got)
			}
			if e.rowCounts(t, w.accountID, "journal") != journal {
				t.Error("journal written")
			}
		})
	}
}
