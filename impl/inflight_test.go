package impl_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
)

// TestMaxInFlight holds the one slot of a server with MaxInFlight 1 by an
// update blocked on a row lock: a card waits its deadline in line and gets the
// busy 503 with Retry-After; the probe does not wait; once the slot is free
// the blocked update is written and every kind of request is served again.
func TestMaxInFlight(t *testing.T) {
	e := newEnv(t, func(cfg *impl.Config) {
		cfg.MaxInFlight = 1
		// The blocked write holds the slot for longer than a read waits for it.
		cfg.Deadlines = impl.Deadlines{Read: 500 * time.Millisecond, List: 500 * time.Millisecond, Write: 5 * time.Second, Mail: 5 * time.Second}
	})
	w := e.newWorld(t, "acme")
	id, _ := newCompany(t, e, w, "Queue Ltd", w.member)
	other, _ := newCompany(t, e, w, "Other Ltd", w.member)

	tx, err := e.db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`SELECT FROM companies WHERE account_id = $1 AND id = $2 FOR UPDATE`, w.accountID, id); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan reply, 1)
	go func() {
		blocked <- e.post(t, w.admin.token, "/company/update", map[string]any{"id": id, "note": "after the lock"})
	}()
	// The update holds the slot once its call runs (waiting for the row, on
	// the node that holds the account).
	waitFor(t, func() bool {
		return e.sessionsWaiting(t, "%crm_company_update%") > 0
	})

	r := e.get(t, w.admin.token, fmt.Sprintf("/company/get?id=%d", other))
	if r.HTTPStatus != http.StatusServiceUnavailable || r.Status != "error" || r.code() != "503" || r.Value != "" ||
		r.Header.Get("Retry-After") != "1" || r.errorText() != "service unavailable: too many requests in progress, retry later" {
		t.Fatalf("want the busy 503 with Retry-After, got HTTP %d %s (Retry-After %q)", r.HTTPStatus, r.Raw, r.Header.Get("Retry-After"))
	}
	if r := e.get(t, "", "/healthz"); r.HTTPStatus != http.StatusOK {
		t.Fatalf("/healthz waited in line: HTTP %d %s", r.HTTPStatus, r.Raw)
	}

	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	expectOK(t, <-blocked)
	if n := e.count(t, `SELECT count(*) FROM companies WHERE id = $1 AND note = 'after the lock'`, id); n != 1 {
		t.Fatalf("the blocked update was not written")
	}
	expectOK(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": other, "note": "in time"}))
	expectOK(t, e.get(t, w.admin.token, fmt.Sprintf("/company/get?id=%d", other)))
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the condition did not come true within 10 s")
		}
	}
}
