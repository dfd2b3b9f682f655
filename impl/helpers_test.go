package impl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/conformance"
	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

var contractOnce = sync.OnceValues(func() (*conformance.Contract, error) {
	return conformance.LoadContract("../openapi.yaml")
})

// env is a server on a fresh database; every reply it gives a test is checked
// against openapi.yaml.
type env struct {
	db        *sqlx.DB // the test's own pool: its statements may cross accounts
	server    *sqlx.DB // the server's pool: on Citus, a statement on more than one shard fails
	serverURL string   // the URL of the server's pool
	handler   http.Handler
	contract  *conformance.Contract
	logs      *bytes.Buffer
	logMu     *sync.Mutex
	accounts  *accountIDs // made by world: dbState looks only at theirs, as other packages share the database on Citus
}

// accountIDs are the accounts a test made.
type accountIDs struct {
	mu  sync.Mutex
	ids []int64
}

type envOption func(*impl.Config)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	contract, err := contractOnce()
	if err != nil {
		t.Fatalf("contract: %v", err)
	}
	url := dbtest.NewURL(t)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	// The server's pools: on Citus, a statement of a request that would run on
	// more than one shard fails the test (the test's own pool may cross accounts).
	serverURL := url
	if citus, err := db.IsCitus(context.Background(), pool); err != nil {
		t.Fatal(err)
	} else if citus {
		if serverURL, err = db.SingleShardURL(url); err != nil {
			t.Fatal(err)
		}
	}
	serverPool, err := db.Open(context.Background(), serverURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serverPool.Close() })
	generic, err := db.OpenGeneric(context.Background(), serverURL) // as crm-server serve runs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { generic.Close() })
	e := &env{db: pool, server: serverPool, serverURL: serverURL, contract: contract, logs: &bytes.Buffer{}, logMu: &sync.Mutex{}, accounts: &accountIDs{}}
	// Tests change users and tokens behind the server's back and expect the
	// next request to see it: no token cache, unless a test asks for one.
	cfg := impl.Config{DB: serverPool, GenericDB: generic, Log: slog.New(slog.NewTextHandler(lockedWriter{e.logMu, e.logs}, nil)),
		TokenCacheTTL: -1}
	// CRM_FAST_PATH=on (or off) serves the list and the contact list through
	// their functions (or their single statements) whatever the database is:
	// make test runs their tests both ways on plain PostgreSQL.
	if v := os.Getenv("CRM_FAST_PATH"); v != "" {
		on := v == "on"
		cfg.FastPath = &on
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.handler, err = impl.NewHandler(cfg)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	return e
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (e *env) logText() string {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	return e.logs.String()
}

// reply is what a test sees of one exchange.
type reply struct {
	HTTPStatus int
	Header     http.Header
	Raw        []byte
	Status     string  `json:"status"`
	Error      *string `json:"error"`
	Code       *string `json:"code"`
	Rows       int     `json:"rows"`
	Pages      int     `json:"pages"`
	Page       int     `json:"page"`
	Value      string  `json:"value"`
}

func (r reply) code() string {
	if r.Code == nil {
		return "<null>"
	}
	return *r.Code
}

func (r reply) errorText() string {
	if r.Error == nil {
		return "<null>"
	}
	return *r.Error
}

// request is one call of the API.
type request struct {
	method, target string
	token          string // "" sends no Authorization header
	body           any    // marshalled to JSON unless it is []byte or string (sent as is)
	contentType    string // default application/json when there is a body
	noOperation    bool   // the path or method is not in the contract: only the envelope is checked
	authorization  string // an exact Authorization header instead of the token's
	header         map[string]string
}

// do sends the request and checks the reply against the contract.
func (e *env) do(t *testing.T, req request) reply {
	t.Helper()
	var body io.Reader
	switch b := req.body.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(b)
	case string:
		body = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("marshal body: %v", err)
		}
		body = bytes.NewReader(data)
	}
	r := httptest.NewRequest(req.method, req.target, body)
	if body != nil {
		ct := req.contentType
		if ct == "" {
			ct = "application/json"
		}
		r.Header.Set("Content-Type", ct)
	}
	switch {
	case req.authorization != "":
		r.Header.Set("Authorization", req.authorization)
	case req.token != "":
		r.Header.Set("Authorization", "Bearer "+req.token)
	}
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.handler.ServeHTTP(w, r)
	res := reply{HTTPStatus: w.Code, Header: w.Header(), Raw: w.Body.Bytes()}
	if err := json.Unmarshal(res.Raw, &res); err != nil {
		t.Fatalf("%s %s: reply is not JSON: %v\n%s", req.method, req.target, err, res.Raw)
	}
	if got := w.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("%s %s: Content-Type %q", req.method, req.target, got)
	}
	err := e.contract.Check(req.method, req.target, w.Code, w.Header(), res.Raw)
	switch {
	case req.noOperation && !errors.Is(err, conformance.ErrNoOperation):
		t.Errorf("%s %s: expected to match no operation of the contract, got %v", req.method, req.target, err)
	case req.noOperation:
		if env, ok := e.contract.Doc.Components.Schemas["Envelope"]; !ok || env.Value.VisitJSON(decode[any](t, string(res.Raw))) != nil {
			t.Errorf("%s %s: the reply is not an envelope: %s", req.method, req.target, res.Raw)
		}
	case err != nil:
		t.Errorf("%s %s: %v\nreply: %s", req.method, req.target, err, res.Raw)
	}
	return res
}

