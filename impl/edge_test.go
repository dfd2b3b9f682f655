package impl_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// hostileBodyTexts are JSON string literals (as written in the body, quotes
// included) that PostgreSQL cannot store as text.
var hostileBodyTexts = map[string]string{
	"escaped NUL":             `"a\u0000b"`,
	"raw NUL":                 "\"a\x00b\"",
	"invalid UTF-8":           "\"a\xff\xfeb\"",
	"overlong slash":          "\"a\xc0\xafb\"",
	"lone low surrogate":      `"a\udfffb"`,
	"lone high surrogate":     `"a\ud800b"`,
	"high then no low":        `"a\ud800\u0041"`,
	"UTF-8 encoded surrogate": "\"a\xed\xbf\xbfb\"",
}

// hostileQueryTexts are query values, as sent, that are not valid text.
var hostileQueryTexts = map[string]string{
	"NUL":                     "a%00b",
	"invalid UTF-8":           "%ff%fe",
	"overlong slash":          "%C0%AF",
	"UTF-8 encoded surrogate": "%ED%BF%BF",
}

func TestEdgeInput(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	companyID := insertCompany(t, e, w.admin.token, map[string]any{"name": "Base", "type_id": w.dirs[9][0], "user_id": w.admin.id})
	written := func(t *testing.T) [4]int {
		t.Helper()
		return [4]int{
			e.count(t, `SELECT count(*) FROM companies`), e.count(t, `SELECT count(*) FROM contacts`),
			e.count(t, `SELECT count(*) FROM tasks`), e.count(t, `SELECT count(*) FROM journal`),
		}
	}
	before := written(t)

	// Body fields: each operation with a template whose %s is replaced by the
	// hostile literal, and the field the error must name.
	bodies := []struct{ target, template, field string }{
		{"/company/insert", `{"name": %s, "type_id": ` + fmt.Sprint(w.dirs[9][0]) + `, "user_id": ` + fmt.Sprint(w.admin.id) + `}`, `field "name"`},
		{"/company/insert", `{"name": "ok", "type_id": ` + fmt.Sprint(w.dirs[9][0]) + `, "user_id": ` + fmt.Sprint(w.admin.id) + `, "Contacts": [{"first_name": "x"}, {"first_name": %s}]}`, `field "Contacts.1.first_name"`},
		{"/company/insert", `{"name": "ok", %s: 1}`, `field "(a member name)"`},
		{"/contact/insert", `{"company_id": ` + fmt.Sprint(companyID) + `, "last_name": %s}`, `field "last_name"`},
		{"/task/insert", `{"company_id": ` + fmt.Sprint(companyID) + `, "note": %s, "type_id": ` + fmt.Sprint(w.dirs[35][0]) + `}`, `field "note"`},
	}
	for _, b := range bodies {
		for name, lit := range hostileBodyTexts {
			t.Run(b.target+" "+b.field+" "+name, func(t *testing.T) {
				r := e.post(t, w.admin.token, b.target, fmt.Sprintf(b.template, lit))
				expectError(t, r, "400", "request body: "+b.field+": must be valid UTF-8 text without NUL (U+0000) characters", "")
			})
		}
	}

	queries := []struct{ method, target, param string }{
		{http.MethodPost, "/common/list/paging/1?columns=id&name=", "name"},
		{http.MethodPost, "/common/list/paging/24?subject=", "subject"},
		{http.MethodPost, "/common/list/paging/24?to_address=", "to_address"},
		{http.MethodPost, "/common/list/paging/24?from_address=", "from_address"},
		{http.MethodGet, "/contact/list?name=", "name"},
		{http.MethodGet, "/field/list?module=", "module"},
	}
	for _, q := range queries {
		for name, v := range hostileQueryTexts {
			t.Run(q.target+" "+name, func(t *testing.T) {
				r := e.do(t, request{method: q.method, target: q.target + v, token: w.admin.token})
				expectError(t, r, "400", `query parameter "`+q.param+`": must be valid UTF-8 text without NUL (U+0000) characters`, "")
			})
		}
	}

	t.Run("query strings that do not parse", func(t *testing.T) {
		for _, tc := range []struct{ target, want string }{
			{"/common/list/paging/1?columns=id&name=zz;zz", `a parameter contains ";"`},
			{"/common/list/paging/1?columns=id;name=zz", `a parameter contains ";"`},
			{"/common/list/paging/1?columns=id&name=%zz", `query parameter "name": malformed %-escape`},
			{"/common/list/paging/1?columns=id&name=%4", `query parameter "name": malformed %-escape`},
			{"/common/list/paging/1?columns=id&na%zzme=x", `a parameter name has a malformed %-escape`},
		} {
			r := e.post(t, w.admin.token, tc.target, nil)
			expectError(t, r, "400", tc.want, "")
		}
	})

	t.Run("integers past their range", func(t *testing.T) {
		for _, tc := range []struct{ target, want string }{
			{"/common/list/paging/1?columns=id&page=9223372036854775807", `query parameter "page": number must be at most`},
			{"/common/list/paging/1?columns=id&page=1000001", `query parameter "page": number must be at most`},
			{"/common/list/paging/1?columns=id&page=99999999999999999999", `query parameter "page"`},
			{"/common/list/paging/1?columns=id&id=9223372036854775808", `query parameter "id"`},
		} {
			r := e.post(t, w.admin.token, tc.target, nil)
			expectError(t, r, "400", tc.want, "")
		}
		r := e.post(t, w.admin.token, "/common/list/paging/1?columns=id&page=1000000", nil)
		if r.Status != "success" || r.Value != "[]" {
			t.Errorf("the last page allowed: %s", r.Raw)
		}
	})

	t.Run("paths not in their clean form", func(t *testing.T) {
		for _, target := range []string{"/company/get/../get?id=1", "//company//get?id=1", "/company/./get?id=1", "/company/get/.."} {
			r := e.do(t, request{method: http.MethodGet, target: target, token: w.admin.token, noOperation: true})
			expectErrorStatus(t, r, http.StatusNotFound, "404", "no such operation: the path is not in its clean form", "")
			if r.Header.Get("Location") != "" {
				t.Errorf("%s: a redirect to %s", target, r.Header.Get("Location"))
			}
		}
		r := e.do(t, request{method: http.MethodGet, target: "/company/get%00?id=1", token: w.admin.token, noOperation: true})
		expectError(t, r, "400", "path: must be valid UTF-8", "")
		// An escaped slash stays inside its segment here (the contract's
		// router would read it as a separator and find no operation): the
		// directory code "9/1" is no code.
		r = e.do(t, request{method: http.MethodGet, target: "/directory/9%2F1", token: w.admin.token, noOperation: true})
		expectError(t, r, "400", `path parameter "code": an invalid integer`, "")
	})

	t.Run("escapes that are text", func(t *testing.T) {
		// An escaped backslash before u0000 is the text `\u0000`, and a
		// surrogate pair is one character: both are stored as sent.
		id := insertCompany(t, e, w.admin.token, map[string]any{"name": `back\u0000slash 😀`, "type_id": w.dirs[9][0], "user_id": w.admin.id})
		if n := e.count(t, `SELECT count(*) FROM companies WHERE id = $1 AND name = $2`, id, `back\u0000slash 😀`); n != 1 {
			t.Error("the name was not stored as sent")
		}
		r := e.post(t, w.admin.token, "/company/insert", `{"name": "pair \ud83d\ude00", "type_id": `+fmt.Sprint(w.dirs[9][0])+`, "user_id": `+fmt.Sprint(w.admin.id)+`}`)
		expectOK(t, r)
		if n := e.count(t, `SELECT count(*) FROM companies WHERE name = 'pair 😀'`); n != 1 {
			t.Error("a surrogate pair was not stored as its character")
		}
		before[0] += 2
		before[3] += 2
	})

	if after := written(t); after != before {
		t.Errorf("rows (companies, contacts, tasks, journal) %v, before %v: a refused request wrote", after, before)
	}
}

