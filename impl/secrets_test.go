package impl_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/crmservice/crm/db/dbtest"
)

// readableColumns are, by table, the columns of the schema that can hold
// text (text and character types, json and jsonb, bytea, arrays of text), each
// as an expression of its text.
func (e *env) readableColumns(t *testing.T) map[string][]string {
	t.Helper()
	var cols []struct {
		Table  string `db:"table_name"`
		Column string `db:"column_name"`
		Type   string `db:"data_type"`
		UDT    string `db:"udt_name"`
	}
	if err := e.db.Select(&cols, `
		SELECT c.table_name, c.column_name, c.data_type, c.udt_name
		  FROM information_schema.columns c
		  JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
		 WHERE c.table_schema = 'public' AND tb.table_type = 'BASE TABLE'
		 ORDER BY 1, 2`); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	n := 0
	for _, c := range cols {
		var expr string
		switch {
		case c.Type == "text", c.Type == "character varying", c.Type == "character", c.Type == "json", c.Type == "jsonb":
			expr = `"` + c.Column + `"::text`
		case c.Type == "bytea":
			expr = `encode("` + c.Column + `", 'escape')`
		case c.Type == "ARRAY" && (c.UDT == "_text" || c.UDT == "_varchar"):
			expr = `array_to_string("` + c.Column + `", ' ')`
		default:
			continue
		}
		out[c.Table] = append(out[c.Table], expr)
		n++
	}
	if n < 50 {
		t.Fatalf("only %d readable columns found: %v", n, out)
	}
	return out
}

// findInDatabase returns the tables with a readable column that holds one of
// needles: one statement per table, its columns' texts joined and matched
// against all the needles at once.
func (e *env) findInDatabase(t *testing.T, needles ...string) []string {
	t.Helper()
	escape := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	var patterns []string
	for _, n := range needles {
		patterns = append(patterns, "%"+escape.Replace(n)+"%")
	}
	var found []string
	for table, exprs := range e.readableColumns(t) {
		if e.count(t, `SELECT count(*) FROM "`+table+`" WHERE concat_ws(' ', `+strings.Join(exprs, ", ")+`) LIKE ANY ($1)`,
			pq.Array(patterns)) > 0 {
			found = append(found, table)
		}
	}
	return found
}

// TestSecretsAtRest runs every operation that returns a secret (the webhook
// insert with a secret made by the server and with one given, the update that
// rotates or sets it) with and without an Idempotency-Key, replays the keyed
// ones, and then reads every text, json and bytea column of the database: no
// secret the API returned, and no token, is there in clear. A replay answers
// the secret again (its stored reply is sealed with the server's key).
func TestSecretsAtRest(t *testing.T) {
	box := testSecretBox(t)
	e := newEnv(t, withWebhooks(box))
	w := e.newWorld(t, "acme")
	rc := newReceiver(t)
	id, first := subscribe(t, e, w, map[string]any{"url": rc.URL + "/a"})
	secrets := []string{first}
	given := func(n int) string {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("given secret number %02d of the test!", n)))
	}
	for i, c := range []struct {
		name, target string
		body         map[string]any
	}{
		{"insert, a secret made", "/webhook/insert", map[string]any{"url": rc.URL + "/b"}},
		{"insert, a secret given", "/webhook/insert", map[string]any{"url": rc.URL + "/c", "secret": given(1)}},
		{"update, rotated", "/webhook/update", map[string]any{"id": id, "rotate_secret": true}},
		{"update, given", "/webhook/update", map[string]any{"id": id, "secret": given(2)}},
	} {
		for _, keyed := range []bool{false, true} {
			name := c.name
			req := request{method: http.MethodPost, target: c.target, token: w.admin.token, body: c.body}
			if keyed {
				name += ", with Idempotency-Key"
				req.header = map[string]string{"Idempotency-Key": fmt.Sprintf("secret-%d", i)}
				if c.body["secret"] != nil {
					c.body["secret"] = given(10 + i)
				}
			}
			t.Run(name, func(t *testing.T) {
				r := e.do(t, req)
				v := decode[map[string]any](t, expectOK(t, r))
				secret, _ := v["secret"].(string)
				if !strings.HasPrefix(secret, "whsec_") {
					t.Fatalf("no secret in %s", r.Raw)
				}
				secrets = append(secrets, secret)
				if !keyed {
					return
				}
				again := e.do(t, req)
				if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Raw) != string(r.Raw) {
					t.Errorf("the replay: %s %v, want the first reply %s", again.Raw, again.Header, r.Raw)
				}
			})
		}
	}
	needles := []string{}
	for _, s := range secrets {
		needles = append(needles, s, strings.TrimPrefix(s, "whsec_"))
	}
	for _, u := range []user{w.admin, w.head, w.member, w.peer, w.other} {
		needles = append(needles, u.token)
	}
	if found := e.findInDatabase(t, needles...); len(found) > 0 {
		t.Errorf("secrets readable in %v", found)
	}
	// The scan finds what is there: the subscription's URL, in its table
	// and its journal row.
	if found := e.findInDatabase(t, rc.URL+"/a"); !slices.Contains(found, "webhooks") || !slices.Contains(found, "journal") {
		t.Errorf("the scan found the URL only in %v", found)
	}
	if n := e.count(t, `SELECT count(*) FROM idempotency_keys WHERE account_id = $1 AND reply_sealed`, w.accountID); n != 4 {
		t.Errorf("%d sealed replies, want 4", n)
	}

	t.Run("a replay needs the key that sealed it", func(t *testing.T) {
		req := request{method: http.MethodPost, target: "/webhook/insert", token: w.admin.token,
			body: map[string]any{"url": rc.URL + "/d"}, header: map[string]string{"Idempotency-Key": "sealed-elsewhere"}}
		expectOK(t, e.do(t, req))
		// Another process over the same database, with another CRM_SECRET_KEY.
		again := e.process(t, withWebhooks(testSecretBox(t))).do(t, req)
		if again.HTTPStatus != http.StatusServiceUnavailable || again.code() != "503" ||
			!strings.Contains(again.errorText(), "CRM_SECRET_KEY cannot decrypt") {
			t.Errorf("a replay under another key: HTTP %d %s", again.HTTPStatus, again.Raw)
		}
	})
}

