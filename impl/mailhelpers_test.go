package impl_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/mailer/mailertest"
)

// Mail test helpers: a test key, mail accounts on the servers of mailertest,
// and a worker over the server's pool.

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// testSecretBox is a SecretBox with a fresh random key.
func testSecretBox(t *testing.T) *mailer.SecretBox {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := mailer.NewSecretBox(base64.StdEncoding.EncodeToString(key))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// mailAccount creates a mail account for user with the given servers.
func mailAccount(t *testing.T, e *env, box *mailer.SecretBox, userID int64, address string, smtpSrv, imapSrv impl.MailServerInput) int64 {
	t.Helper()
	id, err := impl.CreateMailAccount(context.Background(), e.db, box, impl.MailAccountInput{
		UserID: userID, Address: address, DisplayName: "Box " + address, SMTP: smtpSrv, IMAP: imapSrv,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// newWorker is a mail worker for tests: short timeouts, a one-minute backoff
// base (tests make a retry due by moving next_attempt_at) and 3 attempts. It
// runs on the server's pool, so that on Citus every statement but the
// scheduling scans must run on one shard.
func newWorker(t *testing.T, e *env, box *mailer.SecretBox, opts ...func(*impl.MailConfig)) *impl.MailWorker {
	t.Helper()
	cfg := impl.MailConfig{DB: e.server, Secrets: box, Timeout: 3 * time.Second, Lease: 10 * time.Second,
		MaxAttempts: 3, RetryBase: time.Minute, RetryMax: time.Hour, PollInterval: time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	w, err := impl.NewMailWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// deliverAll runs rounds of delivery until one finds nothing due, and returns
// how many messages they claimed.
func deliverAll(t *testing.T, w *impl.MailWorker) int {
	t.Helper()
	total := 0
	for {
		n, err := w.DeliverOutbox(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

func smtpServer(s *mailertest.SMTPSink, security string) impl.MailServerInput {
	return impl.MailServerInput{Host: s.Host, Port: s.Port, Security: security}
}

func imapServer(s *mailertest.IMAPServer) impl.MailServerInput {
	return impl.MailServerInput{Host: s.Host, Port: s.Port, Security: "none", Login: s.Login, Password: s.Password}
}

// sendMail posts POST /mail/send and expects the success envelope.
func sendMail(t *testing.T, e *env, token string, mail map[string]any) {
	t.Helper()
	r := e.post(t, token, "/mail/send", map[string]any{"mail": mail})
	if r.Status != "success" || r.code() != "0" || r.errorText() != "" || r.Value != "" || r.Rows != 0 || r.Pages != 0 || r.Page != 0 {
		t.Fatalf("mail/send: want success with code 0, got\n%s", r.Raw)
	}
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }
