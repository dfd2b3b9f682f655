package impl_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// goodsWorld is an account with a catalogue, a deal and a document of the
// member, and the same of another account.
type goodsWorld struct {
	*world
	company, deal, document   int64
	chair, desk, withdrawn    int64
	beta                      *world
	betaDeal, betaDoc, betaGd int64
}

func newGoodsWorld(t *testing.T, e *env) *goodsWorld {
	t.Helper()
	w := e.newWorld(t, "acme")
	g := &goodsWorld{world: w}
	g.company, _ = newCompany(t, e, w, "Contoso", w.member)
	g.chair = newGoods(t, e, w, "Chair Ergo", "CH-1", "0.10", "3", "21", true)
	g.desk = newGoods(t, e, w, "Desk", "DE-1", "300.00", "1.5", "9.5", true)
	g.withdrawn = newGoods(t, e, w, "Old lamp", "LA-0", "10.00", "1", "21", false)
	g.deal = newDeal(t, e, w, g.company, w.member, map[string]any{"sum": 99})
	g.document = newDocument(t, e, w, g.company, g.deal, w.member, "INV-1", "2026-11-03")
	g.beta = e.newWorld(t, "beta")
	betaCompany, _ := newCompany(t, e, g.beta, "Beta Co", g.beta.member)
	g.betaGd = newGoods(t, e, g.beta, "Beta chair", "B-1", "1.00", "1", "0", true)
	g.betaDeal = newDeal(t, e, g.beta, betaCompany, g.beta.member, nil)
	g.betaDoc = newDocument(t, e, g.beta, betaCompany, 0, g.beta.member, "B-1", "2026-11-03")
	return g
}

func TestDealGoodsInsert(t *testing.T) {
	e := newEnv(t)
	g := newGoodsWorld(t, e)
	testCatalogueInsert(t, e, g, "/deal/goods/insert?deal_id=%d&goods_ids=%s", "deal_goods", "deal_id", g.deal, g.betaDeal, "deal", 20)
	t.Run("the deal sum is not recalculated", func(t *testing.T) {
		if got := readDeal(t, e, g.deal).Sum; got != "99.00" {
			t.Errorf("sum %s, want 99.00", got)
		}
	})
}

func TestDocumentGoodsInsert(t *testing.T) {
	e := newEnv(t)
	g := newGoodsWorld(t, e)
	testCatalogueInsert(t, e, g, "/document/goods/insert?document_id=%d&goods_ids=%s", "document_goods", "document_id",
		g.document, g.betaDoc, "document", 4)
}

