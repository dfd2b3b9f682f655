package impl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// tableCounts is the number of rows of every table of the schema: what a
// write changes (every write adds a journal row or a delivery row at least).
func (e *env) tableCounts(t *testing.T) map[string]int {
	t.Helper()
	var tables []string
	if err := e.db.Select(&tables, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'`); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, name := range tables {
		out[name] = e.count(t, `SELECT count(*) FROM `+name)
	}
	return out
}

func diffCounts(a, b map[string]int) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s %d→%d", k, v, b[k]))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// writeOperations are the operations that take an Idempotency-Key: every
// POST of the contract but the universal list.
func writeOperations(t *testing.T) map[string]bool {
	t.Helper()
	contract, err := contractOnce()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for path, item := range contract.Doc.Paths.Map() {
		if op := item.Post; op != nil && op.OperationID != "commonListPaging" {
			out[path] = true
		}
	}
	return out
}

func TestEveryWriteTakesAnIdempotencyKey(t *testing.T) {
	contract, err := contractOnce()
	if err != nil {
		t.Fatal(err)
	}
	writes := writeOperations(t)
	t.Run("the contract", func(t *testing.T) {
		for path := range writes {
			op := contract.Doc.Paths.Find(path).Post
			found := false
			for _, p := range op.Parameters {
				if p.Ref == "#/components/parameters/IdempotencyKey" {
					found = true
				}
			}
			if !found {
				t.Errorf("POST %s: no parameter #/components/parameters/IdempotencyKey", path)
			}
			if ok := op.Responses.Status(200); ok == nil || ok.Value.Headers["Idempotent-Replayed"] == nil {
				t.Errorf("POST %s: its 200 reply does not declare the header Idempotent-Replayed", path)
			}
		}
	})

	box := testSecretBox(t)
	e := newEnv(t, withWebhooks(box))
	w := e.newWorld(t, "acme")
	hooks := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(hooks.Close)
	company, contact := newCompany(t, e, w, "Contoso", w.member)
	doomed, _ := newCompany(t, e, w, "Doomed", w.member)
	chair := newGoods(t, e, w, "Chair", "CH-1", "10.00", "1", "21", true)
	deal := newDeal(t, e, w, company, w.member, map[string]any{"Goods": []any{map[string]any{"goods_id": chair}}})
	var position int64
	if err := e.db.Get(&position, `SELECT id FROM deal_goods WHERE deal_id = $1`, deal); err != nil {
		t.Fatal(err)
	}
	document := newDocument(t, e, w, company, deal, w.member, "INV-1", "2026-11-20")
	eur := newMoneyAccount(t, e, w, "Bank", "EUR")
	task := parseID(t, expectOK(t, e.post(t, w.member.token, "/task/insert", map[string]any{"company_id": company, "note": "Call", "type_id": w.dirs[35][0]})))
	mailbox := mailAccount(t, e, box, w.member.id, "member@acme.example", impl.MailServerInput{Host: "127.0.0.1", Port: 1, Security: "none"}, impl.MailServerInput{})
	hook, _ := subscribe(t, e, w, map[string]any{"url": hooks.URL + "/a"})
	doomedHook, _ := subscribe(t, e, w, map[string]any{"url": hooks.URL + "/b"})
	field := parseID(t, expectOK(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 1, "name": "segment", "title": "Segment"})))
	doomedField := parseID(t, expectOK(t, e.post(t, w.admin.token, "/field/insert", map[string]any{"module": 1, "name": "old", "title": "Old"})))
	filter := parseID(t, expectOK(t, e.post(t, w.admin.token, "/filter/insert", map[string]any{"module": 20, "name": "Upsell", "definition": map[string]any{"type_id": w.dirs[40][1]}})))
	doomedFilter := parseID(t, expectOK(t, e.post(t, w.admin.token, "/filter/insert", map[string]any{"module": 20, "name": "Old", "definition": map[string]any{"type_id": w.dirs[40][0]}})))

	cases := []struct {
		target string
		token  string
		body   any
	}{
		{"/company/insert", w.member.token, map[string]any{"name": "Fabrikam", "type_id": w.dirs[9][0], "user_id": w.member.id}},
		{"/company/update", w.member.token, map[string]any{"id": company, "note": "updated once"}},
		{"/company/requisites/insert", w.member.token, map[string]any{"id_company": company, "inn": "7701234567"}},
		{"/company/phone/insert", w.member.token, map[string]any{"company_id": company, "phone": "+372 600 0001"}},
		{"/company/email/insert", w.member.token, map[string]any{"company_id": company, "email": "orders@contoso.example"}},
		{"/company/delete", w.member.token, map[string]any{"id": doomed}},
		{"/contact/insert", w.member.token, map[string]any{"company_id": company, "first_name": "Mari"}},
		{"/contact/social/set", w.member.token, map[string]any{"contact_id": contact, "SocialNetworks": []any{map[string]any{"network": "telegram", "address": "@mari"}}}},
		{"/task/insert", w.member.token, map[string]any{"company_id": company, "note": "Call back", "type_id": w.dirs[35][0]}},
		{"/task/update", w.member.token, map[string]any{"id": task, "status_id": 2, "result": "Agreed"}},
		{"/deal/insert", w.member.token, map[string]any{"name": "Chairs", "company_id": company, "type_id": w.dirs[40][0], "status_id": w.dirs[41][0], "user_id": w.member.id, "date_start": "2026-11-20", "date_finish": "2026-12-20"}},
		{"/deal/update", w.member.token, map[string]any{"id": deal, "note": "updated once"}},
		{fmt.Sprintf("/deal/goods/insert?deal_id=%d&goods_ids=%d", deal, chair), w.member.token, nil},
		{"/deal/goods/update", w.member.token, map[string]any{"id": position, "deal_id": deal, "note": "grey"}},
		{fmt.Sprintf("/document/goods/insert?document_id=%d&goods_ids=%d", document, chair), w.member.token, nil},
		{"/document/insert", w.member.token, map[string]any{"company_id": company, "type_id": w.dirs[44][0], "date": "2026-11-21"}},
		{"/finance/insert", w.member.token, map[string]any{"date": "2026-11-20", "direction_id": 1, "account_id": eur, "sum": 100, "company_id": company}},
		{"/mail/send", w.member.token, map[string]any{"mail": map[string]any{"account_id": fmt.Sprint(mailbox), "to_address": "janis@contoso.example", "subject": b64("Hi"), "body": b64("<p>x</p>")}}},
		{"/webhook/insert", w.admin.token, map[string]any{"url": hooks.URL + "/c"}},
		{"/webhook/update", w.admin.token, map[string]any{"id": hook, "description": "ERP"}},
		{"/webhook/delete", w.admin.token, map[string]any{"id": doomedHook}},
		{"/webhook/test", w.admin.token, map[string]any{"id": hook}},
		{"/field/insert", w.admin.token, map[string]any{"module": 20, "name": "signed", "title": "Signed"}},
		{"/field/update", w.admin.token, map[string]any{"id": field, "title": "Market segment"}},
		{"/field/delete", w.admin.token, map[string]any{"id": doomedField}},
		{"/field/values/update", w.member.token, map[string]any{"module": 1, "id": company, "values": map[string]any{"segment": "retail"}}},
		{"/filter/insert", w.admin.token, map[string]any{"module": 20, "name": "New business", "definition": map[string]any{"type_id": w.dirs[40][0]}}},
		{"/filter/update", w.admin.token, map[string]any{"id": filter, "name": "Upsells"}},
		{"/filter/delete", w.admin.token, map[string]any{"id": doomedFilter}},
	}
	covered := map[string]bool{}
	for i, c := range cases {
		path, _, _ := strings.Cut(c.target, "?")
		covered[path] = true
		t.Run(path, func(t *testing.T) {
			key := fmt.Sprintf("key-%d-%s", i, path)
			send := func(body any) reply {
				t.Helper()
				return e.do(t, request{method: http.MethodPost, target: c.target, token: c.token, body: body, header: map[string]string{"Idempotency-Key": key}})
			}
			before := e.tableCounts(t)
			first := send(c.body)
			if first.Status != "success" || first.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first call: %s (Idempotent-Replayed %q)", first.Raw, first.Header.Get("Idempotent-Replayed"))
			}
			afterFirst := e.tableCounts(t)
			if diffCounts(before, afterFirst) == "" {
				t.Fatal("the first call changed no table")
			}
			second := send(c.body)
			if second.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(second.Raw, first.Raw) || second.HTTPStatus != first.HTTPStatus {
				t.Errorf("second call: %d %s (Idempotent-Replayed %q), want the first reply replayed: %s",
					second.HTTPStatus, second.Raw, second.Header.Get("Idempotent-Replayed"), first.Raw)
			}
			if d := diffCounts(afterFirst, e.tableCounts(t)); d != "" {
				t.Errorf("the replay wrote: %s", d)
			}
			// The same key with another request (here: other bytes of the
			// body, or another query): 400, nothing written.
			var r reply
			if c.body == nil {
				r = e.do(t, request{method: http.MethodPost, target: fmt.Sprintf("%s,%d", c.target, chair), token: c.token, header: map[string]string{"Idempotency-Key": key}})
			} else {
				data, _ := json.Marshal(c.body)
				r = send(string(data) + "\n")
			}
			errorValue, _ := contract.Doc.Paths.Find(path).Post.Extensions["x-error-value"].(string)
			expectError(t, r, "400", `header parameter "Idempotency-Key": the key was used with another request`, errorValue)
			if d := diffCounts(afterFirst, e.tableCounts(t)); d != "" {
				t.Errorf("the refused request wrote: %s", d)
			}
		})
	}
	for path := range writes {
		if !covered[path] {
			t.Errorf("POST %s is not called with a key by this test", path)
		}
	}
}

