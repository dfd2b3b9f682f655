package impl

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/crmservice/crm/gen"
)

// The fuzz targets of request decoding and validation; their seed corpora are
// in testdata/fuzz/<FuzzName>/. go test runs the corpora; make fuzz (or
// go test -fuzz=<FuzzName> ./impl/) looks for more. None needs a database.

// FuzzBodyText checks the scan of JSON bodies for text the database cannot
// hold and for nesting past maxBodyDepth: it never panics, its error texts
// are bounded, and a body it lets through that is JSON nests at most
// maxBodyDepth deep and decodes to strings without NUL from bytes that are UTF-8.
func FuzzBodyText(f *testing.F) {
	for _, seed := range []string{`{"name":"a"}`, `{"a":["x",{"b":"\u0000"}]}`, `{"x":"\udfff"}`, "{\"x\":\"\xff\"}",
		`{"x":"\ud83d\ude00"}`, `{"x":"\\u0000"}`, `["\ud800\u0041"]`, `{"\u0000":1}`, `"`, `{"a":"\u00`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64),
		strings.Repeat(`{"m":`, 20) + `"\u0000"` + strings.Repeat("}", 20)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := checkBodyText(body, 0, nil)
		if err != nil {
			if err.Code != CodeBadRequest || (!strings.Contains(err.Msg, textError) && err != errBodyTooDeep) {
				t.Fatalf("checkBodyText(%q) = %v", body, err)
			}
			if len(err.Msg) > 4*maxErrorText {
				t.Fatalf("checkBodyText(%q): an error text of %d bytes", body, len(err.Msg))
			}
			return
		}
		if depth := jsonDepth(body); depth > maxBodyDepth {
			t.Fatalf("checkBodyText let through a body nested %d deep", depth)
		}
		if !json.Valid(body) {
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("checkBodyText let through JSON that is not UTF-8: %q", body)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("valid JSON did not decode: %v", err)
		}
		for _, s := range stringsOf(reflect.ValueOf(v)) {
			if !validText(s) {
				t.Fatalf("checkBodyText let through %q in %q", s, body)
			}
		}
	})
}

// jsonDepth is the deepest nesting of arrays and objects in body, counting
// brackets outside strings as encoding/json's scanner does.
func jsonDepth(body []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// FuzzQuery checks the parse of query strings: a query string it accepts
// parses whole with Go's parser, into text the database can hold.
func FuzzQuery(f *testing.F) {
	for _, seed := range []string{"", "a=1", "columns=id&name=zz;zz", "name=%zz", "name=%00", "name=%ff%fe", "name=%C0%AF",
		"a=1&&b", "=x", "a+b=c+d", "name=%ED%BF%BF", "x=%e2%82%ac"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if err := checkQuery(raw); err != nil {
			if err.Code != CodeBadRequest {
				t.Fatalf("checkQuery(%q) = %v", raw, err)
			}
			return
		}
		values, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatalf("checkQuery accepted %q, which Go's parser refuses: %v", raw, err)
		}
		for k, vs := range values {
			if !validText(k) {
				t.Fatalf("checkQuery accepted the name %q", k)
			}
			for _, v := range vs {
				if !validText(v) {
					t.Fatalf("checkQuery accepted the value %q", v)
				}
			}
		}
	})
}

// decodeHarness runs a request through everything that stands before an
// operation's handler (the edge checks, validation against the contract, the
// generated decoding into the operation's request object), without
// authentication, and keeps the request object instead of running the handler.
type decodeHarness struct {
	h       http.Handler
	ops     []*operation
	mu      sync.Mutex
	decoded any
}

var harnessOnce = sync.OnceValues(func() (*decodeHarness, error) {
	doc, err := gen.GetSpec()
	if err != nil {
		return nil, err
	}
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	m, err := newValidatingMux(s, doc, Config{BodyLimit: 1 << 20, MailBodyLimit: 10 << 20})
	if err != nil {
		return nil, err
	}
	dh := &decodeHarness{}
	for _, op := range m.ops {
		op.secured = false
		dh.ops = append(dh.ops, op)
	}
	slices.SortFunc(dh.ops, func(a, b *operation) int { return strings.Compare(a.id, b.id) })
	keep := func(_ gen.StrictHandlerFunc, _ string) gen.StrictHandlerFunc {
		return func(_ context.Context, _ http.ResponseWriter, _ *http.Request, request any) (any, error) {
			dh.decoded = request
			return nil, nil
		}
	}
	strict := gen.NewStrictHandlerWithOptions(nil, []gen.StrictMiddlewareFunc{keep}, gen.StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			s.writeError(w, r, badRequest("request body: %s", describeDecodeError(err)))
		},
		ResponseErrorHandlerFunc: s.writeError,
	})
	dh.h = s.recoverAndLog(gen.HandlerWithOptions(strict, gen.StdHTTPServerOptions{
		BaseRouter: m,
		ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			s.writeError(w, r, badRequest("%s", firstLine(err.Error())))
		},
	}))
	return dh, nil
})