func (e *env) get(t *testing.T, token, target string) reply {
	t.Helper()
	return e.do(t, request{method: http.MethodGet, target: target, token: token})
}

func (e *env) post(t *testing.T, token, target string, body any) reply {
	t.Helper()
	return e.do(t, request{method: http.MethodPost, target: target, token: token, body: body})
}

// expectError asserts a failed reply: HTTP 200, status "error", the code, an
// error text containing want, and the value.
func expectError(t *testing.T, r reply, code, want, value string) {
	t.Helper()
	expectErrorStatus(t, r, http.StatusOK, code, want, value)
}

// expectErrorStatus asserts a failed reply as expectError does, with the HTTP
// status httpStatus.
func expectErrorStatus(t *testing.T, r reply, httpStatus int, code, want, value string) {
	t.Helper()
	if r.HTTPStatus != httpStatus || r.Status != "error" || r.code() != code || r.Value != value ||
		r.Rows != 0 || r.Pages != 0 || r.Page != 0 || !bytes.Contains([]byte(r.errorText()), []byte(want)) {
		t.Fatalf("want HTTP %d error %s %q value %q, got %d %s\n%s", httpStatus, code, want, value, r.HTTPStatus, r.Status, r.Raw)
	}
}

// expectOK asserts a successful single-record reply and returns its value.
func expectOK(t *testing.T, r reply) string {
	t.Helper()
	if r.HTTPStatus != http.StatusOK || r.Status != "success" || r.Code != nil || r.errorText() != "" ||
		r.Rows != 0 || r.Pages != 0 || r.Page != 0 {
		t.Fatalf("want success, got %d\n%s", r.HTTPStatus, r.Raw)
	}
	return r.Value
}

// decode unmarshals a reply's value.
func decode[T any](t *testing.T, value string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(value), &v); err != nil {
		t.Fatalf("decode value: %v\n%s", err, value)
	}
	return v
}

// world is an account with a user of every role, in two departments, each
// with a token, and values in every directory (dirs[code] in sort order;
// "Client" of 9 is controlled, "Invoice" of 44 an invoice). Directory 42
// (positions) starts empty.
type world struct {
	accountID                        int64
	sales, support                   int64 // departments
	admin, head, member, peer, other user  // peer: member of sales; other: member of support
	dirs                             map[int][]int64
}

type user struct {
	id    int64
	token string
}

