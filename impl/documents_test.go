package impl_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// quickIDs checks that a reply is a quick list (rows = records, pages = page =
// 1, or 0, 0, 0 when empty) and returns the ids of its records in order.
func quickIDs(t *testing.T, r reply) []int64 {
	t.Helper()
	list := decode[[]map[string]any](t, expectQuick(t, r))
	out := []int64{}
	for _, x := range list {
		out = append(out, int64(x["id"].(float64)))
	}
	return out
}

func expectQuick(t *testing.T, r reply) string {
	t.Helper()
	n := len(decode[[]any](t, r.Value))
	if r.HTTPStatus != 200 || r.Status != "success" || r.Code != nil || r.errorText() != "" ||
		r.Rows != n || r.Pages != min(1, n) || r.Page != min(1, n) {
		t.Fatalf("want a quick list, got %s", r.Raw)
	}
	return r.Value
}

// quickListWorld holds two counterparties of the member with a deal each, and
// one of the peer.
type quickListWorld struct {
	*world
	company, other, peerCompany int64
	deal, otherDeal, peerDeal   int64
}

func newQuickListWorld(t *testing.T, e *env) *quickListWorld {
	t.Helper()
	w := e.newWorld(t, "acme")
	q := &quickListWorld{world: w}
	q.company, _ = newCompany(t, e, w, "Contoso", w.member)
	q.other, _ = newCompany(t, e, w, "Fabrikam", w.member)
	q.peerCompany, _ = newCompany(t, e, w, "Peer Co", w.peer)
	q.deal = newDeal(t, e, w, q.company, w.member, map[string]any{"name": "Office chairs"})
	q.otherDeal = newDeal(t, e, w, q.other, w.member, nil)
	q.peerDeal = newDeal(t, e, w, q.company, w.peer, nil)
	return q
}

