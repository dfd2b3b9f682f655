package impl_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crmservice/crm/impl"
)

func TestLargeRequests(t *testing.T) {
	e := newEnv(t, func(cfg *impl.Config) { cfg.LargeRequests = 1 })
	w := e.newWorld(t, "acme")
	large := `{"mail": {"account_id": "1", "to_address": "a@b.example", "subject": "", "body": "` + strings.Repeat("QUFB", 400_000) + `"}}`

	// A large request in flight, its body still arriving: it holds the one slot.
	pr, pw := io.Pipe()
	first := httptest.NewRequest(http.MethodPost, "/mail/send", pr)
	first.ContentLength = int64(len(large))
	first.Header.Set("Authorization", "Bearer "+w.admin.token)
	first.Header.Set("Content-Type", "application/json")
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, first)
		done <- rec.Code
	}()
	if _, err := pw.Write([]byte(large[:1])); err != nil { // returns once the server reads the body
		t.Fatal(err)
	}

	t.Run("429 past the bound", func(t *testing.T) {
		r := e.post(t, w.admin.token, "/mail/send", large)
		if r.HTTPStatus != http.StatusTooManyRequests || r.code() != "429" || r.Header.Get("Retry-After") != "1" ||
			r.errorText() != "too many large requests in flight: at most 1 bodies over 1 MiB at once, retry later" {
			t.Fatalf("want 429 with Retry-After, got HTTP %d %s (Retry-After %q)", r.HTTPStatus, r.Raw, r.Header.Get("Retry-After"))
		}
	})

	t.Run("small requests pass", func(t *testing.T) {
		if r := e.get(t, w.admin.token, "/directory/9"); r.Status != "success" {
			t.Fatalf("a small request: %s", r.Raw)
		}
	})

	// The first ends (its client gives up): its slot is free again.
	pw.CloseWithError(io.ErrUnexpectedEOF)
	<-done
	t.Run("the slot is given back", func(t *testing.T) {
		r := e.post(t, w.admin.token, "/mail/send", large)
		if r.code() != "404" { // past the bound and validated: the mail account does not exist
			t.Fatalf("want the operation's own answer, got HTTP %d %.300s", r.HTTPStatus, r.Raw)
		}
	})
}