// TestWebhookTestInKeyTransaction: POST /webhook/test with an Idempotency-Key
// writes its delivery row in the key's transaction, so that when the reply
// cannot be stored nothing of the request stays.
func TestWebhookTestInKeyTransaction(t *testing.T) {
	dbtest.RequireOwnDatabase(t) // a trigger on the shared schema would reach other tests
	box := testSecretBox(t)
	e := newEnv(t, withWebhooks(box))
	w := e.newWorld(t, "acme")
	rc := newReceiver(t)
	id, secret := subscribe(t, e, w, map[string]any{"url": rc.URL + "/hook"})
	rc.mu.Lock()
	rc.secret = secret
	rc.mu.Unlock()
	e.exec(t, `CREATE FUNCTION refuse_reply() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'the test refuses to store this reply'; END $$`)
	e.exec(t, `CREATE TRIGGER refuse_reply BEFORE UPDATE ON idempotency_keys
		FOR EACH ROW WHEN (NEW.key = 'unstorable') EXECUTE FUNCTION refuse_reply()`)
	deliveries := func() int {
		return e.count(t, `SELECT count(*) FROM webhook_deliveries WHERE account_id = $1 AND webhook_id = $2`, w.accountID, id)
	}

	r := e.do(t, request{method: http.MethodPost, target: "/webhook/test", token: w.admin.token, body: map[string]any{"id": id},
		header: map[string]string{"Idempotency-Key": "unstorable"}})
	expectError(t, r, "500", "internal error", "")
	if n := deliveries(); n != 0 {
		t.Errorf("%d delivery rows of a request whose key's transaction rolled back", n)
	}
	r = e.do(t, request{method: http.MethodPost, target: "/webhook/test", token: w.admin.token, body: map[string]any{"id": id},
		header: map[string]string{"Idempotency-Key": "stored"}})
	if v := decode[map[string]any](t, expectOK(t, r)); v["delivered"] != true {
		t.Fatalf("the test delivery: %s", r.Raw)
	}
	again := e.do(t, request{method: http.MethodPost, target: "/webhook/test", token: w.admin.token, body: map[string]any{"id": id},
		header: map[string]string{"Idempotency-Key": "stored"}})
	if again.Header.Get("Idempotent-Replayed") != "true" || deliveries() != 1 {
		t.Errorf("replayed %q, %d delivery rows; want a replay and the one row", again.Header.Get("Idempotent-Replayed"), deliveries())
	}
}