func TestDocumentList(t *testing.T) {
	e := newEnv(t)
	q := newQuickListWorld(t, e)
	w := q.world
	withDeal := newDocument(t, e, w, q.company, q.deal, w.member, "INV-2", "2026-11-03")
	older := newDocument(t, e, w, q.company, 0, w.member, "INV-1", "2026-10-01")
	sameDate := newDocument(t, e, w, q.company, 0, w.member, "CON-1", "2026-10-01")
	byPeer := newDocument(t, e, w, q.company, q.peerDeal, w.peer, "INV-3", "2026-11-10")
	newDocument(t, e, w, q.other, q.otherDeal, w.member, "INV-4", "2026-11-04")
	if _, err := e.db.Exec(`UPDATE documents SET status_id = NULL, date_expire = NULL, tags = '{}' WHERE id = $1`, older); err != nil {
		t.Fatal(err)
	}
	list := func(t *testing.T, token, query string) []int64 {
		t.Helper()
		return quickIDs(t, e.get(t, token, "/document/list?"+query))
	}

	t.Run("OK: every column, newest first", func(t *testing.T) {
		r := e.get(t, w.admin.token, fmt.Sprintf("/document/list?company_id=%d", q.company))
		if got, want := quickIDs(t, r), []int64{byPeer, withDeal, sameDate, older}; !reflect.DeepEqual(got, want) {
			t.Fatalf("order %v, want %v", got, want)
		}
		got := decodeExact[[]map[string]any](t, r.Value)
		want := map[string]any{
			"id": json.Number(fmt.Sprint(withDeal)), "number": "INV-2", "date": "2026-11-03", "sum": json.Number("2500.50"),
			"type_id": json.Number(fmt.Sprint(w.dirs[44][0])), "type": "Invoice", "status_id": json.Number(fmt.Sprint(w.dirs[45][1])),
			"status": "Issued", "note": "Pay soon", "user_id": json.Number(fmt.Sprint(w.member.id)), "user_name": "member of acme",
			"company_id": json.Number(fmt.Sprint(q.company)), "company_name": "Contoso", "deal_id": json.Number(fmt.Sprint(q.deal)),
			"deal": "Office chairs", "contact_id": nil, "date_expire": "2026-11-17", "external_code": "ERP-1", "tags": "prepayment,urgent",
		}
		if !reflect.DeepEqual(got[1], want) {
			t.Errorf("document\n got %v\nwant %v", got[1], want)
		}
		if d := got[3]; d["deal_id"] != nil || d["deal"] != "" || d["status_id"] != nil || d["status"] != "" ||
			d["date_expire"] != nil || d["tags"] != "" {
			t.Errorf("document without deal, status and term %v", d)
		}
	})
	t.Run("filters", func(t *testing.T) {
		if got := list(t, w.admin.token, fmt.Sprintf("deal_id=%d", q.deal)); !reflect.DeepEqual(got, []int64{withDeal}) {
			t.Errorf("by deal %v", got)
		}
		if got := list(t, w.admin.token, fmt.Sprintf("company_id=%d&deal_id=%d", q.company, q.deal)); !reflect.DeepEqual(got, []int64{withDeal}) {
			t.Errorf("by both %v", got)
		}
		if got := list(t, w.admin.token, fmt.Sprintf("company_id=%d&deal_id=%d", q.other, q.deal)); len(got) != 0 {
			t.Errorf("deal of another counterparty %v", got)
		}
		if got := list(t, w.admin.token, "company_id=9223372036854775807"); len(got) != 0 {
			t.Errorf("unknown counterparty %v", got)
		}
	})
	t.Run("access levels", func(t *testing.T) {
		beta := e.newWorld(t, "beta")
		for _, tc := range append(byRole(w, []int64{byPeer, withDeal, sameDate, older}, []int64{byPeer, withDeal, sameDate, older},
			[]int64{withDeal, sameDate, older}, []int64{byPeer}, []int64{}),
			expectation[[]int64]{role{name: "another account's admin", u: beta.admin}, []int64{}}) {
			t.Run(tc.name, func(t *testing.T) {
				if got := list(t, tc.u.token, fmt.Sprintf("company_id=%d", q.company)); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			})
		}
	})
	t.Run("deleted counterparty: empty", func(t *testing.T) {
		if _, err := e.db.Exec(`UPDATE companies SET deleted_at = now() WHERE id = $1`, q.other); err != nil {
			t.Fatal(err)
		}
		if got := list(t, w.admin.token, fmt.Sprintf("company_id=%d", q.other)); len(got) != 0 {
			t.Errorf("got %v", got)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		expectError(t, e.get(t, w.admin.token, "/document/list"), "400", "company_id or deal_id is required", "")
		expectError(t, e.get(t, w.admin.token, "/document/list?company_id=x"), "400", `query parameter "company_id"`, "")
		expectError(t, e.get(t, w.admin.token, "/document/list?deal_id=0"), "400", `query parameter "deal_id"`, "")
	})
}

func TestFinanceList(t *testing.T) {
	e := newEnv(t)
	q := newQuickListWorld(t, e)
	w := q.world
	main := newMoneyAccount(t, e, w, "Main account", "EUR")
	usd := newMoneyAccount(t, e, w, "USD account", "USD")
	paid := newMovement(t, e, w, main, q.company, q.deal, w.member, "2026-11-02", "0.10", 1)
	older := newMovement(t, e, w, usd, q.company, 0, w.member, "2026-10-02", "1200.50", 2)
	sameDate := newMovement(t, e, w, main, q.company, 0, w.member, "2026-10-02", "5", 1)
	byPeer := newMovement(t, e, w, main, q.company, q.peerDeal, w.peer, "2026-11-05", "7", 1)
	dealOnly := newMovement(t, e, w, main, 0, q.otherDeal, w.member, "2026-11-06", "8", 1)
	newMovement(t, e, w, main, q.other, q.otherDeal, w.member, "2026-11-07", "9", 2)
	if _, err := e.db.Exec(`UPDATE money_movements SET type_id = NULL, category_id = NULL, tags = '{}' WHERE id = $1`, older); err != nil {
		t.Fatal(err)
	}
	list := func(t *testing.T, token, query string) []int64 {
		t.Helper()
		return quickIDs(t, e.get(t, token, "/finance/list?"+query))
	}

	t.Run("OK: every column, newest first", func(t *testing.T) {
		r := e.get(t, w.admin.token, fmt.Sprintf("/finance/list?company_id=%d", q.company))
		if got, want := quickIDs(t, r), []int64{byPeer, paid, sameDate, older}; !reflect.DeepEqual(got, want) {
			t.Fatalf("order %v, want %v", got, want)
		}
		got := decodeExact[[]map[string]any](t, r.Value)
		want := map[string]any{
			"id": json.Number(fmt.Sprint(paid)), "date": "2026-11-02", "sum": json.Number("0.10"), "sum_currency": json.Number("0.20"),
			"direction_id": json.Number("1"), "direction": "income", "type_id": json.Number(fmt.Sprint(w.dirs[46][0])),
			"type": "Bank transfer", "category_id": json.Number(fmt.Sprint(w.dirs[47][0])), "category": "Sales",
			"account_id": json.Number(fmt.Sprint(main)), "account": "Main account", "currency": "EUR", "note": "Payment",
			"user_id": json.Number(fmt.Sprint(w.member.id)), "user_name": "member of acme",
			"company_id": json.Number(fmt.Sprint(q.company)), "company_name": "Contoso", "deal_id": json.Number(fmt.Sprint(q.deal)),
			"tags": "one-off",
		}
		if !reflect.DeepEqual(got[1], want) {
			t.Errorf("movement\n got %v\nwant %v", got[1], want)
		}
		if m := got[3]; m["direction_id"] != json.Number("2") || m["direction"] != "expense" || m["currency"] != "USD" ||
			m["sum"] != json.Number("1200.50") || m["sum_currency"] != json.Number("2401.00") || m["type_id"] != nil ||
			m["type"] != "" || m["category_id"] != nil || m["category"] != "" || m["deal_id"] != nil || m["tags"] != "" {
			t.Errorf("expense without type, category and deal %v", m)
		}
	})
	t.Run("filters", func(t *testing.T) {
		if got := list(t, w.admin.token, fmt.Sprintf("deal_id=%d", q.otherDeal)); len(got) != 2 || got[1] != dealOnly {
			t.Errorf("by deal %v, want the two of the deal, one without a counterparty", got)
		}
		got := decode[[]map[string]any](t, e.get(t, w.admin.token, fmt.Sprintf("/finance/list?deal_id=%d", q.otherDeal)).Value)
		if got[1]["company_id"] != nil || got[1]["company_name"] != "" {
			t.Errorf("movement without a counterparty %v", got[1])
		}
		if got := list(t, w.admin.token, fmt.Sprintf("company_id=%d&deal_id=%d", q.company, q.deal)); !reflect.DeepEqual(got, []int64{paid}) {
			t.Errorf("by both %v", got)
		}
		if got := list(t, w.admin.token, "deal_id=9223372036854775807"); len(got) != 0 {
			t.Errorf("unknown deal %v", got)
		}
	})
	t.Run("access levels", func(t *testing.T) {
		beta := e.newWorld(t, "beta")
		for _, tc := range append(byRole(w, []int64{byPeer, paid, sameDate, older}, []int64{byPeer, paid, sameDate, older},
			[]int64{paid, sameDate, older}, []int64{byPeer}, []int64{}),
			expectation[[]int64]{role{name: "another account's admin", u: beta.admin}, []int64{}}) {
			t.Run(tc.name, func(t *testing.T) {
				if got := list(t, tc.u.token, fmt.Sprintf("company_id=%d", q.company)); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			})
		}
	})
	t.Run("bad input", func(t *testing.T) {
		expectError(t, e.get(t, w.admin.token, "/finance/list"), "400", "company_id or deal_id is required", "")
		expectError(t, e.get(t, w.admin.token, "/finance/list?company_id=-1"), "400", `query parameter "company_id"`, "")
		expectError(t, e.get(t, w.admin.token, "/finance/list?deal_id=1.5"), "400", `query parameter "deal_id"`, "")
	})
}
