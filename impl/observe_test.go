package impl_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/crmservice/crm"
	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/apidocs"
	"github.com/crmservice/crm/impl/mailer/mailertest"

	"github.com/emersion/go-smtp"
)

// raw sends r to the server as it is and returns the whole reply, unchecked.
func (e *env) raw(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	e.handler.ServeHTTP(w, r)
	return w
}

// withToken is r with the bearer token.
func withToken(r *http.Request, token string) *http.Request {
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestRequestID(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")

	t.Run("OK: a well-formed id of the request is kept, in the reply and the log", func(t *testing.T) {
		for _, id := range []string{"a", "req-42_x.y:z", strings.Repeat("7", 128), "0af7651916cd43dd8448eb211c80319c"} {
			r := withToken(httptest.NewRequest(http.MethodGet, "/directory/9", nil), w.admin.token)
			r.Header.Set("X-Request-Id", id)
			if got := e.raw(r).Header().Get("X-Request-Id"); got != id {
				t.Errorf("sent %q, got %q", id, got)
			}
			if !strings.Contains(e.logText(), "msg=request method=GET path=/directory/9 status=200") ||
				!strings.Contains(e.logText(), "request_id="+id+"\n") {
				t.Errorf("no log line of request %q:\n%s", id, e.logText())
			}
		}
	})

	t.Run("a missing or malformed id is replaced by a new one", func(t *testing.T) {
		seen := map[string]bool{}
		for _, id := range []string{"", "two words", "line\nbreak", "quote\"", "ünï", strings.Repeat("7", 129), "a,b"} {
			r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			if id != "" {
				r.Header["X-Request-Id"] = []string{id}
			}
			got := e.raw(r).Header().Get("X-Request-Id")
			if !generatedID.MatchString(got) || seen[got] {
				t.Errorf("sent %q, got %q", id, got)
			}
			seen[got] = true
		}
	})

	t.Run("every kind of reply carries one", func(t *testing.T) {
		for _, r := range []*http.Request{
			httptest.NewRequest(http.MethodGet, "/no/such/path", nil),
			httptest.NewRequest(http.MethodDelete, "/company/get", nil),
			httptest.NewRequest(http.MethodGet, "/company/get?id=1", nil), // 401
			withToken(httptest.NewRequest(http.MethodGet, "/company/get?id=x", nil), w.admin.token),
			httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil),
			httptest.NewRequest(http.MethodGet, "/docs", nil),
		} {
			if got := e.raw(r).Header().Get("X-Request-Id"); !generatedID.MatchString(got) {
				t.Errorf("%s %s: X-Request-Id %q", r.Method, r.URL, got)
			}
		}
	})
}

func TestInternalErrorQuotesRequestID(t *testing.T) {
	var pools []*impl.Config
	e := newEnv(t, func(c *impl.Config) { pools = append(pools, c) })
	w := e.newWorld(t, "acme")
	// The server's pools closed: its next statement fails as a lost database would.
	pools[0].DB.Close()
	pools[0].GenericDB.Close()

	r := e.do(t, request{method: http.MethodGet, target: "/directory/9", token: w.admin.token})
	id := r.Header.Get("X-Request-Id")
	want := "internal error (request id " + id + ")"
	if !generatedID.MatchString(id) || r.HTTPStatus != http.StatusOK || r.Status != "error" || r.code() != "500" || r.errorText() != want || r.Value != "" {
		t.Fatalf("want the 500 envelope quoting %q, got %d %s", id, r.HTTPStatus, r.Raw)
	}
	if strings.Contains(string(r.Raw), "closed") {
		t.Errorf("the reply leaks the cause: %s", r.Raw)
	}
	var errLine, accessLine bool
	for _, line := range strings.Split(e.logText(), "\n") {
		if !strings.Contains(line, "request_id="+id) {
			continue
		}
		errLine = errLine || (strings.Contains(line, `msg="internal error"`) && strings.Contains(line, "database is closed"))
		accessLine = accessLine || strings.Contains(line, "msg=request ") && strings.Contains(line, "code=500")
	}
	if !errLine || !accessLine {
		t.Errorf("the log has not both lines of request %s (the cause and the access line):\n%s", id, e.logText())
	}
}