// testCatalogueInsert tests one of the two goods inserts from the catalogue.
func testCatalogueInsert(t *testing.T, e *env, g *goodsWorld, target, table, owner string, ownerID, betaOwner int64,
	ownerName string, module int) {
	t.Helper()
	insert := func(t *testing.T, token string, id int64, ids string) reply {
		t.Helper()
		return e.post(t, token, fmt.Sprintf(target, id, ids), nil)
	}

	t.Run("OK: one position per id, repeats included, from the catalogue", func(t *testing.T) {
		before := positionsOf(t, e, table, owner, ownerID)
		r := insert(t, g.member.token, ownerID, fmt.Sprintf("%d,%d,%d", g.chair, g.desk, g.chair))
		if v := expectOK(t, r); v != "1" {
			t.Fatalf("value %q, want 1", v)
		}
		chair := fmt.Sprintf("%d|Chair Ergo|CH-1|3.000|0.10|0.00|21.00|0.30|", g.chair)
		want := append(before, chair, fmt.Sprintf("%d|Desk|DE-1|1.500|300.00|0.00|9.50|450.00|", g.desk), chair)
		if got := positionsOf(t, e, table, owner, ownerID); !reflect.DeepEqual(got, want) {
			t.Errorf("positions\n got %q\nwant %q", got, want)
		}
		if n := e.count(t, `SELECT count(*) FROM journal WHERE module = $1 AND entity = $2 AND action = 'insert'
			AND (changes->>$3)::bigint = $4 AND user_id = $5`, module, table, owner, ownerID, g.member.id); n != 3 {
			t.Errorf("%d journal rows, want 3", n)
		}
	})

	t.Run("access levels", func(t *testing.T) {
		for _, who := range g.roles() {
			t.Run(who.name, func(t *testing.T) {
				before := e.rowCounts(t, g.accountID, table, "journal")
				r := insert(t, who.u.token, ownerID, fmt.Sprint(g.desk))
				if who.visible {
					expectOK(t, r)
					return
				}
				expectError(t, r, "404", fmt.Sprintf("%s %d not found", ownerName, ownerID), "0")
				if after := e.rowCounts(t, g.accountID, table, "journal"); after != before {
					t.Errorf("a refused insert wrote %d rows", after-before)
				}
			})
		}
		t.Run("another account's admin, with its own goods", func(t *testing.T) {
			expectError(t, insert(t, g.beta.admin.token, ownerID, fmt.Sprint(g.betaGd)), "404",
				fmt.Sprintf("%s %d not found", ownerName, ownerID), "0")
		})
	})

	for _, tc := range []struct {
		name   string
		owner  int64
		ids    string
		code   string
		want   string
		target string
	}{
		{"unknown goods: nothing inserted", ownerID, fmt.Sprintf("%d,999999999", g.chair), "404", "goods_ids: goods 999999999 not found in the catalogue", ""},
		{"several unknown goods named once each", ownerID, "999999998,999999999,999999998", "404", "goods_ids: goods 999999998, 999999999 not found", ""},
		{"another account's goods", ownerID, fmt.Sprintf("%d,%d", g.chair, g.betaGd), "404", fmt.Sprintf("goods_ids: goods %d not found", g.betaGd), ""},
		{"withdrawn goods", ownerID, fmt.Sprint(g.withdrawn), "404", fmt.Sprintf("goods_ids: goods %d not found", g.withdrawn), ""},
		{"goods id 0", ownerID, "0", "404", "goods_ids: goods 0 not found", ""},
		{"id too large", ownerID, "99999999999999999999", "400", "goods_ids: 99999999999999999999 is not an id", ""},
		{"another account's owner", betaOwner, fmt.Sprint(g.chair), "404", fmt.Sprintf("%s %d not found", ownerName, betaOwner), ""},
		{"unknown owner", 9223372036854775807, fmt.Sprint(g.chair), "404", fmt.Sprintf("%s 9223372036854775807 not found", ownerName), ""},
		{"empty goods_ids", ownerID, "", "400", `query parameter "goods_ids"`, ""},
		{"goods_ids with a space", ownerID, "1,%202", "400", `query parameter "goods_ids"`, ""},
		{"trailing comma", ownerID, "1,", "400", `query parameter "goods_ids"`, ""},
		{"negative id", ownerID, "-1", "400", `query parameter "goods_ids"`, ""},
		{"goods_ids missing", ownerID, "", "400", `query parameter "goods_ids"`, strings.Split(target, "&")[0]},
		{"owner id missing", ownerID, "1", "400", "query parameter", strings.Replace(target, "=%d", "=", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.rowCounts(t, g.accountID, table, "journal")
			path := fmt.Sprintf(target, tc.owner, tc.ids)
			if tc.target != "" {
				path = strings.NewReplacer("%d", fmt.Sprint(tc.owner), "%s", tc.ids).Replace(tc.target)
			}
			expectError(t, e.post(t, g.member.token, path, nil), tc.code, tc.want, "0")
			if after := e.rowCounts(t, g.accountID, table, "journal"); after != before {
				t.Errorf("a refused insert wrote %d rows", after-before)
			}
		})
	}
	t.Run("a body is ignored", func(t *testing.T) {
		before := e.count(t, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s = $1 AND qnt = 3`, table, owner), ownerID)
		expectOK(t, e.post(t, g.member.token, fmt.Sprintf(target, ownerID, fmt.Sprint(g.chair)), `{"qnt": 1}`))
		if n := e.count(t, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s = $1 AND qnt = 3`, table, owner), ownerID); n != before+1 {
			t.Errorf("%d positions with the catalogue's quantity, want %d", n, before+1)
		}
	})
}

func TestDealGoodsList(t *testing.T) {
	e := newEnv(t)
	g := newGoodsWorld(t, e)
	testPositionList(t, e, g, "/deal/goods/list?deal_id=%d", "/deal/goods/insert?deal_id=%d&goods_ids=%d,%d", "deal_id", g.deal, g.betaDeal, "deal")
}

