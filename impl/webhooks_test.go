package impl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/webhook"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// withWebhooks gives the server a secret key and lets webhooks reach loopback.
func withWebhooks(box *mailer.SecretBox) envOption {
	return func(c *impl.Config) {
		c.Secrets = box
		c.WebhookAllowedNetworks = loopback
		c.WebhookTimeout = 2 * time.Second
	}
}

// delivery is one request a receiver got.
type delivery struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Valid                    bool // the signature checks out with the receiver's secret
}

// receiver is a webhook receiver on loopback. status decides each reply (200
// when nil); it counts deliveries of one webhook-id at once.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	secret   string
	got      []delivery
	inFlight map[string]int
	overlap  atomic.Int32
	status   func(n int, d delivery) int
	delay    time.Duration
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{inFlight: map[string]int{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp"),
			Signature: r.Header.Get("webhook-signature"), Body: body}
		rc.mu.Lock()
		d.Valid = webhook.Verify(rc.secret, r.Header, body, time.Now(), 5*time.Minute) == nil
		rc.inFlight[d.ID]++
		if rc.inFlight[d.ID] > 1 {
			rc.overlap.Add(1)
		}
		rc.got = append(rc.got, d)
		n, status := len(rc.got), rc.status
		rc.mu.Unlock()
		time.Sleep(rc.delay)
		code := http.StatusOK
		if status != nil {
			code = status(n, d)
		}
		rc.mu.Lock()
		rc.inFlight[d.ID]--
		rc.mu.Unlock()
		if code >= 300 && code < 400 {
			w.Header().Set("Location", "http://169.254.169.254/latest/meta-data/")
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// payload is the body of a delivery.
type payload struct {
	Type      string    `json:"type"`
	Timestamp string    `json:"timestamp"`
	Data      feedEvent `json:"data"`
}

// subscribe adds a subscription through the API and returns its id and secret.
func subscribe(t *testing.T, e *env, w *world, body map[string]any) (int64, string) {
	t.Helper()
	v := decode[struct {
		ID     int64   `json:"id"`
		Secret *string `json:"secret"`
	}](t, expectOK(t, e.post(t, w.admin.token, "/webhook/insert", body)))
	if v.Secret == nil || !strings.HasPrefix(*v.Secret, "whsec_") {
		t.Fatalf("secret %v", v.Secret)
	}
	t.Cleanup(func() { e.db.Exec(`UPDATE webhooks SET active = false WHERE account_id = $1`, w.accountID) })
	return v.ID, *v.Secret
}

// webhookWorker is a worker over the server's pool with short waits.
func webhookWorker(t *testing.T, e *env, box *mailer.SecretBox, opts ...func(*impl.WebhookConfig)) *impl.WebhookWorker {
	t.Helper()
	cfg := impl.WebhookConfig{DB: e.server, Secrets: box, AllowedNetworks: loopback, Timeout: 2 * time.Second,
		RetryBase: 10 * time.Millisecond, RetryMax: 40 * time.Millisecond, GiveUpAfter: time.Hour, Interval: 20 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	ww, err := impl.NewWebhookWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ww
}

// runUntil runs the worker's rounds until cond holds (or 20 s pass).
func runUntil(t *testing.T, ww *impl.WebhookWorker, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not get there in 20 s")
		}
		if _, err := ww.Deliver(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWebhooks(t *testing.T) {
	box := testSecretBox(t)
	e := newEnv(t, withWebhooks(box))
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	rc := newReceiver(t)

	var id int64
	t.Run("OK insert, list, update, deliveries, delete", func(t *testing.T) {
		mark := e.lastJournalID(t)
		var secret string
		id, secret = subscribe(t, e, w, map[string]any{"url": rc.URL + "/hook", "modules": []int{2, 1}, "actions": []string{"insert"},
			"description": "ERP"})
		var sealed []byte
		if err := e.db.Get(&sealed, `SELECT secret FROM webhooks WHERE id = $1`, id); err != nil || strings.Contains(string(sealed), secret[6:]) {
			t.Errorf("the secret is not stored encrypted (%v)", err)
		}
		e.expectJournal(t, mark, journalRow{UserID: w.admin.id, Entity: "webhook", RecordID: id, Action: "insert",
			Changes: map[string]any{"url": rc.URL + "/hook", "modules": []any{1.0, 2.0}, "actions": []any{"insert"}, "description": "ERP", "active": true}})
		list := e.get(t, w.admin.token, "/webhook/list")
		hooks := decode[[]map[string]any](t, expectQuick(t, list))
		if len(hooks) != 1 || hooks[0]["url"] != rc.URL+"/hook" || hooks[0]["active"] != true || hooks[0]["secret"] != nil {
			t.Errorf("list %v", hooks)
		}

		mark = e.lastJournalID(t)
		v := decode[map[string]any](t, expectOK(t, e.post(t, w.admin.token, "/webhook/update", map[string]any{"id": id, "active": false, "rotate_secret": true})))
		if s, _ := v["secret"].(string); !strings.HasPrefix(s, "whsec_") || s == secret {
			t.Errorf("rotated secret %v", v)
		}
		e.expectJournal(t, mark, journalRow{UserID: w.admin.id, Entity: "webhook", RecordID: id, Action: "update",
			Changes: map[string]any{"active": []any{true, false}, "secret": []any{"(hidden)", "(changed)"}}})
		v = decode[map[string]any](t, expectOK(t, e.post(t, w.admin.token, "/webhook/update", map[string]any{"id": id, "active": true, "description": "ERP"})))
		if v["secret"] != nil {
			t.Errorf("secret without a change %v", v)
		}

		rc.mu.Lock()
		rc.secret = "whsec_" + strings.Repeat("A", 43) + "=" // not the subscription's: Valid false
		rc.mu.Unlock()
		test := decode[map[string]any](t, expectOK(t, e.post(t, w.admin.token, "/webhook/test", map[string]any{"id": id})))
		if test["delivered"] != true || test["status_code"] != 200.0 || !strings.HasPrefix(test["webhook_id"].(string), "test_") {
			t.Errorf("test delivery %v", test)
		}
		if got := rc.deliveries(); len(got) != 1 || !strings.Contains(string(got[0].Body), `"type":"webhook.test"`) ||
			!strings.HasPrefix(got[0].Signature, "v1,") {
			t.Errorf("received %+v", got)
		}
		log := e.get(t, w.admin.token, fmt.Sprintf("/webhook/deliveries?webhook_id=%d", id))
		entries := decode[[]map[string]any](t, log.Value)
		if log.Rows != 1 || len(entries) != 1 || entries[0]["outcome"] != "test" || entries[0]["event_id"] != nil {
			t.Errorf("log %s", log.Raw)
		}
	})

	t.Run("a test delivery that fails is told, not an error", func(t *testing.T) {
		other, _ := subscribe(t, e, w, map[string]any{"url": "http://hooks.example.invalid/x"})
		test := decode[map[string]any](t, expectOK(t, e.post(t, w.admin.token, "/webhook/test", map[string]any{"id": other})))
		if test["delivered"] != false || test["status_code"] != nil || !strings.Contains(test["error"].(string), "resolve") {
			t.Errorf("test delivery %v", test)
		}
	})

	t.Run("admins only", func(t *testing.T) {
		for _, who := range w.roles()[1:] {
			t.Run(who.name, func(t *testing.T) {
				before := e.rowCounts(t, w.accountID, "webhooks", "journal")
				expectError(t, e.post(t, who.u.token, "/webhook/insert", map[string]any{"url": rc.URL}), "403", "only admins", "")
				expectError(t, e.get(t, who.u.token, "/webhook/list"), "403", "only admins", "")
				expectError(t, e.post(t, who.u.token, "/webhook/update", map[string]any{"id": id, "active": false}), "403", "only admins", "")
				expectError(t, e.post(t, who.u.token, "/webhook/delete", map[string]any{"id": id}), "403", "only admins", "")
				expectError(t, e.post(t, who.u.token, "/webhook/test", map[string]any{"id": id}), "403", "only admins", "")
				expectError(t, e.get(t, who.u.token, fmt.Sprintf("/webhook/deliveries?webhook_id=%d", id)), "403", "only admins", "")
				if after := e.rowCounts(t, w.accountID, "webhooks", "journal"); after != before {
					t.Error("a refused request wrote rows")
				}
			})
		}
	})

	t.Run("another account's subscription is not found", func(t *testing.T) {
		msg := fmt.Sprintf("webhook %d not found", id)
		expectError(t, e.post(t, beta.admin.token, "/webhook/update", map[string]any{"id": id, "active": false}), "404", msg, "")
		expectError(t, e.post(t, beta.admin.token, "/webhook/delete", map[string]any{"id": id}), "404", msg, "")
		expectError(t, e.post(t, beta.admin.token, "/webhook/test", map[string]any{"id": id}), "404", msg, "")
		expectError(t, e.get(t, beta.admin.token, fmt.Sprintf("/webhook/deliveries?webhook_id=%d", id)), "404", msg, "")
		if r := e.get(t, beta.admin.token, "/webhook/list"); r.Value != "[]" {
			t.Errorf("beta's list %s", r.Raw)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		before := e.rowCounts(t, w.accountID, "webhooks", "journal")
		for name, c := range map[string]struct {
			body map[string]any
			msg  string
		}{
			"private address":  {map[string]any{"url": "https://10.1.2.3/hook"}, "url: 10.1.2.3 is a private"},
			"metadata address": {map[string]any{"url": "http://169.254.169.254/latest"}, "url: 169.254.169.254"},
			"IPv6 loopback":    {map[string]any{"url": "http://[::1]:8080/"}, "url: ::1"},
			"localhost":        {map[string]any{"url": "http://localhost:8080/"}, "url: localhost"},
			"scheme":           {map[string]any{"url": "ftp://hooks.example.com/"}, "url: the scheme"},
			"user in the URL":  {map[string]any{"url": "https://me:pw@hooks.example.com/"}, "url: a user or password"},
			"not a URL":        {map[string]any{"url": "hooks"}, "url: not an absolute URL"},
			"short secret":     {map[string]any{"url": "https://hooks.example.com/", "secret": "whsec_" + strings.Repeat("QUFB", 7) + "QUE="}, `field "secret"`},
			"unknown module":   {map[string]any{"url": "https://hooks.example.com/", "modules": []int{3}}, "modules"},
			"unknown action":   {map[string]any{"url": "https://hooks.example.com/", "actions": []string{"explode"}}, "actions"},
			"unknown field":    {map[string]any{"url": "https://hooks.example.com/", "headers": "x"}, "headers"},
		} {
			t.Run(name, func(t *testing.T) {
				expectError(t, e.post(t, w.admin.token, "/webhook/insert", c.body), "400", c.msg, "")
			})
		}
		// The server's own allow-list lets loopback through; a server without it refuses it.
		strict := newEnv(t, func(c *impl.Config) { c.Secrets = box })
		sw := strict.newWorld(t, "strict")
		expectError(t, strict.post(t, sw.admin.token, "/webhook/insert", map[string]any{"url": rc.URL}), "400", "url: 127.0.0.1 is a private", "")
		// IPv6 forms that carry an IPv4 address are judged by it (webhook.TestGuardEmbeddedIPv4 has them all).
		for url, msg := range map[string]string{
			"http://[::127.0.0.1]:8080/h":              "url: ::7f00:1 embeds the IPv4 address 127.0.0.1, which is a private",
			"http://[64:ff9b::10.0.0.1]/h":             "url: 64:ff9b::a00:1 embeds the IPv4 address 10.0.0.1",
			"http://[2002:a9fe:a9fe::1]/h":             "url: 2002:a9fe:a9fe::1 embeds the IPv4 address 169.254.169.254",
			"http://[2001:0:808:808::80ff:fffe]:1/h":   "url: 2001:0:808:808::80ff:fffe embeds the IPv4 address 127.0.0.1",
			"http://[::ffff:0:127.0.0.1]/h":            "url: ::ffff:0:7f00:1 embeds the IPv4 address 127.0.0.1",
			"http://[2001:db8::5efe:192.168.0.1]:80/h": "url: 2001:db8::5efe:c0a8:1 embeds the IPv4 address 192.168.0.1",
		} {
			expectError(t, strict.post(t, sw.admin.token, "/webhook/insert", map[string]any{"url": url}), "400", msg, "")
		}
		if after := e.rowCounts(t, w.accountID, "webhooks", "journal"); after != before {
			t.Error("a refused request wrote rows")
		}
	})

	t.Run("no CRM_SECRET_KEY: HTTP 503", func(t *testing.T) {
		bare := newEnv(t)
		bw := bare.newWorld(t, "bare")
		r := bare.post(t, bw.admin.token, "/webhook/insert", map[string]any{"url": "https://hooks.example.com/"})
		if r.HTTPStatus != http.StatusServiceUnavailable || r.code() != "503" || !strings.Contains(r.errorText(), "CRM_SECRET_KEY") {
			t.Errorf("reply %d %s", r.HTTPStatus, r.Raw)
		}
	})

	t.Run("OK delete", func(t *testing.T) {
		mark := e.lastJournalID(t)
		expectOK(t, e.post(t, w.admin.token, "/webhook/delete", map[string]any{"id": id}))
		if n := e.count(t, `SELECT count(*) FROM webhooks WHERE id = $1`, id) + e.count(t, `SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $1`, id); n != 0 {
			t.Errorf("%d rows left", n)
		}
		e.expectJournal(t, mark, journalRow{UserID: w.admin.id, Entity: "webhook", RecordID: id, Action: "delete",
			Changes: map[string]any{"url": rc.URL + "/hook"}})
		expectError(t, e.post(t, w.admin.token, "/webhook/delete", map[string]any{"id": id}), "404", "not found", "")
	})
}

// TestWebhookDelivery delivers events to a receiver on loopback: signed, in
// order, only those subscribed, retried with backoff, and the subscription
// disabled when an event keeps failing.
func TestWebhookDelivery(t *testing.T) {
	box := testSecretBox(t)
	e := newEnv(t, withWebhooks(box))
	w := e.newWorld(t, "acme")
	rc := newReceiver(t)
	id, secret := subscribe(t, e, w, map[string]any{"url": rc.URL + "/hook", "modules": []int{1}})
	rc.mu.Lock()
	rc.secret = secret
	// The second request fails twice (503, then a redirect not followed).
	rc.status = func(n int, _ delivery) int {
		switch n {
		case 2:
			return http.StatusServiceUnavailable
		case 3:
			return http.StatusFound
		}
		return http.StatusOK
	}
	rc.mu.Unlock()

	company, _ := newCompany(t, e, w, "Contoso", w.member)
	parseID(t, expectOK(t, e.post(t, w.admin.token, "/task/insert", map[string]any{"company_id": company, "note": "x", "type_id": w.dirs[35][0]})))
	expectOK(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": company, "note": "Call"}))

	var want []int64
	if err := e.db.Select(&want, `SELECT id FROM journal WHERE account_id = $1 AND module = 1 ORDER BY position`, w.accountID); err != nil {
		t.Fatal(err)
	}
	// The subscription's own insert (module 60) and the task (2) are not wanted.
	ww := webhookWorker(t, e, box)
	runUntil(t, ww, func() bool {
		var done []string
		for _, d := range rc.deliveries() {
			if d.Valid && len(done) < 1000 {
				done = append(done, d.ID)
			}
		}
		return len(done) >= len(want)+2
	})
	got := rc.deliveries()
	var ids []string
	for i, d := range got {
		if !d.Valid {
			t.Errorf("delivery %d: the signature does not verify: %+v", i, d)
		}
		var p payload
		if err := json.Unmarshal(d.Body, &p); err != nil || p.Type != p.Data.Entity+"."+p.Data.Action || p.Data.Module != 1 ||
			d.ID != fmt.Sprintf("evt_%d", p.Data.ID) || !strings.HasSuffix(p.Timestamp, "Z") {
			t.Errorf("delivery %d: %s (%v)", i, d.Body, err)
		}
		ids = append(ids, d.ID)
	}
	// In order; the failed event is repeated with the same webhook-id before anything after it.
	var wantIDs []string
	for i, j := range want {
		wantIDs = append(wantIDs, fmt.Sprintf("evt_%d", j))
		if i == 1 {
			wantIDs = append(wantIDs, fmt.Sprintf("evt_%d", j), fmt.Sprintf("evt_%d", j))
		}
	}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("deliveries %v\nwant %v", ids, wantIDs)
	}
	log := decode[[]map[string]any](t, e.get(t, w.admin.token, fmt.Sprintf("/webhook/deliveries?webhook_id=%d&records_onpage=500", id)).Value)
	var outcomes []string
	for _, l := range slices.Backward(log) {
		outcomes = append(outcomes, fmt.Sprintf("%v/%v/%v", l["outcome"], l["attempt"], l["status_code"]))
	}
	wantLog := []string{"delivered/1/200", "failed/1/503", "failed/2/302", "delivered/3/200"}
	for range len(want) - 2 {
		wantLog = append(wantLog, "delivered/1/200")
	}
	if !slices.Equal(outcomes, wantLog) {
		t.Errorf("log %v\nwant %v", outcomes, wantLog)
	}
	if !strings.Contains(fmt.Sprint(log), "redirects are not followed") {
		t.Errorf("the redirect's reason is not logged: %v", log)
	}

	t.Run("disabled after failing for GiveUpAfter, with an event; resumed by update", func(t *testing.T) {
		rc.mu.Lock()
		rc.status = func(int, delivery) int { return http.StatusInternalServerError }
		rc.mu.Unlock()
		expectOK(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": company, "note": "Fails"}))
		quick := webhookWorker(t, e, box, func(c *impl.WebhookConfig) { c.GiveUpAfter = 100 * time.Millisecond })
		runUntil(t, quick, func() bool {
			return e.count(t, `SELECT count(*) FROM webhooks WHERE id = $1 AND NOT active`, id) == 1
		})
		hooks := decode[[]map[string]any](t, e.get(t, w.admin.token, "/webhook/list").Value)
		if hooks[0]["active"] != false || !strings.Contains(hooks[0]["disabled_reason"].(string), "HTTP 500") || hooks[0]["disabled_at"] == nil {
			t.Errorf("disabled subscription %v", hooks[0])
		}
		events, _ := e.feedAll(t, w.admin.token, "", 500, map[string][]string{"module": {"60"}})
		last := events[len(events)-1]
		if last.UserID != nil || last.Action != "update" || fmt.Sprint(last.Changes["active"]) != "[true false]" {
			t.Errorf("the disabling event %+v", last)
		}
		// Resumed, the failed event comes first.
		rc.mu.Lock()
		rc.status = nil
		n := len(rc.got)
		rc.mu.Unlock()
		expectOK(t, e.post(t, w.admin.token, "/webhook/update", map[string]any{"id": id, "active": true}))
		runUntil(t, ww, func() bool { return len(rc.deliveries()) > n })
		var p payload
		_ = json.Unmarshal(rc.deliveries()[n].Body, &p)
		if p.Data.Changes["note"] == nil {
			t.Errorf("after resuming: %s", rc.deliveries()[n].Body)
		}
	})

	t.Run("an address refused when dialed", func(t *testing.T) {
		// A worker whose operator allows no private network refuses the receiver on loopback.
		strict := webhookWorker(t, e, box, func(c *impl.WebhookConfig) { c.AllowedNetworks = nil })
		n := len(rc.deliveries())
		expectOK(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": company, "note": "Refused"}))
		runUntil(t, strict, func() bool {
			return e.count(t, `SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $1 AND error LIKE 'refused destination: 127.0.0.1%'`, id) > 0
		})
		if len(rc.deliveries()) != n {
			t.Error("the receiver was reached")
		}
	})
}

// TestWebhookWorkersShareSubscriptions runs two workers (as two processes
// would) over one subscription: every event is delivered exactly once, and
// never twice at the same time.
func TestWebhookWorkersShareSubscriptions(t *testing.T) {
	box := testSecretBox(t)
	e := newEnv(t, withWebhooks(box))
	w := e.newWorld(t, "acme")
	rc := newReceiver(t)
	rc.delay = 5 * time.Millisecond
	_, secret := subscribe(t, e, w, map[string]any{"url": rc.URL})
	rc.secret = secret
	company, _ := newCompany(t, e, w, "Contoso", w.admin)
	for i := range 30 {
		expectOK(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": company, "note": fmt.Sprint(i)}))
	}
	want := len(e.journalIDsByPosition(t, w.accountID))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		ww := webhookWorker(t, e, box, func(c *impl.WebhookConfig) { c.Batch = 3 })
		wg.Go(func() { ww.Run(ctx) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(rc.deliveries()) < want && time.Now().Before(deadline) { // the subscription came first: every event
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // room for a duplicate to show
	cancel()
	wg.Wait()
	seen := map[string]int{}
	for _, d := range rc.deliveries() {
		seen[d.ID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	if len(seen) != want || rc.overlap.Load() != 0 {
		t.Errorf("%d events delivered, want %d; %d overlapping deliveries", len(seen), want, rc.overlap.Load())
	}
}