func TestCORS(t *testing.T) {
	e := newEnv(t, func(c *impl.Config) { c.CORSOrigins = []string{"https://app.example.com", "http://localhost:3000"} })
	w := e.newWorld(t, "acme")
	preflight := func(origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodOptions, "/company/insert", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		return e.raw(r)
	}

	t.Run("OK: a preflight of an allowed origin, without a token", func(t *testing.T) {
		rec := preflight("https://app.example.com")
		h := rec.Header()
		if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 ||
			h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
			h.Get("Access-Control-Allow-Methods") != "GET, POST" ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization, Content-Type") ||
			h.Get("Access-Control-Max-Age") != "600" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
			t.Errorf("%d %v %q", rec.Code, h, rec.Body)
		}
	})

	t.Run("a preflight of another origin allows nothing", func(t *testing.T) {
		for _, origin := range []string{"https://evil.example", "https://app.example.com:8443", "null"} {
			rec := preflight(origin)
			if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != "" ||
				rec.Header().Get("Access-Control-Allow-Methods") != "" {
				t.Errorf("%s: %d %v", origin, rec.Code, rec.Header())
			}
		}
	})

	t.Run("OK: the reply to an allowed origin is readable by its page", func(t *testing.T) {
		r := withToken(httptest.NewRequest(http.MethodGet, "/directory/9", nil), w.admin.token)
		r.Header.Set("Origin", "http://localhost:3000")
		h := e.raw(r).Header()
		if h.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
			h.Get("Access-Control-Expose-Headers") != "X-Request-Id, ETag, Retry-After, WWW-Authenticate, Idempotent-Replayed" {
			t.Errorf("%v", h)
		}
		r.Header.Set("Origin", "https://evil.example")
		if h := e.raw(r).Header(); h.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
			t.Errorf("another origin: %v", h)
		}
	})

	t.Run("OPTIONS that is not a preflight is still the 405 envelope", func(t *testing.T) {
		r := e.do(t, request{method: http.MethodOptions, target: "/company/insert", noOperation: true})
		expectErrorStatus(t, r, http.StatusMethodNotAllowed, "405", "method not allowed: the path takes only POST", "")
	})

	t.Run("no origin configured: preflights are answered, nothing is allowed", func(t *testing.T) {
		plain := e.process(t)
		r := httptest.NewRequest(http.MethodOptions, "/directory/9", nil)
		r.Header.Set("Origin", "https://app.example.com")
		r.Header.Set("Access-Control-Request-Method", "GET")
		rec := plain.raw(r)
		if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%d %v", rec.Code, rec.Header())
		}
	})

	t.Run("* allows every origin", func(t *testing.T) {
		any := e.process(t, func(c *impl.Config) { c.CORSOrigins = []string{"*"} })
		r := withToken(httptest.NewRequest(http.MethodGet, "/directory/9", nil), w.admin.token)
		r.Header.Set("Origin", "https://anything.example")
		if h := any.raw(r).Header(); h.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%v", h)
		}
	})
}

