package impl_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/mailer/mailertest"
)

// inboxWorld is an account whose member has a mailbox on an in-memory IMAP
// server, and a counterparty Contoso with the contact person Janis and a deal.
type inboxWorld struct {
	e                    *env
	w                    *world
	box                  *mailer.SecretBox
	imap                 *mailertest.IMAPServer
	acc                  int64
	contoso, janis, deal int64
}

func newInboxWorld(t *testing.T) *inboxWorld {
	t.Helper()
	e := newEnv(t)
	i := &inboxWorld{e: e, w: e.newWorld(t, "acme"), box: testSecretBox(t), imap: mailertest.NewIMAPServer(t, "member@acme.example", "imap pass")}
	i.acc = mailAccount(t, e, i.box, i.w.member.id, "member@acme.example", impl.MailServerInput{}, imapServer(i.imap))
	i.contoso = insertCompany(t, e, i.w.member.token, fullCompany(i.w, "info@contoso.example"))
	if err := e.db.Get(&i.janis, `SELECT min(id) FROM contacts WHERE company_id = $1`, i.contoso); err != nil {
		t.Fatal(err)
	}
	i.deal = insertDeal(t, e, i.w, i.contoso, i.w.member.id)
	return i
}

func (i *inboxWorld) poll(t *testing.T, w *impl.MailWorker) int {
	t.Helper()
	if _, err := i.e.db.Exec(`UPDATE mail_accounts SET imap_next_poll_at = now() WHERE id = $1`, i.acc); err != nil {
		t.Fatal(err)
	}
	n, err := w.PollMailboxes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mailboxState is the IMAP columns of a mail account.
type mailboxState struct {
	UIDValidity *int64     `db:"imap_uidvalidity"`
	LastUID     int64      `db:"imap_last_uid"`
	NextPoll    time.Time  `db:"imap_next_poll_at"`
	Leased      bool       `db:"leased"`
	PolledAt    *time.Time `db:"imap_polled_at"`
	Failures    int        `db:"imap_failures"`
	LastError   string     `db:"imap_last_error"`
}

func (i *inboxWorld) state(t *testing.T) mailboxState {
	t.Helper()
	var s mailboxState
	if err := i.e.db.Get(&s, `SELECT imap_uidvalidity, imap_last_uid, imap_next_poll_at, imap_lease_until IS NOT NULL AS leased,
		imap_polled_at, imap_failures, imap_last_error FROM mail_accounts WHERE id = $1`, i.acc); err != nil {
		t.Fatal(err)
	}
	return s
}

func (i *inboxWorld) inbox(t *testing.T) []storedMail {
	t.Helper()
	var out []storedMail
	if err := i.e.db.Select(&out, `SELECT `+storedMailColumns+` FROM mail_messages WHERE mail_account_id = $1 AND folder = 1 ORDER BY id`, i.acc); err != nil {
		t.Fatal(err)
	}
	return out
}

const plainMessage = `From: Janis Ozols <janis.info@contoso.example>
To: Box <member@acme.example>, Other <someone@acme.example>
Cc: boss@contoso.example
Subject: =?utf-8?q?Re:_Offer_=E2=9C=93?=
Date: Mon, 02 Nov 2026 10:15:00 +0200
Message-ID: <m1@contoso.example>
Content-Type: text/plain; charset=utf-8

Hello,
<script>alert(1)</script> & thanks.

Janis
`

const htmlMessage = `From: Stranger <stranger@elsewhere.example>
To: member@acme.example
Subject: About the deal
Date: Tue, 03 Nov 2026 09:00:00 +0000
Message-ID: <m2@elsewhere.example>
In-Reply-To: %s
Content-Type: multipart/mixed; boundary=outer

--outer
Content-Type: multipart/alternative; boundary=inner

--inner
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

Caf=E9 menu attached.
--inner
Content-Type: text/html; charset=utf-8

<html><head><style>p{color:red}</style><script>steal()</script></head>
<body><p onclick="steal()" style="x">Caf&eacute; <b>menu</b> <a href="javascript:steal()">here</a> <a href="https://menu.example/">menu</a><img src="https://track.example/p.gif" alt="logo"></p><iframe src="https://x.example"></iframe></body></html>
--inner--
--outer
Content-Type: application/pdf; name=menu.pdf
Content-Disposition: attachment; filename=menu.pdf
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--outer--
`

const noIDMessage = `From: info@contoso.example
To: member@acme.example
Subject: no id
Date: Wed, 04 Nov 2026 09:00:00 +0000

no message id here
`

const ownMessage = `From: Box <member@acme.example>
To: janis.info@contoso.example
Subject: sent from another client
Date: Wed, 04 Nov 2026 10:00:00 +0000
Message-ID: <m4@acme.example>

copy
`

func TestMailReceive(t *testing.T) {
	i := newInboxWorld(t)
	e := i.e
	w := newWorker(t, e, i.box)

	// A message sent through the CRM, which the HTML message answers.
	sendMail(t, e, i.w.member.token, map[string]any{"account_id": itoa(i.acc), "to_address": "stranger@elsewhere.example",
		"subject": b64("Deal"), "body": b64("<p>x</p>"), "company_id": i.contoso, "deal_id": i.deal})
	sent := e.lastMail(t)

	i.imap.Deliver(t, plainMessage)
	i.imap.Deliver(t, fmt.Sprintf(htmlMessage, sent.MessageID))
	i.imap.Deliver(t, noIDMessage)
	i.imap.Deliver(t, ownMessage)
	i.imap.Deliver(t, "From: <<<broken\nSubject: broken\n\nstill stored\n")

	t.Run("OK: new messages stored in the inbox", func(t *testing.T) {
		if n := i.poll(t, w); n != 5 {
			t.Fatalf("stored %d, want 5", n)
		}
		got := i.inbox(t)
		if len(got) != 5 {
			t.Fatalf("%d messages in the inbox", len(got))
		}

		m := got[0]
		wantDate := time.Date(2026, 11, 2, 8, 15, 0, 0, time.UTC)
		if m.FromName != "Janis Ozols" || m.FromAddress != "janis.info@contoso.example" || m.ToName != "Box, Other" ||
			m.ToAddress != "member@acme.example, someone@acme.example" || m.Cc != "boss@contoso.example" || m.Bcc != "" ||
			m.Subject != "Re: Offer ✓" || !m.Date.Equal(wantDate) || m.MessageID != "<m1@contoso.example>" || m.AttachmentFlag ||
			m.SmallPartOfBody != "Hello, <script>alert(1)</script> & thanks. Janis" ||
			m.Body != "<p>Hello,<br>\n&lt;script&gt;alert(1)&lt;/script&gt; &amp; thanks.</p>\n<p>Janis</p>" ||
			!eqID(m.CompanyID, &i.contoso) || !eqID(m.ContactID, &i.janis) || m.DealID != nil ||
			m.DeliveryState != nil || m.Raw != nil || m.CreatedBy != nil || m.Folder != 1 || m.MailAccountID != i.acc {
			m.Raw = nil
			t.Errorf("plain text message stored as\n%+v", m)
		}

		m = got[1]
		if m.FromName != "Stranger" || m.Subject != "About the deal" || !m.AttachmentFlag ||
			m.SmallPartOfBody != "Café menu attached." ||
			!eqID(m.CompanyID, &i.contoso) || !eqID(m.DealID, &i.deal) || m.ContactID != nil {
			t.Errorf("HTML message stored as %+v", m)
		}
		wantBody := "\n" + `<p>Café <b>menu</b> <a>here</a> <a href="https://menu.example/">menu</a>logo</p>`
		if m.Body != wantBody {
			t.Errorf("HTML body\n%q\nwant\n%q", m.Body, wantBody)
		}

		m = got[2]
		if !strings.HasPrefix(m.MessageID, "<sha256.") || !strings.HasSuffix(m.MessageID, "@crm.invalid>") ||
			!eqID(m.CompanyID, &i.contoso) || m.ContactID != nil || m.SmallPartOfBody != "no message id here" {
			t.Errorf("message without Message-ID stored as %+v", m)
		}
		m = got[3]
		if !eqID(m.CompanyID, &i.contoso) || !eqID(m.ContactID, &i.janis) || m.FromAddress != "member@acme.example" {
			t.Errorf("own message linked to %s %s", showID(m.CompanyID), showID(m.ContactID))
		}
		m = got[4]
		if m.Subject != "broken" || m.FromAddress != "" || m.SmallPartOfBody != "still stored" {
			t.Errorf("broken message stored as %+v", m)
		}

		st := i.state(t)
		if st.UIDValidity == nil || st.LastUID != 5 || st.Leased || st.Failures != 0 || st.LastError != "" || st.PolledAt == nil ||
			time.Until(st.NextPoll) < 50*time.Second {
			t.Errorf("mailbox state %+v", st)
		}
		var journal []struct {
			UserID  int64  `db:"user_id"`
			TokenID *int64 `db:"token_id"`
		}
		if err := e.db.Select(&journal, `SELECT user_id, token_id FROM journal WHERE module = 24 AND action = 'receive' ORDER BY id`); err != nil {
			t.Fatal(err)
		}
		if len(journal) != 5 || journal[0].UserID != i.w.member.id || journal[0].TokenID != nil {
			t.Errorf("journal %+v", journal)
		}
	})

	t.Run("the next poll stores only what is new", func(t *testing.T) {
		if n := i.poll(t, w); n != 0 {
			t.Errorf("stored %d again", n)
		}
		i.imap.Deliver(t, strings.Replace(plainMessage, "<m1@", "<m6@", 1))
		if n := i.poll(t, w); n != 1 || len(i.inbox(t)) != 6 || i.state(t).LastUID != 6 {
			t.Errorf("stored %d; inbox %d; state %+v", n, len(i.inbox(t)), i.state(t))
		}
	})

	t.Run("a mailbox is not polled before its time", func(t *testing.T) {
		i.imap.Deliver(t, strings.Replace(plainMessage, "<m1@", "<m7@", 1))
		if n, err := w.PollMailboxes(context.Background()); n != 0 || err != nil {
			t.Errorf("stored %d (%v)", n, err)
		}
		i.poll(t, w)
	})

	t.Run("a new UIDVALIDITY fetches everything again and stores each message once", func(t *testing.T) {
		before := i.state(t)
		i.imap.Renumber(t)
		i.imap.Deliver(t, plainMessage)
		i.imap.Deliver(t, noIDMessage)
		i.imap.Deliver(t, strings.Replace(plainMessage, "<m1@", "<m8@", 1))
		if n := i.poll(t, w); n != 1 {
			t.Errorf("stored %d, want only the new one", n)
		}
		after := i.state(t)
		if *after.UIDValidity == *before.UIDValidity || after.LastUID != 3 {
			t.Errorf("state before %+v after %+v", before, after)
		}
	})

	t.Run("a wrong password is a failed poll, retried later", func(t *testing.T) {
		if _, err := e.db.Exec(`UPDATE mail_accounts SET imap_secret = $1 WHERE id = $2`, i.box.Seal(i.w.accountID, "imap", "wrong"), i.acc); err != nil {
			t.Fatal(err)
		}
		i.poll(t, w)
		st := i.state(t)
		if st.Failures != 1 || !strings.HasPrefix(st.LastError, "login:") || st.Leased || time.Until(st.NextPoll) < 50*time.Second {
			t.Errorf("state %+v", st)
		}
		i.poll(t, w)
		if st := i.state(t); st.Failures != 2 || time.Until(st.NextPoll) < 110*time.Second {
			t.Errorf("after the second failure: %+v (want the wait doubled)", st)
		}
	})
}

func TestMailReceiveFaults(t *testing.T) {
	t.Run("a dropped connection loses nothing and repeats nothing", func(t *testing.T) {
		i := newInboxWorld(t)
		proxy := mailertest.NewDropProxy(t, net.JoinHostPort(i.imap.Host, strconv.Itoa(i.imap.Port)))
		if _, err := i.e.db.Exec(`UPDATE mail_accounts SET imap_port = $1 WHERE id = $2`, proxy.Port, i.acc); err != nil {
			t.Fatal(err)
		}
		line := strings.Repeat("0123456789", 10) + "\n"
		for k := range 30 {
			i.imap.Deliver(t, fmt.Sprintf("From: a@x.example\nTo: member@acme.example\nSubject: n%d\nMessage-ID: <n%d@x.example>\n\n%s", k, k, strings.Repeat(line, 30)))
		}
		// Each message is about 3.1 kB: the cut falls into the second batch of 20.
		proxy.DropAfter.Store(80_000)
		w := newWorker(t, i.e, i.box)
		i.poll(t, w)
		st := i.state(t)
		if n := len(i.inbox(t)); n != 20 || st.LastUID != 20 || st.Failures != 1 || st.LastError == "" || st.Leased {
			t.Fatalf("after the cut: %d stored, state %+v", n, st)
		}
		proxy.DropAfter.Store(0)
		i.poll(t, w)
		got := i.inbox(t)
		seen := map[string]bool{}
		for _, m := range got {
			seen[m.MessageID] = true
		}
		if st := i.state(t); len(got) != 30 || len(seen) != 30 || st.LastUID != 30 || st.Failures != 0 || st.LastError != "" {
			t.Errorf("after the next poll: %d stored (%d distinct), state %+v", len(got), len(seen), st)
		}
	})

	t.Run("a server that closes at once and one that is down", func(t *testing.T) {
		i := newInboxWorld(t)
		i.imap.Deliver(t, plainMessage)
		proxy := mailertest.NewDropProxy(t, net.JoinHostPort(i.imap.Host, strconv.Itoa(i.imap.Port)))
		proxy.DropAfter.Store(1)
		if _, err := i.e.db.Exec(`UPDATE mail_accounts SET imap_port = $1 WHERE id = $2`, proxy.Port, i.acc); err != nil {
			t.Fatal(err)
		}
		w := newWorker(t, i.e, i.box)
		i.poll(t, w)
		if st := i.state(t); st.Failures != 1 || st.LastError == "" || len(i.inbox(t)) != 0 {
			t.Errorf("state %+v", st)
		}
		if _, err := i.e.db.Exec(`UPDATE mail_accounts SET imap_port = $1 WHERE id = $2`, mailertest.ClosedPort(t), i.acc); err != nil {
			t.Fatal(err)
		}
		i.poll(t, w)
		if st := i.state(t); st.Failures != 2 || !strings.Contains(st.LastError, "connection refused") {
			t.Errorf("state %+v", st)
		}
		// The API answers meanwhile.
		expectError(t, i.e.post(t, i.w.member.token, "/mail/send", map[string]any{"mail": map[string]any{
			"account_id": "0", "to_address": "a@x.example", "subject": "", "body": ""}}), "404", "not found", "")
	})

	t.Run("a message larger than MaxFetchSize is stored with its header", func(t *testing.T) {
		i := newInboxWorld(t)
		i.imap.Deliver(t, fmt.Sprintf(htmlMessage, "<none@x.example>")+strings.Repeat("padding\n", 500))
		w := newWorker(t, i.e, i.box, func(c *impl.MailConfig) { c.MaxFetchSize = 1000 })
		if n := i.poll(t, w); n != 1 {
			t.Fatalf("stored %d; mailbox %+v", n, i.state(t))
		}
		m := i.inbox(t)[0]
		if m.Subject != "About the deal" || m.MessageID != "<m2@elsewhere.example>" || !m.AttachmentFlag || m.Body != "" || m.SmallPartOfBody != "" {
			t.Errorf("stored %+v", m)
		}
	})

	t.Run("a mailbox leased by another process is left alone", func(t *testing.T) {
		i := newInboxWorld(t)
		i.imap.Deliver(t, plainMessage)
		if _, err := i.e.db.Exec(`UPDATE mail_accounts SET imap_lease_until = now() + interval '1 minute' WHERE id = $1`, i.acc); err != nil {
			t.Fatal(err)
		}
		w := newWorker(t, i.e, i.box)
		if n := i.poll(t, w); n != 0 {
			t.Errorf("stored %d", n)
		}
		if _, err := i.e.db.Exec(`UPDATE mail_accounts SET imap_lease_until = now() - interval '1 second' WHERE id = $1`, i.acc); err != nil {
			t.Fatal(err)
		}
		if n := i.poll(t, w); n != 1 {
			t.Errorf("after the lease ran out: stored %d", n)
		}
	})

	t.Run("two pollers racing store each message once", func(t *testing.T) {
		i := newInboxWorld(t)
		for k := range 10 {
			i.imap.Deliver(t, strings.Replace(plainMessage, "<m1@", fmt.Sprintf("<r%d@", k), 1))
		}
		w1, w2 := newWorker(t, i.e, i.box), newWorker(t, i.e, i.box)
		done := make(chan int, 2)
		for _, w := range []*impl.MailWorker{w1, w2} {
			go func() {
				n, _ := w.PollMailboxes(context.Background())
				done <- n
			}()
		}
		if n := <-done + <-done; n != 10 || len(i.inbox(t)) != 10 {
			t.Errorf("stored %d, inbox %d", n, len(i.inbox(t)))
		}
	})
}

// TestMailWorkerOnDemoData checks that the demo's mail accounts (no passwords,
// a host that does not exist) keep the worker idle: nothing polled, and a
// message queued through one fails at once without a connection attempt.
func TestMailWorkerOnDemoData(t *testing.T) {
	e := newEnv(t)
	d, err := demo.Load(context.Background(), e.db, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, e, testSecretBox(t))
	if n, err := w.PollMailboxes(context.Background()); n != 0 || err != nil {
		t.Errorf("polled demo mailboxes: %d (%v)", n, err)
	}
	if n := e.count(t, `SELECT count(*) FROM mail_accounts WHERE account_id = $1 AND (imap_polled_at IS NOT NULL OR imap_lease_until IS NOT NULL)`, d.AccountID); n != 0 {
		t.Errorf("%d demo mailboxes touched", n)
	}
	// The demo's messages are sent or received: the worker leaves them as they
	// are (when the tests share a database, others may queue mail in the demo
	// account meanwhile).
	done := func() map[int64]string {
		t.Helper()
		var rows []struct {
			ID    int64  `db:"id"`
			State string `db:"state"`
		}
		if err := e.db.Select(&rows, `SELECT id, concat_ws(' ', delivery_state, attempts, last_error, sent_at) AS state FROM mail_messages
			WHERE account_id = $1 AND (delivery_state IS NULL OR delivery_state = 'sent')`, d.AccountID); err != nil {
			t.Fatal(err)
		}
		out := map[int64]string{}
		for _, r := range rows {
			out[r.ID] = r.State
		}
		return out
	}
	before := done()
	deliverAll(t, w)
	after := done()
	for id, state := range before {
		if after[id] != state {
			t.Errorf("the worker changed the demo's message %d from %q to %q", id, state, after[id])
		}
	}
	var acc int64
	if err := e.db.Get(&acc, `SELECT min(id) FROM mail_accounts WHERE account_id = $1 AND user_id = $2`, d.AccountID, d.AdminUserID); err != nil {
		t.Fatal(err)
	}
	sendMail(t, e, d.Token, map[string]any{"account_id": itoa(acc), "to_address": "x@elsewhere.example", "subject": "", "body": ""})
	id := e.lastMail(t).ID
	deliverAll(t, w)
	if d := e.delivery(t, id); d.State != "failed" || d.Attempts != 1 || !strings.Contains(d.LastError, "has an SMTP login but no password") {
		t.Errorf("state %+v", d)
	}
}
