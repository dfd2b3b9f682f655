package impl_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"
	"github.com/emersion/go-smtp"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/mailer/mailertest"
)

// deliveryState is the outbox columns of a message.
type deliveryState struct {
	State       string     `db:"delivery_state"`
	Attempts    int        `db:"attempts"`
	LastError   string     `db:"last_error"`
	NextAttempt *time.Time `db:"next_attempt_at"`
	SentAt      *time.Time `db:"sent_at"`
	HasRaw      bool       `db:"has_raw"`
	Leased      bool       `db:"leased"`
}

func (e *env) delivery(t *testing.T, id int64) deliveryState {
	t.Helper()
	var d deliveryState
	if err := e.db.Get(&d, `SELECT delivery_state, attempts, last_error, next_attempt_at, sent_at,
		raw_message IS NOT NULL AS has_raw, lease_id IS NOT NULL OR lease_until IS NOT NULL AS leased
		FROM mail_messages WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return d
}

// makeDue moves the next attempt of every queued message of the account to now.
func (e *env) makeDue(t *testing.T, accountID int64) {
	t.Helper()
	if _, err := e.db.Exec(`UPDATE mail_messages SET next_attempt_at = now() WHERE account_id = $1 AND delivery_state = 'queued'`, accountID); err != nil {
		t.Fatal(err)
	}
}

// outboxWorld is an account whose member has a mail account on an SMTP sink.
type outboxWorld struct {
	e    *env
	w    *world
	box  *mailer.SecretBox
	sink *mailertest.SMTPSink
	acc  int64
}

func newOutboxWorld(t *testing.T, opts mailertest.SinkOptions, security string) *outboxWorld {
	t.Helper()
	e := newEnv(t)
	o := &outboxWorld{e: e, w: e.newWorld(t, "acme"), box: testSecretBox(t), sink: mailertest.NewSMTPSink(t, opts)}
	srv := smtpServer(o.sink, security)
	srv.Login, srv.Password = opts.Login, opts.Password
	o.acc = mailAccount(t, e, o.box, o.w.member.id, "member@acme.example", srv, impl.MailServerInput{})
	return o
}

func (o *outboxWorld) send(t *testing.T, subject string) int64 {
	t.Helper()
	sendMail(t, o.e, o.w.member.token, map[string]any{"account_id": itoa(o.acc), "to_address": "Janis <janis@contoso.example>",
		"cc": "cc@contoso.example", "bcc": "hidden@acme.example", "subject": b64(subject), "body": b64("<p>Hello <i>Janis</i></p>")})
	return o.e.lastMail(t).ID
}

func TestMailDelivery(t *testing.T) {
	t.Run("OK: delivered over SMTP with headers, MIME parts, cc and bcc", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		id := o.send(t, "Offer ✓")
		stored := o.e.lastMail(t)
		if n := deliverAll(t, newWorker(t, o.e, o.box)); n != 1 {
			t.Fatalf("delivered %d, want 1", n)
		}
		mails := o.sink.Mails()
		if len(mails) != 1 {
			t.Fatalf("%d messages arrived", len(mails))
		}
		got := mails[0]
		if got.From != "member@acme.example" || !slices.Equal(got.Rcpts, []string{"janis@contoso.example", "cc@contoso.example", "hidden@acme.example"}) {
			t.Errorf("envelope from %q to %v", got.From, got.Rcpts)
		}
		r, err := gomail.CreateReader(bytes.NewReader(got.Raw))
		if err != nil {
			t.Fatal(err)
		}
		h := r.Header
		subject, _ := h.Subject()
		msgID, _ := h.MessageID()
		from, _ := h.AddressList("From")
		to, _ := h.AddressList("To")
		cc, _ := h.AddressList("Cc")
		if subject != "Offer ✓" || "<"+msgID+">" != stored.MessageID || len(from) != 1 || from[0].String() != `"Box member@acme.example" <member@acme.example>` ||
			len(to) != 1 || to[0].String() != `"Janis" <janis@contoso.example>` || len(cc) != 1 || cc[0].Address != "cc@contoso.example" ||
			h.Get("Bcc") != "" || strings.Contains(string(got.Raw), "hidden@acme.example") || h.Get("Mime-Version") != "1.0" {
			t.Errorf("header:\n%s", got.Raw[:bytes.Index(got.Raw, []byte("\r\n\r\n"))])
		}
		var types []string
		var bodies []string
		for {
			p, err := r.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			ct, _, _ := p.Header.(*gomail.InlineHeader).ContentType()
			b, _ := io.ReadAll(p.Body)
			types, bodies = append(types, ct), append(bodies, string(b))
		}
		if !slices.Equal(types, []string{"text/plain", "text/html"}) || bodies[0] != "Hello Janis" || bodies[1] != "<p>Hello <i>Janis</i></p>" {
			t.Errorf("parts %v %q", types, bodies)
		}
		d := o.e.delivery(t, id)
		if d.State != "sent" || d.Attempts != 1 || d.LastError != "" || d.SentAt == nil || d.HasRaw || d.Leased || d.NextAttempt != nil {
			t.Errorf("after delivery %+v", d)
		}
		if n := deliverAll(t, newWorker(t, o.e, o.box)); n != 0 || len(o.sink.Mails()) != 1 {
			t.Errorf("a sent message was delivered again")
		}
	})

	t.Run("OK: AUTH PLAIN over STARTTLS and over TLS", func(t *testing.T) {
		cert, roots := mailertest.Cert(t)
		for _, security := range []string{"starttls", "tls"} {
			t.Run(security, func(t *testing.T) {
				o := newOutboxWorld(t, mailertest.SinkOptions{Login: "member@acme.example", Password: "s3cret pass", TLS: security, Cert: cert}, security)
				o.send(t, "secure")
				w := newWorker(t, o.e, o.box, func(c *impl.MailConfig) { c.TLSConfig = &tls.Config{RootCAs: roots} })
				deliverAll(t, w)
				logins := o.sink.Logins()
				if len(o.sink.Mails()) != 1 || !slices.Equal(logins, []string{"member@acme.example:s3cret pass"}) {
					t.Errorf("arrived %d, logins %v; state %+v", len(o.sink.Mails()), logins, o.e.delivery(t, o.e.lastMail(t).ID))
				}
			})
		}
	})

	t.Run("an untrusted certificate is a temporary failure", func(t *testing.T) {
		cert, _ := mailertest.Cert(t)
		o := newOutboxWorld(t, mailertest.SinkOptions{TLS: "tls", Cert: cert}, "tls")
		id := o.send(t, "x")
		deliverAll(t, newWorker(t, o.e, o.box))
		if d := o.e.delivery(t, id); d.State != "queued" || !strings.Contains(d.LastError, "certificate") || len(o.sink.Mails()) != 0 {
			t.Errorf("state %+v", d)
		}
	})

	t.Run("temporary 4xx replies are retried with backoff", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		o.sink.Set(func(s *mailertest.SMTPSink) {
			s.DataReply = func(n int) error {
				if n <= 2 {
					return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
				}
				return nil
			}
		})
		id := o.send(t, "retry me")
		w := newWorker(t, o.e, o.box)
		deliverAll(t, w)
		d := o.e.delivery(t, id)
		if d.State != "queued" || d.Attempts != 1 || d.LastError != "SMTP error 451: try again later" || d.Leased || d.HasRaw != true {
			t.Fatalf("after a 451: %+v", d)
		}
		if wait := time.Until(*d.NextAttempt); wait < 50*time.Second || wait > 70*time.Second {
			t.Errorf("first retry in %v, want about 1 min", wait)
		}
		if n := deliverAll(t, w); n != 0 {
			t.Errorf("a message was retried before its time")
		}
		o.e.makeDue(t, o.w.accountID)
		deliverAll(t, w)
		if d := o.e.delivery(t, id); d.Attempts != 2 || time.Until(*d.NextAttempt) < 100*time.Second {
			t.Errorf("after the second 451: %+v (want the wait doubled)", d)
		}
		o.e.makeDue(t, o.w.accountID)
		deliverAll(t, w)
		if d := o.e.delivery(t, id); d.State != "sent" || d.Attempts != 3 || d.LastError != "" || len(o.sink.Mails()) != 1 {
			t.Errorf("after the third attempt: %+v, %d arrived", d, len(o.sink.Mails()))
		}
	})

	t.Run("a permanent 5xx reply fails at once with the server's reason", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		o.sink.Set(func(s *mailertest.SMTPSink) {
			s.RcptReply = func(to string) error {
				if to == "hidden@acme.example" {
					return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
				}
				return nil
			}
		})
		id := o.send(t, "x")
		deliverAll(t, newWorker(t, o.e, o.box))
		if d := o.e.delivery(t, id); d.State != "failed" || d.Attempts != 1 || d.LastError != "SMTP error 550: no such mailbox" || d.NextAttempt != nil || d.Leased {
			t.Errorf("state %+v", d)
		}
	})

	t.Run("failed after the last attempt", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		o.sink.Set(func(s *mailertest.SMTPSink) {
			s.DataReply = func(int) error { return &smtp.SMTPError{Code: 421, Message: "busy"} }
		})
		id := o.send(t, "x")
		w := newWorker(t, o.e, o.box)
		for range 3 {
			deliverAll(t, w)
			o.e.makeDue(t, o.w.accountID)
		}
		if d := o.e.delivery(t, id); d.State != "failed" || d.Attempts != 3 || d.LastError != "gave up after 3 attempts: SMTP error 421: busy" {
			t.Errorf("state %+v", d)
		}
	})

	t.Run("bad credentials fail the message", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{Login: "member@acme.example", Password: "right"}, "none")
		if _, err := o.e.db.Exec(`UPDATE mail_accounts SET smtp_secret = $1 WHERE id = $2`, o.box.Seal(o.w.accountID, "smtp", "wrong"), o.acc); err != nil {
			t.Fatal(err)
		}
		id := o.send(t, "x")
		deliverAll(t, newWorker(t, o.e, o.box))
		if d := o.e.delivery(t, id); d.State != "failed" || !strings.HasPrefix(d.LastError, "SMTP error 535") {
			t.Errorf("state %+v", d)
		}
	})

	t.Run("a mail account that cannot send fails its messages without connecting", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		for _, tc := range []struct{ name, update, want string }{
			{"disabled", `UPDATE mail_accounts SET active = false WHERE id = $1`, "is disabled"},
			{"no SMTP server", `UPDATE mail_accounts SET smtp_host = '' WHERE id = $1`, "has no SMTP server"},
			{"login without password", `UPDATE mail_accounts SET smtp_login = 'x' WHERE id = $1`, "has an SMTP login but no password"},
			{"password in clear over the network", `UPDATE mail_accounts SET smtp_login = 'x', smtp_secret = '\x01', smtp_host = 'mail.example.com' WHERE id = $1`,
				"the password would cross the network unencrypted"},
			{"a secret sealed with another key", `UPDATE mail_accounts SET smtp_login = 'x', smtp_secret = $2 WHERE id = $1`, "smtp password: cannot be decrypted"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := o.e.db.Exec(`UPDATE mail_accounts SET active = true, smtp_host = $2, smtp_login = '', smtp_secret = NULL WHERE id = $1`, o.acc, o.sink.Host); err != nil {
					t.Fatal(err)
				}
				id := o.send(t, "x")
				args := []any{o.acc}
				if strings.Contains(tc.update, "$2") {
					args = append(args, testSecretBox(t).Seal(o.w.accountID, "smtp", "p"))
				}
				if _, err := o.e.db.Exec(tc.update, args...); err != nil {
					t.Fatal(err)
				}
				deliverAll(t, newWorker(t, o.e, o.box))
				if d := o.e.delivery(t, id); d.State != "failed" || !strings.Contains(d.LastError, tc.want) {
					t.Errorf("state %+v", d)
				}
			})
		}
		if n := len(o.sink.Mails()); n != 0 {
			t.Errorf("%d messages arrived", n)
		}
	})

	t.Run("an SMTP server that is down leaves the message queued", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		if _, err := o.e.db.Exec(`UPDATE mail_accounts SET smtp_port = $1 WHERE id = $2`, mailertest.ClosedPort(t), o.acc); err != nil {
			t.Fatal(err)
		}
		id := o.send(t, "x")
		deliverAll(t, newWorker(t, o.e, o.box))
		if d := o.e.delivery(t, id); d.State != "queued" || d.Attempts != 1 || !strings.Contains(d.LastError, "connection refused") {
			t.Errorf("state %+v", d)
		}
	})

	t.Run("a slow SMTP server times out while the API stays responsive", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		if _, err := o.e.db.Exec(`UPDATE mail_accounts SET smtp_port = $1 WHERE id = $2`, mailertest.SilentServer(t), o.acc); err != nil {
			t.Fatal(err)
		}
		id := o.send(t, "x")
		w := newWorker(t, o.e, o.box, func(c *impl.MailConfig) { c.Timeout = 2 * time.Second })
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = w.DeliverOutbox(context.Background())
		}()
		time.Sleep(100 * time.Millisecond) // the worker is waiting for the greeting
		second := o.send(t, "sent while the worker waits")
		select {
		case <-done:
			t.Fatal("the delivery ended before the API call: the server was not slow")
		default:
		}
		<-done
		if d := o.e.delivery(t, id); d.State != "queued" || !strings.Contains(d.LastError, "timeout") {
			t.Errorf("state %+v", d)
		}
		if d := o.e.delivery(t, second); d.State != "queued" || d.Attempts != 0 {
			t.Errorf("the message sent meanwhile: %+v", d)
		}
	})

	t.Run("two workers racing never send a message twice", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		const n = 30
		for i := range n {
			o.send(t, "race "+itoa(int64(i)))
		}
		var wg sync.WaitGroup
		for range 2 {
			w := newWorker(t, o.e, o.box, func(c *impl.MailConfig) { c.Concurrency = 3 })
			wg.Go(func() { deliverAll(t, w) })
		}
		wg.Wait()
		seen := map[string]int{}
		for _, m := range o.sink.Mails() {
			r, err := gomail.CreateReader(bytes.NewReader(m.Raw))
			if err != nil {
				t.Fatal(err)
			}
			id, _ := r.Header.MessageID()
			seen[id]++
		}
		if len(seen) != n {
			t.Errorf("%d distinct messages arrived, want %d", len(seen), n)
		}
		for id, k := range seen {
			if k != 1 {
				t.Errorf("message %s arrived %d times", id, k)
			}
		}
		if c := o.e.count(t, `SELECT count(*) FROM mail_messages WHERE account_id = $1 AND delivery_state = 'sent' AND attempts = 1`, o.w.accountID); c != n {
			t.Errorf("%d messages sent in one attempt, want %d", c, n)
		}
	})

	t.Run("a message claimed by a process that died is delivered later", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		id := o.send(t, "orphan")
		last := o.send(t, "orphan at its last attempt")
		// As a process leaves them when it dies during an attempt.
		if _, err := o.e.db.Exec(`UPDATE mail_messages SET delivery_state = 'sending', attempts = 1, lease_id = 42,
			lease_until = now() + interval '1 hour' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if _, err := o.e.db.Exec(`UPDATE mail_messages SET delivery_state = 'sending', attempts = 3, lease_id = 43,
			lease_until = now() - interval '1 second' WHERE id = $1`, last); err != nil {
			t.Fatal(err)
		}
		w := newWorker(t, o.e, o.box)
		deliverAll(t, w)
		if d := o.e.delivery(t, id); d.State != "sending" || len(o.sink.Mails()) != 0 {
			t.Fatalf("a message under a live lease was taken: %+v", d)
		}
		if d := o.e.delivery(t, last); d.State != "failed" || d.LastError != "the process delivering it stopped during attempt 3" {
			t.Errorf("the message at its last attempt: %+v", d)
		}
		if _, err := o.e.db.Exec(`UPDATE mail_messages SET lease_until = now() - interval '1 second' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		deliverAll(t, w)
		if d := o.e.delivery(t, id); d.State != "sent" || d.Attempts != 2 || len(o.sink.Mails()) != 1 {
			t.Errorf("after the lease ran out: %+v, %d arrived", d, len(o.sink.Mails()))
		}
	})

	t.Run("a process that dies after the server accepted sends the message again, with the same Message-ID", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		id := o.send(t, "accepted, then the process died")
		stored := o.e.lastMail(t)
		// The dying process: its pool closes while the SMTP server accepts the
		// message, so the outcome is never recorded.
		pool, err := db.Open(context.Background(), o.e.serverURL)
		if err != nil {
			t.Fatal(err)
		}
		o.sink.Set(func(s *mailertest.SMTPSink) {
			s.DataReply = func(int) error { pool.Close(); return nil }
		})
		dying := newWorker(t, o.e, o.box, func(c *impl.MailConfig) { c.DB = pool })
		if n, err := dying.DeliverOutbox(context.Background()); n != 1 || err != nil {
			t.Fatalf("claimed %d (%v)", n, err)
		}
		if d := o.e.delivery(t, id); d.State != "sending" || d.Attempts != 1 || !d.Leased || len(o.sink.Mails()) != 1 {
			t.Fatalf("after the crash: %+v, %d arrived", d, len(o.sink.Mails()))
		}
		o.sink.Set(func(s *mailertest.SMTPSink) { s.DataReply = nil })

		w := newWorker(t, o.e, o.box)
		if n := deliverAll(t, w); n != 0 {
			t.Fatalf("a message under a live lease was taken again (%d)", n)
		}
		if _, err := o.e.db.Exec(`UPDATE mail_messages SET lease_until = now() - interval '1 second' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if n := deliverAll(t, w); n != 1 {
			t.Fatalf("delivered %d after the lease ran out", n)
		}
		d := o.e.delivery(t, id)
		mails := o.sink.Mails()
		if d.State != "sent" || d.Attempts != 2 || d.LastError != "" || d.Leased || len(mails) != 2 {
			t.Fatalf("after the lease ran out: %+v, %d arrived", d, len(mails))
		}
		for i, m := range mails {
			r, err := gomail.CreateReader(bytes.NewReader(m.Raw))
			if err != nil {
				t.Fatal(err)
			}
			if msgID, _ := r.Header.MessageID(); "<"+msgID+">" != stored.MessageID {
				t.Errorf("copy %d has Message-ID <%s>, want %s", i+1, msgID, stored.MessageID)
			}
		}
		if !bytes.Equal(mails[0].Raw, mails[1].Raw) || !bytes.Equal(mails[0].Raw, stored.Raw) {
			t.Error("the second delivery sent other bytes")
		}
	})

	t.Run("Run delivers until its context ends", func(t *testing.T) {
		o := newOutboxWorld(t, mailertest.SinkOptions{}, "none")
		ctx, cancel := context.WithCancel(context.Background())
		w := newWorker(t, o.e, o.box, func(c *impl.MailConfig) { c.OutboxInterval = 20 * time.Millisecond })
		stopped := make(chan struct{})
		go func() { w.Run(ctx); close(stopped) }()
		id := o.send(t, "picked up by the running worker")
		deadline := time.Now().Add(10 * time.Second)
		for o.e.delivery(t, id).State != "sent" && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		<-stopped
		if d := o.e.delivery(t, id); d.State != "sent" {
			t.Errorf("state %+v", d)
		}
	})
}