// TestBodyNesting sends bodies nested far deeper than any operation needs:
// each is refused with one short "400" before anything decodes it, the error
// text is bounded whatever the body holds, and nothing is written.
func TestBodyNesting(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	insertCompany(t, e, w.admin.token, map[string]any{"name": "Base", "type_id": w.dirs[9][0], "user_id": w.admin.id})
	written := func(t *testing.T) [3]int {
		t.Helper()
		return [3]int{
			e.count(t, `SELECT count(*) FROM companies WHERE account_id = $1`, w.accountID),
			e.count(t, `SELECT count(*) FROM mail_messages WHERE account_id = $1`, w.accountID),
			e.count(t, `SELECT count(*) FROM journal WHERE account_id = $1`, w.accountID),
		}
	}
	before := written(t)
	const tooDeep = "request body: arrays and objects nest deeper than 64 levels"
	tooMany := func(n int) string {
		return fmt.Sprintf("request body: more values than this operation takes (at most %d arrays, objects, strings, numbers and literals in all)", n)
	}
	nested := func(open, inner, close string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	insert := func(member string) string {
		return `{"name": "Deep", "type_id": ` + fmt.Sprint(w.dirs[9][0]) + `, "user_id": ` + fmt.Sprint(w.admin.id) + `, "note": ` + member + `}`
	}
	for _, tc := range []struct {
		name, target, body, want, value string
	}{
		// The counterparty update's schema holds at most 24 values, the
		// mail's 11: a deep body passes them first.
		{"1 MiB of arrays", "/company/update", nested("[", "", "]", 524_238), tooMany(24), "0"},
		{"1 MiB of zeros in one array", "/company/update", `{"id": 1, "note": [` + strings.Repeat("0,", 524_000) + `0]}`, tooMany(24), "0"},
		{"10 MiB of arrays with NUL innermost", "/mail/send", nested("[", `"\u0000"`, "]", 5_242_870), tooMany(11), ""},
		{"objects with a NUL member name innermost", "/mail/send", nested(`{"a":`, `{"\u0000":1}`, "}", 1_747_586), tooMany(11), ""},
		// The counterparty insert's holds 26,206 (100 contact persons with 50
		// e-mails and 50 phones each): the nesting bound comes first.
		{"arrays in a member", "/company/insert", insert(nested("[", `"x"`, "]", 65)), tooDeep, ""},
		{"1 MB of arrays in a member", "/company/insert", insert(nested("[", "", "]", 500_000)), tooDeep, ""},
		{"objects under a long member name", "/company/insert", `{"` + strings.Repeat("n", 1<<19) + `": ` + nested(`{"b":`, "1", "}", 70) + `}`, tooDeep, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.post(t, w.admin.token, tc.target, tc.body)
			expectError(t, r, "400", tc.want, tc.value)
			if r.errorText() != tc.want {
				t.Errorf("error text %q, want exactly %q", r.errorText(), tc.want)
			}
		})
	}

	t.Run("64 levels are allowed", func(t *testing.T) {
		// The nesting passes the scan; validation then names the field.
		r := e.post(t, w.admin.token, "/company/insert", insert(nested("[", `"x"`, "]", 63)))
		expectError(t, r, "400", `request body: field "note"`, "")
	})

	t.Run("error texts are bounded", func(t *testing.T) {
		long := strings.Repeat("Ā", 1<<18) // 512 KiB of two-byte characters
		for _, tc := range []struct{ name, target, body, want string }{
			{"a NUL under a long member name", "/company/insert", `{"` + long + `": {"x": "\u0000"}}`, `request body: field "` + strings.Repeat("Ā", 30) + `….x": must be valid UTF-8`},
			{"a NUL deep in a path of many members", "/company/insert", nested(`{"m":`, `"\u0000"`, "}", 60), `request body: field "m.m.m.m.….m.m.m.m": must be valid UTF-8`},
			{"an unknown long member", "/company/insert", `{"` + long + `": 1}`, `request body: property "` + strings.Repeat("Ā", 30) + `…" is unsupported`},
			{"a long query parameter name", "/common/list/paging/1?columns=id&" + strings.Repeat("q", 1<<15) + "=%00", "", `query parameter "` + strings.Repeat("q", 61) + `…": must be valid UTF-8`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var body any
				if tc.body != "" {
					body = tc.body
				}
				r := e.post(t, w.admin.token, tc.target, body)
				expectError(t, r, "400", tc.want, "")
				if n := len(r.errorText()); n > 512 {
					t.Errorf("error text of %d bytes: %.200s…", n, r.errorText())
				}
				if strings.Contains(r.errorText(), long[:64]) {
					t.Errorf("the error repeats the request: %.200s…", r.errorText())
				}
			})
		}
	})

	if after := written(t); after != before {
		t.Errorf("rows (companies, mail, journal) %v, before %v: a refused request wrote", after, before)
	}
}
