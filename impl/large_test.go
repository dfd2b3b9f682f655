package impl_test

import (
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