func TestIdempotencyConcurrent(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	body := map[string]any{"name": "Fabrikam", "type_id": w.dirs[9][0], "user_id": w.member.id}
	send := func(token, key string) reply {
		return e.do(t, request{method: http.MethodPost, target: "/company/insert", token: token, body: body, header: map[string]string{"Idempotency-Key": key}})
	}

	t.Run("one key sent at once by ten", func(t *testing.T) {
		replies := make([]reply, 10)
		var wg sync.WaitGroup
		for i := range replies {
			wg.Go(func() { replies[i] = send(w.member.token, "same") })
		}
		wg.Wait()
		replayed := 0
		for _, r := range replies {
			if r.Status != "success" || r.Value != replies[0].Value {
				t.Errorf("reply %s, want the one id %s", r.Raw, replies[0].Value)
			}
			if r.Header.Get("Idempotent-Replayed") == "true" {
				replayed++
			}
		}
		if replayed != 9 {
			t.Errorf("%d replays, want 9", replayed)
		}
		if n := e.count(t, `SELECT count(*) FROM companies WHERE account_id = $1 AND name = 'Fabrikam'`, w.accountID); n != 1 {
			t.Errorf("%d counterparties, want 1", n)
		}
	})

	t.Run("keys belong to their token", func(t *testing.T) {
		a := expectOK(t, send(w.member.token, "mine"))
		b := send(w.admin.token, "mine")
		if expectOK(t, b) == a || b.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("another token's key replayed: %s", b.Raw)
		}
		if n := e.count(t, `SELECT count(*) FROM idempotency_keys WHERE account_id = $1 AND key = 'mine'`, w.accountID); n != 2 {
			t.Errorf("%d keys stored, want 2", n)
		}
	})

	t.Run("failures of the operation are stored, validation failures are not", func(t *testing.T) {
		missing := map[string]any{"id": 999999999, "note": "x"}
		first := e.do(t, request{method: http.MethodPost, target: "/company/update", token: w.member.token, body: missing, header: map[string]string{"Idempotency-Key": "upd"}})
		expectError(t, first, "404", "not found", "0")
		second := e.do(t, request{method: http.MethodPost, target: "/company/update", token: w.member.token, body: missing, header: map[string]string{"Idempotency-Key": "upd"}})
		expectError(t, second, "404", "not found", "0")
		if second.Header.Get("Idempotent-Replayed") != "true" {
			t.Error("the stored failure was not replayed")
		}
		invalid := map[string]any{"name": ""}
		for range 2 {
			r := e.do(t, request{method: http.MethodPost, target: "/company/insert", token: w.member.token, body: invalid, header: map[string]string{"Idempotency-Key": "invalid"}})
			expectError(t, r, "400", "request body", "")
			if r.Header.Get("Idempotent-Replayed") != "" {
				t.Error("a validation failure was replayed")
			}
		}
		if n := e.count(t, `SELECT count(*) FROM idempotency_keys WHERE account_id = $1 AND key = 'invalid'`, w.accountID); n != 0 {
			t.Errorf("a validation failure stored its key")
		}
	})

	t.Run("a key past 24 hours is new again", func(t *testing.T) {
		first := expectOK(t, send(w.member.token, "old"))
		if _, err := e.db.Exec(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE account_id = $1 AND key = 'old'`, w.accountID); err != nil {
			t.Fatal(err)
		}
		r := send(w.member.token, "old")
		if expectOK(t, r) == first || r.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("an expired key replayed: %s", r.Raw)
		}
	})

	t.Run("malformed keys", func(t *testing.T) {
		for _, key := range []string{strings.Repeat("k", 256), "tab\there", "ключ"} {
			r := e.do(t, request{method: http.MethodPost, target: "/company/insert", token: w.member.token, body: body, header: map[string]string{"Idempotency-Key": key}})
			expectError(t, r, "400", `header parameter "Idempotency-Key"`, "")
		}
	})
}

// TestIdempotencyPurge: the background purge deletes the expired keys of
// every account, those that no longer send keys included, oldest first and
// at most a batch at a time, and keeps the keys of the last 24 hours.
func TestIdempotencyPurge(t *testing.T) {
	e := newEnv(t)
	a, b := e.newWorld(t, "acme"), e.newWorld(t, "beta")
	key := func(w *world, name, age string) {
		t.Helper()
		e.exec(t, `INSERT INTO idempotency_keys (account_id, token_id, key, request_hash, http_status, reply, created_at)
			SELECT account_id, id, $3::text, sha256(convert_to($3::text, 'UTF8')), 200, '{}', now() - $4::interval
			  FROM tokens WHERE account_id = $1 AND user_id = $2`, w.accountID, w.admin.id, name, age)
	}
	// Older than anything other tests leave, so that they are the oldest.
	key(a, "a1", "1001 days")
	key(a, "a2", "1002 days")
	key(a, "a3", "1003 days")
	key(a, "fresh", "23 hours")
	key(b, "b1", "1004 days") // beta sends no keys any more
	key(b, "b2", "1005 days")
	left := func() string {
		var names []string
		if err := e.db.Select(&names, `SELECT key FROM idempotency_keys WHERE account_id IN ($1, $2) ORDER BY key`,
			a.accountID, b.accountID); err != nil {
			t.Fatal(err)
		}
		return strings.Join(names, ",")
	}
	if dbtest.Shared() {
		// Other packages' servers purge the shared database too: only the
		// outcome is certain.
		for i := 0; i < 10; i++ {
			if n, err := impl.PurgeIdempotencyKeys(context.Background(), e.server, 2); err != nil {
				t.Fatal(err)
			} else if n == 0 {
				break
			}
		}
		if got := left(); got != "fresh" {
			t.Fatalf("left %q, want only the fresh key", got)
		}
		return
	}
	for _, step := range []struct {
		deleted int
		left    string
	}{
		{2, "a1,a2,a3,fresh"}, // the two oldest: beta's
		{2, "a1,fresh"},
		{1, "fresh"},
		{0, "fresh"},
	} {
		n, err := impl.PurgeIdempotencyKeys(context.Background(), e.server, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := left(); n < step.deleted || got != step.left {
			t.Fatalf("purged %d, left %q; want %d, %q", n, got, step.deleted, step.left)
		}
	}
}
