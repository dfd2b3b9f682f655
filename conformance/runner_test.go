package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// testContract is openapi.yaml, loaded once for all the tests: loading and
// validating it takes a second or two under the race detector, and the
// tests only read it (as impl's tests share theirs).
func testContract(t *testing.T) *Contract {
	t.Helper()
	c, err := loadTestContract()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var loadTestContract = sync.OnceValues(func() (*Contract, error) { return LoadContract("../openapi.yaml") })

// reply writes an envelope; rows, pages and page are 0.
func reply(w http.ResponseWriter, status int, env map[string]any) {
	full := map[string]any{"status": "success", "error": "", "code": nil, "rows": 0, "pages": 0, "page": 0, "value": ""}
	for k, v := range env {
		full[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	if _, ok := w.Header()["X-Request-Id"]; !ok {
		w.Header().Set("X-Request-Id", "fake-1") // as every reply of the service
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(full)
}

// fakeServer serves canned replies by "METHOD /path" and records the requests.
type fakeServer struct {
	t      *testing.T
	routes map[string]http.HandlerFunc
	mu     sync.Mutex
	seen   []string // "METHOD target body"
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.seen = append(f.seen, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+string(body)))
	f.mu.Unlock()
	h := f.routes[r.Method+" "+r.URL.Path]
	if h == nil {
		reply(w, http.StatusNotFound, map[string]any{"status": "error", "error": "no such operation", "code": "404"})
		return
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	h(w, r)
}

func startFake(t *testing.T, routes map[string]http.HandlerFunc) (*fakeServer, *httptest.Server) {
	t.Helper()
	f := &fakeServer{t: t, routes: routes}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func parseSuites(t *testing.T, files ...string) []Suite {
	t.Helper()
	var suites []Suite
	for i, text := range files {
		s, err := ParseSuite(fmt.Sprintf("suite%d.yaml", i+1), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		suites = append(suites, s)
	}
	return suites
}

func runSuites(t *testing.T, srv *httptest.Server, vars map[string]string, suites []Suite) Report {
	t.Helper()
	r := &Runner{BaseURL: srv.URL, Token: "crm_test", Vars: vars, Contract: testContract(t), Client: srv.Client()}
	return r.Run(context.Background(), suites)
}

func resultByName(t *testing.T, rep Report, name string) Result {
	t.Helper()
	for _, res := range rep.Results {
		if res.Name() == name {
			return res
		}
	}
	t.Fatalf("no result %s in the report", name)
	return Result{}
}

func requireAuth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer crm_test" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			reply(w, 401, map[string]any{"status": "error", "error": "missing bearer token", "code": "401"})
			return
		}
		next(w, r)
	}
}

const companySuite = `
- name: types
  request: {method: GET, path: /directory/9}
  expect: {quick_list: true}
  save: {type_id: "[0].ID"}
- name: insert
  request:
    method: POST
    path: /company/insert
    body: {name: "Test {{run_id}}", type_id: "{{type_id|int}}", user_id: "{{user_id|int}}", note: "{{type_id}}"}
  expect: {status: success, rows: 0}
  save: {company_id: .}
- name: get
  request:
    method: GET
    path: /company/get
    query: {id: "{{company_id}}"}
  expect:
    value_json:
      company: {id: "{{company_id|int}}", name: "Test {{run_id}}", type_id: "{{type_id|int}}"}
      requisites: []
    value_json_contains:
      emails: [{email: a@example.com}]
  save: {responsible: company.user_id}
- name: duplicate
  request:
    method: POST
    path: /company/insert
    query: {check_duplicates: "true"}
    body: {name: "Test {{run_id}}", type_id: "{{type_id|int}}", user_id: "{{responsible|int}}"}
  expect: {status: error, code: "409", value: "{{company_id}}", error_contains: "counterparty {{company_id}}"}
`

func cardJSON(id int64, name string, typeID int64) string {
	company := map[string]any{"id": id, "name": name, "type_id": typeID, "user_id": 5, "person": 1,
		"created": "2026-11-01 09:00:00", "category_id": nil, "status_id": nil, "agent_id": nil, "group_id": nil}
	for _, k := range []string{"address", "city", "region", "country", "activity_type", "property_form", "type",
		"created_by", "info_source", "first_name", "middle_name", "last_name", "url", "user_name", "note",
		"external_code", "category", "status", "agent", "group", "tax_id", "tags", "which_site_source",
		"which_host_source", "which_link_source", "utm_campaign", "utm_source", "utm_medium", "utm_content", "utm_term"} {
		company[k] = ""
	}
	card := map[string]any{"company": company, "phones": []any{}, "requisites": []any{}, "contacts": []any{},
		"emails": []any{
			map[string]any{"id": 1, "company_id": id, "id_contact_man": nil, "email": "b@example.com"},
			map[string]any{"id": 2, "company_id": id, "id_contact_man": 7, "email": "a@example.com"},
		}}
	b, _ := json.Marshal(card)
	return string(b)
}

func companyRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /directory/9": requireAuth(func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"rows": 2, "pages": 1, "page": 1, "value": `[{"ID":11,"NAME":"Client"},{"ID":14,"NAME":"Supplier"}]`})
		}),
		"POST /company/insert": requireAuth(func(w http.ResponseWriter, r *http.Request) {
			var in map[string]any
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				reply(w, 200, map[string]any{"status": "error", "error": "request body: not JSON", "code": "400"})
				return
			}
			if in["type_id"] != float64(11) || in["user_id"] != float64(5) || (in["note"] != nil && in["note"] != "11") {
				reply(w, 200, map[string]any{"status": "error", "error": fmt.Sprintf("unexpected body %v", in), "code": "400"})
				return
			}
			if r.URL.Query().Get("check_duplicates") == "true" {
				reply(w, 200, map[string]any{"status": "error", "error": "duplicate: the e-mail a@example.com already belongs to counterparty 1001", "code": "409", "value": "1001"})
				return
			}
			reply(w, 200, map[string]any{"value": "1001"})
		}),
		"GET /company/get": requireAuth(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("id") != "1001" {
				reply(w, 200, map[string]any{"status": "Error", "error": "counterparty not found", "code": "404"})
				return
			}
			reply(w, 200, map[string]any{"value": cardJSON(1001, "Test run1", 11)})
		}),
	}
}