func TestDocumentGoodsList(t *testing.T) {
	e := newEnv(t)
	g := newGoodsWorld(t, e)
	testPositionList(t, e, g, "/document/goods/list?document_id=%d", "/document/goods/insert?document_id=%d&goods_ids=%d,%d",
		"document_id", g.document, g.betaDoc, "document")
}

// testPositionList tests one of the two position lists.
func testPositionList(t *testing.T, e *env, g *goodsWorld, target, insertTarget, owner string, ownerID, betaOwner int64, ownerName string) {
	t.Helper()
	t.Run("empty", func(t *testing.T) {
		r := e.get(t, g.member.token, fmt.Sprintf(target, ownerID))
		if r.Status != "success" || r.Value != "[]" || r.Rows != 0 || r.Pages != 0 || r.Page != 0 {
			t.Fatalf("got %s", r.Raw)
		}
	})
	expectOK(t, e.post(t, g.member.token, fmt.Sprintf(insertTarget, ownerID, g.chair, g.desk), nil))
	var ids []int64
	if err := e.db.Select(&ids, fmt.Sprintf(`SELECT id FROM %s WHERE %s = $1 ORDER BY id`, strings.TrimSuffix(owner, "_id")+"_goods", owner), ownerID); err != nil {
		t.Fatal(err)
	}

	t.Run("OK: every field, exact decimals, in the order added", func(t *testing.T) {
		r := e.get(t, g.member.token, fmt.Sprintf(target, ownerID))
		if r.Status != "success" || r.Rows != 2 || r.Pages != 1 || r.Page != 1 {
			t.Fatalf("got %s", r.Raw)
		}
		got := decodeExact[[]map[string]any](t, r.Value)
		want := []map[string]any{
			{"id": json.Number(fmt.Sprint(ids[0])), owner: json.Number(fmt.Sprint(ownerID)), "goods_id": json.Number(fmt.Sprint(g.chair)),
				"discription": "Chair Ergo", "code": "CH-1", "qnt": json.Number("3"), "price": json.Number("0.10"),
				"discount": json.Number("0"), "vat": json.Number("21"), "sum": json.Number("0.30"), "note": ""},
			{"id": json.Number(fmt.Sprint(ids[1])), owner: json.Number(fmt.Sprint(ownerID)), "goods_id": json.Number(fmt.Sprint(g.desk)),
				"discription": "Desk", "code": "DE-1", "qnt": json.Number("1.5"), "price": json.Number("300.00"),
				"discount": json.Number("0"), "vat": json.Number("9.5"), "sum": json.Number("450.00"), "note": ""},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("positions\n got %v\nwant %v", got, want)
		}
		if strings.Contains(r.Value, "0.30000000000000004") {
			t.Error("binary-float artefact in the reply")
		}
	})
	t.Run("access levels", func(t *testing.T) {
		for _, who := range g.roles() {
			t.Run(who.name, func(t *testing.T) {
				r := e.get(t, who.u.token, fmt.Sprintf(target, ownerID))
				if who.visible {
					if r.Status != "success" || r.Rows != 2 {
						t.Errorf("got %s", r.Raw)
					}
					return
				}
				expectError(t, r, "404", fmt.Sprintf("%s %d not found", ownerName, ownerID), "")
			})
		}
		t.Run("another account's admin", func(t *testing.T) {
			expectError(t, e.get(t, g.beta.admin.token, fmt.Sprintf(target, ownerID)), "404", fmt.Sprintf("%s %d not found", ownerName, ownerID), "")
		})
	})
	t.Run("bad input", func(t *testing.T) {
		expectError(t, e.get(t, g.member.token, fmt.Sprintf(target, betaOwner)), "404", fmt.Sprintf("%s %d not found", ownerName, betaOwner), "")
		expectError(t, e.get(t, g.member.token, fmt.Sprintf(target, int64(9223372036854775807))), "404", "not found", "")
		base := strings.Split(target, "?")[0]
		expectError(t, e.get(t, g.member.token, base), "400", fmt.Sprintf("query parameter %q", owner), "")
		expectError(t, e.get(t, g.member.token, base+"?"+owner+"=x"), "400", fmt.Sprintf("query parameter %q", owner), "")
		expectError(t, e.get(t, g.member.token, base+"?"+owner+"=0"), "400", fmt.Sprintf("query parameter %q", owner), "")
	})
}