// TestLargeRequestSlots sends every kind of large request that is refused
// after it took its slot, then the limit's number of valid large requests at
// once: each refusal gave its slot back, so all of them are served, and the
// gauge of slots in use in /metrics is back at 0 at the end.
func TestLargeRequestSlots(t *testing.T) {
	const slots = 2
	metrics := impl.NewMetrics()
	e := newEnv(t, func(cfg *impl.Config) { cfg.LargeRequests = slots; cfg.Metrics = metrics; cfg.ServeMetrics = true })
	w := e.newWorld(t, "acme")
	box := testSecretBox(t)
	mailbox := mailAccount(t, e, box, w.member.id, "member@acme.example", smtpServerless(), imapServerless())
	html := strings.Repeat("<p>A large message, one paragraph of many.</p>\n", 24_000) // 1.1 MiB, 1.5 MiB as Base64
	mail := func(field, literal string) string {
		m := map[string]string{"account_id": `"` + itoa(mailbox) + `"`, "to_address": `"a@b.example"`,
			"subject": `"` + b64("Large") + `"`, "body": `"` + b64(html) + `"`}
		if field != "" {
			m[field] = literal
		}
		return `{"mail": {"account_id": ` + m["account_id"] + `, "to_address": ` + m["to_address"] +
			`, "subject": ` + m["subject"] + `, "body": ` + m["body"] + `}}`
	}
	valid := mail("", "")
	inUse := func(t *testing.T) float64 {
		t.Helper()
		return scrape(t, e.handler)["crm_large_requests_in_flight"].value(nil)
	}
	stored := func(t *testing.T) int {
		t.Helper()
		return e.count(t, `SELECT count(*) FROM mail_messages WHERE account_id = $1`, w.accountID)
	}

	// send posts a large body as a client would, with its length declared
	// (chunked: length -1) and, when cut is set, ending the body early.
	send := func(t *testing.T, target, body string, length int64, cut bool) reply {
		t.Helper()
		var rd io.Reader = strings.NewReader(body)
		if cut {
			rd = io.MultiReader(strings.NewReader(body[:len(body)/2]), errReader{io.ErrUnexpectedEOF})
		}
		r := httptest.NewRequest(http.MethodPost, target, rd)
		r.ContentLength = length
		r.Header.Set("Authorization", "Bearer "+w.member.token)
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, r)
		var res reply
		res.HTTPStatus, res.Raw = rec.Code, rec.Body.Bytes()
		if err := json.Unmarshal(res.Raw, &res); err != nil {
			t.Fatalf("%s: not an envelope: %.300s", target, res.Raw)
		}
		return res
	}
	nested := strings.Repeat("[", 600_000) + strings.Repeat("]", 600_000)
	for _, tc := range []struct {
		name, target, body string
		length             int64 // 0: the body's own
		cut                bool
		want               string
	}{
		{name: "a malformed %-escape in the query", target: "/mail/send?x=%zz", body: valid, want: `query parameter "x": malformed %-escape`},
		{name: "an unencoded ; in the query", target: "/mail/send?x=a;b", body: valid, want: `a parameter contains ";"`},
		{name: "NUL in a field of the body", target: "/mail/send", body: mail("to_address", `"a\u0000@b.example"`), want: `field "mail.to_address": must be valid UTF-8 text`},
		{name: "invalid UTF-8 in a field, sent chunked", target: "/mail/send", body: mail("subject", "\"\xff\""), length: -1, want: `field "mail.subject": must be valid UTF-8 text`},
		{name: "nested past the values a mail holds", target: "/mail/send", body: nested, want: "more values than this operation takes"},
		{name: "not JSON", target: "/mail/send", body: valid[:len(valid)-2], want: "request body: not valid JSON"},
		{name: "an unknown member", target: "/mail/send", body: mail("", "")[:len(valid)-1] + `, "colour": 1}`, want: `property "colour" is unsupported`},
		{name: "the body ends early", target: "/mail/send", body: valid, cut: true, want: "request body could not be read"},
		{name: "declared over the limit", target: "/mail/send", body: valid, length: 11 << 20, want: "request body is larger than 10485760 bytes"},
		{name: "chunked over the limit", target: "/mail/send", body: valid + strings.Repeat(" ", 10<<20), length: -1, want: "request body is larger than 10485760 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			length := tc.length
			if length == 0 {
				length = int64(len(tc.body))
			}
			r := send(t, tc.target, tc.body, length, tc.cut)
			if r.HTTPStatus != http.StatusOK || r.code() != "400" || !strings.Contains(r.errorText(), tc.want) {
				t.Fatalf("want 400 %q, got HTTP %d %.300s", tc.want, r.HTTPStatus, r.Raw)
			}
			if n := inUse(t); n != 0 {
				t.Fatalf("%v large-request slots in use after the refusal", n)
			}
		})
	}
	if n := stored(t); n != 0 {
		t.Fatalf("%d messages stored by refused requests", n)
	}

	t.Run("the limit's number of valid large requests at once", func(t *testing.T) {
		pipes := make([]*io.PipeWriter, slots)
		done := make(chan reply, slots)
		for i := range pipes {
			pr, pw := io.Pipe()
			pipes[i] = pw
			r := httptest.NewRequest(http.MethodPost, "/mail/send", pr)
			r.ContentLength = int64(len(valid))
			r.Header.Set("Authorization", "Bearer "+w.member.token)
			r.Header.Set("Content-Type", "application/json")
			go func() {
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, r)
				pr.Close() // a request refused before reading its body ends the writer's wait
				var res reply
				res.HTTPStatus, res.Raw = rec.Code, rec.Body.Bytes()
				_ = json.Unmarshal(res.Raw, &res)
				done <- res
			}()
			if _, err := pw.Write([]byte(valid[:1])); err != nil { // returns once the server reads the body
				r := <-done
				t.Fatalf("valid large request %d was not read: HTTP %d %.300s", i+1, r.HTTPStatus, r.Raw)
			}
		}
		if n := inUse(t); n != slots {
			t.Errorf("%v slots in use while %d large requests are in flight", n, slots)
		}
		if r := send(t, "/mail/send", valid, int64(len(valid)), false); r.HTTPStatus != http.StatusTooManyRequests {
			t.Errorf("one more than the limit: HTTP %d %.300s", r.HTTPStatus, r.Raw)
		}
		for _, pw := range pipes {
			go func() {
				_, _ = pw.Write([]byte(valid[1:]))
				_ = pw.Close()
			}()
		}
		for range slots {
			r := <-done
			if r.HTTPStatus != http.StatusOK || r.Status != "success" || r.code() != "0" {
				t.Errorf("a valid large request: HTTP %d %.300s", r.HTTPStatus, r.Raw)
			}
		}
		if n := stored(t); n != slots {
			t.Errorf("%d messages stored, want %d", n, slots)
		}
		if n := inUse(t); n != 0 {
			t.Errorf("%v slots in use after every large request ended", n)
		}
	})
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
