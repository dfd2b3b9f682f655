package impl_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crmservice/crm/impl"
)

// TestClientGone: a client that closes its connection while its operation
// waits for the database cancels the operation; the server logs it at INFO as
// what it is, not as an internal error, with code 499 in the access log, and
// counts it in crm_http_client_gone_total, not as a 500.
func TestClientGone(t *testing.T) {
	metrics := impl.NewMetrics()
	e := newEnv(t, func(cfg *impl.Config) { cfg.Metrics, cfg.ServeMetrics = metrics, true })
	w := e.newWorld(t, "acme")
	id, _ := newCompany(t, e, w, "Waiting Ltd", w.member)

	for _, keyed := range []bool{false, true} {
		name := "plain"
		if keyed {
			name = "with Idempotency-Key"
		}
		t.Run(name, func(t *testing.T) {
			before := e.logText()
			tx, err := e.db.Beginx()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := tx.Exec(`SELECT FROM companies WHERE account_id = $1 AND id = $2 FOR UPDATE`, w.accountID, id); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/company/update", strings.NewReader(`{"id": `+itoa(id)+`, "note": "never"}`))
			r.Header.Set("Authorization", "Bearer "+w.admin.token)
			r.Header.Set("Content-Type", "application/json")
			if keyed {
				r.Header.Set("Idempotency-Key", "gone")
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				e.handler.ServeHTTP(httptest.NewRecorder(), r)
			}()
			waitFor(t, func() bool {
				return e.sessionsWaiting(t, "%crm_company_update%") > 0
			})
			cancel() // as net/http does when the client's connection closes
			<-done
			// The cancellation reaches the database: the call stops waiting.
			// (Released before it did, the lock would let the call, a
			// transaction by itself, finish and commit, as any write whose
			// reply is lost.)
			waitFor(t, func() bool { return e.sessionsWaiting(t, "%crm_company_update%") == 0 })
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			logs := strings.TrimPrefix(e.logText(), before)
			if strings.Contains(logs, "level=ERROR") || strings.Contains(logs, "internal error") || strings.Contains(logs, "level=WARN") {
				t.Errorf("logged as a failure of the server:\n%s", logs)
			}
			if n := strings.Count(logs, `level=INFO msg="client went away"`); n != 1 {
				t.Errorf("%d lines \"client went away\", want 1:\n%s", n, logs)
			}
			if !strings.Contains(logs, `msg=request method=POST path=/company/update status=499`) || !strings.Contains(logs, "code=499") {
				t.Errorf("the access log line does not say 499:\n%s", logs)
			}
			if n := e.count(t, `SELECT count(*) FROM companies WHERE id = $1 AND note = 'never'`, id); n != 0 {
				t.Errorf("the cancelled update was written:\n%s", logs)
			}
			if n := e.count(t, `SELECT count(*) FROM idempotency_keys WHERE account_id = $1 AND key = 'gone'`, w.accountID); n != 0 {
				t.Error("the cancelled request stored a reply")
			}
		})
	}
	m := scrape(t, e.handler)
	if got := m["crm_http_client_gone_total"].value(map[string]string{"operation": "companyUpdate"}); got != 2 {
		t.Errorf("crm_http_client_gone_total{operation=companyUpdate} = %v, want 2", got)
	}
	requests := m["crm_http_requests_total"]
	if got := requests.value(map[string]string{"operation": "companyUpdate", "code": "499", "status": "499"}); got != 2 {
		t.Errorf("requests counted with 499: %v, want 2", got)
	}
	if got := requests.value(map[string]string{"operation": "companyUpdate", "code": "500"}); got != -1 {
		t.Errorf("requests counted as 500: %v", got)
	}
}
