package impl_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// TestWorkersDuringOutage runs the webhook worker, the mail worker and the
// purge of idempotency keys against a database that goes away for two
// seconds: each logs the failure once and its recovery once (not an ERROR
// per round), and backs off meanwhile.
func TestWorkersDuringOutage(t *testing.T) {
	dbtest.RequireOwnDatabase(t) // the workers serve every account of their database
	e := newEnv(t)
	proxy := newFreezer(t, e.serverURL)
	pool, err := db.Open(context.Background(), proxy.url(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	box := testSecretBox(t)
	const interval = 20 * time.Millisecond
	hooks, err := impl.NewWebhookWorker(impl.WebhookConfig{DB: pool, Log: log, Secrets: box, Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	mail, err := impl.NewMailWorker(impl.MailConfig{DB: pool, Log: log, Secrets: box, OutboxInterval: interval, PollInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { hooks.Run(ctx) })
	wg.Go(func() { mail.Run(ctx) })
	wg.Go(func() { impl.RunIdempotencyPurge(ctx, pool, log, interval) })
	text := func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
	time.Sleep(200 * time.Millisecond)
	proxy.stop(true)
	time.Sleep(2 * time.Second)
	proxy.stop(false)
	loops := []string{"webhook worker", "mail worker (deliver outbox)", "mail worker (poll mailboxes)", "idempotency key purge"}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		recovered := 0
		for _, l := range loops {
			if strings.Contains(text(), `msg="`+l+`: recovered"`) {
				recovered++
			}
		}
		if recovered == len(loops) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	out := text()
	for _, l := range loops {
		failed := strings.Count(out, `level=ERROR msg="`+l+`: a round failed`)
		recovered := strings.Count(out, `level=INFO msg="`+l+`: recovered"`)
		if failed != 1 || recovered != 1 {
			t.Errorf("%s: %d ERROR lines of the failure, %d of the recovery; want one each", l, failed, recovered)
		}
	}
	if n := strings.Count(out, "level=ERROR"); n != len(loops) {
		t.Errorf("%d ERROR lines over a 2-second outage of rounds every %v, want %d:\n%s", n, interval, len(loops), out)
	}
}