func TestParseCORSOrigins(t *testing.T) {
	got, err := impl.ParseCORSOrigins(" https://App.Example.com/, http://localhost:3000,https://a.example:443 http://[::1]:80 * ")
	want := []string{"https://app.example.com", "http://localhost:3000", "https://a.example", "http://[::1]", "*"}
	if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if got, err := impl.ParseCORSOrigins(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %q %v", got, err)
	}
	for _, bad := range []string{"app.example.com", "ftp://x.example", "https://x.example/app", "https://u:p@x.example", "https://x.example?q", "https://"} {
		if _, err := impl.ParseCORSOrigins(bad); err == nil || !strings.Contains(err.Error(), "is not an origin such as") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestCompression(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	for i := range 12 {
		insertCompany(t, e, w.admin.token, map[string]any{"name": fmt.Sprintf("Company %d with a long enough name", i), "type_id": w.dirs[9][0], "user_id": w.admin.id})
	}
	get := func(target string, gzip bool) *httptest.ResponseRecorder {
		r := withToken(httptest.NewRequest(http.MethodPost, target, nil), w.admin.token)
		if gzip {
			r.Header.Set("Accept-Encoding", "gzip, deflate")
		}
		return e.raw(r)
	}

	t.Run("OK: a large reply is compressed when the client accepts gzip", func(t *testing.T) {
		plain := get("/common/list/paging/1?columns=id,name,city,created", false)
		zipped := get("/common/list/paging/1?columns=id,name,city,created", true)
		if plain.Body.Len() < 1024 || plain.Header().Get("Content-Encoding") != "" {
			t.Fatalf("the plain reply: %d bytes, %v %s", plain.Body.Len(), plain.Header(), plain.Body)
		}
		if zipped.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(strings.Join(zipped.Header().Values("Vary"), ","), "Accept-Encoding") ||
			zipped.Body.Len() >= plain.Body.Len()/2 {
			t.Fatalf("the compressed reply: %d bytes, %v", zipped.Body.Len(), zipped.Header())
		}
		body := gunzip(t, zipped.Body.Bytes())
		if err := e.contract.Check(http.MethodPost, "/common/list/paging/1?columns=id,name,city,created", zipped.Code, zipped.Header(), body); err != nil {
			t.Error(err)
		}
		if string(body) != plain.Body.String() {
			t.Errorf("decompressed:\n%s\nplain:\n%s", body, plain.Body)
		}
	})

	t.Run("a small reply is not", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		if rec := e.raw(r); rec.Header().Get("Content-Encoding") != "" || !strings.Contains(rec.Body.String(), `"status":"success"`) {
			t.Errorf("%v %s", rec.Header(), rec.Body)
		}
	})

	t.Run("gzip;q=0 refuses it", func(t *testing.T) {
		r := withToken(httptest.NewRequest(http.MethodPost, "/common/list/paging/1", nil), w.admin.token)
		r.Header.Set("Accept-Encoding", "gzip;q=0, identity")
		if rec := e.raw(r); rec.Header().Get("Content-Encoding") != "" {
			t.Errorf("%v", rec.Header())
		}
	})
}

func TestETag(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	id := insertCompany(t, e, w.member.token, fullCompany(w, "info@contoso.example"))
	card := fmt.Sprintf("/company/get?id=%d", id)
	get := func(token, target, ifNoneMatch string) *httptest.ResponseRecorder {
		r := withToken(httptest.NewRequest(http.MethodGet, target, nil), token)
		if ifNoneMatch != "" {
			r.Header.Set("If-None-Match", ifNoneMatch)
		}
		rec := e.raw(r)
		if err := e.contract.Check(http.MethodGet, target, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Errorf("%s: %v", target, err)
		}
		return rec
	}
	etag := regexp.MustCompile(`^W/"[A-Za-z0-9_-]{11}"$`)

	t.Run("OK: the card has a tag, and a request naming it gets 304", func(t *testing.T) {
		first := get(w.member.token, card, "")
		tag := first.Header().Get("ETag")
		if first.Code != http.StatusOK || !etag.MatchString(tag) || first.Header().Get("Cache-Control") != "private, no-cache" {
			t.Fatalf("%d %v", first.Code, first.Header())
		}
		for _, inm := range []string{tag, strings.TrimPrefix(tag, "W/"), `"other", ` + tag, "*"} {
			again := get(w.member.token, card, inm)
			if again.Code != http.StatusNotModified || again.Body.Len() != 0 || again.Header().Get("ETag") != tag ||
				again.Header().Get("X-Request-Id") == "" || again.Header().Get("Content-Type") != "" {
				t.Errorf("If-None-Match %s: %d %v %q", inm, again.Code, again.Header(), again.Body)
			}
		}
		if other := get(w.member.token, card, `W/"not-it"`); other.Code != http.StatusOK || other.Body.String() != first.Body.String() {
			t.Errorf("another tag: %d", other.Code)
		}
	})

	t.Run("a change gives a new tag, and the old one a whole reply", func(t *testing.T) {
		old := get(w.member.token, card, "").Header().Get("ETag")
		expectOK(t, e.post(t, w.member.token, "/company/update", map[string]any{"id": id, "note": "changed"}))
		rec := get(w.member.token, card, old)
		if rec.Code != http.StatusOK || rec.Header().Get("ETag") == old || !strings.Contains(rec.Body.String(), `\"note\": \"changed\"`) {
			t.Errorf("%d %v %s", rec.Code, rec.Header(), rec.Body)
		}
	})

	t.Run("every role that sees the card gets its tag; one that does not gets no tag", func(t *testing.T) {
		tag := get(w.member.token, card, "").Header().Get("ETag")
		for _, ex := range byRole(w, tag, tag, tag, "", "") {
			rec := get(ex.u.token, card, "")
			if rec.Header().Get("ETag") != ex.want {
				t.Errorf("%s: ETag %q, want %q", ex.name, rec.Header().Get("ETag"), ex.want)
			}
			if !ex.visible {
				// The failure is answered in full, even to If-None-Match: *.
				if rec := get(ex.u.token, card, "*"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"code":"404"`) {
					t.Errorf("%s with *: %d %s", ex.name, rec.Code, rec.Body)
				}
			}
		}
	})

	t.Run("the marked operations have tags; others and failures do not", func(t *testing.T) {
		tagged := []string{"/directory/9", fmt.Sprintf("/task/list?company_id=%d", id), fmt.Sprintf("/document/list?company_id=%d", id),
			fmt.Sprintf("/finance/list?company_id=%d", id), fmt.Sprintf("/contact/list?company_id=%d", id)}
		for _, target := range tagged {
			if rec := get(w.admin.token, target, ""); rec.Code != http.StatusOK || !etag.MatchString(rec.Header().Get("ETag")) {
				t.Errorf("%s: %d ETag %q", target, rec.Code, rec.Header().Get("ETag"))
			}
		}
		for _, target := range []string{"/dashboard/my/day", "/healthz", "/directory/7", "/company/get?id=0"} {
			if rec := get(w.admin.token, target, ""); rec.Header().Get("ETag") != "" {
				t.Errorf("%s: ETag %q", target, rec.Header().Get("ETag"))
			}
		}
		r := withToken(httptest.NewRequest(http.MethodPost, "/common/list/paging/1", nil), w.admin.token)
		r.Header.Set("If-None-Match", "*")
		if rec := e.raw(r); rec.Code != http.StatusOK || rec.Header().Get("ETag") != "" {
			t.Errorf("POST: %d %v", rec.Code, rec.Header())
		}
	})

	t.Run("with compression the tag is the same and 304 stays empty", func(t *testing.T) {
		r := withToken(httptest.NewRequest(http.MethodGet, card, nil), w.member.token)
		tag := e.raw(r).Header().Get("ETag")
		r = withToken(httptest.NewRequest(http.MethodGet, card, nil), w.member.token)
		r.Header.Set("Accept-Encoding", "gzip")
		rec := e.raw(r)
		if rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("ETag") != tag {
			t.Errorf("%v", rec.Header())
		}
		r.Header.Set("If-None-Match", tag)
		if rec := e.raw(r); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("Content-Encoding") != "" {
			t.Errorf("%d %v %d bytes", rec.Code, rec.Header(), rec.Body.Len())
		}
	})
}

// scrape reads the metrics that GET /metrics of handler serves.
func scrape(t *testing.T, h http.Handler) map[string]*familyValues {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %d %v", rec.Code, rec.Header())
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, rec.Body)
	}
	out := map[string]*familyValues{}
	for name, f := range families {
		fv := &familyValues{}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			v := 0.0
			switch {
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Histogram != nil:
				v = float64(m.Histogram.GetSampleCount())
			case m.Untyped != nil:
				v = m.Untyped.GetValue()
			}
			fv.samples = append(fv.samples, sample{labels, v})
		}
		out[name] = fv
	}
	return out
}

type sample struct {
	labels map[string]string
	value  float64
}

type familyValues struct{ samples []sample }

// value is the sample whose labels include want (-1 when there is none).
func (f *familyValues) value(want map[string]string) float64 {
	if f == nil {
		return -1
	}
next:
	for _, s := range f.samples {
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value
	}
	return -1
}

func TestMetrics(t *testing.T) {
	metrics := impl.NewMetrics()
	e := newEnv(t, func(c *impl.Config) {
		c.Metrics, c.ServeMetrics = metrics, true
		c.RateLimit, c.RateBurst = 0.001, 3 // three requests per token, then 429
	})
	w := e.newWorld(t, "acme")
	for range 3 {
		e.get(t, w.admin.token, "/directory/9")
	}
	e.get(t, w.head.token, "/directory/9")
	expectError(t, e.get(t, w.member.token, "/directory/7"), "400", "", "")
	e.get(t, "", "/directory/9") // 401
	if r := e.get(t, w.admin.token, "/directory/10"); r.HTTPStatus != http.StatusTooManyRequests {
		t.Fatalf("the admin's fourth request: %d", r.HTTPStatus)
	}
	e.do(t, request{method: http.MethodGet, target: "/no/such/path", noOperation: true})
	e.raw(httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil))

	m := scrape(t, e.handler)
	requests := m["crm_http_requests_total"]
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"operation": "directoryGet", "code": "none", "status": "200"}, 4},
		{map[string]string{"operation": "directoryGet", "code": "400", "status": "200"}, 1},
		{map[string]string{"operation": "directoryGet", "code": "401", "status": "401"}, 1},
		{map[string]string{"operation": "directoryGet", "code": "429", "status": "429"}, 1},
		{map[string]string{"operation": "unknown", "code": "404", "status": "404"}, 1},
		{map[string]string{"operation": "docs", "code": "none", "status": "200"}, 1},
	} {
		if got := requests.value(c.labels); got != c.want {
			t.Errorf("crm_http_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := m["crm_http_request_duration_seconds"].value(map[string]string{"operation": "directoryGet"}); got != 7 {
		t.Errorf("directoryGet latencies observed: %v, want 7", got)
	}
	if got := m["crm_http_request_duration_seconds"].value(map[string]string{"operation": "companyInsert"}); got != 0 {
		t.Errorf("companyInsert latencies observed: %v, want 0 (every operation is listed from the start)", got)
	}
	if got := m["crm_http_requests_in_flight"].value(nil); got != 1 {
		t.Errorf("in flight during the scrape: %v, want 1 (the scrape)", got)
	}
	if got := m["crm_rate_limit_rejections_total"].value(map[string]string{"limit": "token"}); got != 1 {
		t.Errorf("token rejections: %v", got)
	}
	if got := m["crm_rate_limit_rejections_total"].value(map[string]string{"limit": "auth_failure"}); got != 0 {
		t.Errorf("auth failure rejections: %v", got)
	}
	for _, name := range []string{"go_sql_open_connections", "go_sql_wait_count_total", "go_sql_wait_duration_seconds_total", "go_sql_in_use_connections"} {
		if m[name].value(map[string]string{"db_name": "main"}) < 0 || m[name].value(map[string]string{"db_name": "generic"}) < 0 {
			t.Errorf("%s of the pools main and generic missing", name)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "crm_mail_deliveries_total", "crm_mail_polls_total", "crm_mail_outbox_messages"} {
		if m[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
	if got := requests.value(map[string]string{"operation": "metrics"}); got != -1 {
		t.Errorf("the scrape counted itself before it ended: %v", got)
	}
	if scrape(t, e.handler); scrape(t, e.handler)["crm_http_requests_total"].value(map[string]string{"operation": "metrics"}) != 2 {
		t.Error("the scrapes are not counted")
	}

	t.Run("not served unless ServeMetrics", func(t *testing.T) {
		other := e.process(t, func(c *impl.Config) { c.Metrics = impl.NewMetrics() })
		expectErrorStatus(t, other.do(t, request{method: http.MethodGet, target: "/metrics", noOperation: true}), http.StatusNotFound, "404", "no such operation: the path is not in the contract", "")
	})
}

func TestMailMetrics(t *testing.T) {
	// A worker serves every account of its database, and these count all it did.
	dbtest.RequireOwnDatabase(t)
	t.Run("OK: deliveries by result and the outbox by state", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		o.sink.Set(func(s *mailertest.SMTPSink) {
			s.DataReply = func(n int) error {
				switch n {
				case 1:
					return nil
				case 2:
					return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "later"}
				}
				return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
			}
		})
		for i := range 3 {
			o.send(t, fmt.Sprint("m", i))
		}
		metrics := impl.NewMetrics()
		metrics.WatchOutbox(o.e.server, nil)
		w := newWorker(t, o.e, o.box, func(c *impl.MailConfig) { c.Metrics = metrics; c.Concurrency = 1 })
		deliverAll(t, w)
		m := scrape(t, metrics.Handler())
		for result, want := range map[string]float64{"sent": 1, "retry": 1, "failed": 1} {
			if got := m["crm_mail_deliveries_total"].value(map[string]string{"result": result}); got != want {
				t.Errorf("deliveries %s: %v, want %v", result, got, want)
			}
		}
		// The outbox's counts cover every account of the database.
		for state, want := range map[string]float64{"queued": 1, "sending": 0, "failed": 1} {
			if got := m["crm_mail_outbox_messages"].value(map[string]string{"state": state}); got != want {
				t.Errorf("outbox %s: %v, want %v", state, got, want)
			}
		}
	})

	t.Run("OK: polls by result and the messages they stored", func(t *testing.T) {
		i := newInboxWorld(t)
		i.imap.Deliver(t, plainMessage)
		i.imap.Deliver(t, noIDMessage)
		metrics := impl.NewMetrics()
		w := newWorker(t, i.e, i.box, func(c *impl.MailConfig) { c.Metrics = metrics })
		i.poll(t, w)
		if _, err := i.e.db.Exec(`UPDATE mail_accounts SET imap_port = $1 WHERE id = $2`, mailertest.ClosedPort(t), i.acc); err != nil {
			t.Fatal(err)
		}
		i.poll(t, w)
		m := scrape(t, metrics.Handler())
		if ok, failed, fetched := m["crm_mail_polls_total"].value(map[string]string{"result": "ok"}),
			m["crm_mail_polls_total"].value(map[string]string{"result": "failed"}), m["crm_mail_fetched_messages_total"].value(nil); ok != 1 || failed != 1 || fetched != 2 {
			t.Errorf("polls ok %v, failed %v, fetched %v", ok, failed, fetched)
		}
	})
}

func TestTracing(t *testing.T) {
	// The SDK's in-memory exporter, fed at the end of each span.
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	spans := exportedSpans{exporter}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	ctx := context.Background()
	pool, err := db.Open(ctx, e.serverURL, db.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	generic, err := db.OpenGeneric(ctx, e.serverURL, db.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { generic.Close() })
	traced := e.process(t, func(c *impl.Config) { c.DB, c.GenericDB, c.TracerProvider = pool, generic, tp })
	spans.Reset() // the pools' own pings

	t.Run("OK: a request continues the caller's trace, its statements are its children", func(t *testing.T) {
		const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		r := withToken(httptest.NewRequest(http.MethodGet, "/directory/9", nil), w.admin.token)
		r.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
		rec := traced.raw(r)
		if rec.Code != http.StatusOK {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		ended := spans.Ended()
		var server sdktrace.ReadOnlySpan
		for _, s := range ended {
			if s.SpanKind() == trace.SpanKindServer {
				server = s
			}
		}
		if server == nil {
			t.Fatalf("no server span among %d", len(ended))
		}
		attrs := map[string]string{}
		for _, a := range server.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
		}
		if server.Name() != "GET /directory/{code}" || server.SpanContext().TraceID().String() != traceID ||
			server.Parent().SpanID().String() != parentID || !server.Parent().IsRemote() ||
			attrs["http.route"] != "/directory/{code}" || attrs["http.response.status_code"] != "200" ||
			attrs["crm.operation"] != "directoryGet" || attrs["crm.request_id"] != rec.Header().Get("X-Request-Id") ||
			attrs["crm.account_id"] != fmt.Sprint(w.accountID) {
			t.Errorf("server span %q trace %s parent %s attributes %v", server.Name(), server.SpanContext().TraceID(), server.Parent().SpanID(), attrs)
		}
		// The token lookup and the directory's SELECT, each within the request's span.
		children := map[string]int{}
		for _, s := range ended {
			if s.SpanKind() == trace.SpanKindServer {
				continue
			}
			if s.SpanContext().TraceID().String() != traceID || s.Parent().SpanID() != server.SpanContext().SpanID() {
				t.Errorf("span %q is not a child of the request's span", s.Name())
			}
			for _, a := range s.Attributes() {
				if a.Key == "db.query.text" {
					children[s.Name()]++
				}
			}
		}
		if len(children) == 0 {
			t.Errorf("no statement spans: %d spans %v", len(ended), children)
		}
		line := ""
		for _, l := range strings.Split(e.logText(), "\n") {
			if strings.Contains(l, "request_id="+rec.Header().Get("X-Request-Id")) {
				line = l
			}
		}
		if !strings.Contains(line, "trace_id="+traceID) || !strings.Contains(line, "span_id="+server.SpanContext().SpanID().String()) {
			t.Errorf("the access line does not name the trace: %s", line)
		}
	})

	t.Run("OK: without traceparent a request starts a trace; a failure is an error span", func(t *testing.T) {
		spans.Reset()
		r := httptest.NewRequest(http.MethodGet, "/directory/9", nil) // no token: 401
		traced.raw(r)
		ended := spans.Ended()
		if len(ended) != 1 || ended[0].Parent().IsValid() || ended[0].Name() != "GET /directory/{code}" {
			t.Fatalf("%d spans", len(ended))
		}
		spans.Reset()
		traced.raw(httptest.NewRequest(http.MethodGet, "/no/such/path", nil))
		if ended := spans.Ended(); len(ended) != 1 || ended[0].Name() != "GET unknown" {
			t.Errorf("unknown path: %v", ended)
		}
	})

	t.Run("statements outside a traced request make no span", func(t *testing.T) {
		spans.Reset()
		if _, err := pool.Exec(`SELECT 1`); err != nil {
			t.Fatal(err)
		}
		if n := len(spans.Ended()); n != 0 {
			t.Errorf("%d spans", n)
		}
	})

	t.Run("without a tracer provider nothing is traced, traceparent or not", func(t *testing.T) {
		spans.Reset()
		r := withToken(httptest.NewRequest(http.MethodGet, "/directory/9", nil), w.admin.token)
		r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		rec := e.raw(r)
		if rec.Code != http.StatusOK || len(spans.Ended()) != 0 {
			t.Errorf("%d, %d spans", rec.Code, len(spans.Ended()))
		}
		for _, l := range strings.Split(e.logText(), "\n") {
			if strings.Contains(l, "request_id="+rec.Header().Get("X-Request-Id")) && strings.Contains(l, "trace_id=") {
				t.Errorf("a trace id in the log of an untraced request: %s", l)
			}
		}
	})
}

// exportedSpans reads what the in-memory exporter was given.
type exportedSpans struct{ exp *tracetest.InMemoryExporter }

func (e exportedSpans) Ended() []sdktrace.ReadOnlySpan { return e.exp.GetSpans().Snapshots() }
func (e exportedSpans) Reset()                         { e.exp.Reset() }

// gunzip decompresses a gzip body.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return out
}

func TestDocsServed(t *testing.T) {
	e := newEnv(t)

	t.Run("OK: the contract as written and as JSON, without a token", func(t *testing.T) {
		yamlReply := e.raw(httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil))
		if yamlReply.Code != http.StatusOK || !bytes.Equal(yamlReply.Body.Bytes(), crm.OpenAPI()) ||
			yamlReply.Header().Get("Content-Type") != "application/yaml; charset=utf-8" {
			t.Errorf("/openapi.yaml: %d %v, %d bytes", yamlReply.Code, yamlReply.Header(), yamlReply.Body.Len())
		}
		jsonReply := e.raw(httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
		var doc struct {
			OpenAPI string                    `json:"openapi"`
			Paths   map[string]map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(jsonReply.Body.Bytes(), &doc); err != nil || jsonReply.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("/openapi.json: %v %v", err, jsonReply.Header())
		}
		if doc.OpenAPI != "3.0.3" || len(doc.Paths) != len(e.contract.Doc.Paths.Map()) || doc.Paths["/company/get"]["get"] == nil {
			t.Errorf("/openapi.json: %s with %d paths", doc.OpenAPI, len(doc.Paths))
		}
		// In the document's order (apidocs.TestJSONKeepsTheDocumentsOrder).
		if ordered, err := apidocs.JSON(crm.OpenAPI()); err != nil || !bytes.Equal(jsonReply.Body.Bytes(), ordered) {
			t.Errorf("/openapi.json is not the document in its order (%v)", err)
		}
	})

	t.Run("OK: the reference page", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "/docs", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		rec := e.raw(r)
		page := rec.Body.String()
		if rec.Header().Get("Content-Encoding") == "gzip" {
			page = string(gunzip(t, rec.Body.Bytes()))
		}
		if rec.Code != http.StatusOK || !strings.Contains(page, "Customer Relationship Service API reference") ||
			!strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%d %v %s", rec.Code, rec.Header(), page)
		}
	})

	t.Run("other methods are not operations", func(t *testing.T) {
		expectErrorStatus(t, e.do(t, request{method: http.MethodPost, target: "/docs", noOperation: true}), http.StatusNotFound, "404", "no such operation", "")
		expectErrorStatus(t, e.do(t, request{method: http.MethodDelete, target: "/openapi.yaml", noOperation: true}), http.StatusNotFound, "404", "no such operation", "")
	})
}