func TestRunPassingSuite(t *testing.T) {
	fake, srv := startFake(t, companyRoutes())
	var progress []string
	r := &Runner{BaseURL: srv.URL + "/", Token: "crm_test", Vars: map[string]string{"user_id": "5", "run_id": "run1"},
		Contract: testContract(t), Client: srv.Client(), Progress: func(res Result) { progress = append(progress, res.Name()) }}
	rep := r.Run(context.Background(), parseSuites(t, companySuite))
	for _, res := range rep.Results {
		if !res.Pass {
			t.Errorf("%s failed: %s\nrequest %s %s\nreply %d %s", res.Name(), res.Reason(), res.Request, res.RequestBody, res.HTTPStatus, res.Body)
		}
	}
	if rep.Passed() != 4 || rep.Failed() != 0 || rep.RunID != "run1" {
		t.Errorf("passed %d, failed %d, run_id %q; want 4, 0, run1", rep.Passed(), rep.Failed(), rep.RunID)
	}
	if want := []string{"suite1/types", "suite1/insert", "suite1/get", "suite1/duplicate"}; !slices.Equal(progress, want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
	if !slices.Contains(fake.seen, "GET /company/get?id=1001") {
		t.Errorf("the saved id was not substituted into the query: %v", fake.seen)
	}
	if r.Vars["company_id"] != "" {
		t.Error("Run changed Runner.Vars")
	}
}

func TestRunSetsRunID(t *testing.T) {
	_, srv := startFake(t, companyRoutes())
	a := runSuites(t, srv, map[string]string{"user_id": "5"}, parseSuites(t, companySuite))
	b := runSuites(t, srv, map[string]string{"user_id": "5"}, parseSuites(t, companySuite))
	if a.RunID == "" || a.RunID == b.RunID {
		t.Errorf("run ids %q and %q: want a new random one per run", a.RunID, b.RunID)
	}
}

func TestRunReportsContractViolations(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string // in the reason
	}{
		{"rows as a string", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"status":"success","error":"","code":null,"rows":"2","pages":1,"page":1,"value":"[]"}`)
		}, "contract:"},
		{"value against x-value-schema", func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"rows": 1, "pages": 1, "page": 1, "value": `[{"ID":"eleven","NAME":"Client"}]`})
		}, "DirectoryList"},
		{"value not JSON", func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"value": `[{"ID":11`})
		}, "not JSON"},
		{"member outside the envelope", func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"value": `[]`, "extra": 1})
		}, "contract:"},
		{"undocumented HTTP status", func(w http.ResponseWriter, r *http.Request) {
			reply(w, 500, map[string]any{"status": "error", "error": "internal error", "code": "500"})
		}, "contract:"},
		{"success with a code", func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"code": "0", "value": `[]`})
		}, "a success has code null"},
		{"failure with HTTP 200 and code 401", func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"status": "error", "error": "no", "code": "401"})
		}, "HTTP 401 goes with code"},
		{"internal error with details", func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"status": "error", "error": "pq: relation does not exist", "code": "500"})
		}, `"internal error (request id fake-1)"`},
		{"internal error without the request id", func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"status": "error", "error": "internal error", "code": "500"})
		}, `"internal error (request id fake-1)"`},
		{"no request id", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["X-Request-Id"] = []string{""}
			reply(w, 200, map[string]any{"rows": 0, "pages": 0, "page": 0, "value": `[]`})
		}, "every reply carries X-Request-Id"},
		{"not a JSON body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "404 page not found")
		}, "contract:"},
	}
	suite := parseSuites(t, `
- name: directory
  request: {method: GET, path: /directory/9}
  expect: {status: success}
`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := startFake(t, map[string]http.HandlerFunc{"GET /directory/9": tt.handler})
			rep := runSuites(t, srv, nil, suite)
			res := rep.Results[0]
			if res.Pass || rep.Failed() != 1 {
				t.Fatalf("the case passed; want a failure mentioning %q", tt.want)
			}
			if !strings.Contains(res.Reason(), tt.want) {
				t.Errorf("reason %q does not mention %q", res.Reason(), tt.want)
			}
			if res.Request != "GET /directory/9" || res.Body == "" {
				t.Errorf("request %q, body %q: want the exchange in the result", res.Request, res.Body)
			}
		})
	}
}

func TestRunChecksExpectations(t *testing.T) {
	_, srv := startFake(t, map[string]http.HandlerFunc{
		"GET /company/get": func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"status": "Error", "error": "counterparty 5 not found", "code": "404"})
		},
	})
	tests := []struct{ expect, want string }{
		{`{status: error, code: "404"}`, `status: want "error", got "Error"`},
		{`{status: Error, code: "400"}`, `code: want "400", got "404"`},
		{`{status: Error, code: "404", error_contains: "missing"}`, `error: want a text containing "missing"`},
		{`{status: Error, code: "404", value: "0"}`, `value: want "0", got ""`},
		{`{status: Error, code: "404", http_status: 401}`, `HTTP status: want 401, got 200`},
		{`{status: Error, code: "404", rows: 1}`, `rows: want 1, got 0`},
		{`{status: Error, code: "404", headers: {X-Trace: abc}}`, `header X-Trace`},
		{`{status: Error, code: "404", value_json: {id: 5}}`, `value_json: value: want an object, got ""`},
	}
	for _, tt := range tests {
		suite := parseSuites(t, `
- name: get
  request: {method: GET, path: /company/get, query: {id: "5"}}
  expect: `+tt.expect)
		rep := runSuites(t, srv, nil, suite)
		if res := rep.Results[0]; res.Pass || !strings.Contains(res.Reason(), tt.want) {
			t.Errorf("expect %s: pass %v, reason %q; want a failure mentioning %q", tt.expect, res.Pass, res.Reason(), tt.want)
		}
	}
	ok := parseSuites(t, `
- name: get
  request: {method: GET, path: /company/get, query: {id: "5"}}
  expect: {status: Error, code: "404", value: "", rows: 0, pages: 0, page: 0, error_contains: "not found"}
`)
	if res := runSuites(t, srv, nil, ok).Results[0]; !res.Pass {
		t.Errorf("the matching expectation failed: %s", res.Reason())
	}
}

func TestRunVariables(t *testing.T) {
	fake, srv := startFake(t, companyRoutes())

	t.Run("typed and text substitution", func(t *testing.T) {
		suites := parseSuites(t, companySuite)
		rep := runSuites(t, srv, map[string]string{"user_id": "5", "run_id": "run1"}, suites)
		if rep.Failed() != 0 {
			t.Fatalf("failed: %+v", rep.Results)
		}
		var sent string
		for _, s := range fake.seen {
			if strings.HasPrefix(s, "POST /company/insert ") {
				sent = strings.TrimPrefix(s, "POST /company/insert ")
				break
			}
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(sent), &body); err != nil {
			t.Fatalf("body %q: %v", sent, err)
		}
		want := map[string]any{"name": "Test run1", "type_id": float64(11), "user_id": float64(5), "note": "11"}
		for k, v := range want {
			if body[k] != v {
				t.Errorf("body member %s = %#v, want %#v", k, body[k], v)
			}
		}
	})

	t.Run("missing command-line variable", func(t *testing.T) {
		rep := runSuites(t, srv, map[string]string{"run_id": "run1"}, parseSuites(t, companySuite))
		insert := resultByName(t, rep, "suite1/insert")
		if insert.Pass || insert.Reason() != "variable user_id not set: pass it with -var user_id=VALUE" {
			t.Errorf("insert: pass %v, reason %q", insert.Pass, insert.Reason())
		}
		if insert.Request != "" {
			t.Errorf("a case with a missing variable sent %s", insert.Request)
		}
		get := resultByName(t, rep, "suite1/get")
		if get.Pass || get.Reason() != "variable company_id not set: case suite1/insert, which saves it, failed" {
			t.Errorf("get: pass %v, reason %q", get.Pass, get.Reason())
		}
		if rep.Failed() != 3 {
			t.Errorf("failed %d, want 3 (all but the first)", rep.Failed())
		}
	})

	t.Run("save path missing", func(t *testing.T) {
		suites := parseSuites(t, `
- name: types
  request: {method: GET, path: /directory/9}
  save: {type_id: "[5].ID"}
- name: use
  request: {method: GET, path: "/directory/{{type_id}}"}
`)
		rep := runSuites(t, srv, nil, suites)
		if res := rep.Results[0]; res.Pass || !strings.Contains(res.Reason(), "has 2 elements, no [5]") {
			t.Errorf("types: pass %v, reason %q", res.Pass, res.Reason())
		}
		if res := rep.Results[1]; res.Pass || !strings.Contains(res.Reason(), "case suite1/types, which saves it, failed") {
			t.Errorf("use: pass %v, reason %q", res.Pass, res.Reason())
		}
	})

	t.Run("variables cross suites", func(t *testing.T) {
		suites := parseSuites(t, `
- name: types
  request: {method: GET, path: /directory/9}
  save: {first_type: "[0]"}
`, `
- name: use
  request: {method: GET, path: /directory/9}
  expect:
    value_json_contains:
      .: ["{{first_type|json}}"]
`)
		rep := runSuites(t, srv, nil, suites)
		if rep.Failed() != 0 {
			t.Errorf("failed: %s", rep.Results[1].Reason())
		}
	})

	t.Run("integer filter refuses text", func(t *testing.T) {
		suites := parseSuites(t, `
- name: use
  request: {method: POST, path: /company/insert, body: {name: x, type_id: "{{t|int}}", user_id: 1}}
`)
		rep := runSuites(t, srv, map[string]string{"t": "abc"}, suites)
		if res := rep.Results[0]; res.Pass || !strings.Contains(res.Reason(), `variable t = "abc" is not an integer`) {
			t.Errorf("pass %v, reason %q", res.Pass, res.Reason())
		}
	})
}

func TestSelect(t *testing.T) {
	suites := parseSuites(t, companySuite, `
- name: other
  request: {method: GET, path: /healthz, auth: none}
- name: uses company
  request: {method: GET, path: /company/get, query: {id: "{{company_id}}"}}
`)
	names := func(ss []Suite) []string {
		var out []string
		for _, s := range ss {
			for _, c := range s.Cases {
				out = append(out, s.Name+"/"+c.Name)
			}
		}
		return out
	}
	tests := []struct {
		re   string
		want []string
	}{
		{"suite2/other", []string{"suite2/other"}},
		{"^suite1/types$", []string{"suite1/types"}},
		{"suite1/get", []string{"suite1/types", "suite1/insert", "suite1/get"}},
		{"uses company", []string{"suite1/types", "suite1/insert", "suite2/uses company"}},
		{"duplicate", []string{"suite1/types", "suite1/insert", "suite1/get", "suite1/duplicate"}},
		{"nothing matches this", nil},
	}
	for _, tt := range tests {
		got := names(Select(suites, regexp.MustCompile(tt.re)))
		if !slices.Equal(got, tt.want) {
			t.Errorf("Select(%q) = %v, want %v", tt.re, got, tt.want)
		}
	}

	_, srv := startFake(t, companyRoutes())
	rep := runSuites(t, srv, map[string]string{"user_id": "5", "run_id": "run1"}, Select(suites, regexp.MustCompile("suite1/get")))
	if len(rep.Results) != 3 || rep.Failed() != 0 {
		t.Errorf("a filtered run: %d results, %d failed; want 3 passing", len(rep.Results), rep.Failed())
	}
}

func TestRunAuthAndUnchecked(t *testing.T) {
	_, srv := startFake(t, companyRoutes())
	suites := parseSuites(t, `
- name: no token
  request: {method: GET, path: /directory/9, auth: none}
  expect: {http_status: 401, status: error, code: "401", headers: {WWW-Authenticate: Bearer}}
- name: invalid token
  request: {method: GET, path: /directory/9, auth: invalid}
  expect: {http_status: 401, status: error, code: "401"}
- name: header overrides the token
  request: {method: GET, path: /directory/9, headers: {Authorization: Basic eDp5}}
  expect: {http_status: 401, status: error, code: "401"}
- name: unknown path
  request: {method: GET, path: /no/such/path}
  unchecked: true
  unchecked_reason: an unknown path
  expect: {http_status: 404, status: error, code: "404", value: ""}
- name: unknown path not marked
  request: {method: GET, path: /no/such/path}
  expect: {http_status: 404, status: error, code: "404"}
`)
	rep := runSuites(t, srv, nil, suites)
	for _, res := range rep.Results[:4] {
		if !res.Pass {
			t.Errorf("%s: %s", res.Name(), res.Reason())
		}
	}
	last := rep.Results[4]
	if last.Pass || !strings.Contains(last.Reason(), "mark the case unchecked") {
		t.Errorf("unmarked unknown path: pass %v, reason %q", last.Pass, last.Reason())
	}
}

// TestRunUnknownPathStatus: a path outside the contract answered HTTP 200
// (as this server did before) or an operation's "404" answered HTTP 404
// fails the conventions, whatever the case expects.
func TestRunUnknownPathStatus(t *testing.T) {
	_, srv := startFake(t, map[string]http.HandlerFunc{
		"GET /no/such/path": func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, map[string]any{"status": "error", "error": "no such operation", "code": "404", "value": ""})
		},
		"GET /company/insert": func(w http.ResponseWriter, r *http.Request) {
			reply(w, 405, map[string]any{"status": "error", "error": "method not allowed", "code": "405", "value": ""})
		},
		"GET /directory/9": func(w http.ResponseWriter, r *http.Request) {
			reply(w, 404, map[string]any{"status": "error", "error": "not found", "code": "404", "value": ""})
		},
	})
	rep := runSuites(t, srv, nil, parseSuites(t, `
- name: unknown path with HTTP 200
  request: {method: GET, path: /no/such/path}
  unchecked: true
  unchecked_reason: an unknown path
  expect: {status: error, code: "404"}
- name: wrong method without Allow
  request: {method: GET, path: /company/insert}
  unchecked: true
  unchecked_reason: a wrong method
  expect: {http_status: 405, status: error, code: "405"}
- name: an operation's 404 as HTTP 404
  request: {method: GET, path: /directory/9}
  expect: {http_status: 404, status: error, code: "404"}
`))
	for i, want := range []string{"answers HTTP 404, not 200", "the header Allow", "HTTP 404 is only for a path outside the contract"} {
		if res := rep.Results[i]; res.Pass || !strings.Contains(res.Reason(), want) {
			t.Errorf("%s: pass %v, reason %q; want %q", res.Name(), res.Pass, res.Reason(), want)
		}
	}
}

func TestRunMissingAuthenticateHeader(t *testing.T) {
	_, srv := startFake(t, map[string]http.HandlerFunc{
		"GET /directory/9": func(w http.ResponseWriter, r *http.Request) {
			reply(w, 401, map[string]any{"status": "error", "error": "missing bearer token", "code": "401"})
		},
	})
	rep := runSuites(t, srv, nil, parseSuites(t, `
- name: no token
  request: {method: GET, path: /directory/9, auth: none}
  expect: {http_status: 401, status: error, code: "401"}
`))
	if res := rep.Results[0]; res.Pass || !strings.Contains(res.Reason(), "WWW-Authenticate") {
		t.Errorf("pass %v, reason %q; want the missing header reported", res.Pass, res.Reason())
	}
}

func TestRunRetriesRateLimit(t *testing.T) {
	calls := 0
	_, srv := startFake(t, map[string]http.HandlerFunc{
		"GET /healthz": func(w http.ResponseWriter, r *http.Request) {
			calls++
			if calls == 1 {
				w.Header().Set("Retry-After", "1")
				reply(w, 429, map[string]any{"status": "error", "error": "rate limit exceeded", "code": "429"})
				return
			}
			reply(w, 200, map[string]any{"value": `{"status":"ok"}`})
		},
	})
	rep := runSuites(t, srv, nil, parseSuites(t, `
- name: healthz
  request: {method: GET, path: /healthz, auth: none}
  expect: {value_json: {status: ok}}
`))
	if res := rep.Results[0]; !res.Pass || res.Retries != 1 {
		t.Errorf("pass %v, retries %d, reason %q; want a pass after one retry", res.Pass, res.Retries, res.Reason())
	}
}

func TestRunBodySize(t *testing.T) {
	var gotLen int64
	// A server that refuses by Content-Length without reading the body, as the real one does.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotLen = r.ContentLength
		reply(w, 200, map[string]any{"status": "error", "error": "request body is larger than 1048576 bytes", "code": "400"})
	}))
	t.Cleanup(srv.Close)
	suites := parseSuites(t, `
- name: too large
  request:
    method: POST
    path: /common/list/paging/1
    query: {columns: id}
    body: null
    body_size: 1100000
  expect: {status: error, code: "400"}
- name: padded object
  request: {method: POST, path: /company/insert, body: {name: "x"}, body_size: 1100000}
  expect: {status: error, code: "400"}
`)
	rep := runSuites(t, srv, nil, suites)
	for _, res := range rep.Results {
		if !res.Pass {
			t.Errorf("%s: %s", res.Name(), res.Reason())
		}
	}
	if gotLen != 1100000 {
		t.Errorf("Content-Length %d, want 1100000", gotLen)
	}
	for _, c := range suites[0].Cases {
		rc, err := resolve(&c, "http://x", "t", map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rc.body) != 1100000 || !json.Valid(rc.body) || rc.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d bytes, valid JSON %v, Content-Type %q", c.Name, len(rc.body), json.Valid(rc.body), rc.header.Get("Content-Type"))
		}
	}
}

func TestMatchJSON(t *testing.T) {
	dec := func(s string) any {
		v, err := decodeJSON([]byte(s), true)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		want, got string
		ok        bool
	}{
		{`{"a":1}`, `{"a":1,"b":2}`, true},
		{`{"a":1,"b":2}`, `{"a":1}`, false},
		{`{"a":125.00}`, `{"a":125}`, true},
		{`{"a":0.1}`, `{"a":0.10000000000000001}`, false},
		{`{"id":9223372036854775807}`, `{"id":9223372036854775806}`, false},
		{`[1,2]`, `[1,2]`, true},
		{`[1,2]`, `[1,2,3]`, false},
		{`[{"a":1}]`, `[{"a":1,"b":2}]`, true},
		{`{"a":null}`, `{"a":null}`, true},
		{`{"a":null}`, `{"a":0}`, false},
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"a":[]}`, `{"a":[]}`, true},
		{`{"a":true}`, `{"a":true}`, true},
	}
	for _, tt := range tests {
		err := matchJSON(dec(tt.want), dec(tt.got), "value")
		if (err == nil) != tt.ok {
			t.Errorf("matchJSON(%s, %s) = %v, want ok %v", tt.want, tt.got, err, tt.ok)
		}
	}
	if err := containsJSON(dec(`{"a":2}`), dec(`[{"a":1},{"a":2,"b":3}]`), "v"); err != nil {
		t.Error(err)
	}
	if err := containsJSON(dec(`{"a":4}`), dec(`[{"a":1},{"a":2}]`), "v"); err == nil {
		t.Error("containsJSON found an element that is not there")
	}
}

func TestValuePaths(t *testing.T) {
	v, err := decodeJSON([]byte(`{"company":{"user_id":5},"contacts":[{"Emails":[{"email":"a"},{"email":"b"}]}]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		".":                           `{"company":{"user_id":5},"contacts":[{"Emails":[{"email":"a"},{"email":"b"}]}]}`,
		"company.user_id":             "5",
		".company.user_id":            "5",
		"contacts[0].Emails[1].email": "b",
		"contacts[0].Emails[0]":       `{"email":"a"}`,
	}
	for p, want := range tests {
		x, err := atPath(v, p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got, err := varText(x); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
	for _, p := range []string{"company..id", "contacts[x]", "contacts[0", "company.", "[-1]"} {
		if _, err := parseValuePath(p); err == nil {
			t.Errorf("parseValuePath(%q) accepted a malformed path", p)
		}
	}
	if _, err := atPath(v, "company.name"); err == nil || !strings.Contains(err.Error(), `no member "name"`) {
		t.Errorf("missing member: %v", err)
	}
}

func TestParseSuiteRejects(t *testing.T) {
	tests := map[string]string{
		"unknown key":           `[{name: a, request: {method: GET, path: /healthz}, expect: {stauts: success}}]`,
		"error without code":    `[{name: a, request: {method: GET, path: /healthz}, expect: {status: error}}]`,
		"unchecked no reason":   `[{name: a, request: {method: GET, path: /x}, unchecked: true}]`,
		"bad placeholder":       `[{name: a, request: {method: GET, path: "/company/get", query: {id: "{{id"}}}]`,
		"bad filter":            `[{name: a, request: {method: GET, path: "/directory/{{code|float}}"}}]`,
		"query in path":         `[{name: a, request: {method: GET, path: "/company/get?id=1"}}]`,
		"bad method":            `[{name: a, request: {method: FETCH, path: /healthz}}]`,
		"bad auth":              `[{name: a, request: {method: GET, path: /healthz, auth: basic}}]`,
		"bad status":            `[{name: a, request: {method: GET, path: /healthz}, expect: {status: ok}}]`,
		"body and raw body":     `[{name: a, request: {method: POST, path: /x, body: {}, raw_body: "{}"}}]`,
		"bad save path":         `[{name: a, request: {method: GET, path: /healthz}, save: {x: "a..b"}}]`,
		"duplicate names":       `[{name: a, request: {method: GET, path: /healthz}}, {name: a, request: {method: GET, path: /readyz}}]`,
		"no name":               `[{request: {method: GET, path: /healthz}}]`,
		"contains not a list":   `[{name: a, request: {method: GET, path: /healthz}, expect: {value_json_contains: {.: {a: 1}}}}]`,
		"not a list of cases":   `{name: a}`,
		"slash in a case name":  `[{name: a/b, request: {method: GET, path: /healthz}}]`,
		"binary in a JSON body": `[{name: a, request: {method: POST, path: /x, body: !!binary aGVsbG8=}}]`,
		"unknown feature":       `[{name: a, request: {method: GET, path: /healthz}, feature: teleport}]`,
		"after a later case":    `[{name: a, request: {method: GET, path: /healthz}, after: [b]}, {name: b, request: {method: GET, path: /readyz}}]`,
		"after itself":          `[{name: a, request: {method: GET, path: /healthz}, after: [a]}]`,
	}
	for name, text := range tests {
		if _, err := ParseSuite("bad.yaml", []byte(text)); err == nil {
			t.Errorf("%s: ParseSuite accepted %s", name, text)
		}
	}
	s, err := ParseSuite("good.json", []byte(`[{"name": "a", "request": {"method": "get", "path": "/healthz", "auth": "none"},
		"expect": {"code": null, "value_json": {"status": "ok"}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	if s.Name != "good" || c.Request.Method != "GET" || c.Expect.HTTPStatus != 200 || c.Expect.Status != StatusSuccess ||
		!c.Expect.CodeSet || c.Expect.Code != nil {
		t.Errorf("JSON case file: %+v", s)
	}
}

func TestRequestBodies(t *testing.T) {
	s := parseSuites(t, `
- name: exact numbers and null
  request:
    method: POST
    path: /deal/insert
    body: {sum: 2500.00, qnt: 0.1, big: 9223372036854775807, hex: 0x10, none: null, date: 2026-11-01, yes: true}
- name: null body
  request: {method: POST, path: /common/list/paging/1, body: null}
- name: raw
  request: {method: POST, path: /company/insert, raw_body: '{"name": "{{run_id}}",'}
- name: no body
  request: {method: POST, path: /deal/goods/insert}
`)[0]
	vars := map[string]string{"run_id": "r1"}
	want := []string{
		`{"big":9223372036854775807,"date":"2026-11-01","hex":16,"none":null,"qnt":0.1,"sum":2500.00,"yes":true}`,
		`null`,
		`{"name": "r1",`,
		``,
	}
	for i, c := range s.Cases {
		rc, err := resolve(&c, "http://x/api/", "t", vars)
		if err != nil {
			t.Fatal(err)
		}
		if string(rc.body) != want[i] {
			t.Errorf("%s: body %s, want %s", c.Name, rc.body, want[i])
		}
		if (want[i] != "") != (rc.header.Get("Content-Type") == "application/json") {
			t.Errorf("%s: Content-Type %q", c.Name, rc.header.Get("Content-Type"))
		}
	}
	rc, _ := resolve(&s.Cases[0], "http://x/api/", "t", vars)
	if rc.url != "http://x/api/deal/insert" || rc.target != "/deal/insert" {
		t.Errorf("url %q, target %q", rc.url, rc.target)
	}
}

func TestRunWalkPages(t *testing.T) {
	pages := map[string][]int{"1": {5, 4}, "2": {3, 2}, "3": {1}}
	for _, tc := range []struct {
		name  string
		pages map[string][]int
		rows  int
		want  string
	}{
		{"every record once", pages, 5, ""},
		{"a record twice", map[string][]int{"1": {5, 4}, "2": {4, 2}, "3": {1}}, 5, "seen on an earlier page"},
		{"a record missing", pages, 6, "the pages hold 5 records, rows says 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := startFake(t, map[string]http.HandlerFunc{
				"POST /common/list/paging/1": func(w http.ResponseWriter, r *http.Request) {
					page := r.URL.Query().Get("page")
					if page == "" {
						page = "1"
					}
					var rows []string
					for _, id := range tc.pages[page] {
						rows = append(rows, fmt.Sprintf(`{"id":%d}`, id))
					}
					n := map[string]int{"1": 1, "2": 2, "3": 3}[page]
					reply(w, 200, map[string]any{"rows": tc.rows, "pages": 3, "page": n, "value": "[" + strings.Join(rows, ",") + "]"})
				},
			})
			suites := parseSuites(t, `
- name: walk
  request: {method: POST, path: /common/list/paging/1, query: {columns: id, records_onpage: "2"}}
  expect: {walk_pages: true}
`)
			rep := (&Runner{BaseURL: srv.URL, Token: "crm_test", Contract: testContract(t), Client: srv.Client()}).Run(context.Background(), suites)
			res := rep.Results[0]
			if tc.want == "" && !res.Pass {
				t.Fatalf("failed: %s", res.Reason())
			}
			if tc.want != "" && (res.Pass || !strings.Contains(res.Reason(), tc.want)) {
				t.Fatalf("pass %t, reason %q; want a failure mentioning %q", res.Pass, res.Reason(), tc.want)
			}
		})
	}
}

func TestContractWrites(t *testing.T) {
	c := testContract(t)
	for _, tt := range []struct {
		method, target string
		writes         bool
	}{
		{"POST", "/company/insert", true},
		{"POST", "/webhook/test", true},
		{"POST", "/company/delete", true},
		{"POST", "/common/list/paging/1?columns=id", false}, // a POST that reads
		{"GET", "/company/get?id=1", false},
		{"GET", "/no/such/path", false},
		{"POST", "/no/such/path", true}, // outside the contract: counted as a write, to be safe
		{"OPTIONS", "/company/insert", false},
	} {
		if got := c.Writes(tt.method, tt.target); got != tt.writes {
			t.Errorf("Writes(%s %s) = %v, want %v", tt.method, tt.target, got, tt.writes)
		}
	}
}

// TestRunSkips: a case is skipped, with its reason and without a request, for
// a feature switched off, a write in a read-only run, a variable not found, a
// variable its skipped saver would have set, and an earlier case of after that
// was skipped; skipped cases neither pass nor fail.
func TestRunSkips(t *testing.T) {
	fake, srv := startFake(t, companyRoutes())
	suites := parseSuites(t, companySuite, `
- name: gated
  feature: webhooks
  request: {method: GET, path: /directory/9}
- name: member
  request: {method: GET, path: /directory/9, headers: {Authorization: "Bearer {{member_token}}"}}
- name: after a case that ran
  after: [gated]
  request: {method: GET, path: /directory/9}
`)
	r := &Runner{BaseURL: srv.URL, Token: "crm_test", Vars: map[string]string{"user_id": "5"}, Contract: testContract(t),
		Client: srv.Client(), ReadOnly: true, Off: map[string]string{"webhooks": "no key"},
		Unavailable: map[string]string{"member_token": "set -member-token TOKEN"}}
	rep := r.Run(context.Background(), suites)
	want := map[string]string{
		"suite1/types":                 "",
		"suite1/insert":                "read-only run: POST /company/insert writes",
		"suite1/get":                   "variable company_id is not set: case suite1/insert, which saves it, was skipped",
		"suite1/duplicate":             "read-only run: POST /company/insert writes",
		"suite2/gated":                 "feature webhooks is switched off on this server: no key",
		"suite2/member":                "variable member_token is not available: set -member-token TOKEN",
		"suite2/after a case that ran": "it reads what case gated writes, which was skipped",
	}
	for name, reason := range want {
		res := resultByName(t, rep, name)
		if res.SkipReason != reason || res.Skipped != (reason != "") || res.Skipped && res.Pass {
			t.Errorf("%s: %s, skip reason %q; want %q", name, res.Status(), res.SkipReason, reason)
		}
	}
	if rep.Passed() != 1 || rep.Failed() != 0 || rep.Skipped() != 6 {
		t.Errorf("passed %d, failed %d, skipped %d; want 1, 0, 6", rep.Passed(), rep.Failed(), rep.Skipped())
	}
	for _, seen := range fake.seen {
		if strings.HasPrefix(seen, "POST") {
			t.Errorf("a read-only run sent %s", seen)
		}
	}

}

// TestRunWritesAndCleanup: the successes of writing operations are recorded
// with the ids they created, and Cleanup deletes what has a delete operation.
func TestRunWritesAndCleanup(t *testing.T) {
	routes := companyRoutes()
	var deleted []string
	routes["POST /company/delete"] = requireAuth(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		deleted = append(deleted, string(body))
		reply(w, 200, map[string]any{"value": "1"})
	})
	_, srv := startFake(t, routes)
	r := &Runner{BaseURL: srv.URL, Token: "crm_test", Vars: map[string]string{"user_id": "5", "run_id": "run1"},
		Contract: testContract(t), Client: srv.Client()}
	rep := r.Run(context.Background(), parseSuites(t, companySuite))
	if len(rep.Writes) != 1 || rep.Writes[0] != (Write{Operation: "POST /company/insert", Case: "suite1/insert", ID: "1001"}) {
		t.Fatalf("writes %+v; want the insert of 1001 alone (the 409 wrote nothing)", rep.Writes)
	}
	if problems := r.Cleanup(context.Background(), &rep); len(problems) > 0 {
		t.Fatal(problems)
	}
	if !slices.Equal(deleted, []string{`{"id":1001}`}) || rep.Writes[0].Removed == "" || len(rep.Kept()) != 0 {
		t.Errorf("deleted %v, writes %+v", deleted, rep.Writes)
	}
}

func TestSelectKeepsAfter(t *testing.T) {
	suites := parseSuites(t, `
- name: insert
  request: {method: POST, path: /company/insert, body: {name: x}}
- name: other
  request: {method: GET, path: /healthz}
- name: list after it
  after: [insert]
  request: {method: GET, path: /directory/9}
`)
	got := Select(suites, regexp.MustCompile(`list after`))
	var names []string
	for _, c := range got[0].Cases {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"insert", "list after it"}) {
		t.Errorf("Select kept %v", names)
	}
}
