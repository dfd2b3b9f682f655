package sdk_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
	"github.com/crmservice/crm/sdk/go/crm"
)

// TestGoErrors checks the failures that the flow does not meet: the 429 of the rate
// limit with its Retry-After, a header set per call, and a reply that is no envelope.
func TestGoErrors(t *testing.T) {
	ctx := context.Background()

	t.Run("429 with Retry-After, and a header of one call", func(t *testing.T) {
		pool := dbtest.New(t)
		d, err := demo.Load(ctx, pool, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		handler, err := impl.NewHandler(impl.Config{DB: pool, RateLimit: 0.01, RateBurst: 1})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(handler)
		defer srv.Close()
		c := newClient(t, srv.URL, d.Token)
		if _, err := c.DirectoryGet(ctx, 9); err != nil {
			t.Fatal(err)
		}
		_, err = c.DirectoryGet(ctx, 9, crm.WithHeader("X-Request-Id", "sdk-429"))
		e := asError(t, err, "429", "rate limit")
		if e.HTTPStatus != http.StatusTooManyRequests || e.RetryAfter < time.Second || e.RequestID != "sdk-429" {
			t.Fatalf("429: %+v", e)
		}
	})

	t.Run("an operation the server does not have: HTTP 404 with the envelope", func(t *testing.T) {
		pool := dbtest.New(t)
		d, err := demo.Load(ctx, pool, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		handler, err := impl.NewHandler(impl.Config{DB: pool})
		if err != nil {
			t.Fatal(err)
		}
		// A server that predates GET /user/me: its path is outside that server's contract.
		older := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.URL.Path = "/older" + r.URL.Path
			handler.ServeHTTP(w, r)
		}))
		defer older.Close()
		_, err = newClient(t, older.URL, d.Token).UserMe(ctx)
		e := asError(t, err, "404", "no such operation: the path is not in the contract")
		if e.HTTPStatus != http.StatusNotFound || e.Status != "error" || e.RequestID == "" {
			t.Fatalf("404: %+v", e)
		}
	})

	t.Run("a reply that is no envelope", func(t *testing.T) {
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>bad gateway</html>")
		}))
		defer proxy.Close()
		_, err := newClient(t, proxy.URL, "t").CompanyGet(ctx, 1)
		e := asError(t, err, "502", "HTTP 502 without an envelope: <html>bad gateway</html>")
		if e.HTTPStatus != http.StatusBadGateway {
			t.Fatalf("502: %+v", e)
		}
	})

	t.Run("a transport failure is not a *crm.Error", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		_, err := newClient(t, url, "t").CompanyGet(ctx, 1)
		var e *crm.Error
		if err == nil || errors.As(err, &e) {
			t.Fatalf("transport failure: %v", err)
		}
	})
}