// target is the path of op with its path parameters filled in.
func (op *operation) target() string {
	p := op.route.Path
	p = strings.ReplaceAll(p, "{module}", "1")
	p = strings.ReplaceAll(p, "{code}", "9")
	return p
}

// serve runs one request and returns the reply and the decoded request
// object (nil when the request was refused).
func (dh *decodeHarness) serve(op *operation, query string, body []byte) (*httptest.ResponseRecorder, any) {
	dh.mu.Lock()
	defer dh.mu.Unlock()
	dh.decoded = nil
	r := httptest.NewRequest(op.route.Method, "/", bytes.NewReader(body))
	r.URL.Path, r.URL.RawQuery = op.target(), query
	r.RequestURI = r.URL.RequestURI()
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	dh.h.ServeHTTP(w, r)
	return w, dh.decoded
}

// FuzzRequestDecoding sends any query string and body to every operation: the
// reply before the handler is always the envelope, never "500"; and whatever
// reaches a handler holds only text the database can store.
func FuzzRequestDecoding(f *testing.F) {
	dh, err := harnessOnce()
	if err != nil {
		f.Fatal(err)
	}
	for i, op := range dh.ops {
		f.Add(uint16(i), "", []byte(nil))
		f.Add(uint16(i), "id=1&company_id=1&columns=id,name&page=9223372036854775807", []byte(`{"id":1,"name":"x\u0000"}`))
		if rb := op.route.Operation.RequestBody; rb != nil && rb.Value != nil {
			if mt := rb.Value.Content.Get("application/json"); mt != nil {
				for _, ex := range mt.Examples {
					if ex.Value != nil {
						if b, err := json.Marshal(ex.Value.Value); err == nil {
							f.Add(uint16(i), "", b)
						}
					}
				}
				if mt.Example != nil {
					if b, err := json.Marshal(mt.Example); err == nil {
						f.Add(uint16(i), "", b)
					}
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, opIndex uint16, query string, body []byte) {
		op := dh.ops[int(opIndex)%len(dh.ops)]
		w, decoded := dh.serve(op, query, body)
		if w.Code != http.StatusOK {
			t.Fatalf("%s %s?%s %q: HTTP %d %s", op.route.Method, op.target(), query, body, w.Code, w.Body.Bytes())
		}
		if decoded != nil {
			if w.Body.Len() != 0 {
				t.Fatalf("decoded and answered: %s", w.Body.Bytes())
			}
			for _, s := range stringsOf(reflect.ValueOf(decoded)) {
				if !validText(s) {
					t.Fatalf("%s %s?%s %q: the handler would get the text %q", op.route.Method, op.target(), query, body, s)
				}
			}
			return
		}
		var env struct {
			Status string  `json:"status"`
			Code   *string `json:"code"`
			Error  *string `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Status != "error" || env.Code == nil || env.Error == nil {
			t.Fatalf("%s %s?%s %q: not an error envelope: %s", op.route.Method, op.target(), query, body, w.Body.Bytes())
		}
		if *env.Code != CodeBadRequest && *env.Code != CodeNotFound {
			t.Fatalf("%s %s?%s %q: code %s: %s", op.route.Method, op.target(), query, body, *env.Code, w.Body.Bytes())
		}
		if len(*env.Error) > maxErrorText {
			t.Fatalf("%s %s?%s %q: an error text of %d bytes", op.route.Method, op.target(), query, body, len(*env.Error))
		}
	})
}

// stringsOf returns every string inside v: fields, elements, map keys and
// values, through pointers and interfaces.
func stringsOf(v reflect.Value) []string {
	var out []string
	var walk func(v reflect.Value, depth int)
	walk = func(v reflect.Value, depth int) {
		if depth > 64 || !v.IsValid() {
			return
		}
		switch v.Kind() {
		case reflect.String:
			out = append(out, v.String())
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), depth+1)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i), depth+1)
				}
			}
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
				return // raw bytes (json.RawMessage): checked as the body
			}
			for i := range v.Len() {
				walk(v.Index(i), depth+1)
			}
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				walk(iter.Key(), depth+1)
				walk(iter.Value(), depth+1)
			}
		}
	}
	walk(v, 0)
	return out
}