func (e *env) newWorld(t *testing.T, name string) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{dirs: map[int][]int64{}}
	must := func(id int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	w.accountID = must(impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: name, BaseCurrency: "EUR", TimeZone: "Europe/Riga"}))
	e.accounts.mu.Lock()
	e.accounts.ids = append(e.accounts.ids, w.accountID)
	e.accounts.mu.Unlock()
	w.sales = must(impl.CreateDepartment(ctx, e.db, w.accountID, "Sales"))
	w.support = must(impl.CreateDepartment(ctx, e.db, w.accountID, "Support"))
	newUser := func(login, role string, dept int64) user {
		t.Helper()
		in := impl.UserInput{AccountID: w.accountID, Name: login + " of " + name, Login: login + "@" + name + ".example", Role: role}
		if dept != 0 {
			in.DepartmentID = &dept
		}
		id := must(impl.CreateUser(ctx, e.db, in))
		_, token, err := impl.CreateToken(ctx, e.db, id, "test", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return user{id: id, token: token}
	}
	w.admin = newUser("admin", impl.RoleAdmin, 0)
	w.head = newUser("head", impl.RoleHead, w.sales)
	w.member = newUser("member", impl.RoleMember, w.sales)
	w.peer = newUser("peer", impl.RoleMember, w.sales)
	w.other = newUser("other", impl.RoleMember, w.support)
	for code, names := range map[int][]string{
		impl.DirCompanyTypes:      {"Client", "Supplier"},
		impl.DirCompanyStatuses:   {"Active", "Lost"},
		impl.DirCompanyCategories: {"A", "B"},
		impl.DirTaskKinds:         {"Call", "Meeting"},
		impl.DirDealTypes:         {"New business", "Upsell"},
		impl.DirDealStages:        {"Lead", "Offer", "Won"},
		impl.DirContactStatuses:   {"Works", "Left"},
		impl.DirDocumentTypes:     {"Invoice", "Contract"},
		impl.DirDocumentStatuses:  {"Draft", "Issued"},
		impl.DirPaymentForms:      {"Bank transfer", "Cash"},
		impl.DirMoneyCategories:   {"Sales", "Rent"},
		impl.DirAgents:            {"Agent Smith"},
		impl.DirCompanyGroups:     {"Retail"},
	} {
		for i, n := range names {
			w.dirs[code] = append(w.dirs[code], must(impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{
				AccountID: w.accountID, Code: code, Name: n, Sort: i,
				Controlled: code == impl.DirCompanyTypes && n == "Client",
				Invoice:    code == impl.DirDocumentTypes && n == "Invoice",
			})))
		}
	}
	return w
}

// count runs a SELECT count(*) ... and returns the number.
func (e *env) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := e.db.Get(&n, query, args...); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

// role is one of the five users of a world, and whether they see a record
// whose responsible user is the world's member.
type role struct {
	name    string
	u       user
	visible bool
}

// roles are the five users of the world, each with whether they see a record
// the member is responsible for: the admin, the head of the member's
// department and the member do; a peer member of the same department and a
// member of another department do not.
func (w *world) roles() []role {
	return []role{
		{"admin", w.admin, true},
		{"head of the department", w.head, true},
		{"the responsible member", w.member, true},
		{"a peer member", w.peer, false},
		{"a member of another department", w.other, false},
	}
}

// expectation is a role of the world with what it should see.
type expectation[T any] struct {
	role
	want T
}

// byRole pairs the five roles of the world, in the order of roles, with what
// each should see.
func byRole[T any](w *world, admin, head, member, peer, other T) []expectation[T] {
	rs := w.roles()
	return []expectation[T]{{rs[0], admin}, {rs[1], head}, {rs[2], member}, {rs[3], peer}, {rs[4], other}}
}

// sessionsWaiting counts the other sessions that wait for a lock while
// running a statement whose text matches like: on every node of a Citus
// cluster (citus_stat_activity; a request runs on its account's worker), else
// on the database.
func (e *env) sessionsWaiting(t *testing.T, like string) int {
	t.Helper()
	view := "pg_stat_activity"
	var citus bool
	if err := e.db.Get(&citus, `SELECT to_regclass('citus_stat_activity') IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if citus {
		view = "citus_stat_activity"
	}
	return e.count(t, `SELECT count(*) FROM `+view+`
		WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock' AND query LIKE $1
		  AND pid <> pg_backend_pid()`, like)
}