func TestDealGoodsUpdate(t *testing.T) {
	e := newEnv(t)
	g := newGoodsWorld(t, e)
	otherDeal := newDeal(t, e, g.world, g.company, g.member, nil)
	expectOK(t, e.post(t, g.member.token, fmt.Sprintf("/deal/goods/insert?deal_id=%d&goods_ids=%d,%d", g.deal, g.chair, g.desk), nil))
	expectOK(t, e.post(t, g.member.token, fmt.Sprintf("/deal/goods/insert?deal_id=%d&goods_ids=%d", otherDeal, g.chair), nil))
	var pos, second, foreign int64
	if err := e.db.QueryRow(`SELECT min(id), max(id) FROM deal_goods WHERE deal_id = $1`, g.deal).Scan(&pos, &second); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Get(&foreign, `SELECT id FROM deal_goods WHERE deal_id = $1`, otherDeal); err != nil {
		t.Fatal(err)
	}
	update := func(t *testing.T, token string, body map[string]any) reply {
		t.Helper()
		return e.post(t, token, "/deal/goods/update", body)
	}

	t.Run("OK: only passed fields, reply is the position", func(t *testing.T) {
		r := update(t, g.member.token, map[string]any{"id": pos, "deal_id": g.deal, "qnt": json.Number("7"),
			"discount": json.Number("12.5"), "discription": "Chair Ergo, grey"})
		got := decodeExact[map[string]any](t, expectOK(t, r))
		// 0.10 × 7 less 12.5 % = 0.6125, rounded to cents
		want := map[string]any{"id": json.Number(fmt.Sprint(pos)), "deal_id": json.Number(fmt.Sprint(g.deal)),
			"goods_id": json.Number(fmt.Sprint(g.chair)), "discription": "Chair Ergo, grey", "code": "CH-1",
			"qnt": json.Number("7"), "price": json.Number("0.10"), "discount": json.Number("12.5"), "vat": json.Number("21"),
			"sum": json.Number("0.61"), "note": ""}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("reply\n got %v\nwant %v", got, want)
		}
		wantStored := []string{
			fmt.Sprintf("%d|Chair Ergo, grey|CH-1|7.000|0.10|12.50|21.00|0.61|", g.chair),
			fmt.Sprintf("%d|Desk|DE-1|1.500|300.00|0.00|9.50|450.00|", g.desk),
		}
		if stored := positionsOf(t, e, "deal_goods", "deal_id", g.deal); !reflect.DeepEqual(stored, wantStored) {
			t.Errorf("stored %q", stored)
		}
		wantChanges := map[string]any{
			"qnt":         []any{json.Number("3"), json.Number("7")},
			"discount":    []any{json.Number("0"), json.Number("12.5")},
			"discription": []any{"Chair Ergo", "Chair Ergo, grey"},
			"sum":         []any{json.Number("0.30"), json.Number("0.61")},
		}
		if got := e.journalChanges(t, 20, "deal_goods", pos); !reflect.DeepEqual(got, wantChanges) {
			t.Errorf("journal changes\n got %v\nwant %v", got, wantChanges)
		}
		if got := readDeal(t, e, g.deal).Sum; got != "99.00" {
			t.Errorf("deal sum %s, want 99.00: not recalculated", got)
		}
	})
	t.Run("exact decimals: 0.1 × 3", func(t *testing.T) {
		r := update(t, g.member.token, map[string]any{"id": pos, "deal_id": g.deal, "qnt": 3, "price": json.Number("0.1"), "discount": 0})
		v := expectOK(t, r)
		got := decodeExact[map[string]any](t, v)
		if got["sum"] != json.Number("0.30") || got["price"] != json.Number("0.10") || got["discount"] != json.Number("0") {
			t.Errorf("reply %s", v)
		}
	})
	t.Run("0 is a value here", func(t *testing.T) {
		got := decodeExact[map[string]any](t, expectOK(t, update(t, g.member.token, map[string]any{"id": pos, "deal_id": g.deal,
			"price": 0, "vat": 0, "note": "free"})))
		if got["price"] != json.Number("0.00") || got["vat"] != json.Number("0") || got["sum"] != json.Number("0.00") || got["note"] != "free" {
			t.Errorf("reply %v", got)
		}
	})
	t.Run("more decimals than stored are rounded", func(t *testing.T) {
		got := decodeExact[map[string]any](t, expectOK(t, update(t, g.member.token, map[string]any{"id": pos, "deal_id": g.deal,
			"price": json.Number("1.005"), "qnt": json.Number("0.0005")})))
		if got["price"] != json.Number("1.01") || got["qnt"] != json.Number("0.001") {
			t.Errorf("reply %v", got)
		}
	})

	t.Run("access levels", func(t *testing.T) {
		for _, who := range g.roles() {
			t.Run(who.name, func(t *testing.T) {
				before := positionsOf(t, e, "deal_goods", "deal_id", g.deal)
				r := update(t, who.u.token, map[string]any{"id": second, "deal_id": g.deal, "note": "by " + who.name})
				if who.visible {
					if got := decodeExact[map[string]any](t, expectOK(t, r)); got["note"] != "by "+who.name {
						t.Errorf("reply %v", got)
					}
					return
				}
				expectError(t, r, "404", fmt.Sprintf("goods position %d of deal %d not found", second, g.deal), "")
				if got := positionsOf(t, e, "deal_goods", "deal_id", g.deal); !reflect.DeepEqual(got, before) {
					t.Errorf("changed: %q", got)
				}
			})
		}
		t.Run("another account's admin", func(t *testing.T) {
			expectError(t, update(t, g.beta.admin.token, map[string]any{"id": second, "deal_id": g.deal, "note": "x"}), "404",
				"not found", "")
		})
	})

	for _, tc := range []struct {
		name string
		body map[string]any
		code string
		want string
	}{
		{"position of another deal", map[string]any{"id": foreign, "deal_id": g.deal, "note": "x"}, "404",
			fmt.Sprintf("goods position %d of deal %d not found", foreign, g.deal)},
		{"position under another deal id", map[string]any{"id": pos, "deal_id": otherDeal, "note": "x"}, "404",
			fmt.Sprintf("goods position %d of deal %d not found", pos, otherDeal)},
		{"unknown position", map[string]any{"id": 9223372036854775807, "deal_id": g.deal, "note": "x"}, "404", "not found"},
		{"another account's deal", map[string]any{"id": pos, "deal_id": g.betaDeal, "note": "x"}, "404", "not found"},
		{"nothing to change", map[string]any{"id": pos, "deal_id": g.deal}, "400", "request body"},
		{"missing deal_id", map[string]any{"id": pos, "note": "x", "qnt": 1}, "400", `property "deal_id" is missing`},
		{"negative quantity", map[string]any{"id": pos, "deal_id": g.deal, "qnt": -1}, "400", `field "qnt"`},
		{"discount above 100", map[string]any{"id": pos, "deal_id": g.deal, "discount": 101}, "400", `field "discount"`},
		{"price a string", map[string]any{"id": pos, "deal_id": g.deal, "price": "1.00"}, "400", `field "price"`},
		{"sum too large", map[string]any{"id": pos, "deal_id": g.deal, "qnt": json.Number("999999999999999"), "price": json.Number("9999999")},
			"400", "a number is out of range"},
		{"null note", map[string]any{"id": pos, "deal_id": g.deal, "note": nil}, "400", `field "note"`},
		{"unknown field", map[string]any{"id": pos, "deal_id": g.deal, "sum": 5}, "400", `property "sum" is unsupported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := positionsOf(t, e, "deal_goods", "deal_id", g.deal)
			journal := e.rowCounts(t, g.accountID, "journal")
			expectError(t, update(t, g.member.token, tc.body), tc.code, tc.want, "")
			if got := positionsOf(t, e, "deal_goods", "deal_id", g.deal); !reflect.DeepEqual(got, before) {
				t.Errorf("changed: %q", got)
			}
			if e.rowCounts(t, g.accountID, "journal") != journal {
				t.Error("journal written")
			}
		})
	}
}
