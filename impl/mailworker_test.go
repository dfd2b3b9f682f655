package impl_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"
	"github.com/emersion/go-smtp"

	"github.com/crmservice/crm/impl"
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

// makeDue moves the next attempt of every queued message to now.
func (e *env) makeDue(t *testing.T) {
	t.Helper()
	if _, err := e.db.Exec(`UPDATE mail_messages SET next_attempt_at = now() WHERE delivery_state = 'queued'`); err != nil {
		t.Fatal(err)
	}
}

// outboxWorld is an account whose member has a mail account on an SMTP sink.
type outboxWorld struct {
	e    *env
	w    *world
	box  *impl.SecretBox
	sink *smtpSink
	acc  int64
}

func newOutboxWorld(t *testing.T, opts sinkOptions, security string) *outboxWorld {
	t.Helper()
	e := newEnv(t)
	o := &outboxWorld{e: e, w: e.newWorld(t, "acme"), box: testSecretBox(t), sink: newSMTPSink(t, opts)}
	srv := smtpServer(o.sink, security)
	srv.Login, srv.Password = opts.login, opts.password
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
		o := newOutboxWorld(t, sinkOptions{}, "none")
		id := o.send(t, "Offer ✓")
		stored := o.e.lastMail(t)
		if n := deliverAll(t, newWorker(t, o.e, o.box)); n != 1 {
			t.Fatalf("delivered %d, want 1", n)
		}
		mails := o.sink.mails()
		if len(mails) != 1 {
			t.Fatalf("%d messages arrived", len(mails))
		}
		got := mails[0]
		if got.from != "member@acme.example" || !slices.Equal(got.rcpts, []string{"janis@contoso.example", "cc@contoso.example", "hidden@acme.example"}) {
			t.Errorf("envelope from %q to %v", got.from, got.rcpts)
		}
		r, err := gomail.CreateReader(bytes.NewReader(got.raw))
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
			h.Get("Bcc") != "" || strings.Contains(string(got.raw), "hidden@acme.example") || h.Get("Mime-Version") != "1.0" {
			t.Errorf("header:\n%s", got.raw[:bytes.Index(got.raw, []byte("\r\n\r\n"))])
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
		if n := deliverAll(t, newWorker(t, o.e, o.box)); n != 0 || len(o.sink.mails()) != 1 {
			t.Errorf("a sent message was delivered again")
		}
	})

	t.Run("OK: AUTH PLAIN over STARTTLS and over TLS", func(t *testing.T) {
		cert, roots := testCert(t)
		for _, security := range []string{"starttls", "tls"} {
			t.Run(security, func(t *testing.T) {
				o := newOutboxWorld(t, sinkOptions{login: "member@acme.example", password: "s3cret pass", tls: security, cert: cert}, security)
				o.send(t, "secure")
				w := newWorker(t, o.e, o.box, func(c *impl.MailConfig) { c.TLSConfig = &tls.Config{RootCAs: roots} })
				deliverAll(t, w)
				o.sink.mu.Lock()
				logins := slices.Clone(o.sink.logins)
				o.sink.mu.Unlock()
				if len(o.sink.mails()) != 1 || !slices.Equal(logins, []string{"member@acme.example:s3cret pass"}) {
					t.Errorf("arrived %d, logins %v; state %+v", len(o.sink.mails()), logins, o.e.delivery(t, o.e.lastMail(t).ID))
				}
			})
		}
	})

	t.Run("an untrusted certificate is a temporary failure", func(t *testing.T) {
		cert, _ := testCert(t)
		o := newOutboxWorld(t, sinkOptions{tls: "tls", cert: cert}, "tls")
		id := o.send(t, "x")
		deliverAll(t, newWorker(t, o.e, o.box))
		if d := o.e.delivery(t, id); d.State != "queued" || !strings.Contains(d.LastError, "certificate") || len(o.sink.mails()) != 0 {
			t.Errorf("state %+v", d)
		}
	})

	t.Run("temporary 4xx replies are retried with backoff", func(t *testing.T) {
		o := newOutboxWorld(t, sinkOptions{}, "none")
		o.sink.set(func(s *smtpSink) {
			s.dataReply = func(n int) error {
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
		o.e.makeDue(t)
		deliverAll(t, w)
		if d := o.e.delivery(t, id); d.Attempts != 2 || time.Until(*d.NextAttempt) < 100*time.Second {
			t.Errorf("after the second 451: %+v (want the wait doubled)", d)
		}
		o.e.makeDue(t)
		deliverAll(t, w)
		if d := o.e.delivery(t, id); d.State != "sent" || d.Attempts != 3 || d.LastError != "" || len(o.sink.mails()) != 1 {
			t.Errorf("after the third attempt: %+v, %d arrived", d, len(o.sink.mails()))
		}
	})

	t.Run("a permanent 5xx reply fails at once with the server's reason", func(t *testing.T) {
		o := newOutboxWorld(t, sinkOptions{}, "none")
		o.sink.set(func(s *smtpSink) {
			s.rcptReply = func(to string) error {
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
		o := newOutboxWorld(t, sinkOptions{}, "none")
		o.sink.set(func(s *smtpSink) {
			s.dataReply = func(int) error { return &smtp.SMTPError{Code: 421, Message: "busy"} }
		})
		id := o.send(t, "x")
		w := newWorker(t, o.e, o.box)
		for range 3 {
			deliverAll(t, w)
			o.e.makeDue(t)
		}
		if d := o.e.delivery(t, id); d.State != "failed" || d.Attempts != 3 || d.LastError != "gave up after 3 attempts: SMTP error 421: busy" {
			t.Errorf("state %+v", d)
		}
	})

	t.Run("bad credentials fail the message", func(t *testing.T) {
		o := newOutboxWorld(t, sinkOptions{login: "member@acme.example", password: "right"}, "none")
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
		o := newOutboxWorld(t, sinkOptions{}, "none")
		for _, tc := range []struct{ name, update, want string }{
			{"disabled", `UPDATE mail_accounts SET active = false WHERE id = $1`, "is disabled"},
			{"no SMTP server", `UPDATE mail_accounts SET smtp_host = '' WHERE id = $1`, "has no SMTP server"},
			{"login without password", `UPDATE mail_accounts SET smtp_login = 'x' WHERE id = $1`, "has an SMTP login but no password"},
			{"password in clear over the network", `UPDATE mail_accounts SET smtp_login = 'x', smtp_secret = '\x01', smtp_host = 'mail.example.com' WHERE id = $1`,
				"the password would cross the network unencrypted"},
			{"a secret sealed with another key", `UPDATE mail_accounts SET smtp_login = 'x', smtp_secret = $2 WHERE id = $1`, "smtp password: cannot be decrypted"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := o.e.db.Exec(`UPDATE mail_accounts SET active = true, smtp_host = $2, smtp_login = '', smtp_secret = NULL WHERE id = $1`, o.acc, o.sink.host); err != nil {
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
		if n := len(o.sink.mails()); n != 0 {
			t.Errorf("%d messages arrived", n)
		}
	})

	t.Run("an SMTP server that is down leaves the message queued", func(t *testing.T) {
		o := newOutboxWorld(t, sinkOptions{}, "none")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close() // nothing listens there any more
		if _, err := o.e.db.Exec(`UPDATE mail_accounts SET smtp_port = $1 WHERE id = $2`, port, o.acc); err != nil {
			t.Fatal(err)
		}
		id := o.send(t, "x")
		deliverAll(t, newWorker(t, o.e, o.box))
		if d := o.e.delivery(t, id); d.State != "queued" || d.Attempts != 1 || !strings.Contains(d.LastError, "connection refused") {
			t.Errorf("state %+v", d)
		}
	})

	t.Run("a slow SMTP server times out while the API stays responsive", func(t *testing.T) {
		o := newOutboxWorld(t, sinkOptions{}, "none")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var held []net.Conn
		var mu sync.Mutex
		go func() { // accepts and never says a word
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range held {
				c.Close()
			}
		}()
		if _, err := o.e.db.Exec(`UPDATE mail_accounts SET smtp_port = $1 WHERE id = $2`, ln.Addr().(*net.TCPAddr).Port, o.acc); err != nil {
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
		o := newOutboxWorld(t, sinkOptions{}, "none")
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
		for _, m := range o.sink.mails() {
			r, err := gomail.CreateReader(bytes.NewReader(m.raw))
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
		if c := o.e.count(t, `SELECT count(*) FROM mail_messages WHERE delivery_state = 'sent' AND attempts = 1`); c != n {
			t.Errorf("%d messages sent in one attempt, want %d", c, n)
		}
	})

	t.Run("a message claimed by a process that died is delivered later", func(t *testing.T) {
		o := newOutboxWorld(t, sinkOptions{}, "none")
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
		if d := o.e.delivery(t, id); d.State != "sending" || len(o.sink.mails()) != 0 {
			t.Fatalf("a message under a live lease was taken: %+v", d)
		}
		if d := o.e.delivery(t, last); d.State != "failed" || d.LastError != "the process delivering it stopped during attempt 3" {
			t.Errorf("the message at its last attempt: %+v", d)
		}
		if _, err := o.e.db.Exec(`UPDATE mail_messages SET lease_until = now() - interval '1 second' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		deliverAll(t, w)
		if d := o.e.delivery(t, id); d.State != "sent" || d.Attempts != 2 || len(o.sink.mails()) != 1 {
			t.Errorf("after the lease ran out: %+v, %d arrived", d, len(o.sink.mails()))
		}
	})

	t.Run("Run delivers until its context ends", func(t *testing.T) {
		o := newOutboxWorld(t, sinkOptions{}, "none")
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
