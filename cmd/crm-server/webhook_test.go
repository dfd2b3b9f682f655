package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/webhook"
)

// TestWebhookDeliveryAcrossCrashes runs crm-server serve as real processes
// over one database: the first is killed (SIGKILL) while a delivery is in
// flight; the next ones deliver that event again with the same webhook-id and
// everything after it, and two processes running at once never deliver one
// event twice at the same time. The receiver, de-duplicating by webhook-id,
// sees every event exactly once.
func TestWebhookDeliveryAcrossCrashes(t *testing.T) {
	dbtest.RequireOwnDatabase(t) // the processes' workers serve every account of the database
	bin := builtServer(t)
	url := dbtest.NewURL(t)
	ctx := context.Background()
	pool, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	keyBytes := make([]byte, 32)
	_, _ = rand.Read(keyBytes)
	key := base64.StdEncoding.EncodeToString(keyBytes)
	box, err := mailer.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}

	// The receiver: the first delivery hangs until the test lets it go (its
	// process is killed meanwhile); it counts deliveries of one id at once.
	var mu sync.Mutex
	got := map[string]int{}
	var order []string
	var overlap, invalid int
	inFlight := map[string]bool{}
	first := make(chan struct{})
	release := make(chan struct{})
	var secret string
	var firstOnce sync.Once
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		mu.Lock()
		if webhook.Verify(secret, r.Header, body, time.Now(), time.Minute) != nil {
			invalid++
		}
		if inFlight[id] {
			overlap++
		}
		inFlight[id] = true
		got[id]++
		order = append(order, id)
		mu.Unlock()
		hang := false
		firstOnce.Do(func() { hang = true; close(first) })
		if hang {
			<-release
		} else {
			time.Sleep(10 * time.Millisecond)
		}
		if !hang {
			mu.Lock()
			inFlight[id] = false
			mu.Unlock()
		}
	}))
	defer rc.Close()
	defer close(release)

	// An account, its admin and a subscription, through the API in this process.
	acc, err := impl.CreateAccount(ctx, pool, impl.AccountInput{Name: "Crash", BaseCurrency: "EUR", TimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := impl.CreateUser(ctx, pool, impl.UserInput{AccountID: acc, Name: "Admin", Login: "admin@crash.example", Role: impl.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := impl.CreateToken(ctx, pool, admin, "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	typeID, err := impl.AddDirectoryValue(ctx, pool, impl.DirectoryValueInput{AccountID: acc, Code: impl.DirCompanyTypes, Name: "Client"})
	if err != nil {
		t.Fatal(err)
	}
	api, err := impl.NewHandler(impl.Config{DB: pool, Secrets: box, WebhookAllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(path string, body any) string {
		t.Helper()
		raw, _ := json.Marshal(body)
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		var env struct{ Status, Value string }
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Status != "success" {
			t.Fatalf("%s: %s", path, w.Body.String())
		}
		return env.Value
	}
	var sub struct{ Secret string }
	_ = json.Unmarshal([]byte(call("/webhook/insert", map[string]any{"url": rc.URL + "/hook"})), &sub)
	mu.Lock()
	secret = sub.Secret
	mu.Unlock()
	var company int64
	_ = json.Unmarshal([]byte(call("/company/insert", map[string]any{"name": "Contoso", "type_id": typeID, "user_id": admin})), &company)
	for i := range 20 {
		call("/company/update", map[string]any{"id": company, "note": fmt.Sprint("note ", i)})
	}

	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "CRM_SECRET_KEY="+key, "CRM_MAIL=off", "WEBHOOK_TIMEOUT=1s",
			"WEBHOOK_ALLOWED_NETWORKS=127.0.0.1/32", "LOG_FORMAT=text")
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	victim := start()
	select {
	case <-first:
	case <-time.After(60 * time.Second):
		t.Fatal("the first process delivered nothing")
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	// The killed process's request hangs on in the receiver; no process delivers it any more.
	mu.Lock()
	inFlight[order[0]] = false
	mu.Unlock()

	var want []string
	if err := pool.Select(&want, `SELECT 'evt_' || id FROM journal WHERE account_id = $1 ORDER BY position`, acc); err != nil {
		t.Fatal(err)
	}
	start()
	start()
	deadline := time.Now().Add(90 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) || invalid != 0 || overlap != 0 {
		t.Fatalf("%d of %d events received; %d invalid signatures; %d deliveries overlapping", len(got), len(want), invalid, overlap)
	}
	// The killed process's event came again, once; every other event once, in order.
	if got[order[0]] != 2 {
		t.Errorf("the event in flight at the crash was received %d times, want 2 (once again, same webhook-id)", got[order[0]])
	}
	var dedup []string
	seen := map[string]bool{}
	for _, id := range order {
		if !seen[id] {
			seen[id] = true
			dedup = append(dedup, id)
		}
	}
	for i := range want {
		if dedup[i] != want[i] {
			t.Fatalf("order after de-duplication %v, want %v", dedup, want)
		}
	}
	for id, n := range got {
		if n != 1 && id != order[0] {
			t.Errorf("%s received %d times", id, n)
		}
	}
}
