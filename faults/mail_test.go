package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/mailer/mailertest"
)

var messageID = regexp.MustCompile(`(?mi)^Message-ID:\s*(\S+)`)

// TestMailOutboxAcrossCrash queues 60 messages to a local SMTP server, kills
// the server with SIGKILL during their delivery and starts it again: every
// message is delivered; one is delivered twice only when the kill fell between
// the SMTP server's 250 and the database update, and then with the same
// Message-ID. Two processes without a crash never deliver one twice.
func TestMailOutboxAcrossCrash(t *testing.T) {
	need(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyText := base64.StdEncoding.EncodeToString(key)
	box, err := mailer.NewSecretBox(keyText)
	if err != nil {
		t.Fatal(err)
	}
	sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{})
	// A slow SMTP server, so that the kill falls during the delivery.
	sink.Set(func(s *mailertest.SMTPSink) {
		s.DataReply = func(int) error { time.Sleep(40 * time.Millisecond); return nil }
	})
	user, _ := strconv.ParseInt(suite.userID, 10, 64)
	ctx := context.Background()
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	mailAccount, err := impl.CreateMailAccount(ctx, suite.pool, box, impl.MailAccountInput{UserID: user,
		Address: "faults" + run + "@demo.example", DisplayName: "Faults",
		SMTP: impl.MailServerInput{Host: sink.Host, Port: sink.Port, Security: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	queue := func(addr string, n int, tag string) {
		for i := range n {
			body := fmt.Sprintf(`{"mail": {"account_id": "%d", "to_address": "janis@contoso.example", "subject": %q, "body": %q}}`,
				mailAccount, base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s %d", tag, i)),
				base64.StdEncoding.EncodeToString([]byte("<p>x</p>")))
			if r := call(addr, http.MethodPost, "/mail/send", body); r.err != nil || r.envErr != nil || r.env.Status != "success" {
				t.Fatalf("mail/send: %s", r)
			}
		}
	}
	env := []string{"CRM_MAIL=on", "CRM_SECRET_KEY=" + keyText}

	// Queue with the worker off, then start one that delivers, and kill it.
	api := startServer(t)
	queue(api.addr, 60, "crash"+run)
	api.kill()
	s := startServer(t, env...)
	waitFor(t, 30*time.Second, func() bool { return len(sink.Mails()) >= 10 })
	s.kill()
	atKill := len(sink.Mails())
	// The killed process's leases run out after minutes; the test ends them now,
	// as time would.
	if _, err := suite.pool.Exec(`UPDATE mail_messages SET lease_until = now() WHERE account_id = $1 AND mail_account_id = $2 AND delivery_state = 'sending'`,
		suite.account, mailAccount); err != nil {
		t.Fatal(err)
	}
	startServer(t, env...)
	waitDelivered(t, sink, 60, 60*time.Second)
	time.Sleep(3 * time.Second) // a second copy would come meanwhile
	counts := waitDelivered(t, sink, 60, time.Second)
	twice := 0
	for id, n := range counts {
		if n > 2 {
			t.Errorf("message %s delivered %d times", id, n)
		}
		if n == 2 {
			twice++
		}
	}
	if twice > 4*2 { // the worker has at most Concurrency (4) messages in flight, two processes at most
		t.Errorf("%d messages delivered twice, more than were in flight at the kill", twice)
	}
	t.Logf("crash: 60 queued, %d delivered before the kill, %d distinct delivered, %d twice (the same Message-ID)", atKill, len(counts), twice)

	// Two processes, no crash: once each.
	before := len(sink.Mails())
	a := startServer(t)
	queue(a.addr, 60, "pair"+run)
	startServer(t, env...)
	startServer(t, env...)
	deadline := time.Now().Add(60 * time.Second)
	for len(sink.Mails())-before < 60 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a duplicate would come meanwhile
	pair := map[string]int{}
	deliveries := 0
	for _, m := range sink.Mails()[before:] {
		if id := msgID(t, m.Raw); counts[id] == 0 {
			pair[id]++
			deliveries++
		} else {
			t.Errorf("message %s of the crash delivered again later", id)
		}
	}
	if len(pair) != 60 || deliveries != 60 {
		t.Errorf("two processes: %d deliveries of %d messages, want 60 of 60", deliveries, len(pair))
	}
	t.Logf("two processes, no crash: 60 queued, %d deliveries of %d messages", deliveries, len(pair))
}

func msgID(t *testing.T, raw []byte) string {
	m := messageID.FindSubmatch(raw)
	if m == nil {
		t.Fatalf("a delivered message has no Message-ID:\n%.300s", raw)
	}
	return string(bytes.TrimSpace(m[1]))
}

// waitDelivered waits until want distinct Message-IDs were delivered and
// returns the deliveries per Message-ID.
func waitDelivered(t *testing.T, sink *mailertest.SMTPSink, want int, limit time.Duration) map[string]int {
	t.Helper()
	var counts map[string]int
	waitFor(t, limit, func() bool {
		counts = map[string]int{}
		for _, m := range sink.Mails() {
			counts[msgID(t, m.Raw)]++
		}
		return len(counts) >= want
	})
	return counts
}

func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