// TestMailDeliveryExactlyOnce runs two workers, as two processes would, over
// one database with many queued messages of several accounts: each message
// arrives once and is sent in one attempt.
func TestMailDeliveryExactlyOnce(t *testing.T) {
	e := newEnv(t)
	box := testSecretBox(t)
	sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{})
	const accounts, perAccount = 3, 25
	var worlds []*world
	for a := range accounts {
		w := e.newWorld(t, fmt.Sprintf("acme%d", a))
		worlds = append(worlds, w)
		acc := mailAccount(t, e, box, w.member.id, "member@acme.example", smtpServer(sink, "none"), impl.MailServerInput{})
		for k := range perAccount {
			sendMail(t, e, w.member.token, map[string]any{"account_id": itoa(acc), "to_address": "janis@contoso.example",
				"subject": b64(fmt.Sprintf("n%d.%d", a, k)), "body": b64("<p>x</p>")})
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		w := newWorker(t, e, box, func(c *impl.MailConfig) { c.Concurrency, c.OutboxInterval = 4, 10*time.Millisecond })
		wg.Go(func() { w.Run(ctx) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(sink.Mails()) < accounts*perAccount && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // time for a message sent twice to arrive twice
	cancel()
	wg.Wait()

	seen := map[string]int{}
	for _, m := range sink.Mails() {
		r, err := gomail.CreateReader(bytes.NewReader(m.Raw))
		if err != nil {
			t.Fatal(err)
		}
		subject, _ := r.Header.Subject()
		seen[subject]++
	}
	if len(seen) != accounts*perAccount || len(sink.Mails()) != accounts*perAccount {
		t.Errorf("%d messages arrived, %d distinct; want %d", len(sink.Mails()), len(seen), accounts*perAccount)
	}
	for subject, k := range seen {
		if k != 1 {
			t.Errorf("message %s arrived %d times", subject, k)
		}
	}
	for _, w := range worlds {
		var states []string
		if err := e.db.Select(&states, `SELECT delivery_state || ' in ' || attempts || CASE WHEN lease_id IS NULL AND lease_until IS NULL THEN '' ELSE ' leased' END
			FROM mail_messages WHERE account_id = $1 ORDER BY id`, w.accountID); err != nil {
			t.Fatal(err)
		}
		if want := slices.Repeat([]string{"sent in 1"}, perAccount); !slices.Equal(states, want) {
			t.Errorf("account %d: states %v", w.accountID, states)
		}
	}
}

// TestMailDeliveryFairness: an account with many queued messages cannot hold
// back another account's message by more than one round.
func TestMailDeliveryFairness(t *testing.T) {
	e := newEnv(t)
	box := testSecretBox(t)
	sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{})
	busy, quiet := e.newWorld(t, "busy"), e.newWorld(t, "quiet")
	busyAcc := mailAccount(t, e, box, busy.member.id, "member@busy.example", smtpServer(sink, "none"), impl.MailServerInput{})
	quietAcc := mailAccount(t, e, box, quiet.member.id, "member@quiet.example", smtpServer(sink, "none"), impl.MailServerInput{})
	// Messages other tests left due (when the tests share a database) go first.
	deliverAll(t, newWorker(t, e, box))

	queue := func(t *testing.T) (busyIDs []int64, quietID int64) {
		t.Helper()
		for k := range 10 {
			sendMail(t, e, busy.member.token, map[string]any{"account_id": itoa(busyAcc), "to_address": "a@x.example",
				"subject": b64(fmt.Sprintf("busy %d", k)), "body": ""})
			busyIDs = append(busyIDs, e.lastMail(t).ID)
		}
		sendMail(t, e, quiet.member.token, map[string]any{"account_id": itoa(quietAcc), "to_address": "a@x.example", "subject": b64("quiet"), "body": ""})
		return busyIDs, e.lastMail(t).ID
	}
	sent := func(t *testing.T, ids ...int64) []bool {
		t.Helper()
		out := make([]bool, len(ids))
		for i, id := range ids {
			out[i] = e.delivery(t, id).State == "sent"
		}
		return out
	}
	round := func(t *testing.T, w *impl.MailWorker) {
		t.Helper()
		if _, err := w.DeliverOutbox(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("the quiet account's message goes out in the first round, the busy one's two oldest with it", func(t *testing.T) {
		busyIDs, quietID := queue(t)
		w := newWorker(t, e, box, func(c *impl.MailConfig) { c.Concurrency, c.PerAccount = 4, 2 })
		round(t, w)
		if got := sent(t, quietID); !got[0] {
			t.Error("the quiet account's message was not in the first round")
		}
		if got, want := sent(t, busyIDs...), []bool{true, true, false, false, false, false, false, false, false, false}; !slices.Equal(got, want) {
			t.Errorf("busy account after the first round: %v, want %v", got, want)
		}
		round(t, w)
		if got, want := sent(t, busyIDs...), []bool{true, true, true, true, false, false, false, false, false, false}; !slices.Equal(got, want) {
			t.Errorf("busy account after the second round: %v, want %v", got, want)
		}
		deliverAll(t, w)
	})

	t.Run("a round of one message: every account's first before any account's second", func(t *testing.T) {
		busyIDs, quietID := queue(t)
		w := newWorker(t, e, box, func(c *impl.MailConfig) { c.Concurrency = 1 })
		round(t, w)
		if got := sent(t, busyIDs[0], busyIDs[1], quietID); !slices.Equal(got, []bool{true, false, false}) {
			t.Errorf("after the first round (oldest first): %v", got)
		}
		round(t, w)
		if got := sent(t, busyIDs[1], quietID); !slices.Equal(got, []bool{false, true}) {
			t.Errorf("after the second round: busy's second %t, quiet's first %t; want the quiet one first", got[0], got[1])
		}
		deliverAll(t, w)
	})
}
